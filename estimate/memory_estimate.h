// DeepSpeed's ZeRO memory estimators (DeepSpeed 0.13.5 `deepspeed/runtime/zero/stage3.py` and
// `stage_1_and_2.py`, the estimate_zero*_model_states_mem_needs* functions): the bytes of model
// states (parameters, gradients, optimizer states) per CPU and per GPU that each offload option
// needs, with DeepSpeed's own arithmetic and printout, so that `//tools:estimate_memory` prints
// what `estimate_zero3_model_states_mem_needs_all_cold` / `..._zero2_...` print, character for
// character.
//
// Contract:
//   - Zero3Needs / Zero2Needs: DeepSpeed's formulas, evaluated in the same order and types as its
//     Python (integer products exact, float products in double, int() truncation).
//   - Zero3Table / Zero2Table: DeepSpeed's printout (the header lines, then one row per option
//     combination in its order, GiB printed as "GB" with "%7.2f" / "%6.2f"). ZeRO-2 uses the
//     current formula (2P + int(18P / total GPUs) without offload) and option column
//     ("offload_optimizer=cpu " / "offload_optimizer=none").
//   - ParamsOfFolder(dir): total parameters (each stored tensor once; tensors sharing storage —
//     tied weights — once, as DeepSpeed's model_to_params) and the largest layer (the most
//     parameters held directly by one module: tensors grouped by their name without the last
//     component) of a model folder's weights (model.safetensors, a sharded index, or
//     pytorch_model.bin); a folder with only a BERT config.json gets the counts from the
//     config (no model is built). NotFound when the folder has neither.
//
// Example:
//   std::cout << Zero3Table({.total_params = 3e9, .largest_layer_params = 3.2e7,
//                            .num_gpus_per_node = 8});
#ifndef LOOM_ESTIMATE_MEMORY_ESTIMATE_H_
#define LOOM_ESTIMATE_MEMORY_ESTIMATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace loom::estimate {

struct EstimateInputs {
  int64_t total_params = 0;
  int64_t largest_layer_params = 0;  // ZeRO-3 only
  int num_gpus_per_node = 1;
  int num_nodes = 1;
  double additional_buffer_factor = 1.5;
};

struct MemoryNeeds {
  int64_t cpu_bytes = 0;
  int64_t gpu_bytes = 0;
};

MemoryNeeds Zero3Needs(const EstimateInputs& in, bool offload_optimizer, bool offload_param,
                       bool zero_init);
MemoryNeeds Zero2Needs(const EstimateInputs& in, bool offload_optimizer);

// One row of a table: the option columns and the needs.
struct EstimateRow {
  bool offload_optimizer = false;
  bool offload_param = false;  // ZeRO-3
  bool zero_init = false;      // ZeRO-3
  MemoryNeeds needs;
};
// The rows in DeepSpeed's order.
std::vector<EstimateRow> Zero3Rows(const EstimateInputs& in);
std::vector<EstimateRow> Zero2Rows(const EstimateInputs& in);

std::string Zero3Table(const EstimateInputs& in);
std::string Zero2Table(const EstimateInputs& in);
// The same rows as JSON: {"stage": 3, "total_params": ..., "rows": [{"offload_param": "cpu", ...,
// "cpu_bytes": ..., "gpu_bytes": ...}]}, with "loom_rows" too when `loom`.
std::string TableJson(int stage, const EstimateInputs& in, bool loom = false);

// loom's own per-rank model-state bytes (no offload; what its strategies' StateBytes() report,
// checked by the conformance suite and //benchmarks:sharding), for fp32 and for bf16 weights
// where loom trains them (DeepSpeed's bf16 section: bf16 weights, fp32 master partitions), with
// N = num_gpus_per_node x num_nodes ranks (hybrid sharding: N = num_gpus_per_node):
//   DDP / FSDP no_shard   16P                      (bf16: not trained)
//   ZeRO-1                8P + 16P/N               (bf16: 4P + 18P/N)
//   ZeRO-2                4P + 16P/N               (bf16: 2P + 18P/N)
//   ZeRO-3 / FSDP full_shard / shard_grad_op (between steps)   16P/N + 4L   (bf16: not trained)
//   FSDP hybrid_shard     16P/g + 4L
struct LoomRow {
  std::string strategy;
  int64_t fp32_bytes = 0;
  std::optional<int64_t> bf16_bytes;  // nullopt: loom does not train bf16 weights with it
};
std::vector<LoomRow> LoomRows(const EstimateInputs& in);
// The rows as a table after DeepSpeed's ("loom's per-rank model states ...").
std::string LoomTable(const EstimateInputs& in);

struct ModelParams {
  int64_t total_params = 0;
  int64_t largest_layer_params = 0;
  std::string source;  // the file the counts come from
};
absl::StatusOr<ModelParams> ParamsOfFolder(const std::string& dir);

}  // namespace loom::estimate

#endif  // LOOM_ESTIMATE_MEMORY_ESTIMATE_H_
