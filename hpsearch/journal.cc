#include "hpsearch/journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/python_json.h"
#include "base/status_macros.h"

namespace loom::hpsearch {
namespace {

using Json = nlohmann::ordered_json;

// A journal larger than this is refused rather than read into memory.
constexpr int64_t kMaxJournalBytes = int64_t{1} << 30;

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

bool IsInt(const Json& j) { return j.is_number_integer(); }
bool IsNumberOrNull(const Json& j) { return j.is_number() || j.is_null(); }

// The fields each operation needs, with their JSON types (optuna's replay reads them).
absl::Status CheckFields(const Json& op) {
  auto need = [&op](const char* key, bool (*ok)(const Json&), const char* what) -> absl::Status {
    auto it = op.find(key);
    if (it == op.end() || !ok(*it)) {
      return absl::DataLossError(absl::StrCat("\"", key, "\" must be ", what));
    }
    return absl::OkStatus();
  };
  auto one_attr = [&op](const char* key) -> absl::Status {
    auto it = op.find(key);
    if (it == op.end() || !it->is_object() || it->size() != 1) {
      return absl::DataLossError(absl::StrCat("\"", key, "\" must be an object of one key"));
    }
    return absl::OkStatus();
  };
  auto is_string = [](const Json& j) { return j.is_string(); };
  auto is_int = [](const Json& j) { return IsInt(j); };
  auto is_number = [](const Json& j) { return j.is_number(); };
  auto is_number_or_null = [](const Json& j) { return IsNumberOrNull(j); };
  RETURN_IF_ERROR(need("worker_id", +is_string, "a string"));
  switch (static_cast<JournalOp>(op["op_code"].get<int64_t>())) {
    case JournalOp::kCreateStudy: {
      RETURN_IF_ERROR(need("study_name", +is_string, "a string"));
      const Json& d = op.contains("directions") ? op["directions"] : Json();
      if (!d.is_array() || d.empty()) return absl::DataLossError("\"directions\" must be a list");
      for (const Json& x : d) {
        if (!IsInt(x) || x.get<int64_t>() < 0 || x.get<int64_t>() > 2) {
          return absl::DataLossError("a direction must be 0, 1 or 2");
        }
      }
      return absl::OkStatus();
    }
    case JournalOp::kDeleteStudy:
      return need("study_id", +is_int, "an integer");
    case JournalOp::kSetStudyUserAttr:
      RETURN_IF_ERROR(need("study_id", +is_int, "an integer"));
      return one_attr("user_attr");
    case JournalOp::kSetStudySystemAttr:
      RETURN_IF_ERROR(need("study_id", +is_int, "an integer"));
      return one_attr("system_attr");
    case JournalOp::kCreateTrial:
      RETURN_IF_ERROR(need("study_id", +is_int, "an integer"));
      return need(
          "datetime_start", +[](const Json& j) { return j.is_string() || j.is_null(); },
          "a string or null");
    case JournalOp::kSetTrialParam:
      RETURN_IF_ERROR(need("trial_id", +is_int, "an integer"));
      RETURN_IF_ERROR(need("param_name", +is_string, "a string"));
      RETURN_IF_ERROR(need("param_value_internal", +is_number, "a number"));
      return need("distribution", +is_string, "a string");
    case JournalOp::kSetTrialStateValues:
      RETURN_IF_ERROR(need("trial_id", +is_int, "an integer"));
      RETURN_IF_ERROR(need("state", +is_int, "an integer"));
      return need(
          "values", +[](const Json& j) { return j.is_array() || j.is_null(); }, "a list or null");
    case JournalOp::kSetTrialIntermediateValue:
      RETURN_IF_ERROR(need("trial_id", +is_int, "an integer"));
      RETURN_IF_ERROR(need("step", +is_int, "an integer"));
      return need("intermediate_value", +is_number_or_null, "a number");
    case JournalOp::kSetTrialUserAttr:
      RETURN_IF_ERROR(need("trial_id", +is_int, "an integer"));
      return one_attr("user_attr");
    case JournalOp::kSetTrialSystemAttr:
      RETURN_IF_ERROR(need("trial_id", +is_int, "an integer"));
      return one_attr("system_attr");
  }
  return absl::DataLossError("unknown op_code");
}

std::optional<TrialState> StateOf(const Json& j) {
  if (!IsInt(j)) return std::nullopt;
  const int64_t s = j.get<int64_t>();
  if (s < 0 || s > 4) return std::nullopt;
  return static_cast<TrialState>(s);
}

std::optional<double> FirstValue(const Json& values) {
  if (!values.is_array() || values.empty() || !values[0].is_number()) return std::nullopt;
  return values[0].get<double>();
}

nlohmann::json Plain(const Json& j) { return nlohmann::json::parse(j.dump()); }

// A parameter value that converts to its external form without surprises: finite; an integer
// near its range; a categorical index of a choice. (Not optuna's _contains: a sampled float can
// exceed its bound by a rounding error, and optuna stores it as it is.)
bool Plausible(const Distribution& d, double v) {
  if (!std::isfinite(v)) return false;
  if (const auto* i = std::get_if<IntDistribution>(&d)) {
    // (In double: a journal's step may be as large as an int64.)
    const double step = static_cast<double>(i->step);
    return v >= static_cast<double>(i->low) - step && v <= static_cast<double>(i->high) + step;
  }
  if (const auto* c = std::get_if<CategoricalDistribution>(&d)) {
    return v >= 0 && v < static_cast<double>(c->choices.size());
  }
  return true;
}

// optuna's _apply_create_trial (a template trial's fields when present).
absl::Status ApplyCreateTrial(const Json& op, JournalState& s) {
  auto study = s.studies.find(op["study_id"].get<int64_t>());
  if (study == s.studies.end()) return absl::OkStatus();
  JournalTrial jt;
  jt.trial_id = static_cast<int64_t>(s.trials.size());
  jt.study_id = study->first;
  jt.worker_id = op["worker_id"].get<std::string>();
  FrozenTrial& t = jt.trial;
  t.number = static_cast<int64_t>(study->second.trial_ids.size());
  if (op.contains("state")) {
    std::optional<TrialState> state = StateOf(op["state"]);
    if (!state) return absl::DataLossError("\"state\" must be 0..4");
    t.state = *state;
  }
  if (op["datetime_start"].is_string()) t.datetime_start = op["datetime_start"].get<std::string>();
  if (op.contains("datetime_complete") && op["datetime_complete"].is_string()) {
    t.datetime_complete = op["datetime_complete"].get<std::string>();
  }
  if (op.contains("value") && op["value"].is_number()) t.value = op["value"].get<double>();
  if (op.contains("values") && FirstValue(op["values"])) t.value = FirstValue(op["values"]);
  if (op.contains("distributions")) {
    if (!op["distributions"].is_object()) return absl::DataLossError("bad \"distributions\"");
    for (const auto& [name, text] : op["distributions"].items()) {
      if (!text.is_string()) return absl::DataLossError("a distribution must be a JSON string");
      ASSIGN_OR_RETURN(Distribution d, DistributionFromJson(text.get<std::string>()));
      t.distributions.emplace(name, std::move(d));
    }
  }
  if (op.contains("params")) {
    if (!op["params"].is_object()) return absl::DataLossError("bad \"params\"");
    for (const auto& [name, value] : op["params"].items()) {
      if (!value.is_number() || t.distributions.count(name) == 0) {
        return absl::DataLossError(absl::StrCat("param \"", name, "\" has no distribution"));
      }
      if (!Plausible(t.distributions.at(name), value.get<double>())) {
        return absl::DataLossError(
            absl::StrCat("param \"", name, "\" is outside its distribution: ", value.dump()));
      }
      t.params[name] = value.get<double>();
    }
  }
  for (const char* key : {"user_attrs", "system_attrs"}) {
    if (!op.contains(key)) continue;
    if (!op[key].is_object()) return absl::DataLossError(absl::StrCat("bad \"", key, "\""));
    (std::string(key) == "user_attrs" ? t.user_attrs : t.system_attrs) = Plain(op[key]);
  }
  if (op.contains("intermediate_values")) {
    if (!op["intermediate_values"].is_object()) {
      return absl::DataLossError("bad \"intermediate_values\"");
    }
    for (const auto& [step, value] : op["intermediate_values"].items()) {
      int64_t k = 0;
      if (!absl::SimpleAtoi(step, &k) || !IsNumberOrNull(value)) {
        return absl::DataLossError("bad \"intermediate_values\"");
      }
      t.intermediate_values[k] = value.is_null() ? std::nan("") : value.get<double>();
    }
  }
  study->second.trial_ids.push_back(jt.trial_id);
  s.trials.push_back(std::move(jt));
  return absl::OkStatus();
}

// The trial an update names, when it exists and is not finished (optuna's
// _trial_exists_and_updatable for a reader).
FrozenTrial* Updatable(const Json& op, JournalState& s) {
  const int64_t id = op["trial_id"].get<int64_t>();
  if (id < 0 || id >= static_cast<int64_t>(s.trials.size())) return nullptr;
  JournalTrial& jt = s.trials[static_cast<size_t>(id)];
  if (s.studies.count(jt.study_id) == 0 || IsFinished(jt.trial.state)) return nullptr;
  return &jt.trial;
}

absl::Status ApplyTrialUpdate(JournalOp code, const Json& op, JournalState& s) {
  FrozenTrial* t = Updatable(op, s);
  if (t == nullptr) return absl::OkStatus();
  switch (code) {
    case JournalOp::kSetTrialParam: {
      ASSIGN_OR_RETURN(Distribution d, DistributionFromJson(op["distribution"].get<std::string>()));
      const std::string name = op["param_name"].get<std::string>();
      if (!Plausible(d, op["param_value_internal"].get<double>())) {
        return absl::DataLossError(
            absl::StrCat("param \"", name,
                         "\" is outside its distribution: ", op["param_value_internal"].dump()));
      }
      t->params[name] = op["param_value_internal"].get<double>();
      t->distributions.insert_or_assign(name, std::move(d));
      return absl::OkStatus();
    }
    case JournalOp::kSetTrialStateValues: {
      std::optional<TrialState> state = StateOf(op["state"]);
      if (!state) return absl::DataLossError("\"state\" must be 0..4");
      if (*state == TrialState::kRunning && t->state == TrialState::kRunning) {
        return absl::OkStatus();
      }
      if (IsFinished(*state) && op.contains("datetime_complete") &&
          op["datetime_complete"].is_string()) {
        t->datetime_complete = op["datetime_complete"].get<std::string>();
      }
      t->state = *state;
      if (FirstValue(op["values"])) t->value = FirstValue(op["values"]);
      return absl::OkStatus();
    }
    case JournalOp::kSetTrialIntermediateValue: {
      const Json& v = op["intermediate_value"];
      t->intermediate_values[op["step"].get<int64_t>()] =
          v.is_null() ? std::nan("") : v.get<double>();
      return absl::OkStatus();
    }
    case JournalOp::kSetTrialUserAttr:
      t->user_attrs.update(Plain(op["user_attr"]));
      return absl::OkStatus();
    case JournalOp::kSetTrialSystemAttr:
      t->system_attrs.update(Plain(op["system_attr"]));
      return absl::OkStatus();
    default:
      return absl::InternalError("not a trial update");
  }
}

absl::Status ApplyStudyOp(JournalOp code, const Json& op, JournalState& s) {
  if (code == JournalOp::kCreateStudy) {
    const std::string name = op["study_name"].get<std::string>();
    if (s.FindStudy(name) != nullptr) return absl::OkStatus();
    JournalStudy study;
    study.study_id = s.next_study_id++;  // optuna counts deleted studies too
    study.name = name;
    for (const Json& d : op["directions"]) {
      study.directions.push_back(static_cast<Direction>(d.get<int64_t>()));
    }
    s.studies.emplace(study.study_id, std::move(study));
    return absl::OkStatus();
  }
  auto it = s.studies.find(op["study_id"].get<int64_t>());
  if (it == s.studies.end()) return absl::OkStatus();
  if (code == JournalOp::kDeleteStudy) {
    s.studies.erase(it);
  } else if (code == JournalOp::kSetStudyUserAttr) {
    it->second.user_attrs.update(Plain(op["user_attr"]));
  } else {
    it->second.system_attrs.update(Plain(op["system_attr"]));
  }
  return absl::OkStatus();
}

}  // namespace

namespace {
absl::StatusOr<int> OpenRegular(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return Errno("cannot open the study journal", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("the study journal ", path, " is not a regular file"));
  }
  return fd;
}
}  // namespace

