// DataLoader: batches of one epoch, in order, optionally prepared ahead by worker threads (the
// C++ counterpart of torch.utils.data.DataLoader as HF's get_*_dataloader configure it;
// transformers 4.38 `Trainer.get_train_dataloader`, TrainingArguments dataloader_*).
//
// Contract:
//   - Map-style: epoch e takes sampler->Indices(e) and cuts it into consecutive batches of
//     batch_size; the last partial batch is kept unless drop_last (torch 1.13
//     `BatchSampler`). NumBatches() = Size/batch_size rounded down with drop_last, up without.
//     Indices outside the dataset are an OutOfRange error from Epoch().
//   - Iterable: Epoch(e) calls dataset->SetEpoch(e) (HF's set_epoch, as transformers 4.38
//     `Trainer._inner_training_loop` calls it), then Iterate(), and groups consecutive examples
//     into batches the same way. NumBatches() is std::nullopt.
//   - Random stream: every Epoch() call first draws one int64 `random_()` from torch's global CPU
//     generator, as torch 1.13's `_BaseDataLoaderIter.__init__` draws the iterator's
//     `_base_seed` (from the DataLoader's generator, which HF never sets) each time an epoch is
//     iterated — before the sampler runs. The value seeds worker processes in torch and is
//     unused here; the draw is what matters, since HF's dropout and generator-less samplers use
//     the same generator. With persistent_workers and num_workers > 0 only the first Epoch()
//     draws (torch keeps the iterator and `_reset`s it). Iterating the same loader in Python
//     and here therefore leaves the global generator in the same state.
//   - Epoch(e, skip_batches) yields the epoch's batches from number skip_batches on, as a resumed
//     run needs (HF's skip_first_batches). Skipped batches of a map-style dataset are neither
//     fetched nor collated; for an iterable dataset their examples are read and dropped.
//     Skipping past the end gives an empty epoch.
//   - num_workers = 0: Next() fetches and collates in the calling thread. num_workers = N > 0: N
//     threads prepare batches ahead, at most N * prefetch_factor beyond the last one returned
//     (PyTorch's bound), and Next() still returns exactly the batches, in exactly the order, of
//     num_workers = 0. Map-style workers call Dataset::Get concurrently; for iterable datasets
//     the examples are read by one worker at a time, in order, and collated concurrently.
//     (Deviation: PyTorch gives each worker process its own copy of an iterable dataset, which
//     repeats every example unless the dataset shards itself by worker; here the stream is read
//     once, so workers never change what an epoch yields.)
//   - Errors (a failing Get, Next or Collate, or a LibTorch exception thrown inside them) come
//     out of Next() when the consumer reaches the failing batch, as a Status whose message names
//     the epoch, the batch number and (for Get) the dataset index; every batch before it is
//     delivered first. After an error or the end, Next() keeps returning the same result.
//   - Destroying a BatchIterator mid-epoch stops its threads: it waits only for batches already
//     being prepared, then joins every worker. An iterator keeps the dataset and collator alive
//     and may outlive its DataLoader. Iterators of one DataLoader are independent (except that an
//     iterable dataset's SetEpoch affects passes started afterwards).
//   - A BatchIterator is used from one thread at a time.
//
// Example:
//   ASSIGN_OR_RETURN(auto loader,
//                    DataLoader::Create(DataLoaderOptions().set_batch_size(32).set_num_workers(2),
//                                       dataset, std::make_unique<RandomSampler>(n, seed),
//                                       std::make_shared<DefaultCollator>()));
//   ASSIGN_OR_RETURN(auto batches, loader->Epoch(epoch, /*skip_batches=*/steps_done));
//   while (true) {
//     ASSIGN_OR_RETURN(std::optional<Batch> batch, batches->Next());
//     if (!batch) break;
//     ...
//   }
#ifndef LOOM_DATA_DATA_LOADER_H_
#define LOOM_DATA_DATA_LOADER_H_

#include <ATen/core/Generator.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "data/batch.h"
#include "data/collator.h"
#include "data/dataset.h"
#include "data/sampler.h"

