// FSDP settings of TrainingArguments: the --fsdp option list (HF's FSDPOption values) and the
// --fsdp_config dict (the keys TrainingArguments documents under `fsdp_config`), resolved as
// HF's TrainingArguments.__post_init__
// (transformers 4.41) does, plus a typed view for the sharding code.
//
// ResolveFsdp(args, warnings) — called by PostInit (args/training_args.h):
//   * --fsdp: "offload" alone, full_shard with shard_grad_op, offload with a strategy other
//     than full_shard/shard_grad_op, and two strategies are InvalidArgument.
//   * --fsdp_config is inline JSON (first character '{') or a JSON file path. From a file, keys
//     with the "fsdp_" prefix lose it (fsdp_min_num_params -> min_num_params); inline JSON is
//     taken as given (HF strips prefixes only when reading a file), and a prefixed known key
//     there gets a warning saying to drop the prefix.
//   * Every documented key is type-checked before use: min_num_params a non-negative integer;
//     transformer_layer_cls_to_wrap a string or a list of strings; backward_prefetch one of
//     backward_pre / backward_post / no_prefetch (any case: HF upper-cases it for accelerate);
//     the flags (forward_prefetch, limit_all_gathers, use_orig_params, sync_module_states,
//     cpu_ram_efficient_loading, activation_checkpointing, xla, xla_fsdp_v2,
//     xla_fsdp_grad_ckpt) true/false or the strings "true"/"false" (any case; HF hands them to
//     accelerate as text); xla_fsdp_settings an object. A JSON null counts as absent. Errors
//     are InvalidArgument naming "--fsdp_config" and the key. Unknown keys are warnings (HF
//     ignores them silently) with the closest known key.
//   * Then HF's derivations: min_num_params = max(config value, --fsdp_min_num_params);
//     a string transformer_layer_cls_to_wrap becomes a one-element list and
//     --fsdp_transformer_layer_cls_to_wrap is appended (both deprecated flags warn);
//     min_num_params > 0 together with transformer_layer_cls_to_wrap under --fsdp is an error;
//     xla / xla_fsdp_v2 / xla_fsdp_grad_ckpt default to false; cpu_ram_efficient_loading
//     requires sync_module_states. The result is stored back in args->fsdp_config() as JSON
//     text (HF key order: the config's keys, then the added ones).
//
// FsdpConfigOf(args): the typed view of a resolved fsdp_config (HF's documented defaults for
// absent keys).
//
// Example:
//   ASSIGN_OR_RETURN(std::vector<std::string> warnings, PostInit(&args));
//   ASSIGN_OR_RETURN(FsdpConfig fsdp, FsdpConfigOf(args));
//   if (fsdp.min_num_params > 0) { ... size-based wrapping ... }
#ifndef LOOM_ARGS_FSDP_CONFIG_H_
#define LOOM_ARGS_FSDP_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "nlohmann/json.hpp"

namespace loom::args {

enum class FsdpBackwardPrefetchPolicy { kBackwardPre, kBackwardPost, kNoPrefetch };

// --fsdp_config after resolution (defaults as transformers 4.41 documents them for
// `fsdp_config`).
struct FsdpConfig {
  int64_t min_num_params = 0;
  // Empty: the model's _no_split_modules decide (as in HF's transformer auto-wrap).
  std::vector<std::string> transformer_layer_cls_to_wrap;
  // Unset: no prefetch (accelerate's NO_PREFETCH).
  std::optional<FsdpBackwardPrefetchPolicy> backward_prefetch;
  bool forward_prefetch = false;
  bool limit_all_gathers = false;
  bool use_orig_params = true;
  bool sync_module_states = true;
  bool cpu_ram_efficient_loading = false;
  bool activation_checkpointing = false;
  bool xla = false;
  bool xla_fsdp_v2 = false;
  bool xla_fsdp_grad_ckpt = false;
  nlohmann::ordered_json xla_fsdp_settings;  // null when absent
};

// Resolves args->fsdp() and args->fsdp_config() in place; see the header comment.
absl::Status ResolveFsdp(TrainingArguments* args, std::vector<std::string>* warnings);

// The typed view of args.fsdp_config() (after ResolveFsdp); InvalidArgument naming the key when
// a value has the wrong type.
absl::StatusOr<FsdpConfig> FsdpConfigOf(const TrainingArguments& args);

}  // namespace loom::args

#endif  // LOOM_ARGS_FSDP_CONFIG_H_
