// The Trainer's side of the model card: HF 4.41's Trainer.create_model_card and
// TrainingSummary.from_trainer / extract_hyperparameters_from_trainer over hub/model_card.h.
//
// Contract:
//   - ModelCardOptions: create_model_card's keyword arguments (language, license, tags,
//     model_name, finetuned_from, tasks, dataset_tags, dataset_metadata, dataset,
//     dataset_args); an empty list or unset value is HF's None.
//   - Hyperparameters(args, world_size): HF's list, in HF's order, values as Python's str()
//     writes them: learning_rate, train_batch_size, eval_batch_size, seed, distributed_type
//     ("multi-GPU", HF's name for any multi-process run), num_devices,
//     gradient_accumulation_steps, total_train/eval_batch_size, optimizer, lr_scheduler_type,
//     warmup ratio/steps, training_steps or num_epochs, mixed_precision_training ("Native
//     AMP" with --fp16), label_smoothing_factor.
//   - SummaryFromTrainer(args, log_history, world_size, options, existing_card): from_trainer:
//     model_name defaults to output_dir's name (then finetuned_from), dataset to dataset_tags,
//     "generated_from_trainer" joins the tags, and when the caller passed tags the existing
//     README.md's tags are kept too (create_model_card); the results come from log_history;
//     the framework versions name loom and LibTorch.
//   - ExistingCardTags(readme_text): the `tags` of a README's YAML front matter (none when
//     there is no front matter); malformed YAML is InvalidArgument naming README.md.
//
// Example:
//   ModelCardOptions card;
//   card.finetuned_from = "bert-base-cased";
//   card.tasks = {"text-classification"};
//   hub::TrainingSummary s = SummaryFromTrainer(args, state.log_history, 1, card, {});
//   std::string readme = hub::ToModelCard(s);
#ifndef LOOM_TRAINER_MODEL_CARD_H_
#define LOOM_TRAINER_MODEL_CARD_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "hub/model_card.h"

namespace loom::trainer {

struct ModelCardOptions {
  std::vector<std::string> language;
  std::optional<std::string> license;
  std::vector<std::string> tags;
  std::optional<std::string> model_name;
  std::optional<std::string> finetuned_from;
  std::vector<std::string> tasks;
  std::vector<std::string> dataset_tags;
  std::vector<hub::OrderedJson> dataset_metadata;
  std::vector<std::string> dataset;
  std::vector<std::optional<std::string>> dataset_args;
};

std::vector<std::pair<std::string, std::string>> Hyperparameters(
    const args::TrainingArguments& args, int world_size);

hub::TrainingSummary SummaryFromTrainer(const args::TrainingArguments& args,
                                        const std::vector<hub::OrderedJson>& log_history,
                                        int world_size, const ModelCardOptions& options,
                                        const std::vector<std::string>& existing_tags);

absl::StatusOr<std::vector<std::string>> ExistingCardTags(const std::string& readme_text);

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_MODEL_CARD_H_
