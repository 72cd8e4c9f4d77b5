#include "examples/clm/run_clm.h"

#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "args/serialize.h"
#include "args/training_args.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "data/collator.h"
#include "examples/clm/arguments.h"
#include "examples/clm/clm_data.h"
#include "examples/clm/preprocess.h"
#include "examples/clm/synthetic_corpus.h"
#include "examples/script_resume.h"
#include "examples/script_setup.h"
#include "glog/logging.h"
#include "models/llama/llama_for_causal_lm.h"
#include "models/llama/pretrained.h"
#include "runtime/parallel_context.h"
#include "text/causal_lm_tokenizer.h"
#include "trainer/trainer.h"

namespace loom::examples::clm {
namespace {

using models::llama::LlamaConfig;
using models::llama::LlamaForCausalLM;
using trainer::Metrics;
using trainer::ResumeFrom;
using trainer::Trainer;

// The texts as read (HF's raw_datasets, after the validation split).
struct RawSplits {
  std::vector<std::string> train, validation;
};

struct Loaded {
  std::shared_ptr<text::CausalLmTokenizer> tokenizer;
  std::shared_ptr<LlamaForCausalLM> model;
};

struct GroupedSplits {
  std::shared_ptr<const data::Dataset> train, eval;
};

// Stage 1: the embedded demo's defaults, the script's argument checks and
// TrainingArguments.__post_init__. Returns whether this is the embedded demo.
absl::StatusOr<bool> ResolveArguments(ModelArguments* m, DataTrainingArguments* d,
                                      args::TrainingArguments* t) {
  const bool embedded = IsEmbeddedDemo(*m, *d);
  if (embedded) {
    AnnounceEmbeddedDemo("run_clm", "a tiny Llama trained from scratch on a generated corpus",
                         ApplyEmbeddedDefaults(m, d, t),
                         "pass --model_name_or_path DIR --train_file FILE.txt (or .json/.csv) "
                         "--validation_file FILE.txt to fine-tune on real data");
    const std::string dir = t->output_dir() + "/synthetic_data";
    d->set_train_file(dir + "/train.txt");
    d->set_validation_file(dir + "/validation.txt");
  }
  RETURN_IF_ERROR(CheckModelArgumentPaths(*m));
  RETURN_IF_ERROR(ValidateArguments(*m, *d, *t, /*builtin_tokenizer=*/embedded));
  ASSIGN_OR_RETURN(std::vector<std::string> warnings, args::PostInit(t));
  for (const std::string& w : warnings) LOG(WARNING) << w;
  return embedded;
}

// Stage 3: the demo's generated files (each node's local main process writes them first), then
// the files given; without a validation file, its split of the training file.
absl::StatusOr<RawSplits> LoadRunData(bool embedded, const DataTrainingArguments& d,
                                      runtime::ParallelContext* parallel) {
  if (embedded) {
    RETURN_IF_ERROR(parallel->MainProcessFirst(/*local=*/true, [&]() -> absl::Status {
      if (!parallel->is_local_zero()) return absl::OkStatus();
      RETURN_IF_ERROR(base::MakeDirs(std::filesystem::path(d.train_file()).parent_path().string()));
      RETURN_IF_ERROR(WriteCorpus(d.train_file(), MakeSyntheticCorpus(3000, 1)));
      RETURN_IF_ERROR(WriteCorpus(d.validation_file(), MakeSyntheticCorpus(300, 2)));
      std::cout << "run_clm: wrote 3000 training and 300 validation lines to "
                << d.train_file() << " and " << d.validation_file() << "\n"
                << std::flush;
      return absl::OkStatus();
    }));
  }
  RawSplits raw;
  if (d.has_train_file()) {
    ASSIGN_OR_RETURN(TextColumn train,
                     ReadTextColumn(d.train_file(), "--train_file", d.keep_linebreaks()));
    raw.train = std::move(train.texts);
  }
  if (d.has_validation_file()) {
    ASSIGN_OR_RETURN(TextColumn validation, ReadTextColumn(d.validation_file(),
                                                           "--validation_file",
                                                           d.keep_linebreaks()));
    raw.validation = std::move(validation.texts);
  } else if (!raw.train.empty()) {
    std::tie(raw.validation, raw.train) = SplitPercent(raw.train, d.validation_split_percentage());
  }
  return raw;
}

absl::StatusOr<LlamaConfig> ReadConfig(const std::string& name) {
  const bool dir = std::filesystem::is_directory(std::filesystem::path(name));
  return LlamaConfig::FromFile(dir ? name + "/config.json" : name);
}

// The config of a model built from scratch: --config_name, else LlamaConfig's defaults with
// --config_overrides (HF: CONFIG_MAPPING[model_type]() + update_from_string).
absl::StatusOr<LlamaConfig> ScratchConfig(const ModelArguments& m) {
  if (m.has_config_name()) return ReadConfig(m.config_name());
  LOG(WARNING) << "You are instantiating a new config instance from scratch.";
  if (!m.has_config_overrides()) return LlamaConfig();
  LOG(INFO) << "Overriding config: " << m.config_overrides();
  ASSIGN_OR_RETURN(nlohmann::json overridden,
                   ApplyConfigOverrides(nlohmann::json::parse(LlamaConfig().ToJson()),
                                        m.config_overrides()));
  return LlamaConfig::FromJson(overridden.dump(), "--config_overrides");
}

// The model is built with its parameters deferred, their values coming from the seed or the
// (memory-mapped) weight files when the Trainer's strategy makes them: one decoder layer at a
// time, each rank keeping its shards, under a strategy that shards parameters (ZeRO-3, FSDP:
// DeepSpeed's zero.Init, FSDP's meta-device loading); whole, with an error naming that fix when
// it does not fit, otherwise (runtime/strategy_setup.h).
absl::StatusOr<std::shared_ptr<LlamaForCausalLM>> LoadModel(const ModelArguments& m,
                                                            const LlamaConfig* builtin,
                                                            uint64_t seed) {
  if (m.has_model_name_or_path()) {
    if (m.has_config_name()) {
      return absl::UnimplementedError(
          "--config_name with --model_name_or_path: loading weights into another config is not "
          "implemented; edit config.json in a copy of the model folder instead");
    }
    ASSIGN_OR_RETURN(models::llama::LoadedLlama loaded,
                     models::llama::LoadLlamaForCausalLM(
                         m.model_name_or_path(), {.seed = seed, .deferred = true}));
    if (std::string r = loaded.Report(); !r.empty()) LOG(WARNING) << r;
    return loaded.model;
  }
  LlamaConfig config;
  if (builtin != nullptr) {
    config = *builtin;
  } else {
    ASSIGN_OR_RETURN(config, ScratchConfig(m));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<LlamaForCausalLM> model,
                   LlamaForCausalLM::CreateDeferred(config, seed));
  int64_t params = 0;
  for (const at::Tensor& p : model->parameters()) params += p.numel();
  LOG(INFO) << absl::StrFormat("Training new model from scratch - Total size=%.2fM params",
                               static_cast<double>(params) / (1 << 20));
  return model;
}

// Stage 4: tokenizer and model (the demo's: trained on the training texts, sized to them).
absl::StatusOr<Loaded> LoadModelAndTokenizer(const ModelArguments& m, bool embedded,
                                             const args::TrainingArguments& t,
                                             const RawSplits& raw) {
  Loaded loaded;
  if (embedded) {
    ASSIGN_OR_RETURN(text::LlamaTokenizer tok, BuiltinTokenizer(raw.train));
    loaded.tokenizer = std::make_shared<text::CausalLmTokenizer>(std::move(tok));
  } else {
    const std::string dir = m.has_tokenizer_name() ? m.tokenizer_name() : m.model_name_or_path();
    ASSIGN_OR_RETURN(text::CausalLmTokenizer tok, text::CausalLmTokenizer::FromPretrained(dir),
                     m.has_tokenizer_name() ? "--tokenizer_name" : "--model_name_or_path");
    loaded.tokenizer = std::make_shared<text::CausalLmTokenizer>(std::move(tok));
  }
  const LlamaConfig builtin = BuiltinLlamaConfig(loaded.tokenizer->size());
  ASSIGN_OR_RETURN(loaded.model, LoadModel(m, embedded ? &builtin : nullptr,
                                           static_cast<uint64_t>(t.seed())));
  if (loaded.tokenizer->size() > loaded.model->config().vocab_size) {
    return absl::UnimplementedError(absl::StrCat(
        "the tokenizer has ", loaded.tokenizer->size(), " tokens but the model's embedding only ",
        loaded.model->config().vocab_size, " rows; resize_token_embeddings is not implemented: "
        "use the model's own tokenizer or a config with vocab_size >= the tokenizer's"));
  }
  return loaded;
}

// Stage 5: tokenize the splits the run uses and group them into blocks.
absl::StatusOr<GroupedSplits> GroupSplits(const DataTrainingArguments& d,
                                          const args::TrainingArguments& t, const RawSplits& raw,
                                          const Loaded& loaded) {
  const BlockSize block = ResolveBlockSize(
      d.has_block_size() ? std::optional<int64_t>(d.block_size()) : std::nullopt,
      loaded.tokenizer->model_max_length(),
      loaded.model->config().max_position_embeddings);
  for (const std::string& w : block.warnings) LOG(WARNING) << w;
  GroupedSplits splits;
  if (t.do_train()) {
    ASSIGN_OR_RETURN(auto ids, TokenizeTexts(*loaded.tokenizer, raw.train, d.train_file()));
    ASSIGN_OR_RETURN(splits.train,
                     GroupTexts(ids, block.block_size,
                                d.has_max_train_samples() ? d.max_train_samples() : -1,
                                d.train_file()));
  }
  if (t.do_eval()) {
    const std::string source = d.has_validation_file()
                                   ? d.validation_file()
                                   : absl::StrCat(d.train_file(), " (its first ",
                                                  d.validation_split_percentage(), "%)");
    ASSIGN_OR_RETURN(auto ids, TokenizeTexts(*loaded.tokenizer, raw.validation, source));
    ASSIGN_OR_RETURN(splits.eval,
                     GroupTexts(ids, block.block_size,
                                d.has_max_eval_samples() ? d.max_eval_samples() : -1, source));
  }
  return splits;
}

// Stage 6: the Trainer with run_clm's collator (default_data_collator) and metrics.
absl::StatusOr<std::unique_ptr<Trainer>> BuildTrainer(const args::TrainingArguments& t,
                                                      const Loaded& loaded,
                                                      const GroupedSplits& splits,
                                                      const runtime::ParallelContext& parallel) {
  trainer::TrainerOptions options;
  options.train_dataset = splits.train;
  options.eval_dataset = splits.eval;
  options.model = loaded.model;
  options.args = t;
  options.data_collator = std::make_shared<data::DefaultCollator>();
  options.save_tokenizer = [tokenizer = loaded.tokenizer](const std::string& dir) {
    return tokenizer->SavePretrained(dir);
  };
  options.process_group = parallel.process_group();
  if (t.do_eval()) {
    options.compute_metrics = ClmAccuracy();
    options.preprocess_logits_for_metrics = ArgmaxLogits();
  }
  return Trainer::Create(std::move(options));
}

// math.exp(eval_loss), inf on overflow (HF's OverflowError branch).
double Perplexity(const Metrics& metrics, const std::string& loss_key) {
  const double loss = metrics.value(loss_key, std::numeric_limits<double>::quiet_NaN());
  const double p = std::exp(loss);
  return std::isinf(p) ? std::numeric_limits<double>::infinity() : p;
}

// The demo only: the untrained model's perplexity, so the trained one has something to beat.
absl::Status EvaluateUntrained(Trainer& trainer, const GroupedSplits& splits) {
  ASSIGN_OR_RETURN(Metrics before, trainer.Evaluate(splits.eval, {}, "untrained"));
  std::cout << "run_clm: untrained model: perplexity "
            << Perplexity(before, "untrained_loss") << ", accuracy "
            << before.value("untrained_accuracy", 0.0) << "\n"
            << std::flush;
  return absl::OkStatus();
}

// Stage 8: evaluate; perplexity = exp(eval_loss).
absl::Status Evaluate(Trainer& trainer, bool embedded, const GroupedSplits& splits) {
  LOG(INFO) << "*** Evaluate ***";
  ASSIGN_OR_RETURN(Metrics metrics, trainer.Evaluate());
  metrics["eval_samples"] = splits.eval->Size();
  metrics["perplexity"] = Perplexity(metrics, "eval_loss");
  trainer.LogMetrics("eval", metrics);
  if (embedded) {
    std::cout << "run_clm: trained model: perplexity " << metrics["perplexity"].get<double>()
              << ", accuracy " << metrics.value("eval_accuracy", 0.0) << "\n"
              << std::flush;
  }
  return trainer.SaveMetrics("eval", metrics);
}

// Stage 9: HF's model card arguments, then push_to_hub or just the card.
absl::Status FinishRun(Trainer& trainer, const ModelArguments& m,
                       const args::TrainingArguments& t) {
  trainer::ModelCardOptions card;
  if (m.has_model_name_or_path()) card.finetuned_from = m.model_name_or_path();
  card.tasks = {"text-generation"};
  if (t.push_to_hub()) return trainer.PushToHub("End of training", /*blocking=*/true, card);
  return trainer.CreateModelCard(card);
}

}  // namespace

bool IsEmbeddedDemo(const ModelArguments& m, const DataTrainingArguments& d) {
  return !m.has_model_name_or_path() && !m.has_config_name() && !m.has_tokenizer_name() &&
         !d.has_train_file() && !d.has_validation_file() && !d.has_dataset_name();
}

std::vector<std::string> ApplyEmbeddedDefaults(ModelArguments* m, DataTrainingArguments* d,
                                               args::TrainingArguments* t) {
  std::vector<std::string> chosen;
  auto choose = [&](bool unset, const std::function<void()>& set, const std::string& line) {
    if (!unset) return;
    set();
    chosen.push_back(line);
  };
  choose(!m->has_model_type(), [&] { m->set_model_type("llama"); }, "--model_type llama");
  choose(!t->has_output_dir(), [&] { t->set_output_dir(kEmbeddedOutputDir); },
         absl::StrCat("--output_dir ", kEmbeddedOutputDir, " (no --output_dir given)"));
  choose(!t->has_do_train() && !t->has_do_eval() && !t->has_do_predict(),
         [&] {
           t->set_do_train(true);
           t->set_do_eval(true);
         },
         "--do_train --do_eval");
  choose(!t->has_overwrite_output_dir(), [&] { t->set_overwrite_output_dir(true); },
         "--overwrite_output_dir (reruns start over)");
  choose(!d->has_block_size(), [&] { d->set_block_size(64); }, "--block_size 64");
  choose(!t->has_learning_rate(), [&] { t->set_learning_rate(3e-3); }, "--learning_rate 3e-3");
  choose(!t->has_num_train_epochs(), [&] { t->set_num_train_epochs(4); },
         "--num_train_epochs 4");
  choose(!t->has_per_device_train_batch_size(), [&] { t->set_per_device_train_batch_size(16); },
         "--per_device_train_batch_size 16 --per_device_eval_batch_size 32");
  if (!t->has_per_device_eval_batch_size()) t->set_per_device_eval_batch_size(32);
  choose(!t->has_warmup_ratio(), [&] { t->set_warmup_ratio(0.05); }, "--warmup_ratio 0.05");
  choose(!t->has_logging_steps(), [&] { t->set_logging_steps(50); }, "--logging_steps 50");
  choose(!t->has_save_strategy(), [&] { t->set_save_strategy("no"); },
         "--save_strategy no (the final model is still saved)");
  return chosen;
}

absl::Status RunClm(const ModelArguments& model_args, DataTrainingArguments d,
                    args::TrainingArguments t) {
  ModelArguments m = model_args;
  ASSIGN_OR_RETURN(const bool embedded, ResolveArguments(&m, &d, &t));
  RETURN_IF_ERROR(SetUpScriptRun(t, args::ToDict(m), args::ToDict(d)));
  ASSIGN_OR_RETURN(runtime::ParallelContext parallel,
                   runtime::ParallelContext::Create(std::nullopt, t), "joining the process group");
  ASSIGN_OR_RETURN(std::optional<ResumeFrom> resume, ResumeFromArgs(t));
  RETURN_IF_ERROR(parallel.Barrier());

  ASSIGN_OR_RETURN(const RawSplits raw, LoadRunData(embedded, d, &parallel));
  ASSIGN_OR_RETURN(const Loaded loaded, LoadModelAndTokenizer(m, embedded, t, raw));
  ASSIGN_OR_RETURN(const GroupedSplits splits, GroupSplits(d, t, raw, loaded));
  ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, BuildTrainer(t, loaded, splits, parallel));

  if (embedded && t.do_train() && t.do_eval()) {
    RETURN_IF_ERROR(EvaluateUntrained(*trainer, splits));
  }
  if (t.do_train()) RETURN_IF_ERROR(TrainAndSave(*trainer, resume, splits.train->Size()));
  if (t.do_eval()) RETURN_IF_ERROR(Evaluate(*trainer, embedded, splits));
  return FinishRun(*trainer, m, t);
}

}  // namespace loom::examples::clm
