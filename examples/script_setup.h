// What HF's example scripts (run_glue.py, run_translation.py; transformers 4.41) do before they
// read data, shared by loom's //examples/glue:run_glue and //examples/translation:run_translation.
//
// Contract:
//   - CheckLocalModelPaths({{flag, path}, ...}): a set path naming nothing on this machine is
//     NotFound saying that loom reads local folders only (a Hub id such as t5-small is not
//     downloaded) and how to get one; unset paths (nullopt) are skipped.
//     CheckModelArgumentPaths(model_args) checks a script's three model path flags.
//   - SetUpScriptRun(training_args, model_args, data_args): the scripts' logging setup (the main
//     process logs at info, replicas at log_level_replica), runtime::PreflightRun (device,
//     precision and strategy decided and checked for this process; its errors stop the run),
//     the thread plan applied, and HF's log lines: "Process rank: ..." and the three argument
//     groups (`model_args` / `data_args` as JSON objects; "token" is shown as "<TOKEN>").
//   - AnnounceEmbeddedDemo(program, what, chosen, real_use): the lines a script's embedded demo
//     prints on stdout before logging starts — what it runs, each value it chose, and how to
//     run on real data — flushed, so they precede glog's lines when both go to one file.
//   - TrainAndSave(trainer, resume, train_samples): the scripts' training stanza — train
//     (resuming from `resume`), save the model (with the tokenizer; with --push_to_hub a failed
//     "Model save" push is a warning, the final push reports it), log and save the train
//     metrics with train_samples, save trainer_state.json.
//
// Example:
//   RETURN_IF_ERROR(CheckLocalModelPaths({{"--model_name_or_path", std::nullopt}}));
//   RETURN_IF_ERROR(SetUpScriptRun(t, args::ToDict(m), args::ToDict(d)));
#ifndef LOOM_EXAMPLES_SCRIPT_SETUP_H_
#define LOOM_EXAMPLES_SCRIPT_SETUP_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "args/training_args.pb.h"
#include "nlohmann/json.hpp"
#include "trainer/resume_position.h"
#include "trainer/trainer.h"

namespace loom::examples {

absl::Status CheckLocalModelPaths(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& flag_paths);

void AnnounceEmbeddedDemo(const std::string& program, const std::string& what,
                          const std::vector<std::string>& chosen, const std::string& real_use);

// CheckLocalModelPaths for a script's ModelArguments (any message with HF's
// model_name_or_path, config_name and tokenizer_name fields).
template <typename ModelArgs>
absl::Status CheckModelArgumentPaths(const ModelArgs& m) {
  auto path = [](bool has, const std::string& value) {
    return has ? std::optional<std::string>(value) : std::nullopt;
  };
  return CheckLocalModelPaths(
      {{"--model_name_or_path", path(m.has_model_name_or_path(), m.model_name_or_path())},
       {"--config_name", path(m.has_config_name(), m.config_name())},
       {"--tokenizer_name", path(m.has_tokenizer_name(), m.tokenizer_name())}});
}

absl::Status TrainAndSave(trainer::Trainer& trainer,
                          const std::optional<trainer::ResumeFrom>& resume, int64_t train_samples);

absl::Status SetUpScriptRun(const args::TrainingArguments& training_args,
                            nlohmann::ordered_json model_args,
                            const nlohmann::ordered_json& data_args);

}  // namespace loom::examples

#endif  // LOOM_EXAMPLES_SCRIPT_SETUP_H_
