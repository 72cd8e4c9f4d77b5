// libFuzzer target for --fsdp_config (args/fsdp_config.h): the input is the JSON file given as
// --fsdp_config (the path HF reads with "fsdp_" prefixes stripped) and, when it starts with '{',
// also the same text given inline. ResolveFsdp runs with one of five --fsdp option sets (picked
// by the input). It must give an error or a resolved fsdp_config that
//   * is a JSON object FsdpConfigOf reads, with min_num_params >= 0 and xla* keys present;
//   * resolves again to the same text (PostInit may run twice) when no deprecated flag is set.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "args/fsdp_config.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using loom::args::TrainingArguments;
using json = nlohmann::ordered_json;
using fuzz::Check;

TrainingArguments WithOptions(unsigned pick) {
  TrainingArguments args;
  switch (pick % 5) {
    case 0:
      break;
    case 1:
      args.add_fsdp("full_shard");
      args.add_fsdp("auto_wrap");
      break;
    case 2:
      args.add_fsdp("shard_grad_op");
      args.add_fsdp("offload");
      break;
    case 3:
      args.add_fsdp("hybrid_shard");
      args.set_fsdp_min_num_params(1000);  // deprecated flags
      break;
    default:
      args.add_fsdp("full_shard");
      args.set_fsdp_transformer_layer_cls_to_wrap("BertLayer");
      break;
  }
  return args;
}

void Exercise(const std::string& given, unsigned pick) {
  TrainingArguments args = WithOptions(pick);
  args.set_fsdp_config(given);
  std::vector<std::string> warnings;
  if (!loom::args::ResolveFsdp(&args, &warnings).ok()) return;
  const json cfg = json::parse(args.fsdp_config(), nullptr, /*allow_exceptions=*/false);
  Check(!cfg.is_discarded() && cfg.is_object(), "the resolved fsdp_config is a JSON object");
  Check(cfg.contains("xla") && cfg.contains("xla_fsdp_v2") && cfg.contains("xla_fsdp_grad_ckpt"),
        "the resolved fsdp_config has HF's xla defaults");
  absl::StatusOr<loom::args::FsdpConfig> typed = loom::args::FsdpConfigOf(args);
  Check(typed.ok(), "FsdpConfigOf reads a resolved fsdp_config");
  Check(typed->min_num_params >= 0, "min_num_params is never negative");
  if (args.has_fsdp_transformer_layer_cls_to_wrap() || args.fsdp_min_num_params() > 0) return;
  const std::string first = args.fsdp_config();
  std::vector<std::string> again_warnings;
  Check(loom::args::ResolveFsdp(&args, &again_warnings).ok(), "a resolved config resolves again");
  Check(args.fsdp_config() == first, "resolving twice changes nothing");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  unsigned pick = 0;
  for (unsigned char ch : text) pick += ch;
  static const std::string path = fuzz::ScratchFile("fsdp_config.json");
  fuzz::WriteFileOrDie(path, text);
  Exercise(path, pick);
  if (!text.empty() && text[0] == '{') Exercise(text, pick / 5);
  return 0;
}
