#include "examples/glue/run_glue.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "args/fsdp_config.h"
#include "args/serialize.h"
#include "args/training_args.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/model_weights.h"
#include "examples/glue/arguments.h"
#include "examples/glue/hp_search_flags.h"
#include "examples/glue/preprocess.h"
#include "examples/glue/synthetic_task.h"
#include "examples/script_resume.h"
#include "examples/script_setup.h"
#include "glog/logging.h"
#include "glue/data_files.h"
#include "glue/tasks.h"
#include "models/bert/pretrained.h"
#include "runtime/parallel_context.h"
#include "trainer/trainer.h"

namespace loom::examples::glue_script {
namespace {

using models::bert::BertConfig;
using models::bert::BertForSequenceClassification;
using trainer::Metrics;
using trainer::ModelCardOptions;
using trainer::PredictionOutput;
using trainer::ResumeFrom;
using trainer::Trainer;
using trainer::TrainerOptions;

bool IsDirectory(const std::string& path) {
  return std::filesystem::is_directory(std::filesystem::path(path));
}

struct Loaded {
  text::BertTokenizer tokenizer;
  std::shared_ptr<BertForSequenceClassification> model;
};

absl::StatusOr<BertConfig> ReadConfig(const std::string& name) {
  const std::string path = IsDirectory(name) ? name + "/config.json" : name;
  return BertConfig::FromFile(path);
}

// AutoConfig / AutoTokenizer / AutoModelForSequenceClassification.from_pretrained, or the
// built-in tiny BERT when no model is given.
// `skip_weights`: the checkpoint's weights are not read (a rank that receives rank 0's when
// FSDP starts, with cpu_ram_efficient_loading).
absl::StatusOr<Loaded> LoadModelAndTokenizer(const ModelArguments& m,
                                             const DataTrainingArguments& d, int num_labels,
                                             uint64_t seed, bool skip_weights) {
  const bool builtin = !m.has_model_name_or_path();
  std::optional<text::BertTokenizer> tokenizer;
  if (m.has_tokenizer_name() || !builtin) {
    const std::string dir = m.has_tokenizer_name() ? m.tokenizer_name() : m.model_name_or_path();
    ASSIGN_OR_RETURN(tokenizer, text::BertTokenizer::FromPretrained(dir, m.use_fast_tokenizer()));
  } else {
    ASSIGN_OR_RETURN(tokenizer, BuiltinTokenizer());
  }
  BertConfig config;
  if (m.has_config_name() || !builtin) {
    ASSIGN_OR_RETURN(config,
                     ReadConfig(m.has_config_name() ? m.config_name() : m.model_name_or_path()));
  } else {
    config = BuiltinBertConfig(tokenizer->vocab().size());
  }
  config.set_num_labels(num_labels);
  config.finetuning_task =
      d.has_task_name() ? std::optional<std::string>(d.task_name()) : std::nullopt;
  ASSIGN_OR_RETURN(std::shared_ptr<BertForSequenceClassification> model,
                   BertForSequenceClassification::Create(config, seed));
  if (!builtin && skip_weights) {
    LOG(INFO) << "--fsdp_config cpu_ram_efficient_loading: this process does not read "
              << m.model_name_or_path()
              << "'s weights; it receives rank 0's when training starts (sync_module_states)";
  } else if (!builtin) {
    ASSIGN_OR_RETURN(checkpoint::LoadedWeights weights,
                     checkpoint::LoadModelWeights(m.model_name_or_path()));
    ASSIGN_OR_RETURN(models::bert::BertLoadReport report,
                     models::bert::LoadBertWeights(*model, weights.tensors, weights.source,
                                                   m.ignore_mismatched_sizes()));
    if (std::string r = report.Report(); !r.empty()) LOG(WARNING) << r;
    // HF's run_glue.py calls set_seed(seed) right before from_pretrained, whose fast init
    // draws for the missing modules only (all of them, already, with ignore_mismatched_sizes).
    if (!m.ignore_mismatched_sizes()) {
      models::bert::InitNewlyInitializedWeights(*model, report, seed);
    }
  } else {
    LOG(WARNING) << "No --model_name_or_path: training a " << config.num_hidden_layers
                 << "-layer BERT (hidden " << config.hidden_size << ", vocabulary "
                 << config.vocab_size << ") from scratch, with loom's built-in vocabulary.";
  }
  return Loaded{std::move(*tokenizer), std::move(model)};
}

absl::StatusOr<glue::GlueData> LoadData(const DataTrainingArguments& d,
                                        const args::TrainingArguments& t) {
  if (d.has_task_name()) {
    ASSIGN_OR_RETURN(const glue::GlueTask* task, glue::FindGlueTask(d.task_name()));
    // HF loads every split; loom reads the files the run uses (labels come from the task).
    return glue::LoadGlueTaskData(
        *task, d.data_dir(),
        {.train = t.do_train(), .validation = t.do_eval(), .test = t.do_predict()});
  }
  glue::DataFilesOptions files;
  files.train_file = d.train_file();
  files.validation_file = d.validation_file();
  if (t.do_predict()) files.test_file = d.test_file();
  LOG(INFO) << "load a local file for train: " << files.train_file;
  LOG(INFO) << "load a local file for validation: " << files.validation_file;
  if (!files.test_file.empty()) LOG(INFO) << "load a local file for test: " << files.test_file;
  return glue::LoadDataFiles(files);
}

absl::StatusOr<const glue::GlueSplit*> Split(const glue::GlueData& data, const std::string& name,
                                             const std::string& flag) {
  const glue::GlueSplit* split = data.FindSplit(name);
  if (split == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " requires a ", name, " dataset"));
  }
  return split;
}

