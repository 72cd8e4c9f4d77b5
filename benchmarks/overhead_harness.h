// What the loop-overhead benchmarks (trainer_overhead, accelerator_overhead) share: the
// workload both sides of each train on, and the reporter that keeps each side's best round.
//
//   OverheadTask(): BagOfEmbeddingsClassifier's task (examples/synthetic/synthetic_task.h) —
//     kOverheadBatch * 50 examples of 128 tokens, vocabulary 2000, hidden 384, 4 labels, seed 1.
//   OverheadDataset(): that task's dataset, made once per process.
//   BestRoundReporter: console output as usual, plus best_[side], the best real time per
//     iteration of the benchmarks named "<side>/...", for the ratio the benchmark prints.
#ifndef LOOM_BENCHMARKS_OVERHEAD_HARNESS_H_
#define LOOM_BENCHMARKS_OVERHEAD_HARNESS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "examples/synthetic/synthetic_task.h"

namespace loom::benchmarks {

inline constexpr int64_t kOverheadBatch = 32;

inline examples::synthetic::SyntheticTaskOptions OverheadTask() {
  return examples::synthetic::SyntheticTaskOptions()
      .set_num_examples(kOverheadBatch * 50)
      .set_seq_len(128)
      .set_vocab_size(2000)
      .set_hidden_size(384)
      .set_num_labels(4)
      .set_seed(1);
}

inline std::shared_ptr<data::TensorDataset> OverheadDataset() {
  static auto* ds = new std::shared_ptr<data::TensorDataset>(
      *examples::synthetic::MakeSyntheticDataset(OverheadTask()));
  return *ds;
}

class BestRoundReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const std::string name = r.run_name.function_name;
      const std::string side = name.substr(0, name.find('/'));
      const double t = r.GetAdjustedRealTime();
      if (!best_.count(side) || t < best_[side]) best_[side] = t;
    }
  }
  std::map<std::string, double> best_;
};

}  // namespace loom::benchmarks

#endif  // LOOM_BENCHMARKS_OVERHEAD_HARNESS_H_
