#!/usr/bin/env python3
"""side_by_side.py — loom's run_glue against HF transformers' Trainer, same model, data, flags.

Subcommands (gpu/side_by_side.sh runs them in this order on the lent GPU machine):
  prepare DIR [--tiny]   DIR/model: a randomly initialised BertForSequenceClassification of
                         bert-base-uncased's shape (12 layers, hidden 768, 12 heads, vocabulary
                         30522; --tiny: 2 layers, hidden 64, 1519 tokens), saved as safetensors,
                         with a hand-written BERT WordPiece vocabulary ([PAD]=0, [unused0..98],
                         [UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103, [unused99..993], then
                         lower-case words) and tokenizer_config.json / special_tokens_map.json
                         as transformers 4.x's BertTokenizer saves them (no tokenizer.json: HF's
                         fast tokenizer and loom's text::BertTokenizer both build from vocab.txt).
                         DIR/data/{train,dev}.tsv: GLUE SST-2 layout ("sentence\tlabel"), seeded
                         synthetic sentences of vocabulary words, longer than 128 tokens.
  hf DIR OUT             fine-tunes DIR/model with transformers' Trainer (a small driver: the
                         tokenizer's padding="max_length" encoding, as run_glue.py's default
                         pad_to_max_length) and writes OUT/side_by_side_hf.json.
  loom DIR OUT RUNNER    runs loom's run_glue with the same hyper-parameters (RUNNER: a bundle
                         folder, run as RUNNER/run.sh run_glue, or a run_glue binary) and writes
                         OUT/side_by_side_loom.json.
  report OUT             one table (OUT/side_by_side.txt, .json) and the line
                         "PASS side_by_side: ..." or "FAIL side_by_side: ...".

Timing: the window is steps warmup+1 .. steps (default 21..220). HF: a TrainerCallback calls
torch.cuda.synchronize() and time.perf_counter() in on_step_end of steps 20 and 220. loom (no
Python inside): the arrival times, read line by line from run_glue's stdout, of the log records
of steps 20 and 220 (PrinterCallback, --disable_tqdm True, flushed per line); each comes after
the Trainer's tr_loss.item(), a device sync, as HF's _maybe_log_save_evaluate also does. The HF
run records the same log-to-log window too, so both methods can be compared on HF.
Peak GPU memory: HF's TrainerMemoryTracker (transformers 4.41 and 5.x trainer_utils.py) and
loom's trainer/memory_tracker.cc both report init_/train_mem_gpu_alloc_delta and
train_mem_gpu_peaked_delta of torch's caching allocator (allocated bytes, not reserved), the
peak being reset when train starts; the peak allocated during train is then
  init_alloc_delta + train_alloc_delta + train_peaked_delta
provided nothing is on the GPU before the Trainer is built (true for both drivers) and nothing
is allocated between its construction and train(). The HF run also reads
torch.cuda.max_memory_allocated() after train() (the peak since that reset) to check this.
MFU = model FLOPs per second / 989.4e12 (H200 SXM dense BF16 datasheet peak); model FLOPs per
token = 6*N + 12*L*S*H (PaLM, appendix B: N = all trainable parameters, L layers, S sequence
length, H hidden size), times batch*S tokens per step.

Works with transformers 4.41 (torch 2.x) and 5.17 (torch 2.11): version differences are guarded
where they are used (from_pretrained's dtype/torch_dtype, save_pretrained's
safe_serialization, which 5.x no longer takes).
"""
import argparse
import ast
import inspect
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time

H200_BF16_PEAK_FLOPS = 989.4e12
LABEL_CUE_WINDOW = 30  # the label's cue words sit in each sentence's first 30 words

FULL = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
            n_words=30522 - 999, train_rows=7168, dev_rows=256, words_per_sentence=140)
TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
            n_words=520, train_rows=64, dev_rows=16, words_per_sentence=40)


def log(msg):
    print(f"side_by_side: {msg}", flush=True)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


# ---------------------------------------------------------------- prepare

