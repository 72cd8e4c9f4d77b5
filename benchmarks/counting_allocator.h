// CountingAllocator (benchmarks only): wraps LibTorch's CPU allocator and counts the bytes of
// live CPU tensors and their peak. Its DataPtrs keep data == context, as LibTorch's
// raw_allocate users require. One instance per process (its deleter finds it statically).
//
// Example:
//   static CountingAllocator counter(c10::GetCPUAllocator());
//   c10::SetCPUAllocator(&counter, /*priority=*/100);
//   counter.ResetPeak(); ...; int64_t peak = counter.peak();
#ifndef LOOM_BENCHMARKS_COUNTING_ALLOCATOR_H_
#define LOOM_BENCHMARKS_COUNTING_ALLOCATOR_H_

#include <c10/core/Allocator.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "base/torch_compat.h"

namespace loom::benchmarks {

class CountingAllocator : public loom::base::AllocatorBase {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) { instance_ = this; }
  c10::DataPtr AllocateBytes(size_t n) const override {
    c10::DataPtr inner = base_->allocate(n);
    void* data = inner.get();
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks_[data] = {n, inner.get_deleter()};
      live_ += static_cast<int64_t>(n);
      peak_ = std::max(peak_, live_);
    }
    inner.release_context();
    return {data, data, &Release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &Release; }
  int64_t live() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_;
  }
  void ResetPeak() {
    std::lock_guard<std::mutex> lock(mu_);
    peak_ = live_;
  }
  int64_t peak() const {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_;
  }

 private:
  struct Block {
    size_t n;
    c10::DeleterFnPtr deleter;
  };
  static void Release(void* data) {
    CountingAllocator* self = instance_;
    Block block;
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      auto it = self->blocks_.find(data);
      block = it->second;
      self->blocks_.erase(it);
      self->live_ -= static_cast<int64_t>(block.n);
    }
    if (block.deleter != nullptr) block.deleter(data);
  }
  static inline CountingAllocator* instance_ = nullptr;
  c10::Allocator* base_;
  mutable std::mutex mu_;
  mutable std::unordered_map<void*, Block> blocks_;
  mutable int64_t live_ = 0;
  mutable int64_t peak_ = 0;
};

}  // namespace loom::benchmarks

#endif  // LOOM_BENCHMARKS_COUNTING_ALLOCATOR_H_
