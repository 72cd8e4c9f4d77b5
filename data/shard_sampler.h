// BatchShardSampler: one rank's share of another sampler's batches in a multi-process run, as
// HF's Trainer gets it from accelerate (accelerate.data_loader.BatchSamplerShard, which
// Accelerator.prepare puts under every dataloader; accelerate 0.27 `data_loader.py`,
// AcceleratorConfig split_batches / even_batches).
//
// Contract:
//   - The inner sampler's Indices(epoch) is cut into batches of `batch_size` (the last one
//     shorter, or dropped with drop_last): the global batches every rank sees alike.
//   - split_batches = false (the default): rank r takes global batches r, r + N, r + 2N, ... of
//     every full round of N batches. The incomplete last round is, with drop_last, dropped;
//     with even_batches (default), completed by cycling from the first N batches' indices so
//     every rank yields the same number of full batches; without even_batches, each rank that
//     has a batch in it yields that batch as it is.
//   - split_batches = true: every global batch (batch_size must be a multiple of N) is cut in N
//     equal slices and rank r takes slice r; an incomplete last batch is dropped with drop_last,
//     padded from the first batch with even_batches, or sliced as it is otherwise.
//   - Indices(epoch) is the concatenation of this rank's batches; a DataLoader over it with
//     batch size BatchSizePerRank() (batch_size, or batch_size / N with split_batches) and the
//     same drop_last yields exactly those batches. Size() is that length, the same every epoch.
//   - With N ranks and even_batches, step k of every rank together covers exactly the global
//     batches a single process with batch size N x batch_size (or batch_size with
//     split_batches) would take at step k, plus, in the last round only, the cycled padding.
//   - What is sharded: accelerate 0.27 `prepare_data_loader` (with use_seedable_sampler, HF's
//     default) builds a SeedableRandomSampler for a RandomSampler, but with several processes it
//     assigns it to the BatchSamplerShard (`dataloader.batch_sampler.sampler = sampler`), where
//     nothing reads it: the torch BatchSampler inside keeps the RandomSampler it was given, which
//     in HF's Trainer has no generator, and accelerate synchronizes no generator for a map-style
//     dataset (rng_types ["generator"] drops "generator"). So every rank draws each epoch's
//     permutation from its own global torch generator, alike on all ranks because each set the
//     same seed and did the same since. AccelerateShardedOrder(sampler, generator) gives that
//     sampler: RandomSampler::SharedGenerator(n, generator) for a (seedable) RandomSampler,
//     nullptr (shard the sampler as it is) for any other. One process keeps the seedable order
//     (no shard, so the assignment reaches the BatchSampler): call it only at num_processes > 1.
//     (accelerate 0.29 also sets the inner BatchSampler's sampler; 0.27 does not.)
//
// Example:
//   ASSIGN_OR_RETURN(auto shard, BatchShardSampler::Create(
//       std::make_unique<RandomSampler>(n, seed),
//       BatchShardOptions().set_batch_size(8).set_num_processes(2).set_process_index(rank)));
//   loader_options.set_batch_size(shard->BatchSizePerRank());
#ifndef LOOM_DATA_SHARD_SAMPLER_H_
#define LOOM_DATA_SHARD_SAMPLER_H_

#include <ATen/core/Generator.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "data/sampler.h"

namespace loom::data {

struct BatchShardOptions {
  int64_t batch_size = 1;  // the global batch sampler's batch size
  bool drop_last = false;  // dataloader_drop_last
  int num_processes = 1;
  int process_index = 0;
  bool split_batches = false;  // accelerator_config.split_batches
  bool even_batches = true;    // accelerator_config.even_batches

