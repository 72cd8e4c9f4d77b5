// JsonToIValue: a JSON document as the c10::IValue a torch pickle holds — what Python's
// json.loads would give, so that torch.load of a pickle written from it (torch::pickle_save)
// returns the same dicts, lists, strings, ints, floats, bools and None.
//
// Contract: objects become Dict[str, Any] in document order, arrays List[Any], integers int64,
// other numbers double, null None.
//
// Example:
//   c10::IValue config = JsonToIValue(plan.config.raw);  // DeepSpeed's ds_config entry
#ifndef LOOM_BASE_JSON_IVALUE_H_
#define LOOM_BASE_JSON_IVALUE_H_

#include <ATen/core/ivalue.h>

#include "nlohmann/json.hpp"

namespace loom::base {

c10::IValue JsonToIValue(const nlohmann::ordered_json& j);

}  // namespace loom::base

#endif  // LOOM_BASE_JSON_IVALUE_H_
