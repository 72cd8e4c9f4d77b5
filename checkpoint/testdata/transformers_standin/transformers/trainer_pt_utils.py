"""Stand-in (see __init__.py): transformers.trainer_pt_utils.AcceleratorConfig, a class only."""


class AcceleratorConfig:
    pass
