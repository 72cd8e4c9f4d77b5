// GPU order (transformers' Trainer docs, "Specific GPUs Selection"): which physical GPU each CUDA
// ordinal of this process is, under CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, and which one each
// local rank of a launcher uses — what //tools:gpu_order prints.
//
// The rules (MapOrdinals), as the CUDA runtime applies them:
//   - CUDA_DEVICE_ORDER=PCI_BUS_ID orders the physical GPUs by PCI bus id (nvidia-smi's order);
//     unset or FASTEST_FIRST (the runtime's default — the HF doc calls PCI_BUS_ID the default,
//     which it is not) puts the fastest first: loom's guess is compute capability, then
//     multiprocessors x clock, ties in PCI order (CUDA leaves the rest unspecified).
//   - CUDA_VISIBLE_DEVICES unset: every GPU, in that order. Set but empty: no GPU. Otherwise
//     its comma-separated entries, in their order: an index into the order above, a UUID or a
//     unique prefix of one including "GPU-" ("GPU-8f6b"), or a MIG instance ("MIG-<uuid>"). The
//     first
//     invalid entry (out of range, unknown, ambiguous, or naming a device a second time) ends
//     the list: the devices before it are visible, none after. A GPU in MIG mode named by index
//     or UUID exposes its first MIG instance; a process sees at most one MIG instance (CUDA's
//     limit), so entries after the first MIG device are ignored.
//   - Local rank r of a launcher uses ordinal r (torch.cuda.set_device(LOCAL_RANK)).
// The driver is the authority on a real machine: DriverOrdinals (gpu/device_discovery.h) are
// what cuDeviceGet reports; the report shows them next to this prediction and says when they
// differ.
//
// This library is plain C++17 without third-party dependencies, so that the tool builds with a
// bare compiler on a GPU machine that lacks the project's libraries (errors are strings).
//
// Example:
//   GpuMapping m = MapOrdinals(topology, std::getenv("CUDA_VISIBLE_DEVICES"),
//                              std::getenv("CUDA_DEVICE_ORDER"));
//   std::cout << FormatReport(topology, m, driver, /*nproc_per_node=*/2);
#ifndef LOOM_GPU_GPU_ORDER_H_
#define LOOM_GPU_GPU_ORDER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::gpu {

struct MigInstance {
  std::string uuid;         // "MIG-..."
  std::string description;  // e.g. "1g.10gb", may be empty
};

struct PhysicalGpu {
  int nvidia_smi_index = 0;  // NVML's index: PCI bus id order
  std::string name;
  std::string uuid;        // "GPU-..."
  std::string pci_bus_id;  // "00000000:19:00.0"
  int64_t memory_bytes = 0;
  int cc_major = 0;
  int cc_minor = 0;
  int64_t multiprocessors = 0;
  int64_t clock_khz = 0;
  std::vector<MigInstance> mig;  // non-empty: MIG mode with these instances
};

struct VisibleDevice {
  int ordinal = 0;    // cuda:N in this process
  int gpu = -1;       // index into the topology vector
  int mig = -1;       // index into that GPU's mig, or -1
  std::string entry;  // the CUDA_VISIBLE_DEVICES entry that named it ("" when unset)
};

struct GpuMapping {
  std::vector<VisibleDevice> visible;
  std::string order_rule;                 // which ordering applied and why
  std::string visibility_rule;            // how CUDA_VISIBLE_DEVICES was read
  std::optional<std::string> stopped_at;  // the invalid entry that ended the list, and why
};

// `visible_devices` / `device_order`: the variables' values, nullptr when unset.
GpuMapping MapOrdinals(const std::vector<PhysicalGpu>& gpus, const char* visible_devices,
                       const char* device_order);

// What the CUDA driver reports for ordinal N (UUID and PCI bus id), for the report's check.
struct DriverDevice {
  int ordinal = 0;
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
};

// The report //tools:gpu_order prints: the rules that applied, each ordinal's GPU (name, PCI
// bus id, UUID, MIG instance, memory, compute capability, nvidia-smi index), the driver's view
// when known (and whether it agrees), and with nproc_per_node > 0 the GPU of each local rank.
std::string FormatReport(const std::vector<PhysicalGpu>& gpus, const GpuMapping& mapping,
                         const std::optional<std::vector<DriverDevice>>& driver,
                         int nproc_per_node);

}  // namespace loom::gpu

#endif  // LOOM_GPU_GPU_ORDER_H_
