#include "examples/tutorial_setup.h"

#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <set>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "accelerate/prepared.h"
#include "args/parser.h"
#include "base/file_util.h"
#include "base/error_line.h"
#include "base/status_macros.h"
#include "checkpoint/model_weights.h"
#include "checkpoint/module_state.h"
#include "examples/glue/preprocess.h"
#include "examples/glue/synthetic_task.h"
#include "glog/logging.h"
#include "logging/process_logging.h"
#include "glue/data_files.h"
#include "glue/tasks.h"
#include "models/bert/pretrained.h"

namespace loom::examples {
namespace {

namespace fs = std::filesystem;
namespace glue_script = examples::glue_script;

absl::StatusOr<text::BertTokenizer> Tokenizer(const ExampleFlags& flags) {
  if (flags.model_dir.empty()) return glue_script::BuiltinTokenizer();
  return text::BertTokenizer::FromPretrained(flags.model_dir);
}

template <typename T>
absl::Status Number(const std::string& flag, const std::string& text, T* out) {
  if (!absl::SimpleAtoi(text, out)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": '", text, "' is not a number"));
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// One flag of the examples: its name, the value it takes ("" for a switch), its help, and how it
// is stored.
struct FlagSpec {
  const char* name;
  const char* value;
  const char* help;
  std::function<absl::Status(const std::string& flag, const std::string& v, ExampleFlags&)> set;
};

template <typename T>
std::function<absl::Status(const std::string&, const std::string&, ExampleFlags&)> NumberInto(
    T ExampleFlags::*field) {
  return [field](const std::string& flag, const std::string& v, ExampleFlags& f) {
    return Number(flag, v, &(f.*field));
  };
}

std::function<absl::Status(const std::string&, const std::string&, ExampleFlags&)> TextInto(
    std::string ExampleFlags::*field) {
  return [field](const std::string&, const std::string& v, ExampleFlags& f) {
    f.*field = v;
    return absl::OkStatus();
  };
}

const std::vector<FlagSpec>& FlagSpecs() {
  static const auto* specs = new std::vector<FlagSpec>{
      {"--model_dir", "DIR", "a BERT folder to fine-tune (default: the built-in tiny BERT)",
       TextInto(&ExampleFlags::model_dir)},
      {"--data_dir", "DIR", "GLUE SST-2 .tsv files, generated there when missing",
       TextInto(&ExampleFlags::data_dir)},
      {"--output_dir", "DIR", "where the weights, predictions and checkpoints go",
       TextInto(&ExampleFlags::output_dir)},
      {"--batch_size", "N", "per-process batch size (8)", NumberInto(&ExampleFlags::batch_size)},
      {"--num_epochs", "N", "epochs (3)", NumberInto(&ExampleFlags::num_epochs)},
      {"--learning_rate", "LR",
       "AdamW's learning rate (2e-5 with --model_dir, as HF's example; 1e-3 for the built-in "
       "BERT trained from scratch)",
       [](const std::string& flag, const std::string& v, ExampleFlags& f) -> absl::Status {
         double lr = 0;
         if (!absl::SimpleAtod(v, &lr) || !(lr > 0)) {
           return absl::InvalidArgumentError(absl::StrCat(flag, ": '", v, "' is not a positive number"));
         }
         f.learning_rate = lr;
         return absl::OkStatus();
       }},
      {"--max_train_samples", "N", "use the first N training examples",
       NumberInto(&ExampleFlags::max_train_samples)},
      {"--max_eval_samples", "N", "use the first N evaluation examples",
       NumberInto(&ExampleFlags::max_eval_samples)},
      {"--seed", "N", "random seed (42)", NumberInto(&ExampleFlags::seed)},
      {"--gradient_accumulation_steps", "N", "micro-batches per optimizer step (1)",
       NumberInto(&ExampleFlags::gradient_accumulation_steps)},
      {"--mixed_precision", "no|bf16|fp16", "mixed precision (default: the launcher's)",
       [](const std::string&, const std::string& v, ExampleFlags& f) {
         f.mixed_precision = v;
         return absl::OkStatus();
       }},
      {"--checkpointing_steps", "N", "SaveState every N steps (0: never)",
       NumberInto(&ExampleFlags::checkpointing_steps)},
      {"--resume_from_checkpoint", "DIR", "LoadState from a SaveState folder first",
       TextInto(&ExampleFlags::resume_from_checkpoint)},
      {"--stop_after_steps", "N", "stop after N steps (0: never)",
       NumberInto(&ExampleFlags::stop_after_steps)},
      {"--num_warmup_steps", "N", "linear warm-up steps (10)",
       NumberInto(&ExampleFlags::num_warmup_steps)},
      {"--with_tracking", "", "log loss and accuracy to the trackers",
       [](const std::string&, const std::string&, ExampleFlags& f) {
         f.with_tracking = true;
         return absl::OkStatus();
       }},
      {"--help", "", "print this help and exit",
       [](const std::string&, const std::string&, ExampleFlags& f) {
         f.help = true;
         return absl::OkStatus();
       }},
  };
  return *specs;
}

// What //tools:launch adds to a program's arguments from an accelerate config
// (args::ImpliedTrainingArgumentsFlags, for HF Trainer scripts): the examples' Accelerator reads
// those settings from the launcher's environment instead, so they are skipped with a warning.
bool IsLauncherFlag(const std::string& flag, bool* takes_value) {
  static const std::set<std::string> kSwitches = {"--bf16", "--fp16", "--use_cpu"};
  static const std::set<std::string> kValued = {"--fsdp", "--fsdp_config", "--deepspeed",
                                                "--max_grad_norm"};
  *takes_value = kValued.count(flag) > 0;
  return kSwitches.count(flag) > 0 || *takes_value;
}

absl::Status UnknownFlag(const std::string& flag) {
  std::vector<std::string> names;
  for (const FlagSpec& spec : FlagSpecs()) names.push_back(spec.name);
  const std::string best = args::ClosestName(flag, names);
  return absl::InvalidArgumentError(
      absl::StrCat("unrecognized argument ", flag,
                   best.empty() ? "" : absl::StrCat("; did you mean ", best, "?"),
                   " (--help lists the flags)"));
}

}  // namespace

std::string ExampleUsage(const std::string& program) {
  std::string out = absl::StrCat("usage: ", program, " [--flag VALUE ...]\n\nflags:\n");
  for (const FlagSpec& spec : FlagSpecs()) {
    const std::string left = absl::StrCat("  ", spec.name, *spec.value ? " " : "", spec.value);
    absl::StrAppend(&out, left, std::string(left.size() < 34 ? 34 - left.size() : 1, ' '),
                    spec.help, "\n");
  }
  absl::StrAppend(&out,
                  "\n--bf16, --fp16, --use_cpu, --fsdp, --fsdp_config, --deepspeed and "
                  "--max_grad_norm (what //tools:launch adds from an accelerate config) are "
                  "skipped with a warning: the Accelerator reads the launcher's environment.\n");
  return out;
}

int ExampleMain(int argc, char** argv,
                const std::function<absl::Status(const ExampleFlags&)>& run) {
  logging::InitProcessLogging(argv[0]);
  const std::string program = fs::path(argv[0]).filename().string();
  absl::StatusOr<ExampleFlags> flags = ParseExampleFlags(argc, argv);
  if (flags.ok() && flags->help) {
    std::cout << ExampleUsage(program);
    return 0;
  }
  const absl::Status status = flags.ok() ? run(*flags) : flags.status();
  if (status.ok()) return 0;
  base::PrintErrorLine(program, status.message());
  return absl::IsInvalidArgument(status) || absl::IsNotFound(status) ? 2 : 1;
}

double LearningRate(const ExampleFlags& flags) {
  if (flags.learning_rate) return *flags.learning_rate;
  return flags.model_dir.empty() ? 1e-3 : 2e-5;
}

absl::StatusOr<ExampleFlags> ParseExampleFlags(int argc, char** argv) {
  ExampleFlags f;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    const size_t eq = flag.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    const auto spec = std::find_if(FlagSpecs().begin(), FlagSpecs().end(),
                                   [&](const FlagSpec& s) { return flag == s.name; });
    if (spec == FlagSpecs().end()) {
      bool takes_value = false;
      if (!IsLauncherFlag(flag, &takes_value)) return UnknownFlag(flag);
      if (takes_value && !inline_value && i + 1 < argc) ++i;  // the value is skipped, not shown
      LOG(WARNING) << "ignoring " << flag
                   << " (an accelerate config's setting: the Accelerator takes it from the "
                      "launcher's environment)";
      continue;
    }
    if (*spec->value && !inline_value) {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      value = argv[++i];
    }
    RETURN_IF_ERROR(spec->set(flag, value, f));
  }
  if (f.batch_size < 1 || f.num_epochs < 1 || f.gradient_accumulation_steps < 1) {
    return absl::InvalidArgumentError(
        "--batch_size, --num_epochs and --gradient_accumulation_steps must be >= 1");
  }
  return f;
}

