#include "distributed/process_group.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "base/torch_status.h"
#include "base/wait_for_listener.h"

#if defined(LOOM_HAS_CUDA) && defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#define LOOM_DISTRIBUTED_HAS_NCCL 1
#endif

namespace loom::distributed {
namespace {

std::chrono::milliseconds ToMillis(absl::Duration d) {
  return std::chrono::milliseconds(absl::ToInt64Milliseconds(d));
}

bool IsLoopback(absl::string_view host) {
  return absl::StartsWith(host, "127.") || host == "localhost" || host == "::1";
}

constexpr char kArrivedKey[] = "loom/rendezvous/arrived";

std::string Where(const DistributedEnv& env, absl::string_view stage) {
  return absl::StrCat("rank ", env.rank, " of WORLD_SIZE=", env.world_size,
                      ": rendezvous at MASTER_ADDR:MASTER_PORT=", env.master_addr, ":",
                      env.master_port, " (", stage, ")");
}

bool IsTimeout(absl::string_view what) {
  return absl::StrContains(what, "imed out") || absl::StrContains(what, "imeout") ||
         absl::StrContains(what, "timeout");
}

// A rendezvous failure as a Status naming where and who.
absl::Status RendezvousFailure(absl::string_view what, bool timed_out, const DistributedEnv& env,
                               absl::string_view stage, absl::Duration timeout) {
  const std::string where = Where(env, stage);
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat(
        where, " did not complete within ddp_timeout=", absl::FormatDuration(timeout),
        ": not every rank arrived; check that all ", env.world_size,
        " ranks started with the same MASTER_ADDR/MASTER_PORT and that rank 0 is reachable: ",
        what));
  }
  return absl::UnavailableError(absl::StrCat(
      where,
      " failed; check MASTER_ADDR/MASTER_PORT (is the port free on rank 0's host?): ", what));
}

absl::Status RendezvousError(const std::exception& e, const DistributedEnv& env,
                             absl::string_view stage, absl::Duration timeout) {
  const std::string what = base::TorchErrorMessage(e);
  return RendezvousFailure(what, IsTimeout(what), env, stage, timeout);
}

// A write to a connection its peer closed (a rank that died, a cut network) must be an error
// the collective reports, not SIGPIPE's default death without a word; Python's interpreter, and
// so torch.distributed, ignores SIGPIPE from the start.
void IgnoreSigpipe() {
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
}

// The backend this build can run, a positive timeout, a rank inside the world.
absl::Status CheckRequest(const std::string& backend, const DistributedEnv& env,
                          const ProcessGroupOptions& options) {
  if (backend == "mpi" || backend == "ccl" || backend == "hccl") {
    return absl::UnimplementedError(absl::StrCat(
        "--ddp_backend ", backend, " is not supported by loom",
        backend == "mpi"   ? " (Debian's LibTorch is built without MPI)"
        : backend == "ccl" ? " (Intel oneCCL needs torch-ccl, which has no C++ LibTorch build)"
                           : " (Ascend NPUs need torch_npu)",
        "; use --ddp_backend gloo on CPU or nccl on a CUDA build"));
  }
  if (backend != "gloo" && backend != "nccl") {
    return absl::InvalidArgumentError(
        absl::StrCat("--ddp_backend \"", backend,
                     "\" is not one of nccl, gloo, mpi, ccl, hccl; use gloo on CPU"));
  }
#ifndef LOOM_DISTRIBUTED_HAS_NCCL
  if (backend == "nccl") {
    return absl::UnimplementedError(
        "--ddp_backend nccl needs a CUDA LibTorch: this build has no NCCL (rebuild with "
        "--config=cuda), or use --ddp_backend gloo");
  }
#endif
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("--ddp_timeout must be positive (seconds), got ",
                                                   absl::FormatDuration(options.timeout)));
  }
  if (env.rank < 0 || env.rank >= env.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("RANK=", env.rank, " is not in [0, WORLD_SIZE=", env.world_size, ")"));
  }
  return absl::OkStatus();
}

