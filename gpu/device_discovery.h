// Device discovery for //tools:gpu_order: the physical GPUs as NVML lists them (every
// GPU of the machine, whatever CUDA_VISIBLE_DEVICES says) and the devices the CUDA driver gives
// this process, both loaded at run time with dlopen (libnvidia-ml.so.1, libcuda.so.1), so the
// tool builds and runs everywhere: without a driver or a GPU it says so.
//
// DeviceSource is the seam tests replace with a fake topology. Plain C++17, no third-party
// dependency (see gpu_order.h).
//
// Example:
//   std::unique_ptr<DeviceSource> source = SystemDevices();
//   Discovered d = source->Discover();
//   if (!d.error.empty()) { std::cout << d.error << "\n"; return 0; }
#ifndef LOOM_GPU_DEVICE_DISCOVERY_H_
#define LOOM_GPU_DEVICE_DISCOVERY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/gpu_order.h"

namespace loom::gpu {

struct Discovered {
  std::vector<PhysicalGpu> gpus;                    // NVML's, in its (PCI bus id) order
  std::optional<std::vector<DriverDevice>> driver;  // cuDeviceGet's view; nullopt if unknown
  std::string error;        // non-empty: why there is nothing to show (no driver, no GPU), one line
  std::string driver_note;  // why the driver's view is missing, when it is
};

class DeviceSource {
 public:
  virtual ~DeviceSource() = default;
  virtual Discovered Discover() = 0;
};

// NVML and the CUDA driver of this machine.
std::unique_ptr<DeviceSource> SystemDevices();

// "00000000:19:00.0" from any of NVML's or CUDA's spellings ("0000:19:00.0"); "" if unparsable.
std::string CanonicalPciBusId(const std::string& id);

}  // namespace loom::gpu

#endif  // LOOM_GPU_DEVICE_DISCOVERY_H_
