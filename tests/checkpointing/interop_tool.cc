// C++ half of python_interop_test.sh: trains the harness run through the Trainer and records,
// beside (never inside) the checkpoint, what Python must find in checkpoint-8.
//
//   interop_tool DIR
//
// The run: BaseArgs(DIR/out) (harness.h: 12 steps, AdamW lr 0.05 with weight decay 0.01,
// linear schedule, logging every 2 steps) with a checkpoint and an evaluation every 4 steps;
// compute_metrics scores the evaluations 0.5, 0.8, 0.6 and metric_for_best_model is "score",
// so checkpoint-8 is the best. At checkpoint-8's on_save it writes
//   DIR/expected.pt   torch pickle of a dict str -> Tensor:
//                       "model.<name>"        every state-dict entry of the model,
//                       "exp_avg.<i>", "exp_avg_sq.<i>"
//                                             AdamW state of the optimizer's i-th parameter
//                                             (torch's state_dict numbering: groups in order),
//                       "cpu_rng"             the global CPU generator state at the save;
//   DIR/expected.json {"checkpoint", "global_step", "param_groups" (indices per group),
//                      "param_names" (name of each index), "last_lr", "output_dir"}.
// Exits non-zero with a message on any error.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Dict.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>

#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/torch_pickle.h"
#include "logging/process_logging.h"
#include "nlohmann/json.hpp"
#include "optim/param_state.h"
#include "tests/checkpointing/harness.h"

namespace loom::tests::checkpointing {
namespace {

class DumpAtSave : public trainer::TrainerCallback {
 public:
  DumpAtSave(std::string dir, int64_t step) : dir_(std::move(dir)), step_(step) {}
  std::string Name() const override { return "DumpAtSave"; }

  absl::Status OnSave(const trainer::Event& e) override {
    if (e.state.global_step != step_) return absl::OkStatus();
    c10::Dict<std::string, at::Tensor> dict;
    for (const auto& p : e.context.model->named_parameters()) {
      dict.insert("model." + p.key(), p.value().detach().clone());
    }
    for (const auto& b : e.context.model->named_buffers()) {
      dict.insert("model." + b.key(), b.value().detach().clone());
    }
    nlohmann::ordered_json info;
    info["output_dir"] = e.args.output_dir();
    info["checkpoint"] = absl::StrCat(e.args.output_dir(), "/checkpoint-", step_);
    info["global_step"] = e.state.global_step;
    info["param_groups"] = nlohmann::ordered_json::array();
    info["param_names"] = nlohmann::ordered_json::array();
    const auto named = e.context.model->named_parameters();
    int64_t index = 0;
    torch::optim::Optimizer& opt = *e.context.optimizer;
    for (const auto& group : opt.param_groups()) {
      nlohmann::ordered_json indices = nlohmann::ordered_json::array();
      for (const at::Tensor& p : group.params()) {
        std::string name;
        for (const auto& n : named) {
          if (n.value().is_same(p)) name = n.key();
        }
        if (name.empty()) return absl::InternalError("optimizer parameter not in the model");
        auto it = opt.state().find(optim::ParamStateKey(p));
        if (it == opt.state().end()) return absl::InternalError("no AdamW state for " + name);
        const auto& s = static_cast<const torch::optim::AdamWParamState&>(*it->second);
        dict.insert(absl::StrCat("exp_avg.", index), s.exp_avg().clone());
        dict.insert(absl::StrCat("exp_avg_sq.", index), s.exp_avg_sq().clone());
        indices.push_back(index);
        info["param_names"].push_back(name);
        ++index;
      }
      info["param_groups"].push_back(indices);
    }
    info["last_lr"] = e.context.lr_scheduler->LastLr();
    dict.insert("cpu_rng", at::detail::getDefaultCPUGenerator().get_state());
    RETURN_IF_ERROR(checkpoint::SavePickle(dir_ + "/expected.pt", c10::IValue(std::move(dict))));
    return base::WriteFileAtomically(dir_ + "/expected.json", info.dump(2) + "\n");
  }

 private:
  std::string dir_;
  int64_t step_;
};

absl::Status Run(const std::string& dir) {
  TrainerSetup setup;
  setup.args = BaseArgs(dir + "/out");
  setup.args.set_save_steps(4);
  setup.args.set_eval_strategy("steps");
  setup.args.set_eval_steps(4);
  setup.args.set_metric_for_best_model("score");
  setup.with_eval_dataset = true;
  setup.compute_metrics = ScriptedScore({0.5, 0.8, 0.6});
  setup.callbacks = {std::make_shared<DumpAtSave>(dir, 8)};
  ASSIGN_OR_RETURN(std::unique_ptr<trainer::Trainer> t, MakeTrainer(setup));
  ASSIGN_OR_RETURN(trainer::TrainOutput out, t->Train());
  if (out.global_step != 12) return absl::InternalError("expected 12 steps");
  return absl::OkStatus();
}

}  // namespace
}  // namespace loom::tests::checkpointing

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 2) {
    std::cerr << "usage: interop_tool DIR\n";
    return 2;
  }
  absl::Status status;
  try {
    status = loom::tests::checkpointing::Run(argv[1]);
  } catch (const std::exception& e) {
    status = absl::InternalError(e.what());
  }
  if (!status.ok()) {
    std::cerr << "interop_tool: " << status << "\n";
    return 1;
  }
  return 0;
}