absl::StatusOr<JournalFile> JournalFile::Open(const std::string& path) {
  // O_APPEND: a line is written at the end as it is then, whatever this process last saw.
  ASSIGN_OR_RETURN(int fd, OpenRegular(path, O_RDWR | O_CREAT | O_APPEND));
  return JournalFile(path, fd);
}

absl::StatusOr<JournalFile> JournalFile::OpenReadOnly(const std::string& path) {
  ASSIGN_OR_RETURN(int fd, OpenRegular(path, O_RDONLY));
  return JournalFile(path, fd);
}

JournalFile::JournalFile(JournalFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), locked_(other.locked_) {}

JournalFile& JournalFile::operator=(JournalFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    locked_ = other.locked_;
  }
  return *this;
}

JournalFile::~JournalFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status JournalFile::Locked(const std::function<absl::Status()>& fn) {
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) return Errno("cannot lock the study journal", path_);
  }
  struct Unlock {
    JournalFile* journal;
    ~Unlock() {
      journal->locked_ = false;
      ::flock(journal->fd_, LOCK_UN);
    }
  } unlock{this};
  locked_ = true;
  return fn();
}

absl::StatusOr<std::vector<Json>> JournalFile::Read() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return Errno("cannot stat the study journal", path_);
  if (st.st_size > kMaxJournalBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the study journal ", path_, " is larger than 1 GiB"));
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n =
        ::pread(fd_, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read the study journal", path_);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  std::vector<Json> ops;
  size_t start = 0;
  int64_t line = 1;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1, ++line) {
    absl::StatusOr<Json> op = ParseOperation(text.substr(start, end - start));
    if (!op.ok()) {
      return absl::DataLossError(
          absl::StrCat("the study journal ", path_, " line ", line,
                       " is not an optuna journal operation: ", op.status().message()));
    }
    ops.push_back(*std::move(op));
  }
  return ops;  // a torn last line (no newline) is not an operation yet
}

