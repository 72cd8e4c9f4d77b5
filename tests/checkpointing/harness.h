// Shared pieces of the Trainer-level checkpoint tests (transformers 4.41's checkpoint
// behaviour): a small model, the run's TrainingArguments, a scripted evaluation
// metric, callbacks that record what the output directory and the model looked like at each
// save, and byte-level views of parameters, optimizer state and checkpoint files.
//
// The run (BaseArgs + MakeTrainer with the defaults): 16 training examples in batches of 4,
// no gradient accumulation, so 4 optimizer steps per epoch and 12 steps over 3 epochs; AdamW
// (lr 0.05, weight decay 0.01, so two parameter groups) with a linear schedule; logging every
// 2 steps; a checkpoint every 2 steps (checkpoint-2 ... checkpoint-12); no evaluation unless
// the test asks for it. Shuffling (data_seed) makes the data order depend on the restored RNG.
//
// Example:
//   TrainerSetup setup;
//   setup.args = BaseArgs(FreshDir("run"));
//   setup.args.set_save_total_limit(2);
//   ASSERT_OK_AND_ASSIGN(auto trainer, MakeTrainer(setup));
//   ASSERT_OK(trainer->Train().status());
//   EXPECT_THAT(ListDir(setup.args.output_dir()), ElementsAreArray(CheckpointNames({10, 12})));
#ifndef LOOM_TESTS_CHECKPOINTING_HARNESS_H_
#define LOOM_TESTS_CHECKPOINTING_HARNESS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "trainer/trainer.h"

namespace loom::tests::checkpointing {

// Name -> raw bytes of a tensor (what bit-for-bit comparisons compare).
using TensorBytes = std::map<std::string, std::string>;

// The arguments of the run described above, writing into `output_dir`.
args::TrainingArguments BaseArgs(const std::string& output_dir);

struct TrainerSetup {
  args::TrainingArguments args;
  std::vector<std::shared_ptr<trainer::TrainerCallback>> callbacks;
  // Enables an 8-example eval dataset; the metrics are "eval_loss" plus what this returns.
  trainer::ComputeMetricsFn compute_metrics;
  bool with_eval_dataset = false;
  int64_t train_size = 16;
  // Non-empty: the model's config.json text.
  std::string config_json;
};

// A Trainer over TinyNet (model_init: every Train() starts from the seeded initialisation).
absl::StatusOr<std::unique_ptr<trainer::Trainer>> MakeTrainer(const TrainerSetup& setup);

// A new, empty directory path under TEST_TMPDIR (removed first if it exists; not created).
std::string FreshDir(const std::string& name);

// The entry names of `dir` (hidden ones included), sorted bytewise; empty when `dir` does not
// exist.
std::vector<std::string> ListDir(const std::string& dir);

// {"checkpoint-<s>" for s in steps}, sorted bytewise (as ListDir sorts).
std::vector<std::string> CheckpointNames(const std::vector<int64_t>& steps);

// compute_metrics returning {"score": values[i]} on its i-th call (InvalidArgument past the
// end). `calls` (optional) counts the calls.
trainer::ComputeMetricsFn ScriptedScore(std::vector<double> values,
                                        std::shared_ptr<int> calls = nullptr);

// The raw bytes of every entry of the module's state dict (parameters and buffers).
TensorBytes ModelBytes(const torch::nn::Module& model);
// The raw bytes of every tensor of a safetensors file / a torch-pickled state dict.
absl::StatusOr<TensorBytes> SafetensorsBytes(const std::string& path);
absl::StatusOr<TensorBytes> TorchStateDictBytes(const std::string& path);
// The whole file.
absl::StatusOr<std::string> FileBytes(const std::string& path);

// Parameter bytes, AdamW state (step, exp_avg, exp_avg_sq), the scheduler's last lrs and the
// log history without wall-clock values (*_runtime, *_per_second), as one string: equal digests
// mean bit-identical training state.
std::string RunDigest(trainer::Trainer& trainer);

// What the output directory and the model looked like at each on_save (after the checkpoint
// was committed and rotated), and the output directory at on_train_end.
class SaveRecorder : public trainer::TrainerCallback {
 public:
  explicit SaveRecorder(std::string output_dir) : output_dir_(std::move(output_dir)) {}
  std::string Name() const override { return "SaveRecorder"; }
  absl::Status OnSave(const trainer::Event& e) override;
  absl::Status OnTrainEnd(const trainer::Event& e) override;

  // (global_step, ListDir(output_dir)) per save, in order.
  const std::vector<std::pair<int64_t, std::vector<std::string>>>& folders() const {
    return folders_;
  }
  // global_step -> ModelBytes at that save.
  const std::map<int64_t, TensorBytes>& models() const { return models_; }
  // global_step -> parameter name -> gradient bytes (parameters with a gradient only).
  const std::map<int64_t, TensorBytes>& grads() const { return grads_; }
  const std::vector<std::string>& at_train_end() const { return at_train_end_; }

 private:
  std::string output_dir_;
  std::vector<std::pair<int64_t, std::vector<std::string>>> folders_;
  std::map<int64_t, TensorBytes> models_;
  std::map<int64_t, TensorBytes> grads_;
  std::vector<std::string> at_train_end_;
};

// global_step at on_train_begin (after a resume has loaded its checkpoint) and the
// global_step of every on_step_end.
class StepRecorder : public trainer::TrainerCallback {
 public:
  std::string Name() const override { return "StepRecorder"; }
  absl::Status OnTrainBegin(const trainer::Event& e) override {
    begin_step_ = e.state.global_step;
    return absl::OkStatus();
  }
  absl::Status OnStepEnd(const trainer::Event& e) override {
    steps_.push_back(e.state.global_step);
    return absl::OkStatus();
  }
  int64_t begin_step() const { return begin_step_; }
  const std::vector<int64_t>& steps() const { return steps_; }

 private:
  int64_t begin_step_ = -1;
  std::vector<int64_t> steps_;
};

// Stops training right after the checkpoint of `step` is written (a crash at that point).
class StopAfterSave : public trainer::TrainerCallback {
 public:
  explicit StopAfterSave(int64_t step) : step_(step) {}
  std::string Name() const override { return "StopAfterSave"; }
  absl::Status OnSave(const trainer::Event& e) override {
    if (e.state.global_step == step_) e.control.should_training_stop = true;
    return absl::OkStatus();
  }

 private:
  int64_t step_;
};

}  // namespace loom::tests::checkpointing

#endif  // LOOM_TESTS_CHECKPOINTING_HARNESS_H_
