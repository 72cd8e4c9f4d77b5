#!/usr/bin/python3
"""Reference of HF Trainer's training loop (transformers 4.38 + accelerate 0.27, torch 1.13).

transformers is not installed here, so this script re-implements, by hand, exactly what
HF's source (transformers 4.38 Trainer._inner_training_loop, accelerate 0.27
SeedableRandomSampler) does for one process on CPU, with torch's own
AdamW, LambdaLR, ReduceLROnPlateau and clip_grad_norm_:

  - data order: epoch e visits torch.randperm(N, generator=Generator().manual_seed(seed + e))
    (seed = data_seed or seed; accelerate's SeedableRandomSampler), in consecutive batches;
  - the global random stream, which dropout draws from: Trainer.__init__'s set_seed(seed)
    (after the model exists), then torch's own DataLoader for the training epochs and each
    evaluation, whose every iterator draws its base seed from the global generator (torch 1.13
    `_BaseDataLoaderIter.__init__`), and the model's dropout layers in module order at each
    micro-batch (a scenario's "model": {"dropout": p});
  - HF's step counting: max_steps / num_train_epochs from len(dataloader) // GA; a micro-batch
    counter across epochs; an optimizer step at every GA-th micro-batch, or at the last
    micro-batch of an epoch with no more than GA micro-batches;
  - per micro-batch: backward of loss / GA (accelerator.backward divides by GA), running
    tr_loss (float32 tensor) += loss.detach() / GA;
  - per step: clip_grad_norm_ (pre-clip norm logged), optimizer.step(), lr_scheduler.step()
    (not for ReduceLROnPlateau), zero_grad, DefaultFlowCallback's on_step_end flags, then
    _maybe_log_save_evaluate: log (loss rounded to 4, grad_norm, learning_rate, epoch rounded
    to 2) -> evaluate (ReduceLROnPlateau steps on the metric) -> (no saving here);
  - HF create_optimizer: AdamW with the weight-decay group (every parameter outside LayerNorm
    modules whose name lacks "bias") and the no-decay group; get_scheduler's formulas;
  - LabelSmoother for label_smoothing_factor; evaluation loss as HF's evaluation_loop
    computes it (each batch's mean loss repeated batch-size times, float32 mean).

A scenario with "hf_checkpoint_steps": [k, ...] also writes, at each step k's save point (after
its log and evaluation), the checkpoint folder HF's Trainer would (transformers 4.38 `_save_checkpoint` on
one CPU process with save_safetensors=False): pytorch_model.bin, optimizer.pt, scheduler.pt,
rng_state.pth (`_save_rng_state`: python / numpy / cpu) and trainer_state.json (4.38's
TrainerState fields), into DATA_DIR/hf_checkpoints/<scenario>/checkpoint-k; the run goes on
uninterrupted, which a resume must reproduce.

usage: trainer_reference.py SCENARIOS_JSON DATA_DIR OUT_JSON OUT_PARAMS_PT
  DATA_DIR holds weights.pt, train.pt, eval.pt (plain dicts of tensors written by C++'s
  torch::pickle_save); OUT_JSON receives the expected values of every scenario, OUT_PARAMS_PT
  (torch.save of a plain dict "<scenario>/<parameter>" -> tensor) the final parameters, and
  "<scenario>/cpu_rng_state": torch.get_rng_state() when training has ended.
"""
import functools
import json
import math
import os
import random
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

# HF TrainingArguments defaults (transformers 4.38) of every field the reference reads.
HF_DEFAULTS = {
    "per_device_train_batch_size": 8,
    "per_device_eval_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "learning_rate": 5e-5,
    "weight_decay": 0.0,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-8,
    "max_grad_norm": 1.0,
    "num_train_epochs": 3.0,
    "max_steps": -1,
    "lr_scheduler_type": "linear",
    "lr_scheduler_kwargs": {},
    "warmup_ratio": 0.0,
    "warmup_steps": 0,
    "logging_strategy": "steps",
    "logging_steps": 500,
    "dataloader_drop_last": False,
    "dataloader_num_workers": 0,
    "dataloader_persistent_workers": False,
    "seed": 42,
    "data_seed": None,
    "label_smoothing_factor": 0.0,
    "eval_strategy": "no",
    "eval_steps": None,
    "eval_delay": 0,
    "metric_for_best_model": None,
    "greater_is_better": None,
}
# Fields that do not change the arithmetic; the reference accepts only these values.
NEUTRAL_FIELDS = {
    "save_strategy": "no",
    "report_to": "none",
    "disable_tqdm": True,
    "use_cpu": True,
}


