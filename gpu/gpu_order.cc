#include "gpu/gpu_order.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <set>
#include <sstream>

namespace loom::gpu {
namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool IsIndex(const std::string& s) {
  return !s.empty() && s.size() < 9 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::string Gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

// The physical GPUs in CUDA's base order (before CUDA_VISIBLE_DEVICES), and the rule's text.
std::vector<int> BaseOrder(const std::vector<PhysicalGpu>& gpus,
                           const std::string& device_order_value, std::string* rule) {
  std::vector<int> order(gpus.size());
  std::iota(order.begin(), order.end(), 0);
  const auto by_pci = [&](int a, int b) { return gpus[a].pci_bus_id < gpus[b].pci_bus_id; };
  if (device_order_value == "PCI_BUS_ID") {
    std::sort(order.begin(), order.end(), by_pci);
    *rule = "CUDA_DEVICE_ORDER=PCI_BUS_ID: ordered by PCI bus id, as nvidia-smi";
    return order;
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const PhysicalGpu& x = gpus[a];
    const PhysicalGpu& y = gpus[b];
    if (x.cc_major != y.cc_major) return x.cc_major > y.cc_major;
    if (x.cc_minor != y.cc_minor) return x.cc_minor > y.cc_minor;
    const int64_t sx = x.multiprocessors * x.clock_khz, sy = y.multiprocessors * y.clock_khz;
    if (sx != sy) return sx > sy;
    return by_pci(a, b);
  });
  *rule = device_order_value.empty()
              ? "CUDA_DEVICE_ORDER unset: the CUDA runtime's default FASTEST_FIRST (not PCI_BUS_ID)"
          : device_order_value == "FASTEST_FIRST"
              ? "CUDA_DEVICE_ORDER=FASTEST_FIRST"
              : "CUDA_DEVICE_ORDER=" + device_order_value +
                    " is not a value CUDA knows; it uses FASTEST_FIRST";
  *rule +=
      ": fastest first (loom's guess: compute capability, then multiprocessors x clock; ties "
      "in PCI order)";
  return order;
}

// A GPU's device: its first MIG instance in MIG mode.
VisibleDevice DeviceOf(const std::vector<PhysicalGpu>& gpus, int gpu, const std::string& entry) {
  VisibleDevice d;
  d.gpu = gpu;
  d.mig = gpus[gpu].mig.empty() ? -1 : 0;
  d.entry = entry;
  return d;
}

// The device one CUDA_VISIBLE_DEVICES entry names (an index into `order`, a MIG-... instance,
// or a GPU-... UUID or its start); nullopt with `why` when it names none.
std::optional<VisibleDevice> ResolveEntry(const std::vector<PhysicalGpu>& gpus,
                                          const std::vector<int>& order, const std::string& e,
                                          std::string* why) {
  if (IsIndex(e)) {
    const size_t i = std::stoul(e);
    if (i < order.size()) return DeviceOf(gpus, order[i], e);
    *why = "index " + e + " is out of range (" + std::to_string(order.size()) + " GPUs)";
    return std::nullopt;
  }
  if (StartsWith(e, "MIG-")) {
    std::optional<VisibleDevice> d;
    for (size_t g = 0; g < gpus.size() && !d; ++g) {
      for (size_t k = 0; k < gpus[g].mig.size(); ++k) {
        if (gpus[g].mig[k].uuid == e) {
          d = VisibleDevice{0, static_cast<int>(g), static_cast<int>(k), e};
        }
      }
    }
    if (!d) *why = "no MIG instance " + e;
    return d;
  }
  if (StartsWith(e, "GPU-")) {
    // A UUID, or the first characters of one (with "GPU-").
    std::vector<int> matches;
    for (size_t g = 0; g < gpus.size(); ++g) {
      if (StartsWith(gpus[g].uuid, e)) matches.push_back(static_cast<int>(g));
    }
    if (matches.size() == 1) return DeviceOf(gpus, matches[0], e);
    *why = matches.empty()
               ? "no GPU's UUID starts with " + e
               : e + " is the start of " + std::to_string(matches.size()) + " GPUs' UUIDs";
    return std::nullopt;
  }
  *why = "not an index, a GPU-... UUID or a MIG-... instance";
  return std::nullopt;
}

// The listed devices in the list's order, up to the first invalid or repeated entry (where CUDA
// stops) or the first MIG instance (a process sees one).
void ReadVisibleList(const std::vector<PhysicalGpu>& gpus, const std::vector<int>& order,
                     const char* visible_devices, GpuMapping* m) {
  std::stringstream list(visible_devices);
  std::string raw;
  std::set<std::pair<int, int>> seen;
  while (std::getline(list, raw, ',')) {
    const std::string e = Trim(raw);
    std::string why;
    std::optional<VisibleDevice> d = ResolveEntry(gpus, order, e, &why);
    if (d && !seen.insert({d->gpu, d->mig}).second) {
      d.reset();
      why = "the device is already listed";
    }
    if (!d) {
      m->stopped_at = "'" + e + "': " + why + " — CUDA stops at the first invalid entry";
      break;
    }
    d->ordinal = static_cast<int>(m->visible.size());
    m->visible.push_back(*d);
    if (d->mig >= 0) break;  // one MIG instance per process
  }
}

}  // namespace

