// Cycles in c10::IValue graphs. Python's pickle can build a container that holds itself (a dict
// or list set into itself through the memo); Python's garbage collector frees such a cycle, but
// c10's reference counts never do, and any later walk of the value (printing, conversion,
// comparison) would not end. loom's pickle reader (python_unpickler.h) refuses such files: no
// torch state dict, optimizer, scheduler or RNG file holds a cycle.
//
// Contract: BreakIValueCycles(roots) walks every list, dict (keys and values) and tuple
// reachable from `roots` (iteratively: a deeply nested value does not exhaust the stack) and
// returns whether any of them lies on a cycle. When one does, it clears every list and dict it
// reached, which breaks all cycles (a cycle always passes through a list or dict: a tuple is
// built from finished values), so that dropping the roots frees everything; the values are then
// unusable. Without a cycle nothing is changed.
//
// Example:
//   if (BreakIValueCycles({result})) return absl::InvalidArgumentError("a container holds itself");
#ifndef LOOM_CHECKPOINT_IVALUE_CYCLES_H_
#define LOOM_CHECKPOINT_IVALUE_CYCLES_H_

#include <ATen/core/ivalue.h>

#include <vector>

namespace loom::checkpoint {

bool BreakIValueCycles(const std::vector<c10::IValue>& roots);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_IVALUE_CYCLES_H_
