"""Stands in for DeepSpeed 0.13.5's `deepspeed.utils` as far as zero_to_fp32.py uses it: a
`logger` (DeepSpeed's is a `logging.Logger` named "DeepSpeed")."""
import logging

logger = logging.getLogger("DeepSpeed")
