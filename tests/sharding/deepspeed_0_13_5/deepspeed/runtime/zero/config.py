"""Stands in for DeepSpeed 0.13.5's `ZeroStageEnum` (deepspeed/runtime/zero/config.py), which
DeepSpeed pickles by member name (getattr(ZeroStageEnum, "gradients")); an int, so
zero_to_fp32.py's `zero_stage <= 2` compares as with DeepSpeed."""
from enum import Enum


class ZeroStageEnum(int, Enum):
    disabled = 0
    optimizer_states = 1
    gradients = 2
    weights = 3
    max_stage = 3
