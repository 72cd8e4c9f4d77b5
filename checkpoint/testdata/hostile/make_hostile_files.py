#!/usr/bin/env python3
"""Writes the hostile torch.save files of checkpoint:hostile_files_test into this folder.

Python's own pickle and zipfile modules write them (Python's standard library only: no torch
needed), the way an attacker would: objects whose __reduce__ names os.system, eval or
subprocess.Popen, an unknown class, persistent ids as torch.save writes them but pointing
outside the archive or claiming more than their record holds, and zip archives with ".." names,
duplicate names or a 10 GB size claim in a 1 KB file, and containers nested 100,000 deep. Nothing here is ever run by loom's reader;
the command the payloads name would create MARKER, which the test checks is never created.

  python3 checkpoint/testdata/hostile/make_hostile_files.py checkpoint/testdata/hostile
"""
import collections
import io
import os
import pickle
import struct
import subprocess
import sys
import types
import warnings
import zipfile
import zlib

MARKER = "/tmp/loom_hostile_pickle_ran"


class Reduce:
    """An object that pickles as `fn(*args)`: what a hostile __reduce__ returns."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


# Stand-ins for torch's globals, registered under torch's module names so that pickle writes
# the same GLOBAL opcodes torch.save writes (pickle checks the name resolves to the object).
torch_mod = types.ModuleType("torch")
torch_utils = types.ModuleType("torch._utils")


class FloatStorage:
    pass


def _rebuild_tensor_v2(*args):
    raise AssertionError("never called")


FloatStorage.__module__ = "torch"
_rebuild_tensor_v2.__module__ = "torch._utils"
torch_mod.FloatStorage = FloatStorage
torch_mod._utils = torch_utils
torch_utils._rebuild_tensor_v2 = _rebuild_tensor_v2
sys.modules.setdefault("torch", torch_mod)
sys.modules.setdefault("torch._utils", torch_utils)


class Storage:
    def __init__(self, key, numel):
        self.key, self.numel = key, numel


class Tensor:
    """Pickles as torch.save pickles a float tensor viewing `storage`."""

    def __init__(self, storage, size):
        self.storage, self.size = storage, size

    def __reduce__(self):
        return (_rebuild_tensor_v2,
                (self.storage, 0, (self.size,), (1,), False, collections.OrderedDict()))


class TorchPickler(pickle.Pickler):
    """torch.save's persistent ids: ('storage', torch.FloatStorage, key, 'cpu', numel)."""

    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", FloatStorage, obj.key, "cpu", obj.numel)
        return None


def torch_pickle(value, protocol=2):
    out = io.BytesIO()
    TorchPickler(out, protocol=protocol).dump(value)
    return out.getvalue()


def archive(records):
    """A torch.save-shaped zip (stored records under archive/), written by zipfile."""
    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about duplicate names
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as z:
            for name, data in records:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                z.writestr(info, data)
    return out.getvalue()


def torch_file(program, storages=()):
    return archive([("archive/data.pkl", program)] +
                   [("archive/data/" + k, v) for k, v in storages] +
                   [("archive/version", b"3\n")])


def ten_gigabyte_claim():
    """A ~1 KB archive whose storage record claims 10 GiB in its zip64 sizes, and whose pickle
    claims the matching element count: every size field agrees except with the file's length."""
    claim = 10 << 30
    program = torch_pickle({"w": Tensor(Storage("0", claim // 4), claim // 4)})
    records = [("archive/data.pkl", program, len(program)), ("archive/data/0", b"\0" * 16, claim),
               ("archive/version", b"3\n", 2)]
    out, directory = b"", b""
    for name, data, size in records:
        big = size >= 0xFFFFFFFF
        crc = zlib.crc32(data)
        offset = len(out)
        local_extra = struct.pack("<HHQQ", 1, 16, size, size) if big else b""
        sz = 0xFFFFFFFF if big else size
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0x21, crc, sz, sz,
                           len(name), len(local_extra)) + name.encode() + local_extra + data
        extra = struct.pack("<HHQQQ", 1, 24, size, size, offset) if big else b""
        directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0, 0, 0x21, crc,
                                 sz, sz, len(name), len(extra), 0, 0, 0, 0,
                                 0xFFFFFFFF if big else offset) + name.encode() + extra
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(records), len(records),
                      len(directory), len(out), 0)
    return out + directory + end


def files():
    # The control: the same machinery writing a plain state dict, which every reader takes.
    values = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    yield "control.pt", torch_file(torch_pickle({"w": Tensor(Storage("0", 4), 4)}),
                                   storages=[("0", values)])
    touch = ["touch", MARKER]
    yield "os_system.pt", torch_file(torch_pickle(Reduce(os.system, (" ".join(touch),))))
    yield "builtins_eval.pt", torch_file(torch_pickle(
        Reduce(eval, ("__import__('os').system('touch %s')" % MARKER,)), protocol=4))
    # Protocol 3: protocol 2 would write subprocess.Popen under its Python 2 name, commands.Popen.
    yield "subprocess_popen.pt", torch_file(torch_pickle(Reduce(subprocess.Popen, (touch,)),
                                                         protocol=3))
    gadget = type("Gadget", (), {"__reduce__": lambda self: (type(self), ())})
    gadget.__module__ = "hostile_gadgets"
    sys.modules["hostile_gadgets"] = types.ModuleType("hostile_gadgets")
    sys.modules["hostile_gadgets"].Gadget = gadget
    yield "unknown_reduce.pt", torch_file(torch_pickle({"w": gadget()}))
    yield "persid_outside.pt", torch_file(
        torch_pickle({"w": Tensor(Storage("../../../etc/passwd", 4), 4)}),
        storages=[("0", b"\0" * 16)])
    yield "storage_larger_than_record.pt", torch_file(
        torch_pickle({"w": Tensor(Storage("0", 1 << 28), 1 << 28)}), storages=[("0", b"\0" * 16)])
    plain = torch_pickle({"step": 3})
    yield "zip_dotdot.pt", archive([("archive/data.pkl", plain), ("archive/../../evil", b"x"),
                                    ("archive/version", b"3\n")])
    yield "zip_duplicate.pt", archive([("archive/data.pkl", plain),
                                       ("archive/data.pkl", torch_pickle({"step": 4})),
                                       ("archive/version", b"3\n")])
    yield "ten_gigabyte_claim.pt", ten_gigabyte_claim()
    # An empty tuple wrapped in 100,000 one-element tuples (TUPLE1): pickle.dumps itself cannot
    # write it (Python's recursion limit), so the opcodes are written out. Freeing such a value
    # recursively would overflow the stack.
    yield "deep_nesting.pt", torch_file(b"\x80\x02)" + b"\x85" * 100000 + b".")


def main():
    folder = sys.argv[1]
    for name, data in files():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
