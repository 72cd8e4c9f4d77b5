#include "data/shard_sampler.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

namespace loom::data {
namespace {

std::vector<std::vector<int64_t>> Batch(const std::vector<int64_t>& order, int64_t batch_size,
                                        bool drop_last) {
  std::vector<std::vector<int64_t>> batches;
  for (size_t start = 0; start < order.size(); start += batch_size) {
    const size_t end = std::min(order.size(), start + static_cast<size_t>(batch_size));
    if (drop_last && static_cast<int64_t>(end - start) < batch_size) break;
    batches.emplace_back(order.begin() + start, order.begin() + end);
  }
  return batches;
}

std::vector<int64_t> Slice(const std::vector<int64_t>& batch, int64_t begin, int64_t length) {
  const int64_t b = std::min<int64_t>(begin, batch.size());
  const int64_t e = std::min<int64_t>(begin + length, batch.size());
  return std::vector<int64_t>(batch.begin() + b, batch.begin() + e);
}

// split_batches: slice r of every batch.
std::vector<std::vector<int64_t>> SplitShard(const std::vector<std::vector<int64_t>>& global,
                                             const BatchShardOptions& o) {
  std::vector<std::vector<int64_t>> out;
  const int64_t slice = o.batch_size / o.num_processes;
  const int64_t begin = slice * o.process_index;
  for (const auto& batch : global) {
    if (static_cast<int64_t>(batch.size()) == o.batch_size)
      out.push_back(Slice(batch, begin, slice));
  }
  if (global.empty() || o.drop_last || static_cast<int64_t>(global.back().size()) == o.batch_size) {
    return out;
  }
  std::vector<int64_t> last = global.back();
  if (!o.even_batches) {
    if (static_cast<int64_t>(last.size()) > begin) out.push_back(Slice(last, begin, slice));
    return out;
  }
  // Pad the short last batch with the first batch's indices (repeated for tiny datasets).
  std::vector<int64_t> initial = global.front();
  while (static_cast<int64_t>(initial.size()) < o.batch_size) {
    const std::vector<int64_t> copy = initial;
    initial.insert(initial.end(), copy.begin(), copy.end());
  }
  last.insert(last.end(), initial.begin(), initial.end());
  out.push_back(Slice(last, begin, slice));
  return out;
}

// Round-robin: batch i goes to rank i % N, whole rounds only, then the padded last round.
std::vector<std::vector<int64_t>> RoundRobinShard(const std::vector<std::vector<int64_t>>& global,
                                                  const BatchShardOptions& o) {
  const int64_t n = o.num_processes;
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> initial;  // the first N batches' indices, for cycling
  std::vector<int64_t> mine;     // this rank's batch of the current round
  for (size_t i = 0; i < global.size(); ++i) {
    const auto& batch = global[i];
    if (!o.drop_last && static_cast<int64_t>(i) < n) {
      initial.insert(initial.end(), batch.begin(), batch.end());
    }
    if (static_cast<int64_t>(i) % n == o.process_index) mine = batch;
    if (static_cast<int64_t>(i) % n == n - 1 &&
        static_cast<int64_t>(batch.size()) == o.batch_size) {
      out.push_back(std::move(mine));
      mine.clear();
    }
  }
  if (o.drop_last || initial.empty()) return out;
  if (!o.even_batches) {
    if (!mine.empty()) out.push_back(std::move(mine));
    return out;
  }
  if (static_cast<int64_t>(mine.size()) == o.batch_size) out.push_back(mine);
  while (static_cast<int64_t>(initial.size()) < n * o.batch_size) {
    const std::vector<int64_t> copy = initial;
    initial.insert(initial.end(), copy.begin(), copy.end());
  }
  // Continue the last round: a full last batch was already taken by its rank.
  int64_t idx = static_cast<int64_t>(global.size()) - 1;
  std::vector<int64_t> batch = global.back();
  if (static_cast<int64_t>(batch.size()) == o.batch_size) {
    batch.clear();
    ++idx;
  }
  size_t cycle = 0;
  while (idx % n != 0 || !batch.empty()) {
    const size_t end = cycle + o.batch_size - batch.size();
    batch.insert(batch.end(), initial.begin() + cycle, initial.begin() + end);
    if (idx % n == o.process_index) out.push_back(batch);
    cycle = end;
    batch.clear();
    ++idx;
  }
  return out;
}

}  // namespace

std::vector<std::vector<int64_t>> ShardBatches(const std::vector<std::vector<int64_t>>& global,
                                               const BatchShardOptions& options) {
  return options.split_batches ? SplitShard(global, options) : RoundRobinShard(global, options);
}

std::unique_ptr<Sampler> AccelerateShardedOrder(const Sampler& sampler, at::Generator generator) {
  const auto* random = dynamic_cast<const RandomSampler*>(&sampler);
  if (random == nullptr || random->shared_generator()) return nullptr;
  return RandomSampler::SharedGenerator(random->Size(), std::move(generator));
}

absl::StatusOr<std::unique_ptr<BatchShardSampler>> BatchShardSampler::Create(
    std::unique_ptr<Sampler> inner, BatchShardOptions options) {
  if (inner == nullptr)
    return absl::InvalidArgumentError("BatchShardSampler: inner sampler is null");
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("BatchShardSampler: batch size must be >= 1, got ", options.batch_size));
  }
  if (options.num_processes < 1 || options.process_index < 0 ||
      options.process_index >= options.num_processes) {
    return absl::InvalidArgumentError(absl::StrCat("BatchShardSampler: process index ",
                                                   options.process_index, " is not in [0, ",
                                                   options.num_processes, ")"));
  }
  if (options.split_batches && options.batch_size % options.num_processes != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "To use split_batches (--accelerator_config '{\"split_batches\": true}'), the batch size (",
        options.batch_size, ") needs to be a round multiple of the number of processes (",
        options.num_processes, "); change --per_device_train_batch_size or the process count"));
  }
  return std::unique_ptr<BatchShardSampler>(new BatchShardSampler(std::move(inner), options));
}

