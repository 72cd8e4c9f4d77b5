// Samplers: the order in which one epoch visits a map-style dataset (torch.utils.data samplers as
// HF's Trainer builds them; transformers 4.38 `Trainer._get_train_sampler` /
// `get_train_dataloader`, accelerate 0.27 `data_loader.py` `SeedableRandomSampler`).
//
// Contract:
//   - Sampler::Indices(epoch) is the whole index order of epoch `epoch` (0-based): Size()
//     indices. It depends only on the sampler's settings and `epoch` (except the shared-generator
//     LengthGroupedSampler below), so a resumed run recomputes the same order. Samplers compose:
//     a wrapper (e.g. a distributed shard by rank) owns an inner Sampler and transforms its
//     Indices(epoch).
//   - SequentialSampler(n): 0, 1, ..., n-1 (evaluation and prediction).
//   - RandomSampler(n, seed): epoch e is exactly Python's
//       torch.randperm(n, generator=torch.Generator().manual_seed(seed + e))
//     (accelerate's SeedableRandomSampler, which HF uses with the default
//     accelerator_config.use_seedable_sampler=True; `seed` is data_seed, or seed when unset).
//   - RandomSampler::SharedGenerator(n, generator): torch 1.13's RandomSampler without a
//     generator: each Indices() call draws one int64 `random_()` from `generator` as the seed s
//     of a fresh generator and returns randperm(n) from Generator().manual_seed(s). (A torch
//     DataLoader draws its iterator's base seed from the same global generator just before;
//     loom's DataLoader does that too, data_loader.h.) It ignores
//     `epoch`: call it once per epoch, in order, from one thread. With
//     at::detail::getDefaultCPUGenerator() this is the order of every rank of a multi-process
//     HF Trainer (accelerate 0.27 leaves this sampler in place at num_processes > 1; see
//     shard_sampler.h AccelerateShardedOrder), and it depends on everything else that drew from
//     that generator since the seed was set.
//   - GetLengthGroupedIndices(lengths, batch_size, mega_batch_mult, generator) is HF's
//     trainer_pt_utils.get_length_grouped_indices: a randperm from `generator`, cut into
//     megabatches of mega_batch_mult * batch_size (default: min(n / (4 * batch_size), 50), at
//     least 1; the last may be shorter), each sorted by length, longest first, with ties in
//     permutation order (Python's sort is stable); then the first element of the megabatch whose
//     first (longest) element is the longest overall (the first such megabatch) swaps places with
//     the very first element, so the longest example comes first.
//   - LengthGroupedSampler runs it once per epoch. HF's Trainer builds it with batch_size =
//     per_device_train_batch_size * gradient_accumulation_steps and no generator. Two modes:
//       Create(lengths, batch_size, seed): epoch e draws from Generator().manual_seed(seed + e),
//         the seeding of HF's DistributedLengthGroupedSampler and of accelerate's seedable
//         sampler: reproducible per epoch, so resuming needs no sampler state (loom's default).
//       CreateSharedGenerator(lengths, batch_size, generator): HF 4.38-4.41 bit for bit. There
//         the sampler has no generator, so randperm draws from torch's global CPU generator
//         (pass at::detail::getDefaultCPUGenerator() here); torch 1.13's DataLoader draws one
//         int64 `random_()` from the same generator for its base seed whenever an epoch's
//         iterator is created, before the sampler runs (loom's DataLoader too, data_loader.h).
//         Each Indices() call draws the permutation and ignores `epoch`: call it once per
//         epoch, in order, from one thread. The
//         order then depends on everything else that used the generator (model init, dropout,
//         evaluation loaders), as in HF.
//   - Deviation: on an empty dataset HF's get_length_grouped_indices fails (argmax of an empty
//     tensor); here it returns no indices.
//
// Example:
//   auto sampler = std::make_unique<RandomSampler>(dataset->Size(), args.data_seed);
//   std::vector<int64_t> order = sampler->Indices(/*epoch=*/2);
#ifndef LOOM_DATA_SAMPLER_H_
#define LOOM_DATA_SAMPLER_H_

#include <ATen/core/Generator.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace loom::data {

class Sampler {
 public:
  virtual ~Sampler();
  // How many indices Indices() returns.
  virtual int64_t Size() const = 0;
  // The index order of epoch `epoch` (0-based).
  virtual std::vector<int64_t> Indices(int64_t epoch) const = 0;
};

// 0..n-1 every epoch (n < 0 behaves as 0).
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n) : n_(n < 0 ? 0 : n) {}
  int64_t Size() const override { return n_; }
  std::vector<int64_t> Indices(int64_t epoch) const override;

 private:
  int64_t n_;
};

// torch.randperm(n, generator=Generator().manual_seed(seed + epoch)) (n < 0 behaves as 0), or
// with SharedGenerator torch's generator-less RandomSampler (see the header comment).
class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t n, uint64_t seed) : n_(n < 0 ? 0 : n), seed_(seed) {}
  // `generator` must be defined (e.g. at::detail::getDefaultCPUGenerator()).
  static std::unique_ptr<RandomSampler> SharedGenerator(int64_t n, at::Generator generator);

  int64_t Size() const override { return n_; }
  std::vector<int64_t> Indices(int64_t epoch) const override;
  // The seed of the seed + epoch mode (0 in shared-generator mode).
  uint64_t seed() const { return seed_; }
  bool shared_generator() const { return shared_generator_.has_value(); }

 private:
  int64_t n_;
  uint64_t seed_;
  std::optional<at::Generator> shared_generator_;  // set in shared-generator mode
};

// HF's get_length_grouped_indices (see the header comment). `batch_size` and `mega_batch_mult`
// must be >= 1 (LengthGroupedSampler::Create checks them).
std::vector<int64_t> GetLengthGroupedIndices(absl::Span<const int64_t> lengths, int64_t batch_size,
                                             std::optional<int64_t> mega_batch_mult,
                                             at::Generator generator);

class LengthGroupedSampler : public Sampler {
 public:
  // Per-epoch seeding (seed + epoch). InvalidArgument when batch_size < 1 or
  // mega_batch_mult < 1.
  static absl::StatusOr<std::unique_ptr<LengthGroupedSampler>> Create(
      std::vector<int64_t> lengths, int64_t batch_size, uint64_t seed,
      std::optional<int64_t> mega_batch_mult = std::nullopt);
  // HF's exact stream from a shared generator (see the header comment); same checks, plus
  // `generator` must be defined.
  static absl::StatusOr<std::unique_ptr<LengthGroupedSampler>> CreateSharedGenerator(
      std::vector<int64_t> lengths, int64_t batch_size, at::Generator generator,
      std::optional<int64_t> mega_batch_mult = std::nullopt);

  int64_t Size() const override { return static_cast<int64_t>(lengths_.size()); }
  std::vector<int64_t> Indices(int64_t epoch) const override;

 private:
  LengthGroupedSampler(std::vector<int64_t> lengths, int64_t batch_size,
                       std::optional<int64_t> mega_batch_mult)
      : lengths_(std::move(lengths)), batch_size_(batch_size), mega_batch_mult_(mega_batch_mult) {}

  std::vector<int64_t> lengths_;
  int64_t batch_size_;
  std::optional<int64_t> mega_batch_mult_;
  uint64_t seed_ = 0;
  std::optional<at::Generator> shared_generator_;  // set in shared-generator mode
};

}  // namespace loom::data

#endif  // LOOM_DATA_SAMPLER_H_
