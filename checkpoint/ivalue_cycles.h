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
// Nesting (values nested thousands deep, which c10's destructors and every recursive walk would
// follow until the stack runs out):
//   - IValueNestingDepth(roots): the longest chain of containers nested in one another (0 when
//     no root is a container), computed iteratively; the roots must hold no cycle.
//   - ContainersTopDown(roots): every container reachable, each once, every one before those it
//     holds; ReleaseTopDown(containers) then drops them in that order, so that once nothing
//     else holds them each is destroyed while everything inside it is still held: freeing a
//     value of any depth takes no recursion.
//
// Example:
//   if (BreakIValueCycles({result})) return absl::InvalidArgumentError("a container holds itself");
//   if (IValueNestingDepth({result}) > 100) {
//     std::vector<c10::IValue> all = ContainersTopDown({result});
//     result = c10::IValue();
//     ReleaseTopDown(all);
//   }
#ifndef LOOM_CHECKPOINT_IVALUE_CYCLES_H_
#define LOOM_CHECKPOINT_IVALUE_CYCLES_H_

#include <ATen/core/ivalue.h>

#include <cstddef>
#include <vector>

namespace loom::checkpoint {

bool BreakIValueCycles(const std::vector<c10::IValue>& roots);
size_t IValueNestingDepth(const std::vector<c10::IValue>& roots);
std::vector<c10::IValue> ContainersTopDown(const std::vector<c10::IValue>& roots);
void ReleaseTopDown(std::vector<c10::IValue>& containers);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_IVALUE_CYCLES_H_
