#include "sharding/strategy_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace loom::sharding {

StrategyRegistry& StrategyRegistry::Global() {
  static StrategyRegistry* registry = new StrategyRegistry();
  return *registry;
}

absl::Status StrategyRegistry::Register(const std::string& name,
                                        std::shared_ptr<const StrategyFactory> factory) {
  if (name.empty() || factory == nullptr) {
    return absl::InvalidArgumentError(
        "StrategyRegistry::Register: give a non-empty name and a factory");
  }
  absl::MutexLock lock(&mu_);
  if (!factories_.emplace(name, std::move(factory)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("StrategyRegistry::Register: a strategy named \"", name,
                     "\" is registered already; choose another name"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const StrategyFactory>> StrategyRegistry::Find(
    const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = factories_.find(name);
  if (it != factories_.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [n, f] : factories_) names.push_back(n);
  return absl::NotFoundError(absl::StrCat("no data-parallel strategy named \"", name,
                                          "\" is registered (registered: ",
                                          absl::StrJoin(names, ", "), ")"));
}

std::vector<std::string> StrategyRegistry::Names() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [n, f] : factories_) names.push_back(n);
  return names;
}

}  // namespace loom::sharding
