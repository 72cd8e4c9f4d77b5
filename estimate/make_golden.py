"""make_golden.py OUT: DeepSpeed's ZeRO-2 / ZeRO-3 estimator printouts for a table of inputs,
written here from DeepSpeed 0.13.5's estimate_zero2_model_states_mem_needs* (stage_1_and_2.py)
and estimate_zero3_model_states_mem_needs* (stage3.py) in Python (whose f-string formatting is
the reference for the printed digits), as the golden file estimate/memory_estimate_test.cc
compares loom's output with. Each case: a line "CASE stage P L g n f", the printout, a line "END".
Regenerate with: /usr/bin/python3 estimate/make_golden.py estimate/testdata/golden.txt
When written (2026-11-26) every case was also compared with the output of DeepSpeed's own
functions (estimate_zero3_model_states_mem_needs_all_cold of v0.13.5's stage3.py and
estimate_zero2_model_states_mem_needs_all_cold of the current stage_1_and_2.py, executed from
the source): no difference."""
import sys


def zero3(P, L, g, n, oo, op, zi, f):
    total_gpus = n * g
    gf = 1 / n
    llm = 4 * L
    if oo:
        if op:
            gpu = llm
            cpu = P * 18 * gf * f if zi else P * max(4 * g, 18 * gf) * f
        else:
            gpu = llm + int(2 * P / total_gpus)
            cpu = P * 16 * gf * f if zi else P * max(4 * g, 16 * gf) * f
    else:
        gpu = llm + int(18 * P / total_gpus)
        cpu = L * 4 * g * f if zi else P * 4 * g * f
    return int(cpu), int(gpu)


def zero2(P, g, n, oo, f):
    total_gpus = n * g
    if oo:
        return int(P * max(4 * total_gpus, 16) * f), 2 * P
    return int(P * 4 * g * f), 2 * P + int(18 * P / total_gpus)


def header(g, n):
    return ("Estimated memory needed for params, optim states and gradients for a:\n"
            f"HW: Setup with {n} {'nodes' if n > 1 else 'node'}, {g} {'GPUs' if g > 1 else 'GPU'}"
            " per node.\n")


def table3(P, L, g, n, f):
    out = header(g, n) + (f"SW: Model with {int(P/1e6)}M total params, {int(L/1e6)}M largest "
                          "layer params.\n  per CPU  |  per GPU |   Options\n")
    for oo in (True, False):
        for op in (True, False):
            if not oo and op:
                continue
            for zi in (True, False):
                cpu, gpu = zero3(P, L, g, n, oo, op, zi, f)
                opts = (f"offload_param={'cpu ' if op else 'none'}, "
                        f"offload_optimizer={'cpu ' if oo else 'none'}, zero_init={1 if zi else 0}")
                out += f" {cpu/2**30:7.2f}GB | {gpu/2**30:6.2f}GB | {opts}\n"
    return out


def table2(P, g, n, f):
    out = header(g, n) + f"SW: Model with {int(P/1e6)}M total params.\n  per CPU  |  per GPU |   Options\n"
    for oo in (True, False):
        cpu, gpu = zero2(P, g, n, oo, f)
        out += f" {cpu/2**30:7.2f}GB | {gpu/2**30:6.2f}GB | offload_optimizer={'cpu ' if oo else 'none'}\n"
    return out


CASES = [
    # stage, P, L, g, n, f
    (3, 2_851_774_464, 32_900_000, 8, 1, 1.5),
    (3, 2_851_774_464, 32_900_000, 1, 1, 1.5),
    (3, 2_851_774_464, 32_900_000, 4, 2, 1.5),
    (3, 2_851_774_464, 32_900_000, 1, 3, 1.5),   # n > 1 with g = 1: 1/3 factors
    (3, 109_482_240, 23_440_896, 2, 1, 1.5),     # BERT-base
    (3, 70_000_000_000, 1_048_576_000, 8, 16, 1.2),
    (3, 123_456_789, 7_654_321, 3, 5, 1.0),      # non-integer GB everywhere
    (3, 1_000_000, 999_999, 1, 1, 1.5),
    (3, 5_000_000_000, 100_000_000, 2, 1, 2.0),  # zero_init=0: max(4g, 18/n) picks 18
    (3, 5_000_000_000, 100_000_000, 16, 1, 1.5), # zero_init=0: max picks 4g = 64
    (2, 2_851_774_464, 0, 8, 1, 1.5),
    (2, 2_851_774_464, 0, 1, 1, 1.5),
    (2, 109_482_240, 0, 2, 2, 1.5),
    (2, 123_456_789, 0, 3, 5, 1.0),
    (2, 70_000_000_000, 0, 1, 3, 1.25),
]

with open(sys.argv[1], "w") as out:
    for stage, P, L, g, n, f in CASES:
        out.write(f"CASE {stage} {P} {L} {g} {n} {f!r}\n")
        out.write(table3(P, L, g, n, f) if stage == 3 else table2(P, g, n, f))
        out.write("END\n")
