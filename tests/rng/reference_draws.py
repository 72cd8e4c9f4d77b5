"""The reference draw recipe shared with reference_draws.h/.cc (keep the two in step).

Each named draw runs one torch CPU sampler on the default generator. Files hold one line per
draw, "name v1 v2 ...", values written with repr() of Python floats (exact round trip).
Run with Debian's /usr/bin/python3 (python3-torch 1.13, the same version as libtorch-dev).
"""

import torch
import torch.nn.functional as F

RECIPE = [
    ("rand5", lambda: torch.rand(5)),
    ("randn5", lambda: torch.randn(5)),  # scalar Box-Muller path (caches a sample)
    ("randn20", lambda: torch.randn(20)),  # vectorised path (>= 16 elements)
    ("randint6", lambda: torch.randint(0, 1000, (6,))),
    ("randperm10", lambda: torch.randperm(10)),
    ("dropout16", lambda: F.dropout(torch.ones(16), 0.5, training=True)),
    ("bernoulli8", lambda: torch.bernoulli(torch.full((8,), 0.3))),
]


def values(tensor):
    return [float(v) for v in tensor.double().tolist()]


def draw(name):
    return values(dict(RECIPE)[name]())


def draw_all():
    return [(name, values(fn())) for name, fn in RECIPE]


def format_draws(draws):
    return "".join(name + "".join(" " + repr(v) for v in vals) + "\n" for name, vals in draws)


def parse_draws(text):
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, *vals = line.split()
        out.append((name, [float(v) for v in vals]))
    return out


def compare(expected, actual):
    """"" when equal, else a description of the first difference."""
    if len(expected) != len(actual):
        return "%d draws expected, got %d" % (len(expected), len(actual))
    for e, a in zip(expected, actual):
        if e != a:
            return "expected %sgot %s" % (format_draws([e]), format_draws([a]))
    return ""
