"""Stands in for DeepSpeed 0.13.5's loss scalers (deepspeed/runtime/fp16/loss_scaler.py),
pickled as the class plus its attribute dict; zero_to_fp32.py never looks at them."""


class LossScaler:
    pass


class DynamicLossScaler:
    pass
