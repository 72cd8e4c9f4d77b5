#include "data/data_loader.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"

namespace loom::data {
namespace {

using BatchResult = absl::StatusOr<std::optional<Batch>>;

// The work for one batch: dataset indices (map-style) or examples already read (iterable).
struct BatchJob {
  std::vector<int64_t> indices;
  std::vector<Example> examples;
};

// Where an epoch's batches come from. NextJob is called in batch order, one call at a time;
// Run may be called from several threads at once.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The job of the next batch, std::nullopt after the last.
  virtual absl::StatusOr<std::optional<BatchJob>> NextJob() = 0;
  virtual absl::StatusOr<Batch> Run(BatchJob job) const = 0;
};

class MapSource : public BatchSource {
 public:
  MapSource(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Collator> collator,
            std::vector<int64_t> indices, int64_t batch_size, int64_t num_batches, int64_t first)
      : dataset_(std::move(dataset)),
        collator_(std::move(collator)),
        indices_(std::move(indices)),
        batch_size_(batch_size),
        num_batches_(num_batches),
        next_(first) {}

  absl::StatusOr<std::optional<BatchJob>> NextJob() override {
    if (next_ >= num_batches_) return std::nullopt;
    const int64_t begin = next_++ * batch_size_;
    const int64_t end = std::min<int64_t>(begin + batch_size_, indices_.size());
    BatchJob job;
    job.indices.assign(indices_.begin() + begin, indices_.begin() + end);
    return job;
  }

  absl::StatusOr<Batch> Run(BatchJob job) const override {
    std::vector<Example> examples;
    examples.reserve(job.indices.size());
    for (const int64_t index : job.indices) {
      ASSIGN_OR_RETURN(Example example, dataset_->Get(index),
                       absl::StrCat("dataset index ", index));
      examples.push_back(std::move(example));
    }
    ASSIGN_OR_RETURN(Batch batch, collator_->Collate(examples), "collating");
    return batch;
  }

 private:
  const std::shared_ptr<const Dataset> dataset_;
  const std::shared_ptr<const Collator> collator_;
  const std::vector<int64_t> indices_;
  const int64_t batch_size_;
  const int64_t num_batches_;
  int64_t next_;
};

class IterableSource : public BatchSource {
 public:
  IterableSource(std::shared_ptr<IterableDataset> dataset, std::unique_ptr<ExampleIterator> it,
                 std::shared_ptr<const Collator> collator, int64_t batch_size, bool drop_last,
                 int64_t skip_batches)
      : dataset_(std::move(dataset)),
        it_(std::move(it)),
        collator_(std::move(collator)),
        batch_size_(batch_size),
        drop_last_(drop_last),
        to_skip_(skip_batches > std::numeric_limits<int64_t>::max() / batch_size
                     ? std::numeric_limits<int64_t>::max()
                     : skip_batches * batch_size) {}

  absl::StatusOr<std::optional<BatchJob>> NextJob() override {
    if (done_) return std::nullopt;
    BatchJob job;
    while (to_skip_ > 0 || static_cast<int64_t>(job.examples.size()) < batch_size_) {
      absl::StatusOr<std::optional<Example>> example = it_->Next();
      if (!example.ok()) {
        done_ = true;
        return base::Annotate(example.status(),
                              absl::StrCat("reading example ", read_, " of the pass"));
      }
      if (!example->has_value()) {
        done_ = true;
        break;
      }
      ++read_;
      if (to_skip_ > 0) {
        --to_skip_;
      } else {
        job.examples.push_back(std::move(**example));
      }
    }
    if (job.examples.empty()) return std::nullopt;
    if (done_ && drop_last_ && static_cast<int64_t>(job.examples.size()) < batch_size_) {
      return std::nullopt;
    }
    return job;
  }

  absl::StatusOr<Batch> Run(BatchJob job) const override {
    ASSIGN_OR_RETURN(Batch batch, collator_->Collate(job.examples), "collating");
    return batch;
  }

