#include "trainer/model_card.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/python_float.h"
#include "hub/hub_config.h"
#include "torch/version.h"
#include "yaml-cpp/yaml.h"

namespace loom::trainer {
namespace {

// loom's version as the model card names it.
constexpr char kLoomVersion[] = "0.1.0";

std::string F(double x) { return base::PythonFloatRepr(x); }

}  // namespace

std::vector<std::pair<std::string, std::string>> Hyperparameters(
    const args::TrainingArguments& a, int world_size) {
  std::vector<std::pair<std::string, std::string>> h;
  // HF's train/eval_batch_size: per device times max(1, n_gpu), and n_gpu is 1 per process.
  const int64_t train_bs = a.per_device_train_batch_size();
  const int64_t eval_bs = a.per_device_eval_batch_size();
  h.emplace_back("learning_rate", F(a.learning_rate()));
  h.emplace_back("train_batch_size", std::to_string(train_bs));
  h.emplace_back("eval_batch_size", std::to_string(eval_bs));
  h.emplace_back("seed", std::to_string(a.seed()));
  if (world_size > 1) {
    h.emplace_back("distributed_type", "multi-GPU");
    h.emplace_back("num_devices", std::to_string(world_size));
  }
  if (a.gradient_accumulation_steps() > 1) {
    h.emplace_back("gradient_accumulation_steps", std::to_string(a.gradient_accumulation_steps()));
  }
  const int64_t total_train = train_bs * world_size * a.gradient_accumulation_steps();
  if (total_train != train_bs) h.emplace_back("total_train_batch_size", std::to_string(total_train));
  const int64_t total_eval = eval_bs * world_size;
  if (total_eval != eval_bs) h.emplace_back("total_eval_batch_size", std::to_string(total_eval));
  if (!a.optim().empty()) {
    const std::string optim_args =
        a.optim_args().empty() ? "No additional optimizer arguments" : a.optim_args();
    std::string lower = a.optim();
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (lower.find("adam") != std::string::npos) {
      h.emplace_back("optimizer", absl::StrCat("Use ", a.optim(), " with betas=(", F(a.adam_beta1()),
                                               ",", F(a.adam_beta2()), ") and epsilon=",
                                               F(a.adam_epsilon()),
                                               " and optimizer_args=", optim_args));
    } else {
      h.emplace_back("optimizer", absl::StrCat("Use ", a.optim(), " and the args are:\n", optim_args));
    }
  }
  h.emplace_back("lr_scheduler_type", a.lr_scheduler_type());
  if (a.warmup_ratio() != 0.0) h.emplace_back("lr_scheduler_warmup_ratio", F(a.warmup_ratio()));
  if (a.warmup_steps() != 0) h.emplace_back("lr_scheduler_warmup_steps", std::to_string(a.warmup_steps()));
  if (a.max_steps() != -1) {
    h.emplace_back("training_steps", std::to_string(a.max_steps()));
  } else {
    h.emplace_back("num_epochs", F(a.num_train_epochs()));
  }
  if (a.fp16()) h.emplace_back("mixed_precision_training", "Native AMP");
  if (a.label_smoothing_factor() != 0.0) {
    h.emplace_back("label_smoothing_factor", F(a.label_smoothing_factor()));
  }
  return h;
}

hub::TrainingSummary SummaryFromTrainer(const args::TrainingArguments& args,
                                        const std::vector<hub::OrderedJson>& log_history,
                                        int world_size, const ModelCardOptions& o,
                                        const std::vector<std::string>& existing_tags) {
  hub::TrainingSummary s;
  s.language = o.language;
  s.license = o.license;
  s.finetuned_from = o.finetuned_from;
  s.tasks = o.tasks;
  s.dataset_tags = o.dataset_tags;
  s.dataset_args = o.dataset_args;
  s.dataset_metadata = o.dataset_metadata;
  s.dataset = o.dataset.empty() ? o.dataset_tags : o.dataset;
  s.model_name = o.model_name.value_or(hub::DefaultModelId(args.output_dir()));
  if (s.model_name.empty()) s.model_name = o.finetuned_from.value_or("");
  // create_model_card keeps an existing card's tags only when the caller passed some.
  s.tags = o.tags;
  if (!s.tags.empty()) {
    for (const std::string& t : existing_tags) {
      if (std::find(s.tags.begin(), s.tags.end(), t) == s.tags.end()) s.tags.push_back(t);
    }
  }
  if (std::find(s.tags.begin(), s.tags.end(), "generated_from_trainer") == s.tags.end()) {
    s.tags.push_back("generated_from_trainer");
  }
  hub::ParsedLogHistory parsed = hub::ParseLogHistory(log_history);
  s.eval_lines = std::move(parsed.lines);
  s.eval_results = std::move(parsed.eval_results);
  s.hyperparameters = Hyperparameters(args, world_size);
  s.framework_versions = {{"loom", kLoomVersion}, {"LibTorch", TORCH_VERSION}};
  return s;
}

absl::StatusOr<std::vector<std::string>> ExistingCardTags(const std::string& text) {
  std::vector<std::string> tags;
  if (text.rfind("---\n", 0) != 0) return tags;
  const size_t end = text.find("\n---", 3);
  if (end == std::string::npos) return tags;
  try {
    YAML::Node meta = YAML::Load(text.substr(4, end - 3));
    if (!meta.IsMap() || !meta["tags"]) return tags;
    const YAML::Node t = meta["tags"];
    if (t.IsScalar()) {
      tags.push_back(t.as<std::string>());
    } else if (t.IsSequence()) {
      for (const auto& item : t) tags.push_back(item.as<std::string>());
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("README.md: its YAML metadata does not parse: ", e.what()));
  }
  return tags;
}

}  // namespace loom::trainer
