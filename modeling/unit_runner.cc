#include "modeling/unit_runner.h"

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace loom::modeling {

UnitRunner::~UnitRunner() = default;

std::string UnitClassName(const torch::nn::Module& module) {
  std::string name = module.name();
  if (const size_t colon = name.rfind("::"); colon != std::string::npos) {
    name = name.substr(colon + 2);
  }
  if (absl::EndsWith(name, "Impl") && name.size() > 4) name.resize(name.size() - 4);
  return name;
}

absl::StatusOr<std::vector<FoundUnit>> FindUnits(const torch::nn::Module& model,
                                                 const std::vector<std::string>& class_names) {
  std::vector<FoundUnit> found;
  std::set<std::string> present;
  for (const auto& item : model.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    const std::string cls = UnitClassName(*item.value());
    present.insert(cls);
    if (std::find(class_names.begin(), class_names.end(), cls) != class_names.end()) {
      found.push_back({item.key(), item.value()});
    }
  }
  if (found.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Could not find the transformer layer class to wrap in the model: none of [",
                     absl::StrJoin(class_names, ", "), "] is a module of ", UnitClassName(model),
                     ", whose module classes are [", absl::StrJoin(present, ", "), "]"));
  }
  return found;
}

}  // namespace loom::modeling
