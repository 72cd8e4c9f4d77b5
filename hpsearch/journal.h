// A study journal in optuna 4.6's JournalFileBackend format: one JSON object per line, each an
// operation (`op_code` as optuna.storages.journal JournalOperation, `worker_id`, and the
// operation's fields), appended under an exclusive lock and fsync'ed; the studies are what
// replaying the operations in order gives (optuna's JournalStorageReplayResult). So optuna reads
// a loom journal (`optuna.load_study(study_name=..., storage=JournalStorage(
// JournalFileBackend(path)))`) and loom replays the operations optuna writes.
//
// Contract:
//   - JournalFile::Open(path) creates the file when missing. Locked(fn) runs fn with the
//     journal locked (flock on the file) against other processes: read, decide, append as one
//     step. Append writes whole lines; a torn last line a crashed writer left (no newline) is
//     cut off first, so a crash loses at most the operation being written and the file stays
//     readable by optuna.
//   - Read() parses every complete line, bounds- and type-checked: each must be a JSON object
//     (nested at most base::kMaxPythonJsonDepth deep) with a known op_code, the fields that
//     operation needs, of the right types; anything else is DataLoss naming the file and line.
//     A torn last line is ignored. Replay also refuses a parameter value that is not finite, an
//     integer far outside its range or a categorical index that names no choice.
//   - The lock is an flock on the journal file: loom processes exclude each other; optuna's own
//     JournalFileBackend locks with a "<journal>.lock" symlink instead, so an optuna process must
//     not write to a journal a loom search is writing (reading it is fine). Appends use
//     O_APPEND, so even then no line overwrites another. On NFS, flock is emulated with POSIX
//     locks (see study.h).
//   - Replay(ops) applies the operations as optuna does (unknown study or trial ids and
//     updates to finished trials are skipped, a second CREATE_STUDY of a name is ignored).
//
// Example:
//   ASSIGN_OR_RETURN(JournalFile journal, JournalFile::Open("out/hp_search.journal"));
//   RETURN_IF_ERROR(journal.Locked([&]() -> absl::Status {
//     ASSIGN_OR_RETURN(std::vector<nlohmann::ordered_json> ops, journal.Read());
//     ASSIGN_OR_RETURN(JournalState state, Replay(ops));
//     return journal.Append({CreateStudyOp(worker, "hp_search", Direction::kMinimize)});
//   }));
#ifndef LOOM_HPSEARCH_JOURNAL_H_
#define LOOM_HPSEARCH_JOURNAL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hpsearch/distribution.h"
#include "hpsearch/trial.h"
#include "nlohmann/json.hpp"

namespace loom::hpsearch {

// optuna.storages.journal JournalOperation.
enum class JournalOp {
  kCreateStudy = 0,
  kDeleteStudy = 1,
  kSetStudyUserAttr = 2,
  kSetStudySystemAttr = 3,
  kCreateTrial = 4,
  kSetTrialParam = 5,
  kSetTrialStateValues = 6,
  kSetTrialIntermediateValue = 7,
  kSetTrialUserAttr = 8,
  kSetTrialSystemAttr = 9,
};

class JournalFile {
 public:
  static absl::StatusOr<JournalFile> Open(const std::string& path);
  // For reading only (a file that must exist; Append fails).
  static absl::StatusOr<JournalFile> OpenReadOnly(const std::string& path);
  JournalFile(JournalFile&& other) noexcept;
  JournalFile& operator=(JournalFile&& other) noexcept;
  JournalFile(const JournalFile&) = delete;
  JournalFile& operator=(const JournalFile&) = delete;
  ~JournalFile();

  const std::string& path() const { return path_; }
  // fn() with the journal locked against other processes (not re-entrant).
  absl::Status Locked(const std::function<absl::Status()>& fn);
  // Every complete operation in file order (call under Locked for a consistent view).
  absl::StatusOr<std::vector<nlohmann::ordered_json>> Read() const;
  // Appends the operations as lines (Python's json.dumps with its default separators, NaN
  // and Infinity as Python writes them), then fsync. Call under Locked.
  absl::Status Append(const std::vector<nlohmann::ordered_json>& ops);

 private:
  JournalFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  bool locked_ = false;
};

// A study as replayed.
struct JournalStudy {
  int64_t study_id = 0;
  std::string name;
  std::vector<Direction> directions;
  nlohmann::json user_attrs = nlohmann::json::object();
  nlohmann::json system_attrs = nlohmann::json::object();
  std::vector<int64_t> trial_ids;  // in number order
};

struct JournalTrial {
  int64_t trial_id = 0;
  int64_t study_id = 0;
  std::string worker_id;  // who created it
  FrozenTrial trial;
};

struct JournalState {
  std::map<int64_t, JournalStudy> studies;
  int64_t next_study_id = 0;  // the id the next CREATE_STUDY gets (deleted studies count)
  std::vector<JournalTrial> trials;  // index == trial_id
  const JournalStudy* FindStudy(const std::string& name) const;
  // The study's trials in number order.
  std::vector<FrozenTrial> TrialsOf(const JournalStudy& study) const;
};

absl::StatusOr<JournalState> Replay(const std::vector<nlohmann::ordered_json>& ops);
// Parses one line's operation with Read()'s checks (for tests and fuzzing).
absl::StatusOr<nlohmann::ordered_json> ParseOperation(const std::string& line);

// The operations loom writes (optuna's field names and types).
nlohmann::ordered_json CreateStudyOp(const std::string& worker, const std::string& name,
                                     Direction direction);
nlohmann::ordered_json SetStudySystemAttrOp(const std::string& worker, int64_t study_id,
                                            const std::string& key, const nlohmann::json& value);
// A RUNNING trial with its parameters and system attributes, in one line (optuna's
// create_new_trial with a template trial).
nlohmann::ordered_json CreateTrialOp(const std::string& worker, int64_t study_id,
                                     const FrozenTrial& t);
nlohmann::ordered_json SetTrialIntermediateValueOp(const std::string& worker, int64_t trial_id,
                                                   int64_t step, double value);
nlohmann::ordered_json SetTrialStateValuesOp(const std::string& worker, int64_t trial_id,
                                             TrialState state, std::optional<double> value);
nlohmann::ordered_json SetTrialSystemAttrOp(const std::string& worker, int64_t trial_id,
                                            const std::string& key, const nlohmann::json& value);
nlohmann::ordered_json SetTrialUserAttrOp(const std::string& worker, int64_t trial_id,
                                          const std::string& key, const nlohmann::json& value);

// datetime.now().isoformat(timespec="microseconds") (local time, no zone), as optuna writes.
std::string NowIsoformat();

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_JOURNAL_H_
