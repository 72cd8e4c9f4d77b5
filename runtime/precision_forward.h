// ForwardInPrecision: the model's forward as accelerate 0.27 `Accelerator.prepare_model` runs it
// — under the run's forward autocast (bf16 / fp16 amp), with the loss and every output turned
// back into fp32 (accelerate's `convert_outputs_to_fp32`) — the one forward both the Trainer
// (ComputeLoss, PredictionStep) and the Accelerator's prepared model call.
//
// Example:
//   modeling::ModelOutput out = ForwardInPrecision(model, batch, *precision);
#ifndef LOOM_RUNTIME_PRECISION_FORWARD_H_
#define LOOM_RUNTIME_PRECISION_FORWARD_H_

#include "data/batch.h"
#include "modeling/model.h"
#include "precision/training_precision.h"

namespace loom::runtime {

modeling::ModelOutput ForwardInPrecision(modeling::Model& model, const data::Batch& inputs,
                                         const precision::TrainingPrecision& precision);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_PRECISION_FORWARD_H_
