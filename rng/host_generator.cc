#include "rng/host_generator.h"

#include <limits>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace loom::rng {
namespace {

constexpr absl::string_view kStateTag = "mt19937_64 ";

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t Fnv1a64(absl::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t DeriveHostSeed(uint64_t seed, absl::string_view name) {
  return SplitMix64(seed ^ Fnv1a64(name));
}

uint64_t HostGenerator::UniformInt(uint64_t n) {
  if (n == 0) return 0;
  // Reject the top partial block so every residue is equally likely.
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do {
    x = engine_();
  } while (x >= limit);
  return x % n;
}

double HostGenerator::UniformDouble() {
  return static_cast<double>(engine_() >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}

std::string HostGenerator::SerializeState() const {
  std::ostringstream out;
  out << engine_;
  return absl::StrCat(kStateTag, out.str());
}

absl::Status HostGenerator::RestoreState(absl::string_view state) {
  if (state.substr(0, kStateTag.size()) != kStateTag) {
    return absl::InvalidArgumentError(
        absl::StrCat("rng/host_generator.cc: host generator state does not start with \"",
                     kStateTag, "\" (", state.size(), " bytes)"));
  }
  std::istringstream in(std::string(state.substr(kStateTag.size())));
  std::mt19937_64 parsed;
  in >> parsed;
  // Only whitespace may follow the engine text. (At end of input, `in >> std::ws` would set
  // failbit, so skip it then.)
  if (!in.fail() && !in.eof()) in >> std::ws;
  if (in.fail() || (!in.eof() && in.peek() != std::char_traits<char>::eof())) {
    return absl::InvalidArgumentError(
        "rng/host_generator.cc: malformed mt19937_64 state text in host generator state");
  }
  engine_ = parsed;
  return absl::OkStatus();
}

HostGenerator* GeneratorSet::Get(absl::string_view name) {
  if (HostGenerator* g = Find(name)) return g;
  auto gen = std::make_unique<HostGenerator>(DeriveHostSeed(base_seed_, name));
  HostGenerator* raw = gen.get();
  generators_.emplace(std::string(name), std::move(gen));
  return raw;
}

HostGenerator* GeneratorSet::Find(absl::string_view name) {
  auto it = generators_.find(name);
  return it == generators_.end() ? nullptr : it->second.get();
}

const HostGenerator* GeneratorSet::Find(absl::string_view name) const {
  auto it = generators_.find(name);
  return it == generators_.end() ? nullptr : it->second.get();
}

void GeneratorSet::Seed(uint64_t seed) {
  base_seed_ = seed;
  for (auto& [name, gen] : generators_) gen->Seed(DeriveHostSeed(seed, name));
}

std::vector<std::string> GeneratorSet::Names() const {
  std::vector<std::string> names;
  names.reserve(generators_.size());
  for (const auto& entry : generators_) names.push_back(entry.first);
  return names;
}

}  // namespace loom::rng
