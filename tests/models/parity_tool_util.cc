#include "tests/models/parity_tool_util.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "checkpoint/safetensors.h"
#include "data/batch.h"

#include <exception>

namespace loom::tests {

at::Tensor Find(const checkpoint::NamedTensors& tensors, const std::string& name) {
  const at::Tensor* t = checkpoint::FindTensor(tensors, name);
  return t == nullptr ? at::Tensor() : *t;
}

absl::Status CompareWithin(const std::string& what, const at::Tensor& got, const at::Tensor& want,
                           double tolerance) {
  if (!got.sizes().equals(want.sizes())) {
    return absl::InternalError(absl::StrCat(what, ": shape ", c10::str(got.sizes()),
                                            " but the reference has ", c10::str(want.sizes())));
  }
  const at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  const at::Tensor excess = (g - w).abs() - tolerance * (1 + w.abs());
  if (excess.numel() > 0 && excess.max().item<double>() > 0) {
    return absl::InternalError(absl::StrCat(what, ": max |loom - reference| = ",
                                            (g - w).abs().max().item<double>(), " exceeds ",
                                            tolerance, " (1 + |reference|)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<checkpoint::NamedTensors> RunCase(modeling::Model& model,
                                                 const checkpoint::NamedTensors& inputs,
                                                 const std::vector<std::string>& outputs) {
  static const char* kInputs[] = {"input_ids", "attention_mask", "labels"};
  model.eval();
  model.zero_grad();
  data::Batch batch;
  for (const char* key : kInputs) batch[key] = Find(inputs, key);
  modeling::ModelOutput out;
  try {
    out = model.Forward(batch);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
  out.loss.backward();
  checkpoint::NamedTensors result;
  for (const char* key : kInputs) result.emplace_back(key, Find(inputs, key));
  for (const std::string& name : outputs) result.emplace_back(name, out.Get(name).detach());
  result.emplace_back("loss", out.loss.detach());
  for (const auto& item : model.named_parameters()) {
    if (!item.value().grad().defined()) {
      return absl::InternalError(absl::StrCat("no gradient reached ", item.key()));
    }
    result.emplace_back("grad." + item.key(), item.value().grad().detach().clone());
  }
  return result;
}

absl::Status CompareGenerations(const std::string& sdir, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(checkpoint::SafetensorsFile mine,
                     checkpoint::LoadSafetensors(sdir + "/loom_check_gen_" + name + ".safetensors"));
    ASSIGN_OR_RETURN(checkpoint::SafetensorsFile ref,
                     checkpoint::LoadSafetensors(sdir + "/python_gen_" + name + ".safetensors"));
    const at::Tensor a = Find(mine.tensors, "sequences"), b = Find(ref.tensors, "sequences");
    if (!b.defined() || !a.sizes().equals(b.sizes()) || !a.equal(b)) {
      return absl::InternalError(absl::StrCat(sdir, " generate ", name, ": loom ", c10::str(a),
                                              " but the reference ",
                                              b.defined() ? c10::str(b) : "nothing"));
    }
  }
  return absl::OkStatus();
}

}  // namespace loom::tests
