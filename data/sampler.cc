#include "data/sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

namespace loom::data {
namespace {

std::vector<int64_t> ToVector(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// Python's torch.randperm(n, generator=g) with the default int64 dtype: the same ATen kernel.
std::vector<int64_t> RandPerm(int64_t n, at::Generator generator) {
  return ToVector(at::randperm(n, generator, at::TensorOptions().dtype(at::kLong)));
}

at::Generator SeededGenerator(uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

absl::Status CheckGroupingArgs(int64_t batch_size, std::optional<int64_t> mega_batch_mult) {
  if (batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("LengthGroupedSampler: batch_size must be >= 1, got ", batch_size,
                     " (HF passes per_device_train_batch_size * gradient_accumulation_steps)"));
  }
  if (mega_batch_mult.has_value() && *mega_batch_mult < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LengthGroupedSampler: mega_batch_mult must be >= 1 or unset, got ", *mega_batch_mult));
  }
  return absl::OkStatus();
}

}  // namespace

Sampler::~Sampler() = default;

std::vector<int64_t> SequentialSampler::Indices(int64_t /*epoch*/) const {
  std::vector<int64_t> order(n_);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

std::unique_ptr<RandomSampler> RandomSampler::SharedGenerator(int64_t n, at::Generator generator) {
  auto sampler = std::make_unique<RandomSampler>(n, /*seed=*/0);
  sampler->shared_generator_ = std::move(generator);
  return sampler;
}

std::vector<int64_t> RandomSampler::Indices(int64_t epoch) const {
  if (!shared_generator_.has_value()) {
    // accelerate 0.27 `SeedableRandomSampler`: a fresh generator seeded with seed + epoch, so
    // every epoch's permutation is a pure function of (n, seed, epoch).
    return RandPerm(n_, SeededGenerator(seed_ + static_cast<uint64_t>(epoch)));
  }
  // torch 1.13 `RandomSampler.__iter__` without a generator seeds a fresh one from one draw
  // (the DataLoader's base-seed draw, data_loader.h, came just before, as in torch).
  const auto int64 = at::TensorOptions().dtype(at::kLong);
  const int64_t seed = at::empty({}, int64).random_(*shared_generator_).item<int64_t>();
  return RandPerm(n_, SeededGenerator(static_cast<uint64_t>(seed)));
}

std::vector<int64_t> GetLengthGroupedIndices(absl::Span<const int64_t> lengths, int64_t batch_size,
                                             std::optional<int64_t> mega_batch_mult,
                                             at::Generator generator) {
  const int64_t n = static_cast<int64_t>(lengths.size());
  if (n == 0) return {};
  // HF's default: about four megabatches, at most 50 batches each, never 0.
  const int64_t mult =
      mega_batch_mult.value_or(std::max<int64_t>(1, std::min<int64_t>(n / (batch_size * 4), 50)));
  // mult > n / batch_size means one megabatch holds everything (and avoids overflow).
  const int64_t megabatch = mult > n / batch_size ? n : mult * batch_size;

  std::vector<int64_t> order = RandPerm(n, std::move(generator));
  const auto longer = [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; };
  int64_t longest_start = 0;  // start of the first megabatch holding the overall maximum
  for (int64_t start = 0; start < n; start += megabatch) {
    const auto first = order.begin() + start;
    std::stable_sort(first, order.begin() + std::min(n, start + megabatch), longer);
    if (lengths[*first] > lengths[order[longest_start]]) longest_start = start;
  }
  std::swap(order[0], order[longest_start]);
  return order;
}

absl::StatusOr<std::unique_ptr<LengthGroupedSampler>> LengthGroupedSampler::Create(
    std::vector<int64_t> lengths, int64_t batch_size, uint64_t seed,
    std::optional<int64_t> mega_batch_mult) {
  if (absl::Status s = CheckGroupingArgs(batch_size, mega_batch_mult); !s.ok()) return s;
  std::unique_ptr<LengthGroupedSampler> sampler(
      new LengthGroupedSampler(std::move(lengths), batch_size, mega_batch_mult));
  sampler->seed_ = seed;
  return sampler;
}

absl::StatusOr<std::unique_ptr<LengthGroupedSampler>> LengthGroupedSampler::CreateSharedGenerator(
    std::vector<int64_t> lengths, int64_t batch_size, at::Generator generator,
    std::optional<int64_t> mega_batch_mult) {
  if (absl::Status s = CheckGroupingArgs(batch_size, mega_batch_mult); !s.ok()) return s;
  if (!generator.defined()) {
    return absl::InvalidArgumentError(
        "LengthGroupedSampler::CreateSharedGenerator: the generator is undefined; pass e.g. "
        "at::detail::getDefaultCPUGenerator()");
  }
  std::unique_ptr<LengthGroupedSampler> sampler(
      new LengthGroupedSampler(std::move(lengths), batch_size, mega_batch_mult));
  sampler->shared_generator_ = std::move(generator);
  return sampler;
}

std::vector<int64_t> LengthGroupedSampler::Indices(int64_t epoch) const {
  if (!shared_generator_.has_value()) {
    return GetLengthGroupedIndices(lengths_, batch_size_, mega_batch_mult_,
                                   SeededGenerator(seed_ + static_cast<uint64_t>(epoch)));
  }
  // The DataLoader's base-seed draw (data_loader.h) came just before, when the epoch began.
  return GetLengthGroupedIndices(lengths_, batch_size_, mega_batch_mult_, *shared_generator_);
}

}  // namespace loom::data
