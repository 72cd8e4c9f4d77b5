"""Stands in for DeepSpeed 0.13.5's `fragment_address` (deepspeed/utils/tensor_fragment.py), a
class pickled into DeepSpeed's own ZeRO-1/2 optimizer files (param_slice_mappings). Only there
so that the vendored zero_to_fp32.py can torch.load DeepSpeed's real checkpoints in
tests/testdata/deepspeed; loom's files never name it."""
from dataclasses import dataclass


@dataclass
class fragment_address:  # noqa: N801 (DeepSpeed's name)
    numel: int
    start: int
