// gpu_order: which physical GPU each CUDA ordinal of this process is (transformers' Trainer
// docs, "Specific GPUs Selection") — under CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, with name,
// PCI bus id, UUID, MIG instance, memory, compute capability and nvidia-smi index, the CUDA
// driver's own view next to the rules' prediction, and which GPU each local rank of a launcher
// uses.
//
//   bazel run //tools:gpu_order                              # this environment
//   CUDA_VISIBLE_DEVICES=1,0 bazel run //tools:gpu_order -- --nproc_per_node 2
//   bazel run //tools:launch -- --nproc_per_node 2 bazel-bin/tools/gpu_order   # each rank
//
// NVML and the CUDA driver are loaded at run time, so it builds everywhere; on a machine without
// a driver or a GPU it prints one line saying so and exits 0. Flags are gflags'; where gflags
// is not installed (the GPU machine's bare compiler, gpu/build_standalone.sh) the same two
// flags are read by hand.
#include "gpu/gpu_order.h"

#include <cstdlib>
#include <iostream>
#include <string>

#include "gpu/device_discovery.h"

#if __has_include(<gflags/gflags.h>) && !defined(LOOM_NO_GFLAGS)
#include <gflags/gflags.h>

#include <optional>

#include "base/tool_flags.h"
DEFINE_int32(nproc_per_node, 0,
             "show the GPU each of this many local ranks would use (default: under a launcher, "
             "LOCAL_WORLD_SIZE)");
#define LOOM_HAVE_GFLAGS 1
#else
static int FLAGS_nproc_per_node = 0;
#endif

namespace {

constexpr char kUsage[] =
    "Which physical GPU each CUDA ordinal of this process is, under CUDA_VISIBLE_DEVICES and "
    "CUDA_DEVICE_ORDER.\n  gpu_order [--nproc_per_node N]";

#ifndef LOOM_HAVE_GFLAGS
// The standalone build's flags: --nproc_per_node N (or =N) and --help.
int ParseFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-help") {
      std::cout << kUsage << "\n\n  Flags from tools/gpu_order.cc:\n    -nproc_per_node (show the "
                << "GPU each of this many local ranks would use) type: int32 default: 0\n";
      std::exit(0);
    } else if (a.rfind("--nproc_per_node=", 0) == 0) {
      FLAGS_nproc_per_node = std::atoi(a.c_str() + 17);
    } else if (a == "--nproc_per_node" && i + 1 < argc) {
      FLAGS_nproc_per_node = std::atoi(argv[++i]);
    } else {
      std::cerr << "gpu_order: unknown argument '" << a << "' (--help lists the flags)\n";
      return 2;
    }
  }
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
#ifdef LOOM_HAVE_GFLAGS
  if (std::optional<int> exit_code =
          loom::base::ParseToolFlags(&argc, &argv, kUsage, "tools/gpu_order.cc")) {
    return *exit_code;
  }
  if (argc > 1) {
    std::cerr << "gpu_order: unexpected argument '" << argv[1] << "' (--help lists the flags)\n";
    return 2;
  }
#else
  if (int rc = ParseFlags(argc, argv); rc != 0) return rc;
#endif
  if (FLAGS_nproc_per_node < 0) {
    std::cerr << "gpu_order: --nproc_per_node must be >= 0\n";
    return 2;
  }
  int nproc = FLAGS_nproc_per_node;
  const char* local_world = std::getenv("LOCAL_WORLD_SIZE");
  if (nproc == 0 && local_world != nullptr) nproc = std::atoi(local_world);
  loom::gpu::Discovered d = loom::gpu::SystemDevices()->Discover();
  if (!d.error.empty()) {
    std::cout << d.error << "\n";
    return 0;
  }
  const loom::gpu::GpuMapping mapping = loom::gpu::MapOrdinals(
      d.gpus, std::getenv("CUDA_VISIBLE_DEVICES"), std::getenv("CUDA_DEVICE_ORDER"));
  if (const char* rank = std::getenv("LOCAL_RANK")) {
    std::cout << "This process is local rank " << rank << ": it uses cuda:" << rank << "\n";
  }
  std::cout << loom::gpu::FormatReport(d.gpus, mapping, d.driver, nproc);
  if (!d.driver_note.empty()) std::cout << d.driver_note << "\n";
  return 0;
}
