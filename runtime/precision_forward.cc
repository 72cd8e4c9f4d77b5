#include "runtime/precision_forward.h"

#include "precision/autocast.h"

namespace loom::runtime {

modeling::ModelOutput ForwardInPrecision(modeling::Model& model, const data::Batch& inputs,
                                         const precision::TrainingPrecision& precision) {
  modeling::ModelOutput outputs;
  {
    precision::AutocastGuard autocast(precision.ForwardAutocast());
    outputs = model.Forward(inputs);
  }
  if (outputs.loss.defined()) outputs.loss = precision.OutputToFp32(outputs.loss);
  for (auto& [name, value] : outputs.outputs) {
    if (value.defined()) value = precision.OutputToFp32(value);
  }
  return outputs;
}

}  // namespace loom::runtime
