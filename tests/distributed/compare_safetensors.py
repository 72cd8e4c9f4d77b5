"""compare_safetensors.py A B TOL: exit 0 when the two safetensors files hold the same tensor
names, dtypes and shapes and every value differs by at most TOL (absolute); prints the largest
difference. A tiny numpy reader of the format (8-byte little-endian header length, JSON header,
raw little-endian data), independent of loom's own reader."""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
          "I32": np.int32, "U8": np.uint8}


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(body[begin:end], dtype=DTYPES[info["dtype"]]).reshape(
            info["shape"])
    return out


def main():
    a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
    if sorted(a) != sorted(b):
        print("different tensor names:", sorted(a), sorted(b))
        return 1
    worst, where = 0.0, ""
    for name in a:
        if a[name].shape != b[name].shape or a[name].dtype != b[name].dtype:
            print("different shape/dtype for", name)
            return 1
        if not a[name].size:
            continue
        diffs = np.abs(a[name].astype(np.float64) - b[name].astype(np.float64))
        i = np.unravel_index(int(np.argmax(diffs)), diffs.shape)
        if diffs[i] > worst:
            worst = float(diffs[i])
            where = f" at {name}{list(i)}: {a[name][i]!r} vs {b[name][i]!r}"
    print(f"max abs difference {worst:.3g} over {len(a)} tensors (tolerance {tol:g}){where}")
    return 0 if worst <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