class TinyClassifier(nn.Module):
    """tests/trainer/tiny_model.h in Python: same parameter names and operations."""

    def __init__(self, vocab, dim, hidden, classes, dropout=0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, classes)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, input_ids, labels=None):
        h = self.dropout1(self.embedding(input_ids).mean(1))
        h = torch.tanh(self.fc1(h))
        h = self.dropout2(self.norm(h))
        logits = self.fc2(h)
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return loss, logits


def resolve_args(base, overrides):
    merged = dict(base)
    merged.update(overrides)
    args = dict(HF_DEFAULTS)
    for key, value in merged.items():
        if key in NEUTRAL_FIELDS:
            if value != NEUTRAL_FIELDS[key]:
                raise ValueError(f"reference supports {key}={NEUTRAL_FIELDS[key]!r} only, got {value!r}")
        elif key in HF_DEFAULTS:
            args[key] = value
        else:
            raise ValueError(f"the reference does not implement TrainingArguments.{key}")
    # __post_init__: eval_steps defaults to logging_steps; metric_for_best_model to "loss"
    # for reduce_lr_on_plateau; greater_is_better from the metric's name.
    if args["eval_strategy"] == "steps" and not args["eval_steps"]:
        args["eval_steps"] = args["logging_steps"]
    if args["lr_scheduler_type"] == "reduce_lr_on_plateau":
        if args["eval_strategy"] == "no":
            raise ValueError("reduce_lr_on_plateau needs an eval strategy")
        if args["metric_for_best_model"] is None:
            args["metric_for_best_model"] = "loss"
    if args["metric_for_best_model"] is not None and args["greater_is_better"] is None:
        args["greater_is_better"] = args["metric_for_best_model"] not in ("loss", "eval_loss")
    return args


# --- HF get_parameter_names / get_decay_parameter_names -------------------------------------
def get_parameter_names(model, forbidden_layer_types):
    result = []
    for name, child in model.named_children():
        result += [
            f"{name}.{n}"
            for n in get_parameter_names(child, forbidden_layer_types)
            if not isinstance(child, tuple(forbidden_layer_types))
        ]
    result += list(model._parameters.keys())
    return result


def create_optimizer(model, args):
    decay = [n for n in get_parameter_names(model, [nn.LayerNorm]) if "bias" not in n]
    groups = [
        {"params": [p for n, p in model.named_parameters() if n in decay and p.requires_grad],
         "weight_decay": args["weight_decay"]},
        {"params": [p for n, p in model.named_parameters() if n not in decay and p.requires_grad],
         "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=args["learning_rate"],
                             betas=(args["adam_beta1"], args["adam_beta2"]),
                             eps=args["adam_epsilon"])


# --- HF optimization.py schedule lambdas (4.38-4.41) -------------------------------------------
def _constant_lambda(_=None):
    return 1


def _constant_warmup(step, *, num_warmup_steps):
    if step < num_warmup_steps:
        return float(step) / float(max(1.0, num_warmup_steps))
    return 1.0


def _warmup(step, num_warmup_steps):
    return float(step) / float(max(1, num_warmup_steps))


def _linear(step, *, num_warmup_steps, num_training_steps):
    if step < num_warmup_steps:
        return _warmup(step, num_warmup_steps)
    return max(0.0, float(num_training_steps - step) / float(max(1, num_training_steps - num_warmup_steps)))


def _cosine(step, *, num_warmup_steps, num_training_steps, num_cycles):
    if step < num_warmup_steps:
        return _warmup(step, num_warmup_steps)
    progress = float(step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))


def _cosine_hard_restarts(step, *, num_warmup_steps, num_training_steps, num_cycles):
    if step < num_warmup_steps:
        return _warmup(step, num_warmup_steps)
    progress = float(step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
    if progress >= 1.0:
        return 0.0
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * ((float(num_cycles) * progress) % 1.0))))


def _polynomial(step, *, num_warmup_steps, num_training_steps, lr_end, power, lr_init):
    if step < num_warmup_steps:
        return _warmup(step, num_warmup_steps)
    elif step > num_training_steps:
        return lr_end / lr_init
    lr_range = lr_init - lr_end
    decay_steps = num_training_steps - num_warmup_steps
    pct_remaining = 1 - (step - num_warmup_steps) / decay_steps
    decay = lr_range * pct_remaining**power + lr_end
    return decay / lr_init


