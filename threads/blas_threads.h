// The BLAS library LibTorch's fp32 matmuls run in, found at run time (Debian's LibTorch uses
// OpenBLAS; a LibTorch zip brings MKL), and its thread count. No LibTorch dependency.
//
// Contract:
//   - FindBlas() looks the library's own thread functions up in the process
//     (dlsym(RTLD_DEFAULT, ...)): OpenBLAS (openblas_set_num_threads / openblas_get_num_threads),
//     MKL (MKL_Set_Num_Threads / MKL_Get_Max_Threads). None found (another BLAS, or one
//     without a thread API): name "none" and no-op functions.
//   - env_vars are the variables that library reads at start-up (OPENBLAS_NUM_THREADS,
//     GOTO_NUM_THREADS; MKL_NUM_THREADS).
//
// Example:
//   BlasLibrary blas = FindBlas();
//   blas.SetThreads(1);
//   LOG(INFO) << blas.name << " threads: " << blas.Threads();
#ifndef LOOM_THREADS_BLAS_THREADS_H_
#define LOOM_THREADS_BLAS_THREADS_H_

#include <string>
#include <vector>

namespace loom::threads {

struct BlasLibrary {
  std::string name = "none";
  std::vector<std::string> env_vars;
  void (*set)(int) = nullptr;
  int (*get)() = nullptr;

  bool found() const { return set != nullptr; }
  void SetThreads(int n) const {
    if (set != nullptr) set(n);
  }
  // 0 when unknown.
  int Threads() const { return get != nullptr ? get() : 0; }
};

BlasLibrary FindBlas();

}  // namespace loom::threads

#endif  // LOOM_THREADS_BLAS_THREADS_H_
