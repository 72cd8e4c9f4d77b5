#include "hpsearch/study.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace loom::hpsearch {
namespace {

constexpr char kSettingsKey[] = "loom:settings";
constexpr char kWorkerKey[] = "loom:worker";
constexpr char kAttemptKey[] = "loom:attempt";
constexpr char kRngKey[] = "loom:rng";

std::string WorkersDir(const std::string& journal) { return journal + ".workers"; }

std::string NewWorkerId() {
  std::random_device rd;
  return absl::StrFormat("%08x%08x-%d", rd(), rd(), static_cast<int>(::getpid()));
}

// A worker name is used as a file name: only what NewWorkerId makes.
bool PlainWorkerName(const std::string& w) {
  if (w.empty() || w.size() > 64) return false;
  for (char c : w) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return false;
  }
  return true;
}

absl::StatusOr<int> LockWorkerFile(const std::string& journal, const std::string& worker) {
  const std::string dir = WorkersDir(journal);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
  }
  const std::string path = absl::StrCat(dir, "/", worker);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return absl::InternalError(absl::StrCat("cannot lock ", path, ": ", std::strerror(errno)));
  }
  return fd;
}

// Which settings differ between two "loom:settings" records.
std::vector<std::string> Differences(const nlohmann::json& recorded, const nlohmann::json& mine) {
  std::vector<std::string> out;
  for (const auto& [key, value] : mine.items()) {
    if (!recorded.contains(key) || recorded[key] != value) {
      out.push_back(
          absl::StrCat(key, " (journal: ", recorded.contains(key) ? recorded[key].dump() : "none",
                       ", now: ", value.dump(), ")"));
    }
  }
  return out;
}

// The sampler's stream position after the newest trial that recorded one.
const nlohmann::json* LatestRng(const std::vector<FrozenTrial>& trials) {
  for (auto it = trials.rbegin(); it != trials.rend(); ++it) {
    if (it->system_attrs.contains(kRngKey)) return &it->system_attrs[kRngKey];
  }
  return nullptr;
}

}  // namespace

nlohmann::ordered_json ExternalParams(const FrozenTrial& trial, const SearchSpace& space) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, d] : space.params) {
    auto it = trial.params.find(name);
    if (it == trial.params.end()) continue;
    auto dist = trial.distributions.find(name);
    out[name] = nlohmann::ordered_json::parse(
        ToExternal(dist == trial.distributions.end() ? d : dist->second, it->second).dump());
  }
  return out;
}

Study::Study(StudyOptions options, JournalFile journal, std::string worker_id, int worker_fd)
    : options_(std::move(options)),
      journal_(std::move(journal)),
      worker_id_(std::move(worker_id)),
      worker_fd_(worker_fd) {}

Study::~Study() {
  if (worker_fd_ < 0) return;
  ::unlink(absl::StrCat(WorkersDir(options_.journal_path), "/", worker_id_).c_str());
  ::close(worker_fd_);
}

absl::StatusOr<std::unique_ptr<Study>> Study::Open(StudyOptions options) {
  if (options.direction != Direction::kMinimize && options.direction != Direction::kMaximize) {
    return absl::InvalidArgumentError("a study's direction must be minimize or maximize");
  }
  if (options.n_trials < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("n_trials must be at least 1, got ", options.n_trials));
  }
  // The sampler is built once here so that a bad backend or space fails before any write.
  RETURN_IF_ERROR(CreateSampler(options.backend, options.sampler).status());
  ASSIGN_OR_RETURN(JournalFile journal, JournalFile::Open(options.journal_path));
  std::string worker = NewWorkerId();
  ASSIGN_OR_RETURN(int fd, LockWorkerFile(options.journal_path, worker));
  std::unique_ptr<Study> study(new Study(std::move(options), std::move(journal), worker, fd));
  RETURN_IF_ERROR(study->JoinOrCreate());
  return study;
}

nlohmann::json Study::Settings() const {
  return nlohmann::json{
      {"backend", options_.backend},
      {"search_space", nlohmann::json::parse(SearchSpaceToJson(options_.sampler.space).dump())},
      {"seed", options_.sampler.seed},
      {"direction", DirectionName(options_.direction)},
      {"n_startup_trials", options_.sampler.n_startup_trials},
      {"n_ei_candidates", options_.sampler.n_ei_candidates},
      {"pruner", options_.pruner ? options_.pruner_settings : nlohmann::json()}};
}