 private:
  const std::shared_ptr<IterableDataset> dataset_;  // keeps the pass's dataset alive
  const std::unique_ptr<ExampleIterator> it_;
  const std::shared_ptr<const Collator> collator_;
  const int64_t batch_size_;
  const bool drop_last_;
  int64_t to_skip_;
  int64_t read_ = 0;
  bool done_ = false;
};

// Calls into user code (datasets, collators) with exceptions turned into statuses, and every
// error prefixed with where it happened.
class Guard {
 public:
  Guard(int64_t epoch, int64_t first_batch) : epoch_(epoch), first_batch_(first_batch) {}

  absl::StatusOr<std::optional<BatchJob>> NextJob(BatchSource& source, int64_t k) const {
    absl::StatusOr<std::optional<BatchJob>> job;
    try {
      job = source.NextJob();
    } catch (const std::exception& e) {
      job = base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "exception");
    }
    if (!job.ok()) return base::Annotate(job.status(), Where(k));
    return job;
  }

  BatchResult Run(const BatchSource& source, BatchJob job, int64_t k) const {
    absl::StatusOr<Batch> batch;
    try {
      batch = source.Run(std::move(job));
    } catch (const std::exception& e) {
      batch = base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "exception");
    }
    if (!batch.ok()) return base::Annotate(batch.status(), Where(k));
    return std::optional<Batch>(std::move(*batch));
  }

 private:
  std::string Where(int64_t k) const {
    return absl::StrCat("DataLoader epoch ", epoch_, ", batch ", first_batch_ + k);
  }

  int64_t epoch_;
  int64_t first_batch_;
};

bool IsFinal(const BatchResult& r) { return !r.ok() || !r->has_value(); }

// num_workers = 0: everything happens inside Next().
class InlineIterator : public BatchIterator {
 public:
  InlineIterator(std::unique_ptr<BatchSource> source, Guard guard)
      : source_(std::move(source)), guard_(guard) {}

  BatchResult Next() override {
    if (final_.has_value()) return *final_;
    absl::StatusOr<std::optional<BatchJob>> job = guard_.NextJob(*source_, count_);
    BatchResult result = !job.ok()           ? BatchResult(job.status())
                         : !job->has_value() ? BatchResult(std::nullopt)
                                             : guard_.Run(*source_, std::move(**job), count_);
    ++count_;
    if (IsFinal(result)) final_ = result;
    return result;
  }

 private:
  const std::unique_ptr<BatchSource> source_;
  const Guard guard_;
  int64_t count_ = 0;
  std::optional<BatchResult> final_;
};

// num_workers > 0: workers claim batch numbers in order (reading the source one at a time) while
// fewer than `max_ahead` batches are waiting beyond the consumer, prepare them concurrently, and
// Next() hands the results out by number.
class PrefetchIterator : public BatchIterator {
 public:
  PrefetchIterator(std::unique_ptr<BatchSource> source, Guard guard, int64_t max_ahead)
      : source_(std::move(source)), guard_(guard), max_ahead_(max_ahead) {}

