"""Writes the golden files of //tests/optim with Python torch 1.13 (Debian's /usr/bin/python3):

  testdata/optimizers.json  several optimizer steps for every --optim name loom supports, on a
                            small module (HF's two parameter groups), from the same start;
  testdata/schedulers.json  lr per step for every HF SchedulerType, with and without kwargs;
  testdata/clip_grad.json   torch.nn.utils.clip_grad_norm_ norms and clipped gradients.

The HF pieces that are not torch (Trainer.get_decay_parameter_names, transformers.AdamW,
transformers.Adafactor, the get_scheduler lambdas of transformers 4.38-4.41) are transcribed
below from transformers' source, independently of loom's C++. Checked in; rerun when a recipe
changes (golden_up_to_date_test fails when the files and this script disagree):

    /usr/bin/python3 tests/optim/make_golden.py            # writes tests/optim/testdata/
    /usr/bin/python3 tests/optim/make_golden.py OUT_DIR    # writes elsewhere
"""

import functools
import json
import math
import os
import sys

import torch
from torch import nn

STEPS = 4


# ---------------------------------------------------------------------------------------------
# HF Trainer's grouping (trainer.py get_decay_parameter_names + trainer_pt_utils
# get_parameter_names with ALL_LAYERNORM_LAYERS = [nn.LayerNorm]).

def names_outside_layernorm(module):
    names = []
    for child_name, child in module.named_children():
        if isinstance(child, nn.LayerNorm):
            continue
        names += [child_name + "." + n for n in names_outside_layernorm(child)]
    names += list(module._parameters.keys())
    return names


def decay_parameter_names(model):
    return [n for n in names_outside_layernorm(model) if "bias" not in n]


def hf_groups(model, weight_decay):
    decay = set(decay_parameter_names(model))
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    return [
        {"params": [p for n, p in named if n in decay], "weight_decay": weight_decay,
         "names": [n for n, _ in named if n in decay]},
        {"params": [p for n, p in named if n not in decay], "weight_decay": 0.0,
         "names": [n for n, _ in named if n not in decay]},
    ]


# ---------------------------------------------------------------------------------------------
# transformers.AdamW (optimization.py), rewritten: moments first, eps outside the bias
# correction, decay after the update and only for a positive rate.

class HfAdamW(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0,
                 correct_bias=True):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      correct_bias=correct_bias))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                st["step"] += 1
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m.mul_(b1).add_(g, alpha=1.0 - b1)
                v.mul_(b2).addcmul_(g, g, value=1.0 - b2)
                denominator = v.sqrt().add_(group["eps"])
                size = group["lr"]
                if group["correct_bias"]:
                    size = size * math.sqrt(1.0 - b2 ** st["step"]) / (1.0 - b1 ** st["step"])
                p.addcdiv_(m, denominator, value=-size)
                if group["weight_decay"] > 0.0:
                    p.add_(p, alpha=-group["lr"] * group["weight_decay"])


# ---------------------------------------------------------------------------------------------
# transformers.Adafactor (optimization.py), rewritten.

def rms(t):
    return t.norm(2) / (t.numel() ** 0.5)


