#include "threads/blas_threads.h"

#include <dlfcn.h>

namespace loom::threads {
namespace {

template <typename F>
F Lookup(const char* symbol) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, symbol));
}

}  // namespace

BlasLibrary FindBlas() {
  using Set = void (*)(int);
  using Get = int (*)();
  BlasLibrary b;
  if (Set set = Lookup<Set>("openblas_set_num_threads")) {
    b.name = "OpenBLAS";
    b.set = set;
    b.get = Lookup<Get>("openblas_get_num_threads");
    b.env_vars = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS"};
  } else if (Set set = Lookup<Set>("MKL_Set_Num_Threads")) {
    b.name = "MKL";
    b.set = set;
    b.get = Lookup<Get>("MKL_Get_Max_Threads");
    b.env_vars = {"MKL_NUM_THREADS"};
  }
  return b;
}

}  // namespace loom::threads