  // Starts the workers; on failure stops the ones already started.
  absl::Status Start(int num_workers) {
    try {
      for (int i = 0; i < num_workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
    } catch (const std::system_error& e) {
      Stop();
      return absl::ResourceExhaustedError(absl::StrCat("DataLoader: starting ", num_workers,
                                                       " worker threads failed (", e.what(),
                                                       "); lower --dataloader_num_workers"));
    }
    return absl::OkStatus();
  }

  ~PrefetchIterator() override { Stop(); }

  BatchResult Next() override {
    if (final_.has_value()) return *final_;
    std::unique_lock<std::mutex> lock(mu_);
    result_cv_.wait(lock, [&] { return results_.count(consumed_) > 0; });
    BatchResult result = std::move(results_.extract(consumed_).mapped());
    ++consumed_;
    if (IsFinal(result)) {
      final_ = result;
      no_more_jobs_ = true;
    }
    work_cv_.notify_all();
    return result;
  }

 private:
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) {
      if (t.joinable()) t.join();
    }
  }

  void WorkerLoop() {
    while (true) {
      int64_t k;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] {
          return stop_ || no_more_jobs_ || (!claiming_ && claimed_ < consumed_ + max_ahead_);
        });
        if (stop_ || no_more_jobs_) return;
        claiming_ = true;
        k = claimed_++;
      }
      // Only the claiming worker touches the source's sequential state.
      absl::StatusOr<std::optional<BatchJob>> job = guard_.NextJob(*source_, k);
      {
        std::lock_guard<std::mutex> lock(mu_);
        claiming_ = false;
        if (!job.ok() || !job->has_value()) {
          no_more_jobs_ = true;
          results_.emplace(k, job.ok() ? BatchResult(std::nullopt) : BatchResult(job.status()));
          result_cv_.notify_all();
        }
      }
      work_cv_.notify_all();
      if (!job.ok() || !job->has_value()) continue;
      BatchResult result = guard_.Run(*source_, std::move(**job), k);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!result.ok()) no_more_jobs_ = true;  // later batches would never be read
        results_.emplace(k, std::move(result));
      }
      result_cv_.notify_all();
      work_cv_.notify_all();
    }
  }

  const std::unique_ptr<BatchSource> source_;
  const Guard guard_;
  const int64_t max_ahead_;
  std::vector<std::thread> workers_;

  std::mutex mu_;
  std::condition_variable work_cv_;    // workers wait for room, the source, or stop
  std::condition_variable result_cv_;  // Next() waits for its batch
  bool stop_ = false;
  bool claiming_ = false;      // a worker is reading the source
  bool no_more_jobs_ = false;  // the source ended or failed, or the consumer is done
  int64_t claimed_ = 0;        // batches handed to workers (relative to the first)
  int64_t consumed_ = 0;       // batches returned by Next()
  std::map<int64_t, BatchResult> results_;
  std::optional<BatchResult> final_;  // touched only by the consumer
};

absl::Status ValidateOptions(const DataLoaderOptions& o) {
  if (o.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("DataLoader: batch_size must be >= 1, got ", o.batch_size,
                     " (--per_device_train_batch_size / --per_device_eval_batch_size)"));
  }
  if (o.num_workers < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DataLoader: --dataloader_num_workers must be >= 0, got ", o.num_workers));
  }
  if (o.num_workers > 0 && o.prefetch_factor < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("DataLoader: --dataloader_prefetch_factor must be >= 1 with workers, got ",
                     o.prefetch_factor));
  }
  return absl::OkStatus();
}

}  // namespace

BatchIterator::~BatchIterator() = default;
DataLoader::~DataLoader() = default;

absl::StatusOr<std::unique_ptr<DataLoader>> DataLoader::Create(
    DataLoaderOptions options, std::shared_ptr<const Dataset> dataset,
    std::unique_ptr<Sampler> sampler, std::shared_ptr<const Collator> collator) {
  RETURN_IF_ERROR(ValidateOptions(options));
  if (dataset == nullptr || sampler == nullptr || collator == nullptr) {
    return absl::InvalidArgumentError(
        "DataLoader::Create: the dataset, sampler and collator must all be non-null");
  }
  std::unique_ptr<DataLoader> loader(new DataLoader());
  loader->options_ = options;
  loader->dataset_ = std::move(dataset);
  loader->sampler_ = std::move(sampler);
  loader->collator_ = std::move(collator);
  return loader;
}

absl::StatusOr<std::unique_ptr<DataLoader>> DataLoader::Create(
    DataLoaderOptions options, std::shared_ptr<IterableDataset> dataset,
    std::shared_ptr<const Collator> collator) {
  RETURN_IF_ERROR(ValidateOptions(options));
  if (dataset == nullptr || collator == nullptr) {
    return absl::InvalidArgumentError(
        "DataLoader::Create: the iterable dataset and the collator must be non-null");
  }
  std::unique_ptr<DataLoader> loader(new DataLoader());
  loader->options_ = options;
  loader->iterable_ = std::move(dataset);
  loader->collator_ = std::move(collator);
  return loader;
}

namespace {
int64_t BatchCount(int64_t examples, const DataLoaderOptions& o) {
  return o.drop_last ? examples / o.batch_size : (examples + o.batch_size - 1) / o.batch_size;
}
}  // namespace

