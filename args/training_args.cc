// HF TrainingArguments.__post_init__ (transformers 4.41), step by step in HF's order. Step
// comments name the HF field or rule; message texts follow HF's so users can search them.
#include "args/training_args.h"

#include "hub/hub_config.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "args/deepspeed_config.h"
#include "args/field_support.h"
#include "args/field_value.h"
#include "args/fsdp_config.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace loom::args {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using json = nlohmann::ordered_json;

absl::Status Invalid(absl::string_view msg) { return absl::InvalidArgumentError(msg); }

std::string ExpandUser(const std::string& path) {
  if (path == "~" || absl::StartsWith(path, "~/")) {
    const char* home = std::getenv("HOME");
    if (home != nullptr) return std::string(home) + path.substr(1);
  }
  return path;
}

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return absl::EndsWith(a, "/") ? a + b : a + "/" + b;
}

std::string Basename(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Deprecated(absl::string_view old_flag, absl::string_view new_flag) {
  return absl::StrCat(
      "`--", old_flag,
      "` is deprecated and will be removed in version 5 of 🤗 Transformers. Use `", new_flag,
      "` instead");
}

// Every string/list field with choices holds one of them (HF converts them to enums; loom's own
// fields with choices, such as --save_for_transformers_version, are checked the same way).
absl::Status CheckChoices(const TrainingArguments& args) {
  const Descriptor* d = args.GetDescriptor();
  const auto* r = args.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const FieldSpec& spec = SpecOf(f);
    if (spec.choices_size() == 0) continue;
    std::vector<std::string> values;
    if (f->is_repeated()) {
      for (int k = 0; k < r->FieldSize(args, f); ++k)
        values.push_back(r->GetRepeatedString(args, f, k));
    } else if (r->HasField(args, f) || f->has_default_value()) {
      values.push_back(r->GetString(args, f));
    }
    for (const auto& v : values) {
      if (std::find(spec.choices().begin(), spec.choices().end(), v) == spec.choices().end()) {
        std::vector<std::string> q;
        for (const auto& c : spec.choices()) q.push_back("'" + c + "'");
        return Invalid(absl::StrCat("--", f->name(), ": '", v,
                                    "' is not a valid value, please select one of [",
                                    absl::StrJoin(q, ", "), "]"));
      }
    }
  }
  return absl::OkStatus();
}

// Integer check of logging_steps / save_steps / eval_steps: *_steps > 1 must be integers.
absl::Status CheckIntegerSteps(double value, absl::string_view flag) {
  if (value > 1 && value != std::floor(value)) {
    return Invalid(
        absl::StrCat("--", flag, " must be an integer if bigger than 1: ", PythonFloat(value)));
  }
  return absl::OkStatus();
}

std::string StepsRepr(double v) {
  return (v > 1 && v == std::floor(v)) ? std::to_string(static_cast<int64_t>(v)) : PythonFloat(v);
}

// load_best_model_at_end rules (save_strategy == eval_strategy; save_steps a multiple of
// eval_steps).
absl::Status CheckLoadBest(const TrainingArguments& a) {
  if (!a.load_best_model_at_end()) return absl::OkStatus();
  if (a.eval_strategy() != a.save_strategy()) {
    return Invalid(absl::StrCat(
        "--load_best_model_at_end requires the save and eval strategy to match, but found\n- "
        "Evaluation strategy: ",
        a.eval_strategy(), "\n- Save strategy: ", a.save_strategy()));
  }
  if (a.eval_strategy() != "steps") return absl::OkStatus();
  const double save = a.save_steps(), eval = a.eval_steps();
  if (eval != 0 && std::fmod(save, eval) == 0) return absl::OkStatus();
  if (eval < 1 || save < 1) {
    if (!(eval < 1 && save < 1)) {
      return Invalid(absl::StrCat(
          "--load_best_model_at_end requires the saving steps to be a multiple of the evaluation "
          "steps, which cannot get guaranteed when mixing ratio and absolute steps for save_steps ",
          StepsRepr(save), " and eval_steps ", StepsRepr(eval), "."));
    }
    constexpr double kLarge = 1e6;
    if (std::fmod(std::round(save * kLarge), std::round(eval * kLarge)) == 0) {
      return absl::OkStatus();  // ratios that are exact multiples (loom: no fall-through bug)
    }
  }
  return Invalid(absl::StrCat(
      "--load_best_model_at_end requires the saving steps to be a round multiple of the "
      "evaluation steps, but found --save_steps ",
      StepsRepr(save), ", which is not a round multiple of --eval_steps ", StepsRepr(eval), "."));
}

