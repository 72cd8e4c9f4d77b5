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

std::string ModelStateBytes::Describe() const {
  return absl::StrCat("parameters ", Size(parameters), ", gradients ", Size(gradients),
                      ", optimizer states ", Size(optimizer_states), ", master weights ",
                      Size(master_weights), " (total ", Size(Total()), ")");
}

}  // namespace loom::sharding
