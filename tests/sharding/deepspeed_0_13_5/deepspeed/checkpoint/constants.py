"""Stands in for DeepSpeed 0.13.5's `deepspeed/checkpoint/constants.py`: the key names of the
ZeRO checkpoint files that zero_to_fp32.py imports (the file format's names, the same strings
DeepSpeed writes; see sharding/deepspeed_checkpoint/deepspeed_checkpoint_layout.md)."""

# In the *_optim_states.pt files.
OPTIMIZER_STATE_DICT = "optimizer_state_dict"
SINGLE_PARTITION_OF_FP32_GROUPS = "single_partition_of_fp32_groups"  # stages 1-2
FP32_FLAT_GROUPS = "fp32_flat_groups"  # stage 3
ZERO_STAGE = "zero_stage"
PARTITION_COUNT = "partition_count"

# In the *_model_states.pt files.
PARAM_SHAPES = "param_shapes"
BUFFER_NAMES = "buffer_names"
FROZEN_PARAM_SHAPES = "frozen_param_shapes"
FROZEN_PARAM_FRAGMENTS = "frozen_param_fragments"
DS_VERSION = "ds_version"