// accelerator_config (HF's AcceleratorConfig) with the deprecated top-level
// dispatch/split_batches.
absl::Status ResolveAcceleratorConfig(TrainingArguments* a, std::vector<std::string>* warnings) {
  json given = json::object();
  if (a->has_accelerator_config()) {
    std::string text = a->accelerator_config();
    if (text.empty() || text[0] != '{') {
      ASSIGN_OR_RETURN(text, base::ReadFile(a->accelerator_config()), "--accelerator_config");
    }
    given = json::parse(text, nullptr, false);
    if (given.is_discarded() || !given.is_object()) {
      return Invalid("--accelerator_config: not a JSON object: " + a->accelerator_config());
    }
  }
  json cfg = {{"split_batches", false},
              {"dispatch_batches", nullptr},
              {"even_batches", true},
              {"use_seedable_sampler", true}};
  for (auto& [k, v] : given.items()) {
    if (!cfg.contains(k)) {
      return Invalid(absl::StrCat("--accelerator_config: unknown key \"", k,
                                  "\" (known: split_batches, dispatch_batches, even_batches, "
                                  "use_seedable_sampler)"));
    }
    if (!v.is_boolean() && !(k == "dispatch_batches" && v.is_null())) {
      return Invalid(absl::StrCat("--accelerator_config: \"", k, "\" must be true or false"));
    }
    cfg[k] = v;
  }
  for (auto [name, has, value] :
       {std::tuple{"dispatch_batches", a->has_dispatch_batches(), a->dispatch_batches()},
        std::tuple{"split_batches", a->has_split_batches(), a->split_batches()}}) {
    if (!has) continue;
    warnings->push_back(absl::StrCat(
        "Using `--", name,
        "` is deprecated and will be removed in version 4.41 of 🤗 Transformers. Use "
        "`--accelerator_config {'",
        name, "':VALUE} instead"));
    cfg[name] = value;
  }
  a->set_accelerator_config(cfg.dump());
  return absl::OkStatus();
}

// Options loom cannot honour (TPU, MPS, Python-only): the field table (args/field_support.h) over
// the flags as given (so a deprecated alias is named, not the field HF moves it to), then the
// values of implemented fields that loom lacks, over the resolved arguments `a`.
absl::Status CheckSupported(const TrainingArguments& given, const TrainingArguments& a,
                            const PostInitOptions& options, std::vector<std::string>* warnings) {
  // What PostInit makes of no flags at all: a second PostInit sees the fields the first one
  // filled (fsdp_config gets HF's defaults), which count as given only when they differ.
  TrainingArguments nothing;
  nothing.set_output_dir(a.output_dir());
  PostInitOptions quiet = options;
  quiet.reject_unsupported = false;
  RETURN_IF_ERROR(PostInit(&nothing, quiet).status());
  static const std::set<std::string> kOptims = {
      "adamw_hf", "adamw_torch", "adamw_torch_fused", "adafactor", "sgd", "adagrad", "rmsprop"};
  if (!kOptims.count(a.optim())) {
    return Invalid(absl::StrCat("--optim ", a.optim(),
                                " is not supported by loom (it needs a Python-only library); use "
                                "one of adamw_torch, adamw_hf, adamw_torch_fused, adafactor, sgd, "
                                "adagrad, rmsprop"));
  }
  if (a.half_precision_backend() == "apex") {
    const char* with = a.fp16() ? "--fp16 with " : a.fp16_full_eval() ? "--fp16_full_eval with " : "";
    return Invalid(absl::StrCat(with,
                                "--half_precision_backend apex is not supported by loom: NVIDIA "
                                "Apex is Python-only; use --half_precision_backend auto (torch "
                                "amp) or cpu_amp"));
  }
  for (const std::string& r : a.report_to()) {
    if (r != "tensorboard" && r != "none") {
      return Invalid(absl::StrCat("--report_to ", r,
                                  " is not supported by loom: that integration is a Python "
                                  "library; use tensorboard or none"));
    }
  }
  if (a.has_ddp_backend() && a.ddp_backend() != "nccl" && a.ddp_backend() != "gloo") {
    return Invalid(absl::StrCat("--ddp_backend ", a.ddp_backend(),
                                " is not supported by loom; use gloo (CPU) or nccl (CUDA)"));
  }
  json fsdp_cfg = json::parse(a.fsdp_config(), nullptr, false);
  if (fsdp_cfg.is_object() && fsdp_cfg.value("xla", false)) {
    return Invalid("--fsdp_config: xla is not supported by loom: PyTorch/XLA FSDP is TPU-only");
  }
  return CheckFieldSupport(given, warnings, &nothing);
}

