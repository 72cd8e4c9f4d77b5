#include "data/dataset.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"

namespace loom::data {
namespace {

absl::Status CheckIndex(int64_t index, int64_t size) {
  if (index < 0 || index >= size) {
    return absl::OutOfRangeError(absl::StrCat("dataset index ", index, " is out of range [0, ",
                                              size, "): the sampler and the dataset disagree"));
  }
  return absl::OkStatus();
}

}  // namespace

Dataset::~Dataset() = default;
ExampleIterator::~ExampleIterator() = default;
IterableDataset::~IterableDataset() = default;

absl::StatusOr<std::shared_ptr<TensorDataset>> TensorDataset::Create(TensorMap columns) {
  if (columns.empty()) {
    return absl::InvalidArgumentError("TensorDataset::Create: no columns; pass at least one");
  }
  std::string first_name;
  int64_t size = -1;
  for (const auto& [name, column] : columns) {
    if (!column.defined() || column.dim() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("TensorDataset::Create: column '", name,
                       "' must be a tensor with at least one dimension (examples along dim 0)"));
    }
    if (size < 0) {
      size = column.size(0);
      first_name = name;
    } else if (column.size(0) != size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TensorDataset::Create: column '", name, "' has ", column.size(0), " rows but column '",
          first_name, "' has ", size, "; all columns need the same size(0)"));
    }
  }
  auto dataset = std::shared_ptr<TensorDataset>(new TensorDataset());
  dataset->columns_ = std::move(columns);
  dataset->size_ = size;
  return dataset;
}

absl::StatusOr<Example> TensorDataset::Get(int64_t index) const {
  RETURN_IF_ERROR(CheckIndex(index, size_));
  Example row;
  try {
    for (const auto& [name, column] : columns_) row.emplace(name, column.select(0, index));
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    absl::StrCat("TensorDataset::Get(", index, ")"));
  }
  return row;
}

absl::StatusOr<Example> ExampleListDataset::Get(int64_t index) const {
  RETURN_IF_ERROR(CheckIndex(index, Size()));
  return examples_[index];
}

absl::StatusOr<std::vector<int64_t>> LengthsForGrouping(const Dataset& dataset,
                                                        const std::string& length_column_name,
                                                        const std::string& model_input_name) {
  std::vector<int64_t> lengths;
  lengths.reserve(dataset.Size());
  for (int64_t i = 0; i < dataset.Size(); ++i) {
    ASSIGN_OR_RETURN(const Example example, dataset.Get(i));
    if (auto it = example.find(length_column_name); it != example.end()) {
      if (it->second.numel() != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("example ", i, ": length field '", length_column_name,
                         "' must hold one number, it has ", it->second.numel(),
                         " elements (set --length_column_name to the right column)"));
      }
      try {
        lengths.push_back(it->second.item<int64_t>());
      } catch (const std::exception& e) {
        return base::TorchErrorToStatus(
            e, absl::StatusCode::kInvalidArgument,
            absl::StrCat("example ", i, ": length field '", length_column_name, "'"));
      }
      continue;
    }
    auto it = example.find(model_input_name);
    if (it == example.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "example ", i, " has neither a '", length_column_name, "' field nor a '",
          model_input_name,
          "' field to measure; group_by_length needs one of them (see --length_column_name)"));
    }
    if (it->second.dim() == 0) {
      return absl::InvalidArgumentError(absl::StrCat("example ", i, ": field '", model_input_name,
                                                     "' is a scalar and has no length"));
    }
    lengths.push_back(it->second.size(0));
  }
  return lengths;
}

}  // namespace loom::data