// Rank 0 hosts the TCPStore, the others join it, retrying until the deadline.
absl::StatusOr<c10::intrusive_ptr<::c10d::Store>> ConnectStore(const DistributedEnv& env,
                                                               const ProcessGroupOptions& options,
                                                               absl::Time deadline) {
  if (env.rank != 0) {
    // LibTorch 2.11's client overshoots its timeout by seconds while nothing listens
    // (base/wait_for_listener.h): wait for rank 0's server on our own deadline first.
    const absl::Status up = base::WaitForListener(env.master_addr, env.master_port, deadline);
    if (!up.ok()) {
      return RendezvousFailure(up.message(), up.code() == absl::StatusCode::kDeadlineExceeded,
                               env, "joining the TCPStore", options.timeout);
    }
  }
  for (;;) {
    try {
      ::c10d::TCPStoreOptions store_options;
      store_options.port = static_cast<std::uint16_t>(env.master_port);
      store_options.isServer = env.rank == 0;
      store_options.numWorkers = static_cast<std::size_t>(env.world_size);
      store_options.waitWorkers = false;
      store_options.timeout = ToMillis(std::max(deadline - absl::Now(), absl::Milliseconds(1)));
      c10::intrusive_ptr<::c10d::Store> store =
          c10::make_intrusive<::c10d::TCPStore>(env.master_addr, store_options);
      store->setTimeout(ToMillis(options.timeout));
      return store;
    } catch (const std::exception& e) {
      // c10d's client stops retrying a refused connection before its timeout; keep trying
      // until ours, so a rank may start well before rank 0.
      if (env.rank != 0 && IsTimeout(base::TorchErrorMessage(e)) &&
          absl::Now() + absl::Milliseconds(50) < deadline) {
        absl::SleepFor(absl::Milliseconds(50));
        continue;
      }
      return RendezvousError(
          e, env, env.rank == 0 ? "hosting the TCPStore" : "joining the TCPStore", options.timeout);
    }
  }
}

// Each rank counts itself in under kArrivedKey, then waits for the others until the deadline.
absl::Status WaitForEveryRank(::c10d::Store& store, const DistributedEnv& env,
                              const ProcessGroupOptions& options, absl::Time deadline) {
  try {
    store.add(kArrivedKey, 1);
    int64_t arrived = 0;
    while ((arrived = store.add(kArrivedKey, 0)) < env.world_size) {
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            Where(env, "waiting for every rank"), " timed out after ddp_timeout=",
            absl::FormatDuration(options.timeout), ": ", arrived, " of WORLD_SIZE=", env.world_size,
            " ranks arrived; start all ranks with the same MASTER_ADDR/MASTER_PORT"
            " (//tools:launch does), or raise --ddp_timeout"));
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
  } catch (const std::exception& e) {
    return RendezvousError(e, env, "counting ranks in the TCPStore", options.timeout);
  }
  return absl::OkStatus();
}

// Gloo's device: GLOO_SOCKET_IFNAME's interface, MASTER_ADDR's loopback, or the default one.
// Only a bad GLOO_SOCKET_IFNAME is reported here; other failures throw to the caller.
absl::Status AddGlooDevice(const DistributedEnv& env, ::c10d::ProcessGroupGloo::Options& o) {
  if (!env.gloo_socket_ifname.empty()) {
    try {
      o.devices.push_back(
          ::c10d::ProcessGroupGloo::createDeviceForInterface(env.gloo_socket_ifname));
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GLOO_SOCKET_IFNAME=", env.gloo_socket_ifname,
          " is not a usable network interface (see `ip link`; unset it to use MASTER_ADDR's "
          "route): ",
          base::TorchErrorMessage(e)));
    }
  } else if (IsLoopback(env.master_addr)) {
    o.devices.push_back(::c10d::ProcessGroupGloo::createDeviceForHostname(env.master_addr));
  } else {
    o.devices.push_back(::c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return absl::OkStatus();
}

// The backend over the store, and how to make more of it (subgroups).
struct ConnectedBackend {
  c10::intrusive_ptr<C10dBackend> pg;
  ProcessGroup::BackendFactory factory;
};

absl::StatusOr<ConnectedBackend> ConnectBackend(const std::string& backend,
                                                const c10::intrusive_ptr<::c10d::Store>& store,
                                                const DistributedEnv& env,
                                                const ProcessGroupOptions& options) {
  const std::chrono::milliseconds timeout = ToMillis(options.timeout);
  ConnectedBackend out;
  try {
    if (backend == "gloo") {
      auto gloo_options = ::c10d::ProcessGroupGloo::Options::create(timeout);
      if (absl::Status s = AddGlooDevice(env, *gloo_options); !s.ok()) return s;
      out.pg = c10::make_intrusive<::c10d::ProcessGroupGloo>(store, env.rank, env.world_size,
                                                             gloo_options);
      out.factory = [gloo_options](c10::intrusive_ptr<::c10d::Store> s, int rank, int size) {
        return c10::intrusive_ptr<C10dBackend>(
            c10::make_intrusive<::c10d::ProcessGroupGloo>(std::move(s), rank, size, gloo_options));
      };
    }
#ifdef LOOM_DISTRIBUTED_HAS_NCCL
    if (backend == "nccl") {
      auto nccl_options = ::c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = timeout;
      out.pg = c10::make_intrusive<::c10d::ProcessGroupNCCL>(store, env.rank, env.world_size,
                                                             nccl_options);
      out.factory = [nccl_options](c10::intrusive_ptr<::c10d::Store> s, int rank, int size) {
        return c10::intrusive_ptr<C10dBackend>(
            c10::make_intrusive<::c10d::ProcessGroupNCCL>(std::move(s), rank, size, nccl_options));
      };
    }
#endif
  } catch (const std::exception& e) {
    return RendezvousError(e, env, absl::StrCat("connecting the ", backend, " backend"),
                           options.timeout);
  }
  return out;
}

}  // namespace

