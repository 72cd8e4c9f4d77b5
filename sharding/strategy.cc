#include "sharding/strategy.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace loom::sharding {
namespace {

std::string Size(int64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  if (bytes < (int64_t{1} << 20)) return absl::StrFormat("%.2f KiB", bytes / 1024.0);
  if (bytes < (int64_t{1} << 30)) return absl::StrFormat("%.2f MiB", bytes / 1048576.0);
  return absl::StrFormat("%.2f GiB", bytes / 1073741824.0);
}

}  // namespace

DataParallelTopology DataParallelTopology::PerRank(int world_size, int rank) {
  DataParallelTopology t;
  t.world_size = world_size;
  t.data_parallel_size = world_size;
  t.data_parallel_rank = rank;
  return t;
}

int DataParallelTopology::ReplicaOf(int rank) const {
  if (replica_of_rank.empty()) return rank;
  return rank >= 0 && rank < static_cast<int>(replica_of_rank.size()) ? replica_of_rank[rank] : -1;
}

bool DataParallelTopology::LeadsReplica(int rank) const {
  const int replica = ReplicaOf(rank);
  for (int r = 0; r < rank; ++r) {
    if (ReplicaOf(r) == replica) return false;
  }
  return true;
}

std::string ModelStateBytes::Describe() const {
  return absl::StrCat("parameters ", Size(parameters), ", gradients ", Size(gradients),
                      ", optimizer states ", Size(optimizer_states), ", master weights ",
                      Size(master_weights), " (total ", Size(Total()), ")");
}

}  // namespace loom::sharding
