#include "gpu/device_discovery.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace loom::gpu {
namespace {

// The few NVML / CUDA driver entry points used, by their C ABI (nvml.h, cuda.h).
using NvmlDevice = void*;
struct NvmlPciInfoV3 {  // nvmlPciInfo_t
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct NvmlMemory {  // nvmlMemory_t (v1)
  unsigned long long total, free, used;
};

template <typename F>
F Symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

class SystemSource : public DeviceSource {
 public:
  Discovered Discover() override {
    Discovered d;
    void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (nvml == nullptr) {
      d.error =
          "gpu_order: no NVIDIA driver here (libnvidia-ml.so.1 cannot be loaded), so no GPU "
          "to map; CUDA ordinals need a machine with NVIDIA GPUs and their driver";
      return d;
    }
    auto init = Symbol<int (*)()>(nvml, "nvmlInit_v2");
    auto count_fn = Symbol<int (*)(unsigned*)>(nvml, "nvmlDeviceGetCount_v2");
    auto handle = Symbol<int (*)(unsigned, NvmlDevice*)>(nvml, "nvmlDeviceGetHandleByIndex_v2");
    auto name = Symbol<int (*)(NvmlDevice, char*, unsigned)>(nvml, "nvmlDeviceGetName");
    auto uuid = Symbol<int (*)(NvmlDevice, char*, unsigned)>(nvml, "nvmlDeviceGetUUID");
    auto pci = Symbol<int (*)(NvmlDevice, NvmlPciInfoV3*)>(nvml, "nvmlDeviceGetPciInfo_v3");
    auto memory = Symbol<int (*)(NvmlDevice, NvmlMemory*)>(nvml, "nvmlDeviceGetMemoryInfo");
    auto cc = Symbol<int (*)(NvmlDevice, int*, int*)>(nvml, "nvmlDeviceGetCudaComputeCapability");
    auto clock = Symbol<int (*)(NvmlDevice, int, unsigned*)>(nvml, "nvmlDeviceGetMaxClockInfo");
    auto cores = Symbol<int (*)(NvmlDevice, unsigned*)>(nvml, "nvmlDeviceGetNumGpuCores");
    auto mig_mode = Symbol<int (*)(NvmlDevice, unsigned*, unsigned*)>(nvml, "nvmlDeviceGetMigMode");
    auto mig_count = Symbol<int (*)(NvmlDevice, unsigned*)>(nvml, "nvmlDeviceGetMaxMigDeviceCount");
    auto mig_handle = Symbol<int (*)(NvmlDevice, unsigned, NvmlDevice*)>(
        nvml, "nvmlDeviceGetMigDeviceHandleByIndex");
    unsigned n = 0;
    if (init == nullptr || count_fn == nullptr || handle == nullptr || init() != 0 ||
        count_fn(&n) != 0) {
      d.error =
          "gpu_order: the NVIDIA driver is installed but NVML does not start (no GPU, or "
          "the driver does not match the kernel module); nothing to map";
      return d;
    }
    if (n == 0) {
      d.error = "gpu_order: the NVIDIA driver sees no GPU on this machine; nothing to map";
      return d;
    }
    for (unsigned i = 0; i < n; ++i) {
      NvmlDevice dev = nullptr;
      if (handle(i, &dev) != 0) continue;
      PhysicalGpu g;
      g.nvidia_smi_index = static_cast<int>(i);
      char buf[128] = {0};
      if (name != nullptr && name(dev, buf, sizeof(buf)) == 0) g.name = buf;
      std::memset(buf, 0, sizeof(buf));
      if (uuid != nullptr && uuid(dev, buf, sizeof(buf)) == 0) g.uuid = buf;
      NvmlPciInfoV3 info{};
      if (pci != nullptr && pci(dev, &info) == 0) {
        g.pci_bus_id = CanonicalPciBusId(info.bus_id);
        if (g.pci_bus_id.empty()) {
          char id[32];
          std::snprintf(id, sizeof(id), "%08X:%02X:%02X.0", info.domain, info.bus, info.device);
          g.pci_bus_id = id;
        }
      }
      NvmlMemory mem{};
      if (memory != nullptr && memory(dev, &mem) == 0)
        g.memory_bytes = static_cast<int64_t>(mem.total);
      if (cc != nullptr) cc(dev, &g.cc_major, &g.cc_minor);
      unsigned mhz = 0, count = 0;
      if (clock != nullptr && clock(dev, /*NVML_CLOCK_SM=*/1, &mhz) == 0) g.clock_khz = mhz * 1000;
      if (cores != nullptr && cores(dev, &count) == 0) g.multiprocessors = count;
      unsigned current = 0, pending = 0, max_mig = 0;
      if (mig_mode != nullptr && mig_mode(dev, &current, &pending) == 0 && current == 1 &&
          mig_count != nullptr && mig_handle != nullptr && mig_count(dev, &max_mig) == 0) {
        for (unsigned k = 0; k < max_mig; ++k) {
          NvmlDevice mig = nullptr;
          if (mig_handle(dev, k, &mig) != 0) continue;
          char id[128] = {0};
          if (uuid != nullptr && uuid(mig, id, sizeof(id)) == 0) g.mig.push_back({id, ""});
        }
      }
      d.gpus.push_back(g);
    }
    DriverView(d);
    return d;
  }

