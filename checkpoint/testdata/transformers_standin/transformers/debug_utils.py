"""Stand-in (see __init__.py): transformers.debug_utils.DebugOption."""
from .trainer_utils import ExplicitEnum


class DebugOption(ExplicitEnum):
    UNDERFLOW_OVERFLOW = "underflow_overflow"
    TPU_METRICS_DEBUG = "tpu_metrics_debug"
