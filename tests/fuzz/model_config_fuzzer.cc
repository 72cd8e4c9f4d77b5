// libFuzzer target for the config.json readers of loom's models and generation_config.json:
// BertConfig, LlamaConfig, T5Config (models/*/..._config.h) and GenerationConfig
// (modeling/generation_config.h). The first input byte picks the reader (mod 4), the rest is
// the file. Each must give an error or a config that Validate() judges without crashing and
// whose ToJson() text reads back (FromJson) to a config writing the same text.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "modeling/generation_config.h"
#include "models/bert/bert_config.h"
#include "models/llama/llama_config.h"
#include "models/t5/t5_config.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using fuzz::Check;

template <typename Config>
void RoundTrip(const std::string& text) {
  absl::StatusOr<Config> config = Config::FromJson(text, "config.json");
  if (!config.ok()) {
    Check(!config.status().message().empty(), "errors say what is wrong");
    return;
  }
  if constexpr (std::is_same_v<Config, loom::modeling::GenerationConfig>) {
    (void)config->Validate();
  } else {
    (void)config->Validate("config.json");
  }
  const std::string written = config->ToJson();
  absl::StatusOr<Config> back = Config::FromJson(written, "written config.json");
  Check(back.ok(), "a config's ToJson() reads back");
  Check(back->ToJson() == written, "ToJson(FromJson(ToJson())) == ToJson()");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0:
      RoundTrip<loom::models::bert::BertConfig>(text);
      break;
    case 1:
      RoundTrip<loom::models::llama::LlamaConfig>(text);
      break;
    case 2:
      RoundTrip<loom::models::t5::T5Config>(text);
      break;
    default:
      RoundTrip<loom::modeling::GenerationConfig>(text);
      break;
  }
  return 0;
}