// The pieces of the run that its stages hand on.
using NamedDatasets = std::vector<std::pair<std::string, std::shared_ptr<const data::Dataset>>>;

struct TokenizedSplits {
  std::shared_ptr<const data::ExampleListDataset> train;  // with --do_train
  const glue::GlueSplit* train_raw = nullptr;             // its text, for the sample log lines
  NamedDatasets evals;                                    // (task, dataset) with --do_eval
  NamedDatasets predicts;                                 // (task, dataset) with --do_predict
};

struct ModelWithLabels {
  Loaded loaded;
  std::map<int64_t, int64_t> label_to_id;  // the model's label ids, when it sets their order
};

std::optional<std::string> TaskName(const DataTrainingArguments& d) {
  return d.has_task_name() ? std::optional<std::string>(d.task_name()) : std::nullopt;
}

// Stage 1: the embedded demo's defaults (when neither a model nor data was given), HF's argument
// checks and TrainingArguments.__post_init__. Returns whether this is the embedded demo.
absl::StatusOr<bool> ResolveArguments(const ModelArguments& m, DataTrainingArguments* d,
                                      args::TrainingArguments* t) {
  const bool embedded = IsEmbeddedDemo(m, *d);
  if (embedded) {
    AnnounceEmbeddedDemo("run_glue",
                         "a tiny BERT trained from scratch on a generated SST-2-format sentiment "
                         "task",
                         ApplyEmbeddedDefaults(d, t),
                         "pass --model_name_or_path DIR --task_name TASK --data_dir DIR (or "
                         "--train_file/--validation_file) to fine-tune on real data");
    d->set_task_name("sst2");
    d->set_data_dir(t->output_dir() + "/synthetic_data");
  }
  RETURN_IF_ERROR(CheckModelPaths(m));
  RETURN_IF_ERROR(ValidateArguments(m, d, *t));
  ASSIGN_OR_RETURN(std::vector<std::string> warnings, args::PostInit(t));
  for (const std::string& w : warnings) LOG(WARNING) << w;
  return embedded;
}

// Stage 2: where and in what precision this process trains, checked before any data is read,
// and HF's setup log lines.
absl::Status SetUpRun(const ModelArguments& m, const DataTrainingArguments& d,
                      const args::TrainingArguments& t) {
  return SetUpScriptRun(t, args::ToDict(m), args::ToDict(d));
}

// Stage 3: the embedded demo's generated files (main_process_first: each node's local main
// process writes them, the others read them), then the task's or the files' splits.
absl::StatusOr<glue::GlueData> LoadRunData(bool embedded, const DataTrainingArguments& d,
                                           const args::TrainingArguments& t,
                                           runtime::ParallelContext* parallel) {
  if (embedded) {
    RETURN_IF_ERROR(parallel->MainProcessFirst(/*local=*/true, [&]() -> absl::Status {
      if (!parallel->is_local_zero()) return absl::OkStatus();
      const SyntheticSst2 synthetic = MakeSyntheticSst2();
      RETURN_IF_ERROR(WriteSst2Tsv(d.data_dir(), synthetic));
      std::cout << "run_glue: wrote " << synthetic.train.size() << " training and "
                << synthetic.validation.size() << " validation sentences (SST-2 layout) to "
                << d.data_dir() << "/{train,dev,test}.tsv\n"
                << std::flush;
      return absl::OkStatus();
    }));
  }
  return LoadData(d, t);
}

