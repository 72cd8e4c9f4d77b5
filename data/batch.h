// Named tensors: one dataset example or one collated batch, as HF passes `inputs` dicts
// (field name -> tensor; e.g. "input_ids", "attention_mask", "labels").
//
// Contract: an ordered map, so iteration order (and anything derived from it, such as the
// order of collated fields or of logged keys) is deterministic. An Example holds one
// example's tensors without a batch dimension; a Batch holds the same fields stacked (or
// padded) along a new leading batch dimension.
//
// Example:
//   data::Example ex = {{"input_ids", torch::tensor({101, 7592, 102})},
//                       {"labels", torch::tensor(1)}};
//   data::Batch batch = collator.Collate({ex, ex});   // batch["input_ids"] is [2, 3]
#ifndef LOOM_DATA_BATCH_H_
#define LOOM_DATA_BATCH_H_

#include <map>
#include <string>

#include <ATen/ATen.h>

namespace loom::data {

using TensorMap = std::map<std::string, at::Tensor>;
using Example = TensorMap;
using Batch = TensorMap;

}  // namespace loom::data

#endif  // LOOM_DATA_BATCH_H_
