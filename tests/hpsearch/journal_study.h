// The studies of sequential_study.h run through hpsearch::Study and its journal file instead of
// an in-memory history (testonly), optionally interrupted: what optuna_parity_test compares with
// optuna's uninterrupted study to show that the journal, the sampler's restored random stream
// and the re-run of an abandoned trial change nothing.
//
// Contract: RunJournalStudy(config, journal, interrupt_at) asks each trial from a Study over
// `journal`, evaluates the objective and reports / tells it as RunSequentialStudy does (prune ""
// or "median"; "schedule" is Unimplemented). With interrupt_at = k, the first Study is dropped
// right after it hands out trial k (left RUNNING, as by a killed process) and a second Study on
// the same journal finishes the search, running trial k again first. Returns the journal's
// trials.
//
// Example:
//   ASSIGN_OR_RETURN(std::vector<FrozenTrial> trials,
//                    RunJournalStudy(config, dir + "/s.journal", /*interrupt_at=*/12));
#ifndef LOOM_TESTS_HPSEARCH_JOURNAL_STUDY_H_
#define LOOM_TESTS_HPSEARCH_JOURNAL_STUDY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hpsearch/trial.h"
#include "tests/hpsearch/sequential_study.h"

namespace loom::hpsearch::testing {

absl::StatusOr<std::vector<FrozenTrial>> RunJournalStudy(const StudyConfig& config,
                                                         const std::string& journal,
                                                         std::optional<int64_t> interrupt_at);

}  // namespace loom::hpsearch::testing

#endif  // LOOM_TESTS_HPSEARCH_JOURNAL_STUDY_H_