// Stage 4: tokenizer and model, with the labels' order (some models have set the order of the
// labels to use; run_glue uses it).
absl::StatusOr<ModelWithLabels> LoadModelWithLabels(const ModelArguments& m,
                                                    const DataTrainingArguments& d,
                                                    const args::TrainingArguments& t,
                                                    const glue::GlueData& data, int rank) {
  // --fsdp_config cpu_ram_efficient_loading (HF/accelerate): only the first process reads the
  // checkpoint when training will broadcast its weights to the others.
  bool skip_weights = false;
  if (t.fsdp_size() > 0 && t.do_train() && rank != 0) {
    ASSIGN_OR_RETURN(args::FsdpConfig fsdp, args::FsdpConfigOf(t), "--fsdp_config");
    skip_weights = fsdp.cpu_ram_efficient_loading && fsdp.sync_module_states;
  }
  ASSIGN_OR_RETURN(
      Loaded loaded,
      LoadModelAndTokenizer(m, d, data.num_labels, static_cast<uint64_t>(t.seed()), skip_weights));
  BertConfig& config = loaded.model->mutable_config();
  std::string label_warning;
  std::map<int64_t, int64_t> label_to_id =
      ModelLabelMapping(config, TaskName(d), data.is_regression, data.label_list, &label_warning);
  if (!label_warning.empty()) LOG(WARNING) << label_warning;
  if (!data.is_regression) {
    std::map<int64_t, std::string> id2label;
    std::map<std::string, int64_t> label2id;
    for (size_t i = 0; i < data.label_list.size(); ++i) {
      const int64_t id = label_to_id.empty() ? static_cast<int64_t>(i) : label_to_id.at(i);
      id2label[id] = data.label_list[i];
      label2id[data.label_list[i]] = id;
    }
    RETURN_IF_ERROR(config.set_labels(id2label, label2id));
  }
  return ModelWithLabels{std::move(loaded), std::move(label_to_id)};
}

// The encoding every split shares: max_seq_length capped at the tokenizer's model_max_length.
TokenizeOptions BaseTokenizeOptions(const DataTrainingArguments& d,
                                    const text::BertTokenizer& tokenizer, bool is_regression,
                                    const std::map<int64_t, int64_t>& label_to_id) {
  const int64_t model_max_length =
      tokenizer.options().model_max_length.value_or(std::numeric_limits<int64_t>::max());
  if (d.max_seq_length() > model_max_length) {
    LOG(WARNING) << "The max_seq_length passed (" << d.max_seq_length()
                 << ") is larger than the maximum length for the model (" << model_max_length
                 << "). Using max_seq_length=" << model_max_length << ".";
  }
  TokenizeOptions tok;
  tok.max_length = std::min(d.max_seq_length(), model_max_length);
  tok.pad_to_max_length = d.pad_to_max_length();
  tok.is_regression = is_regression;
  tok.label_to_id = label_to_id;
  return tok;
}

