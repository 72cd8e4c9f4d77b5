// zero_to_fp32: DeepSpeed's zero_to_fp32.py in C++ (DeepSpeed 0.13.5) — the full fp32 state dict
// from a ZeRO stage 1, 2 or 3 checkpoint, with both generations of DeepSpeed's command line:
//
//   bazel run //tools:zero_to_fp32 -- CHECKPOINT_DIR OUTPUT_FILE [-t TAG]
//       [--exclude_frozen_parameters] [-d]                     (DeepSpeed 0.13: one file)
//   bazel run //tools:zero_to_fp32 -- CHECKPOINT_DIR OUTPUT_DIR [--max_shard_size 5GB]
//       [--safe_serialization] [-t TAG] [--exclude_frozen_parameters] [-d]   (current DeepSpeed)
//
// CHECKPOINT_DIR holds `latest` (HF's checkpoint-N/); -t/--tag names the global_stepN folder
// instead. An OUTPUT ending in .bin / .pt / .safetensors is one file, written as torch.save
// does (Python's torch.load and load_state_dict read it) or as safetensors; any other OUTPUT is
// a directory, as current DeepSpeed writes it: pytorch_model.bin (model.safetensors with
// --safe_serialization), split into pytorch_model-00001-of-0000N.bin ... shards of at most
// --max_shard_size with pytorch_model.bin.index.json (model.safetensors.index.json) — HF's
// sharding and index files. Every file is written atomically.
// The consolidation is sharding/deepspeed_checkpoint/zero_to_fp32.h's. Exit codes: 0 done, 1 an error reading
// or writing (the message names the file and key), 2 a bad command line.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sharding/deepspeed_checkpoint/zero_to_fp32.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/safetensors_sharded.h"
#include "checkpoint/shard_size.h"
#include "checkpoint/torch_pickle.h"
#include "logging/process_logging.h"

namespace {

// The command line is DeepSpeed's (argparse: positionals, -t/--tag, -d/--debug), which gflags
// cannot parse; --help prints the flags in gflags' layout, as loom's other tools do.
constexpr char kUsage[] =
    "zero_to_fp32: the fp32 weights of a DeepSpeed ZeRO checkpoint (stages 1-3).\n"
    "  zero_to_fp32 CHECKPOINT_DIR OUTPUT_FILE [-t TAG] [--exclude_frozen_parameters] [-d]\n"
    "  zero_to_fp32 CHECKPOINT_DIR OUTPUT_DIR [--max_shard_size 5GB] [--safe_serialization] "
    "[-t TAG] [--exclude_frozen_parameters] [-d]\n"
    "  CHECKPOINT_DIR: the folder holding `latest` (e.g. output_dir/checkpoint-500). OUTPUT "
    "ending in .bin/.pt/.safetensors: one file; any other OUTPUT: a directory, as current "
    "DeepSpeed writes it.\n"
    "\n"
    "  Flags from tools/zero_to_fp32.cc:\n"
    "    -debug (-d: print every tensor's name and shape) type: bool default: false\n"
    "    -exclude_frozen_parameters (leave parameters that did not train out) type: bool "
    "default: false\n"
    "    -max_shard_size (OUTPUT_DIR: the largest shard, e.g. 5GB or 500MB) type: string "
    "default: \"5GB\"\n"
    "    -safe_serialization (OUTPUT_DIR: model.safetensors shards instead of "
    "pytorch_model.bin) type: bool default: false\n"
    "    -tag (-t: the checkpoint tag, e.g. global_step500; default: the content of latest) "
    "type: string default: \"\"\n";

int BadUsage(const std::string& why) {
  std::cerr << "zero_to_fp32: " << why << "\n" << kUsage;
  return 2;
}

struct CommandLine {
  std::vector<std::string> positional;  // CHECKPOINT_DIR OUTPUT
  loom::sharding::ZeroReadOptions options;
  bool debug = false;
  bool safe_serialization = false;
  std::string max_shard_size = "5GB";
};

// Reads argv into `cl`; returns the exit code when the tool ends here (--help, a bad flag).
std::optional<int> ParseCommandLine(int argc, char** argv, CommandLine* cl) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // gflags' single-dash spelling of the long flags (-tag, -debug, ...) as well.
    if (a.size() > 2 && a[0] == '-' && a[1] != '-') a = "-" + a;
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "-t" || a == "--tag") {
      if (i + 1 >= argc) return BadUsage(a + " needs a value");
      cl->options.tag = argv[++i];
    } else if (absl::StartsWith(a, "--tag=")) {
      cl->options.tag = a.substr(6);
    } else if (a == "--safe_serialization") {
      cl->safe_serialization = true;
    } else if (a == "--max_shard_size") {
      if (i + 1 >= argc) return BadUsage(a + " needs a value");
      cl->max_shard_size = argv[++i];
    } else if (absl::StartsWith(a, "--max_shard_size=")) {
      cl->max_shard_size = a.substr(17);
    } else if (a == "--exclude_frozen_parameters") {
      cl->options.exclude_frozen_parameters = true;
    } else if (a == "-d" || a == "--debug") {
      cl->debug = true;
    } else if (absl::StartsWith(a, "-")) {
      return BadUsage("unknown option " + a);
    } else {
      cl->positional.push_back(a);
    }
  }
  return std::nullopt;
}

