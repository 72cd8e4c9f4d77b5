// The C++ side of //tests/hpsearch:optuna_parity_test: runs every study of DIR/studies.json
// (written by optuna_parity.py) with //hpsearch's samplers into DIR/loom_studies.json, and asks
// hpsearch's MedianPruner about every case of DIR/pruner_cases.json into DIR/loom_pruner.json.
//   usage: study_runner DIR
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "hpsearch/distribution.h"
#include "hpsearch/median_pruner.h"
#include "hpsearch/trial.h"
#include "logging/process_logging.h"
#include "nlohmann/json.hpp"
#include "tests/hpsearch/journal_study.h"
#include "tests/hpsearch/sequential_study.h"

namespace loom::hpsearch::testing {
namespace {

using Json = nlohmann::ordered_json;

absl::StatusOr<Direction> ParseDirection(const Json& j) {
  const std::string d = j.get<std::string>();
  if (d == "minimize") return Direction::kMinimize;
  if (d == "maximize") return Direction::kMaximize;
  return absl::InvalidArgumentError(absl::StrCat("unknown direction \"", d, "\""));
}

absl::StatusOr<TrialState> ParseState(const std::string& s) {
  for (TrialState state : {TrialState::kRunning, TrialState::kComplete, TrialState::kPruned,
                           TrialState::kFail, TrialState::kWaiting}) {
    if (s == TrialStateName(state)) return state;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown trial state \"", s, "\""));
}

double NumberOrNaN(const Json& j) {
  return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>();
}

absl::StatusOr<nlohmann::json> RunStudy(const Json& c) {
  StudyConfig config;
  config.sampler = c.at("sampler").get<std::string>();
  config.seed = c.at("seed").get<uint32_t>();
  ASSIGN_OR_RETURN(config.direction, ParseDirection(c.at("direction")));
  config.objective = c.at("objective").get<std::string>();
  config.n_trials = c.at("n_trials").get<int64_t>();
  config.prune = c.at("prune").get<std::string>();
  ASSIGN_OR_RETURN(config.space, SearchSpaceFromJson(c.at("space")));
  std::vector<FrozenTrial> trials;
  if (c.value("via", std::string()) == "journal") {
    // Through hpsearch::Study and a journal in the output folder, maybe interrupted.
    const int64_t at = c.value("interrupt_at", int64_t{-1});
    ASSIGN_OR_RETURN(trials, RunJournalStudy(config, c.at("journal").get<std::string>(),
                                             at < 0 ? std::nullopt : std::optional<int64_t>(at)));
  } else {
    ASSIGN_OR_RETURN(trials, RunSequentialStudy(config));
  }
  return TrialsToJson(trials, config.space);
}

absl::StatusOr<bool> RunPrunerCase(const Json& c) {
  const Json& o = c.at("options");
  MedianPrunerOptions options;
  options.n_startup_trials = o.at("n_startup_trials").get<int64_t>();
  options.n_warmup_steps = o.at("n_warmup_steps").get<int64_t>();
  options.interval_steps = o.at("interval_steps").get<int64_t>();
  options.n_min_trials = o.at("n_min_trials").get<int64_t>();
  ASSIGN_OR_RETURN(MedianPruner pruner, MedianPruner::Create(options));
  ASSIGN_OR_RETURN(Direction direction, ParseDirection(c.at("direction")));
  std::vector<FrozenTrial> trials;
  for (const Json& t : c.at("trials")) {
    FrozenTrial trial;
    trial.number = static_cast<int64_t>(trials.size());
    ASSIGN_OR_RETURN(trial.state, ParseState(t.at("state").get<std::string>()));
    if (!t.at("value").is_null()) trial.value = t.at("value").get<double>();
    for (const Json& sv : t.at("intermediate")) {
      trial.intermediate_values[sv.at(0).get<int64_t>()] = NumberOrNaN(sv.at(1));
    }
    trials.push_back(std::move(trial));
  }
  FrozenTrial query;
  query.number = static_cast<int64_t>(trials.size());
  for (const Json& sv : c.at("query")) {
    query.intermediate_values[sv.at(0).get<int64_t>()] = NumberOrNaN(sv.at(1));
  }
  trials.push_back(query);
  return pruner.Prune(StudyView{direction, trials}, trials.back());
}

absl::Status Run(const std::string& dir) {
  ASSIGN_OR_RETURN(std::string studies_text, base::ReadFile(dir + "/studies.json"));
  const Json studies = Json::parse(studies_text);
  nlohmann::json out = nlohmann::json::object();
  for (const Json& study : studies) {
    const std::string name = study.at("name").get<std::string>();
    Json config = study;
    config["journal"] = dir + "/" + name + ".journal";  // for the studies run via the journal
    ASSIGN_OR_RETURN(out[name], RunStudy(config), absl::StrCat("study ", name));
  }
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/loom_studies.json", out.dump()));

  ASSIGN_OR_RETURN(std::string cases_text, base::ReadFile(dir + "/pruner_cases.json"));
  const Json cases = Json::parse(cases_text);
  nlohmann::json decisions = nlohmann::json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSIGN_OR_RETURN(bool prune, RunPrunerCase(cases[i]), absl::StrCat("pruner case ", i));
    decisions.push_back(prune);
  }
  return base::WriteFileAtomically(dir + "/loom_pruner.json", decisions.dump());
}

}  // namespace
}  // namespace loom::hpsearch::testing

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 2) {
    std::cerr << "usage: study_runner DIR\n";
    return 2;
  }
  if (absl::Status s = loom::hpsearch::testing::Run(argv[1]); !s.ok()) {
    std::cerr << "study_runner: " << s << "\n";
    return 1;
  }
  return 0;
}
