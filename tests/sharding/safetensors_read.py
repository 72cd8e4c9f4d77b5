"""safetensors_read.read_safetensors(path): a safetensors file as {name: tensor} with Debian's
python3-torch alone (the safetensors package is not installed) — for the checkpoint checks."""
import json
import struct

import torch

_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
           "I64": torch.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = bytearray(data[8 + n:])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        t = torch.frombuffer(body[begin:end], dtype=dtype) if end > begin \
            else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(info["shape"]).clone()
    return out