bool IsOneFile(const std::string& output) {
  return absl::EndsWith(output, ".bin") || absl::EndsWith(output, ".pt") ||
         absl::EndsWith(output, ".safetensors");
}

// What DeepSpeed's script prints about the checkpoint it read (-d: every tensor too).
void PrintSummary(const loom::sharding::LazyZeroCheckpoint& checkpoint, bool debug) {
  std::cout << "Processing zero checkpoint '" << checkpoint.folder << "'\n";
  std::cout << "Detected checkpoint of type zero stage " << checkpoint.zero_stage
            << ", world_size: " << checkpoint.world_size << "\n";
  if (!checkpoint.ds_version.empty()) {
    std::cout << "Parsing checkpoint created by deepspeed==" << checkpoint.ds_version << "\n";
  }
  int64_t elements = 0;
  for (const loom::sharding::ZeroTensor& t : checkpoint.tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    elements += n;
    if (debug) std::cout << t.name << " " << c10::IntArrayRef(t.shape) << "\n";
  }
  std::cout << "Reconstructed fp32 state dict with " << checkpoint.tensors.size() << " params "
            << elements << " elements\n";
}

// OUTPUT_FILE: torch.save's format, or safetensors by the extension (the whole state dict in
// memory, as one file needs).
absl::Status SaveOneFile(const std::string& output,
                         const loom::sharding::LazyZeroCheckpoint& checkpoint) {
  absl::StatusOr<loom::checkpoint::NamedTensors> state =
      loom::sharding::ReadZeroTensors(checkpoint);
  if (!state.ok()) return state.status();
  std::cout << "Saving fp32 state dict to " << output << "\n";
  return absl::EndsWith(output, ".safetensors")
             ? loom::checkpoint::SaveSafetensors(output, *state)
             : loom::checkpoint::SaveTorchStateDict(output, *state);
}

// The state dict as tensors with shapes and no data (for planning shards), and a shard's
// tensors read from the checkpoint.
loom::checkpoint::NamedTensors Shapes(const loom::sharding::LazyZeroCheckpoint& checkpoint) {
  loom::checkpoint::NamedTensors out;
  for (const loom::sharding::ZeroTensor& t : checkpoint.tensors) {
    out.emplace_back(t.name,
                     at::empty(t.shape, at::TensorOptions().dtype(t.dtype).device(at::kMeta)));
  }
  return out;
}

absl::StatusOr<loom::checkpoint::NamedTensors> ReadShard(
    const loom::sharding::LazyZeroCheckpoint& checkpoint,
    const loom::checkpoint::NamedTensors& shard) {
  std::map<std::string, const loom::sharding::ZeroTensor*> by_name;
  for (const loom::sharding::ZeroTensor& t : checkpoint.tensors) by_name[t.name] = &t;
  loom::checkpoint::NamedTensors out;
  for (const auto& [name, meta] : shard) {
    absl::StatusOr<at::Tensor> t =
        loom::sharding::ReadZeroTensor(*by_name.at(name), checkpoint.folder);
    if (!t.ok()) return t.status();
    out.emplace_back(name, *t);
  }
  return out;
}