GpuMapping MapOrdinals(const std::vector<PhysicalGpu>& gpus, const char* visible_devices,
                       const char* device_order) {
  GpuMapping m;
  // 1. The base order.
  const std::vector<int> order =
      BaseOrder(gpus, device_order == nullptr ? "" : device_order, &m.order_rule);
  // 2. Visibility.
  if (visible_devices == nullptr) {
    m.visibility_rule = "CUDA_VISIBLE_DEVICES unset: every GPU is visible";
    for (int g : order) {
      m.visible.push_back(DeviceOf(gpus, g, ""));
      if (m.visible.back().mig >= 0) break;  // one MIG instance per process
    }
  } else if (Trim(visible_devices).empty()) {
    m.visibility_rule = "CUDA_VISIBLE_DEVICES is empty: no GPU is visible";
  } else {
    m.visibility_rule = std::string("CUDA_VISIBLE_DEVICES=") + visible_devices +
                        ": the listed devices, in the list's order";
    ReadVisibleList(gpus, order, visible_devices, &m);
  }
  for (size_t i = 0; i < m.visible.size(); ++i) m.visible[i].ordinal = static_cast<int>(i);
  return m;
}

std::string FormatReport(const std::vector<PhysicalGpu>& gpus, const GpuMapping& m,
                         const std::optional<std::vector<DriverDevice>>& driver,
                         int nproc_per_node) {
  std::ostringstream out;
  out << "Physical GPUs (nvidia-smi order, by PCI bus id): " << gpus.size() << "\n";
  for (const PhysicalGpu& g : gpus) {
    out << "  nvidia-smi " << g.nvidia_smi_index << ": " << g.name << ", " << g.pci_bus_id << ", "
        << g.uuid << ", " << Gib(g.memory_bytes) << ", compute capability " << g.cc_major << "."
        << g.cc_minor;
    if (!g.mig.empty()) out << ", MIG mode (" << g.mig.size() << " instances)";
    out << "\n";
  }
  out << m.order_rule << "\n" << m.visibility_rule << "\n";
  if (m.stopped_at) out << "Stopped at " << *m.stopped_at << "\n";
  out << "CUDA ordinals of this process: " << m.visible.size() << "\n";
  for (const VisibleDevice& d : m.visible) {
    const PhysicalGpu& g = gpus[d.gpu];
    out << "  cuda:" << d.ordinal << " -> nvidia-smi " << g.nvidia_smi_index << " (" << g.name
        << ", " << g.pci_bus_id << ", " << g.uuid;
    if (d.mig >= 0) out << ", MIG " << g.mig[d.mig].uuid;
    out << ")";
    if (!d.entry.empty()) out << " from entry '" << d.entry << "'";
    out << "\n";
  }
  if (driver) {
    bool agree = driver->size() == m.visible.size();
    for (size_t i = 0; agree && i < driver->size(); ++i) {
      agree = (*driver)[i].pci_bus_id == gpus[m.visible[i].gpu].pci_bus_id;
    }
    out << "The CUDA driver reports " << driver->size() << " device(s):\n";
    for (const DriverDevice& d : *driver) {
      out << "  cuda:" << d.ordinal << " = " << d.name << ", " << d.pci_bus_id << ", " << d.uuid
          << "\n";
    }
    out << (agree ? "The driver agrees with these rules.\n"
                  : "The driver's order differs from the rules above: trust the driver's.\n");
  }
  if (nproc_per_node > 0) {
    out << "With " << nproc_per_node << " process(es) per node (each uses cuda:LOCAL_RANK):\n";
    for (int r = 0; r < nproc_per_node; ++r) {
      out << "  local rank " << r << ": ";
      if (r < static_cast<int>(m.visible.size())) {
        const PhysicalGpu& g = gpus[m.visible[r].gpu];
        out << "cuda:" << r << " = nvidia-smi " << g.nvidia_smi_index << " (" << g.name << ", "
            << g.pci_bus_id << ")\n";
      } else {
        out << "no GPU (only " << m.visible.size() << " visible): it would fail to start\n";
      }
    }
  }
  return out.str();
}

}  // namespace loom::gpu