absl::Status Study::JoinOrCreate() {
  return journal_.Locked([&]() -> absl::Status {
    ASSIGN_OR_RETURN(JournalState state, Load());
    const std::string& path = options_.journal_path;
    const JournalStudy* study = state.FindStudy(options_.study_name);
    if (study == nullptr && !state.studies.empty()) {
      std::vector<std::string> names;
      for (const auto& [id, s] : state.studies) names.push_back(absl::StrCat("\"", s.name, "\""));
      return absl::InvalidArgumentError(
          absl::StrCat("the study journal ", path, " holds another study (",
                       absl::StrJoin(names, ", "), "), not \"", options_.study_name,
                       "\": give this search its own journal file (--hp_journal)"));
    }
    if (study == nullptr) {
      // The study and its settings in one write: a crash leaves both or neither.
      study_id_ = state.next_study_id;
      return journal_.Append(
          {CreateStudyOp(worker_id_, options_.study_name, options_.direction),
           SetStudySystemAttrOp(worker_id_, study_id_, kSettingsKey, Settings())});
    }
    study_id_ = study->study_id;
    if (!study->system_attrs.contains(kSettingsKey)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the study \"", study->name, "\" in ", path,
          " was not created by loom's search (it has no \"loom:settings\"): give this search "
          "its own journal file (--hp_journal)"));
    }
    std::vector<std::string> diff = Differences(study->system_attrs[kSettingsKey], Settings());
    if (!diff.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the study journal ", path,
          " is another study's: it was searched with other settings: ", absl::StrJoin(diff, "; "),
          ". Resume with the same --hp_* flags and --seed, or give another --hp_journal"));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<JournalState> Study::Load() {
  ASSIGN_OR_RETURN(std::vector<nlohmann::ordered_json> ops, journal_.Read());
  return Replay(ops);
}

absl::StatusOr<const JournalStudy*> Study::Mine(const JournalState& state) const {
  auto it = state.studies.find(study_id_);
  if (it == state.studies.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the study \"", options_.study_name, "\" was deleted from ", options_.journal_path));
  }
  return &it->second;
}

absl::StatusOr<const FrozenTrial*> Study::TrialOf(const JournalState& state,
                                                  const TrialRun& run) const {
  if (run.trial_id < 0 || run.trial_id >= static_cast<int64_t>(state.trials.size()) ||
      state.trials[static_cast<size_t>(run.trial_id)].study_id != study_id_) {
    return absl::DataLossError(
        absl::StrCat("trial ", run.number, " is not in ", options_.journal_path, " any more"));
  }
  return &state.trials[static_cast<size_t>(run.trial_id)].trial;
}

bool Study::WorkerAlive(const std::string& worker) const {
  if (worker == worker_id_) return true;
  if (!PlainWorkerName(worker)) return false;
  const std::string path = absl::StrCat(WorkersDir(options_.journal_path), "/", worker);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  // Only a missing file means a gone worker; a file this process cannot open (permissions, no
  // descriptors left) keeps its trial, rather than running it twice.
  if (fd < 0) return errno != ENOENT;
  // A shared probe: it conflicts with the owner's exclusive lock and works on a read-only
  // descriptor (also where flock is POSIX locks, NFS). Only "held" means alive.
  const bool alive = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  if (!alive) ::unlink(path.c_str());  // a dead worker's file
  ::close(fd);
  return alive;
}

