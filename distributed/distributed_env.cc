#include "distributed/distributed_env.h"

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"

extern char** environ;

namespace loom::distributed {
namespace {

std::optional<std::string> Get(const EnvMap& env, absl::string_view name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

// The integer value of `name`, or `fallback` when it is not set.
absl::StatusOr<int> GetInt(const EnvMap& env, absl::string_view name, int fallback) {
  std::optional<std::string> value = Get(env, name);
  if (!value.has_value()) return fallback;
  int parsed = 0;
  if (!absl::SimpleAtoi(*value, &parsed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable ", name, "=\"", *value,
                     "\" is not an integer; set it to a whole number (or unset it)"));
  }
  return parsed;
}

absl::Status ReadMaster(const EnvMap& env, DistributedEnv& out) {
  std::optional<std::string> addr = Get(env, "MASTER_ADDR");
  std::optional<std::string> port = Get(env, "MASTER_PORT");
  if (out.world_size > 1 && (!addr.has_value() || !port.has_value())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "WORLD_SIZE=", out.world_size, " (from ", EnvSourceName(out.source), ") but ",
        !addr.has_value() ? "MASTER_ADDR" : "MASTER_PORT",
        " is not set; export MASTER_ADDR=<host of rank 0> and MASTER_PORT=<free port>, or "
        "start the program with //tools:launch"));
  }
  if (addr.has_value()) {
    if (addr->empty()) {
      return absl::InvalidArgumentError(
          "MASTER_ADDR is empty; set it to the host name or address of rank 0");
    }
    out.master_addr = *addr;
  }
  ASSIGN_OR_RETURN(out.master_port, GetInt(env, "MASTER_PORT", out.master_port));
  if (out.master_port < 1 || out.master_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("MASTER_PORT=", out.master_port, " is not a TCP port; use 1..65535"));
  }
  return absl::OkStatus();
}