def special_tokens():
    """bert-base-uncased's first 999 entries: [PAD], [unused0..98], [UNK], [CLS], [SEP], [MASK],
    [unused99..993]."""
    toks = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    return toks + [f"[unused{i}]" for i in range(99, 994)]


def make_words(n, seed):
    """n distinct lower-case words of consonant-vowel syllables (2-syllable ones first), each one
    WordPiece token."""
    syl = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"]
    words = [a + b for a in syl for b in syl]
    rng = random.Random(seed)
    rng.shuffle(words)
    if n > len(words):
        for i in rng.sample(range(len(syl) ** 3), n - len(words)):
            words.append(syl[i // len(syl) ** 2] + syl[i // len(syl) % len(syl)] + syl[i % len(syl)])
    return words[:n]


def make_rows(words, n_rows, n_words, rng):
    """label 1 iff the sentence's first LABEL_CUE_WINDOW words hold more positive cue words
    (words[0:10]) than negative ones (words[10:20]); 3 cues of the label's side, 0-1 of the other."""
    pos, neg, filler = words[:10], words[10:20], words[20:]
    window = min(LABEL_CUE_WINDOW, n_words)
    rows = []
    for _ in range(n_rows):
        label = rng.randrange(2)
        sent = [rng.choice(filler) for _ in range(n_words)]
        own, other = (pos, neg) if label else (neg, pos)
        cues = [rng.choice(own) for _ in range(3)] + [rng.choice(other)] * rng.randrange(2)
        for pos_i, cue in zip(rng.sample(range(window), len(cues)), cues):
            sent[pos_i] = cue
        rows.append((" ".join(sent), label))
    return rows


def write_tsv(path, rows):
    with open(path, "w") as f:
        f.write("sentence\tlabel\n")
        for sent, label in rows:
            f.write(f"{sent}\t{label}\n")


def read_tsv(path):
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        assert header == ["sentence", "label"], f"{path}: header {header}"
        return [(s, int(l)) for s, l in (line.rstrip("\n").split("\t") for line in f)]


def count_params(cfg):
    """Trainable parameters of BertForSequenceClassification from its config.json."""
    d, i, n_l = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    emb = (cfg["vocab_size"] + cfg["max_position_embeddings"] + cfg.get("type_vocab_size", 2)) * d + 2 * d
    layer = 4 * (d * d + d) + 2 * d + (d * i + i) + (i * d + d) + 2 * d
    labels = len(cfg.get("id2label") or {}) or cfg.get("num_labels", 2)
    return emb + n_l * layer + (d * d + d) + (d * labels + labels)


def cmd_prepare(a):
    import torch
    import transformers
    from transformers import BertConfig, BertForSequenceClassification
    spec = TINY if a.tiny else FULL
    model_dir, data_dir = os.path.join(a.dir, "model"), os.path.join(a.dir, "data")
    os.makedirs(model_dir, exist_ok=True)
    os.makedirs(data_dir, exist_ok=True)
    t0 = time.time()

    words = make_words(spec["n_words"], a.seed)
    vocab = special_tokens() + words
    with open(os.path.join(model_dir, "vocab.txt"), "w") as f:
        f.write("".join(t + "\n" for t in vocab))
    sp = dict(unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]", cls_token="[CLS]",
              mask_token="[MASK]")
    write_json(os.path.join(model_dir, "special_tokens_map.json"), sp)
    write_json(os.path.join(model_dir, "tokenizer_config.json"), dict(
        sp, do_lower_case=True, do_basic_tokenize=True, tokenize_chinese_chars=True,
        strip_accents=None, never_split=None, model_max_length=512,
        clean_up_tokenization_spaces=True, tokenizer_class="BertTokenizer"))

    arch = dict(vocab_size=len(vocab), hidden_size=spec["hidden_size"],
                num_hidden_layers=spec["num_hidden_layers"],
                num_attention_heads=spec["num_attention_heads"],
                intermediate_size=spec["intermediate_size"], hidden_act="gelu",
                hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02,
                layer_norm_eps=1e-12, pad_token_id=0)
    torch.manual_seed(a.seed)
    model = BertForSequenceClassification(BertConfig(num_labels=2, **arch))
    save_kw = {}
    if "safe_serialization" in inspect.signature(model.save_pretrained).parameters:  # 4.x
        save_kw["safe_serialization"] = True
    model.save_pretrained(model_dir, **save_kw)
    weights = os.path.join(model_dir, "model.safetensors")
    if not os.path.isfile(weights):
        sys.exit(f"prepare: save_pretrained wrote no single {weights}: {os.listdir(model_dir)}")
    # config.json: what this transformers wrote, plus the keys every version (and loom's
    # BertConfig reader) reads the same way; _attn_implementation asks loom for sdpa.
    cfg_path = os.path.join(model_dir, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg.update(arch, model_type="bert", architectures=["BertForSequenceClassification"],
               position_embedding_type="absolute", _attn_implementation="sdpa")
    write_json(cfg_path, cfg)
    with open(weights, "rb") as f:  # safetensors: u64 header length, JSON header
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    names = sorted(k for k in header if k != "__metadata__")
    n_saved = sum(math.prod(header[k]["shape"]) for k in names)

    rng = random.Random(a.seed)
    n_words = a.words or spec["words_per_sentence"]
    train = make_rows(words, a.train_rows or spec["train_rows"], n_words, rng)
    dev = make_rows(words, a.dev_rows or spec["dev_rows"], n_words, rng)
    write_tsv(os.path.join(data_dir, "train.tsv"), train)
    write_tsv(os.path.join(data_dir, "dev.tsv"), dev)

    # The HF tokenizer must give exactly [CLS] + one id per word + [SEP].
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    ids = tok(train[0][0], max_length=16, truncation=True)["input_ids"]
    want = [101] + [vocab.index(w) for w in train[0][0].split()[:14]] + [102]
    if ids != want:
        sys.exit(f"prepare: {type(tok).__name__} encodes the first sentence as {ids}, not {want}")
    info = dict(tiny=a.tiny, seed=a.seed, vocab_size=len(vocab), config=cfg,
                params_analytic=count_params(cfg), params_saved=n_saved, tensors=len(names),
                train_rows=len(train), dev_rows=len(dev), words_per_sentence=n_words,
                tokenizer_class=type(tok).__name__, torch=torch.__version__,
                transformers=transformers.__version__, seconds=round(time.time() - t0, 1))
    write_json(os.path.join(a.dir, "prepare.json"), info)
    log(f"prepared {a.dir}: {cfg['num_hidden_layers']} layers, hidden {cfg['hidden_size']}, "
        f"vocab {len(vocab)}, {n_saved} parameters in {len(names)} tensors "
        f"(analytic {info['params_analytic']}), {len(train)} train / {len(dev)} dev rows of "
        f"{n_words} words, {info['seconds']} s")


# ---------------------------------------------------------------- shared run settings

def run_settings(a):
    if a.steps <= a.warmup_steps or a.steps % a.warmup_steps:
        sys.exit(f"--steps ({a.steps}) must be a multiple of --warmup-steps ({a.warmup_steps}) "
                 "and larger: the loom window is read off the log records every --warmup-steps")
    precision = a.precision or ("bf16" if a.device == "cuda" else "fp32")
    return dict(steps=a.steps, warmup_steps=a.warmup_steps, logging_steps=a.warmup_steps,
                batch=a.batch, seq=a.seq, lr=a.lr, seed=a.seed, device=a.device,
                precision=precision, optim="adamw_torch_fused")


def model_facts(dir_):
    with open(os.path.join(dir_, "model", "config.json")) as f:
        cfg = json.load(f)
    return dict(layers=cfg["num_hidden_layers"], hidden=cfg["hidden_size"],
                vocab=cfg["vocab_size"], params_analytic=count_params(cfg))


def window_figures(seconds, s):
    n = s["steps"] - s["warmup_steps"]
    if not seconds or seconds <= 0:
        return dict(window_steps=n, window_s=None, samples_per_s=None, ms_per_step=None)
    return dict(window_steps=n, window_s=seconds, samples_per_s=n * s["batch"] / seconds,
                ms_per_step=1000 * seconds / n)


def peak_from_metrics(m):
    keys = ("init_mem_gpu_alloc_delta", "train_mem_gpu_alloc_delta", "train_mem_gpu_peaked_delta")
    if not all(isinstance(m.get(k), (int, float)) for k in keys):
        return None
    return int(sum(m[k] for k in keys))


# ---------------------------------------------------------------- hf

def cmd_hf(a):
    s = run_settings(a)
    name = "hf_skipmem" if a.skip_memory_metrics else "hf"
    out_json = os.path.join(a.out, f"side_by_side_{name}.json")
    os.makedirs(a.out, exist_ok=True)
    result = dict(framework=name, status="started", settings=s, model=model_facts(a.dir),
                  skip_memory_metrics=a.skip_memory_metrics)
    write_json(out_json, result)
    t_start = time.time()
    import torch
    import transformers
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer, Trainer,
                              TrainerCallback, TrainingArguments)
    cuda = s["device"] == "cuda"
    if cuda and not torch.cuda.is_available():
        sys.exit("hf: --device cuda but torch sees no GPU")
    model_dir = os.path.join(a.dir, "model")
    tok = AutoTokenizer.from_pretrained(model_dir)
    rows = read_tsv(os.path.join(a.dir, "data", "train.tsv"))
    enc = tok([r[0] for r in rows], padding="max_length", max_length=s["seq"], truncation=True,
              return_tensors="pt")
    labels = torch.tensor([r[1] for r in rows])

    class Encoded(torch.utils.data.Dataset):
        def __len__(self):
            return len(rows)

        def __getitem__(self, i):
            item = {k: v[i] for k, v in enc.items()}
            item["labels"] = labels[i]
            return item

    major = int(transformers.__version__.split(".")[0])
    dtype_kw = {"dtype" if major >= 5 else "torch_dtype": torch.float32}
    model = AutoModelForSequenceClassification.from_pretrained(
        model_dir, attn_implementation="sdpa", **dtype_kw)
    attn = getattr(model.config, "_attn_implementation", None)
    if attn != "sdpa":
        sys.exit(f"hf: the model runs attention {attn!r}, not sdpa")
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    targs = TrainingArguments(
        output_dir=os.path.join(a.dir, "runs", "hf"), per_device_train_batch_size=s["batch"],
        max_steps=s["steps"], learning_rate=s["lr"], logging_steps=s["logging_steps"],
        save_strategy="no", report_to="none", seed=s["seed"], optim=s["optim"],
        bf16=s["precision"] == "bf16", skip_memory_metrics=a.skip_memory_metrics,
        disable_tqdm=True,
        use_cpu=not cuda)
    if not a.hf_busy_monitor:
        # TrainerMemoryTracker.peak_monitor_func samples the CPU RSS in a loop that never sleeps
        # ("can't sleep or will not catch the peak right"), taking the GIL from the training
        # loop; loom's tracker samples every 1 ms. Same 1 ms here: the *_mem_gpu_* metrics come
        # from torch's allocator statistics and do not depend on this thread.
        from transformers import trainer_utils

        def peak_monitor_func(self):
            self.cpu_mem_used_peak = -1
            while True:
                self.cpu_mem_used_peak = max(self.cpu_mem_used(), self.cpu_mem_used_peak)
                if not self.peak_monitoring:
                    break
                time.sleep(0.001)
        trainer_utils.TrainerMemoryTracker.peak_monitor_func = peak_monitor_func
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    marks, log_marks, losses = {}, {}, []

    class Window(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step in (s["warmup_steps"], s["steps"]):
                sync()
                marks[state.global_step] = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                log_marks[state.global_step] = time.perf_counter()
                losses.append([state.global_step, logs["loss"]])

    trainer = Trainer(model=model, args=targs, train_dataset=Encoded(), callbacks=[Window()])
    train_out = trainer.train()
    peak_direct = torch.cuda.max_memory_allocated() if cuda else None
    metrics = {k: v for k, v in train_out.metrics.items()}
    w, st = s["warmup_steps"], s["steps"]
    sync_s = marks[st] - marks[w] if w in marks and st in marks else None
    log_s = log_marks[st] - log_marks[w] if w in log_marks and st in log_marks else None
    loss = metrics.get("train_loss")
    result.update(
        status="ok" if loss is not None and math.isfinite(loss) else "bad_loss",
        versions=dict(torch=torch.__version__, transformers=transformers.__version__,
                      gpu=torch.cuda.get_device_name(0) if cuda else None),
        attn_implementation=attn, hf_busy_monitor=a.hf_busy_monitor, params_counted=n_params, **window_figures(sync_s, s),
        window_log_to_log=window_figures(log_s, s), train_loss=loss,
        logged_losses=losses, metrics=metrics, peak_gpu_bytes_from_metrics=peak_from_metrics(metrics),
        peak_gpu_bytes_direct=peak_direct,
        first_input_ids=enc["input_ids"][0].tolist(), wall_s=round(time.time() - t_start, 1))
    write_json(out_json, result)
    log(f"{name}: {result['status']}, train_loss {loss}, {result['samples_per_s']} samples/s over "
        f"steps {w + 1}..{st}, peak GPU bytes {peak_direct} -> {out_json}")


# ---------------------------------------------------------------- loom

SAMPLE_RE = re.compile(r"Sample (\d+) of the training set: .*'input_ids': \[([\d, ]*)\]"
                       r".*'attention_mask': \[([\d, ]*)\]")


def parse_log_record(line):
    """run_glue's PrinterCallback line, a Python dict repr ({'loss': 0.69, ...})."""
    line = line.strip()
    if not (line.startswith("{") and line.endswith("}") and "'loss'" in line):
        return None
    try:
        return ast.literal_eval(re.sub(r"\b(nan|inf)\b", r"'\1'", line))
    except (ValueError, SyntaxError):
        return None


def cmd_loom(a):
    s = run_settings(a)
    os.makedirs(a.out, exist_ok=True)
    out_json = os.path.join(a.out, "side_by_side_loom.json")
    run_dir = os.path.join(a.dir, "runs", "loom")
    shutil.rmtree(run_dir, ignore_errors=True)  # no stale *_results.json from an earlier run
    if os.path.isdir(a.runner):
        runner = [os.path.join(a.runner, "run.sh"), "run_glue"]
    else:
        runner = [a.runner]
    cmd = runner + [
        "--model_name_or_path", os.path.join(a.dir, "model"), "--task_name", "sst2",
        "--data_dir", os.path.join(a.dir, "data"), "--do_train",
        "--max_seq_length", str(s["seq"]), "--per_device_train_batch_size", str(s["batch"]),
        "--max_steps", str(s["steps"]), "--learning_rate", str(s["lr"]),
        "--optim", s["optim"], "--logging_steps", str(s["logging_steps"]),
        "--save_strategy", "no", "--seed", str(s["seed"]), "--skip_memory_metrics", "False",
        "--report_to", "none", "--disable_tqdm", "True", "--overwrite_output_dir",
        "--output_dir", run_dir]
    if s["precision"] == "bf16":
        cmd.append("--bf16")
    if s["device"] == "cpu":
        cmd += ["--use_cpu", "True"]
    result = dict(framework="loom", status="started", settings=s, model=model_facts(a.dir),
                  command=cmd)
    write_json(out_json, result)
    stdout_path = os.path.join(a.out, "loom_stdout.log")
    stderr_path = os.path.join(a.out, "loom_stderr.log")
    records, marks = [], {}
    t_start = time.time()
    with open(stdout_path, "w") as out_f, open(stderr_path, "w") as err_f:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err_f, text=True, bufsize=1)
        watchdog = threading.Timer(a.timeout, proc.kill)
        watchdog.start()
        for line in proc.stdout:  # each line as soon as run_glue flushes it
            now = time.perf_counter()
            out_f.write(line)
            rec = parse_log_record(line)
            if rec is not None and "train_runtime" not in rec:
                step = (len(records) + 1) * s["logging_steps"]
                records.append([step, rec.get("loss")])
                marks[step] = now
        rc = proc.wait()
        timed_out = not watchdog.is_alive() and rc != 0
        watchdog.cancel()
    wall = time.time() - t_start

    metrics = {}
    for name in ("train_results.json", "all_results.json"):
        path = os.path.join(run_dir, name)
        if os.path.isfile(path):
            with open(path) as f:
                metrics.update(json.load(f))
    with open(stderr_path) as f:
        stderr = f.read()
    # Weights: loom warns about checkpoint weights it did not use or had to initialise.
    weights_ok = ("freshly initialised" not in stderr and
                  "BertForSequenceClassification does not use" not in stderr)
    # Inputs: loom's "Sample N of the training set" lines against HF's tokenizer on row N.
    samples = [(int(m[1]), [int(x) for x in m[2].split(",")], [int(x) for x in m[3].split(",")])
               for m in SAMPLE_RE.finditer(stderr)]
    inputs = dict(checked=0, mismatches=[])
    if samples:
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(os.path.join(a.dir, "model"))
        rows = read_tsv(os.path.join(a.dir, "data", "train.tsv"))
        for index, ids, mask in samples:
            enc = tok(rows[index][0], padding="max_length", max_length=s["seq"], truncation=True)
            inputs["checked"] += 1
            if enc["input_ids"] != ids or enc["attention_mask"] != mask:
                inputs["mismatches"].append(dict(index=index, loom=ids, hf=enc["input_ids"]))
    w, st = s["warmup_steps"], s["steps"]
    win = marks[st] - marks[w] if w in marks and st in marks else None
    loss = metrics.get("train_loss")
    ok = rc == 0 and not timed_out and isinstance(loss, (int, float)) and math.isfinite(loss)
    result.update(
        status="ok" if ok else ("timeout" if timed_out else f"failed rc={rc}"),
        returncode=rc, weights_fully_loaded=weights_ok, inputs=inputs,
        inputs_match=bool(samples) and not inputs["mismatches"], **window_figures(win, s),
        train_loss=loss, logged_losses=records, metrics=metrics,
        peak_gpu_bytes_from_metrics=peak_from_metrics(metrics), wall_s=round(wall, 1),
        stderr_tail=stderr[-3000:] if not ok else None)
    write_json(out_json, result)
    log(f"loom: {result['status']}, train_loss {loss}, {result['samples_per_s']} samples/s over "
        f"steps {w + 1}..{st}, inputs checked {inputs['checked']} "
        f"(match {result['inputs_match']}), weights loaded {weights_ok} -> {out_json}")


# ---------------------------------------------------------------- report

def fmt(v, spec="{:.1f}"):
    return "n/a" if v is None else spec.format(v)


def ratio(x, y):
    return x / y if isinstance(x, (int, float)) and isinstance(y, (int, float)) and y else None


def cmd_report(a):
    runs = {}
    for name in ("loom", "hf"):
        path = os.path.join(a.out, f"side_by_side_{name}.json")
        runs[name] = json.load(open(path)) if os.path.isfile(path) else {"status": "missing"}
    lo, hf = runs["loom"], runs["hf"]
    path = os.path.join(a.out, "side_by_side_hf_skipmem.json")  # optional control run
    hfc = json.load(open(path)) if os.path.isfile(path) else {}
    s = hf.get("settings") or lo.get("settings") or {}
    m = hf.get("model") or lo.get("model") or {}
    n_params = hf.get("params_counted") or m.get("params_analytic")
    flops_step = None
    if n_params and s:
        per_token = 6 * n_params + 12 * m["layers"] * s["seq"] * m["hidden"]
        flops_step = s["batch"] * s["seq"] * per_token

    def mfu(r):
        ms = r.get("ms_per_step")
        return flops_step / (ms / 1000) / H200_BF16_PEAK_FLOPS if flops_step and ms else None

    def mib(b):
        return b / 2 ** 20 if isinstance(b, (int, float)) else None

    def last_loss(r):
        return r["logged_losses"][-1][1] if r.get("logged_losses") else None

    rows = [
        ("samples/s (window)", lo.get("samples_per_s"), hf.get("samples_per_s"), "{:.1f}"),
        ("ms/step (window)", lo.get("ms_per_step"), hf.get("ms_per_step"), "{:.2f}"),
        ("samples/s, HF skip_memory_metrics=True", lo.get("samples_per_s"),
         hfc.get("samples_per_s"), "{:.1f}"),
        ("ms/step (log-to-log)", lo.get("ms_per_step"),
         (hf.get("window_log_to_log") or {}).get("ms_per_step"), "{:.2f}"),
        ("peak GPU MiB (metrics)", mib(lo.get("peak_gpu_bytes_from_metrics")),
         mib(hf.get("peak_gpu_bytes_from_metrics")), "{:.0f}"),
        ("peak GPU MiB (max_memory_allocated)", None, mib(hf.get("peak_gpu_bytes_direct")),
         "{:.0f}"),
        ("MFU % (of H200 dense bf16 peak)", 100 * mfu(lo) if mfu(lo) else None,
         100 * mfu(hf) if mfu(hf) else None, "{:.3g}"),
        ("train_loss", lo.get("train_loss"), hf.get("train_loss"), "{:.4f}"),
        ("last logged loss", last_loss(lo), last_loss(hf), "{:.4f}"),
        ("train_samples_per_second (whole run)", (lo.get("metrics") or {}).get(
            "train_samples_per_second"), (hf.get("metrics") or {}).get("train_samples_per_second"),
         "{:.1f}"),
        ("process wall s", lo.get("wall_s"), hf.get("wall_s"), "{:.1f}"),
    ]
    w = 38
    lines = [f"side_by_side: BERT {m.get('layers')} layers, hidden {m.get('hidden')}, "
             f"{n_params} parameters; batch {s.get('batch')} x seq {s.get('seq')}, "
             f"{s.get('steps')} steps, window steps {s.get('warmup_steps', 0) + 1}..{s.get('steps')}, "
             f"{s.get('precision')}, {s.get('optim')}, device {s.get('device')}; "
             f"{fmt(flops_step and flops_step / 1e12, '{:.4g}')} TFLOP/step",
             f"{'':{w}} {'loom':>12} {'HF':>12} {'loom/HF':>9}"]
    for label, x, y, spec in rows:
        lines.append(f"{label:{w}} {fmt(x, spec):>12} {fmt(y, spec):>12} "
                     f"{fmt(ratio(x, y), '{:.3f}'):>9}")
    lines.append(f"{'status':{w}} {lo.get('status'):>12} {hf.get('status'):>12}")
    lines.append(f"loom inputs match HF's tokenizer: {lo.get('inputs_match')} "
                 f"({(lo.get('inputs') or {}).get('checked', 0)} samples); loom loaded every "
                 f"weight: {lo.get('weights_fully_loaded')}; versions: {hf.get('versions')}")

    problems = [f"{n} run {r.get('status')}" for n, r in runs.items() if r.get("status") != "ok"]
    if lo.get("status") == "ok" and not lo.get("inputs_match"):
        problems.append("loom's tokenized inputs differ from HF's (or were not logged)")
    if lo.get("status") == "ok" and not lo.get("weights_fully_loaded"):
        problems.append("loom did not load every weight of the model folder")
    sps = ratio(lo.get("samples_per_s"), hf.get("samples_per_s"))
    p_lo = lo.get("peak_gpu_bytes_from_metrics")
    p_hf = hf.get("peak_gpu_bytes_from_metrics")
    mem = ratio(p_lo, p_hf)
    if not problems:
        goal = ("goal n/a (no GPU memory figures)" if mem is None else
                "goal met" if sps and sps >= 1.1 and mem <= 1 else "goal missed")
        verdict = (
            f"PASS side_by_side: loom {fmt(lo.get('samples_per_s'))} samples/s vs HF "
            f"{fmt(hf.get('samples_per_s'))} (ratio {fmt(sps, '{:.3f}')}), step ms "
            f"{fmt(lo.get('ms_per_step'), '{:.2f}')} vs {fmt(hf.get('ms_per_step'), '{:.2f}')}, "
            f"peak GPU MiB {fmt(mib(p_lo), '{:.0f}')} vs {fmt(mib(p_hf), '{:.0f}')} (ratio "
            f"{fmt(mem, '{:.3f}')}), MFU loom {fmt(mfu(lo) and 100 * mfu(lo), '{:.3g}')}% HF "
            f"{fmt(mfu(hf) and 100 * mfu(hf), '{:.3g}')}%; {goal} (loom >= 1.1x HF samples/s with <= HF "
            f"peak memory)")
    else:
        verdict = f"FAIL side_by_side: {'; '.join(problems)} (logs in {a.out})"
    lines.append(verdict)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(a.out, "side_by_side.txt"), "w") as f:
        f.write(text)
    write_json(os.path.join(a.out, "side_by_side.json"), dict(
        verdict=verdict, passed=not problems, flops_per_step=flops_step, params=n_params,
        peak_flops=H200_BF16_PEAK_FLOPS, mfu=dict(loom=mfu(lo), hf=mfu(hf)),
        ratios=dict(samples_per_s=sps, peak_gpu=mem),
        table={label: dict(loom=x, hf=y) for label, x, y, _ in rows}, loom=lo, hf=hf,
        hf_skipmem=hfc or None))
    return 0 if not problems else 1