class HfAdafactor(torch.optim.Optimizer):
    def __init__(self, params, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8,
                 beta1=None, weight_decay=0.0, scale_parameter=True, relative_step=True,
                 warmup_init=False):
        assert not (lr is not None and relative_step)
        assert not (warmup_init and not relative_step)
        super().__init__(params, dict(lr=lr, eps=eps, clip_threshold=clip_threshold,
                                      decay_rate=decay_rate, beta1=beta1,
                                      weight_decay=weight_decay, scale_parameter=scale_parameter,
                                      relative_step=relative_step, warmup_init=warmup_init))

    @staticmethod
    def step_lr(group, st):
        size = group["lr"]
        if group["relative_step"]:
            floor = 1e-6 * st["step"] if group["warmup_init"] else 1e-2
            size = min(floor, 1.0 / math.sqrt(st["step"]))
        scale = max(group["eps"][1], st["RMS"]) if group["scale_parameter"] else 1.0
        return scale * size

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                shape = g.shape
                factored = len(shape) >= 2
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    if group["beta1"] is not None:
                        st["exp_avg"] = torch.zeros_like(g)
                    if factored:
                        st["exp_avg_sq_row"] = torch.zeros(shape[:-1]).to(g)
                        st["exp_avg_sq_col"] = torch.zeros(shape[:-2] + shape[-1:]).to(g)
                    else:
                        st["exp_avg_sq"] = torch.zeros_like(g)
                    st["RMS"] = 0
                st["step"] += 1
                st["RMS"] = rms(p)
                lr = self.step_lr(group, st)
                beta2t = 1.0 - math.pow(st["step"], group["decay_rate"])
                u = (g ** 2) + group["eps"][0]
                if factored:
                    row, col = st["exp_avg_sq_row"], st["exp_avg_sq_col"]
                    row.mul_(beta2t).add_(u.mean(dim=-1), alpha=1.0 - beta2t)
                    col.mul_(beta2t).add_(u.mean(dim=-2), alpha=1.0 - beta2t)
                    r = (row / row.mean(dim=-1, keepdim=True)).rsqrt_().unsqueeze(-1)
                    c = col.unsqueeze(-2).rsqrt()
                    u = torch.mul(r, c)
                    u.mul_(g)
                else:
                    v = st["exp_avg_sq"]
                    v.mul_(beta2t).add_(u, alpha=1.0 - beta2t)
                    u = v.rsqrt().mul_(g)
                u.div_((rms(u) / group["clip_threshold"]).clamp_(min=1.0))
                u.mul_(lr)
                if group["beta1"] is not None:
                    m = st["exp_avg"]
                    m.mul_(group["beta1"]).add_(u, alpha=1 - group["beta1"])
                    u = m
                if group["weight_decay"] != 0:
                    p.add_(p, alpha=-group["weight_decay"] * lr)
                p.add_(-u)


# ---------------------------------------------------------------------------------------------
# The module of optimizers.json. loom's test builds the same tree in C++.

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.LayerNorm = nn.LayerNorm(4)
        self.proj = nn.Linear(4, 2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.zeros(2))            # own parameter: decays
        self.frozen = nn.Parameter(torch.zeros(3), requires_grad=False)
        self.late = nn.Parameter(torch.zeros(2, 2))          # no gradient at step 1
        self.unused = nn.Parameter(torch.zeros(3))           # never a gradient
        self.embed = nn.Embedding(5, 3)                      # rows 1 and 3 get zero gradients
        self.dense = nn.Linear(3, 4)
        self.encoder = Block()


def make_net():
    torch.manual_seed(1234)
    net = Net()
    with torch.no_grad():
        for _, p in net.named_parameters():
            p.copy_(torch.randn(p.shape))
    return net


def make_grads(net):
    torch.manual_seed(99)
    steps = []
    for k in range(STEPS):
        grads = {}
        for name, p in net.named_parameters():
            if name in ("frozen", "unused") or (name == "late" and k == 0):
                grads[name] = None
                continue
            g = torch.randn(p.shape) * (0.5 + k)
            if name == "embed.weight":
                g[1].zero_()
                g[3].zero_()
            grads[name] = g
        steps.append(grads)
    return steps


LR_FACTORS = [1.0, 0.5, 0.25, 1.0]  # each group's lr = base lr * factor before step k

# (case name, --optim, TrainingArguments fields, Python optimizer factory, apply LR_FACTORS)
ADAM = {"learning_rate": 1e-2, "weight_decay": 0.1, "adam_beta1": 0.9, "adam_beta2": 0.999,
        "adam_epsilon": 1e-8}


def torch_adamw(groups, a):
    return torch.optim.AdamW(groups, lr=a["learning_rate"], betas=(a["adam_beta1"], a["adam_beta2"]),
                             eps=a["adam_epsilon"])


