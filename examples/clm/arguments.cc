#include "examples/clm/arguments.h"

#include <string>

#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace loom::examples::clm {
namespace {

// The file name extension without its dot ("txt"); the whole name without one.
std::string Extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

absl::Status CheckExtension(const char* field, bool has, const std::string& path) {
  if (!has) return absl::OkStatus();
  const std::string ext = Extension(path);
  if (ext == "txt" || ext == "json" || ext == "jsonl" || ext == "csv") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "`", field, "` should be a csv, a json or a txt file (--", field, " ", path,
      "): name it .txt (one example per line), .json / .jsonl (JSON Lines or a JSON list of "
      "objects) or .csv, with the text in a \"text\" column or the first one"));
}

absl::Status CheckHubAndStreaming(const ModelArguments& m, const DataTrainingArguments& d) {
  if (m.trust_remote_code()) {
    return absl::InvalidArgumentError(
        "--trust_remote_code: loom runs no model code from a folder or the Hub; drop the flag "
        "(loom's Llama classes load Llama checkpoints without it).");
  }
  if (d.has_dataset_name() || d.has_dataset_config_name()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dataset_name ", d.dataset_name(),
        ": loom has no access to the Hugging Face Hub and cannot load `datasets` by name. Pass "
        "--train_file/--validation_file: text files (one example per line), JSON Lines or CSV "
        "files with a \"text\" column."));
  }
  if (d.streaming()) {
    return absl::UnimplementedError(
        "--streaming is not implemented by loom's run_clm: the files are read, tokenized and "
        "grouped in memory. Drop the flag (use --max_train_samples to train on part of a file).");
  }
  return absl::OkStatus();
}

absl::Status CheckModelChoice(const ModelArguments& m, bool builtin_tokenizer) {
  if (m.has_config_overrides() && (m.has_config_name() || m.has_model_name_or_path())) {
    return absl::InvalidArgumentError(
        "--config_overrides can't be used in combination with --config_name or "
        "--model_name_or_path");
  }
  if (!m.has_model_name_or_path() && !m.has_config_name() && m.model_type() != "llama") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model_type ", m.has_model_type() ? m.model_type() : "(unset)",
        ": to train a model from scratch pass --model_type llama (the causal LM loom "
        "implements), or --config_name / --model_name_or_path"));
  }
  if (m.has_torch_dtype() && m.torch_dtype() != "float32") {
    return absl::UnimplementedError(absl::StrCat(
        "--torch_dtype ", m.torch_dtype(),
        ": loom loads and trains the weights in float32; drop the flag (or pass float32) and "
        "use --bf16 or --fp16 for mixed-precision training."));
  }
  if (!m.has_tokenizer_name() && !m.has_model_name_or_path() && !builtin_tokenizer) {
    return absl::InvalidArgumentError(
        "You are instantiating a new tokenizer from scratch. This is not supported by this "
        "script. You can do it from another script, save it, and load it from here, using "
        "--tokenizer_name (a folder with tokenizer.model).");
  }
  return absl::OkStatus();
}

absl::Status CheckSplits(const DataTrainingArguments& d, const args::TrainingArguments& t) {
  if (t.do_train() && !d.has_train_file()) {
    return absl::InvalidArgumentError("--do_train requires a train dataset: pass --train_file");
  }
  if (t.do_eval() && !d.has_validation_file()) {
    if (!d.has_train_file()) {
      return absl::InvalidArgumentError(
          "--do_eval requires a validation dataset: pass --validation_file (or a --train_file "
          "to split one off with --validation_split_percentage)");
    }
    if (d.validation_split_percentage() < 1 || d.validation_split_percentage() > 99) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--validation_split_percentage ", d.validation_split_percentage(),
          ": with no --validation_file the validation split is that percentage of the training "
          "file; use a value in 1..99"));
    }
  }
  if (d.has_block_size() && d.block_size() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--block_size ", d.block_size(), ": must be >= 1"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateArguments(const ModelArguments& m, const DataTrainingArguments& d,
                               const args::TrainingArguments& t, bool builtin_tokenizer) {
  if (absl::Status s = CheckHubAndStreaming(m, d); !s.ok()) return s;
  if (absl::Status s = CheckModelChoice(m, builtin_tokenizer); !s.ok()) return s;
  if (!d.has_train_file() && !d.has_validation_file()) {
    return absl::InvalidArgumentError(
        "Need either a dataset name or a training/validation file: pass --train_file and/or "
        "--validation_file.");
  }
  if (absl::Status s = CheckExtension("train_file", d.has_train_file(), d.train_file()); !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckExtension("validation_file", d.has_validation_file(), d.validation_file());
      !s.ok()) {
    return s;
  }
  return CheckSplits(d, t);
}

absl::StatusOr<nlohmann::json> ApplyConfigOverrides(nlohmann::json config,
                                                    const std::string& overrides) {
  for (absl::string_view item : absl::StrSplit(overrides, ',')) {
    const std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("--config_overrides ", overrides, ": ", why));
    };
    if (kv.size() != 2) return bad(absl::StrCat("\"", item, "\" is not key=value"));
    const std::string& key = kv[0];
    const std::string& value = kv[1];
    auto it = config.find(key);
    if (it == config.end()) return bad(absl::StrCat("key ", key, " isn't in the original config dict"));
    const std::string lower = absl::AsciiStrToLower(value);
    if (it->is_boolean()) {
      if (lower == "true" || lower == "1" || lower == "y" || lower == "yes") {
        *it = true;
      } else if (lower == "false" || lower == "0" || lower == "n" || lower == "no") {
        *it = false;
      } else {
        return bad(absl::StrCat("can't derive true or false from ", value, " (key ", key, ")"));
      }
    } else if (it->is_number_integer()) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(value, &v)) return bad(absl::StrCat(key, "=", value, " is not an int"));
      *it = v;
    } else if (it->is_number_float()) {
      double v = 0;
      if (!absl::SimpleAtod(value, &v)) return bad(absl::StrCat(key, "=", value, " is not a float"));
      *it = v;
    } else if (it->is_string()) {
      *it = value;
    } else {
      return bad(absl::StrCat("You can only update int, float, bool or string values in the "
                              "config, got ", value, " for key ", key));
    }
  }
  return config;
}

}  // namespace loom::examples::clm