int WorldSizeFromEnv() {
  const char* v = std::getenv("WORLD_SIZE");
  if (v == nullptr || *v == '\0') return 1;
  const int n = std::atoi(v);
  return n > 0 ? n : 1;
}

// HF __post_init__ with a deepspeed config: HfTrainerDeepSpeedConfig(...) then
// trainer_config_process(self) (transformers 4.41 integrations/deepspeed.py). loom reports the
// mismatches found so far right away (HF waits for trainer_config_finalize): they cannot go away
// later.
absl::Status ResolveDeepSpeed(const TrainingArguments& a, int world_size,
                              std::vector<std::string>* warnings) {
  if (!a.has_deepspeed() || a.deepspeed().empty()) return absl::OkStatus();
  std::vector<std::string> ds_warnings;
  ASSIGN_OR_RETURN(DeepSpeedConfig config, LoadDeepSpeedConfig(a.deepspeed(), &ds_warnings),
                   "--deepspeed");
  for (const std::string& w : ds_warnings) warnings->push_back("--deepspeed: " + w);
  TrainerDeepSpeedConfig resolved(std::move(config));
  RETURN_IF_ERROR_CTX(
      resolved.TrainerConfigProcess(a, world_size > 0 ? world_size : WorldSizeFromEnv()),
      "--deepspeed");
  RETURN_IF_ERROR_CTX(resolved.CheckMismatches(), "--deepspeed");
  RETURN_IF_ERROR_CTX(resolved.CheckAdafactor(a), "--deepspeed");
  return absl::OkStatus();
}

// HF's _convert_str_dict over the dict fields given as JSON text ("true" -> true, "8" -> 8, ...).
void ConvertStrDicts(TrainingArguments* a) {
  for (const char* name : {"accelerator_config", "fsdp_config", "deepspeed",
                           "gradient_checkpointing_kwargs", "lr_scheduler_kwargs"}) {
    const FieldDescriptor* f = a->GetDescriptor()->FindFieldByName(name);
    const auto* r = a->GetReflection();
    if (f == nullptr || !r->HasField(*a, f)) continue;
    json dict = json::parse(r->GetString(*a, f), nullptr, /*allow_exceptions=*/false);
    if (!dict.is_object()) continue;  // a file path, or not JSON (reported where it is read)
    ConvertStrDict(&dict);
    r->SetString(a, f, dict.dump());
  }
}

// output_dir is required; expanduser on the paths; the logging_dir default
// (output_dir/runs/<time>_<host>); disable_tqdm's default.
absl::Status ResolvePaths(TrainingArguments* a, const PostInitOptions& options) {
  if (!a->has_output_dir() || a->output_dir().empty()) {
    return Invalid(
        "--output_dir is required: the directory where checkpoints and predictions "
        "are written");
  }
  a->set_output_dir(ExpandUser(a->output_dir()));
  if (!a->has_logging_dir()) {
    absl::Time now = options.now ? options.now() : absl::Now();
    std::string host = options.hostname;
    if (host.empty()) {
      char buf[256] = {0};
      ::gethostname(buf, sizeof(buf) - 1);
      host = buf;
    }
    a->set_logging_dir(JoinPath(
        a->output_dir(),
        "runs/" + absl::FormatTime("%b%d_%H-%M-%S", now, absl::LocalTimeZone()) + "_" + host));
  }
  a->set_logging_dir(ExpandUser(a->logging_dir()));
  // disable_tqdm: the default library level is warning, and `warning > WARN` is false.
  if (!a->has_disable_tqdm()) a->set_disable_tqdm(false);
  return absl::OkStatus();
}

