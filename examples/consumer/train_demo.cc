// train_demo: a program of a workspace that depends on loom (this folder's WORKSPACE), training
// a tiny classifier through loom's Trainer with HF's command line.
//
//   bazel run //:train_demo -- --output_dir /tmp/demo --do_train --do_eval --learning_rate 0.05
//   bazel build //:train_demo && bazel run @loom//tools:launch -- --nproc_per_node 2
//       bazel-bin/train_demo --output_dir /tmp/demo2 --do_train --do_eval --learning_rate 0.05
//       --per_device_train_batch_size 4 --deepspeed ds_zero2.json   (one command line)
// (HF's defaults otherwise; the task wants a larger learning rate than HF's 5e-5.)
//
// The task: 8 features drawn from N(0, 1) after HF's set_seed(--seed) (@loom//rng:seed); the
// label is the index of the largest of the first four. The model: Linear(8, 16) -> tanh ->
// Linear(16, 4), cross entropy. The program's strategy factory wraps the one the flags select
// (@loom//sharding: one process, DDP, ZeRO, FSDP) to report, at the end of training, what the
// strategy keeps on each rank; after training, rank 0 reads model.safetensors back
// (@loom//checkpoint:safetensors). Lines it prints, for a reader or a test:
//   train_demo: rank R of W: strategy NAME; bytes on this rank: parameters P, gradients G,
//     optimizer_states O, master_weights M
//   train_demo: model.safetensors: T tensors, E elements
//   train_demo: eval_accuracy A
#include <torch/torch.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/parser.h"
#include "args/training_args.h"
#include "checkpoint/safetensors.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "logging/process_logging.h"
#include "rng/seed.h"
#include "sharding/create_strategy.h"
#include "sharding/strategy.h"
#include "sharding/strategy_registry.h"
#include "trainer/callback.h"
#include "trainer/metrics.h"
#include "trainer/model.h"
#include "trainer/trainer.h"

namespace demo {

constexpr int64_t kFeatures = 8;
constexpr int64_t kHidden = 16;
constexpr int64_t kClasses = 4;

class TinyClassifier : public loom::trainer::Model {
 public:
  TinyClassifier()
      : hidden_(register_module("hidden", torch::nn::Linear(kFeatures, kHidden))),
        out_(register_module("out", torch::nn::Linear(kHidden, kClasses))) {}

  loom::trainer::ModelOutput Forward(const loom::data::Batch& inputs) override {
    at::Tensor logits = out_->forward(at::tanh(hidden_->forward(inputs.at("features"))));
    loom::trainer::ModelOutput result;
    if (auto labels = inputs.find("labels"); labels != inputs.end()) {
      result.loss = at::cross_entropy_loss(logits, labels->second);
    }
    result.outputs.push_back({"logits", logits});
    return result;
  }
  std::string MainInputName() const override { return "features"; }

 private:
  torch::nn::Linear hidden_;
  torch::nn::Linear out_;
};

// `count` examples drawn from LibTorch's default generator (seeded by the caller).
absl::StatusOr<std::shared_ptr<loom::data::TensorDataset>> MakeExamples(int64_t count) {
  at::Tensor features = torch::randn({count, kFeatures});
  at::Tensor labels = features.narrow(1, 0, kClasses).argmax(1);
  return loom::data::TensorDataset::Create({{"features", features}, {"labels", labels}});
}

// The strategy the flags select, remembered so that the callback below can ask it.
struct Observed {
  const loom::sharding::ShardingStrategy* strategy = nullptr;
};

class ObservedFactory : public loom::sharding::StrategyFactory {
 public:
  ObservedFactory(std::shared_ptr<const loom::sharding::StrategyFactory> inner,
                  std::shared_ptr<Observed> observed)
      : inner_(std::move(inner)), observed_(std::move(observed)) {}

  loom::sharding::DataParallelTopology Topology(const loom::args::TrainingArguments& args,
                                                int world_size, int rank) const override {
    return inner_->Topology(args, world_size, rank);
  }
  absl::StatusOr<std::unique_ptr<loom::sharding::ShardingStrategy>> Create(
      const loom::sharding::StrategyOptions& options) const override {
    absl::StatusOr<std::unique_ptr<loom::sharding::ShardingStrategy>> strategy =
        inner_->Create(options);
    // (The factory's earlier strategy, if any, is gone either way.)
    observed_->strategy = strategy.ok() ? strategy->get() : nullptr;
    return strategy;
  }
  absl::StatusOr<bool> ShardsParameters(const loom::args::TrainingArguments& args) const override {
    return inner_->ShardsParameters(args);
  }

 private:
  std::shared_ptr<const loom::sharding::StrategyFactory> inner_;
  std::shared_ptr<Observed> observed_;
};

// At the end of training (the strategy still holds its state): what this rank keeps.
class ReportModelState : public loom::trainer::TrainerCallback {
 public:
  explicit ReportModelState(std::shared_ptr<Observed> observed) : observed_(std::move(observed)) {}
  std::string Name() const override { return "ReportModelState"; }