absl::StatusOr<ExampleData> LoadExampleData(const ExampleFlags& flags) {
  ASSIGN_OR_RETURN(const glue::GlueTask* task, glue::FindGlueTask("sst2"));
  std::error_code ec;
  if (!fs::exists(fs::path(flags.data_dir) / "train.tsv", ec) ||
      !fs::exists(fs::path(flags.data_dir) / "dev.tsv", ec) ||
      !fs::exists(fs::path(flags.data_dir) / "test.tsv", ec)) {
    // The demo data (GLUE's SST-2 layout), written atomically: every rank may do it.
    RETURN_IF_ERROR(base::MakeDirs(flags.data_dir));
    RETURN_IF_ERROR(glue_script::WriteSst2Tsv(flags.data_dir, glue_script::MakeSyntheticSst2()));
  }
  ASSIGN_OR_RETURN(glue::GlueData data,
                   glue::LoadGlueTaskData(*task, flags.data_dir,
                                          {.train = true, .validation = true}),
                   "--data_dir");
  ASSIGN_OR_RETURN(text::BertTokenizer tokenizer, Tokenizer(flags), "--model_dir");
  ExampleData out;
  glue_script::TokenizeOptions options;
  options.pad_to_max_length = false;
  options.max_examples = flags.max_train_samples;
  ASSIGN_OR_RETURN(out.train, glue_script::TokenizeSplit(tokenizer, *data.FindSplit("train"),
                                                         options));
  options.max_examples = flags.max_eval_samples;
  ASSIGN_OR_RETURN(out.eval, glue_script::TokenizeSplit(tokenizer,
                                                        *data.FindSplit("validation"), options));
  out.collator = std::make_shared<data::PaddingCollator>(
      data::PaddingCollatorOptions().set_pad_token_id(tokenizer.pad_token_id()));
  return out;
}