 private:
  // cuDeviceGet's devices, which apply CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER themselves.
  static void DriverView(Discovered& d) {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cuda == nullptr) {
      d.driver_note = "libcuda.so.1 cannot be loaded: the driver's own order is not shown";
      return;
    }
    auto init = Symbol<int (*)(unsigned)>(cuda, "cuInit");
    auto count_fn = Symbol<int (*)(int*)>(cuda, "cuDeviceGetCount");
    auto get = Symbol<int (*)(int*, int)>(cuda, "cuDeviceGet");
    auto name = Symbol<int (*)(char*, int, int)>(cuda, "cuDeviceGetName");
    auto bus = Symbol<int (*)(char*, int, int)>(cuda, "cuDeviceGetPCIBusId");
    auto uuid = Symbol<int (*)(unsigned char*, int)>(cuda, "cuDeviceGetUuid_v2");
    if (uuid == nullptr) uuid = Symbol<int (*)(unsigned char*, int)>(cuda, "cuDeviceGetUuid");
    int n = 0;
    if (init == nullptr || count_fn == nullptr || get == nullptr) {
      d.driver_note = "libcuda.so.1 lacks cuInit / cuDeviceGetCount";
      return;
    }
    const int rc = init(0);
    if (rc == 100 /*CUDA_ERROR_NO_DEVICE*/) {
      d.driver = std::vector<DriverDevice>();  // nothing visible (e.g. CUDA_VISIBLE_DEVICES="")
      return;
    }
    if (rc != 0 || count_fn(&n) != 0) {
      d.driver_note = "cuInit failed (error " + std::to_string(rc) + ")";
      return;
    }
    std::vector<DriverDevice> devices;
    for (int i = 0; i < n; ++i) {
      int dev = 0;
      if (get(&dev, i) != 0) continue;
      DriverDevice out;
      out.ordinal = i;
      char buf[128] = {0};
      if (name != nullptr && name(buf, sizeof(buf), dev) == 0) out.name = buf;
      std::memset(buf, 0, sizeof(buf));
      if (bus != nullptr && bus(buf, sizeof(buf), dev) == 0)
        out.pci_bus_id = CanonicalPciBusId(buf);
      unsigned char u[16] = {0};
      if (uuid != nullptr && uuid(u, dev) == 0) {
        char s[64];
        std::snprintf(s, sizeof(s),
                      "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                      u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
                      u[12], u[13], u[14], u[15]);
        out.uuid = s;
      }
      devices.push_back(out);
    }
    d.driver = std::move(devices);
  }
};

}  // namespace

std::unique_ptr<DeviceSource> SystemDevices() { return std::make_unique<SystemSource>(); }

std::string CanonicalPciBusId(const std::string& id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (std::sscanf(id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) return "";
  char out[32];
  std::snprintf(out, sizeof(out), "%08X:%02X:%02X.%X", domain, bus, device, function);
  return out;
}

}  // namespace loom::gpu