// Stage 5: the train / validation / test splits the run uses, tokenized (HF's max_*_samples
// selections), then HF's log lines of a few training samples.
absl::StatusOr<TokenizedSplits> TokenizeSplits(const DataTrainingArguments& d,
                                               const args::TrainingArguments& t,
                                               const glue::GlueData& data,
                                               const text::BertTokenizer& tokenizer,
                                               const TokenizeOptions& tok) {
  const std::optional<std::string> task_name = TaskName(d);
  const bool mnli = task_name == std::string("mnli");
  TokenizedSplits splits;
  if (t.do_train()) {
    ASSIGN_OR_RETURN(splits.train_raw, Split(data, "train", "--do_train"));
    TokenizeOptions o = tok;
    o.max_examples = d.has_max_train_samples() ? d.max_train_samples() : -1;
    ASSIGN_OR_RETURN(splits.train, TokenizeSplit(tokenizer, *splits.train_raw, o));
  }
  if (t.do_eval()) {
    TokenizeOptions o = tok;
    o.max_examples = d.has_max_eval_samples() ? d.max_eval_samples() : -1;
    for (const std::string& name :
         mnli ? std::vector<std::string>{"validation_matched", "validation_mismatched"}
              : std::vector<std::string>{"validation"}) {
      ASSIGN_OR_RETURN(const glue::GlueSplit* split, Split(data, name, "--do_eval"));
      // HF selects the first max_eval_samples of both MNLI validation sets.
      ASSIGN_OR_RETURN(auto ds, TokenizeSplit(tokenizer, *split, o));
      splits.evals.emplace_back(
          name == "validation_mismatched" ? "mnli-mm" : task_name.value_or("None"), ds);
    }
  }
  if (t.do_predict()) {
    TokenizeOptions o = tok;
    o.keep_labels = false;  // run_glue removes the "label" column
    o.max_examples = d.has_max_predict_samples() ? d.max_predict_samples() : -1;
    for (const std::string& name : mnli
                                       ? std::vector<std::string>{"test_matched", "test_mismatched"}
                                       : std::vector<std::string>{"test"}) {
      ASSIGN_OR_RETURN(const glue::GlueSplit* split, Split(data, name, "--do_predict"));
      // HF selects max_predict_samples on test_matched only.
      if (name == "test_mismatched") o.max_examples = -1;
      ASSIGN_OR_RETURN(auto ds, TokenizeSplit(tokenizer, *split, o));
      splits.predicts.emplace_back(
          name == "test_mismatched" ? "mnli-mm" : task_name.value_or("None"), ds);
    }
  }
  // Log a few training samples.
  if (t.do_train()) {
    for (int64_t index : SampleIndices(splits.train->Size(), 3)) {
      ASSIGN_OR_RETURN(data::Example ex, splits.train->Get(index));
      LOG(INFO) << DescribeTrainingSample(index,
                                          splits.train_raw->examples[static_cast<size_t>(index)],
                                          ex, data.sentence1_key, data.sentence2_key);
    }
  }
  return splits;
}

// Stage 6: the Trainer, with the tokenizer (saved with the model and every checkpoint, as HF's
// run_glue passes it), GLUE's compute_metrics and run_glue's collator; the model, or for a
// hyperparameter search its model_init.
using ModelInit = std::function<absl::StatusOr<std::shared_ptr<trainer::Model>>()>;
absl::StatusOr<std::unique_ptr<Trainer>> BuildTrainer(
    const DataTrainingArguments& d, const args::TrainingArguments& t, const Loaded& loaded,
    const TokenizedSplits& splits, const runtime::ParallelContext& parallel, bool is_regression,
    ModelInit model_init) {
  TrainerOptions options;
  if (t.do_train()) options.train_dataset = splits.train;
  if (t.do_eval()) options.eval_dataset = splits.evals.front().second;
  if (model_init) {
    options.model_init = std::move(model_init);
  } else {
    options.model = loaded.model;
  }
  options.args = t;
  options.save_tokenizer = [tokenizer = loaded.tokenizer](const std::string& dir) {
    return tokenizer.SavePretrained(dir);
  };
  options.process_group = parallel.process_group();
  options.compute_metrics = GlueComputeMetrics(TaskName(d).value_or(""), is_regression);
  if (d.pad_to_max_length()) {
    options.data_collator = std::make_shared<data::DefaultCollator>();
  } else {
    options.data_collator = std::make_shared<data::PaddingCollator>(
        data::PaddingCollatorOptions()
            .set_pad_token_id(loaded.tokenizer.pad_token_id())
            .set_pad_to_multiple_of(t.fp16() ? std::optional<int64_t>(8) : std::nullopt));
  }
  return Trainer::Create(std::move(options));
}

// Stage 8: evaluate each validation set (MNLI's mismatched one with "_mm" metric names).
absl::Status EvaluateSplits(Trainer& trainer, const DataTrainingArguments& d,
                            const NamedDatasets& evals) {
  LOG(INFO) << "*** Evaluate ***";
  Metrics combined = Metrics::object();
  for (const auto& [task, dataset] : evals) {
    ASSIGN_OR_RETURN(Metrics metrics, trainer.Evaluate(dataset, {}, "eval"));
    // HF: min(max_eval_samples, len(dataset)).
    metrics["eval_samples"] = d.has_max_eval_samples()
                                  ? std::min<int64_t>(d.max_eval_samples(), dataset->Size())
                                  : dataset->Size();
    if (task == "mnli-mm") {
      Metrics renamed = Metrics::object();
      for (const auto& [k, v] : metrics.items()) renamed[k + "_mm"] = v;
      metrics = renamed;
    }
    const bool is_mnli = absl::StrContains(task, "mnli");
    if (is_mnli) combined.update(metrics);
    trainer.LogMetrics("eval", metrics);
    RETURN_IF_ERROR(trainer.SaveMetrics("eval", is_mnli ? combined : metrics));
  }
  return absl::OkStatus();
}