def hf_adamw(groups, a):
    return HfAdamW(groups, lr=a["learning_rate"], betas=(a["adam_beta1"], a["adam_beta2"]),
                   eps=a["adam_epsilon"])


OPTIMIZER_CASES = [
    ("adamw_torch", "adamw_torch", ADAM, torch_adamw),
    ("adamw_torch_betas", "adamw_torch",
     dict(ADAM, adam_beta1=0.8, adam_beta2=0.95, adam_epsilon=1e-6, weight_decay=0.3), torch_adamw),
    ("adamw_torch_fused", "adamw_torch_fused", ADAM, torch_adamw),
    ("adamw_hf", "adamw_hf", dict(ADAM, adam_epsilon=1e-6), hf_adamw),
    ("adamw_hf_betas", "adamw_hf", dict(ADAM, adam_beta1=0.8, adam_beta2=0.95, weight_decay=0.3),
     hf_adamw),
    ("adafactor", "adafactor", {"learning_rate": 1e-2, "weight_decay": 0.1},
     lambda g, a: HfAdafactor(g, lr=a["learning_rate"], scale_parameter=False,
                              relative_step=False)),
    ("sgd", "sgd", {"learning_rate": 0.1, "weight_decay": 0.1},
     lambda g, a: torch.optim.SGD(g, lr=a["learning_rate"])),
    ("adagrad", "adagrad", {"learning_rate": 0.1, "weight_decay": 0.1},
     lambda g, a: torch.optim.Adagrad(g, lr=a["learning_rate"])),
    ("rmsprop", "rmsprop", {"learning_rate": 0.01, "weight_decay": 0.1},
     lambda g, a: torch.optim.RMSprop(g, lr=a["learning_rate"])),
]

# Adafactor built directly (not by the Trainer) with its other options; weight decay 0.
ADAFACTOR_DIRECT_CASES = [
    ("adafactor_beta1", {"lr": 1e-2, "beta1": 0.9, "scale_parameter": False,
                         "relative_step": False, "warmup_init": False, "clip_threshold": 0.5}),
    ("adafactor_relative", {"lr": None, "beta1": None, "scale_parameter": True,
                            "relative_step": True, "warmup_init": True, "clip_threshold": 1.0}),
]


def flat(t):
    return [float(x) for x in t.detach().double().reshape(-1).tolist()]


def run_optimizer(make_optimizer, weight_decay, lr_factors):
    net = make_net()
    grads = make_grads(net)
    groups = hf_groups(net, weight_decay)
    py_groups = [{"params": g["params"], "weight_decay": g["weight_decay"]} for g in groups]
    opt = make_optimizer(py_groups)
    base = [g["lr"] for g in opt.param_groups]
    params = dict(net.named_parameters())
    after = []
    for k in range(STEPS):
        if lr_factors:
            for g, lr in zip(opt.param_groups, base):
                g["lr"] = lr * LR_FACTORS[k]
        for name, p in params.items():
            p.grad = None if grads[k][name] is None else grads[k][name].clone()
        opt.step()
        after.append({name: flat(p) for name, p in params.items()})
    return after


def optimizers_golden():
    net = make_net()
    grads = make_grads(net)
    groups = hf_groups(net, 0.1)
    out = {
        "torch_version": torch.__version__,
        "steps": STEPS,
        "lr_factors": LR_FACTORS,
        "params": [{"name": n, "shape": list(p.shape), "requires_grad": p.requires_grad,
                    "init": flat(p)} for n, p in net.named_parameters()],
        "decay_parameter_names": decay_parameter_names(net),
        "group_names": [g["names"] for g in groups],
        "grads": [{n: (None if g is None else flat(g)) for n, g in step.items()} for step in grads],
        "cases": [],
    }
    for name, optim, fields, factory in OPTIMIZER_CASES:
        after = run_optimizer(lambda g: factory(g, fields), fields["weight_decay"], True)
        out["cases"].append({"name": name, "optim": optim, "args": fields, "after_step": after})
    for name, options in ADAFACTOR_DIRECT_CASES:
        after = run_optimizer(lambda g: HfAdafactor(g, **options), 0.0,
                              options["lr"] is not None)
        out["cases"].append({"name": name, "adafactor_options": options, "after_step": after})
    return out