absl::StatusOr<std::shared_ptr<modeling::Model>> LoadExampleModel(const ExampleFlags& flags,
                                                                  int num_labels) {
  if (!flags.model_dir.empty()) {
    models::bert::BertLoadOptions options;
    options.num_labels = num_labels;
    options.seed = flags.seed;
    ASSIGN_OR_RETURN(models::bert::LoadedBert loaded,
                     models::bert::LoadBertForSequenceClassification(flags.model_dir, options),
                     "--model_dir");
    if (std::string r = loaded.Report(); !r.empty()) LOG(WARNING) << r;
    return std::shared_ptr<modeling::Model>(loaded.model);
  }
  ASSIGN_OR_RETURN(text::BertTokenizer tokenizer, glue_script::BuiltinTokenizer());
  models::bert::BertConfig config = glue_script::BuiltinBertConfig(tokenizer.vocab().size());
  config.set_num_labels(num_labels);
  ASSIGN_OR_RETURN(std::shared_ptr<models::bert::BertForSequenceClassification> model,
                   models::bert::BertForSequenceClassification::Create(config, flags.seed));
  return std::shared_ptr<modeling::Model>(model);
}

bool IsMainProcess() {
  const char* rank = std::getenv("RANK");
  return rank == nullptr || std::string(rank) == "0";
}

absl::StatusOr<double> EvaluateAccuracy(modeling::Model& model, data::DataLoader& eval_dataloader,
                                        accelerate::Accelerator* accelerator) {
  model.eval();
  torch::NoGradGuard no_grad;
  const auto params = model.parameters();
  const at::Device device = params.empty() ? at::Device(at::kCPU) : params.front().device();
  ASSIGN_OR_RETURN(std::unique_ptr<data::BatchIterator> batches, eval_dataloader.Epoch(0),
                   "evaluation");
  int64_t correct = 0, total = 0;
  while (true) {
    ASSIGN_OR_RETURN(std::optional<data::Batch> batch, batches->Next(), "evaluation");
    if (!batch) break;
    for (auto& [name, tensor] : *batch) tensor = tensor.to(device);
    at::Tensor predictions = model.Forward(*batch).Get("logits").argmax(-1);
    at::Tensor references = batch->at("labels");
    if (accelerator != nullptr) {
      ASSIGN_OR_RETURN(predictions, accelerator->GatherForMetrics(predictions));
      ASSIGN_OR_RETURN(references, accelerator->GatherForMetrics(references));
    }
    correct += predictions.eq(references).sum().item<int64_t>();
    total += references.numel();
  }
  return total > 0 ? static_cast<double>(correct) / total : 0.0;
}

void PrintEpochMetrics(int epoch, double train_loss, double accuracy) {
  if (!IsMainProcess()) return;
  std::cout << "epoch " << epoch << ": {'train_loss': " << train_loss
            << ", 'eval_accuracy': " << accuracy << "}" << std::endl;
}

absl::Status SaveForComparison(const ExampleFlags& flags,
                               const std::shared_ptr<modeling::Model>& model) {
  if (flags.output_dir.empty()) return absl::OkStatus();
  const bool writer = IsMainProcess();
  auto save = [&](const modeling::Model& module) -> absl::Status {
    if (!writer) return absl::OkStatus();
    RETURN_IF_ERROR(base::MakeDirs(flags.output_dir));
    return checkpoint::SaveModelWeights(flags.output_dir, checkpoint::ModuleStateDict(module))
        .status();
  };
  if (auto* prepared = dynamic_cast<accelerate::PreparedModel*>(model.get())) {
    // Whole parameters under FSDP (every rank takes part).
    return prepared->WithFullParameters([&] { return save(*prepared->module()); });
  }
  return save(*model);
}

}  // namespace loom::examples