absl::Status JournalFile::Append(const std::vector<Json>& ops) {
  if (!locked_) return absl::InternalError("JournalFile::Append outside Locked()");
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return Errno("cannot stat the study journal", path_);
  // Cut a torn last line off (a writer crashed mid-line): back to just after the last newline.
  off_t end = st.st_size;
  while (end > 0) {
    char c = 0;
    if (::pread(fd_, &c, 1, end - 1) != 1) return Errno("cannot read the study journal", path_);
    if (c == '\n') break;
    --end;
  }
  if (end != st.st_size && ::ftruncate(fd_, end) != 0) {
    return Errno("cannot cut the torn last line of the study journal", path_);
  }
  std::string text;
  for (const Json& op : ops) absl::StrAppend(&text, base::PyJsonDumps(op, -1, false), "\n");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const absl::Status error = Errno("cannot write the study journal", path_);
      // None of these operations stays: a failed write must not leave a torn line behind.
      const int cut = ::ftruncate(fd_, end);
      (void)cut;
      return error;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd_) != 0) return Errno("cannot sync the study journal", path_);
  return absl::OkStatus();
}

absl::StatusOr<Json> ParseOperation(const std::string& line) {
  ASSIGN_OR_RETURN(Json op, base::ParsePythonJson(line));
  if (!op.is_object()) return absl::DataLossError("not a JSON object");
  auto code = op.find("op_code");
  if (code == op.end() || !IsInt(*code) || code->get<int64_t>() < 0 || code->get<int64_t>() > 9) {
    return absl::DataLossError("\"op_code\" must be an integer 0..9");
  }
  RETURN_IF_ERROR(CheckFields(op));
  return op;
}

