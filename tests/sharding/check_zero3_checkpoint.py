"""check_zero3_checkpoint.py CHECKPOINT_DIR WORLD WEIGHTS.safetensors: checks a loom ZeRO-3 /
FSDP checkpoint folder (DeepSpeed's stage-3 layout) with Debian's python3-torch alone
(DeepSpeed is not installed, so the files must hold plain Python types).

1. `latest` names the tag folder; torch.load reads WORLD zero_pp_rank_R_mp_rank_00_model_states.pt
   and WORLD zero_pp_rank_R_mp_rank_00_optim_states.pt files with the keys DeepSpeed 0.13.5
   writes for stage 3 (sharding/deepspeed_checkpoint/deepspeed_checkpoint_layout.md): module placeholders of 0
   elements for the partitioned parameters, param_shapes, dp_world_size; zero_stage 3,
   partition_count WORLD, fp32_flat_groups, the base optimizer state under optimizer_state_dict.
2. Consolidates the fp32 weights as DeepSpeed 0.13.5's zero_to_fp32.py does for stage 3
   (_zero3_merge_trainable_params, written here independently): per parameter in param_shapes
   order, partitioned_numel = ceil(numel / WORLD); the full tensor is the concatenation over
   ranks of each rank's flat.narrow(offset, partitioned_numel), cut to numel; offset advances by
   partitioned_numel; at the end offset equals each rank's flat size.
3. The result equals WEIGHTS (a safetensors file) bitwise: the same names, shapes and values
   (parameters outside param_shapes, e.g. frozen ones, come from frozen_param_fragments, and
   buffers from the module, as zero_to_fp32 takes them).
4. exp_avg / exp_avg_sq of each group have the flat group's size on every rank.
Exits 1 naming the first difference."""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_read import read_safetensors  # noqa: E402


def fail(msg):
    print("check_zero3_checkpoint.py: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    folder, world, weights_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    # Where DeepSpeed copies its zero_to_fp32.py: loom's executable one-line pointer to the tool.
    pointer = os.path.join(folder, "zero_to_fp32.py")
    if not os.access(pointer, os.X_OK) or len(open(pointer).read().splitlines()) != 1:
        fail("zero_to_fp32.py is missing, not executable or not one line")
    if "bazel run //tools:zero_to_fp32" not in open(pointer).read():
        fail("zero_to_fp32.py does not point at //tools:zero_to_fp32")
    tag = open(os.path.join(folder, "latest")).read()
    if tag != tag.strip() or not tag.startswith("global_step"):
        fail(f"latest holds {tag!r}")
    d = os.path.join(folder, tag)
    models, optims = [], []
    for r in range(world):
        m = torch.load(os.path.join(d, f"zero_pp_rank_{r}_mp_rank_00_model_states.pt"),
                       map_location="cpu")
        o = torch.load(os.path.join(d, f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt"),
                       map_location="cpu")
        for key in ("module", "buffer_names", "param_shapes", "frozen_param_shapes",
                    "frozen_param_fragments", "shared_params", "global_steps",
                    "dp_world_size", "ds_version"):
            if key not in m:
                fail(f"rank {r} model states lack {key!r}")
        if m["dp_world_size"] != world:
            fail(f"dp_world_size {m['dp_world_size']} != {world}")
        osd = o["optimizer_state_dict"]
        for key in ("zero_stage", "partition_count", "fp32_flat_groups", "optimizer_state_dict"):
            if key not in osd:
                fail(f"rank {r} optimizer states lack {key!r}")
        if osd["zero_stage"] != 3 or osd["partition_count"] != world:
            fail(f"rank {r}: zero_stage {osd['zero_stage']}, partition_count "
                 f"{osd['partition_count']}")
        for name in m["param_shapes"][0] if m["param_shapes"] else []:
            if m["module"][name].numel() != 0:
                fail(f"rank {r}: module[{name!r}] is not an empty placeholder")
        models.append(m)
        optims.append(osd)
    if os.path.exists(os.path.join(d, "mp_rank_00_model_states.pt")):
        fail("a stage-1/2 model states file in a stage-3 checkpoint")

    # Consolidation (DeepSpeed 0.13.5 zero_to_fp32.py, ZeRO-3 path).
    state = {}
    for g, shapes in enumerate(models[0]["param_shapes"]):
        flats = [optims[r]["fp32_flat_groups"][g] for r in range(world)]
        offset = 0
        for name, shape in shapes.items():
            numel = math.prod(shape)
            part = math.ceil(numel / world)
            full = torch.cat([flats[r].narrow(0, offset, part) for r in range(world)])
            state[name] = full.narrow(0, 0, numel).view(shape).clone()
            offset += part
        for r in range(world):
            if offset != flats[r].numel():
                fail(f"group {g}: consumed {offset} of rank {r}'s {flats[r].numel()} elements")
            base = optims[r]["optimizer_state_dict"]["state"].get(g, {})
            for key in ("exp_avg", "exp_avg_sq"):
                if key in base and base[key].numel() != flats[r].numel():
                    fail(f"group {g} rank {r}: {key} has {base[key].numel()} elements")
    for name in models[0]["buffer_names"]:
        state[name] = models[0]["module"][name].clone()
    for name, shape in models[0]["frozen_param_shapes"].items():
        numel = math.prod(shape)
        frags = [models[r]["frozen_param_fragments"][name] for r in range(world)]
        state[name] = torch.cat(frags).narrow(0, 0, numel).view(shape).clone()

    want = read_safetensors(weights_path)
    if set(want) != set(state):
        fail(f"names differ: only in weights {sorted(set(want) - set(state))}, "
             f"only in checkpoint {sorted(set(state) - set(want))}")
    for name, t in want.items():
        if tuple(t.shape) != tuple(state[name].shape):
            fail(f"{name}: shape {tuple(state[name].shape)} vs {tuple(t.shape)}")
        if not torch.equal(t.float(), state[name].float()):
            fail(f"{name}: values differ (max {(t.float() - state[name].float()).abs().max()})")
    print(f"check_zero3_checkpoint.py: {len(state)} tensors consolidated from {world} ranks equal "
          f"{weights_path} bitwise")


main()