// Deprecated strategy aliases, the choice fields, do_eval, and the *_steps checks.
absl::Status ResolveStrategiesAndSteps(TrainingArguments* a, std::vector<std::string>* warnings) {
  if (a->has_evaluation_strategy()) {
    warnings->push_back(
        "`evaluation_strategy` is deprecated and will be removed in version 4.46 of 🤗 "
        "Transformers. Use `eval_strategy` instead");
    a->set_eval_strategy(a->evaluation_strategy());
  }
  if (a->no_cuda()) {
    warnings->push_back(Deprecated("no_cuda", "use_cpu"));
    a->set_use_cpu(true);
  }
  RETURN_IF_ERROR(CheckChoices(*a));
  if (!a->do_eval() && a->eval_strategy() != "no") a->set_do_eval(true);

  // eval_steps <- logging_steps.
  if (a->eval_strategy() == "steps" && (!a->has_eval_steps() || a->eval_steps() == 0)) {
    if (a->logging_steps() > 0) {
      a->set_eval_steps(a->logging_steps());
    } else {
      return Invalid(
          "evaluation strategy steps requires either non-zero --eval_steps or "
          "--logging_steps");
    }
  }
  if (a->logging_strategy() == "steps" && a->logging_steps() == 0) {
    return Invalid("logging strategy steps requires non-zero --logging_steps");
  }
  if (a->logging_strategy() == "steps")
    RETURN_IF_ERROR(CheckIntegerSteps(a->logging_steps(), "logging_steps"));
  if (a->eval_strategy() == "steps")
    RETURN_IF_ERROR(CheckIntegerSteps(a->eval_steps(), "eval_steps"));
  if (a->save_strategy() == "steps")
    RETURN_IF_ERROR(CheckIntegerSteps(a->save_steps(), "save_steps"));
  for (auto [v, flag] :
       {std::pair{a->logging_steps(), "logging_steps"}, std::pair{a->save_steps(), "save_steps"},
        std::pair{a->has_eval_steps() ? a->eval_steps() : 0.0, "eval_steps"}}) {
    if (v < 0) return Invalid(absl::StrCat("--", flag, " must be >= 0, got ", PythonFloat(v)));
  }
  RETURN_IF_ERROR(CheckLoadBest(*a));
  return absl::OkStatus();
}

// metric_for_best_model / greater_is_better defaults, and run_name's.
void ResolveBestModelMetric(TrainingArguments* a) {
  if ((a->load_best_model_at_end() || a->lr_scheduler_type() == "reduce_lr_on_plateau") &&
      !a->has_metric_for_best_model()) {
    a->set_metric_for_best_model("loss");
  }
  if (!a->has_greater_is_better() && a->has_metric_for_best_model()) {
    a->set_greater_is_better(a->metric_for_best_model() != "loss" &&
                             a->metric_for_best_model() != "eval_loss");
  }
  if (!a->has_run_name()) a->set_run_name(a->output_dir());
}

// fp16 / bf16 exclusions, the reduce_lr_on_plateau requirement, the adafactor alias.
absl::Status CheckPrecisionAndScheduler(TrainingArguments* a, std::vector<std::string>* warnings) {
  if (!a->fp16_backend().empty() && a->fp16_backend() != "auto") {
    warnings->push_back(Deprecated("fp16_backend", "half_precision_backend"));
    a->set_half_precision_backend(a->fp16_backend());
  }
  if (a->fp16() && a->bf16())
    return Invalid("At most one of --fp16 and --bf16 can be True, but not both");
  if (a->fp16_full_eval() && a->bf16_full_eval()) {
    return Invalid(
        "At most one of --fp16_full_eval and --bf16_full_eval can be True, but not both");
  }
  if (a->bf16() && a->half_precision_backend() == "apex") {
    return Invalid(
        "--bf16 with `--half_precision_backend apex`: GPU bf16 is not supported by apex.");
  }
  if (a->lr_scheduler_type() == "reduce_lr_on_plateau" && a->eval_strategy() == "no") {
    return Invalid(
        "--lr_scheduler_type reduce_lr_on_plateau requires an eval strategy (--eval_strategy steps "
        "or epoch)");
  }
  if (a->adafactor()) {
    warnings->push_back(Deprecated("adafactor", "--optim adafactor"));
    a->set_optim("adafactor");
  }
  return absl::OkStatus();
}

