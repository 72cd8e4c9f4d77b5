#include "modeling/save_pretrained.h"

#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/module_state.h"

namespace loom::modeling {

absl::StatusOr<std::vector<std::string>> SavePretrained(const Model& model,
                                                        const std::string& dir,
                                                        const SavePretrainedOptions& options) {
  RETURN_IF_ERROR(base::MakeDirs(dir));
  std::vector<std::string> files;
  for (const auto& [name, text] : {std::pair<const char*, std::string>{"config.json",
                                                                       model.ConfigJson()},
                                   {"generation_config.json", model.GenerationConfigJson()}}) {
    if (text.empty()) continue;
    RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/" + name, text));
    files.push_back(name);
  }
  if (!options.weights) return files;
  ASSIGN_OR_RETURN(std::vector<std::string> weights,
                   checkpoint::SaveModelWeights(dir, checkpoint::ModuleStateDict(model),
                                                options.weights_options));
  files.insert(files.end(), weights.begin(), weights.end());
  return files;
}

}  // namespace loom::modeling
