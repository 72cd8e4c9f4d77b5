#include "trainer/trainer_state.h"

#include <cstdint>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace loom::trainer {
namespace {

using ojson = nlohmann::ordered_json;

template <typename T>
ojson OrNull(const std::optional<T>& v) {
  return v ? ojson(*v) : ojson(nullptr);
}

// Reads key `k` of `j` into `out` when present and not null; type errors name the key.
template <typename T>
absl::Status Read(const ojson& j, const char* k, T* out) {
  auto it = j.find(k);
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if constexpr (std::is_same_v<T, int64_t>) {
    // nlohmann converts a float (or NaN, or an integer above int64's range) without checking.
    const bool too_big =
        it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
    const double d = it->is_number_float() ? it->get<double>() : 0.0;
    if (too_big || (it->is_number_float() && !(d >= -9.2e18 && d <= 9.2e18))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "trainer_state.json: key '", k, "': ", PyJsonDumps(*it, -1, false),
          " is not an integer that fits in 64 bits; write the value HF wrote (a step count)"));
    }
  }
  try {
    *out = it->get<T>();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer_state.json: key '", k, "': ", e.what()));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status Read(const ojson& j, const char* k, std::optional<T>* out) {
  auto it = j.find(k);
  if (it == j.end() || it->is_null()) {
    out->reset();
    return absl::OkStatus();
  }
  T value;
  RETURN_IF_ERROR(Read(j, k, &value));
  *out = value;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TrainerStateLayout> TrainerStateLayoutFor(absl::string_view transformers_version) {
  if (transformers_version == "4.38") return TrainerStateLayout::kTransformers438;
  if (transformers_version == "4.41") return TrainerStateLayout::kTransformers441;
  return absl::InvalidArgumentError(
      absl::StrCat("--save_for_transformers_version: '", transformers_version,
                   "' is not a valid value, please select one of ['4.38', '4.41']"));
}

std::string TrainerState::ToJson(TrainerStateLayout layout) const {
  ojson j = ojson::object();
  j["epoch"] = OrNull(epoch);
  j["global_step"] = global_step;
  j["max_steps"] = max_steps;
  j["logging_steps"] = logging_steps;
  j["eval_steps"] = eval_steps;
  j["save_steps"] = save_steps;
  j["train_batch_size"] = OrNull(train_batch_size);
  j["num_train_epochs"] = num_train_epochs;
  j["num_input_tokens_seen"] = num_input_tokens_seen;
  j["total_flos"] = total_flos;
  j["log_history"] = ojson::array();
  for (const Metrics& entry : log_history) j["log_history"].push_back(entry);
  j["best_metric"] = OrNull(best_metric);
  j["best_model_checkpoint"] = OrNull(best_model_checkpoint);
  j["is_local_process_zero"] = is_local_process_zero;
  j["is_world_process_zero"] = is_world_process_zero;
  j["is_hyper_param_search"] = is_hyper_param_search;
  j["trial_name"] = OrNull(trial_name);
  j["trial_params"] = trial_params.is_object() ? trial_params : ojson();
  if (layout == TrainerStateLayout::kTransformers441) {
    j["stateful_callbacks"] = stateful_callbacks.is_null() ? ojson::object() : stateful_callbacks;
  }
  return PyJsonDumps(j, 2, /*sort_keys=*/true) + "\n";
}

absl::StatusOr<TrainerState> TrainerState::FromJson(const std::string& text) {
  // Python's json (NaN / Infinity allowed): a logged grad_norm can be inf or nan.
  ojson j = base::ParsePythonJson(text).value_or(ojson());
  if (!j.is_object()) {
    return absl::InvalidArgumentError("trainer_state.json: not a JSON object");
  }
  TrainerState s;
  RETURN_IF_ERROR(Read(j, "epoch", &s.epoch));
  RETURN_IF_ERROR(Read(j, "global_step", &s.global_step));
  RETURN_IF_ERROR(Read(j, "max_steps", &s.max_steps));
  RETURN_IF_ERROR(Read(j, "logging_steps", &s.logging_steps));
  RETURN_IF_ERROR(Read(j, "eval_steps", &s.eval_steps));
  RETURN_IF_ERROR(Read(j, "save_steps", &s.save_steps));
  RETURN_IF_ERROR(Read(j, "train_batch_size", &s.train_batch_size));
  RETURN_IF_ERROR(Read(j, "num_train_epochs", &s.num_train_epochs));
  RETURN_IF_ERROR(Read(j, "num_input_tokens_seen", &s.num_input_tokens_seen));
  RETURN_IF_ERROR(Read(j, "total_flos", &s.total_flos));
  RETURN_IF_ERROR(Read(j, "best_metric", &s.best_metric));
  RETURN_IF_ERROR(Read(j, "best_model_checkpoint", &s.best_model_checkpoint));
  RETURN_IF_ERROR(Read(j, "is_local_process_zero", &s.is_local_process_zero));
  RETURN_IF_ERROR(Read(j, "is_world_process_zero", &s.is_world_process_zero));
  RETURN_IF_ERROR(Read(j, "is_hyper_param_search", &s.is_hyper_param_search));
  RETURN_IF_ERROR(Read(j, "trial_name", &s.trial_name));
  if (auto it = j.find("trial_params"); it != j.end() && it->is_object()) s.trial_params = *it;
  if (auto it = j.find("log_history"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) {
      return absl::InvalidArgumentError("trainer_state.json: key 'log_history' is not a list");
    }
    for (const ojson& entry : *it) {
      if (!entry.is_object()) {
        return absl::InvalidArgumentError(
            "trainer_state.json: an entry of 'log_history' is not an object");
      }
      s.log_history.push_back(entry);
    }
  }
  if (auto it = j.find("stateful_callbacks"); it == j.end() || it->is_null()) {
    s.stateful_callbacks = nullptr;  // a 4.38 file: no callback states
  } else if (it->is_object()) {
    s.stateful_callbacks = *it;
  }
  return s;
}

absl::Status TrainerState::SaveToJson(const std::string& path, TrainerStateLayout layout) const {
  RETURN_IF_ERROR_CTX(base::WriteFileAtomically(path, ToJson(layout)), path);
  return absl::OkStatus();
}

absl::StatusOr<TrainerState> TrainerState::LoadFromJson(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path), path);
  absl::StatusOr<TrainerState> s = FromJson(text);
  if (!s.ok()) return base::Annotate(s.status(), path);
  return s;
}

}  // namespace loom::trainer