# ---------------------------------------------------------------------------------------------
# HF's schedules (optimization.py, transformers 4.38-4.41), rewritten as plain functions.

def _ramp(step, warmup):
    return float(step) / float(max(1, warmup))


def linear(step, *, warmup, total):
    if step < warmup:
        return _ramp(step, warmup)
    return max(0.0, float(total - step) / float(max(1, total - warmup)))


def constant_with_warmup(step, *, warmup):
    if step < warmup:
        return float(step) / float(max(1.0, warmup))
    return 1.0


def _progress(step, warmup, total):
    return float(step - warmup) / float(max(1, total - warmup))


def cosine(step, *, warmup, total, num_cycles):
    if step < warmup:
        return _ramp(step, warmup)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 *
                                          _progress(step, warmup, total))))


def cosine_restarts(step, *, warmup, total, num_cycles):
    if step < warmup:
        return _ramp(step, warmup)
    progress = _progress(step, warmup, total)
    if progress >= 1.0:
        return 0.0
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * ((float(num_cycles) * progress) % 1.0))))


def polynomial(step, *, warmup, total, lr_end, power, lr_init):
    if step < warmup:
        return _ramp(step, warmup)
    if step > total:
        return lr_end / lr_init
    remaining = 1 - (step - warmup) / (total - warmup)
    return ((lr_init - lr_end) * remaining ** power + lr_end) / lr_init


def inverse_sqrt(step, *, warmup, timescale):
    if step < warmup:
        return _ramp(step, warmup)
    return 1.0 / math.sqrt((step + timescale - warmup) / timescale)


def cosine_min_lr(step, *, warmup, total, num_cycles, min_lr_rate):
    if step < warmup:
        return _ramp(step, warmup)
    factor = 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 *
                                   _progress(step, warmup, total)))
    return max(0, factor * (1 - min_lr_rate) + min_lr_rate)


def wsd(step, *, warmup, stable, decay, num_cycles, min_lr_ratio):
    if step < warmup:
        return _ramp(step, warmup)
    if step < warmup + stable:
        return 1.0
    if step < warmup + stable + decay:
        progress = float(step - warmup - stable) / float(max(1, decay))
        value = max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))
        return (1.0 - min_lr_ratio) * value + min_lr_ratio
    return min_lr_ratio


def hf_scheduler(kind, optimizer, warmup, total, kwargs):
    """get_scheduler(kind, optimizer, warmup, total, scheduler_specific_kwargs=kwargs)."""
    LambdaLR = torch.optim.lr_scheduler.LambdaLR
    lr_init = optimizer.defaults["lr"]
    if kind == "constant":
        return LambdaLR(optimizer, lambda _: 1)
    if kind == "reduce_lr_on_plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, **kwargs)
    if kind == "constant_with_warmup":
        return LambdaLR(optimizer, functools.partial(constant_with_warmup, warmup=warmup))
    if kind == "inverse_sqrt":
        return LambdaLR(optimizer, functools.partial(inverse_sqrt, warmup=warmup,
                                                     timescale=warmup or 10_000))
    if kind == "warmup_stable_decay":
        return LambdaLR(optimizer, functools.partial(
            wsd, warmup=warmup, stable=kwargs["num_stable_steps"], decay=kwargs["num_decay_steps"],
            num_cycles=kwargs.get("num_cycles", 0.5), min_lr_ratio=kwargs.get("min_lr_ratio", 0)))
    common = dict(warmup=warmup, total=total)
    if kind == "linear":
        return LambdaLR(optimizer, functools.partial(linear, **common))
    if kind == "cosine":
        return LambdaLR(optimizer, functools.partial(cosine, num_cycles=kwargs.get("num_cycles", 0.5),
                                                     **common))
    if kind == "cosine_with_restarts":
        return LambdaLR(optimizer, functools.partial(
            cosine_restarts, num_cycles=kwargs.get("num_cycles", 1), **common))
    if kind == "polynomial":
        return LambdaLR(optimizer, functools.partial(
            polynomial, lr_end=kwargs.get("lr_end", 1e-7), power=kwargs.get("power", 1.0),
            lr_init=lr_init, **common))
    if kind == "cosine_with_min_lr":
        rate = kwargs["min_lr"] / lr_init if "min_lr" in kwargs else kwargs["min_lr_rate"]
        return LambdaLR(optimizer, functools.partial(
            cosine_min_lr, num_cycles=kwargs.get("num_cycles", 0.5), min_lr_rate=rate, **common))
    raise ValueError(kind)


