// Datasets: where examples come from (the C++ side of torch.utils.data.Dataset /
// IterableDataset as HF's Trainer consumes them; transformers 4.38 `Trainer.__init__`
// `train_dataset` / `eval_dataset`).
//
// Contract:
//   - Dataset is map-style: Size() examples, Get(i) for 0 <= i < Size(). Get must be safe to call
//     from several threads at once (DataLoader workers do) and must not crash on a bad index:
//     it returns OutOfRange naming the index and the size.
//   - TensorDataset holds named columns with equal first dimension; Get(i) is row i of every
//     column (a view sharing the column's storage, like Python's `tensor[i]`).
//   - ExampleListDataset holds whole examples (e.g. tokenized sentences of different lengths,
//     for PaddingCollator); Get(i) returns a copy of the map (the tensors are shared, not cloned).
//   - IterableDataset has no length. Before each epoch the DataLoader calls SetEpoch(epoch), as
//     HF does for datasets with `set_epoch` (transformers 4.38 `Trainer._inner_training_loop`);
//     a dataset that
//     shuffles should derive its randomness from the epoch (e.g. a generator seeded with
//     seed + epoch, as HF's IterableDatasetShard does). Iterate() then starts a fresh pass whose
//     ExampleIterator::Next() yields examples and std::nullopt at the end. The DataLoader calls
//     Next() from one thread at a time (possibly different threads over the pass).
//   - LengthsForGrouping gives the per-example lengths HF's group_by_length uses
//     (TrainingArguments group_by_length, length_column_name): the scalar in
//     `length_column_name` when examples have that field, else the first dimension of
//     `model_input_name` ("input_ids" by default).
//
// Example:
//   ASSIGN_OR_RETURN(std::shared_ptr<TensorDataset> ds,
//                    TensorDataset::Create({{"input_ids", ids}, {"label", labels}}));
//   ASSIGN_OR_RETURN(Example row, ds->Get(3));   // row["input_ids"] == ids[3]
#ifndef LOOM_DATA_DATASET_H_
#define LOOM_DATA_DATASET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/batch.h"

namespace loom::data {

class Dataset {
 public:
  virtual ~Dataset();
  virtual int64_t Size() const = 0;
  // Thread-safe; OutOfRange for an index outside [0, Size()).
  virtual absl::StatusOr<Example> Get(int64_t index) const = 0;
};

// Named columns of equal first dimension; example i is row i of each column.
class TensorDataset : public Dataset {
 public:
  // InvalidArgument when `columns` is empty, a column is undefined or 0-dimensional, or the first
  // dimensions differ (the message names both columns and sizes).
  static absl::StatusOr<std::shared_ptr<TensorDataset>> Create(TensorMap columns);

  int64_t Size() const override { return size_; }
  absl::StatusOr<Example> Get(int64_t index) const override;
  const TensorMap& columns() const { return columns_; }

 private:
  TensorMap columns_;
  int64_t size_ = 0;
};

// A list of whole examples; fields may differ in shape from example to example.
class ExampleListDataset : public Dataset {
 public:
  explicit ExampleListDataset(std::vector<Example> examples) : examples_(std::move(examples)) {}

  int64_t Size() const override { return static_cast<int64_t>(examples_.size()); }
  absl::StatusOr<Example> Get(int64_t index) const override;

 private:
  std::vector<Example> examples_;
};

// One pass over an IterableDataset.
class ExampleIterator {
 public:
  virtual ~ExampleIterator();
  // The next example, std::nullopt at the end of the pass (and on every later call).
  virtual absl::StatusOr<std::optional<Example>> Next() = 0;
};

class IterableDataset {
 public:
  virtual ~IterableDataset();
  // Called before each epoch's Iterate(); the default ignores it (HF calls set_epoch only on
  // datasets that have it).
  virtual void SetEpoch(int64_t epoch) {}
  // Starts a pass over the data of the epoch last given to SetEpoch.
  virtual absl::StatusOr<std::unique_ptr<ExampleIterator>> Iterate() = 0;
};

// Lengths for LengthGroupedSampler; see the header comment. InvalidArgument naming the example
// and field when an example has neither field, the length field is not a single number, or the
// input field is 0-dimensional.
absl::StatusOr<std::vector<int64_t>> LengthsForGrouping(
    const Dataset& dataset, const std::string& length_column_name = "length",
    const std::string& model_input_name = "input_ids");

}  // namespace loom::data

#endif  // LOOM_DATA_DATASET_H_