def _inverse_sqrt(step, *, num_warmup_steps, timescale):
    if step < num_warmup_steps:
        return _warmup(step, num_warmup_steps)
    shift = timescale - num_warmup_steps
    return 1.0 / math.sqrt((step + shift) / timescale)


def _cosine_min_lr(step, *, num_warmup_steps, num_training_steps, num_cycles, min_lr_rate):
    if step < num_warmup_steps:
        return _warmup(step, num_warmup_steps)
    progress = float(step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
    factor = 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress))
    factor = factor * (1 - min_lr_rate) + min_lr_rate
    return max(0, factor)


def _wsd(step, *, num_warmup_steps, num_stable_steps, num_decay_steps, num_cycles, min_lr_ratio):
    if step < num_warmup_steps:
        return _warmup(step, num_warmup_steps)
    if step < num_warmup_steps + num_stable_steps:
        return 1.0
    if step < num_warmup_steps + num_stable_steps + num_decay_steps:
        progress = float(step - num_warmup_steps - num_stable_steps) / float(max(1, num_decay_steps))
        value = max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))
        return (1.0 - min_lr_ratio) * value + min_lr_ratio
    return min_lr_ratio


def create_scheduler(optimizer, args, total):
    """HF get_scheduler(lr_scheduler_type, optimizer, get_warmup_steps(total), total, **kwargs)."""
    name = args["lr_scheduler_type"]
    kw = dict(args["lr_scheduler_kwargs"])
    warmup = args["warmup_steps"] if args["warmup_steps"] > 0 else math.ceil(total * args["warmup_ratio"])
    lam = lambda fn, **k: torch.optim.lr_scheduler.LambdaLR(optimizer, functools.partial(fn, **k))
    if name == "reduce_lr_on_plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, **kw)
    if name == "constant":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, _constant_lambda)
    if name == "constant_with_warmup":
        return lam(_constant_warmup, num_warmup_steps=warmup)
    if name == "inverse_sqrt":
        return lam(_inverse_sqrt, num_warmup_steps=warmup, timescale=warmup or 10_000)
    if name == "linear":
        return lam(_linear, num_warmup_steps=warmup, num_training_steps=total)
    if name == "cosine":
        return lam(_cosine, num_warmup_steps=warmup, num_training_steps=total,
                   num_cycles=kw.get("num_cycles", 0.5))
    if name == "cosine_with_restarts":
        return lam(_cosine_hard_restarts, num_warmup_steps=warmup, num_training_steps=total,
                   num_cycles=kw.get("num_cycles", 1))
    if name == "polynomial":
        lr_init = optimizer.defaults["lr"]
        return lam(_polynomial, num_warmup_steps=warmup, num_training_steps=total,
                   lr_end=kw.get("lr_end", 1e-7), power=kw.get("power", 1.0), lr_init=lr_init)
    if name == "cosine_with_min_lr":
        min_lr, rate = kw.get("min_lr"), kw.get("min_lr_rate")
        if (min_lr is None) == (rate is None):
            raise ValueError("cosine_with_min_lr needs exactly one of min_lr / min_lr_rate")
        if min_lr is not None:
            rate = min_lr / optimizer.defaults["lr"]
        return lam(_cosine_min_lr, num_warmup_steps=warmup, num_training_steps=total,
                   num_cycles=kw.get("num_cycles", 0.5), min_lr_rate=rate)
    if name == "warmup_stable_decay":
        return lam(_wsd, num_warmup_steps=warmup, num_stable_steps=kw["num_stable_steps"],
                   num_decay_steps=kw["num_decay_steps"], num_cycles=kw.get("num_cycles", 0.5),
                   min_lr_ratio=kw.get("min_lr_ratio", 0.0))
    raise ValueError(f"unknown lr_scheduler_type {name}")


# --- HF LabelSmoother ----------------------------------------------------------------------------
def label_smoothed_loss(logits, labels, epsilon, ignore_index=-100):
    log_probs = -F.log_softmax(logits, dim=-1)
    if labels.dim() == log_probs.dim() - 1:
        labels = labels.unsqueeze(-1)
    padding_mask = labels.eq(ignore_index)
    labels = torch.clamp(labels, min=0)
    nll_loss = log_probs.gather(dim=-1, index=labels)
    smoothed_loss = log_probs.sum(dim=-1, keepdim=True, dtype=torch.float32)
    nll_loss.masked_fill_(padding_mask, 0.0)
    smoothed_loss.masked_fill_(padding_mask, 0.0)
    num_active_elements = padding_mask.numel() - padding_mask.long().sum()
    nll_loss = nll_loss.sum() / num_active_elements
    smoothed_loss = smoothed_loss.sum() / (num_active_elements * log_probs.shape[-1])
    return (1 - epsilon) * nll_loss + epsilon * smoothed_loss