LEARNING_RATE = 0.01
GROUP1_LR = 0.02  # a second group with its own base lr
TOTAL = 10

# (type, kwargs, warmup_steps, warmup_ratio, num_training_steps)
SCHEDULER_CASES = [
    ("linear", {}, 3, 0.0, TOTAL),
    ("linear", {}, 0, 0.25, TOTAL),  # warmup = ceil(2.5) = 3
    ("linear", {}, 0, 0.0, TOTAL),
    ("cosine", {}, 3, 0.0, TOTAL),
    ("cosine", {"num_cycles": 1.25}, 2, 0.0, TOTAL),
    ("cosine_with_restarts", {}, 3, 0.0, TOTAL),
    ("cosine_with_restarts", {"num_cycles": 3}, 2, 0.0, TOTAL),
    ("polynomial", {}, 3, 0.0, TOTAL),
    ("polynomial", {"lr_end": 1e-4, "power": 2.0}, 2, 0.0, TOTAL),
    ("constant", {}, 3, 0.0, TOTAL),
    ("constant_with_warmup", {}, 3, 0.0, TOTAL),
    ("constant_with_warmup", {}, 0, 0.1, TOTAL),
    ("inverse_sqrt", {}, 3, 0.0, TOTAL),
    ("inverse_sqrt", {}, 0, 0.0, TOTAL),  # timescale 10000
    ("cosine_with_min_lr", {"min_lr": 1e-3}, 3, 0.0, TOTAL),
    ("cosine_with_min_lr", {"min_lr_rate": 0.1, "num_cycles": 0.75}, 2, 0.0, TOTAL),
    ("warmup_stable_decay", {"num_stable_steps": 4, "num_decay_steps": 3}, 3, 0.0, TOTAL),
    ("warmup_stable_decay", {"num_stable_steps": 2, "num_decay_steps": 4, "min_lr_ratio": 0.1,
                             "num_cycles": 0.75}, 2, 0.0, TOTAL),
]

PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.95, 0.95, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9,
                   0.9, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]
PLATEAU_CASES = [
    {},
    {"mode": "max", "factor": 0.5, "patience": 1, "threshold": 0.01, "threshold_mode": "abs",
     "cooldown": 1, "min_lr": [0.004, 0.0]},
    {"factor": 0.5, "patience": 2, "threshold": 0.05, "min_lr": 0.003, "eps": 1e-3},
]


def two_group_sgd():
    return torch.optim.SGD([{"params": [nn.Parameter(torch.zeros(1))]},
                            {"params": [nn.Parameter(torch.zeros(1))], "lr": GROUP1_LR}],
                           lr=LEARNING_RATE)


def group_lrs(optimizer):
    return [g["lr"] for g in optimizer.param_groups]


