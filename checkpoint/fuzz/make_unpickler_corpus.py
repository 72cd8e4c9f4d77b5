#!/usr/bin/python3
"""Writes checkpoint/fuzz/unpickler_corpus/*.pkl: the data.pkl pickle programs of torch.save
archives of what loom's unpickler reads (Debian's /usr/bin/python3, torch 1.13, numpy): HF
Trainer's rng_state.pth and accelerate's random_states_0.pkl (random / numpy / torch states),
an OrderedDict state dict, an optimizer state dict, torch.Size / device / set / bytes / big
ints, numpy arrays and dtypes; and the data.pkl of each further torch.save FILE given (the
training_args.bin files real transformers wrote, checkpoint/testdata/hf_*/), named
<its folder>.pkl. Seeds for python_unpickler_fuzzer.

    /usr/bin/python3 checkpoint/fuzz/make_unpickler_corpus.py OUT_DIR [FILE...]
"""
import collections
import io
import os
import random
import sys
import zipfile

import numpy as np
import torch


def archive_pkl(blob):
    archive = zipfile.ZipFile(io.BytesIO(blob))
    return archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))


def data_pkl(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return archive_pkl(buffer.getvalue())


def main(out, files):
    random.seed(42)
    np.random.seed(42)
    torch.manual_seed(42)
    objects = {
        "rng_state": {"python": random.getstate(), "numpy": np.random.get_state(),
                      "cpu": torch.get_rng_state()[:64]},
        "accelerate_random_states": {
            "step": 3, "random_state": random.getstate(), "numpy_random_seed": np.random.get_state(),
            "torch_manual_seed": torch.get_rng_state()[:32], "torch_cuda_manual_seed": []},
        "state_dict": collections.OrderedDict([
            ("w", torch.arange(6, dtype=torch.float32).reshape(2, 3)),
            ("b", torch.zeros(3, dtype=torch.bfloat16))]),
        "optimizer": {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.ones(4)}},
                      "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0],
                                        "amsgrad": False, "foreach": None}]},
        "misc": {"size": torch.Size([2, 3]), "dev": torch.device("cpu"), "set": {1, 2},
                 "bytes": b"\x00\xff", "big": 2**63 - 1, "neg": -2**40, "f": 1.5, "none": None,
                 "nested": [[1, (2, 3)], {"a": True}]},
        "numpy_scalar_dtype": {"dtype": np.dtype("float32"), "arr": np.arange(5, dtype=np.int64),
                               "f": np.arange(4, dtype=np.float32).reshape(2, 2)},
    }
    os.makedirs(out, exist_ok=True)
    for name, obj in objects.items():
        with open(os.path.join(out, name + ".pkl"), "wb") as f:
            f.write(data_pkl(obj))
    for path in files:
        with open(path, "rb") as f:
            blob = f.read()
        name = os.path.basename(os.path.dirname(os.path.abspath(path)))
        with open(os.path.join(out, name + ".pkl"), "wb") as f:
            f.write(archive_pkl(blob))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
