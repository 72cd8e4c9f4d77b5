"""check_zero_checkpoint.py CHECKPOINT_DIR STAGE WORLD [bf16]: checks a loom ZeRO checkpoint folder
(HF's checkpoint-N/) with Debian's python3-torch alone — DeepSpeed is not installed, so the
files must hold plain Python types.

1. `latest` names the tag folder; torch.load reads mp_rank_00_model_states.pt and WORLD
   zero_pp_rank_R_mp_rank_00_optim_states.pt files with the keys DeepSpeed 0.13.5 writes and
   reads (sharding/deepspeed_checkpoint/deepspeed_checkpoint_layout.md), zero_stage == STAGE, partition_count == WORLD,
   dp_world_size.
2. Consolidates them as DeepSpeed 0.13.5's zero_to_fp32.py does (written here independently):
   per group, the ranks' fp32 partitions concatenated, each parameter cut out in param_shapes
   order, the consumed count equal to the concatenation's up to the 2*WORLD alignment; frozen
   parameters from frozen_param_fragments; shared parameters.
3. The result equals the checkpoint's model.safetensors bitwise (same names, shapes, values) and
   the model states' `module`; with bf16 (DeepSpeed's bf16_ optimizer files) the weights are
   bf16 and equal the consolidated fp32 masters rounded to bf16.
4. The optimizer states: exp_avg / exp_avg_sq are padded partitions (equal length on every
   rank), the fp32 partitions are cut on the last rank by group_paddings.
Exits 1 naming the first difference."""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_read import read_safetensors  # noqa: E402


def fail(msg):
    print("check_zero_checkpoint.py: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    folder, stage, world = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    bf16 = len(sys.argv) > 4 and sys.argv[4] == "bf16"
    prefix = "bf16_" if bf16 else ""
    if "deepspeed" in sys.modules or any(
            os.path.isdir(os.path.join(p, "deepspeed")) for p in sys.path if p):
        fail("DeepSpeed is importable here; the check needs it absent")
    # Where DeepSpeed copies its zero_to_fp32.py: loom's executable one-line pointer to the tool.
    pointer = os.path.join(folder, "zero_to_fp32.py")
    if not os.access(pointer, os.X_OK) or len(open(pointer).read().splitlines()) != 1:
        fail("zero_to_fp32.py is missing, not executable or not one line")
    if "bazel run //tools:zero_to_fp32" not in open(pointer).read():
        fail("zero_to_fp32.py does not point at //tools:zero_to_fp32")
    tag = open(os.path.join(folder, "latest")).read()
    if tag != tag.strip() or not tag.startswith("global_step"):
        fail(f"latest holds {tag!r}")
    tag_dir = os.path.join(folder, tag)
    model = torch.load(os.path.join(tag_dir, "mp_rank_00_model_states.pt"))
    for key in ["module", "buffer_names", "optimizer", "param_shapes", "frozen_param_shapes",
                "shared_params", "frozen_param_fragments", "lr_scheduler", "skipped_steps",
                "global_steps", "global_samples", "dp_world_size", "mp_world_size", "ds_config",
                "ds_version"]:
        if key not in model:
            fail(f"model states: no {key}")
    if model["dp_world_size"] != world or model["global_steps"] != int(tag[len("global_step"):]):
        fail(f"model states: dp_world_size {model['dp_world_size']}, global_steps "
             f"{model['global_steps']}")
    if (stage == 1) != (model["frozen_param_shapes"] is None):
        fail("frozen_param_shapes: None for ZeRO-1 only")
    osds = []
    for r in range(world):
        path = os.path.join(tag_dir, f"{prefix}zero_pp_rank_{r}_mp_rank_00_optim_states.pt")
        sd = torch.load(path)
        osd = sd["optimizer_state_dict"]
        for key in ["base_optimizer_state", "single_partition_of_fp32_groups", "zero_stage",
                    "group_paddings", "partition_count", "clip_grad", "ds_version"]:
            if key not in osd:
                fail(f"{path}: no {key}")
        if int(osd["zero_stage"]) != stage:
            fail(f"{path}: zero_stage {osd['zero_stage']}")
        if max(osd["partition_count"]) != world:
            fail(f"{path}: partition_count {osd['partition_count']}")
        osds.append(osd)
    if len([f for f in os.listdir(tag_dir) if f.endswith("_optim_states.pt")]) != world:
        fail("not one optimizer file per rank")

    # Consolidation (DeepSpeed 0.13.5 zero_to_fp32.py, ZeRO-2 path).
    state = {}
    buffers = set(model["buffer_names"])
    for name, t in model["module"].items():
        if name in buffers:
            state[name] = t.float()
    for name, t in (model["frozen_param_fragments"] or {}).items():
        state[name] = t
    align = 2 * world
    for g, shapes in enumerate(model["param_shapes"]):
        full = torch.cat([osd["single_partition_of_fp32_groups"][g] for osd in osds])
        offset = 0
        for name, shape in shapes.items():
            numel = math.prod(shape)
            state[name] = full.narrow(0, offset, numel).view(shape)
            offset += numel
        up = lambda x: align * math.ceil(x / align)
        if up(offset) != up(full.numel()):
            fail(f"group {g}: consumed {offset} numels out of {full.numel()}")
        # Optimizer moments: padded partitions of one length; fp32 cut on the last rank only.
        part = up(offset) // world
        for r, osd in enumerate(osds):
            st = osd["base_optimizer_state"]["state"][g]
            for k, v in st.items():
                if torch.is_tensor(v) and v.dim() == 1 and v.numel() != part:
                    fail(f"rank {r} group {g}: {k} has {v.numel()} elements, not {part}")
            expect = part - osd["group_paddings"][g]
            if osd["single_partition_of_fp32_groups"][g].numel() != expect:
                fail(f"rank {r} group {g}: fp32 partition of "
                     f"{osd['single_partition_of_fp32_groups'][g].numel()}, not {expect}")
    for alias, owner in model["shared_params"].items():
        if owner in state:
            state[alias] = state[owner]

    weights = read_safetensors(os.path.join(folder, "model.safetensors"))
    if sorted(weights) != sorted(state):
        fail(f"names differ: {sorted(set(weights) ^ set(state))}")
    for name, t in weights.items():
        c = state[name]
        if bf16:
            if t.dtype != torch.bfloat16:
                fail(f"{name}: saved as {t.dtype}, not bfloat16")
            c = c.to(torch.bfloat16)
        if c.shape != t.shape or c.dtype != t.dtype or not torch.equal(c, t):
            fail(f"{name}: consolidated differs from model.safetensors")
        if not torch.equal(model["module"][name], t):
            fail(f"{name}: model states' module differs from model.safetensors")
    print(f"ok: {folder}: ZeRO-{stage}, {world} ranks, {len(state)} tensors "
          f"({sum(t.numel() for t in state.values())} elements) consolidate bitwise to "
          f"model.safetensors")


if __name__ == "__main__":
    main()