  BatchShardOptions& set_batch_size(int64_t v) {
    batch_size = v;
    return *this;
  }
  BatchShardOptions& set_drop_last(bool v) {
    drop_last = v;
    return *this;
  }
  BatchShardOptions& set_num_processes(int v) {
    num_processes = v;
    return *this;
  }
  BatchShardOptions& set_process_index(int v) {
    process_index = v;
    return *this;
  }
  BatchShardOptions& set_split_batches(bool v) {
    split_batches = v;
    return *this;
  }
  BatchShardOptions& set_even_batches(bool v) {
    even_batches = v;
    return *this;
  }
};

// One rank's batches of `global_batches` (see the header comment); exposed for tests.
std::vector<std::vector<int64_t>> ShardBatches(const std::vector<std::vector<int64_t>>& global,
                                               const BatchShardOptions& options);

// The sampler accelerate 0.27 really shards in place of `sampler` (see the header comment):
// RandomSampler::SharedGenerator(sampler.Size(), generator) when `sampler` is a seed + epoch
// RandomSampler, else nullptr. `generator` is the process's global one in a real run
// (at::detail::getDefaultCPUGenerator()).
std::unique_ptr<Sampler> AccelerateShardedOrder(const Sampler& sampler, at::Generator generator);

class BatchShardSampler : public Sampler {
 public:
  // InvalidArgument when inner is null, batch_size < 1, num_processes < 1, process_index is
  // outside [0, num_processes), or split_batches with a batch_size that is not a multiple of
  // num_processes (accelerate's message, naming --per_device_train_batch_size).
  static absl::StatusOr<std::unique_ptr<BatchShardSampler>> Create(std::unique_ptr<Sampler> inner,
                                                                   BatchShardOptions options);

  int64_t Size() const override { return size_; }
  std::vector<int64_t> Indices(int64_t epoch) const override;
  // This rank's batches of epoch `epoch`.
  std::vector<std::vector<int64_t>> Batches(int64_t epoch) const;

  int64_t BatchSizePerRank() const {
    return options_.split_batches ? options_.batch_size / options_.num_processes
                                  : options_.batch_size;
  }
  const BatchShardOptions& options() const { return options_; }
  const Sampler& inner() const { return *inner_; }

 private:
  BatchShardSampler(std::unique_ptr<Sampler> inner, BatchShardOptions options);

  std::unique_ptr<Sampler> inner_;
  BatchShardOptions options_;
  int64_t size_ = 0;
};

// EvalShardSampler: rank r's share of a sequential evaluation in a multi-process run, such that
// gathering every rank's results step by step in rank order gives exactly the single-process
// results. The single-process batches (0..n-1 in batches of batch_size, the last one shorter)
// are dealt round robin: rank r gets batches r, r + N, ... . Every rank takes part in
// Rounds() = ceil(batches / N) steps; a rank with no batch left in the last round gets a copy
// of batch 0 as padding, to be run and then dropped: its first RealBatches() batches are real.
// With drop_last the short last batch does not exist (as in the single-process loader), so
// every batch is full and the DataLoader over it must not drop anything (drop_last false).
// (accelerate instead completes the last batch with samples from the start and truncates
// after gathering, which changes the last batch's mean loss; this keeps it exact.)
class EvalShardSampler : public Sampler {
 public:
  // InvalidArgument when batch_size < 1 or process_index is outside [0, num_processes).
  static absl::StatusOr<std::unique_ptr<EvalShardSampler>> Create(int64_t num_examples,
                                                                  int64_t batch_size,
                                                                  int num_processes,
                                                                  int process_index,
                                                                  bool drop_last = false);
  int64_t Size() const override { return static_cast<int64_t>(indices_.size()); }
  std::vector<int64_t> Indices(int64_t) const override { return indices_; }
  int64_t RealBatches() const { return real_batches_; }
  int64_t Rounds() const { return rounds_; }

 private:
  EvalShardSampler() = default;
  std::vector<int64_t> indices_;
  int64_t real_batches_ = 0;
  int64_t rounds_ = 0;
};

}  // namespace loom::data

#endif  // LOOM_DATA_SHARD_SAMPLER_H_
