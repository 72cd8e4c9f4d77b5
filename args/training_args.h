// TrainingArguments resolution: HF's TrainingArguments.__post_init__ (transformers 4.41) over
// the proto schema in training_args.proto — derived defaults, deprecated aliases, and every
// validation rule of transformers 4.41 TrainingArguments — plus loom's own rejection of options
// that cannot apply in C++ (TPU, torch.compile, IPEX, Apex, ...: fields whose spec has
// `unsupported`).
//
// Derived defaults (TrainingArguments.__post_init__):
//   do_eval <- true when eval_strategy != "no"; eval_steps <- logging_steps; logging_dir <-
//   output_dir/runs/<Mon><DD>_<HH>-<MM>-<SS>_<host>; run_name <- output_dir;
//   metric_for_best_model <- "loss" (load_best_model_at_end or reduce_lr_on_plateau);
//   greater_is_better <- metric not in {"loss", "eval_loss"}; *_steps > 1 must be integers;
//   torch_compile <- true when torch_compile_backend/mode are set; report_to None/"all" ->
//   the integrations loom has ("tensorboard"), "none" -> []; fsdp "a b" -> [a, b];
//   dict fields given as JSON text converted by HF's _convert_str_dict (args/field_value.h);
//   fsdp_config loaded (path or JSON) with "fsdp_" prefixes stripped, typed and defaults filled
//   (args/fsdp_config.h);
//   accelerator_config filled with its defaults; dataloader_pin_memory <- false with use_cpu;
//   deprecated aliases (evaluation_strategy, no_cuda, adafactor, fp16_backend, torchdynamo,
//   push_to_hub_token/model_id/organization, tpu_metrics_debug, dispatch_batches,
//   split_batches, fsdp_min_num_params, fsdp_transformer_layer_cls_to_wrap) mapped with a
//   warning.
// Errors are InvalidArgument and name the flag (e.g. "--save_steps").
//
// Example:
//   TrainingArguments args;
//   ArgParser parser({.program = "train"});
//   parser.AddGroup("TrainingArguments", &args);
//   RETURN_IF_ERROR(parser.Parse(argc, argv));
//   ASSIGN_OR_RETURN(std::vector<std::string> warnings, PostInit(&args));
#ifndef LOOM_ARGS_TRAINING_ARGS_H_
#define LOOM_ARGS_TRAINING_ARGS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "args/derived.h"  // GetWarmupSteps, *BatchSizePerDevice (re-exported)
#include "args/training_args.pb.h"

namespace loom::args {

struct PostInitOptions {
  // Clock and host name for the default logging_dir; defaults: now and gethostname().
  std::function<absl::Time()> now;
  std::string hostname;
  // What report_to "all" (and the None default) expands to: the integrations loom has.
  std::vector<std::string> available_integrations = {"tensorboard"};
  // Apply each field's support status (args/field_support.h): refuse UNSUPPORTED and NOT_YET
  // fields given a non-default value, warn about NOT_APPLICABLE ones. Tests of HF's own
  // derivations may turn it off.
  bool reject_unsupported = true;
  // The number of processes, for the DeepSpeed config's batch-size "auto" values; 0 reads
  // WORLD_SIZE from the environment (1 when unset), as HF's args.world_size does.
  int world_size = 0;
};

// Resolves `args` in place exactly as HF's __post_init__ does; returns the warnings HF
// would emit (deprecations, ignored options). Running it twice is harmless.
// With --deepspeed, the config (file or inline JSON) is loaded and its "auto" values resolved
// against the flags here, as HF's __post_init__ does (HfTrainerDeepSpeedConfig +
// trainer_config_process): a missing file, bad JSON, a bad key, or a value that contradicts
// a flag (e.g. fp16.enabled true without --fp16) is an error before any work
// (as transformers' trainer_config_finalize raises). The loaded config is not kept: whoever trains
// with it loads it again.
absl::StatusOr<std::vector<std::string>> PostInit(TrainingArguments* args,
                                                  const PostInitOptions& options = {});

}  // namespace loom::args

#endif  // LOOM_ARGS_TRAINING_ARGS_H_