  absl::Status OnTrainEnd(const loom::trainer::Event&) override {
    if (observed_->strategy == nullptr) return absl::InternalError("no strategy was created");
    const loom::sharding::ModelStateBytes bytes = observed_->strategy->StateBytes();
    const char* rank = std::getenv("RANK");
    std::cout << "train_demo: rank " << (rank ? rank : "0") << " of "
              << observed_->strategy->Topology().world_size << ": strategy "
              << observed_->strategy->Name() << "; bytes on this rank: parameters "
              << bytes.parameters << ", gradients " << bytes.gradients << ", optimizer_states "
              << bytes.optimizer_states << ", master_weights " << bytes.master_weights << std::endl;
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<Observed> observed_;
};

absl::Status PrintSavedModel(const std::string& output_dir) {
  absl::StatusOr<loom::checkpoint::SafetensorsFile> saved =
      loom::checkpoint::LoadSafetensors(output_dir + "/model.safetensors");
  if (!saved.ok()) return saved.status();
  int64_t elements = 0;
  for (const auto& [name, tensor] : saved->tensors) elements += tensor.numel();
  std::cout << "train_demo: model.safetensors: " << saved->tensors.size() << " tensors, "
            << elements << " elements" << std::endl;
  return absl::OkStatus();
}

absl::Status Run(const loom::args::TrainingArguments& args) {
  // HF's set_seed before the data is drawn; the Trainer seeds again before model_init.
  if (absl::Status s = loom::rng::SetSeed(static_cast<uint64_t>(args.seed()), nullptr); !s.ok()) {
    return s;
  }
  loom::trainer::TrainerOptions options;
  options.args = args;
  absl::StatusOr<std::shared_ptr<loom::data::TensorDataset>> train = MakeExamples(256);
  absl::StatusOr<std::shared_ptr<loom::data::TensorDataset>> eval = MakeExamples(64);
  if (!train.ok()) return train.status();
  if (!eval.ok()) return eval.status();
  options.train_dataset = *train;
  options.eval_dataset = *eval;
  options.model_init = []() -> absl::StatusOr<std::shared_ptr<loom::trainer::Model>> {
    return std::make_shared<TinyClassifier>();
  };
  options.compute_metrics =
      [](const loom::trainer::EvalPrediction& p) -> absl::StatusOr<loom::trainer::Metrics> {
    loom::trainer::Metrics m = loom::trainer::Metrics::object();
    m["accuracy"] = p.predictions.front()
                        .argmax(-1)
                        .eq(p.label_ids.front())
                        .to(at::kDouble)
                        .mean()
                        .item<double>();
    return m;
  };
  auto observed = std::make_shared<Observed>();
  absl::StatusOr<std::shared_ptr<const loom::sharding::StrategyFactory>> selected =
      loom::sharding::ResolveStrategyFactory(args);
  if (!selected.ok()) return selected.status();
  options.strategy_factory = std::make_shared<ObservedFactory>(*selected, observed);
  options.callbacks.push_back(std::make_shared<ReportModelState>(observed));

  absl::StatusOr<std::unique_ptr<loom::trainer::Trainer>> trainer =
      loom::trainer::Trainer::Create(std::move(options));
  if (!trainer.ok()) return trainer.status();
  if (args.do_train()) {
    absl::StatusOr<loom::trainer::TrainOutput> result = (*trainer)->Train();
    if (!result.ok()) return result.status();
    if (absl::Status s = (*trainer)->SaveModel(); !s.ok()) return s;
    if (absl::Status s = (*trainer)->SaveMetrics("train", result->metrics); !s.ok()) return s;
    if ((*trainer)->is_world_process_zero()) {
      if (absl::Status s = PrintSavedModel(args.output_dir()); !s.ok()) return s;
    }
  }
  if (args.do_eval()) {
    absl::StatusOr<loom::trainer::Metrics> metrics = (*trainer)->Evaluate();
    if (!metrics.ok()) return metrics.status();
    if (absl::Status s = (*trainer)->SaveMetrics("eval", *metrics); !s.ok()) return s;
    if ((*trainer)->is_world_process_zero()) {
      std::cout << "train_demo: eval_accuracy " << (*metrics)["eval_accuracy"] << std::endl;
    }
  }
  return absl::OkStatus();
}

}  // namespace demo

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  // `bazel run` starts the program in its runfiles; relative paths are meant from the user's
  // directory.
  if (const char* dir = std::getenv("BUILD_WORKING_DIRECTORY"); dir != nullptr) {
    if (::chdir(dir) != 0) std::cerr << "train_demo: cannot enter " << dir << "\n";
  }
  loom::args::TrainingArguments args;
  loom::args::ArgParser parser(
      {.program = "train_demo", .description = "Trains a tiny classifier with loom's Trainer."});
  parser.AddGroup("TrainingArguments", &args);
  if (absl::Status s = parser.Parse(argc, argv); !s.ok()) {
    std::cerr << "train_demo: " << s.message() << "\n";
    return 2;
  }
  if (parser.help_requested()) {
    std::cout << parser.Help();
    return 0;
  }
  if (absl::Status s = demo::Run(args); !s.ok()) {
    std::cerr << "train_demo: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