// Stage 9: predict each test set; the main process writes predict_results_<task>.txt.
absl::Status PredictSplits(Trainer& trainer, const args::TrainingArguments& t,
                           const NamedDatasets& predicts, bool is_regression,
                           const std::vector<std::string>& label_list) {
  LOG(INFO) << "*** Predict ***";
  for (const auto& [task, dataset] : predicts) {
    ASSIGN_OR_RETURN(PredictionOutput out, trainer.Predict(dataset, {}, "predict"));
    if (!trainer.is_world_process_zero()) continue;
    if (out.predictions.empty()) {
      return absl::InternalError("prediction returned no logits");
    }
    ASSIGN_OR_RETURN(std::string text,
                     FormatPredictResults(out.predictions.front(), is_regression, label_list));
    LOG(INFO) << "***** Predict results " << task << " *****";
    RETURN_IF_ERROR(base::WriteFileAtomically(
        absl::StrCat(t.output_dir(), "/predict_results_", task, ".txt"), text));
  }
  return absl::OkStatus();
}

// Stage 10: HF run_glue's model card arguments, then push_to_hub (blocking: its failure is this
// run's error) or, without --push_to_hub, just the card.
absl::Status FinishRun(Trainer& trainer, const ModelArguments& m, const args::TrainingArguments& t,
                       const std::optional<std::string>& task_name) {
  ModelCardOptions card;
  if (m.has_model_name_or_path()) card.finetuned_from = m.model_name_or_path();
  card.tasks = {"text-classification"};
  if (task_name) {
    card.language = {"en"};
    card.dataset_tags = {"glue"};
    card.dataset_args = {*task_name};
    card.dataset = {"GLUE " + absl::AsciiStrToUpper(*task_name)};
    // What HF reads off the "glue" dataset it evaluated on (or trained on, without --do_eval).
    card.dataset_metadata = {
        nlohmann::ordered_json{{"config", *task_name},
                               {"split", !t.do_eval()           ? "train"
                                         : *task_name == "mnli" ? "validation_matched"
                                                                : "validation"}}};
  }
  if (t.push_to_hub()) return trainer.PushToHub("End of training", /*blocking=*/true, card);
  return trainer.CreateModelCard(card);
}

// A hyperparameter search's model_init: the model of stage 4 loaded again for each trial, its
// fresh weights drawn with the seed the trial trains with (HF calls model_init after
// set_seed(args.seed); the trainer slot is filled once the Trainer exists: until then, during
// its construction, the run's --seed).
ModelInit SearchModelInit(const ModelArguments& m, const DataTrainingArguments& d,
                          const args::TrainingArguments& t,
                          std::shared_ptr<const glue::GlueData> data, int rank,
                          std::shared_ptr<Trainer*> trainer_slot) {
  return [m, d, t, data, rank, trainer_slot]() -> absl::StatusOr<std::shared_ptr<trainer::Model>> {
    args::TrainingArguments trial_args = t;
    if (*trainer_slot != nullptr) trial_args.set_seed((*trainer_slot)->args().seed());
    ASSIGN_OR_RETURN(ModelWithLabels model, LoadModelWithLabels(m, d, trial_args, *data, rank));
    return std::shared_ptr<trainer::Model>(model.loaded.model);
  };
}

// The hyperparameter-search run: the trials instead of train / evaluate / predict.
absl::Status RunSearch(const ModelArguments& m, const DataTrainingArguments& d,
                       const args::TrainingArguments& t, const glue::GlueData& data,
                       const ModelWithLabels& model, const TokenizedSplits& splits,
                       const runtime::ParallelContext& parallel,
                       const trainer::HpSearchOptions& hp) {
  auto slot = std::make_shared<Trainer*>(nullptr);
  ModelInit init = SearchModelInit(m, d, t, std::make_shared<const glue::GlueData>(data),
                                   parallel.rank(), slot);
  ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer,
                   BuildTrainer(d, t, model.loaded, splits, parallel, data.is_regression, init));
  *slot = trainer.get();
  return RunSearchAndReport(*trainer, hp);
}

}  // namespace

bool IsEmbeddedDemo(const ModelArguments& m, const DataTrainingArguments& d) {
  return !m.has_model_name_or_path() && !d.has_task_name() && !d.has_data_dir() &&
         !d.has_train_file() && !d.has_validation_file() && !d.has_test_file() &&
         !d.has_dataset_name();
}

