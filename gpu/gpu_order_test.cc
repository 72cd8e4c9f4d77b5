// MapOrdinals on fake topologies: two mixed-generation GPUs (the older one first on the PCI
// bus), a MIG-mode GPU, UUIDs and their prefixes, invalid and repeated entries, an empty value;
// FormatReport's rank lines and the driver check.
#include "gpu/gpu_order.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::gpu {
namespace {

using ::testing::HasSubstr;

// nvidia-smi 0: a V100 at bus 0x19; nvidia-smi 1: an A100 at bus 0x81 (faster: cc 8.0).
std::vector<PhysicalGpu> Mixed() {
  PhysicalGpu v100{0,
                   "Tesla V100-SXM2-16GB",
                   "GPU-11111111-aaaa-bbbb-cccc-000000000001",
                   "00000000:19:00.0",
                   int64_t{16} << 30,
                   7,
                   0,
                   5120,
                   1530000,
                   {}};
  PhysicalGpu a100{1,
                   "NVIDIA A100-SXM4-40GB",
                   "GPU-22222222-aaaa-bbbb-cccc-000000000002",
                   "00000000:81:00.0",
                   int64_t{40} << 30,
                   8,
                   0,
                   6912,
                   1410000,
                   {}};
  return {v100, a100};
}

std::vector<int> Gpus(const GpuMapping& m) {
  std::vector<int> out;
  for (const VisibleDevice& d : m.visible) out.push_back(d.gpu);
  return out;
}

TEST(GpuOrderTest, FastestFirstIsTheDefaultNotPciOrder) {
  const GpuMapping m = MapOrdinals(Mixed(), nullptr, nullptr);
  EXPECT_THAT(Gpus(m), ::testing::ElementsAre(1, 0));  // cuda:0 is the A100 (nvidia-smi 1)
  EXPECT_THAT(m.order_rule, HasSubstr("FASTEST_FIRST (not PCI_BUS_ID)"));
  EXPECT_THAT(Gpus(MapOrdinals(Mixed(), nullptr, "PCI_BUS_ID")), ::testing::ElementsAre(0, 1));
  EXPECT_THAT(Gpus(MapOrdinals(Mixed(), nullptr, "FASTEST_FIRST")), ::testing::ElementsAre(1, 0));
  EXPECT_THAT(MapOrdinals(Mixed(), nullptr, "BOGUS").order_rule,
              HasSubstr("not a value CUDA knows"));
}

TEST(GpuOrderTest, IndicesReferToTheChosenOrder) {
  // Index 0 is the fastest by default, the first on the bus with PCI_BUS_ID.
  EXPECT_THAT(Gpus(MapOrdinals(Mixed(), "0", nullptr)), ::testing::ElementsAre(1));
  EXPECT_THAT(Gpus(MapOrdinals(Mixed(), "0", "PCI_BUS_ID")), ::testing::ElementsAre(0));
  const GpuMapping m = MapOrdinals(Mixed(), "1,0", "PCI_BUS_ID");
  EXPECT_THAT(Gpus(m), ::testing::ElementsAre(1, 0));
  EXPECT_EQ(m.visible[1].ordinal, 1);
  EXPECT_EQ(m.visible[1].entry, "0");
}

TEST(GpuOrderTest, UuidsAndUniquePrefixes) {
  EXPECT_THAT(Gpus(MapOrdinals(Mixed(), "GPU-22222222-aaaa-bbbb-cccc-000000000002", nullptr)),
              ::testing::ElementsAre(1));
  EXPECT_THAT(Gpus(MapOrdinals(Mixed(), "GPU-1111,GPU-2222", nullptr)),
              ::testing::ElementsAre(0, 1));
  // Digits are an index, not a UUID; a UUID needs its "GPU-".
  EXPECT_THAT(*MapOrdinals(Mixed(), "2222", nullptr).stopped_at, HasSubstr("out of range"));
  EXPECT_THAT(*MapOrdinals(Mixed(), "22222222-aaaa", nullptr).stopped_at,
              HasSubstr("not an index, a GPU-... UUID or a MIG-... instance"));
  const GpuMapping ambiguous = MapOrdinals(Mixed(), "GPU-", nullptr);
  EXPECT_TRUE(ambiguous.visible.empty());
  EXPECT_THAT(*ambiguous.stopped_at, HasSubstr("start of 2 GPUs' UUIDs"));
}

TEST(GpuOrderTest, TheFirstInvalidEntryEndsTheList) {
  const GpuMapping m = MapOrdinals(Mixed(), "1,7,0", "PCI_BUS_ID");
  EXPECT_THAT(Gpus(m), ::testing::ElementsAre(1));
  EXPECT_THAT(*m.stopped_at, HasSubstr("'7': index 7 is out of range (2 GPUs)"));
  EXPECT_THAT(Gpus(MapOrdinals(Mixed(), "GPU-9999,0", nullptr)), ::testing::IsEmpty());
  EXPECT_THAT(Gpus(MapOrdinals(Mixed(), "0,0,1", "PCI_BUS_ID")), ::testing::ElementsAre(0));
  EXPECT_THAT(*MapOrdinals(Mixed(), "0,0", nullptr).stopped_at, HasSubstr("already listed"));
}

TEST(GpuOrderTest, EmptyMeansNoGpu) {
  const GpuMapping m = MapOrdinals(Mixed(), "", nullptr);
  EXPECT_TRUE(m.visible.empty());
  EXPECT_THAT(m.visibility_rule, HasSubstr("empty: no GPU is visible"));
  EXPECT_TRUE(MapOrdinals(Mixed(), " ", nullptr).visible.empty());
}

TEST(GpuOrderTest, MigInstances) {
  std::vector<PhysicalGpu> gpus = Mixed();
  gpus[1].mig = {{"MIG-aaaa-1", "3g.20gb"}, {"MIG-aaaa-2", "3g.20gb"}};
  // Named by its UUID: the second instance; entries after a MIG device are ignored.
  const GpuMapping m = MapOrdinals(gpus, "MIG-aaaa-2,0", "PCI_BUS_ID");
  ASSERT_EQ(m.visible.size(), 1u);
  EXPECT_EQ(m.visible[0].gpu, 1);
  EXPECT_EQ(m.visible[0].mig, 1);
  // The GPU by index: its first instance. Unset: the fastest (the MIG GPU) alone.
  EXPECT_EQ(MapOrdinals(gpus, "1", "PCI_BUS_ID").visible[0].mig, 0);
  EXPECT_EQ(MapOrdinals(gpus, nullptr, nullptr).visible.size(), 1u);
  EXPECT_THAT(*MapOrdinals(gpus, "MIG-zzzz", nullptr).stopped_at, HasSubstr("no MIG instance"));
}

TEST(GpuOrderTest, ReportNamesEachRanksGpuAndChecksTheDriver) {
  const std::vector<PhysicalGpu> gpus = Mixed();
  const GpuMapping m = MapOrdinals(gpus, "1,0", "PCI_BUS_ID");
  std::vector<DriverDevice> driver = {
      {0, "NVIDIA A100-SXM4-40GB", gpus[1].uuid, gpus[1].pci_bus_id},
      {1, "Tesla V100-SXM2-16GB", gpus[0].uuid, gpus[0].pci_bus_id}};
  std::string report = FormatReport(gpus, m, driver, 3);
  EXPECT_THAT(report, HasSubstr("cuda:0 -> nvidia-smi 1 (NVIDIA A100-SXM4-40GB, 00000000:81:00.0"));
  EXPECT_THAT(report, HasSubstr("local rank 1: cuda:1 = nvidia-smi 0 (Tesla V100"));
  EXPECT_THAT(report, HasSubstr("local rank 2: no GPU (only 2 visible)"));
  EXPECT_THAT(report, HasSubstr("The driver agrees with these rules."));
  std::swap(driver[0], driver[1]);
  EXPECT_THAT(FormatReport(gpus, m, driver, 0), HasSubstr("differs from the rules above"));
}

}  // namespace
}  // namespace loom::gpu
