// The registry of sampler backends (hpsearch/sampler.h), built on first use with the built-in
// "tpe", "random" and "grid" backends; programs may register more.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hpsearch/grid_sampler.h"
#include "hpsearch/random_sampler.h"
#include "hpsearch/sampler.h"
#include "hpsearch/tpe_sampler.h"

namespace loom::hpsearch {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, SamplerFactory> factories;
};

absl::StatusOr<std::unique_ptr<Sampler>> CreateTpe(const SamplerOptions& options) {
  TpeOptions tpe;
  tpe.seed = options.seed;
  tpe.n_startup_trials = options.n_startup_trials;
  tpe.n_ei_candidates = options.n_ei_candidates;
  if (tpe.n_startup_trials < 0 || tpe.n_ei_candidates <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tpe sampler: n_startup_trials must be >= 0 and n_ei_candidates > 0, but got ",
                     tpe.n_startup_trials, " and ", tpe.n_ei_candidates));
  }
  return std::unique_ptr<Sampler>(new TpeSampler(tpe));
}

absl::StatusOr<std::unique_ptr<Sampler>> CreateRandom(const SamplerOptions& options) {
  return std::unique_ptr<Sampler>(new RandomSampler(options.seed));
}

absl::StatusOr<std::unique_ptr<Sampler>> CreateGrid(const SamplerOptions& options) {
  absl::StatusOr<std::unique_ptr<GridSampler>> grid =
      GridSampler::Create(options.space, options.seed);
  if (!grid.ok()) return grid.status();
  return std::unique_ptr<Sampler>(std::move(*grid));
}

Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    r->factories["tpe"] = CreateTpe;
    r->factories["random"] = CreateRandom;
    r->factories["grid"] = CreateGrid;
    return r;
  }();
  return *registry;
}

}  // namespace

bool RegisterSampler(const std::string& name, SamplerFactory factory) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.factories[name] = std::move(factory);
  return true;
}

std::vector<std::string> RegisteredSamplers() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, factory] : r.factories) names.push_back(name);
  return names;
}

absl::StatusOr<std::unique_ptr<Sampler>> CreateSampler(const std::string& name,
                                                       const SamplerOptions& options) {
  SamplerFactory factory;
  {
    Registry& r = GetRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    const auto it = r.factories.find(name);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    return absl::InvalidArgumentError(absl::StrCat("unknown sampler backend \"", name,
                                                   "\"; the registered ones are ",
                                                   absl::StrJoin(RegisteredSamplers(), ", ")));
  }
  return factory(options);
}

}  // namespace loom::hpsearch
