"""Python half of python_interop_test.sh; run with Debian's /usr/bin/python3 (torch 1.13).

    /usr/bin/python3 check_rng_state.py DIR

Reads DIR/rng_state.pth written by loom's C++ SaveRngState (rng_interop_tool write), checks its
keys and types, restores its "cpu" state with torch.set_rng_state and checks that the draws match
DIR/cpp_draws.txt (what C++ drew after the capture). Checks that torch.manual_seed(42) gives
DIR/cpp_seed42_draws.txt. Then writes DIR/py_rng_state.pth (torch.get_rng_state() in loom's
layout, via torch.save) and DIR/py_draws.txt for rng_interop_tool read.
Exits 0 when every check passes, 1 otherwise, printing each failure.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
except ImportError as e:
    sys.exit("FAIL: %s cannot import torch (%s); install Debian's python3-torch" %
             (sys.executable, e))

import reference_draws  # noqa: E402

FORMAT = "loom.rng_state"
VERSION = 1
failures = []


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
    if "cuda" in state:
        cuda = state["cuda"]
        check(isinstance(cuda, list) and all(
            isinstance(t, torch.Tensor) and t.dtype == torch.uint8 for t in cuda),
            "cuda is not a list of uint8 tensors: %r" % (cuda,))
    host = state.get("loom_host")
    if check(isinstance(host, dict), "loom_host is %s, not dict" % type(host).__name__):
        check(sorted(host) == ["augment", "sampler"], "loom_host keys are %s" % sorted(host))
        for name, value in host.items():
            check(isinstance(value, str) and value.startswith("mt19937_64 "),
                  "loom_host[%r] is not a serialized mt19937_64 state" % name)


def read_draws(path):
    with open(path) as f:
        return reference_draws.parse_draws(f.read())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_rng_state.py DIR")
    d = sys.argv[1]
    state = torch.load(os.path.join(d, "rng_state.pth"))
    check_layout(state)

    # Resume from the C++ capture: the same numbers C++ drew after it.
    cpp_draws = read_draws(os.path.join(d, "cpp_draws.txt"))
    torch.set_rng_state(state["cpu"])
    diff = reference_draws.compare(cpp_draws, reference_draws.draw_all())
    check(not diff, "after torch.set_rng_state(state['cpu']): " + diff)
    # Without the restore the numbers move on (the comparison can fail).
    check(reference_draws.compare(cpp_draws, reference_draws.draw_all()) != "",
          "draws without restore unexpectedly equal the C++ draws")

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
