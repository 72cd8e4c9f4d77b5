#!/usr/bin/env python3
"""safetensors_equal.py A B: exit 0 when the two safetensors files hold the same tensors (names,
dtypes, shapes and bytes; order and metadata aside), else print the first difference and exit 1.
Reads the format itself (8-byte little-endian header length, JSON header, data), so it needs
only Python's standard library."""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    return {name: (entry["dtype"], entry["shape"],
                   body[entry["data_offsets"][0]:entry["data_offsets"][1]])
            for name, entry in header.items()}


def main(a, b):
    left, right = read(a), read(b)
    if sorted(left) != sorted(right):
        print(f"names differ: {sorted(left)} vs {sorted(right)}")
        return 1
    for name in sorted(left):
        if left[name] != right[name]:
            print(f"{name} differs: {left[name][:2]} vs {right[name][:2]}")
            return 1
    print(f"{len(left)} tensors equal")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
