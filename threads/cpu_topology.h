// What CPUs this process may run on and how many physical cores they are: the facts thread
// defaults are decided from (loom's machines vary: 2 real cores, or 2 hyperthreads of one
// core). No LibTorch: the launcher uses it too.
//
// Contract:
//   - DetectCpuTopology(): the CPUs of this process's affinity mask (sched_getaffinity) and,
//     from /sys/devices/system/cpu/cpu<N>/topology/{physical_package_id,core_id}, how many
//     distinct physical cores they belong to; smt when some core has more than one of them.
//     Where sysfs has no topology, every CPU counts as a core.
//   - TopologyFromSysfs(root, cpus) is the same over a given sysfs root and CPU list (tests).
//   - Describe(): "2 CPUs on 2 physical cores" / "2 CPUs on 1 physical core (SMT)".
//
// Example:
//   const CpuTopology t = DetectCpuTopology();
//   const int per_rank = std::max(1, t.physical_cores / local_world_size);
#ifndef LOOM_THREADS_CPU_TOPOLOGY_H_
#define LOOM_THREADS_CPU_TOPOLOGY_H_

#include <string>
#include <vector>

namespace loom::threads {

struct CpuTopology {
  int logical_cpus = 1;
  int physical_cores = 1;
  bool smt = false;

  std::string Describe() const;
};

CpuTopology DetectCpuTopology();

CpuTopology TopologyFromSysfs(const std::string& sysfs_cpu_root, const std::vector<int>& cpus);

}  // namespace loom::threads

#endif  // LOOM_THREADS_CPU_TOPOLOGY_H_
