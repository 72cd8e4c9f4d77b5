// Heap defaults for a training process: freed memory is kept for the next step.
//
// A training step frees and re-allocates the same activation and gradient buffers every step.
// glibc's malloc serves blocks above its mmap threshold (128 KiB at start, raised by the sizes
// it sees freed) with fresh mmaps, and gives the top of its heap back to the kernel past its
// trim threshold — so buffers of a few hundred KiB come back as new zeroed pages, a page fault
// per 4 KiB, every step. Measured on the tiny BERT of //benchmarks:vs_pytorch (hidden 64,
// batch 8 x 64 tokens): 20-30% of the step. LibTorch's CUDA allocator caches blocks for the same
// reason; on the CPU loom asks glibc to keep them: a fixed mmap threshold of 32 MiB (glibc's
// largest) and a trim threshold of 2 GiB. The cost is that the process keeps its peak heap
// resident (as a caching allocator does).
//
// The user's choice wins: GLIBC_TUNABLES with glibc.malloc.* settings, MALLOC_MMAP_THRESHOLD_ /
// MALLOC_TRIM_THRESHOLD_ / MALLOC_TOP_PAD_, or another allocator in LD_PRELOAD (jemalloc,
// tcmalloc, mimalloc) leave the heap as it is, and the log line says why. Without glibc there
// is nothing to set.
//
// Example (DecideThreads / ApplyThreadPlan do this for every training process):
//   HeapPlan heap = DecideHeap(HeapEnvironment());
//   RETURN_IF_ERROR(ApplyHeapPlan(heap));
//   LOG(INFO) << heap.Describe();
#ifndef LOOM_THREADS_HOST_HEAP_H_
#define LOOM_THREADS_HOST_HEAP_H_

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace loom::threads {

struct HeapPlan {
  bool keep_freed = false;  // ApplyHeapPlan sets the two thresholds below
  size_t mmap_threshold = size_t{32} << 20;
  size_t trim_threshold = (size_t{2} << 30) - 1;  // mallopt takes an int
  std::string reason;                             // why the heap is left alone, when it is

  // "heap: freed blocks kept for reuse (mmap threshold 32 MiB, trim threshold 2 GiB)", or
  // "heap: left as set (GLIBC_TUNABLES=glibc.malloc.trim_threshold=0, yours)".
  std::string Describe() const;
};

// The environment variables DecideHeap reads.
const std::vector<std::string>& HeapEnvironmentVariables();

// Those of HeapEnvironmentVariables() that this process has set.
std::map<std::string, std::string> HeapEnvironment();

// A pure function of the variables (see the header comment).
HeapPlan DecideHeap(const std::map<std::string, std::string>& env);

// mallopt with the plan's thresholds when keep_freed; nothing otherwise. Safe to call again.
absl::Status ApplyHeapPlan(const HeapPlan& plan);

}  // namespace loom::threads

#endif  // LOOM_THREADS_HOST_HEAP_H_
