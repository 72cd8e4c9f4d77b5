#include "examples/script_setup.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "args/serialize.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "hub/hub_config.h"
#include "hub/repository.h"
#include "logging/log_level.h"
#include "runtime/run_setup.h"
#include "threads/thread_plan.h"

namespace loom::examples {
namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? fallback : std::atoi(v);
}

}  // namespace

absl::Status CheckLocalModelPaths(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& flag_paths) {
  for (const auto& [flag, path] : flag_paths) {
    if (!path.has_value() || std::filesystem::exists(*path)) continue;
    const bool hub_id = hub::IsHubRepoId(*path);
    return absl::NotFoundError(absl::StrCat(
        flag, " ", *path, ": no such model folder",
        hub_id ? " (it looks like a Hugging Face Hub id; loom does not download)"
               : " (loom does not download)",
        ". Pass a local folder holding config.json, the weights (model.safetensors or "
        "pytorch_model.bin) and the tokenizer files, e.g. one written by save_pretrained or by "
        "`huggingface-cli download ",
        hub_id ? *path : std::string("MODEL_ID"), " --local-dir DIR`."));
  }
  return absl::OkStatus();
}

void AnnounceEmbeddedDemo(const std::string& program, const std::string& what,
                          const std::vector<std::string>& chosen, const std::string& real_use) {
  std::cout << program << ": no model and no data given: running loom's embedded demo — " << what
            << ".\n";
  for (const std::string& line : chosen) std::cout << program << ":   " << line << "\n";
  std::cout << program << ": " << real_use << "; --help lists every flag.\n" << std::flush;
}

absl::Status TrainAndSave(trainer::Trainer& trainer,
                          const std::optional<trainer::ResumeFrom>& resume, int64_t train_samples) {
  ASSIGN_OR_RETURN(trainer::TrainOutput result, trainer.Train(resume));
  trainer::Metrics metrics = result.metrics;
  metrics["train_samples"] = train_samples;
  // With the tokenizer (TrainerOptions.save_tokenizer). With --push_to_hub this pushes "Model
  // save"; when the remote fails, the run still writes its metrics and evaluates (output_dir
  // complete), and the final push reports it.
  absl::Status saved = trainer.SaveModel();
  if (!saved.ok() && !hub::IsPushFailure(saved)) return saved;
  if (!saved.ok()) {
    LOG(WARNING) << saved.message() << " (the \"End of training\" push tries again)";
  }
  trainer.LogMetrics("train", metrics);
  RETURN_IF_ERROR(trainer.SaveMetrics("train", metrics));
  return trainer.SaveState();
}

absl::Status SetUpScriptRun(const args::TrainingArguments& t, nlohmann::ordered_json model_args,
                            const nlohmann::ordered_json& data_args) {
  // HF's scripts: the main process logs at info, replicas at log_level_replica (warning), so a
  // launched run prints its arguments once.
  RETURN_IF_ERROR(logging::ApplyScriptLogLevel(
      {.log_level = t.log_level(),
       .log_level_replica = t.log_level_replica(),
       .log_on_each_node = t.log_on_each_node()},
      logging::PlacementFromEnvironment()));
  // The Trainer decides the same way; its errors (e.g. --fp16 on a CPU, a --deepspeed config
  // loom cannot train with, HF's --fsdp rules) stop the run here, as they stop show_args.
  ASSIGN_OR_RETURN(const runtime::RunSetup setup,
                   runtime::PreflightRun(t, EnvInt("LOCAL_RANK", 0), EnvInt("WORLD_SIZE", 1)));
  // The thread counts hold from here on (tokenizing too); the Trainer logs them.
  RETURN_IF_ERROR(threads::ApplyThreadPlan(setup.threads));
  LOG(WARNING) << "Process rank: " << EnvInt("LOCAL_RANK", -1) << ", device: " << setup.device.str()
               << ", n_gpu: " << (setup.device.is_cuda() ? 1 : 0)
               << ", distributed training: " << (EnvInt("WORLD_SIZE", 1) > 1 ? "True" : "False")
               << ", 16-bits training: "
               << (setup.precision.policy.SixteenBit() ? "True" : "False");
  LOG(INFO) << "Training/evaluation parameters " << args::ToJsonString(t);
  if (model_args.contains("token") && !model_args["token"].is_null()) {
    model_args["token"] = "<TOKEN>";
  }
  LOG(INFO) << "Model arguments " << model_args.dump(2);
  LOG(INFO) << "Data arguments " << data_args.dump(2);
  return absl::OkStatus();
}

}  // namespace loom::examples
