#include "tests/hpsearch/journal_study.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "hpsearch/distribution.h"
#include "hpsearch/median_pruner.h"
#include "hpsearch/study.h"

namespace loom::hpsearch::testing {
namespace {

// The trial's parameters as a FrozenTrial (internal values) for ObjectiveValue.
absl::StatusOr<FrozenTrial> AsTrial(const TrialRun& run, const SearchSpace& space) {
  FrozenTrial t;
  t.number = run.number;
  for (const auto& [name, d] : space.params) {
    ASSIGN_OR_RETURN(double v, ToInternal(d, nlohmann::json::parse(run.params[name].dump())),
                     name);
    t.params[name] = v;
    t.distributions.insert_or_assign(name, d);
  }
  return t;
}

// One trial as RunSequentialStudy runs it (RunMedian's curve with "median").
absl::Status RunTrial(Study& study, const TrialRun& run, const StudyConfig& config) {
  ASSIGN_OR_RETURN(FrozenTrial t, AsTrial(run, config.space));
  ASSIGN_OR_RETURN(const double f, ObjectiveValue(config.objective, t, config.space));
  const double sign = config.direction == Direction::kMaximize ? -1.0 : 1.0;
  if (config.prune == "median") {
    for (int64_t s = 0; s < 8; ++s) {
      RETURN_IF_ERROR(study.Report(run, s, sign * (f + 2.0 / static_cast<double>(s + 1))));
      ASSIGN_OR_RETURN(const bool prune, study.ShouldPrune(run));
      if (prune) return study.Tell(run, TrialState::kPruned, std::nullopt);
    }
  }
  return study.Tell(run, TrialState::kComplete, sign * f);
}

absl::StatusOr<StudyOptions> Options(const StudyConfig& config, const std::string& journal) {
  StudyOptions o;
  o.journal_path = journal;
  o.direction = config.direction;
  o.backend = config.sampler;
  o.sampler.seed = config.seed;
  o.sampler.space = config.space;
  o.n_trials = config.n_trials;
  if (config.prune == "median") {
    ASSIGN_OR_RETURN(MedianPruner pruner, MedianPruner::Create({}));
    o.pruner = [pruner](const StudyView& s, const FrozenTrial& t) { return pruner.Prune(s, t); };
    o.pruner_settings = {{"name", "median"}};
  } else if (!config.prune.empty()) {
    return absl::UnimplementedError(
        absl::StrCat("RunJournalStudy: prune \"", config.prune, "\" is not implemented"));
  }
  return o;
}

}  // namespace

absl::StatusOr<std::vector<FrozenTrial>> RunJournalStudy(const StudyConfig& config,
                                                         const std::string& journal,
                                                         std::optional<int64_t> interrupt_at) {
  ASSIGN_OR_RETURN(StudyOptions options, Options(config, journal));
  {
    ASSIGN_OR_RETURN(std::unique_ptr<Study> first, Study::Open(options));
    while (true) {
      ASSIGN_OR_RETURN(std::optional<TrialRun> run, first->Ask());
      if (!run) return first->Trials();
      if (interrupt_at && run->number == *interrupt_at) break;  // abandoned while RUNNING
      RETURN_IF_ERROR(RunTrial(*first, *run, config));
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Study> resumed, Study::Open(options));
  while (true) {
    ASSIGN_OR_RETURN(std::optional<TrialRun> run, resumed->Ask());
    if (!run) break;
    if (run->number == *interrupt_at && run->attempt != 2) {
      return absl::InternalError("the abandoned trial was not run again first");
    }
    RETURN_IF_ERROR(RunTrial(*resumed, *run, config));
  }
  return resumed->Trials();
}

}  // namespace loom::hpsearch::testing
