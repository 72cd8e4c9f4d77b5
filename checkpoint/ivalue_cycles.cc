#include "checkpoint/ivalue_cycles.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>

#include <algorithm>
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

namespace {

// Every container reachable from `roots`, each once, with its height (1 + its tallest child's;
// 1 for one holding no container), by a post-order walk with an explicit stack. The roots must
// hold no cycle.
std::vector<std::pair<IValue, size_t>> Heights(const std::vector<IValue>& roots) {
  std::unordered_map<const void*, size_t> height;
  std::vector<std::pair<IValue, size_t>> out;
  struct Frame {
    IValue value;
    std::vector<IValue> children;
    size_t next = 0;
    size_t tallest_child = 0;
  };
  for (const IValue& root : roots) {
    if (!IsContainer(root) || height.count(root.internalToPointer())) continue;
    std::vector<Frame> path;
    path.push_back({root, Children(root)});
    while (!path.empty()) {
      Frame& top = path.back();
      if (top.next == top.children.size()) {
        const size_t h = top.tallest_child + 1;
        height[top.value.internalToPointer()] = h;
        out.emplace_back(std::move(top.value), h);
        path.pop_back();
        if (!path.empty()) path.back().tallest_child = std::max(path.back().tallest_child, h);
        continue;
      }
      IValue child = top.children[top.next++];
      auto known = height.find(child.internalToPointer());
      if (known != height.end()) {
        top.tallest_child = std::max(top.tallest_child, known->second);
        continue;
      }
      std::vector<IValue> grandchildren = Children(child);
      path.push_back({std::move(child), std::move(grandchildren)});
    }
  }
  return out;
}

}  // namespace

size_t IValueNestingDepth(const std::vector<IValue>& roots) {
  size_t deepest = 0;
  for (const auto& [value, h] : Heights(roots)) deepest = std::max(deepest, h);
  return deepest;
}

// Tallest first: a container is always taller than everything it holds.
std::vector<IValue> ContainersTopDown(const std::vector<IValue>& roots) {
  std::vector<std::pair<IValue, size_t>> all = Heights(roots);
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<IValue> out;
  out.reserve(all.size());
  for (auto& [value, h] : all) out.push_back(std::move(value));
  return out;
}

void ReleaseTopDown(std::vector<IValue>& containers) {
  for (IValue& v : containers) v = IValue();
  containers.clear();
}

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
