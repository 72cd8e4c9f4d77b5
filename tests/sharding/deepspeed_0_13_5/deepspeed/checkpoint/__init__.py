"""Stands in for DeepSpeed 0.13.5's `deepspeed.checkpoint` package: only `constants` below."""