namespace loom::data {

// HF's per_device_*_batch_size, dataloader_drop_last, dataloader_num_workers,
// dataloader_prefetch_factor (None in HF means PyTorch's default 2) and
// dataloader_persistent_workers.
struct DataLoaderOptions {
  int64_t batch_size = 8;
  bool drop_last = false;
  int num_workers = 0;
  int prefetch_factor = 2;  // only used when num_workers > 0
  // Only changes the random stream: with num_workers > 0, just the first Epoch() draws a base
  // seed (see the contract above). loom's worker threads start per epoch either way.
  bool persistent_workers = false;

  DataLoaderOptions& set_batch_size(int64_t v) {
    batch_size = v;
    return *this;
  }
  DataLoaderOptions& set_drop_last(bool v) {
    drop_last = v;
    return *this;
  }
  DataLoaderOptions& set_num_workers(int v) {
    num_workers = v;
    return *this;
  }
  DataLoaderOptions& set_prefetch_factor(int v) {
    prefetch_factor = v;
    return *this;
  }
  DataLoaderOptions& set_persistent_workers(bool v) {
    persistent_workers = v;
    return *this;
  }
};

// torch 1.13 `_BaseDataLoaderIter.__init__`'s base-seed draw, `torch.empty((),
// dtype=torch.int64).random_(generator=...)`: one int64 from `generator`, returned.
int64_t DrawIteratorBaseSeed(at::Generator generator);

class BatchIterator {
 public:
  virtual ~BatchIterator();
  // The next batch, std::nullopt after the last one.
  virtual absl::StatusOr<std::optional<Batch>> Next() = 0;
};

class DataLoader {
 public:
  // InvalidArgument when an argument is null, batch_size < 1, num_workers < 0, or
  // prefetch_factor < 1 with num_workers > 0 (messages name the --dataloader_* flag).
  static absl::StatusOr<std::unique_ptr<DataLoader>> Create(
      DataLoaderOptions options, std::shared_ptr<const Dataset> dataset,
      std::unique_ptr<Sampler> sampler, std::shared_ptr<const Collator> collator);
  // An iterable dataset (no sampler: HF's get_train_dataloader uses none for datasets without a
  // length).
  static absl::StatusOr<std::unique_ptr<DataLoader>> Create(
      DataLoaderOptions options, std::shared_ptr<IterableDataset> dataset,
      std::shared_ptr<const Collator> collator);

  ~DataLoader();

  // Batches per epoch; std::nullopt for an iterable dataset.
  std::optional<int64_t> NumBatches() const;
  // Examples per epoch as the sampler yields them (HF's num_examples); nullopt when iterable.
  std::optional<int64_t> NumExamples() const;

  // One epoch's batches in order, from batch `skip_batches` on (InvalidArgument if negative).
  absl::StatusOr<std::unique_ptr<BatchIterator>> Epoch(int64_t epoch, int64_t skip_batches = 0);

  const DataLoaderOptions& options() const { return options_; }
  // The map-style dataset and sampler (null for an iterable dataset), and the iterable dataset
  // (null for a map-style one).
  const std::shared_ptr<const Dataset>& dataset() const { return dataset_; }
  const Sampler* sampler() const { return sampler_.get(); }
  const std::shared_ptr<IterableDataset>& iterable_dataset() const { return iterable_; }
  const std::shared_ptr<const Collator>& collator() const { return collator_; }

  // Called by the iterators of later Epoch() calls as each batch is handed out, with the
  // epoch, the batch's number in the epoch and whether it is the epoch's last (map-style: its
  // number is NumBatches() - 1; iterable: known only at the end, so always false), and once
  // more with batch -1 (and false) when Next() finds the epoch over — what accelerate's
  // DataLoaderShard reports as end_of_dataloader, set for the last batch and cleared after.
  using BatchObserver = std::function<void(int64_t epoch, int64_t batch, bool last)>;
  void SetBatchObserver(BatchObserver observer) { observer_ = std::move(observer); }

 private:
  DataLoader() = default;
  // One int64 draw from the global CPU generator, as torch makes per iterator (see above).
  void DrawBaseSeed();

  DataLoaderOptions options_;
  std::shared_ptr<const Dataset> dataset_;
  std::unique_ptr<Sampler> sampler_;
  std::shared_ptr<IterableDataset> iterable_;
  std::shared_ptr<const Collator> collator_;
  BatchObserver observer_;
  bool drew_base_seed_ = false;  // persistent workers: the one base-seed draw was made
};

}  // namespace loom::data

#endif  // LOOM_DATA_DATA_LOADER_H_
