// zero_to_fp32: DeepSpeed's zero_to_fp32.py in C++ (issue 13) — the full fp32 state dict from
// a ZeRO stage 1, 2 or 3 checkpoint, with DeepSpeed 0.13.5's command line:
//
//   bazel run //tools:zero_to_fp32 -- CHECKPOINT_DIR OUTPUT_FILE [-t TAG]
//       [--exclude_frozen_parameters] [-d]
//
// CHECKPOINT_DIR holds `latest` (HF's checkpoint-N/); -t/--tag names the global_stepN folder
// instead. OUTPUT_FILE is written as torch.save does (pytorch_model.bin: Python's torch.load
// and load_state_dict read it), or as safetensors when it ends in ".safetensors"; atomically.
// The consolidation is checkpoint/deepspeed_zero.h's. Exit codes: 0 done, 1 an error reading
// or writing (the message names the file and key), 2 a bad command line.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "checkpoint/deepspeed_zero.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/torch_pickle.h"
#include "logging/process_logging.h"

namespace {

constexpr char kUsage[] =
    "usage: zero_to_fp32 CHECKPOINT_DIR OUTPUT_FILE [-t TAG] [--exclude_frozen_parameters] "
    "[-d]\n"
    "  CHECKPOINT_DIR  the folder holding `latest` (e.g. output_dir/checkpoint-500)\n"
    "  OUTPUT_FILE     e.g. pytorch_model.bin (torch.save format) or model.safetensors\n"
    "  -t, --tag TAG   the checkpoint tag (e.g. global_step500); default: the content of latest\n"
    "  --exclude_frozen_parameters  leave parameters that did not train out\n"
    "  -d, --debug     print every tensor's name and shape\n";

int BadUsage(const std::string& why) {
  std::cerr << "zero_to_fp32: " << why << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  std::vector<std::string> positional;
  loom::checkpoint::ZeroReadOptions options;
  bool debug = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "-t" || a == "--tag") {
      if (i + 1 >= argc) return BadUsage(a + " needs a value");
      options.tag = argv[++i];
    } else if (absl::StartsWith(a, "--tag=")) {
      options.tag = a.substr(6);
    } else if (a == "--exclude_frozen_parameters") {
      options.exclude_frozen_parameters = true;
    } else if (a == "-d" || a == "--debug") {
      debug = true;
    } else if (absl::StartsWith(a, "-")) {
      return BadUsage("unknown option " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) {
    return BadUsage(absl::StrCat("expected CHECKPOINT_DIR and OUTPUT_FILE, got ",
                                 positional.size(), " positional arguments"));
  }
  const std::string& dir = positional[0];
  const std::string& output = positional[1];
  auto checkpoint = loom::checkpoint::ReadZeroCheckpoint(dir, options);
  if (!checkpoint.ok()) {
    std::cerr << "zero_to_fp32: " << checkpoint.status().message() << "\n";
    return 1;
  }
  std::cout << "Processing zero checkpoint '" << checkpoint->folder << "'\n";
  std::cout << "Detected checkpoint of type zero stage " << checkpoint->zero_stage
            << ", world_size: " << checkpoint->world_size << "\n";
  if (!checkpoint->ds_version.empty()) {
    std::cout << "Parsing checkpoint created by deepspeed==" << checkpoint->ds_version << "\n";
  }
  int64_t elements = 0;
  for (const auto& [name, tensor] : checkpoint->state) {
    elements += tensor.numel();
    if (debug) std::cout << name << " " << tensor.sizes() << "\n";
  }
  std::cout << "Reconstructed fp32 state dict with " << checkpoint->state.size() << " params "
            << elements << " elements\n";
  std::cout << "Saving fp32 state dict to " << output << "\n";
  const absl::Status saved =
      absl::EndsWith(output, ".safetensors")
          ? loom::checkpoint::SaveSafetensors(output, checkpoint->state)
          : loom::checkpoint::SaveTorchStateDict(output, checkpoint->state);
  if (!saved.ok()) {
    std::cerr << "zero_to_fp32: " << saved.message() << "\n";
    return 1;
  }
  return 0;
}