BatchShardSampler::BatchShardSampler(std::unique_ptr<Sampler> inner, BatchShardOptions options)
    : inner_(std::move(inner)), options_(options) {
  // The shard's length depends only on the inner sampler's size: count it on 0..n-1.
  std::vector<int64_t> positions(inner_->Size());
  std::iota(positions.begin(), positions.end(), 0);
  for (const auto& batch :
       ShardBatches(Batch(positions, options_.batch_size, options_.drop_last), options_)) {
    size_ += static_cast<int64_t>(batch.size());
  }
}

std::vector<std::vector<int64_t>> BatchShardSampler::Batches(int64_t epoch) const {
  return ShardBatches(Batch(inner_->Indices(epoch), options_.batch_size, options_.drop_last),
                      options_);
}

std::vector<int64_t> BatchShardSampler::Indices(int64_t epoch) const {
  std::vector<int64_t> out;
  out.reserve(size_);
  for (const auto& batch : Batches(epoch)) out.insert(out.end(), batch.begin(), batch.end());
  return out;
}

absl::StatusOr<std::unique_ptr<EvalShardSampler>> EvalShardSampler::Create(int64_t num_examples,
                                                                           int64_t batch_size,
                                                                           int num_processes,
                                                                           int process_index,
                                                                           bool drop_last) {
  if (batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("EvalShardSampler: batch size must be >= 1, got ", batch_size));
  }
  if (num_processes < 1 || process_index < 0 || process_index >= num_processes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "EvalShardSampler: process index ", process_index, " is not in [0, ", num_processes, ")"));
  }
  std::unique_ptr<EvalShardSampler> s(new EvalShardSampler());
  const int64_t n = drop_last ? std::max<int64_t>(num_examples, 0) / batch_size * batch_size
                              : std::max<int64_t>(num_examples, 0);
  const int64_t batches = (n + batch_size - 1) / batch_size;
  s->rounds_ = (batches + num_processes - 1) / num_processes;
  for (int64_t b = process_index; b < batches; b += num_processes) {
    for (int64_t i = b * batch_size; i < std::min(n, (b + 1) * batch_size); ++i) {
      s->indices_.push_back(i);
    }
    ++s->real_batches_;
  }
  if (s->real_batches_ < s->rounds_) {
    for (int64_t i = 0; i < std::min(n, batch_size); ++i) s->indices_.push_back(i);
  }
  return s;
}

}  // namespace loom::data