def compute_loss(model, batch, args):
    """HF compute_loss: with a label smoother, labels are popped and smoothed."""
    if args["label_smoothing_factor"] != 0:
        _, logits = model(batch["input_ids"])
        return label_smoothed_loss(logits, batch["labels"], args["label_smoothing_factor"])
    loss, _ = model(batch["input_ids"], batch["labels"])
    return loss


class SeedableRandomSampler(torch.utils.data.Sampler):
    """accelerate 0.27's SeedableRandomSampler as HF's loop drives it (set_epoch each epoch):
    randperm(n) from its own Generator().manual_seed(seed + epoch); the global generator is
    not touched."""

    def __init__(self, n, seed):
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        yield from torch.randperm(self.n, generator=generator).tolist()

    def __len__(self):
        return self.n


def worker_options(args):
    """HF get_train_dataloader / get_eval_dataloader's DataLoader keywords for workers."""
    return {"num_workers": args["dataloader_num_workers"],
            "persistent_workers": args["dataloader_persistent_workers"]}


def evaluate(model, data, args):
    """HF evaluation_loop's eval_loss: sequential batches of a fresh DataLoader (whose
    iterator draws its base seed, as HF's get_eval_dataloader's does), each batch's mean loss
    repeated batch-size times, concatenated, numpy float32 mean."""
    model.eval()
    bs = args["per_device_eval_batch_size"]
    n = data["labels"].shape[0]
    losses = []
    with torch.no_grad():
        for idx in DataLoader(range(n), batch_size=bs, **worker_options(args)):
            batch = {k: v[idx] for k, v in data.items()}
            loss = compute_loss(model, batch, args).mean().detach()
            losses.append(loss.repeat(batch["labels"].shape[0]).numpy())
    return np.concatenate(losses).mean().item()


def save_hf_checkpoint(folder, model, optimizer, scheduler, state):
    """transformers 4.38 Trainer._save_checkpoint's files for one CPU process."""
    os.makedirs(folder)
    torch.save(model.state_dict(), os.path.join(folder, "pytorch_model.bin"))
    torch.save(optimizer.state_dict(), os.path.join(folder, "optimizer.pt"))
    torch.save(scheduler.state_dict(), os.path.join(folder, "scheduler.pt"))
    rng = {"python": random.getstate(), "numpy": np.random.get_state(), "cpu": torch.random.get_rng_state()}
    torch.save(rng, os.path.join(folder, "rng_state.pth"))
    with open(os.path.join(folder, "trainer_state.json"), "w") as f:
        f.write(json.dumps(state, indent=2, sort_keys=True) + "\n")


def hf_trainer_state(args, global_step, max_steps, num_train_epochs, epoch, log_history):
    """The fields of transformers 4.38's TrainerState (no stateful_callbacks)."""
    return {"epoch": epoch, "global_step": global_step, "max_steps": max_steps,
            "logging_steps": args["logging_steps"], "eval_steps": args["eval_steps"] or args["logging_steps"],
            "save_steps": 500, "train_batch_size": args["per_device_train_batch_size"],
            "num_train_epochs": num_train_epochs, "num_input_tokens_seen": 0, "total_flos": 0.0,
            "log_history": log_history, "best_metric": None, "best_model_checkpoint": None,
            "is_local_process_zero": True, "is_world_process_zero": True,
            "is_hyper_param_search": False, "trial_name": None, "trial_params": None}


