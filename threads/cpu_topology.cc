#include "threads/cpu_topology.h"

#include <sched.h>

#include <fstream>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace loom::threads {
namespace {

// The integer in `path`, or -1.
int ReadInt(const std::string& path) {
  std::ifstream in(path);
  int value = -1;
  if (!(in >> value)) return -1;
  return value;
}

std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  if (cpus.empty()) {
    const int n = std::max(1u, std::thread::hardware_concurrency());
    for (int cpu = 0; cpu < n; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace

std::string CpuTopology::Describe() const {
  return absl::StrCat(logical_cpus, logical_cpus == 1 ? " CPU" : " CPUs", " on ", physical_cores,
                      physical_cores == 1 ? " physical core" : " physical cores",
                      smt ? " (SMT)" : "");
}

CpuTopology TopologyFromSysfs(const std::string& root, const std::vector<int>& cpus) {
  CpuTopology t;
  t.logical_cpus = std::max<int>(1, static_cast<int>(cpus.size()));
  std::set<std::pair<int, int>> cores;
  bool known = true;
  for (int cpu : cpus) {
    const std::string dir = absl::StrCat(root, "/cpu", cpu, "/topology/");
    const int package = ReadInt(dir + "physical_package_id");
    const int core = ReadInt(dir + "core_id");
    if (core < 0) {
      known = false;
      break;
    }
    cores.insert({package, core});
  }
  t.physical_cores = known ? std::max<int>(1, static_cast<int>(cores.size())) : t.logical_cpus;
  t.smt = t.physical_cores < t.logical_cpus;
  return t;
}

CpuTopology DetectCpuTopology() {
  return TopologyFromSysfs("/sys/devices/system/cpu", AllowedCpus());
}

}  // namespace loom::threads
