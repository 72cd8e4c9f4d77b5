// DeepSpeed JSON config: typed loading (DeepSpeed 0.13.5's zero_optimization, optimizer,
// scheduler, fp16/bf16 and batch keys) and HF's "auto" resolution against TrainingArguments
// (transformers 4.38–4.41 integrations/deepspeed.py HfTrainerDeepSpeedConfig).
//
// Loading contract (LoadDeepSpeedConfig / ParseDeepSpeedConfig):
//   * Input is a file path, or inline JSON text whose first non-blank character is '{' (the
//     two forms TrainingArguments.deepspeed takes). Strict JSON: trailing commas are errors.
//   * Every zero_optimization key (offload_*, aio included) and the top-level keys above are
//     read into DeepSpeedConfig. Absent keys keep DeepSpeed 0.13.5's defaults.
//   * "auto" is accepted only where HF fills it (trainer_config_process /
//     trainer_config_finalize): batch sizes, gradient_accumulation,
//     gradient_clipping, optimizer.params.{lr,betas,eps,weight_decay}, scheduler.params.{warmup_*,
//     total_num_steps}, fp16/bf16/amp.enabled, amp.opt_level,
//     zero_optimization.{reduce_bucket_size, stage3_prefetch_bucket_size,
//     stage3_param_persistence_threshold}. It is held as AutoOr<T>.
//   * Integer keys accept integral floats (5e8, 0.94e6), as DeepSpeed's pydantic config does.
//   * Wrong types, "auto" where not allowed and bad enum values (stage not 0-3, offload device not
//     cpu/nvme/none, communication_data_type not fp16/bfp16/bf16/fp32) are InvalidArgument naming
//     the dotted key path: `zero_optimization.stage: expected an integer, got "x"`.
//   * Unknown keys are warnings naming the dotted key (DeepSpeed itself ignores them silently).
//     optimizer.params / scheduler.params keys loom does not model are kept in `raw` with a
//     warning too (they are passed through to DeepSpeed unchanged).
//   * `aio` is read at the top level (DeepSpeed) and nested in zero_optimization (the HF doc's
//     NVMe example). When both exist the top-level section wins as a whole, with a warning.
//   * A JSON null counts as an absent key (HF's fill_match treats None the same way).
//   * `raw` keeps the document (key order preserved) so the resolved config can be written back.
//
// Resolution contract (TrainerDeepSpeedConfig) = HF's HfTrainerDeepSpeedConfig:
//   Phase A TrainerConfigProcess(args, world_size) at TrainingArguments time; Phase B
//   TrainerConfigFinalize(args, hidden_size, num_training_steps) once the model and step count are
//   known. "auto" values are replaced by the TrainingArguments-derived value; explicit values that
//   differ are collected as "- ds {key}={ds value} vs hf {name}={hf value}" (values printed as
//   Python prints them) and reported together at finalize / CheckMismatches(). Keys whose parent
//   node is absent are neither filled nor compared. Decisions where loom differs from HF:
//     - fp16 backend: HF reads the deprecated args.fp16_backend; loom reads
//       half_precision_backend (PostInit copies fp16_backend into it). "auto" and "cpu_amp" count
//       as "amp", only "apex" as apex — HF's `"apex" if backend == "apex" else "amp"`.
//     - the adafactor check fires for --adafactor and for --optim adafactor (PostInit maps the
//       former to the latter); HF checks only args.adafactor.
//     - Phase B follows newer transformers than 4.38-4.41 (integrations/deepspeed.py): the
//       ZeRO-3 prefetch
//       bucket is int(0.9 * h * h) (4.41 writes the float, e.g. 943718.4, which DeepSpeed's
//       integer field must then coerce), and the hidden size is also looked up in text_config.
//
// Example:
//   std::vector<std::string> warnings;
//   ASSIGN_OR_RETURN(DeepSpeedConfig ds, LoadDeepSpeedConfig(args.deepspeed(), &warnings));
//   TrainerDeepSpeedConfig hf_ds(std::move(ds));
//   RETURN_IF_ERROR(hf_ds.TrainerConfigProcess(args, world_size));
//   ...  // build the model, count the steps
//   RETURN_IF_ERROR(hf_ds.TrainerConfigFinalize(args, HiddenSizeOf(model_config_json), steps));
//   int64_t bucket = hf_ds.config().zero_optimization.reduce_bucket_size.value();
//   RETURN_IF_ERROR(base::WriteFileAtomically(out + "/ds_config.json", hf_ds.ToJsonString()));
#ifndef LOOM_ARGS_DEEPSPEED_CONFIG_H_
#define LOOM_ARGS_DEEPSPEED_CONFIG_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "nlohmann/json.hpp"