def train(args, weights, train_data, eval_data, dropout, checkpoint_steps=(), checkpoint_dir=None):
    model = TinyClassifier(16, 6, 8, 3, dropout)
    model.load_state_dict(weights, strict=True)
    # Trainer.__init__: set_seed(args.seed) seeds random, numpy and torch.
    random.seed(args["seed"])
    np.random.seed(args["seed"])
    torch.manual_seed(args["seed"])
    n = train_data["labels"].shape[0]
    bs = args["per_device_train_batch_size"]
    ga = args["gradient_accumulation_steps"]
    drop_last = args["dataloader_drop_last"]
    len_dataloader = n // bs if drop_last else math.ceil(n / bs)
    per_epoch = max(len_dataloader // ga, 1)
    if args["max_steps"] > 0:
        max_steps = args["max_steps"]
        num_train_epochs = max_steps // per_epoch + int(max_steps % per_epoch > 0)
    else:
        max_steps = math.ceil(args["num_train_epochs"] * per_epoch)
        num_train_epochs = math.ceil(args["num_train_epochs"])
    logging_steps = args["logging_steps"]
    if logging_steps < 1:
        logging_steps = math.ceil(max_steps * logging_steps)
    eval_steps = args["eval_steps"] or 0
    if 0 < eval_steps < 1:
        eval_steps = math.ceil(max_steps * eval_steps)
    optimizer = create_optimizer(model, args)
    scheduler = create_scheduler(optimizer, args, max_steps)
    plateau = isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
    seed = args["data_seed"] if args["data_seed"] is not None else args["seed"]

    def learning_rate():  # HF _get_learning_rate
        return optimizer.param_groups[0]["lr"] if plateau else scheduler.get_last_lr()[0]

    rec = {"max_steps": max_steps, "micro_losses": [], "step_losses": [], "logs": [], "evals": []}
    tr_loss = torch.tensor(0.0)
    total_loss_scalar = 0.0
    last_logged = 0
    global_step = 0
    epoch_value = None
    control = {"log": False, "evaluate": False, "stop": False}
    grad_norm = None
    step_loss = 0.0
    model.zero_grad()

    history = []  # TrainerState.log_history
    history_saved = []

    def maybe_log_save_evaluate():
        nonlocal tr_loss, total_loss_scalar, last_logged
        if control["log"] and global_step > last_logged:
            tr_loss_scalar = tr_loss.item()
            tr_loss -= tr_loss
            mean = tr_loss_scalar / (global_step - last_logged)
            log = {"step": global_step, "loss": round(mean, 4), "loss_unrounded": mean}
            if grad_norm is not None:
                log["grad_norm"] = grad_norm
            log["learning_rate"] = learning_rate()
            log["epoch"] = round(epoch_value, 2)
            rec["logs"].append(log)
            history.append({"epoch": log["epoch"], "grad_norm": grad_norm, "learning_rate": log["learning_rate"],
                            "loss": log["loss"], "step": global_step})
            total_loss_scalar += tr_loss_scalar
            last_logged = global_step
            control["log"] = False  # CallbackHandler.on_log
        if control["evaluate"]:
            eval_loss = evaluate(model, eval_data, args)
            rec["evals"].append({"step": global_step, "eval_loss": eval_loss})
            history.append({"epoch": round(epoch_value, 2), "eval_loss": eval_loss, "step": global_step})
            control["evaluate"] = False  # CallbackHandler.on_evaluate
            if plateau:
                metric = args["metric_for_best_model"]
                if metric not in ("loss", "eval_loss"):
                    raise ValueError("the reference evaluates eval_loss only")
                scheduler.step(eval_loss)
        if global_step in checkpoint_steps and global_step not in history_saved:
            # _save_checkpoint, in the step's own _maybe_log_save_evaluate call.
            state = hf_trainer_state(args, global_step, max_steps, num_train_epochs, epoch_value, history)
            save_hf_checkpoint(os.path.join(checkpoint_dir, f"checkpoint-{global_step}"), model, optimizer,
                               scheduler, state)
            history_saved.append(global_step)

    lrs_used = []
    total_batched_samples = 0
    sampler = SeedableRandomSampler(n, seed)
    train_loader = DataLoader(range(n), batch_size=bs, sampler=sampler, drop_last=drop_last,
                              **worker_options(args))
    for epoch in range(num_train_epochs):
        sampler.set_epoch(epoch)
        steps_in_epoch = len(train_loader)
        for step, idx in enumerate(train_loader):
            total_batched_samples += 1
            if step % ga == 0:  # on_step_begin
                control["log"] = control["evaluate"] = False
            model.train()
            batch = {k: v[idx] for k, v in train_data.items()}
            loss = compute_loss(model, batch, args)
            (loss / ga).backward()
            tr_loss_step = loss.detach() / ga
            tr_loss += tr_loss_step
            rec["micro_losses"].append(tr_loss_step.item())
            step_loss += tr_loss_step.item()
            short_epoch_end = steps_in_epoch <= ga and step + 1 == steps_in_epoch
            if total_batched_samples % ga == 0 or short_epoch_end:
                if args["max_grad_norm"] > 0:
                    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args["max_grad_norm"]).item()
                lrs_used.append(optimizer.param_groups[0]["lr"])
                optimizer.step()
                if not plateau:
                    scheduler.step()
                model.zero_grad()
                global_step += 1
                epoch_value = epoch + (step + 1) / steps_in_epoch
                rec["step_losses"].append(step_loss)
                step_loss = 0.0
                # DefaultFlowCallback.on_step_end.
                if args["logging_strategy"] == "steps" and logging_steps > 0 and global_step % logging_steps == 0:
                    control["log"] = True
                if (args["eval_strategy"] == "steps" and eval_steps > 0 and global_step % eval_steps == 0
                        and args["eval_delay"] <= global_step):
                    control["evaluate"] = True
                if global_step >= max_steps:
                    control["stop"] = True
                maybe_log_save_evaluate()
            if control["stop"]:
                break
        # DefaultFlowCallback.on_epoch_end, then _maybe_log_save_evaluate.
        if args["logging_strategy"] == "epoch":
            control["log"] = True
        if args["eval_strategy"] == "epoch" and args["eval_delay"] <= epoch_value:
            control["evaluate"] = True
        maybe_log_save_evaluate()
        if control["stop"]:
            break

    total_loss_scalar += tr_loss.item()
    rec["global_step"] = global_step
    rec["train_loss"] = total_loss_scalar / max(global_step, 0.001)
    rec["epoch"] = epoch_value
    params = {name: p.detach().clone() for name, p in model.named_parameters()}
    # Embedding rows no example looks up: their gradient is zero, so AdamW's moments stay
    # zero and only the decoupled weight decay moves them.
    decay = 1.0
    for lr in lrs_used:
        decay *= 1 - lr * args["weight_decay"]
    first_unused = int(train_data["input_ids"].max()) + 1
    unused = weights["embedding.weight"][first_unused:]
    rec["unused_rows_expected_factor"] = decay
    if unused.shape[0] == 0 or not torch.allclose(params["embedding.weight"][first_unused:], unused * decay,
                                                  rtol=1e-6, atol=0):
        raise AssertionError("unused embedding rows did not follow weight decay alone")
    return rec, params


