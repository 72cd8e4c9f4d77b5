// A Python set of non-negative ints that iterates in CPython 3.11's order, so that code
// which draws from `list(some_set)` (optuna 4.6's GridSampler picks a random unvisited grid
// from `list(set(range(n)) - set(visited) - set(running))`) draws the same element. CPython
// orders a set by hash-table slot; a small int hashes to itself, but which slot it lands in
// depends on the table size and on how the set was built, so the order is often not sorted.
//
// Contract: mirrors CPython 3.11's Objects/setobject.c for int keys (hash == value): tables of
// 8 slots and up, linear probing over 9 slots then perturbed probing, growth to 4x the used
// count when 3/5 full, `set(iterable)` by repeated add, and `a - b` either by copying `a` and
// discarding `b`'s elements (when len(a) / 4 > len(b)) or by adding a's elements not in b to a
// fresh set, in a's iteration order. Items() is `list(s)`.
//
// Example:
//   PythonIntSet unvisited = PythonIntSet::Range(n).Minus(PythonIntSet::Of(visited));
//   std::vector<int64_t> target = unvisited.Items();   // list(...) in CPython's order
#ifndef LOOM_HPSEARCH_PYTHON_INT_SET_H_
#define LOOM_HPSEARCH_PYTHON_INT_SET_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::hpsearch {

class PythonIntSet {
 public:
  PythonIntSet() : table_(kMinSize, kEmpty) {}
  static PythonIntSet Range(int64_t n);                       // set(range(n))
  static PythonIntSet Of(const std::vector<int64_t>& items);  // set(items)

  void Add(int64_t key);
  bool Contains(int64_t key) const;
  PythonIntSet Minus(const PythonIntSet& other) const;  // self - other
  std::vector<int64_t> Items() const;                   // list(self)
  size_t size() const { return used_; }

 private:
  static constexpr size_t kMinSize = 8;
  static constexpr int64_t kEmpty = -1;
  static constexpr int64_t kDummy = -2;

  void Resize(size_t min_used);
  void InsertClean(int64_t key);
  void Discard(int64_t key);
  PythonIntSet Copy() const;

  std::vector<int64_t> table_;
  size_t fill_ = 0;  // used plus dummies
  size_t used_ = 0;
};

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_PYTHON_INT_SET_H_