// OUTPUT_DIR: HF's shards and index, as current DeepSpeed writes them, each shard read from the
// checkpoint just before it is written (one shard in memory at a time).
absl::Status SaveDirectory(const std::string& output,
                           const loom::sharding::LazyZeroCheckpoint& checkpoint,
                           const CommandLine& cl, uint64_t shard_bytes) {
  const bool safe = cl.safe_serialization;
  const std::string weights_name = safe ? "model.safetensors" : "pytorch_model.bin";
  std::cout << "Saving fp32 state dict to " << output << "/ (" << weights_name
            << ", shards of at most " << cl.max_shard_size << ")\n";
  std::error_code ec;
  std::filesystem::create_directories(output, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat(output, ": ", ec.message()));
  const loom::checkpoint::ShardWriter write = [&](const std::string& path,
                                                  const loom::checkpoint::NamedTensors& planned) {
    absl::StatusOr<loom::checkpoint::NamedTensors> shard = ReadShard(checkpoint, planned);
    if (!shard.ok()) return shard.status();
    return safe ? loom::checkpoint::SaveSafetensors(path, *shard,
                                                    loom::checkpoint::kHfSafetensorsMetadata)
                : loom::checkpoint::SaveTorchStateDict(path, *shard);
  };
  absl::StatusOr<std::vector<std::string>> files = loom::checkpoint::SaveShardedFiles(
      output, Shapes(checkpoint), shard_bytes, weights_name, write);
  if (!files.ok()) return files.status();
  for (const std::string& f : *files) std::cout << "  " << f << "\n";
  return absl::OkStatus();
}

// `path` as the user meant it: relative to the directory `bazel run` was started from
// (BUILD_WORKING_DIRECTORY) when there is one, else as given.
std::string FromUsersDirectory(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (cwd == nullptr || *cwd == '\0' || path.empty() || path[0] == '/') return path;
  return (std::filesystem::path(cwd) / path).lexically_normal().string();
}

}  // namespace

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  CommandLine cl;
  if (std::optional<int> exit_code = ParseCommandLine(argc, argv, &cl)) return *exit_code;
  if (cl.positional.size() != 2) {
    return BadUsage(absl::StrCat("expected CHECKPOINT_DIR and OUTPUT_FILE, got ",
                                 cl.positional.size(), " positional arguments"));
  }
  // Under `bazel run` the tool runs in Bazel's run folder: relative paths mean the user's.
  const std::string dir = FromUsersDirectory(cl.positional[0]);
  const std::string output = FromUsersDirectory(cl.positional[1]);
  const bool one_file = IsOneFile(output);
  absl::StatusOr<uint64_t> shard_bytes = loom::checkpoint::ParseShardSize(cl.max_shard_size);
  if (!shard_bytes.ok())
    return BadUsage("--max_shard_size: " + std::string(shard_bytes.status().message()));
  if (one_file && (cl.safe_serialization || cl.max_shard_size != "5GB")) {
    return BadUsage(
        "--safe_serialization and --max_shard_size apply to an OUTPUT_DIR; OUTPUT_FILE's "
        "extension chooses its format");
  }
  auto checkpoint = loom::sharding::OpenZeroCheckpoint(dir, cl.options);
  if (!checkpoint.ok()) {
    std::cerr << "zero_to_fp32: " << checkpoint.status().message() << "\n";
    return 1;
  }
  PrintSummary(*checkpoint, cl.debug);
  const absl::Status saved = one_file ? SaveOneFile(output, *checkpoint)
                                      : SaveDirectory(output, *checkpoint, cl, *shard_bytes);
  if (!saved.ok()) {
    std::cerr << "zero_to_fp32: " << saved.message() << "\n";
    return 1;
  }
  return 0;
}
