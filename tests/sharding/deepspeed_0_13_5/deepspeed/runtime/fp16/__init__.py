"""See ../__init__.py: the stand-in for deepspeed.runtime.fp16.loss_scaler."""