absl::StatusOr<JournalState> Replay(const std::vector<Json>& ops) {
  JournalState s;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Json& op = ops[i];
    const auto code = static_cast<JournalOp>(op["op_code"].get<int64_t>());
    absl::Status status;
    if (code == JournalOp::kCreateTrial) {
      status = ApplyCreateTrial(op, s);
    } else if (code <= JournalOp::kSetStudySystemAttr) {
      status = ApplyStudyOp(code, op, s);
    } else {
      status = ApplyTrialUpdate(code, op, s);
    }
    RETURN_IF_ERROR_CTX(status, absl::StrCat("operation ", i + 1));
  }
  return s;
}

const JournalStudy* JournalState::FindStudy(const std::string& name) const {
  for (const auto& [id, study] : studies) {
    if (study.name == name) return &study;
  }
  return nullptr;
}

std::vector<FrozenTrial> JournalState::TrialsOf(const JournalStudy& study) const {
  std::vector<FrozenTrial> out;
  for (int64_t id : study.trial_ids) out.push_back(trials[static_cast<size_t>(id)].trial);
  return out;
}

Json CreateStudyOp(const std::string& worker, const std::string& name, Direction direction) {
  return Json{{"op_code", static_cast<int>(JournalOp::kCreateStudy)},
              {"worker_id", worker},
              {"study_name", name},
              {"directions", Json::array({static_cast<int>(direction)})}};
}

