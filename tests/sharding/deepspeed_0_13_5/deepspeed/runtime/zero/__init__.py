"""See ../__init__.py: the stand-in for deepspeed.runtime.zero.config."""