absl::StatusOr<std::optional<TrialRun>> Study::Reclaim(const JournalState& state) {
  ASSIGN_OR_RETURN(const JournalStudy* mine, Mine(state));
  for (int64_t id : mine->trial_ids) {
    const JournalTrial& jt = state.trials[static_cast<size_t>(id)];
    const FrozenTrial& t = jt.trial;
    if (t.state != TrialState::kRunning) continue;
    const std::string owner =
        t.system_attrs.contains(kWorkerKey) && t.system_attrs[kWorkerKey].is_string()
            ? t.system_attrs[kWorkerKey].get<std::string>()
            : jt.worker_id;
    if (WorkerAlive(owner)) continue;
    const int64_t attempt =
        (t.system_attrs.contains(kAttemptKey) && t.system_attrs[kAttemptKey].is_number_integer()
             ? t.system_attrs[kAttemptKey].get<int64_t>()
             : 1) +
        1;
    RETURN_IF_ERROR(journal_.Append({SetTrialSystemAttrOp(worker_id_, id, kWorkerKey, worker_id_),
                                     SetTrialSystemAttrOp(worker_id_, id, kAttemptKey, attempt)}));
    return TrialRun{t.number, id, attempt, ExternalParams(t, options_.sampler.space)};
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<TrialRun>> Study::SampleNew(const JournalState& state) {
  ASSIGN_OR_RETURN(const JournalStudy* mine, Mine(state));
  std::vector<FrozenTrial> trials = state.TrialsOf(*mine);
  if (static_cast<int64_t>(trials.size()) >= options_.n_trials) return std::nullopt;
  ASSIGN_OR_RETURN(std::unique_ptr<Sampler> sampler,
                   CreateSampler(options_.backend, options_.sampler));
  if (const nlohmann::json* rng = LatestRng(trials)) {
    RETURN_IF_ERROR_CTX(sampler->RestoreRngState(*rng), "the journal's sampler state");
  }
  if (!trials.empty() && IsFinished(trials.back().state) &&
      sampler->ExhaustedAfter(StudyView{options_.direction, trials}, trials.back())) {
    return std::nullopt;
  }
  FrozenTrial t;
  t.number = static_cast<int64_t>(trials.size());
  t.state = TrialState::kRunning;
  t.datetime_start = NowIsoformat();
  t.system_attrs[kWorkerKey] = worker_id_;
  trials.push_back(t);
  StudyView view{options_.direction, trials};
  RETURN_IF_ERROR(sampler->BeforeTrial(view, trials.back()));
  for (const auto& [name, d] : options_.sampler.space.params) {
    ASSIGN_OR_RETURN(double v, sampler->SampleIndependent(view, trials.back(), name, d),
                     absl::StrCat("sampling \"", name, "\""));
    trials.back().params[name] = v;
    trials.back().distributions.insert_or_assign(name, d);
  }
  trials.back().system_attrs[kRngKey] = sampler->RngState();
  const int64_t trial_id = static_cast<int64_t>(state.trials.size());
  RETURN_IF_ERROR(journal_.Append({CreateTrialOp(worker_id_, study_id_, trials.back())}));
  return TrialRun{t.number, trial_id, 1, ExternalParams(trials.back(), options_.sampler.space)};
}

absl::StatusOr<std::optional<TrialRun>> Study::Ask() {
  std::optional<TrialRun> run;
  RETURN_IF_ERROR(journal_.Locked([&]() -> absl::Status {
    ASSIGN_OR_RETURN(JournalState state, Load());
    ASSIGN_OR_RETURN(run, Reclaim(state));
    if (!run) {
      ASSIGN_OR_RETURN(run, SampleNew(state));
    }
    return absl::OkStatus();
  }));
  return run;
}

absl::Status Study::Report(const TrialRun& run, int64_t step, double value) {
  return journal_.Locked([&]() -> absl::Status {
    ASSIGN_OR_RETURN(JournalState state, Load());
    ASSIGN_OR_RETURN(const FrozenTrial* t, TrialOf(state, run));
    if (t->intermediate_values.count(step) > 0) return absl::OkStatus();  // optuna ignores it
    return journal_.Append({SetTrialIntermediateValueOp(worker_id_, run.trial_id, step, value)});
  });
}

absl::StatusOr<bool> Study::ShouldPrune(const TrialRun& run) {
  if (!options_.pruner) return false;
  bool prune = false;
  RETURN_IF_ERROR(journal_.Locked([&]() -> absl::Status {
    ASSIGN_OR_RETURN(JournalState state, Load());
    ASSIGN_OR_RETURN(const JournalStudy* mine, Mine(state));
    std::vector<FrozenTrial> trials = state.TrialsOf(*mine);
    if (run.number < 0 || run.number >= static_cast<int64_t>(trials.size())) {
      return absl::InternalError("ShouldPrune: no such trial");
    }
    prune = options_.pruner(StudyView{options_.direction, trials},
                            trials[static_cast<size_t>(run.number)]);
    return absl::OkStatus();
  }));
  return prune;
}

absl::Status Study::Tell(const TrialRun& run, TrialState state, std::optional<double> value) {
  return journal_.Locked([&]() -> absl::Status {
    std::optional<double> v = value;
    if (state == TrialState::kPruned) {
      // optuna's _tell: a pruned trial's value is its last intermediate value (when finite).
      ASSIGN_OR_RETURN(JournalState replayed, Load());
      ASSIGN_OR_RETURN(const FrozenTrial* t, TrialOf(replayed, run));
      v.reset();
      if (std::optional<int64_t> last = t->last_step()) {
        const double x = t->intermediate_values.at(*last);
        if (!std::isnan(x)) v = x;  // optuna's _check_values_are_feasible refuses NaN only
      }
    }
    return journal_.Append({SetTrialStateValuesOp(worker_id_, run.trial_id, state, v)});
  });
}

absl::Status Study::SetUserAttr(const TrialRun& run, const std::string& key,
                                const nlohmann::json& value) {
  return journal_.Locked([&]() -> absl::Status {
    return journal_.Append({SetTrialUserAttrOp(worker_id_, run.trial_id, key, value)});
  });
}

absl::StatusOr<std::vector<FrozenTrial>> Study::Trials() {
  std::vector<FrozenTrial> out;
  RETURN_IF_ERROR(journal_.Locked([&]() -> absl::Status {
    ASSIGN_OR_RETURN(JournalState state, Load());
    ASSIGN_OR_RETURN(const JournalStudy* mine, Mine(state));
    out = state.TrialsOf(*mine);
    return absl::OkStatus();
  }));
  return out;
}

std::optional<FrozenTrial> Study::BestTrial(const std::vector<FrozenTrial>& trials,
                                            Direction direction) {
  std::optional<FrozenTrial> best;
  for (const FrozenTrial& t : trials) {
    if (t.state != TrialState::kComplete || !t.value || std::isnan(*t.value)) continue;
    const bool better = !best || (direction == Direction::kMaximize ? *t.value > *best->value
                                                                    : *t.value < *best->value);
    if (better) best = t;
  }
  return best;
}

}  // namespace loom::hpsearch
