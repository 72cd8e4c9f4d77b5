// Study: an optuna-style study kept in a journal file (hpsearch/journal.h), so that a search
// killed at any moment resumes where it stopped and several processes can run trials of one
// study at once.
//
// Contract:
//   - Open(options) creates the study in the journal, or joins the one of that name. The
//     study records its settings (backend, search space, seed, direction, sampler and pruner
//     arguments) as the system attribute "loom:settings"; joining a study recorded with other
//     settings, a journal holding only other studies, or a study optuna itself created is
//     InvalidArgument naming the journal, the differences and the fix.
//   - Ask() under the journal's lock: a RUNNING trial whose worker is gone (a killed search;
//     each worker holds a lock file in "<journal>.workers/" while it lives) is handed out again
//     with its parameters and number (attempt + 1); otherwise, while the study has fewer than
//     n_trials trials (optuna's MaxTrialsCallback: every trial counts) and the sampler is not
//     exhausted, a new RUNNING trial is sampled and written in one line with the sampler's
//     random-stream position ("loom:rng"), so the next trial — in this process, a resumed one
//     or another worker — continues the same stream. nullopt when the study is done.
//   - Report / ShouldPrune / Tell are optuna's trial.report (a step already reported is
//     ignored), trial.should_prune (the pruner given, over the study as the journal has it) and
//     study.tell (a PRUNED trial's value is its last intermediate value).
//   - A sequential search killed and resumed produces the same trials (numbers, parameters,
//     states, values, intermediate values) as one never interrupted.
//   - Liveness needs flock across the processes sharing the journal: a local file system, or
//     NFS with its lock manager (there flock is emulated with POSIX locks, so two Study objects
//     of one process would take each other for gone: give each process one).
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<Study> study, Study::Open(options));
//   while (true) {
//     ASSIGN_OR_RETURN(std::optional<TrialRun> run, study->Ask());
//     if (!run) break;
//     double objective = Train(run->params);
//     RETURN_IF_ERROR(study->Tell(*run, TrialState::kComplete, objective));
//   }
#ifndef LOOM_HPSEARCH_STUDY_H_
#define LOOM_HPSEARCH_STUDY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hpsearch/journal.h"
#include "hpsearch/sampler.h"
#include "hpsearch/trial.h"
#include "nlohmann/json.hpp"

namespace loom::hpsearch {

// optuna BasePruner.prune: whether `trial` (RUNNING, with its intermediate values) should stop.
using PruneFn = std::function<bool(const StudyView& study, const FrozenTrial& trial)>;

struct StudyOptions {
  std::string journal_path;
  std::string study_name = "hp_search";
  Direction direction = Direction::kMinimize;
  std::string backend = "tpe";  // a registered sampler (hpsearch/sampler.h)
  SamplerOptions sampler;       // its seed and the search space
  // Unset: no pruning. `pruner_settings` describes it for the study's settings record.
  PruneFn pruner;
  nlohmann::json pruner_settings;
  int64_t n_trials = 20;
};

// A trial this worker runs.
struct TrialRun {
  int64_t number = 0;
  int64_t trial_id = 0;  // the journal's id (optuna's trial_id)
  int64_t attempt = 1;   // > 1: an abandoned trial run again
  // The parameters, external values in search-space order ({"learning_rate": 3e-4, ...}).
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
};

class Study {
 public:
  static absl::StatusOr<std::unique_ptr<Study>> Open(StudyOptions options);
  ~Study();
  Study(const Study&) = delete;
  Study& operator=(const Study&) = delete;

  absl::StatusOr<std::optional<TrialRun>> Ask();
  absl::Status Report(const TrialRun& run, int64_t step, double value);
  absl::StatusOr<bool> ShouldPrune(const TrialRun& run);
  absl::Status Tell(const TrialRun& run, TrialState state, std::optional<double> value);
  absl::Status SetUserAttr(const TrialRun& run, const std::string& key,
                           const nlohmann::json& value);

  // Every trial of the study, in number order, as the journal has it now.
  absl::StatusOr<std::vector<FrozenTrial>> Trials();
  // The COMPLETE trial with the best value (the first of equals: optuna's best_trial);
  // nullopt when none completed.
  static std::optional<FrozenTrial> BestTrial(const std::vector<FrozenTrial>& trials,
                                              Direction direction);

  const StudyOptions& options() const { return options_; }
  const std::string& worker_id() const { return worker_id_; }
  // The settings this study records and checks ("loom:settings").
  nlohmann::json Settings() const;

 private:
  Study(StudyOptions options, JournalFile journal, std::string worker_id, int worker_fd);
  absl::Status JoinOrCreate();
  // The study's state from the journal (call under the lock).
  absl::StatusOr<JournalState> Load();
  // This study in `state` (FailedPrecondition when it was deleted), and a trial of it.
  absl::StatusOr<const JournalStudy*> Mine(const JournalState& state) const;
  absl::StatusOr<const FrozenTrial*> TrialOf(const JournalState& state,
                                             const TrialRun& run) const;
  bool WorkerAlive(const std::string& worker) const;
  absl::StatusOr<std::optional<TrialRun>> Reclaim(const JournalState& state);
  absl::StatusOr<std::optional<TrialRun>> SampleNew(const JournalState& state);

  StudyOptions options_;
  JournalFile journal_;
  std::string worker_id_;
  int worker_fd_ = -1;  // this worker's lock file, held while the study is open
  int64_t study_id_ = 0;
};

// The parameters of `trial` as external values in `space`'s order.
nlohmann::ordered_json ExternalParams(const FrozenTrial& trial, const SearchSpace& space);

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_STUDY_H_
