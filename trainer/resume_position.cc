#include "trainer/resume_position.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "trainer/metrics.h"

namespace loom::trainer {

std::string ResumePosition::ToJson() const {
  nlohmann::ordered_json j;
  j["format"] = "loom.resume_position";
  j["version"] = 1;
  j["epoch"] = epoch;
  j["micro_batches_in_epoch"] = micro_batches_in_epoch;
  j["epoch_finished"] = epoch_finished;
  j["total_batched_samples"] = total_batched_samples;
  j["tr_loss"] = static_cast<double>(tr_loss);  // a float is exactly a double
  j["total_loss_scalar"] = total_loss_scalar;
  j["globalstep_last_logged"] = globalstep_last_logged;
  j["current_flos"] = current_flos;
  return PyJsonDumps(j, 2, /*sort_keys=*/false) + "\n";
}

absl::StatusOr<ResumePosition> ResumePosition::FromJson(const std::string& text) {
  // Python's json spelling: the running loss can be inf or nan (logging_nan_inf_filter off).
  nlohmann::ordered_json j = base::ParsePythonJson(text).value_or(nlohmann::ordered_json());
  if (!j.is_object() || j.value("format", "") != "loom.resume_position") {
    return absl::InvalidArgumentError(absl::StrCat(kResumePositionFile,
                                                   ": not a loom resume position (no \"format\": "
                                                   "\"loom.resume_position\")"));
  }
  if (j.value("version", 0) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(kResumePositionFile, ": unsupported version ", j.value("version", 0),
                     "; this loom reads version 1 (written by a newer loom?)"));
  }
  ResumePosition p;
  try {
    p.epoch = j.at("epoch").get<int64_t>();
    p.micro_batches_in_epoch = j.at("micro_batches_in_epoch").get<int64_t>();
    p.epoch_finished = j.at("epoch_finished").get<bool>();
    p.total_batched_samples = j.at("total_batched_samples").get<int64_t>();
    p.tr_loss = static_cast<float>(j.at("tr_loss").get<double>());
    p.total_loss_scalar = j.at("total_loss_scalar").get<double>();
    p.globalstep_last_logged = j.at("globalstep_last_logged").get<int64_t>();
    p.current_flos = j.at("current_flos").get<double>();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(kResumePositionFile, ": ", e.what()));
  }
  if (p.epoch < 0 || p.micro_batches_in_epoch < 0 || p.total_batched_samples < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kResumePositionFile, ": negative epoch or batch counts"));
  }
  return p;
}

}  // namespace loom::trainer
