"""Stands in for DeepSpeed 0.13.5's `deepspeed.runtime`: only the two classes its own checkpoint
files pickle (runtime.zero.config.ZeroStageEnum, runtime.fp16.loss_scaler.LossScaler), so that
the vendored zero_to_fp32.py can torch.load DeepSpeed's real checkpoints in
tests/testdata/deepspeed. loom's files name no deepspeed class (check_zero_checkpoint.py and
check_zero3_checkpoint.py load them with no deepspeed package at all)."""
