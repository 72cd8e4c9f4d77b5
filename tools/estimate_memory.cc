// estimate_memory: DeepSpeed's ZeRO memory estimators as a command (DeepSpeed 0.13.5
// estimate_zero2_* / estimate_zero3_model_states_mem_needs*) — the bytes of parameters, gradients
// and optimizer states each offload option needs per CPU and per GPU, printed exactly as
// DeepSpeed's estimate_zero{2,3}_model_states_mem_needs_all_{cold,live} print them.
//
//   bazel run //tools:estimate_memory -- --stage 3 --total_params 2.85e9
//       --largest_layer_params 32.9e6 --num_gpus_per_node 8   (one command line)
//   bazel run //tools:estimate_memory -- --model_name_or_path /models/bert-base-uncased
//       [--format json]
//
// --model_name_or_path counts a model folder's parameters without building the model
// (estimate/memory_estimate.h). Exit codes: 0 printed, 1 the folder could not be read, 2 a bad
// command line.
#include <cmath>
#include <iostream>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "estimate/memory_check.h"
#include "estimate/memory_estimate.h"
#include "base/tool_flags.h"
#include "gflags/gflags.h"

DEFINE_int32(stage, 3, "ZeRO stage to estimate: 2 or 3");
DEFINE_string(total_params, "",
              "the model's parameter count (e.g. 2.85e9); or --model_name_or_path");
DEFINE_string(largest_layer_params, "",
              "ZeRO-3: the most parameters one module holds directly (e.g. 32.9e6)");
DEFINE_string(model_name_or_path, "",
              "a model folder (safetensors / pytorch_model.bin / sharded, or a BERT config.json) "
              "to count the parameters of, instead of --total_params");
DEFINE_int32(num_gpus_per_node, 1, "GPUs per node");
DEFINE_int32(num_nodes, 1, "nodes");
DEFINE_double(additional_buffer_factor, 1.5, "DeepSpeed's estimation factor for CPU memory");
DEFINE_string(format, "text", "text (DeepSpeed's printout) or json");
DEFINE_bool(check, false,
            "also train a small BERT for 2 steps under each of loom's strategies on this machine "
            "and print rank 0's measured model-state bytes next to loom's estimate");
DEFINE_int32(check_ranks, 2, "ranks (processes on this machine) for --check");
DEFINE_bool(loom, false,
            "also print loom's own per-rank model-state bytes per strategy (DDP, ZeRO-1/2/3, "
            "FSDP), fp32 and bf16 weights");

namespace {

int BadUsage(const std::string& why) {
  std::cerr << "estimate_memory: " << why << " (--help lists the flags)\n";
  return 2;
}

// A count given as an integer or in float notation (2.85e9); nullopt unless whole and >= 0.
std::optional<int64_t> Count(const std::string& text) {
  double v = 0;
  if (!absl::SimpleAtod(text, &v) || !(v >= 0) || v > 9e18 || std::floor(v) != v) {
    return std::nullopt;
  }
  return static_cast<int64_t>(v);
}

}  // namespace

int main(int argc, char** argv) {
  if (std::optional<int> exit_code = loom::base::ParseToolFlags(
          &argc, &argv,
          "DeepSpeed's ZeRO memory estimate for params, optimizer states and gradients.\n"
          "  estimate_memory --stage 3 --total_params N --largest_layer_params L "
          "[--num_gpus_per_node G] [--num_nodes N]\n"
          "  estimate_memory --model_name_or_path FOLDER [--stage 2|3] [--format json]",
          "tools/estimate_memory.cc")) {
    return *exit_code;
  }
  if (argc > 1) return BadUsage(std::string("unexpected argument '") + argv[1] + "'");
  if (FLAGS_stage != 2 && FLAGS_stage != 3) return BadUsage("--stage must be 2 or 3");
  if (FLAGS_num_gpus_per_node < 1 || FLAGS_num_nodes < 1) {
    return BadUsage("--num_gpus_per_node and --num_nodes must be at least 1");
  }
  if (!(FLAGS_additional_buffer_factor > 0)) {
    return BadUsage("--additional_buffer_factor must be positive");
  }
  if (FLAGS_format != "text" && FLAGS_format != "json") {
    return BadUsage("--format must be text or json");
  }
  loom::estimate::EstimateInputs in;
  in.num_gpus_per_node = FLAGS_num_gpus_per_node;
  in.num_nodes = FLAGS_num_nodes;
  in.additional_buffer_factor = FLAGS_additional_buffer_factor;
  if (!FLAGS_model_name_or_path.empty()) {
    if (!FLAGS_total_params.empty() || !FLAGS_largest_layer_params.empty()) {
      return BadUsage(
          "give --model_name_or_path or --total_params/--largest_layer_params, not both");
    }
    absl::StatusOr<loom::estimate::ModelParams> params =
        loom::estimate::ParamsOfFolder(FLAGS_model_name_or_path);
    if (!params.ok()) {
      std::cerr << "estimate_memory: " << params.status().message() << "\n";
      return 1;
    }
    in.total_params = params->total_params;
    in.largest_layer_params = params->largest_layer_params;
  } else {
    const std::optional<int64_t> total = Count(FLAGS_total_params);
    if (!total)
      return BadUsage("--total_params (a whole number) or --model_name_or_path is needed");
    in.total_params = *total;
    if (FLAGS_stage == 3) {
      const std::optional<int64_t> largest = Count(FLAGS_largest_layer_params);
      if (!largest) return BadUsage("--stage 3 needs --largest_layer_params (a whole number)");
      in.largest_layer_params = *largest;
    }
  }
  if (FLAGS_format == "json") {
    std::cout << loom::estimate::TableJson(FLAGS_stage, in, FLAGS_loom);
  } else {
    std::cout << (FLAGS_stage == 3 ? loom::estimate::Zero3Table(in)
                                   : loom::estimate::Zero2Table(in));
    if (FLAGS_loom) std::cout << "\n" << loom::estimate::LoomTable(in);
  }
  if (FLAGS_check) {
    absl::StatusOr<std::vector<loom::estimate::CheckRow>> rows =
        loom::estimate::RunMemoryCheck(FLAGS_check_ranks);
    if (!rows.ok()) {
      std::cerr << "estimate_memory: " << rows.status().message() << "\n";
      return 1;
    }
    std::cout << "\n" << loom::estimate::FormatCheck(*rows, FLAGS_check_ranks);
  }
  return 0;
}
