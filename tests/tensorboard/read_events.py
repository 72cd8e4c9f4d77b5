#!/usr/bin/python3
"""Independent reader of TensorBoard event files, standard library only.

Checks loom's //logging:tensorboard_sink against the formats, not against its own code:
  * TFRecord framing: uint64 LE length, uint32 LE masked CRC-32C of those 8 bytes, the data,
    uint32 LE masked CRC-32C of the data; mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8.
  * Event / Summary / Summary.Value decoded from the protobuf wire format by hand
    (field numbers of TensorFlow's event.proto and summary.proto; unknown fields skipped).
  * The first record must be an Event with file_version "brain.Event:...".

Usage:
  /usr/bin/python3 read_events.py EVENT_FILE   prints a JSON list of
      [step, tag, simple_value, wall_time] for every scalar, in file order; simple_value is
      null when a Value has none set, and NaN / infinities are the strings "NaN", "Infinity",
      "-Infinity" (so strict JSON parsers accept the output).
  /usr/bin/python3 read_events.py --header EVENT_FILE   prints [file_version, wall_time].
  /usr/bin/python3 read_events.py --self-test   checks the CRC-32C against known vectors.
Exits 1 with a message on stderr on any CRC, framing or wire-format error; 2 on bad usage.
"""

import json
import math
import struct
import sys


class FormatError(Exception):
    pass


def _make_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc32c(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(blob):
    """Yields the payload of each TFRecord in `blob`, verifying both CRCs."""
    offset = 0
    index = 0
    while offset < len(blob):
        where = "record %d at byte %d" % (index, offset)
        if len(blob) - offset < 12:
            raise FormatError("%s: truncated header" % where)
        length_bytes = blob[offset:offset + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack("<I", blob[offset + 8:offset + 12])
        if length_crc != masked_crc32c(length_bytes):
            raise FormatError("%s: length CRC mismatch" % where)
        start = offset + 12
        if len(blob) - start < length + 4:
            raise FormatError("%s: truncated data (length %d)" % (where, length))
        data = blob[start:start + length]
        (data_crc,) = struct.unpack("<I", blob[start + length:start + length + 4])
        if data_crc != masked_crc32c(data):
            raise FormatError("%s: data CRC mismatch" % where)
        yield data
        offset = start + length + 4
        index += 1


def read_varint(buf, pos):
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise FormatError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise FormatError("varint longer than 10 bytes")


def fields(buf):
    """Yields (field_number, wire_type, value) for a serialized message."""
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise FormatError("field number 0")
        if wire_type == 0:
            value, pos = read_varint(buf, pos)
        elif wire_type == 1:
            if pos + 8 > len(buf):
                raise FormatError("truncated fixed64 field %d" % number)
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire_type == 2:
            length, pos = read_varint(buf, pos)
            if pos + length > len(buf):
                raise FormatError("truncated length-delimited field %d" % number)
            value, pos = buf[pos:pos + length], pos + length
        elif wire_type == 5:
            if pos + 4 > len(buf):
                raise FormatError("truncated fixed32 field %d" % number)
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise FormatError("unsupported wire type %d (field %d)" % (wire_type, number))
        yield number, wire_type, value


def expect_wire(number, wire_type, wanted, message):
    if wire_type != wanted:
        raise FormatError("%s field %d has wire type %d, expected %d"
                          % (message, number, wire_type, wanted))


def decode_value(buf):
    tag, simple_value = "", None
    for number, wire_type, value in fields(buf):
        if number == 1:
            expect_wire(number, wire_type, 2, "Summary.Value")
            tag = value.decode("utf-8", errors="replace")
        elif number == 2:
            expect_wire(number, wire_type, 5, "Summary.Value")
            (simple_value,) = struct.unpack("<f", value)
    return tag, simple_value


def decode_event(buf):
    event = {"wall_time": 0.0, "step": 0, "file_version": None, "values": None}
    for number, wire_type, value in fields(buf):
        if number == 1:
            expect_wire(number, wire_type, 1, "Event")
            (event["wall_time"],) = struct.unpack("<d", value)
        elif number == 2:
            expect_wire(number, wire_type, 0, "Event")
            event["step"] = value - (1 << 64) if value >= (1 << 63) else value
        elif number == 3:
            expect_wire(number, wire_type, 2, "Event")
            event["file_version"] = value.decode("utf-8")
        elif number == 5:
            expect_wire(number, wire_type, 2, "Event")
            values = []
            for n, w, v in fields(value):
                if n == 1:
                    expect_wire(n, w, 2, "Summary")
                    values.append(decode_value(v))
            event["values"] = values
    return event


def json_number(x):
    if x is None or math.isfinite(x):
        return x
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


def read_events(path):
    with open(path, "rb") as f:
        blob = f.read()
    events = [decode_event(record) for record in read_records(blob)]
    if not events:
        raise FormatError("no records")
    version = events[0]["file_version"]
    if version is None or not version.startswith("brain.Event:"):
        raise FormatError("first record is not a file_version event: %r" % (events[0],))
    return events


def self_test():
    checks = [
        (crc32c(b"123456789"), 0xE3069283),
        (crc32c(bytes(32)), 0x8A9136AA),
        (crc32c(b"\xff" * 32), 0x62A8AB43),
        (crc32c(bytes(range(32))), 0x46DD794E),
    ]
    for got, want in checks:
        if got != want:
            raise FormatError("crc32c self-test: got %#010x, want %#010x" % (got, want))
    print("self-test ok")


def main(argv):
    try:
        if argv == ["--self-test"]:
            self_test()
        elif len(argv) == 2 and argv[0] == "--header":
            first = read_events(argv[1])[0]
            print(json.dumps([first["file_version"], first["wall_time"]]))
        elif len(argv) == 1 and not argv[0].startswith("--"):
            scalars = []
            for event in read_events(argv[0]):
                for tag, value in event["values"] or []:
                    scalars.append([event["step"], tag, json_number(value),
                                    json_number(event["wall_time"])])
            print(json.dumps(scalars))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (FormatError, OSError) as e:
        print("read_events.py: %s: %s" % (argv[-1] if argv else "", e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