namespace loom::args {

// The JSON string "auto".
struct Auto {
  bool operator==(const Auto&) const { return true; }
};

// A value that may be "auto" (to be filled from TrainingArguments / the model).
template <typename T>
class AutoOr {
 public:
  AutoOr() : v_(T{}) {}
  AutoOr(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  AutoOr(Auto) : v_(Auto{}) {}               // NOLINT(google-explicit-constructor)

  bool is_auto() const { return std::holds_alternative<Auto>(v_); }
  // Precondition: !is_auto().
  const T& value() const { return std::get<T>(v_); }
  T value_or(T fallback) const { return is_auto() ? std::move(fallback) : value(); }
  bool operator==(const AutoOr& other) const { return v_ == other.v_; }
  bool operator!=(const AutoOr& other) const { return !(*this == other); }

 private:
  std::variant<Auto, T> v_;
};

enum class OffloadDevice { kNone, kCpu, kNvme };
enum class CommDataType { kFp16, kBf16, kFp32 };  // JSON "fp16", "bfp16" (or "bf16"), "fp32"
enum class DeepSpeedDtype { kFloat32, kFloat16, kBfloat16 };

const char* OffloadDeviceName(OffloadDevice device);   // "none", "cpu", "nvme"
const char* DeepSpeedDtypeName(DeepSpeedDtype dtype);  // "float32", "float16", "bfloat16"

struct OffloadOptimizerConfig {
  OffloadDevice device = OffloadDevice::kNone;
  std::optional<std::string> nvme_path;
  bool pin_memory = false;
  int64_t buffer_count = 4;
  bool fast_init = false;
};

struct OffloadParamConfig {
  OffloadDevice device = OffloadDevice::kNone;
  std::optional<std::string> nvme_path;
  bool pin_memory = false;
  int64_t buffer_count = 5;
  int64_t buffer_size = 100000000;  // 1e8
  int64_t max_in_cpu = 1000000000;  // 1e9
};

struct AioConfig {
  int64_t block_size = 1048576;
  int64_t queue_depth = 8;
  int64_t thread_count = 1;  // newer DeepSpeed's intra_op_parallelism is read into it too
  bool single_submit = false;
  bool overlap_events = true;
};

struct ZeroConfig {
  int stage = 0;
  std::optional<OffloadOptimizerConfig> offload_optimizer;  // absent: no offload
  std::optional<OffloadParamConfig> offload_param;
  bool allgather_partitions = true;
  int64_t allgather_bucket_size = 500000000;
  bool reduce_scatter = true;
  AutoOr<int64_t> reduce_bucket_size = int64_t{500000000};
  std::optional<bool> overlap_comm;  // unset: DeepSpeed uses stage == 3; see OverlapComm()
  bool contiguous_gradients = true;
  bool round_robin_gradients = false;
  int64_t sub_group_size = 1000000000;
  AutoOr<int64_t> stage3_prefetch_bucket_size = int64_t{50000000};
  AutoOr<int64_t> stage3_param_persistence_threshold = int64_t{100000};
  int64_t stage3_max_live_parameters = 1000000000;
  int64_t stage3_max_reuse_distance = 1000000000;
  // Also read from the deprecated spelling stage3_gather_fp16_weights_on_model_save.
  bool stage3_gather_16bit_weights_on_model_save = false;

  bool OverlapComm() const { return overlap_comm.value_or(stage == 3); }
};

struct Fp16Config {
  bool present = false;  // the section exists
  AutoOr<bool> enabled = false;
  double loss_scale = 0;  // 0: dynamic loss scaling
  int64_t initial_scale_power = 16;
  int64_t loss_scale_window = 1000;
  int64_t hysteresis = 2;
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1;
};

struct Bf16Config {
  bool present = false;
  AutoOr<bool> enabled = false;
};

struct AmpConfig {
  bool present = false;
  AutoOr<bool> enabled = false;
  std::optional<AutoOr<std::string>> opt_level;  // unset: apex's own default
};

struct OptimizerConfig {
  std::string type;  // "AdamW", "Adam", "Lamb", "OneBitAdam", a torch optimizer name, ...
  // Defaults are DeepSpeed's Adam/AdamW ones.
  AutoOr<double> lr = 1e-3;
  AutoOr<std::array<double, 2>> betas = std::array<double, 2>{0.9, 0.999};
  AutoOr<double> eps = 1e-8;
  AutoOr<double> weight_decay = 0.0;
};

struct SchedulerConfig {
  std::string type;  // "WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", ...
  // Defaults are DeepSpeed's WarmupLR ones (DeepSpeed 0.13.5 lr_schedules.py).
  AutoOr<double> warmup_min_lr = 0.0;
  AutoOr<double> warmup_max_lr = 0.001;
  AutoOr<int64_t> warmup_num_steps = int64_t{1000};
  std::optional<AutoOr<int64_t>> total_num_steps;  // required by WarmupDecayLR/WarmupCosineLR
  int64_t last_batch_iteration = -1;
  std::string warmup_type = "log";  // "log" or "linear"
  double warmup_min_ratio = 0.0;    // WarmupCosineLR
  double cos_min_ratio = 0.0001;    // WarmupCosineLR
};

struct DeepSpeedConfig {
  ZeroConfig zero_optimization;
  AioConfig aio;  // top-level `aio`, else zero_optimization.aio, else defaults
  Fp16Config fp16;
  Bf16Config bf16;
  AmpConfig amp;
  std::optional<OptimizerConfig> optimizer;  // absent: the Trainer builds its own optimizer
  std::optional<SchedulerConfig> scheduler;  // absent: the Trainer builds its own scheduler
  // Unset: DeepSpeed derives them from the other two.
  std::optional<AutoOr<int64_t>> train_batch_size;
  std::optional<AutoOr<int64_t>> train_micro_batch_size_per_gpu;
  std::optional<AutoOr<int64_t>> gradient_accumulation_steps;
  AutoOr<double> gradient_clipping = 0.0;  // 0: no clipping
  int64_t steps_per_print = 10;
  bool wall_clock_breakdown = false;
  bool zero_allow_untested_optimizer = false;
  bool zero_force_ds_cpu_optimizer = true;
  std::optional<CommDataType> communication_data_type;  // unset: the training dtype
  struct Checkpoint {
    bool use_node_local_storage = false;
  } checkpoint;

