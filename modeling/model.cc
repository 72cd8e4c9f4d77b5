#include "modeling/model.h"

#include "absl/strings/str_cat.h"

namespace loom::modeling {

absl::Status Model::EnableGradientCheckpointing(const CheckpointingOptions&) {
  return absl::InvalidArgumentError(
      absl::StrCat(ClassName(), " does not support gradient checkpointing."));
}

absl::Status Model::SetUnitRunner(UnitRunner* runner) {
  if (runner == nullptr) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      ClassName(),
      " does not run its layers as wrap units, so its parameters cannot be sharded per layer "
      "(FSDP / ZeRO-3); train it with DDP or ZeRO-1/2"));
}

std::string Model::ClassName() const {
  const std::string full = name();  // torch::nn::Module: the demangled type name
  const size_t colon = full.rfind("::");
  return colon == std::string::npos ? full : full.substr(colon + 2);
}

}  // namespace loom::modeling
