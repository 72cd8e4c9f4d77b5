#include "examples/translation/run_translation.h"

#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "args/serialize.h"
#include "args/training_args.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "data/collator.h"
#include "data/seq2seq_collator.h"
#include "examples/script_resume.h"
#include "examples/script_setup.h"
#include "examples/translation/arguments.h"
#include "examples/translation/preprocess.h"
#include "examples/translation/synthetic_task.h"
#include "examples/translation/translation_data.h"
#include "glog/logging.h"
#include "models/t5/pretrained.h"
#include "models/t5/t5_for_conditional_generation.h"
#include "runtime/parallel_context.h"
#include "text/t5_tokenizer.h"
#include "trainer/seq2seq_trainer.h"

namespace loom::examples::translation {
namespace {

using models::t5::T5Config;
using models::t5::T5ForConditionalGeneration;
using trainer::Metrics;
using trainer::PredictionOutput;
using trainer::ResumeFrom;
using trainer::Seq2SeqTrainer;

// The splits as read from the files (HF's raw_datasets).
struct RawSplits {
  std::vector<TranslationPair> train, validation, test;
};

struct Loaded {
  std::shared_ptr<text::T5Tokenizer> tokenizer;
  std::shared_ptr<T5ForConditionalGeneration> model;
};

struct TokenizedSplits {
  std::shared_ptr<const data::Dataset> train, eval, predict;
};

// Stage 1: the embedded demo's defaults, the script's argument checks and
// TrainingArguments.__post_init__. Returns whether this is the embedded demo.
absl::StatusOr<bool> ResolveArguments(const ModelArguments& m, DataTrainingArguments* d,
                                      args::TrainingArguments* t) {
  const bool embedded = IsEmbeddedDemo(m, *d);
  if (embedded) {
    AnnounceEmbeddedDemo("run_translation",
                         "a tiny T5 trained from scratch on a generated English -> Romanian task",
                         ApplyEmbeddedDefaults(d, t),
                         "pass --model_name_or_path DIR --train_file/--validation_file FILE.json "
                         "--source_lang en --target_lang ro to fine-tune on real data");
    const std::string dir = t->output_dir() + "/synthetic_data";
    d->set_train_file(dir + "/train.json");
    d->set_validation_file(dir + "/validation.json");
    d->set_test_file(dir + "/test.json");
  }
  RETURN_IF_ERROR(CheckModelArgumentPaths(m));
  RETURN_IF_ERROR(ValidateArguments(m, d, *t));
  ASSIGN_OR_RETURN(std::vector<std::string> warnings, args::PostInit(t));
  for (const std::string& w : warnings) LOG(WARNING) << w;
  return embedded;
}

// Stage 3: the demo's generated files (each node's local main process writes them first), then
// every file given (HF's load_dataset("json", data_files=...)).
absl::StatusOr<RawSplits> LoadRunData(bool embedded, const DataTrainingArguments& d,
                                      runtime::ParallelContext* parallel) {
  if (embedded) {
    RETURN_IF_ERROR(parallel->MainProcessFirst(/*local=*/true, [&]() -> absl::Status {
      if (!parallel->is_local_zero()) return absl::OkStatus();
      const SyntheticTranslation data = MakeSyntheticTranslation();
      const std::string dir = std::filesystem::path(d.train_file()).parent_path().string();
      RETURN_IF_ERROR(WriteTranslationJsonLines(dir, data));
      std::cout << "run_translation: wrote " << data.train.size() << " training, "
                << data.validation.size() << " validation and " << data.test.size()
                << " test pairs (WMT16 JSON Lines) to " << dir << "/{train,validation,test}.json\n"
                << std::flush;
      return absl::OkStatus();
    }));
  }
  RawSplits raw;
  const std::string& src = d.source_lang();
  const std::string& tgt = d.target_lang();
  if (d.has_train_file()) {
    ASSIGN_OR_RETURN(raw.train, ReadTranslationFile(d.train_file(), "--train_file", src, tgt));
  }
  if (d.has_validation_file()) {
    ASSIGN_OR_RETURN(raw.validation,
                     ReadTranslationFile(d.validation_file(), "--validation_file", src, tgt));
  }
  if (d.has_test_file()) {
    ASSIGN_OR_RETURN(raw.test, ReadTranslationFile(d.test_file(), "--test_file", src, tgt));
  }
  return raw;
}

// The tokenizer: --tokenizer_name, the model's folder, or (no model) a SentencePiece model
// trained on what the model will read: the prefixed sources and the targets.
absl::StatusOr<text::T5Tokenizer> LoadTokenizer(const ModelArguments& m,
                                                const DataTrainingArguments& d,
                                                const RawSplits& raw) {
  if (m.has_tokenizer_name() || m.has_model_name_or_path()) {
    const std::string dir = m.has_tokenizer_name() ? m.tokenizer_name() : m.model_name_or_path();
    return text::T5Tokenizer::FromPretrained(dir);
  }
  std::vector<std::string> corpus;
  for (const TranslationPair& p : raw.train) {
    corpus.push_back(d.source_prefix() + p.source);
    corpus.push_back(p.target);
  }
  return BuiltinTokenizer(corpus);
}

absl::StatusOr<T5Config> ReadConfig(const std::string& name) {
  const bool dir = std::filesystem::is_directory(std::filesystem::path(name));
  return T5Config::FromFile(dir ? name + "/config.json" : name);
}

// AutoModelForSeq2SeqLM.from_pretrained, or the tiny T5 from scratch.
absl::StatusOr<std::shared_ptr<T5ForConditionalGeneration>> LoadModel(
    const ModelArguments& m, const text::T5Tokenizer& tokenizer, uint64_t seed) {
  if (m.has_model_name_or_path()) {
    if (m.has_config_name()) {
      return absl::UnimplementedError(
          "--config_name with --model_name_or_path: loading weights into another config is not "
          "implemented; edit config.json in a copy of the model folder instead");
    }
    ASSIGN_OR_RETURN(models::t5::LoadedT5 loaded,
                     models::t5::LoadT5ForConditionalGeneration(m.model_name_or_path(),
                                                                {.seed = seed}));
    if (std::string r = loaded.Report(); !r.empty()) LOG(WARNING) << r;
    return loaded.model;
  }
  T5Config config = BuiltinT5Config(tokenizer.size());
  if (m.has_config_name()) {
    ASSIGN_OR_RETURN(config, ReadConfig(m.config_name()), "--config_name");
  }
  LOG(WARNING) << "No --model_name_or_path: training a T5 (" << config.num_layers << "+"
               << config.DecoderLayers() << " blocks, d_model " << config.d_model
               << ", vocabulary " << config.vocab_size
               << ") from scratch, with a SentencePiece model trained on the training file.";
  return T5ForConditionalGeneration::Create(config, seed);
}

// Stage 4: tokenizer and model, with run_translation's checks of the pair.
absl::StatusOr<Loaded> LoadModelAndTokenizer(const ModelArguments& m,
                                             const DataTrainingArguments& d,
                                             const args::TrainingArguments& t,
                                             const RawSplits& raw) {
  ASSIGN_OR_RETURN(text::T5Tokenizer tokenizer, LoadTokenizer(m, d, raw));
  Loaded loaded;
  loaded.tokenizer = std::make_shared<text::T5Tokenizer>(std::move(tokenizer));
  ASSIGN_OR_RETURN(loaded.model,
                   LoadModel(m, *loaded.tokenizer, static_cast<uint64_t>(t.seed())));
  const T5Config& config = loaded.model->config();
  if (loaded.tokenizer->size() > config.vocab_size) {
    return absl::UnimplementedError(absl::StrCat(
        "the tokenizer has ", loaded.tokenizer->size(), " tokens but the model's embedding only ",
        config.vocab_size, " rows; resize_token_embeddings is not implemented: use the model's "
        "own tokenizer"));
  }
  if (!config.decoder_start_token_id.has_value()) {
    return absl::InvalidArgumentError(
        "Make sure that `config.decoder_start_token_id` is correctly defined (set "
        "decoder_start_token_id in the model's config.json; T5 uses the pad id, 0)");
  }
  return loaded;
}

// Stage 5: the splits the run uses, tokenized (max_target_length for training, then
// val_max_target_length, as HF's script switches it).
absl::StatusOr<TokenizedSplits> TokenizeSplits(const DataTrainingArguments& d,
                                               const args::TrainingArguments& t,
                                               const RawSplits& raw,
                                               const text::T5Tokenizer& tokenizer) {
  TokenizePairsOptions o;
  o.prefix = d.source_prefix();
  o.max_source_length = d.max_source_length();
  o.pad_to_max_length = d.pad_to_max_length();
  o.ignore_pad_token_for_loss = d.ignore_pad_token_for_loss();
  TokenizedSplits splits;
  if (t.do_train()) {
    o.path = d.train_file();
    o.max_target_length = d.max_target_length();
    o.max_examples = d.has_max_train_samples() ? d.max_train_samples() : -1;
    ASSIGN_OR_RETURN(splits.train, TokenizePairs(tokenizer, raw.train, o));
  }
  o.max_target_length = d.val_max_target_length();
  if (t.do_eval()) {
    o.path = d.validation_file();
    o.max_examples = d.has_max_eval_samples() ? d.max_eval_samples() : -1;
    ASSIGN_OR_RETURN(splits.eval, TokenizePairs(tokenizer, raw.validation, o));
  }
  if (t.do_predict()) {
    o.path = d.test_file();
    o.max_examples = d.has_max_predict_samples() ? d.max_predict_samples() : -1;
    ASSIGN_OR_RETURN(splits.predict, TokenizePairs(tokenizer, raw.test, o));
  }
  return splits;
}

// generate's settings for evaluate / predict: --generation_max_length, else
// --val_max_target_length; --num_beams (whose default, 1, always wins over
// --generation_num_beams, as in HF's script).
nlohmann::json GenKwargs(const DataTrainingArguments& d, const args::TrainingArguments& t) {
  return {{"max_length", t.has_generation_max_length() ? t.generation_max_length()
                                                       : d.val_max_target_length()},
          {"num_beams", d.num_beams()}};
}

// Stage 6: the Seq2SeqTrainer with run_translation's collator and compute_metrics, its
// generation settings checked before any training.
absl::StatusOr<std::unique_ptr<Seq2SeqTrainer>> BuildTrainer(
    const DataTrainingArguments& d, const args::TrainingArguments& t, const Loaded& loaded,
    const TokenizedSplits& splits, const runtime::ParallelContext& parallel) {
  trainer::TrainerOptions options;
  options.train_dataset = splits.train;
  options.eval_dataset = splits.eval;
  options.model = loaded.model;
  options.args = t;
  options.save_tokenizer = [tokenizer = loaded.tokenizer](const std::string& dir) {
    return tokenizer->SavePretrained(dir);
  };
  options.tokenizer_pad_token_id = loaded.tokenizer->pad_token_id();
  options.process_group = parallel.process_group();
  if (t.predict_with_generate()) {
    options.compute_metrics = TranslationComputeMetrics(*loaded.tokenizer);
  }
  if (d.pad_to_max_length()) {
    options.data_collator = std::make_shared<data::DefaultCollator>();
  } else {
    data::Seq2SeqCollatorOptions c;
    c.pad_token_id = loaded.tokenizer->pad_token_id();
    c.label_pad_token_id = d.ignore_pad_token_for_loss() ? -100 : loaded.tokenizer->pad_token_id();
    if (t.fp16()) c.pad_to_multiple_of = 8;
    c.decoder_input_ids_from_labels = [body = loaded.model->body](const at::Tensor& labels) {
      return body->ShiftRight(labels);
    };
    options.data_collator = std::make_shared<data::Seq2SeqCollator>(std::move(c));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Seq2SeqTrainer> trainer,
                   Seq2SeqTrainer::Create(std::move(options)));
  RETURN_IF_ERROR_CTX(trainer->CheckGenKwargs(GenKwargs(d, t)),
                      "--num_beams / --val_max_target_length with the model's generation_config");
  return trainer;
}

// The demo only: the untrained model's BLEU, so the trained one has something to beat.
absl::Status EvaluateUntrained(Seq2SeqTrainer& trainer, const DataTrainingArguments& d,
                               const args::TrainingArguments& t, const TokenizedSplits& splits) {
  ASSIGN_OR_RETURN(Metrics before, trainer.EvaluateWithGeneration(splits.eval, {}, "untrained",
                                                                  GenKwargs(d, t)));
  std::cout << "run_translation: untrained model: BLEU " << before.value("untrained_bleu", 0.0)
            << ", gen_len " << before.value("untrained_gen_len", 0.0) << "\n"
            << std::flush;
  return absl::OkStatus();
}

// Stage 8: evaluate with generation.
absl::Status Evaluate(Seq2SeqTrainer& trainer, const DataTrainingArguments& d,
                      const args::TrainingArguments& t, const TokenizedSplits& splits) {
  LOG(INFO) << "*** Evaluate ***";
  ASSIGN_OR_RETURN(Metrics metrics,
                   trainer.EvaluateWithGeneration(splits.eval, {}, "eval", GenKwargs(d, t)));
  metrics["eval_samples"] = splits.eval->Size();
  trainer.LogMetrics("eval", metrics);
  return trainer.SaveMetrics("eval", metrics);
}

// Stage 9: predict; the main process writes generated_predictions.txt.
absl::Status Predict(Seq2SeqTrainer& trainer, const DataTrainingArguments& d,
                     const args::TrainingArguments& t, const TokenizedSplits& splits,
                     const text::T5Tokenizer& tokenizer) {
  LOG(INFO) << "*** Predict ***";
  ASSIGN_OR_RETURN(PredictionOutput out, trainer.PredictWithGeneration(splits.predict, {},
                                                                       "predict", GenKwargs(d, t)));
  Metrics metrics = out.metrics;
  metrics["predict_samples"] = splits.predict->Size();
  trainer.LogMetrics("predict", metrics);
  RETURN_IF_ERROR(trainer.SaveMetrics("predict", metrics));
  if (!trainer.is_world_process_zero() || !t.predict_with_generate()) return absl::OkStatus();
  if (out.predictions.empty()) return absl::InternalError("prediction returned no tokens");
  ASSIGN_OR_RETURN(std::string text, GeneratedPredictionsText(tokenizer, out.predictions.front()));
  return base::WriteFileAtomically(t.output_dir() + "/generated_predictions.txt", text);
}

// Stage 10: HF's model card arguments, then push_to_hub or just the card.
absl::Status FinishRun(Seq2SeqTrainer& trainer, const ModelArguments& m,
                       const DataTrainingArguments& d, const args::TrainingArguments& t) {
  trainer::ModelCardOptions card;
  if (m.has_model_name_or_path()) card.finetuned_from = m.model_name_or_path();
  card.tasks = {"translation"};
  card.language = {d.source_lang(), d.target_lang()};
  if (t.push_to_hub()) return trainer.PushToHub("End of training", /*blocking=*/true, card);
  return trainer.CreateModelCard(card);
}

}  // namespace

bool IsEmbeddedDemo(const ModelArguments& m, const DataTrainingArguments& d) {
  return !m.has_model_name_or_path() && !d.has_train_file() && !d.has_validation_file() &&
         !d.has_test_file() && !d.has_dataset_name();
}

std::vector<std::string> ApplyEmbeddedDefaults(DataTrainingArguments* d,
                                               args::TrainingArguments* t) {
  std::vector<std::string> chosen;
  auto choose = [&](bool unset, const std::function<void()>& set, const std::string& line) {
    if (!unset) return;
    set();
    chosen.push_back(line);
  };
  choose(!t->has_output_dir(), [&] { t->set_output_dir(kEmbeddedOutputDir); },
         absl::StrCat("--output_dir ", kEmbeddedOutputDir, " (no --output_dir given)"));
  choose(!t->has_do_train() && !t->has_do_eval() && !t->has_do_predict(),
         [&] {
           t->set_do_train(true);
           t->set_do_eval(true);
           t->set_do_predict(true);
         },
         "--do_train --do_eval --do_predict");
  choose(!t->has_predict_with_generate(), [&] { t->set_predict_with_generate(true); },
         "--predict_with_generate (BLEU from generated translations)");
  choose(!t->has_overwrite_output_dir(), [&] { t->set_overwrite_output_dir(true); },
         "--overwrite_output_dir (reruns start over)");
  choose(!d->has_source_lang(), [&] { d->set_source_lang("en"); }, "--source_lang en");
  choose(!d->has_target_lang(), [&] { d->set_target_lang("ro"); }, "--target_lang ro");
  choose(!d->has_source_prefix(),
         [&] { d->set_source_prefix("translate English to Romanian: "); },
         "--source_prefix 'translate English to Romanian: '");
  choose(!d->has_max_source_length(), [&] { d->set_max_source_length(64); },
         "--max_source_length 64 --max_target_length 32 (the sentences are short)");
  if (!d->has_max_target_length()) d->set_max_target_length(32);
  choose(!t->has_learning_rate(), [&] { t->set_learning_rate(3e-3); }, "--learning_rate 3e-3");
  choose(!t->has_num_train_epochs(), [&] { t->set_num_train_epochs(12); },
         "--num_train_epochs 12");
  choose(!t->has_per_device_train_batch_size(), [&] { t->set_per_device_train_batch_size(32); },
         "--per_device_train_batch_size 32 --per_device_eval_batch_size 50");
  if (!t->has_per_device_eval_batch_size()) t->set_per_device_eval_batch_size(50);
  choose(!t->has_warmup_ratio(), [&] { t->set_warmup_ratio(0.05); }, "--warmup_ratio 0.05");
  choose(!t->has_logging_steps(), [&] { t->set_logging_steps(100); }, "--logging_steps 100");
  choose(!t->has_save_strategy(), [&] { t->set_save_strategy("no"); },
         "--save_strategy no (the final model is still saved)");
  return chosen;
}

absl::Status RunTranslation(const ModelArguments& m, DataTrainingArguments d,
                            args::TrainingArguments t) {
  ASSIGN_OR_RETURN(const bool embedded, ResolveArguments(m, &d, &t));
  RETURN_IF_ERROR(SetUpScriptRun(t, args::ToDict(m), args::ToDict(d)));
  ASSIGN_OR_RETURN(runtime::ParallelContext parallel,
                   runtime::ParallelContext::Create(std::nullopt, t), "joining the process group");
  ASSIGN_OR_RETURN(std::optional<ResumeFrom> resume, ResumeFromArgs(t));
  RETURN_IF_ERROR(parallel.Barrier());

  ASSIGN_OR_RETURN(const RawSplits raw, LoadRunData(embedded, d, &parallel));
  ASSIGN_OR_RETURN(const Loaded loaded, LoadModelAndTokenizer(m, d, t, raw));
  ASSIGN_OR_RETURN(const TokenizedSplits splits, TokenizeSplits(d, t, raw, *loaded.tokenizer));
  ASSIGN_OR_RETURN(std::unique_ptr<Seq2SeqTrainer> trainer,
                   BuildTrainer(d, t, loaded, splits, parallel));

  if (embedded && t.do_train() && t.do_eval() && t.predict_with_generate()) {
    RETURN_IF_ERROR(EvaluateUntrained(*trainer, d, t, splits));
  }
  if (t.do_train()) RETURN_IF_ERROR(TrainAndSave(*trainer, resume, splits.train->Size()));
  if (t.do_eval()) RETURN_IF_ERROR(Evaluate(*trainer, d, t, splits));
  if (t.do_predict()) RETURN_IF_ERROR(Predict(*trainer, d, t, splits, *loaded.tokenizer));
  return FinishRun(*trainer, m, d, t);
}

}  // namespace loom::examples::translation