  nlohmann::ordered_json raw;  // the document as given (after resolution: as resolved)
  std::string source;          // the file path, or "<inline JSON>"

  bool IsZero3() const { return zero_optimization.stage == 3; }
  // Any of offload_optimizer / offload_param on a device other than "none".
  bool IsOffload() const;
};

// Loads a DeepSpeed config from a file path or inline JSON text (see the header comment).
// `warnings` (may be null) receives unknown-key and aio-placement warnings.
absl::StatusOr<DeepSpeedConfig> LoadDeepSpeedConfig(const std::string& path_or_json,
                                                    std::vector<std::string>* warnings = nullptr);

// Reads an already-parsed JSON object. `source` names it in error messages.
absl::StatusOr<DeepSpeedConfig> ParseDeepSpeedConfig(const nlohmann::ordered_json& json,
                                                     const std::string& source,
                                                     std::vector<std::string>* warnings = nullptr);

// HF's dtype decision (HfDeepSpeedConfig.dtype) on the config as it stands: bf16.enabled truthy ->
// bfloat16; else fp16.enabled present and falsy -> float32; else float16 (DeepSpeed's default
// mode). Python truthiness: an unresolved "auto" counts as true, so call it after Phase A.
DeepSpeedDtype DecideDtype(const nlohmann::ordered_json& raw);

// The model's hidden size as HF's trainer_config_finalize finds it in a model config.json:
// hidden_size, else max(hidden_sizes), else d_model (the attribute_map of T5, BART, ...), each
// also looked up in text_config; nullopt when none exists.
std::optional<int64_t> HiddenSizeOf(const nlohmann::ordered_json& model_config);

// HF's HfTrainerDeepSpeedConfig: the config plus the mismatches found while resolving "auto".
class TrainerDeepSpeedConfig {
 public:
  explicit TrainerDeepSpeedConfig(DeepSpeedConfig config);

  // Phase A (trainer_config_process): batch sizes (mismatch checks of the two batch keys skipped
  // when args.auto_find_batch_size()), gradient_clipping, optimizer.params, scheduler warmup lrs,
  // checkpoint.use_node_local_storage, fp16/amp/bf16, then the dtype decision.
  absl::Status TrainerConfigProcess(const TrainingArguments& args, int world_size);

  // Phase B: hidden-size keys (error listing the "auto" ones when `hidden_size` is nullopt),
  // scheduler total_num_steps / warmup_num_steps; then every collected mismatch as one
  // InvalidArgument (CheckMismatches), then CheckAdafactor.
  absl::Status TrainerConfigFinalize(const TrainingArguments& args,
                                     std::optional<int64_t> hidden_size,
                                     int64_t num_training_steps);

  // InvalidArgument listing every mismatch so far (HF's finalize text), OK when none.
  absl::Status CheckMismatches() const;
  // InvalidArgument when the config has an `optimizer` and --adafactor / --optim adafactor.
  absl::Status CheckAdafactor(const TrainingArguments& args) const;

  const std::vector<std::string>& mismatches() const { return mismatches_; }
  // FailedPrecondition before TrainerConfigProcess.
  absl::StatusOr<DeepSpeedDtype> dtype() const;
  const DeepSpeedConfig& config() const { return config_; }
  // The (resolved) raw document, json.dumps-style with `indent` spaces.
  std::string ToJsonString(int indent = 2) const { return config_.raw.dump(indent); }

 private:
  // HF's fill_match / fill_only on config_.raw.
  void FillMatch(const std::string& ds_key, const nlohmann::ordered_json& hf_value,
                 const std::string& hf_name, bool must_match = true);
  bool IsAuto(const std::string& ds_key) const;
  absl::Status Reparse();  // refreshes the typed view from config_.raw

  DeepSpeedConfig config_;
  std::vector<std::string> mismatches_;
  std::optional<DeepSpeedDtype> dtype_;
};

// Python's str() of a JSON value as json.loads would give it: None, True/False, 3e-05,
// 500000000.0, [0.9, 0.999], {'a': 'b'}; a top-level string without quotes.
std::string PythonStr(const nlohmann::ordered_json& value);

// Python's == on json.loads values: bools and numbers compare numerically (True == 1 == 1.0),
// lists and dicts element-wise.
bool PythonEqual(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b);

}  // namespace loom::args

#endif  // LOOM_ARGS_DEEPSPEED_CONFIG_H_
