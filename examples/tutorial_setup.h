// What the Accelerate examples need besides their training loops (the parts HF's tutorial
// gets from `datasets`, `AutoTokenizer` and `AutoModelForSequenceClassification`): flags, the
// GLUE-format demo data tokenized into datasets, the BERT to fine-tune, and a final save of
// the weights for the tests that compare runs.
//
// Contract:
//   - ParseExampleFlags(argc, argv): --model_dir DIR (a BERT folder; none: the built-in tiny
//     BERT from scratch), --data_dir DIR (GLUE SST-2 .tsv files; generated there when missing,
//     default /tmp/loom_accelerate_example/data), --output_dir DIR (where SaveForComparison
//     writes; none: nothing is saved), --batch_size N (8), --num_epochs N (3), --learning_rate
//     LR (LearningRate: 2e-5 with --model_dir, as HF's examples; 1e-3 for the built-in BERT,
//     which trains from scratch), --max_train_samples N, --max_eval_samples N, --seed N (42),
//     and the nlp_example's --gradient_accumulation_steps N (1), --mixed_precision
//     no|bf16|fp16 (unset: the launcher's), --checkpointing_steps N (0: none),
//     --resume_from_checkpoint DIR, --stop_after_steps N (0: none; the tests' interruption),
//     --num_warmup_steps N (10), --with_tracking, --help (ExampleUsage lists them all). The
//     flags //tools:launch adds from an accelerate config (--bf16, --fp16, --use_cpu, --fsdp X,
//     --fsdp_config X, --deepspeed X, --max_grad_norm X) are warned about and skipped (the
//     Accelerator reads the launcher's environment); any other flag is InvalidArgument
//     ("unrecognized argument --num_epoch; did you mean --num_epochs?"), as is a bad value,
//     naming the flag.
//   - LoadExampleData(flags): train and validation splits as tokenized datasets
//     ("input_ids", "token_type_ids", "attention_mask", "labels"; no padding — the collator
//     pads each batch) and that collator.
//   - LoadExampleModel(flags, num_labels): the BERT, on the CPU.
//   - EvaluateAccuracy(model, eval_dataloader, accelerator): the transformers tutorial's
//     evaluation ("Fine-tune a pretrained model", native PyTorch: model.eval(), the argmax of
//     each batch's logits, evaluate's "accuracy"); batches go to the device of the model's
//     first parameter. With an Accelerator, each batch's predictions and labels are gathered
//     with GatherForMetrics first (accelerate's distributed evaluation), so every process gets
//     the accuracy over the whole evaluation set. Leaves the model in eval mode.
//   - PrintEpochMetrics(epoch, train_loss, accuracy): one line "epoch E: {'train_loss': L,
//     'eval_accuracy': A}" on stdout, from the process whose RANK is 0 (or the only one).
//   - SaveForComparison(flags, model): output_dir/model.safetensors with the model's own
//     parameter names (a model prepared by an Accelerator is unwrapped), written by the
//     process whose RANK is 0 (or the only one).
#ifndef LOOM_EXAMPLES_TUTORIAL_SETUP_H_
#define LOOM_EXAMPLES_TUTORIAL_SETUP_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "accelerate/accelerator.h"
#include "data/collator.h"
#include "data/data_loader.h"
#include "data/dataset.h"
#include "modeling/model.h"

namespace loom::examples {

struct ExampleFlags {
  std::string model_dir;
  std::string data_dir = "/tmp/loom_accelerate_example/data";
  std::string output_dir;
  int64_t batch_size = 8;
  int num_epochs = 3;
  int64_t max_train_samples = -1;
  int64_t max_eval_samples = -1;
  uint64_t seed = 42;
  int gradient_accumulation_steps = 1;
  std::optional<std::string> mixed_precision;
  int64_t checkpointing_steps = 0;
  std::string resume_from_checkpoint;
  int64_t stop_after_steps = 0;
  int64_t num_warmup_steps = 10;
  bool with_tracking = false;
  std::optional<double> learning_rate;
  bool help = false;
};

absl::StatusOr<ExampleFlags> ParseExampleFlags(int argc, char** argv);
std::string ExampleUsage(const std::string& program);

// main() of an example: logging set up, the flags parsed (--help: ExampleUsage, exit 0), then
// `run`; an error is printed as "<program>: error: ..." and exits 2 for bad arguments
// (InvalidArgument, NotFound), 1 otherwise.
int ExampleMain(int argc, char** argv,
                const std::function<absl::Status(const ExampleFlags&)>& run);
double LearningRate(const ExampleFlags& flags);

struct ExampleData {
  std::shared_ptr<const data::Dataset> train;
  std::shared_ptr<const data::Dataset> eval;
  std::shared_ptr<const data::Collator> collator;
};

absl::StatusOr<ExampleData> LoadExampleData(const ExampleFlags& flags);
absl::StatusOr<std::shared_ptr<modeling::Model>> LoadExampleModel(const ExampleFlags& flags,
                                                                  int num_labels);
absl::StatusOr<double> EvaluateAccuracy(modeling::Model& model, data::DataLoader& eval_dataloader,
                                        accelerate::Accelerator* accelerator = nullptr);
void PrintEpochMetrics(int epoch, double train_loss, double accuracy);
absl::Status SaveForComparison(const ExampleFlags& flags,
                               const std::shared_ptr<modeling::Model>& model);

}  // namespace loom::examples

#endif  // LOOM_EXAMPLES_TUTORIAL_SETUP_H_
