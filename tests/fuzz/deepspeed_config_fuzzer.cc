// libFuzzer target for the DeepSpeed JSON config reader and HF's "auto" resolution
// (args/deepspeed_config.h). The input is a DeepSpeed config (inline JSON, as --deepspeed takes
// it), optionally followed by "\n#model_config\n" and a model config.json whose hidden size
// the finalize phase uses (64 when absent). It must give an error or a config that:
//   * reads back from its own `raw` document to the same document, also after a dump/parse;
//   * resolves through TrainerConfigProcess + TrainerConfigFinalize with TrainingArguments
//     resolved by PostInit (one of four flag sets, picked by the input) to an error or a
//     config without "auto" at any key HF fills, whose ToJsonString() is read back again.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "args/deepspeed_config.h"
#include "args/parser.h"
#include "args/training_args.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using loom::args::DeepSpeedConfig;
using loom::args::TrainerDeepSpeedConfig;
using loom::args::TrainingArguments;
using json = nlohmann::ordered_json;
using fuzz::Check;

// TrainingArguments as a program gets them: flags parsed, then PostInit (fixed clock and host).
TrainingArguments Resolve(std::vector<std::string> flags) {
  TrainingArguments args;
  loom::args::ArgParser parser({.program = "fuzz"});
  parser.AddGroup("TrainingArguments", &args);
  flags.insert(flags.begin(), {"--output_dir", "out", "--report_to", "none"});
  Check(parser.Parse(flags).ok(), "the harness's flags parse");
  loom::args::PostInitOptions options;
  options.now = [] { return absl::FromUnixSeconds(1700000000); };
  options.hostname = "host";
  options.world_size = 1;
  Check(loom::args::PostInit(&args, options).ok(), "the harness's flags resolve");
  return args;
}

const std::vector<TrainingArguments>& ArgSets() {
  static const auto* sets = new std::vector<TrainingArguments>{
      Resolve({}),
      Resolve({"--bf16", "--save_on_each_node", "--gradient_accumulation_steps", "4",
               "--max_grad_norm", "0.5", "--learning_rate", "3e-5"}),
      Resolve({"--auto_find_batch_size", "--optim", "adafactor", "--warmup_steps", "7",
               "--per_device_train_batch_size", "3"}),
      Resolve({"--warmup_ratio", "0.1", "--adam_beta1", "0.8", "--weight_decay", "0.01",
               "--bf16_full_eval"}),
  };
  return *sets;
}

bool Inline(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

// The keys HF fills: after a successful finalize none of them may still be "auto" (the
// trainer reads them with value(), whose precondition is !is_auto()).
void CheckResolved(const DeepSpeedConfig& c) {
  auto resolved = [](const auto& opt) { return !opt.has_value() || !opt->is_auto(); };
  Check(resolved(c.train_batch_size), "train_batch_size resolved");
  Check(resolved(c.train_micro_batch_size_per_gpu), "train_micro_batch_size_per_gpu resolved");
  Check(resolved(c.gradient_accumulation_steps), "gradient_accumulation_steps resolved");
  Check(!c.gradient_clipping.is_auto(), "gradient_clipping resolved");
  Check(!c.fp16.enabled.is_auto() && !c.bf16.enabled.is_auto() && !c.amp.enabled.is_auto(),
        "precision flags resolved");
  Check(resolved(c.amp.opt_level), "amp.opt_level resolved");
  if (c.optimizer) {
    Check(!c.optimizer->lr.is_auto() && !c.optimizer->betas.is_auto() &&
              !c.optimizer->eps.is_auto() && !c.optimizer->weight_decay.is_auto(),
          "optimizer.params resolved");
  }
  if (c.scheduler) {
    Check(!c.scheduler->warmup_min_lr.is_auto() && !c.scheduler->warmup_max_lr.is_auto() &&
              !c.scheduler->warmup_num_steps.is_auto() && resolved(c.scheduler->total_num_steps),
          "scheduler.params resolved");
  }
  Check(!c.zero_optimization.reduce_bucket_size.is_auto(), "reduce_bucket_size resolved");
  if (c.IsZero3()) {
    Check(!c.zero_optimization.stage3_prefetch_bucket_size.is_auto() &&
              !c.zero_optimization.stage3_param_persistence_threshold.is_auto(),
          "ZeRO-3 bucket sizes resolved");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> parts = fuzz::SplitParts(input, "\n#model_config\n");
  const std::string& text = parts[0];

  std::vector<std::string> warnings;
  absl::StatusOr<DeepSpeedConfig> ds;
  if (Inline(text)) {
    ds = loom::args::LoadDeepSpeedConfig(text, &warnings);  // --deepspeed '{...}'
  } else {
    // Not inline JSON would be a path: read the text as a parsed document instead.
    const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return 0;
    ds = loom::args::ParseDeepSpeedConfig(doc, "fuzz.json", &warnings);
  }
  if (!ds.ok()) {
    Check(!ds.status().message().empty(), "errors say what is wrong");
    return 0;
  }
  const std::string dumped = ds->raw.dump();
  Check(json::parse(dumped) == ds->raw, "raw survives dump and parse");
  absl::StatusOr<DeepSpeedConfig> again = loom::args::ParseDeepSpeedConfig(ds->raw, "raw");
  Check(again.ok() && again->raw == ds->raw, "a config reads back from its own raw document");

  std::optional<int64_t> hidden = 64;
  if (parts.size() > 1) {
    const json model = json::parse(parts[1], nullptr, /*allow_exceptions=*/false);
    hidden = model.is_discarded() ? std::nullopt : loom::args::HiddenSizeOf(model);
  }
  unsigned pick = 0;
  for (unsigned char ch : input) pick += ch;
  const TrainingArguments& args = ArgSets()[pick % ArgSets().size()];
  const int world_size = 1 + static_cast<int>((pick / 4) % 3);

  TrainerDeepSpeedConfig hf(*std::move(ds));
  if (!hf.TrainerConfigProcess(args, world_size).ok()) return 0;
  Check(hf.dtype().ok(), "dtype is known after TrainerConfigProcess");
  if (!hf.TrainerConfigFinalize(args, hidden, 100 + static_cast<int64_t>(size % 1000)).ok()) {
    return 0;
  }
  CheckResolved(hf.config());
  Check(hf.CheckMismatches().ok(), "a finalized config has no mismatches");
  const std::string out = hf.ToJsonString();
  absl::StatusOr<DeepSpeedConfig> written = loom::args::LoadDeepSpeedConfig(out);
  Check(written.ok(), "the resolved config written out loads again");
  Check(written->raw == hf.config().raw, "the resolved config reads back to itself");
  return 0;
}