# ---------------------------------------------------------------- main

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("dir")
    pp.add_argument("--tiny", action="store_true")
    pp.add_argument("--seed", type=int, default=42)
    pp.add_argument("--train-rows", type=int)
    pp.add_argument("--dev-rows", type=int)
    pp.add_argument("--words", type=int, help="words per sentence")

    def run_opts(q):
        q.add_argument("--steps", type=int, default=220)
        q.add_argument("--warmup-steps", type=int, default=20,
                       help="steps left out of the timing window (not LR warm-up); also "
                            "logging_steps")
        q.add_argument("--batch", type=int, default=32)
        q.add_argument("--seq", type=int, default=128)
        q.add_argument("--lr", type=float, default=2e-5)
        q.add_argument("--seed", type=int, default=42)
        q.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
        q.add_argument("--precision", choices=["bf16", "fp32"],
                       help="default: bf16 on cuda, fp32 on cpu")

    ph = sub.add_parser("hf")
    ph.add_argument("dir")
    ph.add_argument("out")
    ph.add_argument("--hf-busy-monitor", action="store_true",
                    help="keep TrainerMemoryTracker's never-sleeping CPU peak monitor thread")
    ph.add_argument("--skip-memory-metrics", action="store_true",
                    help="HF's default: no memory tracker (a control run of the speed); writes "
                         "side_by_side_hf_skipmem.json")
    run_opts(ph)
    pl = sub.add_parser("loom")
    pl.add_argument("dir")
    pl.add_argument("out")
    pl.add_argument("runner", help="a bundle folder (RUNNER/run.sh run_glue) or run_glue itself")
    pl.add_argument("--timeout", type=float, default=600, help="seconds before run_glue is killed")
    run_opts(pl)
    pr = sub.add_parser("report")
    pr.add_argument("out")
    a = p.parse_args()
    return {"prepare": cmd_prepare, "hf": cmd_hf, "loom": cmd_loom, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main() or 0)