// torch.compile implications: torchdynamo alias, a mode or backend turns it on, inductor default.
void ResolveTorchCompile(TrainingArguments* a, std::vector<std::string>* warnings) {
  if (a->has_torchdynamo()) {
    warnings->push_back(Deprecated("torchdynamo", "torch_compile_backend"));
    a->set_torch_compile_backend(a->torchdynamo());
  }
  if ((a->has_torch_compile_mode() || a->has_torch_compile_backend()) && !a->torch_compile()) {
    a->set_torch_compile(true);
  }
  if (a->torch_compile() && !a->has_torch_compile_backend())
    a->set_torch_compile_backend("inductor");
}

// report_to: None and "all" mean every integration loom has. An explicit "none" is kept as
// ["none"] (an empty repeated field would read back as None); ToDict() prints it as [] like HF.
absl::Status ResolveReportTo(TrainingArguments* a, const PostInitOptions& options) {
  std::vector<std::string> report(a->report_to().begin(), a->report_to().end());
  if (report.empty() || report == std::vector<std::string>{"all"}) {
    report = options.available_integrations;
    if (report.empty()) report = {"none"};
  }
  static const std::set<std::string> kIntegrations = {
      "azure_ml", "clearml", "codecarbon", "comet_ml",    "dagshub", "dvclive",
      "flyte",    "mlflow",  "neptune",    "tensorboard", "wandb",   "none"};
  for (const auto& r : report) {
    if (!kIntegrations.count(r)) {
      return Invalid(absl::StrCat("--report_to: unknown integration '", r,
                                  "'; choose from tensorboard, wandb, mlflow, ... or all/none"));
    }
  }
  a->clear_report_to();
  for (const auto& r : report) a->add_report_to(r);
  return absl::OkStatus();
}

absl::Status CheckWarmup(const TrainingArguments& a, std::vector<std::string>* warnings) {
  if (a.warmup_ratio() < 0 || a.warmup_ratio() > 1) {
    return Invalid("--warmup_ratio must lie in range [0,1]");
  }
  if (a.warmup_ratio() > 0 && a.warmup_steps() > 0) {
    warnings->push_back(
        "Both warmup_ratio and warmup_steps given, warmup_steps will override any "
        "effect of warmup_ratio during training");
  }
  if (a.warmup_steps() < 0) return Invalid("--warmup_steps must be 0 or a positive integer");
  return absl::OkStatus();
}

// The tpu_metrics_debug alias, pin_memory on CPU, and the dataloader / batch-size checks.
absl::Status ResolveDebugAndDataloader(TrainingArguments* a, std::vector<std::string>* warnings) {
  if (a->tpu_metrics_debug()) {
    warnings->push_back(Deprecated("tpu_metrics_debug", "--debug tpu_metrics_debug"));
    a->add_debug("tpu_metrics_debug");
    a->set_tpu_metrics_debug(false);
  }
  if (a->use_cpu()) a->set_dataloader_pin_memory(false);
  if (a->dataloader_num_workers() == 0 && a->has_dataloader_prefetch_factor()) {
    return Invalid(
        "--dataloader_prefetch_factor can only be set when data is loaded in a "
        "different process, i.e. when --dataloader_num_workers > 1.");
  }
  if (a->dataloader_num_workers() == 0 && a->dataloader_persistent_workers()) {
    // torch 1.13's DataLoader raises this (HF only finds out when it builds the loader).
    return Invalid(
        "--dataloader_persistent_workers needs --dataloader_num_workers > 0 (torch's DataLoader: "
        "persistent_workers option needs num_workers > 0)");
  }
  for (auto [v, flag] :
       {std::pair{a->per_device_train_batch_size(), "per_device_train_batch_size"},
        std::pair{a->per_device_eval_batch_size(), "per_device_eval_batch_size"},
        std::pair{a->gradient_accumulation_steps(), "gradient_accumulation_steps"}}) {
    if (v < 1) return Invalid(absl::StrCat("--", flag, " must be >= 1, got ", v));
  }
  return absl::OkStatus();
}