ProcessGroupOptions ProcessGroupOptionsFromArgs(const loom::args::TrainingArguments& args) {
  ProcessGroupOptions options;
  if (args.has_ddp_backend() && !args.ddp_backend().empty()) options.backend = args.ddp_backend();
  options.timeout = absl::Seconds(args.ddp_timeout());
  return options;
}

absl::StatusOr<ProcessGroup> CreateProcessGroup(const DistributedEnv& env,
                                                const ProcessGroupOptions& options) {
  const std::string backend = options.backend.empty() ? "gloo" : options.backend;
  if (absl::Status s = CheckRequest(backend, env, options); !s.ok()) return s;
  IgnoreSigpipe();
  // One deadline for the whole rendezvous: TCPStore's own wait for workers gives up silently,
  // so the ranks count themselves in under a key of ours instead.
  const absl::Time deadline = absl::Now() + options.timeout;
  absl::StatusOr<c10::intrusive_ptr<::c10d::Store>> store = ConnectStore(env, options, deadline);
  if (!store.ok()) return store.status();
  if (absl::Status s = WaitForEveryRank(**store, env, options, deadline); !s.ok()) return s;
  absl::StatusOr<ConnectedBackend> connected = ConnectBackend(backend, *store, env, options);
  if (!connected.ok()) return connected.status();
  const at::Device comm_device =
      backend == "nccl" ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank))
                        : at::Device(at::kCPU);
  ProcessGroup group(*std::move(store), std::move(connected->pg), env.rank, env.world_size, backend,
                     options.timeout, comm_device);
  group.set_backend_factory(std::move(connected->factory));
  return group;
}

absl::StatusOr<ProcessGroup> NewSubgroup(const ProcessGroup& parent, const std::vector<int>& ranks,
                                         const std::string& name) {
  if (!parent.backend_factory()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "NewSubgroup(", name, "): the parent group was not made by CreateProcessGroup"));
  }
  int index = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= parent.world_size() || (i > 0 && ranks[i] <= ranks[i - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("NewSubgroup(", name, "): ranks must be ascending, distinct and below ",
                       parent.world_size()));
    }
    if (ranks[i] == parent.rank()) index = static_cast<int>(i);
  }
  if (index < 0) {
    return absl::InvalidArgumentError(absl::StrCat("NewSubgroup(", name, "): rank ", parent.rank(),
                                                   " is not one of its members"));
  }
  std::string key = absl::StrCat("loom/subgroup/", name, "/");
  for (int r : ranks) absl::StrAppend(&key, r, ",");
  try {
    // A group of the same name and ranks made again (a new strategy in the same run) gets keys
    // of its own: each member draws a ticket, and a creation's members hold consecutive ones (a
    // member makes the next only after every member connected to the last).
    const int64_t ticket = parent.store().add(key + "tickets", 1);
    absl::StrAppend(&key, "generation", (ticket - 1) / static_cast<int64_t>(ranks.size()), "/");
    auto store = c10::make_intrusive<::c10d::PrefixStore>(key, parent.store_ptr());
    c10::intrusive_ptr<C10dBackend> backend =
        parent.backend_factory()(store, index, static_cast<int>(ranks.size()));
    ProcessGroup group(store, std::move(backend), index, static_cast<int>(ranks.size()),
                       parent.backend_name(), parent.timeout(), parent.comm_device());
    group.set_backend_factory(parent.backend_factory());
    return group;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(
        e, absl::StatusCode::kUnavailable,
        absl::StrCat("connecting subgroup ", name, " of rank ", parent.rank()));
  }
}

}  // namespace loom::distributed