absl::Status Validate(const DistributedEnv& e, absl::string_view rank_var,
                      absl::string_view world_var, absl::string_view local_rank_var,
                      absl::string_view local_world_var) {
  if (e.world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(world_var, "=", e.world_size, " must be at least 1"));
  }
  if (e.rank < 0 || e.rank >= e.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(rank_var, "=", e.rank, " is not in [0, ", world_var, "=", e.world_size,
                     "); each rank must be below the world size (ranks are numbered from 0)"));
  }
  if (e.local_world_size < 1 || e.local_world_size > e.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(local_world_var, "=", e.local_world_size,
                                                   " must be in [1, ", world_var, "=", e.world_size,
                                                   "]"));
  }
  if (e.local_rank < 0 || e.local_rank >= e.local_world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        local_rank_var, "=", e.local_rank, " is not in [0, ", local_world_var, "=",
        e.local_world_size, "); the rank on a node must be below the processes per node"));
  }
  if (e.group_rank < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("GROUP_RANK=", e.group_rank, " must not be negative"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DistributedEnv> FromTorchrun(const EnvMap& env) {
  const bool has_rank = Get(env, "RANK").has_value();
  const bool has_world = Get(env, "WORLD_SIZE").has_value();
  if (has_rank != has_world) {
    return absl::InvalidArgumentError(absl::StrCat(
        has_rank ? "RANK" : "WORLD_SIZE", " is set but ", has_rank ? "WORLD_SIZE" : "RANK",
        " is not; set both (torchrun and //tools:launch do) or neither"));
  }
  DistributedEnv e;
  e.source = EnvSource::kTorchrun;
  ASSIGN_OR_RETURN(e.rank, GetInt(env, "RANK", 0));
  ASSIGN_OR_RETURN(e.world_size, GetInt(env, "WORLD_SIZE", 1));
  ASSIGN_OR_RETURN(e.local_rank, GetInt(env, "LOCAL_RANK", e.rank));
  ASSIGN_OR_RETURN(e.local_world_size, GetInt(env, "LOCAL_WORLD_SIZE", e.world_size));
  const int default_group = e.local_world_size > 0 ? e.rank / e.local_world_size : 0;
  ASSIGN_OR_RETURN(e.group_rank, GetInt(env, "GROUP_RANK", default_group));
  RETURN_IF_ERROR(Validate(e, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"));
  RETURN_IF_ERROR(ReadMaster(env, e));
  return e;
}

absl::StatusOr<DistributedEnv> FromOpenMpi(const EnvMap& env) {
  DistributedEnv e;
  e.source = EnvSource::kOpenMpi;
  ASSIGN_OR_RETURN(e.rank, GetInt(env, "OMPI_COMM_WORLD_RANK", 0));
  ASSIGN_OR_RETURN(e.world_size, GetInt(env, "OMPI_COMM_WORLD_SIZE", 1));
  ASSIGN_OR_RETURN(e.local_rank, GetInt(env, "OMPI_COMM_WORLD_LOCAL_RANK", e.rank));
  ASSIGN_OR_RETURN(e.local_world_size, GetInt(env, "OMPI_COMM_WORLD_LOCAL_SIZE", e.world_size));
  e.group_rank = e.local_world_size > 0 ? e.rank / e.local_world_size : 0;
  RETURN_IF_ERROR(Validate(e, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                           "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"));
  RETURN_IF_ERROR(ReadMaster(env, e));
  return e;
}

absl::StatusOr<DistributedEnv> FromSlurm(const EnvMap& env) {
  DistributedEnv e;
  e.source = EnvSource::kSlurm;
  ASSIGN_OR_RETURN(e.rank, GetInt(env, "SLURM_PROCID", 0));
  ASSIGN_OR_RETURN(e.world_size, GetInt(env, "SLURM_NTASKS", 1));
  ASSIGN_OR_RETURN(e.local_rank, GetInt(env, "SLURM_LOCALID", e.rank));
  // SLURM_NTASKS_PER_NODE is only set with --ntasks-per-node, and may read "2(x3)"; without a
  // plain number, all tasks count as one node's.
  e.local_world_size = e.world_size;
  if (std::optional<std::string> per_node = Get(env, "SLURM_NTASKS_PER_NODE")) {
    int parsed = 0;
    if (absl::SimpleAtoi(*per_node, &parsed)) e.local_world_size = parsed;
  }
  const int default_node = e.local_world_size > 0 ? e.rank / e.local_world_size : 0;
  ASSIGN_OR_RETURN(e.group_rank, GetInt(env, "SLURM_NODEID", default_node));
  RETURN_IF_ERROR(
      Validate(e, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"));
  RETURN_IF_ERROR(ReadMaster(env, e));
  return e;
}

}  // namespace

const char* EnvSourceName(EnvSource source) {
  switch (source) {
    case EnvSource::kDefault:
      return "single-process defaults";
    case EnvSource::kTorchrun:
      return "torchrun variables";
    case EnvSource::kOpenMpi:
      return "OMPI_COMM_WORLD_* variables";
    case EnvSource::kSlurm:
      return "SLURM_* variables";
  }
  return "unknown";
}

absl::StatusOr<DistributedEnv> DistributedEnvFromMap(const EnvMap& env) {
  DistributedEnv e;
  if (Get(env, "RANK") || Get(env, "WORLD_SIZE")) {
    ASSIGN_OR_RETURN(e, FromTorchrun(env));
  } else if (Get(env, "OMPI_COMM_WORLD_RANK") || Get(env, "OMPI_COMM_WORLD_SIZE")) {
    ASSIGN_OR_RETURN(e, FromOpenMpi(env));
  } else if (Get(env, "SLURM_PROCID") || Get(env, "SLURM_NTASKS")) {
    ASSIGN_OR_RETURN(e, FromSlurm(env));
  } else {
    RETURN_IF_ERROR(ReadMaster(env, e));
  }
  e.gloo_socket_ifname = Get(env, "GLOO_SOCKET_IFNAME").value_or("");
  return e;
}

EnvMap ReadProcessEnvironment() {
  EnvMap env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    absl::string_view kv(*entry);
    const size_t eq = kv.find('=');
    if (eq == absl::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

absl::StatusOr<DistributedEnv> DistributedEnvFromProcess() {
  return DistributedEnvFromMap(ReadProcessEnvironment());
}

}  // namespace loom::distributed