// The deprecated push_to_hub_* aliases of hub_token / hub_model_id, and hub_private_repo's check.
absl::Status ResolveHubAliases(TrainingArguments* a, std::vector<std::string>* warnings) {
  if (a->has_push_to_hub_token()) {
    warnings->push_back(Deprecated("push_to_hub_token", "--hub_token") + ".");
    a->set_hub_token(a->push_to_hub_token());
  }
  if (a->has_push_to_hub_model_id()) {
    a->set_hub_model_id(a->has_push_to_hub_organization()
                            ? a->push_to_hub_organization() + "/" + a->push_to_hub_model_id()
                            : a->push_to_hub_model_id());
    warnings->push_back(absl::StrCat(
        a->has_push_to_hub_organization()
            ? "`--push_to_hub_model_id` and `--push_to_hub_organization` are"
            : "`--push_to_hub_model_id` is",
        " deprecated and will be removed in version 5 of 🤗 Transformers. Use `--hub_model_id` "
        "instead and pass the full repo name to this argument (in this case ",
        a->hub_model_id(), ")."));
  } else if (a->has_push_to_hub_organization()) {
    a->set_hub_model_id(a->push_to_hub_organization() + "/" + Basename(a->output_dir()));
    warnings->push_back(absl::StrCat(
        "`--push_to_hub_organization` is deprecated and will be removed in version 5 of 🤗 "
        "Transformers. Use `--hub_model_id` instead and pass the full repo name to this argument "
        "(in this case ",
        a->hub_model_id(), ")."));
  }
  // A remote URL carrying credentials is refused here, before the arguments are logged.
  if (a->push_to_hub() && a->has_hub_model_id()) {
    RETURN_IF_ERROR(hub::RemoteUrl(a->hub_model_id(), hub::HubUrlFromEnvironment()).status());
  }
  // A git URL or path has no visibility to set (hub/hub_api.h): refused before any work.
  if (a->push_to_hub() && a->hub_private_repo() && a->has_hub_model_id() &&
      !hub::IsHubRepoId(a->hub_model_id())) {
    return Invalid(absl::StrCat(
        "--hub_private_repo: --hub_model_id ", hub::RedactUrlCredentials(a->hub_model_id()),
        " is a git URL or path, which has no visibility to set; drop the flag, or give "
        "hub_model_id as user/name of a Hub-compatible server (LOOM_HUB_URL / HF_ENDPOINT)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> PostInit(TrainingArguments* a,
                                                  const PostInitOptions& options) {
  // HF's __post_init__ order: the first failing check is the error a user sees.
  std::vector<std::string> warnings;
  const TrainingArguments given = *a;  // before aliases and derived values are filled in
  ConvertStrDicts(a);
  RETURN_IF_ERROR(ResolvePaths(a, options));
  RETURN_IF_ERROR(ResolveStrategiesAndSteps(a, &warnings));
  ResolveBestModelMetric(a);
  RETURN_IF_ERROR(CheckPrecisionAndScheduler(a, &warnings));
  ResolveTorchCompile(a, &warnings);
  RETURN_IF_ERROR(ResolveReportTo(a, options));
  RETURN_IF_ERROR(CheckWarmup(*a, &warnings));
  RETURN_IF_ERROR(ResolveFsdp(a, &warnings));
  RETURN_IF_ERROR(ResolveAcceleratorConfig(a, &warnings));
  RETURN_IF_ERROR(ResolveDebugAndDataloader(a, &warnings));
  RETURN_IF_ERROR(ResolveHubAliases(a, &warnings));
  RETURN_IF_ERROR(ResolveDeepSpeed(*a, options.world_size, &warnings));
  if (options.reject_unsupported) RETURN_IF_ERROR(CheckSupported(given, *a, options, &warnings));
  return warnings;
}

}  // namespace loom::args
