#include "tests/resume/resume_harness.h"

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>

#include <ATen/CPUGeneratorImpl.h>

#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "optim/param_state.h"

namespace loom::tests {
namespace {

class DropoutClassifier : public trainer::Model {
 public:
  DropoutClassifier(std::optional<int64_t> inf_loss_token, std::shared_ptr<int64_t> spikes)
      : inf_loss_token_(inf_loss_token), spikes_(std::move(spikes)) {
    embed_ = register_module("embed", torch::nn::Embedding(20, 8));
    dropout_ = register_module("dropout", torch::nn::Dropout(0.2));
    fc_ = register_module("fc", torch::nn::Linear(8, 3));
  }
  trainer::ModelOutput Forward(const data::Batch& in) override {
    at::Tensor h = dropout_->forward(embed_->forward(in.at("input_ids"))).mean(1);
    trainer::ModelOutput out;
    at::Tensor logits = fc_->forward(at::tanh(h));
    if (in.count("labels")) {
      out.loss = at::cross_entropy_loss(logits, in.at("labels"));
      if (inf_loss_token_ && is_training() &&
          (in.at("input_ids").select(1, 0) == *inf_loss_token_).any().item<bool>()) {
        out.loss = out.loss * std::numeric_limits<float>::infinity();
        if (spikes_) ++*spikes_;
      }
    }
    out.outputs.push_back({"logits", logits});
    return out;
  }

 private:
  std::optional<int64_t> inf_loss_token_;
  std::shared_ptr<int64_t> spikes_;
  torch::nn::Embedding embed_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
  torch::nn::Linear fc_{nullptr};
};

std::shared_ptr<data::TensorDataset> MakeData(int64_t n, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor ids = at::randint(20, {n, 6}, gen, at::kLong);
  at::Tensor labels = ids.select(1, 0).remainder(3);
  return *data::TensorDataset::Create({{"input_ids", ids}, {"labels", labels}});
}

void AppendBytes(const at::Tensor& t, std::string* out) {
  at::Tensor c = t.detach().cpu().contiguous();
  out->append(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

}  // namespace

std::shared_ptr<trainer::Model> MakeDropoutClassifier(std::optional<int64_t> inf_loss_token,
                                                      std::shared_ptr<int64_t> spikes) {
  return std::make_shared<DropoutClassifier>(inf_loss_token, std::move(spikes));
}

absl::StatusOr<std::unique_ptr<trainer::Trainer>> MakeResumeTrainer(
    const std::string& output_dir, std::vector<std::shared_ptr<trainer::TrainerCallback>> callbacks,
    const std::string& save_strategy, int64_t save_steps,
    const std::function<void(trainer::TrainerOptions&)>& customize) {
  trainer::TrainerOptions o;
  o.args.set_output_dir(output_dir);
  o.args.set_num_train_epochs(3);
  o.args.set_per_device_train_batch_size(4);
  o.args.set_per_device_eval_batch_size(8);
  o.args.set_gradient_accumulation_steps(2);
  o.args.set_learning_rate(5e-2);
  o.args.set_weight_decay(0.01);
  o.args.set_warmup_steps(2);
  o.args.set_logging_steps(2);
  o.args.set_eval_strategy("steps");
  o.args.set_eval_steps(3);
  o.args.set_save_strategy(save_strategy);
  o.args.set_save_steps(save_steps);
  o.args.set_data_seed(7);
  o.args.set_seed(11);
  o.args.set_disable_tqdm(true);
  o.args.add_report_to("none");
  o.train_dataset = MakeData(41, 1);
  o.eval_dataset = MakeData(10, 2);
  o.model_init = []() -> absl::StatusOr<std::shared_ptr<trainer::Model>> {
    return MakeDropoutClassifier();
  };
  o.callbacks = std::move(callbacks);
  if (customize) customize(o);
  return trainer::Trainer::Create(std::move(o));
}

std::string RunDigest(trainer::Trainer& t) {
  std::string out;
  torch::optim::Optimizer* opt = t.optimizer();
  for (const auto& p : t.model().named_parameters()) {
    out += p.key() + "\n";
    AppendBytes(p.value(), &out);
    if (opt == nullptr) continue;
    auto it = opt->state().find(optim::ParamStateKey(p.value()));
    if (it == opt->state().end()) continue;
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*it->second);
    out += absl::StrCat("step ", s.step(), "\n");
    AppendBytes(s.exp_avg(), &out);
    AppendBytes(s.exp_avg_sq(), &out);
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
    out += trainer::PyJsonDumps(entry, -1, true) + "\n";
  }
  return out;
}

}  // namespace loom::tests
