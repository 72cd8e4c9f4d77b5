#include "checkpoint/ivalue_cycles.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>

#include <unordered_map>
#include <utility>
#include <vector>

namespace loom::checkpoint {
namespace {

using c10::IValue;

bool IsContainer(const IValue& v) { return v.isList() || v.isGenericDict() || v.isTuple(); }

// The containers directly inside `v`.
std::vector<IValue> Children(const IValue& v) {
  std::vector<IValue> out;
  auto add = [&](const IValue& child) {
    if (IsContainer(child)) out.push_back(child);
  };
  if (v.isList()) {
    for (const IValue& e : v.toListRef()) add(e);
  } else if (v.isGenericDict()) {
    for (const auto& entry : v.toGenericDict()) {
      add(entry.key());
      add(entry.value());
    }
  } else if (v.isTuple()) {
    for (const IValue& e : v.toTupleRef().elements()) add(e);
  }
  return out;
}

enum class Mark { kOnPath, kDone };

// Depth-first search with an explicit stack; returns whether a back edge (a cycle) was seen and
// fills `reached` with every container visited.
bool FindCycle(const std::vector<IValue>& roots, std::vector<IValue>* reached) {
  std::unordered_map<const void*, Mark> marks;
  struct Frame {
    IValue value;
    std::vector<IValue> children;
    size_t next = 0;
  };
  bool cycle = false;
  for (const IValue& root : roots) {
    if (!IsContainer(root) || marks.count(root.internalToPointer())) continue;
    std::vector<Frame> path;
    marks[root.internalToPointer()] = Mark::kOnPath;
    reached->push_back(root);
    path.push_back({root, Children(root)});
    while (!path.empty()) {
      Frame& top = path.back();
      if (top.next == top.children.size()) {
        marks[top.value.internalToPointer()] = Mark::kDone;
        path.pop_back();
        continue;
      }
      IValue child = top.children[top.next++];
      auto [it, fresh] = marks.emplace(child.internalToPointer(), Mark::kOnPath);
      if (!fresh) {
        cycle = cycle || it->second == Mark::kOnPath;
        continue;
      }
      reached->push_back(child);
      std::vector<IValue> grandchildren = Children(child);
      path.push_back({std::move(child), std::move(grandchildren)});
    }
  }
  return cycle;
}

}  // namespace

bool BreakIValueCycles(const std::vector<IValue>& roots) {
  std::vector<IValue> reached;
  if (!FindCycle(roots, &reached)) return false;
  for (IValue& v : reached) {
    if (v.isList()) v.toList().clear();
    if (v.isGenericDict()) v.toGenericDict().clear();
  }
  return true;
}

}  // namespace loom::checkpoint
