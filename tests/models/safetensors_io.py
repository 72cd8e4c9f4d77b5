"""A small safetensors reader and writer shared by the Python references in tests/models.

Format (huggingface/safetensors): a little-endian u64 header size, a JSON header mapping each
tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (plus an optional
"__metadata__" string map), then the raw little-endian tensor data. Only numpy and torch are
needed, so it runs on Debian's python3-torch (1.13) as well as the pinned 2.11 wheel.
"""

import json
import struct

import numpy as np
import torch

_DTYPES = {
    "F64": (np.float64, torch.float64),
    "F32": (np.float32, torch.float32),
    "F16": (np.float16, torch.float16),
    "I64": (np.int64, torch.int64),
    "I32": (np.int32, torch.int32),
    "I16": (np.int16, torch.int16),
    "I8": (np.int8, torch.int8),
    "U8": (np.uint8, torch.uint8),
    "BOOL": (np.bool_, torch.bool),
}
_NAMES = {torch_type: name for name, (_, torch_type) in _DTYPES.items()}


def read_safetensors(path):
    """Returns an ordered list of (name, tensor) in data order."""
    with open(path, "rb") as f:
        blob = f.read()
    (header_len,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + header_len].decode("utf-8"))
    data = blob[8 + header_len:]
    out = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        if info["dtype"] == "BF16":
            raw = np.frombuffer(data[begin:end], dtype="<u2").astype(np.int32) << 16
            tensor = torch.from_numpy(raw.view(np.float32).copy()).to(torch.bfloat16)
        else:
            np_type, _ = _DTYPES[info["dtype"]]
            arr = np.frombuffer(data[begin:end], dtype=np.dtype(np_type).newbyteorder("<"))
            tensor = torch.from_numpy(arr.copy())
        out.append((begin, name, tensor.reshape(info["shape"])))
    out.sort(key=lambda item: item[0])
    return [(name, tensor) for _, name, tensor in out]


def write_safetensors(path, tensors, metadata=None):
    """Writes the dict name -> tensor, names sorted (as safetensors' own writer)."""
    header = {}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        raw = t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in chunks:
            f.write(raw)
