#include "tests/checkpointing/harness.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/module_state.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/torch_pickle.h"
#include "data/dataset.h"
#include "optim/param_state.h"

namespace loom::tests::checkpointing {
namespace {

// Embedding(10, 4) -> mean over tokens -> tanh -> Linear(4, 3); cross entropy with labels.
// State dict: embed.weight [10, 4], fc.weight [3, 4], fc.bias [3].
class TinyNet : public trainer::Model {
 public:
  explicit TinyNet(std::string config_json) : config_json_(std::move(config_json)) {
    embed_ = register_module("embed", torch::nn::Embedding(10, 4));
    fc_ = register_module("fc", torch::nn::Linear(4, 3));
  }
  trainer::ModelOutput Forward(const data::Batch& in) override {
    at::Tensor logits = fc_->forward(at::tanh(embed_->forward(in.at("input_ids")).mean(1)));
    trainer::ModelOutput out;
    if (in.count("labels")) out.loss = at::cross_entropy_loss(logits, in.at("labels"));
    out.outputs.push_back({"logits", logits});
    return out;
  }
  std::string ConfigJson() const override { return config_json_; }

 private:
  std::string config_json_;
  torch::nn::Embedding embed_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

std::shared_ptr<data::TensorDataset> MakeData(int64_t n, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor ids = at::randint(10, {n, 5}, gen, at::kLong);
  at::Tensor labels = ids.select(1, 0).remainder(3);
  return *data::TensorDataset::Create({{"input_ids", ids}, {"labels", labels}});
}

std::string RawBytes(const at::Tensor& t) {
  at::Tensor c = t.detach().cpu().contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

TensorBytes ToBytes(const checkpoint::NamedTensors& tensors) {
  TensorBytes out;
  for (const auto& [name, t] : tensors) out[name] = RawBytes(t);
  return out;
}

}  // namespace

args::TrainingArguments BaseArgs(const std::string& output_dir) {
  args::TrainingArguments a;
  a.set_output_dir(output_dir);
  a.set_num_train_epochs(3);
  a.set_per_device_train_batch_size(4);
  a.set_per_device_eval_batch_size(8);
  a.set_learning_rate(5e-2);
  a.set_weight_decay(0.01);
  a.set_logging_steps(2);
  a.set_save_strategy("steps");
  a.set_save_steps(2);
  a.set_data_seed(7);
  a.set_seed(3);
  a.set_disable_tqdm(true);
  a.add_report_to("none");
  return a;
}

absl::StatusOr<std::unique_ptr<trainer::Trainer>> MakeTrainer(const TrainerSetup& setup) {
  trainer::TrainerOptions o;
  o.args = setup.args;
  o.train_dataset = MakeData(setup.train_size, 1);
  if (setup.with_eval_dataset) o.eval_dataset = MakeData(8, 2);
  o.compute_metrics = setup.compute_metrics;
  const std::string config = setup.config_json;
  o.model_init = [config]() -> absl::StatusOr<std::shared_ptr<trainer::Model>> {
    return std::make_shared<TinyNet>(config);
  };
  o.callbacks = setup.callbacks;
  return trainer::Trainer::Create(std::move(o));
}

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
  std::filesystem::remove_all(dir);
  return dir;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> CheckpointNames(const std::vector<int64_t>& steps) {
  std::vector<std::string> out;
  for (int64_t s : steps) out.push_back(absl::StrCat("checkpoint-", s));
  std::sort(out.begin(), out.end());
  return out;
}

trainer::ComputeMetricsFn ScriptedScore(std::vector<double> values, std::shared_ptr<int> calls) {
  if (calls == nullptr) calls = std::make_shared<int>(0);
  return [values = std::move(values),
          calls](const trainer::EvalPrediction&) -> absl::StatusOr<trainer::Metrics> {
    const int i = (*calls)++;
    if (i >= static_cast<int>(values.size())) {
      return absl::InvalidArgumentError(absl::StrCat("ScriptedScore: unexpected call ", i + 1));
    }
    trainer::Metrics m = trainer::Metrics::object();
    m["score"] = values[i];
    return m;
  };
}

TensorBytes ModelBytes(const torch::nn::Module& model) {
  return ToBytes(checkpoint::ModuleStateDict(model));
}

absl::StatusOr<TensorBytes> SafetensorsBytes(const std::string& path) {
  checkpoint::SafetensorsLoadOptions options;
  options.mmap = false;
  ASSIGN_OR_RETURN(checkpoint::SafetensorsFile file, checkpoint::LoadSafetensors(path, options));
  return ToBytes(file.tensors);
}

absl::StatusOr<TensorBytes> TorchStateDictBytes(const std::string& path) {
  ASSIGN_OR_RETURN(checkpoint::NamedTensors tensors, checkpoint::LoadTorchStateDict(path));
  return ToBytes(tensors);
}

absl::StatusOr<std::string> FileBytes(const std::string& path) { return base::ReadFile(path); }

std::string RunDigest(trainer::Trainer& t) {
  std::string out;
  torch::optim::Optimizer* opt = t.optimizer();
  for (const auto& p : t.model().named_parameters()) {
    absl::StrAppend(&out, p.key(), "\n", RawBytes(p.value()));
    if (opt == nullptr) continue;
    auto it = opt->state().find(optim::ParamStateKey(p.value()));
    if (it == opt->state().end()) continue;
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*it->second);
    absl::StrAppend(&out, "step ", s.step(), "\n", RawBytes(s.exp_avg()), RawBytes(s.exp_avg_sq()));
  }
  if (t.lr_scheduler() != nullptr) {
    for (double lr : t.lr_scheduler()->LastLr()) absl::StrAppend(&out, "lr ", lr, "\n");
  }
  for (trainer::Metrics entry : t.state().log_history) {
    std::vector<std::string> drop;
    for (auto it = entry.begin(); it != entry.end(); ++it) {
      if (absl::StrContains(it.key(), "_runtime") || absl::StrContains(it.key(), "_per_second")) {
        drop.push_back(it.key());
      }
    }
    for (const std::string& k : drop) entry.erase(k);
    absl::StrAppend(&out, trainer::PyJsonDumps(entry, -1, true), "\n");
  }
  absl::StrAppend(&out, "global_step ", t.state().global_step, "\n");
  return out;
}

absl::Status SaveRecorder::OnSave(const trainer::Event& e) {
  folders_.push_back({e.state.global_step, ListDir(output_dir_)});
  if (e.context.model != nullptr) {
    models_[e.state.global_step] = ModelBytes(*e.context.model);
    TensorBytes grads;
    for (const auto& p : e.context.model->named_parameters()) {
      if (p.value().grad().defined()) grads[p.key()] = RawBytes(p.value().grad());
    }
    grads_[e.state.global_step] = std::move(grads);
  }
  return absl::OkStatus();
}

absl::Status SaveRecorder::OnTrainEnd(const trainer::Event&) {
  at_train_end_ = ListDir(output_dir_);
  return absl::OkStatus();
}

}  // namespace loom::tests::checkpointing
