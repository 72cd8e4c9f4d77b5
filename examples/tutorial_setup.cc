#include "examples/tutorial_setup.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "accelerate/prepared.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/model_weights.h"
#include "checkpoint/module_state.h"
#include "examples/glue/preprocess.h"
#include "examples/glue/synthetic_task.h"
#include "glog/logging.h"
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
    auto take = [&]() -> absl::StatusOr<std::string> {
      if (inline_value) return value;
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      return std::string(argv[++i]);
    };
    if (flag == "--with_tracking") {
      f.with_tracking = true;
      continue;
    }
    const bool known = flag == "--model_dir" || flag == "--data_dir" || flag == "--output_dir" ||
                       flag == "--batch_size" || flag == "--num_epochs" ||
                       flag == "--max_train_samples" || flag == "--max_eval_samples" ||
                       flag == "--seed" || flag == "--gradient_accumulation_steps" ||
                       flag == "--mixed_precision" || flag == "--checkpointing_steps" ||
                       flag == "--resume_from_checkpoint" || flag == "--stop_after_steps" ||
                       flag == "--num_warmup_steps";
    if (!known) {
      // What an accelerate config implies for HF scripts (--use_cpu, --fsdp X, ...): the
      // Accelerator reads those settings from the launcher's environment instead. The value
      // is skipped, not shown (it could be a token).
      if (!inline_value && i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) ++i;
      LOG(WARNING) << "ignoring " << flag << " (not a flag of this example)";
      continue;
    }
    ASSIGN_OR_RETURN(std::string v, take());
    if (flag == "--model_dir") f.model_dir = v;
    if (flag == "--data_dir") f.data_dir = v;
    if (flag == "--output_dir") f.output_dir = v;
    if (flag == "--mixed_precision") f.mixed_precision = v;
    if (flag == "--resume_from_checkpoint") f.resume_from_checkpoint = v;
    if (flag == "--batch_size") RETURN_IF_ERROR(Number(flag, v, &f.batch_size));
    if (flag == "--num_epochs") RETURN_IF_ERROR(Number(flag, v, &f.num_epochs));
    if (flag == "--max_train_samples") RETURN_IF_ERROR(Number(flag, v, &f.max_train_samples));
    if (flag == "--max_eval_samples") RETURN_IF_ERROR(Number(flag, v, &f.max_eval_samples));
    if (flag == "--seed") RETURN_IF_ERROR(Number(flag, v, &f.seed));
    if (flag == "--gradient_accumulation_steps") {
      RETURN_IF_ERROR(Number(flag, v, &f.gradient_accumulation_steps));
    }
    if (flag == "--checkpointing_steps") RETURN_IF_ERROR(Number(flag, v, &f.checkpointing_steps));
    if (flag == "--stop_after_steps") RETURN_IF_ERROR(Number(flag, v, &f.stop_after_steps));
    if (flag == "--num_warmup_steps") RETURN_IF_ERROR(Number(flag, v, &f.num_warmup_steps));
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

absl::Status SaveForComparison(const ExampleFlags& flags,
                               const std::shared_ptr<modeling::Model>& model) {
  if (flags.output_dir.empty()) return absl::OkStatus();
  const char* rank = std::getenv("RANK");
  const bool writer = rank == nullptr || std::string(rank) == "0";
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
