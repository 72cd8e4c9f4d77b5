#include "examples/glue/arguments.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "examples/script_setup.h"
#include "glue/tasks.h"

namespace loom::examples::glue_script {
namespace {

// The file name extension without its dot ("csv"); the whole name without one.
std::string Extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

}  // namespace

absl::Status CheckModelPaths(const ModelArguments& m) { return CheckModelArgumentPaths(m); }

absl::Status ValidateArguments(const ModelArguments& m, DataTrainingArguments* d,
                               const args::TrainingArguments& t) {
  if (m.trust_remote_code()) {
    return absl::InvalidArgumentError(
        "--trust_remote_code: loom runs no model code from a folder or the Hub; drop the flag "
        "(loom's BERT classes load BERT checkpoints without it).");
  }
  if (d->has_dataset_name() || d->has_dataset_config_name()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dataset_name ", d->dataset_name(),
        ": loom has no access to the Hugging Face Hub and cannot load `datasets` by name. Use "
        "--train_file/--validation_file (csv, tsv, json, jsonl), or --task_name with --data_dir "
        "holding the GLUE distribution's .tsv files."));
  }
  if (d->has_task_name()) {
    ASSIGN_OR_RETURN(const glue::GlueTask* task, glue::FindGlueTask(d->task_name()));
    d->set_task_name(task->name);
    if (!d->has_data_dir()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--task_name ", task->name,
          ": loom reads GLUE tasks from local files; pass --data_dir with the task's folder of "
          "the GLUE distribution (train.tsv, dev.tsv, test.tsv), or use "
          "--train_file/--validation_file."));
    }
    return absl::OkStatus();
  }
  if (d->has_data_dir()) {
    return absl::InvalidArgumentError(
        "--data_dir needs --task_name (the GLUE task whose .tsv layout the folder holds), one "
        "of: " +
        glue::GlueTaskNamesForMessage());
  }
  if (!d->has_train_file() || !d->has_validation_file()) {
    return absl::InvalidArgumentError(
        "Need either a GLUE task, a training/validation file or a dataset name: pass "
        "--task_name with --data_dir, or --train_file and --validation_file.");
  }
  const std::string ext = Extension(d->train_file());
  if (ext != "csv" && ext != "json" && ext != "tsv" && ext != "jsonl") {
    return absl::InvalidArgumentError(absl::StrCat("--train_file ", d->train_file(),
                                                   ": `train_file` should be a csv or a json file ",
                                                   "(loom also reads .tsv and .jsonl)."));
  }
  if (Extension(d->validation_file()) != ext) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--validation_file ", d->validation_file(), ": `validation_file` should have the same ",
        "extension (csv or json) as `train_file` (.", ext, ")."));
  }
  if (t.do_predict()) {
    if (!d->has_test_file()) {
      return absl::InvalidArgumentError(
          "Need either a GLUE task or a test file for `do_predict`: pass --test_file.");
    }
    if (Extension(d->test_file()) != ext) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--test_file ", d->test_file(), ": `test_file` should have the same extension (csv or ",
          "json) as `train_file` (.", ext, ")."));
    }
  }
  return absl::OkStatus();
}

}  // namespace loom::examples::glue_script
