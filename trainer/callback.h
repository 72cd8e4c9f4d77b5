// TrainerCallback and the CallbackHandler that calls them: HF's event set (transformers 4.41
// trainer_callback.py), in the order transformers 4.41 fires them.
//
// Contract:
//   - Every event receives the arguments, the TrainerState (read it; only the loop writes it)
//     and the TrainerControl (set flags to steer the loop), plus a CallbackContext holding
//     what HF passes as kwargs (model, optimizer, scheduler, dataloaders). Events return a
//     Status: an error stops the run and is reported with the callback's and event's names.
//   - Before calling the callbacks, the handler resets flags as HF does: on_train_begin
//     clears should_training_stop, on_epoch_begin should_epoch_stop, on_step_begin
//     should_log/evaluate/save, on_evaluate should_evaluate, on_save should_save, on_log
//     should_log.
//   - Callbacks run in list order. AddCallback appends; PopCallback / RemoveCallback take an
//     instance, or (templates) the first callback of a type; PopCallback returns nullptr when
//     nothing matches (no error), as HF does.
//
// Example:
//   class StopAtTen : public TrainerCallback {
//    public:
//     std::string Name() const override { return "StopAtTen"; }
//     absl::Status OnStepEnd(const Event& e) override {
//       if (e.state.global_step >= 10) e.control.should_training_stop = true;
//       return absl::OkStatus();
//     }
//   };
//   trainer.AddCallback(std::make_shared<StopAtTen>());
#ifndef LOOM_TRAINER_CALLBACK_H_
#define LOOM_TRAINER_CALLBACK_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "args/training_args.pb.h"
#include "trainer/metrics.h"
#include "trainer/trainer_state.h"

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace loom::data {
class DataLoader;
}
namespace loom::optim {
class LrScheduler;
}

namespace loom::trainer {

// What HF passes to callbacks as keyword arguments. Pointers may be null (e.g. no optimizer
// before training).
struct CallbackContext {
  torch::nn::Module* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  optim::LrScheduler* lr_scheduler = nullptr;
  data::DataLoader* train_dataloader = nullptr;
  data::DataLoader* eval_dataloader = nullptr;
};

// One event's arguments. `metrics` is set for on_evaluate / on_predict, `logs` for on_log.
struct Event {
  const args::TrainingArguments& args;
  const TrainerState& state;
  TrainerControl& control;
  const CallbackContext& context;
  const Metrics* metrics = nullptr;
  const Metrics* logs = nullptr;
};

class TrainerCallback {
 public:
  virtual ~TrainerCallback();

  // The class name HF would show (used in errors and for stateful_callbacks).
  virtual std::string Name() const = 0;

  virtual absl::Status OnInitEnd(const Event& e);
  virtual absl::Status OnTrainBegin(const Event& e);
  virtual absl::Status OnTrainEnd(const Event& e);
  virtual absl::Status OnEpochBegin(const Event& e);
  virtual absl::Status OnEpochEnd(const Event& e);
  virtual absl::Status OnStepBegin(const Event& e);
  virtual absl::Status OnSubstepEnd(const Event& e);
  virtual absl::Status OnStepEnd(const Event& e);
  virtual absl::Status OnEvaluate(const Event& e);
  virtual absl::Status OnPredict(const Event& e);
  virtual absl::Status OnSave(const Event& e);
  virtual absl::Status OnLog(const Event& e);
  virtual absl::Status OnPredictionStep(const Event& e);

  // Stateful callbacks (HF ExportableState, transformers 4.41): the state stored in
  // trainer_state.json's stateful_callbacks under Name(), as {"args": {...}, "attributes":
  // {...}}; std::nullopt (the default) for callbacks without state. RestoreState(state) sets
  // the callback as HF's `type(cb)(**args)` + setattr(attributes) would build it.
  virtual std::optional<Metrics> ExportState() const;
  virtual absl::Status RestoreState(const Metrics& state);
};

class CallbackHandler {
 public:
  CallbackHandler() = default;
  explicit CallbackHandler(std::vector<std::shared_ptr<TrainerCallback>> callbacks)
      : callbacks_(std::move(callbacks)) {}

  void AddCallback(std::shared_ptr<TrainerCallback> callback);
  // Removes `callback` (by identity) and returns it; nullptr when absent.
  std::shared_ptr<TrainerCallback> PopCallback(const TrainerCallback* callback);
  // The first callback of type T, removed; nullptr when there is none.
  template <typename T>
  std::shared_ptr<TrainerCallback> PopCallback() {
    for (auto it = callbacks_.begin(); it != callbacks_.end(); ++it) {
      if (dynamic_cast<T*>(it->get()) != nullptr) {
        std::shared_ptr<TrainerCallback> found = *it;
        callbacks_.erase(it);
        return found;
      }
    }
    return nullptr;
  }
  void RemoveCallback(const TrainerCallback* callback) { PopCallback(callback); }
  template <typename T>
  void RemoveCallback() {
    PopCallback<T>();
  }

  const std::vector<std::shared_ptr<TrainerCallback>>& callbacks() const { return callbacks_; }
  // One "Name" per line, as HF's callback_list property.
  std::string CallbackList() const;

  CallbackContext& context() { return context_; }

  using Args = args::TrainingArguments;
  absl::Status OnInitEnd(const Args& a, const TrainerState& s, TrainerControl& c);
  absl::Status OnTrainBegin(const Args& a, const TrainerState& s, TrainerControl& c);
  absl::Status OnTrainEnd(const Args& a, const TrainerState& s, TrainerControl& c);
  absl::Status OnEpochBegin(const Args& a, const TrainerState& s, TrainerControl& c);
  absl::Status OnEpochEnd(const Args& a, const TrainerState& s, TrainerControl& c);
  absl::Status OnStepBegin(const Args& a, const TrainerState& s, TrainerControl& c);
  absl::Status OnSubstepEnd(const Args& a, const TrainerState& s, TrainerControl& c);
  absl::Status OnStepEnd(const Args& a, const TrainerState& s, TrainerControl& c);
  absl::Status OnEvaluate(const Args& a, const TrainerState& s, TrainerControl& c,
                          const Metrics& metrics);
  absl::Status OnPredict(const Args& a, const TrainerState& s, TrainerControl& c,
                         const Metrics& metrics);
  absl::Status OnSave(const Args& a, const TrainerState& s, TrainerControl& c);
  absl::Status OnLog(const Args& a, const TrainerState& s, TrainerControl& c, const Metrics& logs);
  absl::Status OnPredictionStep(const Args& a, const TrainerState& s, TrainerControl& c);

 private:
  using Method = absl::Status (TrainerCallback::*)(const Event&);
  absl::Status Call(const char* event, Method method, const Event& e);

  std::vector<std::shared_ptr<TrainerCallback>> callbacks_;
  CallbackContext context_;
};

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_CALLBACK_H_
