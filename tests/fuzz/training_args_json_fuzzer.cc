// libFuzzer target for TrainingArguments from a JSON file (`train.py args.json`, HF's
// parse_json_file; args/parser.h ArgParser::ParseJson) followed by PostInit
// (args/training_args.h), which reads the dict-valued fields (--deepspeed, --fsdp_config,
// --accelerator_config, lr_scheduler_kwargs, ...) given inline. Any bytes must give an error or
// arguments whose serialized dict (args/serialize.h ToJsonString, as training_args.bin and
// the model card hold it) reads back (FromJsonString) to arguments serializing the same way.
// Documents naming a file for --deepspeed, --fsdp_config or --accelerator_config are skipped:
// the harness does not let the input pick files to read.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "args/parser.h"
#include "args/serialize.h"
#include "args/training_args.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using json = nlohmann::ordered_json;
  using loom::args::TrainingArguments;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return 0;
  for (const char* key : {"deepspeed", "fsdp_config", "accelerator_config"}) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_string()) continue;
    const std::string& v = it->get_ref<const std::string&>();
    const size_t first = v.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && v[first] != '{') return 0;
  }
  TrainingArguments args;
  loom::args::ArgParser parser({.program = "fuzz"});
  parser.AddGroup("TrainingArguments", &args);
  if (!parser.ParseJson(doc, "args.json").ok()) return 0;
  loom::args::PostInitOptions options;
  options.now = [] { return absl::FromUnixSeconds(1700000000); };
  options.hostname = "host";
  options.world_size = 2;
  if (!loom::args::PostInit(&args, options).ok()) return 0;
  const std::string written = loom::args::ToJsonString(args);
  TrainingArguments back;
  fuzz::Check(loom::args::FromJsonString(written, "written", &back).ok(),
              "serialized TrainingArguments read back");
  fuzz::Check(loom::args::ToJsonString(back) == written,
              "ToJsonString(FromJsonString(ToJsonString(args))) == ToJsonString(args)");
  return 0;
}
