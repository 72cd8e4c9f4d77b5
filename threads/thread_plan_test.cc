#include "threads/thread_plan.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "threads/blas_threads.h"

namespace loom::threads {
namespace {

using ::testing::HasSubstr;

ThreadInputs Machine(int cpus, int cores, bool fp32, int world = 1) {
  ThreadInputs in;
  in.topology.logical_cpus = cpus;
  in.topology.physical_cores = cores;
  in.topology.smt = cores < cpus;
  in.local_world_size = world;
  in.blas_name = "OpenBLAS";
  in.blas_env_vars = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS"};
  in.matmuls_in_blas = fp32;
  return in;
}

TEST(ThreadPlanTest, OnePoolHasTheCoresAtATime) {
  // Two real cores, fp32: matmuls in OpenBLAS with both cores, LibTorch's pool at 1.
  ThreadPlan p = DecideThreads(Machine(2, 2, /*fp32=*/true));
  EXPECT_EQ(p.intra_op, 1);
  EXPECT_EQ(p.blas, 2);
  EXPECT_EQ(p.inter_op, 1);
  EXPECT_EQ(p.Describe(),
            "threads: intra-op 1, OpenBLAS 2, inter-op 1, data-loader workers 0 (2 CPUs on 2 "
            "physical cores, 1 process per node, fp32 matmuls run in OpenBLAS); heap: freed "
            "blocks kept for reuse (mmap threshold 32 MiB, trim threshold 2 GiB)");
  // The user's allocator settings are in the same line.
  ThreadInputs tuned = Machine(2, 2, true);
  tuned.env["GLIBC_TUNABLES"] = "glibc.malloc.mmap_threshold=65536";
  EXPECT_THAT(DecideThreads(tuned).Describe(),
              HasSubstr("; heap: left as set (GLIBC_TUNABLES=glibc.malloc.mmap_threshold=65536, "
                        "yours)"));
  // bf16: oneDNN's matmuls on LibTorch's pool, BLAS at 1.
  p = DecideThreads(Machine(2, 2, /*fp32=*/false));
  EXPECT_EQ(p.intra_op, 2);
  EXPECT_EQ(p.blas, 1);
  // Two hyperthreads of one core: one thread.
  p = DecideThreads(Machine(2, 1, true));
  EXPECT_EQ(p.intra_op, 1);
  EXPECT_EQ(p.blas, 1);
  p = DecideThreads(Machine(2, 1, false));
  EXPECT_EQ(p.intra_op, 1);
  EXPECT_EQ(p.blas, 1);
}

TEST(ThreadPlanTest, ManualPlanKeepsTheCountsGiven) {
  const ThreadPlan p = ManualThreadPlan(3, 1);
  EXPECT_EQ(p.intra_op, 3);
  EXPECT_EQ(p.blas, 1);
  EXPECT_THAT(p.Describe(), HasSubstr("threads: intra-op 3, "));
  EXPECT_THAT(p.Describe(), HasSubstr("(set by hand); heap: "));
}

TEST(ThreadPlanTest, RanksShareTheCores) {
  ThreadPlan p = DecideThreads(Machine(16, 8, false, /*world=*/2));
  EXPECT_EQ(p.intra_op, 4);
  EXPECT_EQ(p.blas, 1);
  p = DecideThreads(Machine(2, 2, true, /*world=*/4));
  EXPECT_EQ(p.intra_op, 1);
  EXPECT_EQ(p.blas, 1);
  // The launcher's OMP_NUM_THREADS is the rank's budget, not a user choice.
  ThreadInputs in = Machine(16, 8, true, 2);
  in.env = {{"OMP_NUM_THREADS", "3"}, {kThreadsFromLauncher, "1"}};
  p = DecideThreads(in);
  EXPECT_EQ(p.intra_op, 1);
  EXPECT_EQ(p.blas, 3);
  EXPECT_THAT(p.reason, HasSubstr("OMP_NUM_THREADS=3 from the launcher"));
}

TEST(ThreadPlanTest, UserVariablesWin) {
  ThreadInputs in = Machine(2, 2, true);
  in.env = {{"OMP_NUM_THREADS", "2"}};
  ThreadPlan p = DecideThreads(in);
  EXPECT_EQ(p.intra_op, 2);
  EXPECT_EQ(p.blas, 1);  // the other pool steps aside
  EXPECT_THAT(p.reason, HasSubstr("OMP_NUM_THREADS=2 (yours)"));
  in.env = {{"OPENBLAS_NUM_THREADS", "1"}};
  p = DecideThreads(in);
  EXPECT_EQ(p.intra_op, 1);
  EXPECT_FALSE(p.blas.has_value());
  EXPECT_THAT(p.Describe(), HasSubstr("OpenBLAS as set by its variable"));
  EXPECT_THAT(p.reason, HasSubstr("OPENBLAS_NUM_THREADS=1 (yours)"));
  in.env = {{"OMP_NUM_THREADS", "zero"}};  // not a positive number: ignored, as libgomp does
  EXPECT_EQ(DecideThreads(in).intra_op, 1);
}

TEST(ThreadPlanTest, DataLoaderWorkersTakeCores) {
  ThreadInputs in = Machine(8, 8, false);
  in.dataloader_workers = 2;
  ThreadPlan p = DecideThreads(in);
  EXPECT_EQ(p.intra_op, 6);
  EXPECT_EQ(p.dataloader_workers, 2);
  in.dataloader_workers = 20;
  EXPECT_EQ(DecideThreads(in).intra_op, 1);
}

TEST(ThreadPlanTest, WithoutABlasThreadApi) {
  ThreadInputs in = Machine(4, 4, true);
  in.blas_name = "none";
  in.blas_env_vars.clear();
  ThreadPlan p = DecideThreads(in);
  EXPECT_FALSE(p.blas.has_value());
  EXPECT_THAT(p.Describe(), HasSubstr("no BLAS thread control"));
}

TEST(ThreadPlanTest, MklOnTheIntraOpThreads) {
  // The torch wheel: MKL inside libtorch_cpu runs fp32 matmuls on the intra-op threads, so
  // they get the budget (as Python torch's default, the physical cores) and no BLAS count.
  ThreadInputs in = Machine(2, 2, /*fp32=*/true);
  in.blas_name = "LibTorch's MKL";
  in.blas_env_vars = {"MKL_NUM_THREADS"};
  in.blas_on_intra_op_threads = true;
  ThreadPlan p = DecideThreads(in);
  EXPECT_EQ(p.intra_op, 2);
  EXPECT_FALSE(p.blas.has_value());
  EXPECT_EQ(p.Describe(),
            "threads: intra-op 2, LibTorch's MKL on intra-op, inter-op 1, data-loader workers 0 "
            "(2 CPUs on 2 physical cores, 1 process per node, fp32 matmuls run in LibTorch's "
            "MKL on the intra-op threads); heap: freed blocks kept for reuse (mmap threshold "
            "32 MiB, trim threshold 2 GiB)");
  // Two ranks share the cores.
  in.local_world_size = 2;
  EXPECT_EQ(DecideThreads(in).intra_op, 1);
  in.local_world_size = 1;
  // MKL_NUM_THREADS is the intra-op default there; OMP_NUM_THREADS wins over it.
  in.env = {{"MKL_NUM_THREADS", "1"}};
  p = DecideThreads(in);
  EXPECT_EQ(p.intra_op, 1);
  EXPECT_THAT(p.reason, HasSubstr("MKL_NUM_THREADS=1 (yours)"));
  in.env = {{"MKL_NUM_THREADS", "1"}, {"OMP_NUM_THREADS", "2"}};
  EXPECT_EQ(DecideThreads(in).intra_op, 2);
  // bf16 (oneDNN) is unchanged: the budget.
  in.env.clear();
  in.matmuls_in_blas = false;
  EXPECT_EQ(DecideThreads(in).intra_op, 2);
}

TEST(ThreadPlanTest, CurrentInputsKnowWhereMatmulsRun) {
  const ThreadInputs in = CurrentThreadInputs(/*matmuls_in_blas=*/true, 0);
  // A BLAS with a thread API of its own (Debian's OpenBLAS) is set apart; without one, a
  // LibTorch with MKL inside (the torch wheel) runs it on the intra-op threads.
  EXPECT_EQ(in.blas_on_intra_op_threads, !FindBlas().found() && at::hasMKL());
}

TEST(ThreadPlanTest, ApplySetsBothPools) {
  ThreadPlan p;
  p.intra_op = 2;
  p.blas = 1;
  p.blas_name = FindBlas().name;
  ASSERT_OK(ApplyThreadPlan(p));
  EXPECT_EQ(at::get_num_threads(), 2);
  if (FindBlas().found()) {
    EXPECT_EQ(FindBlas().Threads(), 1);
  }
  p.intra_op = 1;
  p.blas = 2;
  ASSERT_OK(ApplyThreadPlan(p));
  ASSERT_OK(ApplyThreadPlan(p));  // again: harmless
  EXPECT_EQ(at::get_num_threads(), 1);
  if (FindBlas().found()) {
    EXPECT_EQ(FindBlas().Threads(), 2);
  }
}

}  // namespace
}  // namespace loom::threads
