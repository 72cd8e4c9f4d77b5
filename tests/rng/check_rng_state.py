"""Python half of python_interop_test.sh; run with Debian's /usr/bin/python3 (torch 1.13).

    /usr/bin/python3 check_rng_state.py DIR

Reads DIR/rng_state.pth written by loom's C++ SaveRngState (rng_interop_tool write: SetSeed(1234),
one draw from host generators "sampler" and "augment") and checks every key and value against an
independent computation: "python" / "numpy" against random.seed(1234) / np.random.seed(1234),
"loom_host" against an MT19937-64 written here from its definition, "cpu" by restoring it with
torch.set_rng_state and comparing the draws with DIR/cpp_draws.txt (what C++ drew after the
capture). Replays HF Trainer's _load_rng_state calls on the file. Checks that torch.manual_seed(42)
gives DIR/cpp_seed42_draws.txt. Then writes DIR/py_rng_state.pth (torch.get_rng_state() in loom's
layout, via torch.save), DIR/py_hf_rng_state.pth (the same state as HF's
Trainer._save_rng_state writes it: random.getstate(), np.random.get_state(), CPU machine) and
DIR/py_draws.txt for rng_interop_tool read.
Also checks DIR/random_states_0.pkl (loom's SaveRngState with accelerate's keys, as
Accelerator::SaveState writes it): its keys are exactly accelerate 0.27's (for a machine without
XPU or TPU) plus HF's and loom's, and accelerate 0.27's load_accelerator_state random-state
lines replayed on it (see accelerate_load_random_states) load it and restore C++'s draws.
Exits 0 when every check passes, 1 otherwise, printing each failure.
"""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
except ImportError as e:
    sys.exit("FAIL: %s cannot import torch (%s); install Debian's python3-torch" %
             (sys.executable, e))

import numpy as np  # noqa: E402  (a dependency of python3-torch)

import reference_draws  # noqa: E402

FORMAT = "loom.rng_state"
VERSION = 1
SEED = 1234  # rng_interop_tool write: SetSeed(1234)
HOST_DRAWS = {"augment": 1, "sampler": 1}  # draws made from each host generator before capture
failures = []

M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def fnv1a64(name):
    h = 0xCBF29CE484222325
    for byte in name.encode():
        h = ((h ^ byte) * 0x100000001B3) & M64
    return h


def mt19937_64_text(seed, draws):
    """loom's HostGenerator::SerializeState() of std::mt19937_64(seed) after `draws` outputs:
    "mt19937_64 " + the 312 state words + the position (libstdc++'s operator<< layout)."""
    n, m = 312, 156
    x = [seed & M64]
    for i in range(1, n):
        x.append((6364136223846793005 * (x[-1] ^ (x[-1] >> 62)) + i) & M64)
    pos = n
    for _ in range(draws):
        if pos >= n:  # regenerate the whole block in place
            for i in range(n):
                y = (x[i] & ~0x7FFFFFFF & M64) | (x[(i + 1) % n] & 0x7FFFFFFF)
                x[i] = x[(i + m) % n] ^ (y >> 1) ^ (0xB5026F5AA96619E9 if y & 1 else 0)
            pos = 0
        pos += 1
    return "mt19937_64 " + " ".join(str(v) for v in x) + " " + str(pos)


def check(ok, message):
    if not ok:
        failures.append(message)
    return ok


def check_layout(state):
    if not check(isinstance(state, dict), "top level is %s, not dict" % type(state).__name__):
        return
    check(state.get("format") == FORMAT, "format is %r" % (state.get("format"),))
    check(state.get("version") == VERSION, "version is %r" % (state.get("version"),))
    cpu = state.get("cpu")
    reference = torch.get_rng_state()
    if check(isinstance(cpu, torch.Tensor), "cpu is %s, not a tensor" % type(cpu).__name__):
        check(cpu.dtype == torch.uint8 and cpu.dim() == 1 and cpu.shape == reference.shape,
              "cpu is %s %s, torch.get_rng_state() is %s %s" %
              (cpu.dtype, tuple(cpu.shape), reference.dtype, tuple(reference.shape)))
    expected_keys = {"format", "version", "cpu", "loom_host", "loom_host_base_seed", "python",
                     "numpy"}
    if "cuda" in state:
        expected_keys.add("cuda")
        cuda = state["cuda"]
        check(isinstance(cuda, list) and all(
            isinstance(t, torch.Tensor) and t.dtype == torch.uint8 for t in cuda),
            "cuda is not a list of uint8 tensors: %r" % (cuda,))
    check(set(state) == expected_keys, "keys are %s, expected %s" %
          (sorted(state), sorted(expected_keys)))
    check(state.get("loom_host_base_seed") == SEED,
          "loom_host_base_seed is %r" % (state.get("loom_host_base_seed"),))

    # "python" / "numpy": the states right after HF's set_seed(SEED), in HF's layout.
    random.seed(SEED)
    check(state.get("python") == random.getstate(),
          "python is not random.getstate() after random.seed(%d)" % SEED)
    np.random.seed(SEED)
    ref = np.random.get_state()
    got = state.get("numpy")
    if check(isinstance(got, tuple) and len(got) == 5, "numpy is %r" % (type(got),)):
        check(got[0] == ref[0] and list(got[1]) == ref[1].tolist() and got[2:] == ref[2:],
              "numpy is not np.random.get_state() after np.random.seed(%d)" % SEED)

    host = state.get("loom_host")
    if check(isinstance(host, dict), "loom_host is %s, not dict" % type(host).__name__):
        check(sorted(host) == sorted(HOST_DRAWS), "loom_host keys are %s" % sorted(host))
        for name, draws in HOST_DRAWS.items():
            expected = mt19937_64_text(splitmix64(SEED ^ fnv1a64(name)), draws)
            check(host.get(name) == expected,
                  "loom_host[%r] differs from mt19937_64(DeriveHostSeed(%d, %r)) after %d draw(s)"
                  % (name, SEED, name, draws))


