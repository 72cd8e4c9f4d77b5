// StrategyPieces: what every data-parallel strategy is built from — the model, its optimizer,
// the run's precision and the process group (null for one process) — as chainable setters
// shared by the strategies' option structs (CRTP: each setter returns the derived options).
// The model is a loom model (modeling/model.h): strategies that shard parameters run its
// declared units, so a plain torch module does not compile here.
// None is owned; all must outlive the strategy.
//
// Example:
//   struct ZeroOptions : StrategyPieces<ZeroOptions> { int stage = 2; };
//   ZeroOptions o = ZeroOptions().set_model(m).set_optimizer(opt).set_precision(p);
//   RETURN_IF_ERROR(o.CheckPieces("ZeroStrategy"));
#ifndef LOOM_SHARDING_STRATEGY_PIECES_H_
#define LOOM_SHARDING_STRATEGY_PIECES_H_

#include <torch/optim/optimizer.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "distributed/process_group.h"
#include "modeling/model.h"
#include "precision/training_precision.h"

namespace loom::sharding {

template <typename Derived>
struct StrategyPieces {
  modeling::Model* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  precision::TrainingPrecision* precision = nullptr;
  const distributed::ProcessGroup* process_group = nullptr;  // null: one process

  Derived& set_model(modeling::Model* v) {
    model = v;
    return static_cast<Derived&>(*this);
  }
  Derived& set_optimizer(torch::optim::Optimizer* v) {
    optimizer = v;
    return static_cast<Derived&>(*this);
  }
  Derived& set_precision(precision::TrainingPrecision* v) {
    precision = v;
    return static_cast<Derived&>(*this);
  }
  Derived& set_process_group(const distributed::ProcessGroup* v) {
    process_group = v;
    return static_cast<Derived&>(*this);
  }

  // The four pieces of another strategy's options.
  template <typename Other>
  Derived& set_pieces(const StrategyPieces<Other>& o) {
    model = o.model;
    optimizer = o.optimizer;
    precision = o.precision;
    process_group = o.process_group;
    return static_cast<Derived&>(*this);
  }

  // InvalidArgument naming `who` when the model, optimizer or precision is missing.
  absl::Status CheckPieces(absl::string_view who) const {
    if (model == nullptr || optimizer == nullptr || precision == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(who, ": the model, the optimizer and the precision must all be set"));
    }
    return absl::OkStatus();
  }
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_STRATEGY_PIECES_H_