Json SetStudySystemAttrOp(const std::string& worker, int64_t study_id, const std::string& key,
                          const nlohmann::json& value) {
  return Json{{"op_code", static_cast<int>(JournalOp::kSetStudySystemAttr)},
              {"worker_id", worker},
              {"study_id", study_id},
              {"system_attr", Json{{key, Json::parse(value.dump())}}}};
}

Json CreateTrialOp(const std::string& worker, int64_t study_id, const FrozenTrial& t) {
  Json distributions = Json::object(), params = Json::object();
  for (const auto& [name, d] : t.distributions) distributions[name] = DistributionToJson(d);
  for (const auto& [name, v] : t.params) params[name] = v;
  Json intermediate = Json::object();
  for (const auto& [step, v] : t.intermediate_values) intermediate[std::to_string(step)] = v;
  return Json{{"op_code", static_cast<int>(JournalOp::kCreateTrial)},
              {"worker_id", worker},
              {"study_id", study_id},
              {"datetime_start", t.datetime_start},
              {"state", static_cast<int>(t.state)},
              {"value", nullptr},
              {"values", nullptr},
              {"distributions", distributions},
              {"params", params},
              {"user_attrs", Json::parse(t.user_attrs.dump())},
              {"system_attrs", Json::parse(t.system_attrs.dump())},
              {"intermediate_values", intermediate}};
}

Json SetTrialIntermediateValueOp(const std::string& worker, int64_t trial_id, int64_t step,
                                 double value) {
  return Json{{"op_code", static_cast<int>(JournalOp::kSetTrialIntermediateValue)},
              {"worker_id", worker},
              {"trial_id", trial_id},
              {"step", step},
              {"intermediate_value", value}};
}

Json SetTrialStateValuesOp(const std::string& worker, int64_t trial_id, TrialState state,
                           std::optional<double> value) {
  Json op{{"op_code", static_cast<int>(JournalOp::kSetTrialStateValues)},
          {"worker_id", worker},
          {"trial_id", trial_id},
          {"state", static_cast<int>(state)},
          {"values", value ? Json::array({*value}) : Json()}};
  if (state == TrialState::kRunning) op["datetime_start"] = NowIsoformat();
  if (IsFinished(state)) op["datetime_complete"] = NowIsoformat();
  return op;
}

Json SetTrialSystemAttrOp(const std::string& worker, int64_t trial_id, const std::string& key,
                          const nlohmann::json& value) {
  return Json{{"op_code", static_cast<int>(JournalOp::kSetTrialSystemAttr)},
              {"worker_id", worker},
              {"trial_id", trial_id},
              {"system_attr", Json{{key, Json::parse(value.dump())}}}};
}

Json SetTrialUserAttrOp(const std::string& worker, int64_t trial_id, const std::string& key,
                        const nlohmann::json& value) {
  return Json{{"op_code", static_cast<int>(JournalOp::kSetTrialUserAttr)},
              {"worker_id", worker},
              {"trial_id", trial_id},
              {"user_attr", Json{{key, Json::parse(value.dump())}}}};
}

std::string NowIsoformat() {
  const auto now = std::chrono::system_clock::now();
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const time_t seconds = static_cast<time_t>(micros / 1000000);
  struct tm local {};
  localtime_r(&seconds, &local);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%06d", local.tm_year + 1900,
                         local.tm_mon + 1, local.tm_mday, local.tm_hour, local.tm_min, local.tm_sec,
                         static_cast<int>(micros % 1000000));
}

}  // namespace loom::hpsearch
