// The Trainer's names for the model contract, which lives in modeling/model.h (below both
// trainer/ and models/): trainer code and its users may write trainer::Model.
#ifndef LOOM_TRAINER_MODEL_H_
#define LOOM_TRAINER_MODEL_H_

#include "modeling/model.h"

namespace loom::trainer {

using Model = modeling::Model;
using ModelOutput = modeling::ModelOutput;

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_MODEL_H_
