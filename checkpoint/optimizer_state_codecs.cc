#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include "checkpoint/optimizer_state_internal.h"
#include "optim/adafactor.h"
#include "optim/hf_adamw.h"

// The Python state-dict layout of each optimizer optimizer_state.h supports.
namespace loom::checkpoint::optimizer_state_internal {
namespace {

template <typename Options>
bool Is(const OptimizerOptions& o) {
  return dynamic_cast<const Options*>(&o) != nullptr;
}

// Adam and AdamW share their state and most hyperparameters.
template <typename Options, typename State>
Codec AdamCodec(std::string name, bool adam) {
  Codec c;
  c.name = std::move(name);
  c.matches = Is<Options>;
  c.write_group = [adam](const OptimizerOptions& base, GenericDict& g) {
    const auto& o = static_cast<const Options&>(base);
    g.insert("lr", o.lr());
    g.insert("betas", Pair(o.betas()));
    g.insert("eps", o.eps());
    g.insert("weight_decay", o.weight_decay());
    g.insert("amsgrad", o.amsgrad());
    if (adam) {
      g.insert("maximize", false);
      g.insert("foreach", IValue());
    } else {
      g.insert("foreach", IValue());
      g.insert("maximize", false);
    }
    g.insert("capturable", false);
    if (adam) {
      g.insert("differentiable", false);
      g.insert("fused", false);
    }
  };
  c.read_group = [](const DictView& d, OptimizerOptions& base) -> absl::Status {
    auto& o = static_cast<Options&>(base);
    ASSIGN_OR_RETURN(const double lr, d.Double("lr"));
    ASSIGN_OR_RETURN(const Betas betas, d.PairOf("betas"));
    ASSIGN_OR_RETURN(const double eps, d.Double("eps"));
    ASSIGN_OR_RETURN(const double wd, d.Double("weight_decay"));
    ASSIGN_OR_RETURN(const bool amsgrad, d.Bool("amsgrad"));
    o.lr(lr).betas(betas).eps(eps).weight_decay(wd).amsgrad(amsgrad);
    return absl::OkStatus();
  };
  c.write_state = [](const OptimizerParamState& base) -> std::optional<GenericDict> {
    const auto& s = static_cast<const State&>(base);
    GenericDict d = NewDict();
    d.insert("step", FloatStep(s.step()));
    d.insert("exp_avg", Cpu(s.exp_avg()));
    d.insert("exp_avg_sq", Cpu(s.exp_avg_sq()));
    if (s.max_exp_avg_sq().defined()) d.insert("max_exp_avg_sq", Cpu(s.max_exp_avg_sq()));
    return d;
  };
  c.read_state = [](const DictView& d,
                    const at::Tensor& p) -> absl::StatusOr<std::unique_ptr<OptimizerParamState>> {
    RETURN_IF_ERROR(d.OnlyKeys({"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}));
    auto s = std::make_unique<State>();
    ASSIGN_OR_RETURN(const int64_t step, d.Step("step"));
    ASSIGN_OR_RETURN(at::Tensor m, d.RequiredTensor("exp_avg", p, p.sizes()));
    ASSIGN_OR_RETURN(at::Tensor v, d.RequiredTensor("exp_avg_sq", p, p.sizes()));
    ASSIGN_OR_RETURN(std::optional<at::Tensor> vmax, d.StateTensor("max_exp_avg_sq", p, p.sizes()));
    s->step(step).exp_avg(m).exp_avg_sq(v);
    if (vmax) s->max_exp_avg_sq(*vmax);
    return std::unique_ptr<OptimizerParamState>(std::move(s));
  };
  return c;
}

Codec SgdCodec() {
  using Options = torch::optim::SGDOptions;
  Codec c;
  c.name = "SGD";
  c.matches = Is<Options>;
  c.write_group = [](const OptimizerOptions& base, GenericDict& g) {
    const auto& o = static_cast<const Options&>(base);
    g.insert("lr", o.lr());
    g.insert("momentum", o.momentum());
    g.insert("dampening", o.dampening());
    g.insert("weight_decay", o.weight_decay());
    g.insert("nesterov", o.nesterov());
    g.insert("maximize", false);
    g.insert("foreach", IValue());
    g.insert("differentiable", false);
  };
  c.read_group = [](const DictView& d, OptimizerOptions& base) -> absl::Status {
    auto& o = static_cast<Options&>(base);
    ASSIGN_OR_RETURN(const double lr, d.Double("lr"));
    ASSIGN_OR_RETURN(const double momentum, d.Double("momentum"));
    ASSIGN_OR_RETURN(const double dampening, d.Double("dampening"));
    ASSIGN_OR_RETURN(const double wd, d.Double("weight_decay"));
    ASSIGN_OR_RETURN(const bool nesterov, d.Bool("nesterov"));
    o.lr(lr).momentum(momentum).dampening(dampening).weight_decay(wd).nesterov(nesterov);
    return absl::OkStatus();
  };
  c.write_state = [](const OptimizerParamState& base) -> std::optional<GenericDict> {
    const auto& s = static_cast<const torch::optim::SGDParamState&>(base);
    if (!s.momentum_buffer().defined()) return std::nullopt;
    GenericDict d = NewDict();
    d.insert("momentum_buffer", Cpu(s.momentum_buffer()));
    return d;
  };
  c.read_state = [](const DictView& d,
                    const at::Tensor& p) -> absl::StatusOr<std::unique_ptr<OptimizerParamState>> {
    RETURN_IF_ERROR(d.OnlyKeys({"momentum_buffer"}));
    ASSIGN_OR_RETURN(std::optional<at::Tensor> buf, d.StateTensor("momentum_buffer", p, p.sizes()));
    if (!buf) return std::unique_ptr<OptimizerParamState>();  // Python's None: no state yet
    auto s = std::make_unique<torch::optim::SGDParamState>();
    s->momentum_buffer(*buf);
    return std::unique_ptr<OptimizerParamState>(std::move(s));
  };
  return c;
}

Codec AdagradCodec() {
  using Options = torch::optim::AdagradOptions;
  Codec c;
  c.name = "Adagrad";
  c.matches = Is<Options>;
  c.write_group = [](const OptimizerOptions& base, GenericDict& g) {
    const auto& o = static_cast<const Options&>(base);
    g.insert("lr", o.lr());
    g.insert("lr_decay", o.lr_decay());
    g.insert("eps", o.eps());
    g.insert("weight_decay", o.weight_decay());
    g.insert("initial_accumulator_value", o.initial_accumulator_value());
    g.insert("foreach", IValue());
    g.insert("maximize", false);
  };
  c.read_group = [](const DictView& d, OptimizerOptions& base) -> absl::Status {
    auto& o = static_cast<Options&>(base);
    ASSIGN_OR_RETURN(const double lr, d.Double("lr"));
    ASSIGN_OR_RETURN(const double lr_decay, d.Double("lr_decay"));
    ASSIGN_OR_RETURN(const double eps, d.Double("eps"));
    ASSIGN_OR_RETURN(const double wd, d.Double("weight_decay"));
    ASSIGN_OR_RETURN(const double init, d.Double("initial_accumulator_value"));
    o.lr(lr).lr_decay(lr_decay).eps(eps).weight_decay(wd).initial_accumulator_value(init);
    return absl::OkStatus();
  };
  c.write_state = [](const OptimizerParamState& base) -> std::optional<GenericDict> {
    const auto& s = static_cast<const torch::optim::AdagradParamState&>(base);
    GenericDict d = NewDict();
    d.insert("step", FloatStep(s.step()));
    d.insert("sum", Cpu(s.sum()));
    return d;
  };
  c.read_state = [](const DictView& d,
                    const at::Tensor& p) -> absl::StatusOr<std::unique_ptr<OptimizerParamState>> {
    RETURN_IF_ERROR(d.OnlyKeys({"step", "sum"}));
    ASSIGN_OR_RETURN(const int64_t step, d.Step("step"));
    ASSIGN_OR_RETURN(at::Tensor sum, d.RequiredTensor("sum", p, p.sizes()));
    auto s = std::make_unique<torch::optim::AdagradParamState>();
    s->step(step).sum(sum);
    return std::unique_ptr<OptimizerParamState>(std::move(s));
  };
  return c;
}

Codec RmspropCodec() {
  using Options = torch::optim::RMSpropOptions;
  Codec c;
  c.name = "RMSprop";
  c.matches = Is<Options>;
  c.write_group = [](const OptimizerOptions& base, GenericDict& g) {
    const auto& o = static_cast<const Options&>(base);
    g.insert("lr", o.lr());
    g.insert("momentum", o.momentum());
    g.insert("alpha", o.alpha());
    g.insert("eps", o.eps());
    g.insert("centered", o.centered());
    g.insert("weight_decay", o.weight_decay());
    g.insert("foreach", IValue());
    g.insert("maximize", false);
    g.insert("differentiable", false);
  };
  c.read_group = [](const DictView& d, OptimizerOptions& base) -> absl::Status {
    auto& o = static_cast<Options&>(base);
    ASSIGN_OR_RETURN(const double lr, d.Double("lr"));
    ASSIGN_OR_RETURN(const double momentum, d.Double("momentum"));
    ASSIGN_OR_RETURN(const double alpha, d.Double("alpha"));
    ASSIGN_OR_RETURN(const double eps, d.Double("eps"));
    ASSIGN_OR_RETURN(const bool centered, d.Bool("centered"));
    ASSIGN_OR_RETURN(const double wd, d.Double("weight_decay"));
    o.lr(lr).momentum(momentum).alpha(alpha).eps(eps).centered(centered).weight_decay(wd);
    return absl::OkStatus();
  };
  c.write_state = [](const OptimizerParamState& base) -> std::optional<GenericDict> {
    const auto& s = static_cast<const torch::optim::RMSpropParamState&>(base);
    GenericDict d = NewDict();
    d.insert("step", s.step());
    d.insert("square_avg", Cpu(s.square_avg()));
    if (s.momentum_buffer().defined()) d.insert("momentum_buffer", Cpu(s.momentum_buffer()));
    if (s.grad_avg().defined()) d.insert("grad_avg", Cpu(s.grad_avg()));
    return d;
  };
  c.read_state = [](const DictView& d,
                    const at::Tensor& p) -> absl::StatusOr<std::unique_ptr<OptimizerParamState>> {
    RETURN_IF_ERROR(d.OnlyKeys({"step", "square_avg", "momentum_buffer", "grad_avg"}));
    ASSIGN_OR_RETURN(const int64_t step, d.Step("step"));
    ASSIGN_OR_RETURN(at::Tensor square_avg, d.RequiredTensor("square_avg", p, p.sizes()));
    ASSIGN_OR_RETURN(std::optional<at::Tensor> buf, d.StateTensor("momentum_buffer", p, p.sizes()));
    ASSIGN_OR_RETURN(std::optional<at::Tensor> grad_avg, d.StateTensor("grad_avg", p, p.sizes()));
    auto s = std::make_unique<torch::optim::RMSpropParamState>();
    s->step(step).square_avg(square_avg);
    if (buf) s->momentum_buffer(*buf);
    if (grad_avg) s->grad_avg(*grad_avg);
    return std::unique_ptr<OptimizerParamState>(std::move(s));
  };
  return c;
}

Codec HfAdamWCodec() {
  using Options = optim::HfAdamWOptions;
  Codec c;
  c.name = "transformers.AdamW (adamw_hf)";
  c.matches = Is<Options>;
  c.write_group = [](const OptimizerOptions& base, GenericDict& g) {
    const auto& o = static_cast<const Options&>(base);
    g.insert("lr", o.lr());
    g.insert("betas", Pair(o.betas()));
    g.insert("eps", o.eps());
    g.insert("weight_decay", o.weight_decay());
    g.insert("correct_bias", o.correct_bias());
  };
  c.read_group = [](const DictView& d, OptimizerOptions& base) -> absl::Status {
    auto& o = static_cast<Options&>(base);
    ASSIGN_OR_RETURN(const double lr, d.Double("lr"));
    ASSIGN_OR_RETURN(const Betas betas, d.PairOf("betas"));
    ASSIGN_OR_RETURN(const double eps, d.Double("eps"));
    ASSIGN_OR_RETURN(const double wd, d.Double("weight_decay"));
    ASSIGN_OR_RETURN(const bool correct_bias, d.Bool("correct_bias"));
    o.lr(lr).betas(betas).eps(eps).weight_decay(wd).correct_bias(correct_bias);
    return absl::OkStatus();
  };
  c.write_state = [](const OptimizerParamState& base) -> std::optional<GenericDict> {
    const auto& s = static_cast<const optim::HfAdamWParamState&>(base);
    GenericDict d = NewDict();
    d.insert("step", s.step());
    d.insert("exp_avg", Cpu(s.exp_avg()));
    d.insert("exp_avg_sq", Cpu(s.exp_avg_sq()));
    return d;
  };
  c.read_state = [](const DictView& d,
                    const at::Tensor& p) -> absl::StatusOr<std::unique_ptr<OptimizerParamState>> {
    RETURN_IF_ERROR(d.OnlyKeys({"step", "exp_avg", "exp_avg_sq"}));
    ASSIGN_OR_RETURN(const int64_t step, d.Step("step"));
    ASSIGN_OR_RETURN(at::Tensor m, d.RequiredTensor("exp_avg", p, p.sizes()));
    ASSIGN_OR_RETURN(at::Tensor v, d.RequiredTensor("exp_avg_sq", p, p.sizes()));
    auto s = std::make_unique<optim::HfAdamWParamState>();
    s->step(step).exp_avg(m).exp_avg_sq(v);
    return std::unique_ptr<OptimizerParamState>(std::move(s));
  };
  return c;
}

Codec AdafactorCodec() {
  using Options = optim::AdafactorOptions;
  Codec c;
  c.name = "transformers.Adafactor (adafactor)";
  c.matches = Is<Options>;
  c.write_group = [](const OptimizerOptions& base, GenericDict& g) {
    const auto& o = static_cast<const Options&>(base);
    g.insert("lr", Optional(o.lr()));
    g.insert("eps", Pair(o.eps()));
    g.insert("clip_threshold", o.clip_threshold());
    g.insert("decay_rate", o.decay_rate());
    g.insert("beta1", Optional(o.beta1()));
    g.insert("weight_decay", o.weight_decay());
    g.insert("scale_parameter", o.scale_parameter());
    g.insert("relative_step", o.relative_step());
    g.insert("warmup_init", o.warmup_init());
  };
  c.read_group = [](const DictView& d, OptimizerOptions& base) -> absl::Status {
    auto& o = static_cast<Options&>(base);
    ASSIGN_OR_RETURN(const c10::optional<double> lr, d.OptionalDouble("lr"));
    ASSIGN_OR_RETURN(const Betas eps, d.PairOf("eps"));
    ASSIGN_OR_RETURN(const double clip, d.Double("clip_threshold"));
    ASSIGN_OR_RETURN(const double decay, d.Double("decay_rate"));
    ASSIGN_OR_RETURN(const c10::optional<double> beta1, d.OptionalDouble("beta1"));
    ASSIGN_OR_RETURN(const double wd, d.Double("weight_decay"));
    ASSIGN_OR_RETURN(const bool scale, d.Bool("scale_parameter"));
    ASSIGN_OR_RETURN(const bool relative, d.Bool("relative_step"));
    ASSIGN_OR_RETURN(const bool warmup, d.Bool("warmup_init"));
    o.lr(lr).eps(eps).clip_threshold(clip).decay_rate(decay).beta1(beta1).weight_decay(wd);
    o.scale_parameter(scale).relative_step(relative).warmup_init(warmup);
    return absl::OkStatus();
  };
  c.write_state = [](const OptimizerParamState& base) -> std::optional<GenericDict> {
    const auto& s = static_cast<const optim::AdafactorParamState&>(base);
    GenericDict d = NewDict();
    d.insert("step", s.step());
    if (s.exp_avg().defined()) d.insert("exp_avg", Cpu(s.exp_avg()));
    if (s.exp_avg_sq_row().defined()) d.insert("exp_avg_sq_row", Cpu(s.exp_avg_sq_row()));
    if (s.exp_avg_sq_col().defined()) d.insert("exp_avg_sq_col", Cpu(s.exp_avg_sq_col()));
    if (s.exp_avg_sq().defined()) d.insert("exp_avg_sq", Cpu(s.exp_avg_sq()));
    d.insert("RMS", s.rms().defined() ? Cpu(s.rms()) : IValue(int64_t{0}));
    return d;
  };
  c.read_state = [](const DictView& d,
                    const at::Tensor& p) -> absl::StatusOr<std::unique_ptr<OptimizerParamState>> {
    RETURN_IF_ERROR(
        d.OnlyKeys({"step", "exp_avg", "exp_avg_sq_row", "exp_avg_sq_col", "exp_avg_sq", "RMS"}));
    ASSIGN_OR_RETURN(const int64_t step, d.Step("step"));
    auto s = std::make_unique<optim::AdafactorParamState>();
    s->step(step);
    ASSIGN_OR_RETURN(std::optional<at::Tensor> m, d.StateTensor("exp_avg", p, p.sizes()));
    if (m) s->exp_avg(*m);
    const at::IntArrayRef shape = p.sizes();
    if (p.dim() >= 2) {  // factored: row drops the last dimension, col the one before it
      std::vector<int64_t> col(shape.begin(), shape.end() - 2);
      col.push_back(shape.back());
      ASSIGN_OR_RETURN(at::Tensor row_v,
                       d.RequiredTensor("exp_avg_sq_row", p, shape.slice(0, shape.size() - 1)));
      ASSIGN_OR_RETURN(at::Tensor col_v, d.RequiredTensor("exp_avg_sq_col", p, col));
      s->exp_avg_sq_row(row_v).exp_avg_sq_col(col_v);
    } else {
      ASSIGN_OR_RETURN(at::Tensor v, d.RequiredTensor("exp_avg_sq", p, shape));
      s->exp_avg_sq(v);
    }
    ASSIGN_OR_RETURN(const IValue* rms, d.Required("RMS"));
    if (rms->isTensor()) {
      ASSIGN_OR_RETURN(at::Tensor r, d.RequiredTensor("RMS", p, {}));
      s->rms(r);
    } else if (!(rms->isInt() || rms->isDouble())) {
      return d.Error("RMS", "is neither a number nor a tensor");
    }
    return std::unique_ptr<OptimizerParamState>(std::move(s));
  };
  return c;
}
}  // namespace

const std::vector<Codec>& Codecs() {
  static const auto* codecs = new std::vector<Codec>{
      AdamCodec<torch::optim::AdamWOptions, torch::optim::AdamWParamState>("AdamW", false),
      AdamCodec<torch::optim::AdamOptions, torch::optim::AdamParamState>("Adam", true),
      SgdCodec(),
      AdagradCodec(),
      RmspropCodec(),
      HfAdamWCodec(),
      AdafactorCodec(),
  };
  return *codecs;
}

}  // namespace loom::checkpoint::optimizer_state_internal