def check_scenario_design(name, args, rec):
    """Guards that each scenario exercises what it is named after (not parity checks)."""
    if args["weight_decay"] > 0 and not rec["unused_rows_expected_factor"] < 0.999:
        raise AssertionError(f"{name}: weight decay barely moves the unused embedding rows")
    if args["max_grad_norm"] < 0.1 and not all(l["grad_norm"] > args["max_grad_norm"] for l in rec["logs"]):
        raise AssertionError(f"{name}: clipping is not active at every step")
    if args["lr_scheduler_type"] == "reduce_lr_on_plateau":
        lrs = [l["learning_rate"] for l in rec["logs"]]
        if len(set(lrs)) < 3:
            raise AssertionError(f"{name}: the plateau scheduler reduced the lr fewer than 2 times: {lrs}")
    if args["logging_strategy"] == "steps" and len(rec["logs"]) != rec["global_step"] // math.ceil(
            args["logging_steps"] if args["logging_steps"] >= 1 else rec["max_steps"] * args["logging_steps"]):
        raise AssertionError(f"{name}: expected a log every logging_steps steps")


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    scenarios_path, data_dir, out_path, params_path = sys.argv[1:]
    torch.set_num_threads(1)
    with open(scenarios_path) as f:
        spec = json.load(f)
    weights = torch.load(f"{data_dir}/weights.pt")
    train_data = torch.load(f"{data_dir}/train.pt")
    eval_data = torch.load(f"{data_dir}/eval.pt")
    out = {}
    all_params = {}
    for scenario in spec["scenarios"]:
        args = resolve_args(spec["base"], scenario["args"])
        dropout = scenario.get("model", {}).get("dropout", 0.0)
        checkpoint_dir = os.path.join(data_dir, "hf_checkpoints", scenario["name"])
        rec, params = train(args, weights, train_data, eval_data, dropout,
                            scenario.get("hf_checkpoint_steps", []), checkpoint_dir)
        all_params[f"{scenario['name']}/cpu_rng_state"] = torch.get_rng_state()
        check_scenario_design(scenario["name"], args, rec)
        out[scenario["name"]] = rec
        for param, value in params.items():
            all_params[f"{scenario['name']}/{param}"] = value
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)
    # A plain dict of tensors: C++ reads it with torch::pickle_load.
    torch.save(all_params, params_path)
    print(f"trainer_reference: {len(out)} scenarios written to {out_path} and {params_path}")


if __name__ == "__main__":
    main()