def schedulers_golden():
    out = {"torch_version": torch.__version__, "learning_rate": LEARNING_RATE,
           "group_lrs": [LEARNING_RATE, GROUP1_LR], "cases": []}
    for kind, kwargs, warmup_steps, warmup_ratio, total in SCHEDULER_CASES:
        warmup = warmup_steps if warmup_steps > 0 else math.ceil(total * warmup_ratio)
        opt = two_group_sgd()
        sched = hf_scheduler(kind, opt, warmup, total, kwargs)
        lrs = [group_lrs(opt)]
        for _ in range(total + 2):
            opt.step()
            sched.step()
            lrs.append(group_lrs(opt))
        out["cases"].append({"type": kind, "kwargs": kwargs, "warmup_steps": warmup_steps,
                             "warmup_ratio": warmup_ratio, "num_training_steps": total,
                             "lrs": lrs})
    for kwargs in PLATEAU_CASES:
        opt = two_group_sgd()
        sched = hf_scheduler("reduce_lr_on_plateau", opt, 0, TOTAL, kwargs)
        lrs = [group_lrs(opt)]
        for metric in PLATEAU_METRICS:
            sched.step(metric)
            lrs.append(group_lrs(opt))
        out["cases"].append({"type": "reduce_lr_on_plateau", "kwargs": kwargs, "warmup_steps": 0,
                             "warmup_ratio": 0.0, "num_training_steps": TOTAL,
                             "metrics": PLATEAU_METRICS, "lrs": lrs})
    return out


# ---------------------------------------------------------------------------------------------
# torch.nn.utils.clip_grad_norm_.

def clip_grad_golden():
    torch.manual_seed(7)
    base = [torch.randn(3, 4), torch.randn(5), torch.randn(2, 2, 2), torch.randn(())]
    cases = [
        ("clips", base, [True, True, True, True], 0.5, torch.float32),
        ("factor_one", base, [True, True, True, True], 1e6, torch.float32),
        ("near_threshold", base, [True, True, True, True], None, torch.float32),
        ("some_without_grad", base, [True, False, True, False], 0.25, torch.float32),
        ("single", base[:1], [True], 0.1, torch.float32),
        ("none_with_grad", base[:2], [False, False], 1.0, torch.float32),
        ("mixed_bf16", base[:2], [True, True], 0.5, torch.bfloat16),
        ("zero_grads", [torch.zeros(3), torch.zeros(2, 2)], [True, True], 1.0, torch.float32),
    ]
    out = {"torch_version": torch.__version__, "cases": []}
    for name, grads, has_grad, max_norm, first_dtype in cases:
        params, inputs = [], []
        for i, (g, has) in enumerate(zip(grads, has_grad)):
            dtype = first_dtype if i == 0 else torch.float32
            p = nn.Parameter(torch.zeros(g.shape, dtype=dtype))
            p.grad = g.to(dtype).clone() if has else None
            params.append(p)
            inputs.append({"shape": list(g.shape), "dtype": str(dtype).replace("torch.", ""),
                           "grad": flat(p.grad) if has else None})
        if max_norm is None:  # the total norm itself: clip_coef within float rounding of 1
            probe = [g.clone() for g, has in zip(grads, has_grad) if has]
            max_norm = float(torch.norm(torch.stack([torch.norm(g, 2.0) for g in probe]), 2.0))
        total = torch.nn.utils.clip_grad_norm_(params, max_norm)
        out["cases"].append({"name": name, "max_norm": max_norm, "params": inputs,
                             "total_norm": float(total),
                             "clipped": [flat(p.grad) if p.grad is not None else None
                                         for p in params]})
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "testdata")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    for name, build in (("optimizers.json", optimizers_golden),
                        ("schedulers.json", schedulers_golden),
                        ("clip_grad.json", clip_grad_golden)):
        path = os.path.join(out_dir, name)
        with open(path, "w") as f:
            json.dump(build(), f, indent=1, sort_keys=False)
            f.write("\n")
        print("wrote", path)


if __name__ == "__main__":
    main()
