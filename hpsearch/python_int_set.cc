#include "hpsearch/python_int_set.h"

#include <utility>

namespace loom::hpsearch {
namespace {

constexpr size_t kLinearProbes = 9;  // CPython's LINEAR_PROBES
constexpr int kPerturbShift = 5;     // CPython's PERTURB_SHIFT

}  // namespace

PythonIntSet PythonIntSet::Range(int64_t n) {
  PythonIntSet s;
  for (int64_t i = 0; i < n; ++i) s.Add(i);
  return s;
}

PythonIntSet PythonIntSet::Of(const std::vector<int64_t>& items) {
  PythonIntSet s;
  for (int64_t i : items) s.Add(i);
  return s;
}

// CPython's set_table_resize: the smallest power of two above min_used, entries re-inserted
// in slot order, dummies dropped.
void PythonIntSet::Resize(size_t min_used) {
  size_t size = kMinSize;
  while (size <= min_used) size <<= 1;
  std::vector<int64_t> old = std::move(table_);
  table_.assign(size, kEmpty);
  fill_ = used_;
  for (int64_t key : old) {
    if (key >= 0) InsertClean(key);
  }
}

// CPython's set_insert_clean (no dummies, key absent).
void PythonIntSet::InsertClean(int64_t key) {
  const size_t mask = table_.size() - 1;
  size_t perturb = static_cast<size_t>(key);
  size_t i = static_cast<size_t>(key) & mask;
  while (true) {
    if (table_[i] == kEmpty) {
      table_[i] = key;
      return;
    }
    if (i + kLinearProbes <= mask) {
      for (size_t j = 1; j <= kLinearProbes; ++j) {
        if (table_[i + j] == kEmpty) {
          table_[i + j] = key;
          return;
        }
      }
    }
    perturb >>= kPerturbShift;
    i = (i * 5 + 1 + perturb) & mask;
  }
}

// CPython's set_add_entry.
void PythonIntSet::Add(int64_t key) {
  const size_t mask = table_.size() - 1;
  size_t perturb = static_cast<size_t>(key);
  size_t i = static_cast<size_t>(key) & mask;
  ptrdiff_t free_slot = -1;
  while (true) {
    const size_t probes = (i + kLinearProbes <= mask) ? kLinearProbes : 0;
    for (size_t k = 0; k <= probes; ++k) {
      const int64_t entry = table_[i + k];
      if (entry == kEmpty) {
        if (free_slot >= 0) {
          table_[free_slot] = key;
          ++used_;
          return;
        }
        table_[i + k] = key;
        ++fill_;
        ++used_;
        if (fill_ * 5 >= mask * 3) Resize(used_ > 50000 ? used_ * 2 : used_ * 4);
        return;
      }
      if (entry == key) return;
      if (entry == kDummy && free_slot < 0) free_slot = static_cast<ptrdiff_t>(i + k);
    }
    perturb >>= kPerturbShift;
    i = (i * 5 + 1 + perturb) & mask;
  }
}

bool PythonIntSet::Contains(int64_t key) const {
  for (int64_t entry : table_) {
    if (entry == key) return true;
  }
  return false;
}

void PythonIntSet::Discard(int64_t key) {
  for (int64_t& entry : table_) {
    if (entry == key) {
      entry = kDummy;
      --used_;
      return;
    }
  }
}

// CPython's set_copy (make_new_set + set_merge into an empty 8-slot set).
PythonIntSet PythonIntSet::Copy() const {
  PythonIntSet s;
  if (used_ == 0) return s;
  if ((s.fill_ + used_) * 5 >= (s.table_.size() - 1) * 3) s.Resize((s.used_ + used_) * 2);
  if (s.table_.size() == table_.size() && fill_ == used_) {
    s.table_ = table_;
    s.fill_ = fill_;
    s.used_ = used_;
    return s;
  }
  s.fill_ = s.used_ = used_;
  for (int64_t key : table_) {
    if (key >= 0) s.InsertClean(key);
  }
  return s;
}

// CPython's set_difference.
PythonIntSet PythonIntSet::Minus(const PythonIntSet& other) const {
  if ((used_ >> 2) > other.used_) {
    PythonIntSet result = Copy();
    for (int64_t key : other.Items()) result.Discard(key);
    if (result.fill_ - result.used_ > (result.table_.size() - 1) / 4) {
      result.Resize(result.used_ > 50000 ? result.used_ * 2 : result.used_ * 4);
    }
    return result;
  }
  PythonIntSet result;
  for (int64_t key : Items()) {
    if (!other.Contains(key)) result.Add(key);
  }
  return result;
}

std::vector<int64_t> PythonIntSet::Items() const {
  std::vector<int64_t> out;
  out.reserve(used_);
  for (int64_t key : table_) {
    if (key >= 0) out.push_back(key);
  }
  return out;
}

}  // namespace loom::hpsearch
