#include "threads/cpu_topology.h"

#include <sched.h>

#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"

namespace loom::threads {
namespace {

// A fake /sys/devices/system/cpu with (package, core) per CPU.
std::string FakeSysfs(const std::string& name, const std::vector<std::pair<int, int>>& cpus) {
  const std::string root = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  for (size_t i = 0; i < cpus.size(); ++i) {
    const std::string dir = root + "/cpu" + std::to_string(i) + "/topology";
    std::filesystem::create_directories(dir);
    EXPECT_OK(base::WriteFileAtomically(dir + "/physical_package_id",
                                        std::to_string(cpus[i].first) + "\n"));
    EXPECT_OK(base::WriteFileAtomically(dir + "/core_id", std::to_string(cpus[i].second) + "\n"));
  }
  return root;
}

TEST(CpuTopologyTest, HyperthreadsOfOneCoreCountOnce) {
  const std::string root = FakeSysfs("smt", {{0, 0}, {0, 0}, {0, 1}, {0, 1}});
  CpuTopology t = TopologyFromSysfs(root, {0, 1, 2, 3});
  EXPECT_EQ(t.logical_cpus, 4);
  EXPECT_EQ(t.physical_cores, 2);
  EXPECT_TRUE(t.smt);
  EXPECT_EQ(t.Describe(), "4 CPUs on 2 physical cores (SMT)");
  // An affinity mask with one hyperthread of each core: no SMT left.
  t = TopologyFromSysfs(root, {0, 2});
  EXPECT_EQ(t.physical_cores, 2);
  EXPECT_FALSE(t.smt);
  t = TopologyFromSysfs(root, {0, 1});
  EXPECT_EQ(t.Describe(), "2 CPUs on 1 physical core (SMT)");
}

TEST(CpuTopologyTest, PackagesAndMissingTopology) {
  const std::string root = FakeSysfs("packages", {{0, 0}, {1, 0}});
  EXPECT_EQ(TopologyFromSysfs(root, {0, 1}).physical_cores, 2);  // core 0 of two packages
  const CpuTopology unknown = TopologyFromSysfs(root + "/nothing", {0, 1, 2});
  EXPECT_EQ(unknown.physical_cores, 3);
  EXPECT_FALSE(unknown.smt);
}

TEST(CpuTopologyTest, ThisProcess) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const CpuTopology t = DetectCpuTopology();
  EXPECT_EQ(t.logical_cpus, CPU_COUNT(&set));
  EXPECT_GE(t.physical_cores, 1);
  EXPECT_LE(t.physical_cores, t.logical_cpus);
}

}  // namespace
}  // namespace loom::threads
