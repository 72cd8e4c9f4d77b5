"""Writes testdata/sampler_golden.txt: sampler orders as Python torch 1.13 computes them, for
//tests/data:sampler_golden_test. Checked in; sampler_golden_fresh_test regenerates it and fails
when the committed file differs. Rerun after changing a case:

    /usr/bin/python3 tests/data/make_sampler_golden.py [--out PATH]

Record lines are `<kind> key=value ... : <numbers>`:
  random   n, seed, epoch: torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))
           (accelerate 0.27's SeedableRandomSampler).
  lengths  name: a list of example lengths used below.
  grouped  lengths, batch, mult, seed, epoch: HF's get_length_grouped_indices (transcribed below)
           with generator=torch.Generator().manual_seed(seed + epoch).
  shared   lengths, batch, mult, manual_seed, epoch: HF 4.38-4.41's Trainer path: torch.manual_seed,
           then for each epoch a fresh torch DataLoader iterator over a LengthGroupedSampler
           without a generator (so both the DataLoader's base-seed draw and the sampler's randperm
           use the global generator); the concatenated batches of epoch `epoch`.
"""

import argparse
import os
import random

import torch
from torch.utils.data import DataLoader, Sampler


def length_grouped_order(lengths, batch_size, mega_batch_mult=None, generator=None):
    """transformers.trainer_pt_utils.get_length_grouped_indices (4.38-4.41), restated."""
    n = len(lengths)
    if mega_batch_mult is None:
        # About four megabatches of at most 50 batches; never zero.
        mega_batch_mult = max(min(n // (batch_size * 4), 50), 1)
    perm = torch.randperm(n, generator=generator).tolist()
    size = mega_batch_mult * batch_size
    groups = [sorted(perm[s:s + size], key=lambda i: lengths[i], reverse=True)
              for s in range(0, n, size)]
    # The group whose head is longest gives its head to the first group, so the longest example
    # comes first.
    top = int(torch.argmax(torch.tensor([lengths[g[0]] for g in groups])).item())
    groups[0][0], groups[top][0] = groups[top][0], groups[0][0]
    return [i for g in groups for i in g]


class GlobalLengthGroupedSampler(Sampler):
    """HF's LengthGroupedSampler as the Trainer builds it: no generator."""

    def __init__(self, lengths, batch_size, mega_batch_mult):
        self.lengths = lengths
        self.batch_size = batch_size
        self.mega_batch_mult = mega_batch_mult

    def __len__(self):
        return len(self.lengths)

    def __iter__(self):
        return iter(length_grouped_order(self.lengths, self.batch_size, self.mega_batch_mult))


def fmt(kind, fields, numbers):
    keys = " ".join("%s=%s" % (k, v) for k, v in fields)
    return "%s %s : %s" % (kind, keys, " ".join(str(x) for x in numbers))


def mult_str(mult):
    return "auto" if mult is None else str(mult)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(here, "testdata", "sampler_golden.txt"))
    args = parser.parse_args()

    lines = []
    random_cases = [(0, 42, 0), (1, 42, 0), (1, 42, 7), (2, 42, 0), (10, 42, 0), (10, 42, 1),
                    (10, 42, 2), (10, 0, 0), (7, 1234, 3), (1000, 42, 0), (1000, 42, 1),
                    (1000, 7, 5), (5000, 42, 0), (33, 2**32 + 5, 0), (33, 2**40 + 1, 2)]
    for n, seed, epoch in random_cases:
        g = torch.Generator().manual_seed(seed + epoch)
        perm = torch.randperm(n, generator=g).tolist()
        lines.append(fmt("random", [("n", n), ("seed", seed), ("epoch", epoch)], perm))

    rng = random.Random(20240601)
    length_sets = {
        "one": [5],
        "ties": [rng.randint(1, 4) for _ in range(23)],
        "mixed": [rng.randint(1, 128) for _ in range(103)],
        "big": [rng.randint(1, 512) for _ in range(1000)],
    }
    for name, lengths in length_sets.items():
        lines.append(fmt("lengths", [("name", name)], lengths))

    for name, lengths in length_sets.items():
        for batch in (1, 4, 8):
            for mult in (None, 2):
                for seed, epoch in ((42, 0), (42, 1), (3, 0)):
                    g = torch.Generator().manual_seed(seed + epoch)
                    order = length_grouped_order(lengths, batch, mult, g)
                    lines.append(fmt("grouped", [("lengths", name), ("batch", batch),
                                                 ("mult", mult_str(mult)), ("seed", seed),
                                                 ("epoch", epoch)], order))

    for name in ("ties", "mixed", "big"):
        for manual_seed, batch, mult in ((42, 4, None), (7, 8, 2)):
            lengths = length_sets[name]
            torch.manual_seed(manual_seed)
            loader = DataLoader(list(range(len(lengths))), batch_size=batch,
                                sampler=GlobalLengthGroupedSampler(lengths, batch, mult))
            for epoch in range(3):
                order = [i for b in loader for i in b.tolist()]
                lines.append(fmt("shared", [("lengths", name), ("batch", batch),
                                            ("mult", mult_str(mult)),
                                            ("manual_seed", manual_seed), ("epoch", epoch)],
                                 order))

    header = ("# Sampler orders from Python torch %s; generated by "
              "tests/data/make_sampler_golden.py (do not edit).\n" % torch.__version__)
    with open(args.out, "w") as f:
        f.write(header + "\n".join(lines) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
