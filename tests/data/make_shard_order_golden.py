"""Writes testdata/shard_order_golden.txt: the example indices each rank of a multi-process HF
Trainer reads, replayed with Python torch 1.13, for //tests/data:shard_order_golden_test.
Checked in; shard_order_golden_fresh_test regenerates it and fails when the committed file
differs. Rerun after changing a case:

    /usr/bin/python3 tests/data/make_shard_order_golden.py [--out PATH]

What is replayed (transformers 4.38 `Trainer.get_train_dataloader` builds
`DataLoader(train_dataset, batch_size, sampler=RandomSampler(train_dataset), drop_last)` and
passes it to accelerate 0.27 `Accelerator.prepare`, i.e. `data_loader.py` `prepare_data_loader`
with HF's AcceleratorConfig: use_seedable_sampler True, dispatch_batches off for a map-style
dataset, rng_types ["generator"]):

  * `prepare_data_loader` wraps the sampler in a `SeedableRandomSampler` (seed + epoch), but at
    num_processes > 1 it then assigns it with `dataloader.batch_sampler.sampler = sampler`,
    where `dataloader.batch_sampler` is the new `BatchSamplerShard`: an attribute nothing reads.
    The torch `BatchSampler` inside the shard keeps HF's `RandomSampler` without a generator.
    (accelerate 0.29 also sets `batch_sampler.batch_sampler.sampler`; 0.27 does not.) At one
    process there is no shard, the assignment reaches the `BatchSampler`, and the order is
    randperm(n, Generator().manual_seed(seed + epoch)).
  * rng_types ["generator"] loses "generator" (no synchronized_generator for a map-style
    dataset), so `DataLoaderShard.__iter__` synchronizes nothing: every rank draws from its own
    global torch generator, equal on all ranks because each ran `set_seed(seed)` and the same
    code since.
  * Each epoch torch 1.13's `_BaseDataLoaderIter.__init__` draws the base seed (one int64
    `random_()` from the global generator); then `RandomSampler.__iter__` draws one more int64
    as the seed of a fresh Generator and yields `randperm(n)` from it.
  * `BatchSamplerShard` (split_batches False: `_iter_with_no_split`; True: `_iter_with_split`)
    deals the global batches; restated below as `shard_batches`.

Record lines are `shard key=value ... : <indices>`, the concatenation of the rank's batches in
epoch `epoch`, for n, batch (the DataLoader's batch_size), world, rank, drop_last, even, split
and seed (`set_seed(seed)` in the rank's process, then epochs 0, 1, ... iterated in order).
"""

import argparse
import os

import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, Sampler


def shard_no_split(batches, batch_size, drop_last, world, rank, even):
    """accelerate 0.27 BatchSamplerShard._iter_with_no_split, restated over a list of batches."""
    out = []
    # Rank r takes batch r of every round of `world` batches, once the round's last batch is full.
    kept = None
    for i, b in enumerate(batches):
        if i % world == rank:
            kept = b
        if i % world == world - 1 and len(b) == batch_size:
            out.append(kept)
            kept = None
    if drop_last or not batches:
        return out
    if not even:
        if kept:
            out.append(kept)
        return out
    # Completion: the first `world` batches (repeated while too short) feed the missing slots.
    first = [i for b in batches[:world] for i in b]
    while len(first) < world * batch_size:
        first = first + first
    if kept is not None and len(kept) == batch_size:
        out.append(kept)
    pos = len(batches) - 1
    last = list(batches[-1])
    if len(last) == batch_size:
        last, pos = [], pos + 1
    cursor = 0
    while pos % world != 0 or last:
        need = batch_size - len(last)
        filled = last + first[cursor:cursor + need]
        if pos % world == rank:
            out.append(filled)
        cursor += need
        last = []
        pos += 1
    return out