std::vector<std::string> ApplyEmbeddedDefaults(DataTrainingArguments* d,
                                               args::TrainingArguments* t) {
  std::vector<std::string> chosen;
  if (!t->has_output_dir()) {
    t->set_output_dir(kEmbeddedOutputDir);
    chosen.push_back(absl::StrCat("--output_dir ", kEmbeddedOutputDir, " (no --output_dir given)"));
  }
  if (!t->has_do_train() && !t->has_do_eval() && !t->has_do_predict()) {
    t->set_do_train(true);
    t->set_do_eval(true);
    chosen.push_back("--do_train --do_eval");
  }
  // (A hyperparameter search resumes from its journal instead.)
  if (!t->has_overwrite_output_dir() && !d->has_hp_search_trials()) {
    t->set_overwrite_output_dir(true);
    chosen.push_back("--overwrite_output_dir (reruns start over)");
  }
  if (!d->has_max_seq_length()) {
    d->set_max_seq_length(32);
    chosen.push_back("--max_seq_length 32 (the generated sentences are shorter)");
  }
  if (!t->has_learning_rate()) {
    t->set_learning_rate(1e-3);
    chosen.push_back("--learning_rate 1e-3");
  }
  if (!t->has_num_train_epochs()) {
    t->set_num_train_epochs(6);
    chosen.push_back("--num_train_epochs 6");
  }
  if (!t->has_per_device_train_batch_size()) {
    t->set_per_device_train_batch_size(32);
    chosen.push_back("--per_device_train_batch_size 32");
  }
  if (!t->has_warmup_ratio()) {
    t->set_warmup_ratio(0.1);
    chosen.push_back("--warmup_ratio 0.1");
  }
  if (!t->has_logging_steps()) {
    t->set_logging_steps(50);
    chosen.push_back("--logging_steps 50");
  }
  if (!t->has_save_strategy()) {
    t->set_save_strategy("no");
    chosen.push_back("--save_strategy no (the final model is still saved)");
  }
  return chosen;
}

absl::Status RunGlue(const ModelArguments& m, DataTrainingArguments d, args::TrainingArguments t) {
  ASSIGN_OR_RETURN(const bool embedded, ResolveArguments(m, &d, &t));
  ASSIGN_OR_RETURN(const std::optional<trainer::HpSearchOptions> hp, HpSearchFromFlags(d));
  if (hp) RETURN_IF_ERROR(CheckSearchTrainingArgs(t));
  RETURN_IF_ERROR(SetUpRun(m, d, t));
  // Join the other processes of a launched run first (the Trainer gets this group), so that
  // every rank has looked at output_dir before any rank writes into it.
  ASSIGN_OR_RETURN(runtime::ParallelContext parallel,
                   runtime::ParallelContext::Create(std::nullopt, t), "joining the process group");
  // Detecting last checkpoint (before anything is written into output_dir).
  // (A hyperparameter search resumes from its study journal instead.)
  std::optional<ResumeFrom> resume;
  if (!hp) {
    ASSIGN_OR_RETURN(resume, ResumeFromArgs(t));
  }
  RETURN_IF_ERROR(parallel.Barrier());

  ASSIGN_OR_RETURN(const glue::GlueData data, LoadRunData(embedded, d, t, &parallel));
  ASSIGN_OR_RETURN(ModelWithLabels model, LoadModelWithLabels(m, d, t, data, parallel.rank()));
  const TokenizeOptions tok =
      BaseTokenizeOptions(d, model.loaded.tokenizer, data.is_regression, model.label_to_id);
  ASSIGN_OR_RETURN(const TokenizedSplits splits,
                   TokenizeSplits(d, t, data, model.loaded.tokenizer, tok));
  if (hp) return RunSearch(m, d, t, data, model, splits, parallel, *hp);
  ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer,
                   BuildTrainer(d, t, model.loaded, splits, parallel, data.is_regression, nullptr));

  if (t.do_train()) RETURN_IF_ERROR(TrainAndSave(*trainer, resume, splits.train->Size()));
  if (t.do_eval()) RETURN_IF_ERROR(EvaluateSplits(*trainer, d, splits.evals));
  if (t.do_predict()) {
    RETURN_IF_ERROR(
        PredictSplits(*trainer, t, splits.predicts, data.is_regression, data.label_list));
  }
  return FinishRun(*trainer, m, t, TaskName(d));
}

}  // namespace loom::examples::glue_script