namespace {

// Reports each batch handed out to the loader's BatchObserver.
class ObservedIterator : public BatchIterator {
 public:
  ObservedIterator(std::unique_ptr<BatchIterator> inner, DataLoader::BatchObserver observer,
                   int64_t epoch, int64_t first, int64_t num_batches)
      : inner_(std::move(inner)),
        observer_(std::move(observer)),
        epoch_(epoch),
        next_(first),
        num_batches_(num_batches) {}
  BatchResult Next() override {
    BatchResult batch = inner_->Next();
    if (batch.ok() && batch->has_value()) {
      observer_(epoch_, next_, num_batches_ >= 0 && next_ == num_batches_ - 1);
      ++next_;
    } else if (batch.ok() && !ended_) {
      ended_ = true;
      observer_(epoch_, -1, false);  // the epoch is over
    }
    return batch;
  }

 private:
  std::unique_ptr<BatchIterator> inner_;
  DataLoader::BatchObserver observer_;
  int64_t epoch_;
  int64_t next_;
  int64_t num_batches_;
  bool ended_ = false;
};

}  // namespace

std::optional<int64_t> DataLoader::NumBatches() const {
  if (sampler_ == nullptr) return std::nullopt;
  return BatchCount(sampler_->Size(), options_);
}

std::optional<int64_t> DataLoader::NumExamples() const {
  if (sampler_ == nullptr) return std::nullopt;
  return sampler_->Size();
}

int64_t DrawIteratorBaseSeed(at::Generator generator) {
  return at::empty({}, at::TensorOptions().dtype(at::kLong)).random_(generator).item<int64_t>();
}

void DataLoader::DrawBaseSeed() {
  const bool keeps_iterator = options_.persistent_workers && options_.num_workers > 0;
  if (keeps_iterator && drew_base_seed_) return;
  DrawIteratorBaseSeed(at::detail::getDefaultCPUGenerator());
  drew_base_seed_ = true;
}

absl::StatusOr<std::unique_ptr<BatchIterator>> DataLoader::Epoch(int64_t epoch,
                                                                 int64_t skip_batches) {
  if (skip_batches < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DataLoader::Epoch: skip_batches must be >= 0, got ", skip_batches));
  }
  std::unique_ptr<BatchSource> source;
  try {
    DrawBaseSeed();
    if (sampler_ != nullptr) {
      std::vector<int64_t> indices = sampler_->Indices(epoch);
      const int64_t size = dataset_->Size();
      for (size_t p = 0; p < indices.size(); ++p) {
        if (indices[p] < 0 || indices[p] >= size) {
          return absl::OutOfRangeError(
              absl::StrCat("DataLoader epoch ", epoch, ": the sampler's index ", indices[p],
                           " (position ", p, ") is outside the dataset of size ", size));
        }
      }
      const int64_t num_batches = BatchCount(static_cast<int64_t>(indices.size()), options_);
      source = std::make_unique<MapSource>(dataset_, collator_, std::move(indices),
                                           options_.batch_size, num_batches, skip_batches);
    } else {
      iterable_->SetEpoch(epoch);
      ASSIGN_OR_RETURN(std::unique_ptr<ExampleIterator> it, iterable_->Iterate(),
                       absl::StrCat("DataLoader epoch ", epoch, ": starting the pass"));
      source =
          std::make_unique<IterableSource>(iterable_, std::move(it), collator_, options_.batch_size,
                                           options_.drop_last, skip_batches);
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    absl::StrCat("DataLoader epoch ", epoch));
  }
  const Guard guard(epoch, skip_batches);
  std::unique_ptr<BatchIterator> it;
  if (options_.num_workers == 0) {
    it = std::make_unique<InlineIterator>(std::move(source), guard);
  } else {
    auto prefetch = std::make_unique<PrefetchIterator>(
        std::move(source), guard,
        static_cast<int64_t>(options_.num_workers) * options_.prefetch_factor);
    RETURN_IF_ERROR(prefetch->Start(options_.num_workers));
    it = std::move(prefetch);
  }
  if (!observer_) return it;
  return std::make_unique<ObservedIterator>(std::move(it), observer_, epoch, skip_batches,
                                            NumBatches().value_or(-1));
}

}  // namespace loom::data
