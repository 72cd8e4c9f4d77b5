// libFuzzer target for the study journal (hpsearch/journal.h, optuna 4.6's JournalFileBackend
// format): every line of the input goes through ParseOperation, the operations that parse are
// replayed, and what replay builds must hold together: each study's trials numbered 0..n-1,
// every parameter with its distribution, and each trial written back by CreateTrialOp (what
// loom appends) parses and replays to the same parameters, state and values.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/python_json.h"
#include "hpsearch/journal.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom::hpsearch;  // NOLINT
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<nlohmann::ordered_json> ops;
  for (const std::string& line : fuzz::SplitParts(text, "\n")) {
    absl::StatusOr<nlohmann::ordered_json> op = ParseOperation(line);
    if (op.ok()) ops.push_back(*std::move(op));
  }
  absl::StatusOr<JournalState> state = Replay(ops);
  if (!state.ok()) {
    fuzz::Check(!state.status().message().empty(), "errors say what is wrong");
    return 0;
  }
  for (const auto& [id, study] : state->studies) {
    const std::vector<FrozenTrial> trials = state->TrialsOf(study);
    for (size_t i = 0; i < trials.size(); ++i) {
      const FrozenTrial& t = trials[i];
      fuzz::Check(t.number == static_cast<int64_t>(i), "trials are numbered in order");
      for (const auto& [name, value] : t.params) {
        fuzz::Check(t.distributions.count(name) == 1, "every parameter has its distribution");
      }
      // What loom writes for this trial reads back as the same trial.
      absl::StatusOr<nlohmann::ordered_json> create = ParseOperation(
          CreateStudyOp("w", "s", Direction::kMinimize).dump());
      fuzz::Check(create.ok(), "CreateStudyOp parses");
      FrozenTrial copy = t;
      copy.system_attrs = nlohmann::json::object();
      copy.user_attrs = nlohmann::json::object();
      const nlohmann::ordered_json written = CreateTrialOp("w", 0, copy);
      // (JournalFile::Append's own encoding: Python's json.dumps, NaN included.)
      absl::StatusOr<nlohmann::ordered_json> reparsed =
          ParseOperation(loom::base::PyJsonDumps(written, -1, false));
      fuzz::Check(reparsed.ok(), "CreateTrialOp's line parses");
      absl::StatusOr<JournalState> again = Replay({*create, *reparsed});
      fuzz::Check(again.ok(), "CreateTrialOp's line replays");
      const std::vector<FrozenTrial> back = again->TrialsOf(again->studies.begin()->second);
      fuzz::Check(back.size() == 1, "one trial");
      fuzz::Check(back[0].state == t.state, "the state survives");
      fuzz::Check(back[0].params.size() == t.params.size(), "the parameters survive");
      fuzz::Check(back[0].intermediate_values.size() == t.intermediate_values.size(),
                  "the intermediate values survive");
    }
  }
  return 0;
}
