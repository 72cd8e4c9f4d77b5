// libFuzzer target for trainer_state.json (trainer/trainer_state.h TrainerState::FromJson): any
// bytes must give an error or a state whose ToJson() text, in both layouts (transformers 4.38
// and 4.41), reads back (FromJson) to a state writing the same text.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_check.h"
#include "trainer/trainer_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using loom::trainer::TrainerState;
  using loom::trainer::TrainerStateLayout;
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<TrainerState> state = TrainerState::FromJson(text);
  if (!state.ok()) {
    fuzz::Check(!state.status().message().empty(), "errors say what is wrong");
    return 0;
  }
  for (TrainerStateLayout layout :
       {TrainerStateLayout::kTransformers438, TrainerStateLayout::kTransformers441}) {
    const std::string written = state->ToJson(layout);
    absl::StatusOr<TrainerState> back = TrainerState::FromJson(written);
    fuzz::Check(back.ok(), "a written trainer_state.json reads back");
    fuzz::Check(back->ToJson(layout) == written, "ToJson(FromJson(ToJson())) == ToJson()");
  }
  return 0;
}