def hf_load_rng_state(state):
    """The calls HF Trainer._load_rng_state makes on a CPU-only machine."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.random.set_rng_state(state["cpu"])


# What accelerate 0.27's save_accelerator_state writes on a machine without XPU or TPU
# (checkpointing.py: random_state, numpy_random_seed, torch_manual_seed, and
# torch_cuda_manual_seed = torch.cuda.get_rng_state_all(); torch_xpu_manual_seed only on XPU,
# xm_seed only on TPU).
ACCELERATE_KEYS = {"random_state", "numpy_random_seed", "torch_manual_seed",
                   "torch_cuda_manual_seed"}


def accelerate_load_random_states(path):
    """A replay of accelerate 0.27.2 src/accelerate/checkpointing.py load_accelerator_state's
    "Random states" block (lines 242-256) on a machine where is_xpu_available() and
    is_tpu_available() are False: any exception there is what accelerate logs as "Could not
    load random states". Returns "" when the states load, else the reason."""
    try:
        states = torch.load(path)
        random.setstate(states["random_state"])
        np.random.set_state(states["numpy_random_seed"])
        torch.set_rng_state(states["torch_manual_seed"])
        torch.cuda.set_rng_state_all(states["torch_cuda_manual_seed"])
        return ""
    except Exception as e:  # noqa: BLE001  (accelerate catches everything here)
        return "Could not load random states (%s: %s)" % (type(e).__name__, e)


def check_accelerate_file(d, cpp_draws):
    path = os.path.join(d, "random_states_0.pkl")
    state = torch.load(path)
    loom_keys = {"format", "version", "cpu", "loom_host", "loom_host_base_seed", "python",
                 "numpy"} | ({"cuda"} if "cuda" in state else set())
    check(set(state) == ACCELERATE_KEYS | loom_keys,
          "random_states_0.pkl keys are %s, expected accelerate's %s plus %s" %
          (sorted(state), sorted(ACCELERATE_KEYS), sorted(loom_keys)))
    if not torch.cuda.is_available():
        check(state.get("torch_cuda_manual_seed") == torch.cuda.get_rng_state_all(),
              "torch_cuda_manual_seed is %r, not get_rng_state_all() of a CPU machine" %
              (state.get("torch_cuda_manual_seed"),))
    random.seed(0)
    np.random.seed(0)
    reason = accelerate_load_random_states(path)
    if not check(not reason, "accelerate's load_state on random_states_0.pkl: " + reason):
        return
    py_random, np_random = random.random(), np.random.rand(3).tolist()
    random.seed(SEED)
    np.random.seed(SEED)
    check(py_random == random.random() and np_random == np.random.rand(3).tolist(),
          "accelerate's load: Python / numpy draws are not those of seed %d" % SEED)
    diff = reference_draws.compare(cpp_draws, reference_draws.draw_all())
    check(not diff, "accelerate's load: torch.set_rng_state(torch_manual_seed): " + diff)


def read_draws(path):
    with open(path) as f:
        return reference_draws.parse_draws(f.read())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_rng_state.py DIR")
    d = sys.argv[1]
    state = torch.load(os.path.join(d, "rng_state.pth"))
    check_layout(state)

    # Resume from the C++ capture as HF's Trainer would: the same numbers C++ drew after it.
    cpp_draws = read_draws(os.path.join(d, "cpp_draws.txt"))
    random.seed(0)
    np.random.seed(0)
    hf_load_rng_state(state)
    py_random, np_random = random.random(), np.random.rand(3).tolist()
    random.seed(SEED)
    np.random.seed(SEED)
    check(py_random == random.random() and np_random == np.random.rand(3).tolist(),
          "after random.setstate / np.random.set_state the draws are not those of seed %d" % SEED)
    diff = reference_draws.compare(cpp_draws, reference_draws.draw_all())
    check(not diff, "after torch.set_rng_state(state['cpu']): " + diff)
    # Without the restore the numbers move on (the comparison can fail).
    check(reference_draws.compare(cpp_draws, reference_draws.draw_all()) != "",
          "draws without restore unexpectedly equal the C++ draws")

    check_accelerate_file(d, cpp_draws)

    torch.manual_seed(42)
    diff = reference_draws.compare(read_draws(os.path.join(d, "cpp_seed42_draws.txt")),
                                   reference_draws.draw_all())
    check(not diff, "torch.manual_seed(42) vs loom SetSeed(42): " + diff)

    # The other direction: Python captures, C++ restores (rng_interop_tool read).
    torch.manual_seed(777)
    reference_draws.draw_all()
    torch.randn(1)
    torch.save({"format": FORMAT, "version": VERSION, "cpu": torch.get_rng_state(),
                "loom_host": {}}, os.path.join(d, "py_rng_state.pth"))
    random.seed(777)
    random.random()
    np.random.seed(777)
    np.random.rand(3)
    # transformers 4.38 Trainer._save_rng_state's dict on a CPU machine.
    torch.save({"python": random.getstate(), "numpy": np.random.get_state(),
                "cpu": torch.get_rng_state()}, os.path.join(d, "py_hf_rng_state.pth"))
    with open(os.path.join(d, "py_draws.txt"), "w") as f:
        f.write(reference_draws.format_draws(reference_draws.draw_all()))

    for message in failures:
        print("FAIL:", message)
    if failures:
        return 1
    print("check_rng_state.py: OK (torch %s)" % torch.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
