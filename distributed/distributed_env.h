// DistributedEnv: who this process is in a multi-process run, read from the launcher's
// environment variables (torchrun's RANK / LOCAL_RANK / WORLD_SIZE, Open MPI, SLURM).
//
// Contract:
//   - torchrun / //tools:launch variables win: RANK, WORLD_SIZE (both or neither), LOCAL_RANK,
//     LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT. A missing LOCAL_RANK defaults to
//     RANK, LOCAL_WORLD_SIZE to WORLD_SIZE, GROUP_RANK to RANK / LOCAL_WORLD_SIZE.
//   - Otherwise Open MPI's OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE, then SLURM's
//     SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID / SLURM_NTASKS_PER_NODE / SLURM_NODEID, when
//     present. MASTER_ADDR / MASTER_PORT are still read from the environment for those.
//   - GLOO_SOCKET_IFNAME is read whatever the source (see gloo_socket_ifname).
//   - None of them set: a single process (rank 0 of 1, MASTER_ADDR=127.0.0.1, MASTER_PORT=29500).
//   - Errors are InvalidArgument and name the variable(s) and how to fix them: a non-integer
//     value, RANK without WORLD_SIZE, RANK >= WORLD_SIZE ("RANK=4 ... WORLD_SIZE=4"),
//     LOCAL_RANK >= LOCAL_WORLD_SIZE, a port outside 1..65535, and a multi-process run without
//     MASTER_ADDR / MASTER_PORT.
//   - The environment is an injectable map; ReadProcessEnvironment() snapshots the real one.
//
// Example:
//   ASSIGN_OR_RETURN(DistributedEnv env, DistributedEnvFromProcess());
//   if (env.is_distributed()) {
//     ASSIGN_OR_RETURN(ProcessGroup pg, CreateProcessGroup(env, options));
//   }
#ifndef LOOM_DISTRIBUTED_DISTRIBUTED_ENV_H_
#define LOOM_DISTRIBUTED_DISTRIBUTED_ENV_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace loom::distributed {

// Where the values came from.
enum class EnvSource { kDefault, kTorchrun, kOpenMpi, kSlurm };

const char* EnvSourceName(EnvSource source);

struct DistributedEnv {
  int rank = 0;              // global rank, 0 <= rank < world_size
  int local_rank = 0;        // rank on this node, 0 <= local_rank < local_world_size
  int world_size = 1;        // number of processes in the run
  int local_world_size = 1;  // number of processes on this node
  int group_rank = 0;        // node index (torchrun's GROUP_RANK)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  EnvSource source = EnvSource::kDefault;
  // GLOO_SOCKET_IFNAME (e.g. "eth0"): the network interface Gloo binds; empty = the address
  // MASTER_ADDR's host name resolves to (loopback for 127.x / localhost), as in PyTorch.
  std::string gloo_socket_ifname;

  bool is_distributed() const { return world_size > 1; }
  bool is_main_process() const { return rank == 0; }
  bool is_local_main_process() const { return local_rank == 0; }
};

using EnvMap = absl::flat_hash_map<std::string, std::string>;

// Parses `env` (variable name -> value) as described above.
absl::StatusOr<DistributedEnv> DistributedEnvFromMap(const EnvMap& env);

// A copy of this process's environment (`environ`).
EnvMap ReadProcessEnvironment();

// DistributedEnvFromMap(ReadProcessEnvironment()).
absl::StatusOr<DistributedEnv> DistributedEnvFromProcess();

}  // namespace loom::distributed

#endif  // LOOM_DISTRIBUTED_DISTRIBUTED_ENV_H_
