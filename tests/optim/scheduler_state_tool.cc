// C++ half of scheduler_state_interop_test (see check_scheduler_state.py).
//   scheduler_state_tool write DIR   for each recipe of DIR/cases.json: CreateScheduler, the
//                                    recipe's steps, StateDict() -> DIR/<case>.cpp.pt
//   scheduler_state_tool read DIR    loads Python's DIR/<case>.py.pt into a fresh scheduler
//                                    and checks the next lrs against DIR/<case>.next.json
// Exits 1 with a message on any mismatch or error.
#include <torch/optim/sgd.h>
#include <torch/serialize.h>

#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "args/parser.h"
#include "args/training_args.pb.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/torch_pickle.h"
#include "logging/process_logging.h"
#include "nlohmann/json.hpp"
#include "optim/lr_scheduler.h"

namespace loom::optim {
namespace {

using json = nlohmann::json;

struct Run {
  std::unique_ptr<torch::optim::SGD> optimizer;
  std::unique_ptr<LrScheduler> scheduler;
};

absl::StatusOr<Run> Build(const json& c) {
  args::TrainingArguments a;
  args::ArgParser parser({});
  parser.AddGroup("TrainingArguments", &a);
  nlohmann::ordered_json fields;
  fields["learning_rate"] = c["learning_rate"];
  fields["lr_scheduler_type"] = c["type"];
  fields["lr_scheduler_kwargs"] = nlohmann::ordered_json::parse(c["kwargs"].dump());
  fields["warmup_steps"] = c["warmup_steps"];
  RETURN_IF_ERROR(parser.ParseJson(fields, "cases.json"));
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (double lr : c["group_lrs"].get<std::vector<double>>()) {
    groups.emplace_back(std::vector<at::Tensor>{at::zeros({1})},
                        std::make_unique<torch::optim::SGDOptions>(lr));
  }
  Run run;
  run.optimizer = std::make_unique<torch::optim::SGD>(std::move(groups),
                                                      torch::optim::SGDOptions(a.learning_rate()));
  ASSIGN_OR_RETURN(run.scheduler,
                   CreateScheduler(a, run.optimizer.get(), c["total"].get<int64_t>()));
  return run;
}

// The recipe's first steps.
void Advance(const json& c, LrScheduler& scheduler) {
  if (c.contains("metrics")) {
    for (const json& m : c["metrics"]) scheduler.StepOnMetric(m.get<double>());
  } else {
    for (int k = 0; k < c["steps"].get<int>(); ++k) scheduler.Step();
  }
}

absl::Status Write(const std::string& dir, const json& c) {
  ASSIGN_OR_RETURN(Run run, Build(c));
  Advance(c, *run.scheduler);
  return checkpoint::SavePickle(absl::StrCat(dir, "/", c["name"].get<std::string>(), ".cpp.pt"),
                                run.scheduler->StateDict());
}

absl::Status Read(const std::string& dir, const json& c) {
  const std::string name = c["name"];
  ASSIGN_OR_RETURN(const std::string bytes, base::ReadFile(absl::StrCat(dir, "/", name, ".py.pt")));
  ASSIGN_OR_RETURN(const std::string next_text,
                   base::ReadFile(absl::StrCat(dir, "/", name, ".next.json")));
  const json next = json::parse(next_text);
  c10::IValue state;
  try {
    state = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(name, ".py.pt: ", e.what()));
  }
  ASSIGN_OR_RETURN(Run run, Build(c));
  // The optimizer's lrs come back with the optimizer's own state in a real resume.
  const auto current = next["current"].get<std::vector<double>>();
  for (size_t i = 0; i < current.size(); ++i) {
    run.optimizer->param_groups()[i].options().set_lr(current[i]);
  }
  RETURN_IF_ERROR_CTX(run.scheduler->LoadStateDict(state), name);
  std::vector<std::vector<double>> lrs;
  const int n =
      c.contains("metrics") ? static_cast<int>(c["next_metrics"].size()) : c["next"].get<int>();
  for (int k = 0; k < n; ++k) {
    if (c.contains("metrics")) {
      run.scheduler->StepOnMetric(c["next_metrics"][k].get<double>());
    } else {
      run.scheduler->Step();
    }
    lrs.push_back(GroupLrs(*run.optimizer));
  }
  if (lrs != next["next"].get<std::vector<std::vector<double>>>()) {
    return absl::InternalError(absl::StrCat(name, ": after loading Python's state the lrs are ",
                                            json(lrs).dump(), ", Python has ",
                                            next["next"].dump()));
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: scheduler_state_tool write|read DIR\n";
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  absl::StatusOr<std::string> cases_text = base::ReadFile(dir + "/cases.json");
  if (!cases_text.ok()) {
    std::cerr << cases_text.status() << "\n";
    return 1;
  }
  int failures = 0;
  for (const json& c : json::parse(*cases_text)) {
    absl::Status s = mode == "write" ? Write(dir, c) : Read(dir, c);
    if (!s.ok()) {
      std::cerr << "FAIL: " << s << "\n";
      ++failures;
    }
  }
  if (failures == 0) std::cout << "scheduler_state_tool " << mode << ": OK\n";
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace loom::optim

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  return loom::optim::Main(argc, argv);
}
