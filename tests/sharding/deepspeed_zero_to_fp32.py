"""deepspeed_zero_to_fp32.py CHECKPOINT_DIR EXPECTED [STAGE WORLD]: runs DeepSpeed 0.13.5's own
zero_to_fp32.py (vendored unmodified in deepspeed_0_13_5/, with a stand-in `deepspeed` package
beside it for the few names it imports; see deepspeed_0_13_5/deepspeed/__init__.py) on a ZeRO
checkpoint folder, the way a user would: `python zero_to_fp32.py CHECKPOINT_DIR out.bin`, under
this Python (Debian's python3-torch).

Then its output, read by torch.load, must equal EXPECTED bitwise: the same names (in the same
order when EXPECTED is a .bin / .pt state dict; a safetensors file keeps no order), dtypes,
shapes and bytes. With STAGE and WORLD, DeepSpeed's script must have detected that ZeRO stage
and world size. Exits 1 naming the first difference, or with DeepSpeed's own output when its
script fails."""
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from safetensors_read import read_safetensors  # noqa: E402

VENDORED = os.path.join(HERE, "deepspeed_0_13_5")


def fail(msg):
    print("deepspeed_zero_to_fp32.py: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run_deepspeed(checkpoint_dir, output_file):
    # DeepSpeed 0.13.5 predates torch 2.6, whose torch.load defaults to weights_only=True and
    # refuses the DeepSpeed objects (LossScaler, ...) its checkpoints pickle; this variable
    # restores the default DeepSpeed was written for (a no-op on older torch).
    env = dict(os.environ, PYTHONPATH=VENDORED, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1")
    proc = subprocess.run(
        [sys.executable, os.path.join(VENDORED, "zero_to_fp32.py"), checkpoint_dir, output_file],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        fail(f"DeepSpeed 0.13.5's zero_to_fp32.py exited {proc.returncode} on "
             f"{checkpoint_dir}; it said:\n{proc.stdout}")
    return proc.stdout


def load_expected(path):
    if path.endswith(".safetensors"):
        return read_safetensors(path), False
    return torch.load(path, map_location="cpu"), True


def same_bits(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    as_bytes = lambda t: t.detach().reshape(-1).contiguous().view(torch.uint8)  # noqa: E731
    return torch.equal(as_bytes(a), as_bytes(b))


def main():
    checkpoint_dir, expected_path = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        output_file = os.path.join(tmp, "pytorch_model.bin")
        said = run_deepspeed(checkpoint_dir, output_file)
        got = torch.load(output_file, map_location="cpu")
    if len(sys.argv) > 3:
        stage, world = sys.argv[3], sys.argv[4]
        want = f"Detected checkpoint of type zero stage {stage}, world_size: {world}"
        if want not in said:
            fail(f"DeepSpeed's script did not say {want!r}; it said:\n{said}")
    expected, ordered = load_expected(expected_path)
    if ordered and list(got) != list(expected):
        fail(f"names or their order differ:\n  DeepSpeed: {list(got)}\n"
             f"  expected:  {list(expected)}")
    if sorted(got) != sorted(expected):
        fail(f"names differ: only DeepSpeed's: {sorted(set(got) - set(expected))}; "
             f"only expected: {sorted(set(expected) - set(got))}")
    for name, want in expected.items():
        have = got[name]
        if not same_bits(have, want):
            largest = ((have.double() - want.double()).abs().max().item()
                       if have.shape == want.shape and have.numel() else "n/a")
            fail(f"{name}: DeepSpeed's {have.dtype} {tuple(have.shape)} differs from the expected "
                 f"{want.dtype} {tuple(want.shape)} (largest difference {largest})")
    print(f"ok: DeepSpeed 0.13.5 zero_to_fp32.py on {checkpoint_dir}: {len(expected)} tensors "
          f"bitwise equal to {os.path.basename(expected_path)}")


if __name__ == "__main__":
    main()
