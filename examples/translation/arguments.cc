#include "examples/translation/arguments.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace loom::examples::translation {
namespace {

// The file name extension without its dot ("json"); the whole name without one.
std::string Extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

absl::Status CheckExtension(const char* field, bool has, const std::string& path) {
  if (!has) return absl::OkStatus();
  const std::string ext = Extension(path);
  if (ext == "json" || ext == "jsonl") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "`", field, "` should be a jsonlines file (--", field, " ", path,
      "): one {\"translation\": {SRC: ..., TGT: ...}} object per line, named .json or .jsonl"));
}

absl::Status CheckSplitsForActions(const DataTrainingArguments& d,
                                   const args::TrainingArguments& t) {
  if (t.do_train() && !d.has_train_file()) {
    return absl::InvalidArgumentError("--do_train requires a train dataset: pass --train_file");
  }
  if (t.do_eval() && !d.has_validation_file()) {
    return absl::InvalidArgumentError(
        "--do_eval requires a validation dataset: pass --validation_file");
  }
  if (t.do_predict() && !d.has_test_file()) {
    return absl::InvalidArgumentError("--do_predict requires a test dataset: pass --test_file");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateArguments(const ModelArguments& m, DataTrainingArguments* d,
                               const args::TrainingArguments& t) {
  if (m.trust_remote_code()) {
    return absl::InvalidArgumentError(
        "--trust_remote_code: loom runs no model code from a folder or the Hub; drop the flag "
        "(loom's T5 classes load T5 checkpoints without it).");
  }
  if (d->has_dataset_name() || d->has_dataset_config_name()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dataset_name ", d->dataset_name(),
        ": loom has no access to the Hugging Face Hub and cannot load `datasets` by name. Pass "
        "--train_file/--validation_file/--test_file: JSON Lines files with one "
        "{\"translation\": {\"en\": ..., \"ro\": ...}} object per line (WMT16's layout)."));
  }
  if (!d->has_train_file() && !d->has_validation_file()) {
    return absl::InvalidArgumentError(
        "Need either a dataset name or a training/validation file: pass --train_file and/or "
        "--validation_file.");
  }
  if (!d->has_source_lang() || !d->has_target_lang()) {
    return absl::InvalidArgumentError(
        "Need to specify the source language and the target language: pass --source_lang and "
        "--target_lang (keys of each record's \"translation\" object, e.g. en and ro).");
  }
  // HF's script warns for the t5-* checkpoints, which were trained with task prefixes; every
  // pretrained model here is a T5, so the prefix is asked for (an empty one is a choice too).
  if (m.has_model_name_or_path() && !d->has_source_prefix()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "You're running a t5 model (", m.model_name_or_path(),
        ") but didn't provide a source prefix, which is expected, e.g. with `--source_prefix "
        "'translate English to German: ' `. Pass the prefix the model was trained with, or "
        "--source_prefix '' to train without one."));
  }
  if (d->has_forced_bos_token()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--forced_bos_token ", d->forced_bos_token(),
        ": only multilingual tokenizers (mBART, M2M100) have language-code tokens to force; "
        "loom's T5 tokenizer has none. Drop the flag (set forced_bos_token_id in the model's "
        "generation_config.json to force a token id)."));
  }
  if (absl::Status s = CheckExtension("train_file", d->has_train_file(), d->train_file());
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckExtension("validation_file", d->has_validation_file(), d->validation_file());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckExtension("test_file", d->has_test_file(), d->test_file()); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckSplitsForActions(*d, t); !s.ok()) return s;
  if (!m.has_model_name_or_path() && !t.do_train()) {
    return absl::InvalidArgumentError(
        "no --model_name_or_path: run_translation would build a tiny T5 from scratch, which "
        "only makes sense with --do_train; pass --model_name_or_path DIR to evaluate or predict "
        "with a trained model.");
  }
  if (!d->has_val_max_target_length()) d->set_val_max_target_length(d->max_target_length());
  return absl::OkStatus();
}

}  // namespace loom::examples::translation
