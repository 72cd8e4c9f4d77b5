// TrainerState and TrainerControl: HF's split of what the loop knows (state, saved in
// trainer_state.json) from what callbacks ask it to do next (control). Field names, defaults and
// the JSON layout follow transformers 4.41's dataclasses.
//
// trainer_state.json is json.dumps(asdict(state), indent=2, sort_keys=True) + "\n": ToJson()
// writes exactly that text for the TrainerState of the transformers version it is written for
// (TrainerStateLayout, the --save_for_transformers_version flag), and FromJson() reads either
// layout back (also files written by Python HF). The two TrainerState dataclasses differ in
// one field only: 4.41 added stateful_callbacks. transformers 4.38's load_from_json
// (cls(**json.loads(text))) raises TypeError on that key; 4.41's reads a file without it
// (its __post_init__ makes the missing value {}). So the 4.38 layout is read by both.
//
// Example:
//   TrainerState state;
//   state.global_step = 10;
//   state.log_history.push_back({{"loss", 0.69}, {"step", 10}});
//   RETURN_IF_ERROR(state.SaveToJson(dir + "/trainer_state.json",
//                                    TrainerStateLayout::kTransformers438));
//   ASSIGN_OR_RETURN(TrainerState back, TrainerState::LoadFromJson(dir + "/trainer_state.json"));
//   // back.stateful_callbacks.is_null(): the file had none to restore.
#ifndef LOOM_TRAINER_TRAINER_STATE_H_
#define LOOM_TRAINER_TRAINER_STATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainer/metrics.h"

namespace loom::trainer {

// Which transformers' TrainerState a trainer_state.json is written for.
enum class TrainerStateLayout {
  kTransformers438,  // no stateful_callbacks key: read by transformers 4.38 and 4.41
  kTransformers441,  // with stateful_callbacks: read by 4.41; 4.38 raises TypeError
};

// --save_for_transformers_version's value ("4.38" or "4.41") as a layout; any other value is
// InvalidArgument naming the flag and the accepted values.
absl::StatusOr<TrainerStateLayout> TrainerStateLayoutFor(absl::string_view transformers_version);

struct TrainerState {
  std::optional<double> epoch;
  int64_t global_step = 0;
  int64_t max_steps = 0;
  int64_t logging_steps = 500;
  int64_t eval_steps = 500;
  int64_t save_steps = 500;
  std::optional<int64_t> train_batch_size;
  int64_t num_train_epochs = 0;
  int64_t num_input_tokens_seen = 0;
  double total_flos = 0;
  std::vector<Metrics> log_history;
  std::optional<double> best_metric;
  std::optional<std::string> best_model_checkpoint;
  bool is_local_process_zero = true;
  bool is_world_process_zero = true;
  bool is_hyper_param_search = false;
  std::optional<std::string> trial_name;
  // The trial's sampled hyperparameters under hyperparameter search (HF's hp_params(trial):
  // optuna's trial.params), a JSON object; null otherwise.
  Metrics trial_params = nullptr;
  // Saved callback states by callback class name (restore_callback_states_from_checkpoint).
  // null after FromJson of a file without the key (written for transformers 4.38): nothing
  // to restore. The 4.41 layout writes null as {} (what 4.41's __post_init__ makes of it).
  Metrics stateful_callbacks = Metrics::object();

  // The trainer_state.json text for `layout`.
  std::string ToJson(TrainerStateLayout layout) const;
  static absl::StatusOr<TrainerState> FromJson(const std::string& text);

  // Atomic write / read of a trainer_state.json file; errors name the file.
  absl::Status SaveToJson(const std::string& path, TrainerStateLayout layout) const;
  static absl::StatusOr<TrainerState> LoadFromJson(const std::string& path);
};

// What callbacks ask the loop to do next. The loop resets the per-step flags as HF's
// CallbackHandler does (callback.h).
struct TrainerControl {
  bool should_training_stop = false;
  bool should_epoch_stop = false;
  bool should_save = false;
  bool should_evaluate = false;
  bool should_log = false;

  void NewTraining() { should_training_stop = false; }
  void NewEpoch() { should_epoch_stop = false; }
  void NewStep() { should_save = should_evaluate = should_log = false; }
};

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_TRAINER_STATE_H_