def shard_split(batches, batch_size, drop_last, world, rank, even):
    """accelerate 0.27 BatchSamplerShard._iter_with_split, restated over a list of batches."""
    piece = batch_size // world
    mine = slice(piece * rank, piece * (rank + 1))
    out = [b[mine] for b in batches if len(b) == batch_size]
    if drop_last or not batches or len(batches[-1]) == batch_size:
        return out
    last = list(batches[-1])
    if not even:
        if len(last) > piece * rank:
            out.append(last[mine])
        return out
    first = list(batches[0])
    while len(first) < batch_size:
        first = first + first
    out.append((last + first)[mine])
    return out


class ShardReplay(Sampler):
    """The BatchSamplerShard of one rank over a torch BatchSampler (re-iterated each epoch)."""

    def __init__(self, batch_sampler, world, rank, split, even):
        self.batch_sampler = batch_sampler
        self.world, self.rank, self.split, self.even = world, rank, split, even

    def __iter__(self):
        # A generator, as accelerate's is: nothing runs (and the RandomSampler draws nothing)
        # until the DataLoader iterator, created after its base-seed draw, asks for a batch.
        batches = list(self.batch_sampler)
        bs, drop = self.batch_sampler.batch_size, self.batch_sampler.drop_last
        deal = shard_split if self.split else shard_no_split
        yield from deal(batches, bs, drop, self.world, self.rank, self.even)


def rank_epochs(n, batch, world, rank, drop_last, even, split, seed, epochs):
    """One rank's process: set_seed(seed), then `epochs` passes over the prepared loader."""
    torch.manual_seed(seed)
    data = list(range(n))
    if world == 1:
        # No shard: the seedable sampler replaces HF's RandomSampler (seed + epoch).
        orders = []
        for epoch in range(epochs):
            torch.empty((), dtype=torch.int64).random_()  # the DataLoader's base seed
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))
            batches = list(BatchSampler(perm.tolist(), batch, drop_last))
            orders.append([i for b in batches for i in b])
        return orders
    inner = BatchSampler(RandomSampler(data), batch, drop_last)
    loader = DataLoader(data, batch_sampler=ShardReplay(inner, world, rank, split, even),
                        collate_fn=lambda b: b)
    return [[i for b in loader for i in b] for _ in range(epochs)]


def fmt(fields, numbers):
    keys = " ".join("%s=%s" % (k, v) for k, v in fields)
    return "shard %s : %s" % (keys, " ".join(str(x) for x in numbers))


def cases():
    # (n, batch, world, seed): n not a multiple of world x batch except 512/64 and 48/12.
    sizes = [(50, 4, 2, 42), (50, 4, 4, 42), (37, 3, 4, 7), (48, 4, 3, 42), (10, 4, 4, 3),
             (5, 2, 4, 11), (512, 8, 2, 42), (512, 16, 2, 42), (103, 8, 4, 1234)]
    for n, batch, world, seed in sizes:
        for drop_last in (False, True):
            for even in (True, False):
                for split in (False, True):
                    if split and batch % world != 0:
                        continue
                    yield n, batch, world, drop_last, even, split, seed
    for n, batch, seed in ((50, 4, 42), (512, 8, 42)):
        yield n, batch, 1, False, True, False, seed


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(here, "testdata", "shard_order_golden.txt"))
    args = parser.parse_args()

    lines = []
    for n, batch, world, drop_last, even, split, seed in cases():
        for rank in range(world):
            orders = rank_epochs(n, batch, world, rank, drop_last, even, split, seed, epochs=2)
            for epoch, order in enumerate(orders):
                fields = [("n", n), ("batch", batch), ("world", world), ("rank", rank),
                          ("drop_last", int(drop_last)), ("even", int(even)),
                          ("split", int(split)), ("seed", seed), ("epoch", epoch)]
                lines.append(fmt(fields, order))

    header = ("# Per-rank train orders (transformers 4.38 + accelerate 0.27) from Python torch %s;"
              " generated by tests/data/make_shard_order_golden.py (do not edit).\n"
              % torch.__version__)
    with open(args.out, "w") as f:
        f.write(header + "\n".join(lines) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
