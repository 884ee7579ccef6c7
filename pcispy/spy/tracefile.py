# SPDX-License-Identifier: BSD-2-Clause
"""Trace files (``.pcitrace``): write, read, and decode records into numpy arrays.

A trace file is a fixed 16-byte header, a JSON metadata block, then fixed-size records::

    offset 0   8 bytes  magic b"PCITRACE"
    offset 8   u16 LE   format version (pcispy/spy/format.py FORMAT_VERSION)
    offset 10  u16 LE   record size in bytes
    offset 12  u32 LE   length of the JSON metadata in bytes
    offset 16  ...      JSON metadata (UTF-8, one object)
    then                records, each the little-endian integer value of one record of
                        pcispy/spy/format.py (bit 0 = bit 0 of the first byte), in
                        capture order (as the trace memory holds them: slot 0 first)

Metadata keys: ``mode`` ("raw" or "summary"), ``bus_width`` (32/64), ``masters`` (REQ#/GNT#
pairs recorded), ``clock_mhz``, ``record_layout`` and ``record_bits`` (what a record is),
``capture`` (the capture settings, free-form), ``overruns`` (OVERRUN events) and ``lost``
(records lost), ``start_timestamp`` (the time the first raw record's delta counts from),
``raw_time_offset`` (clocks subtracted from raw record times so that they are bus clocks),
``latency_timer`` (the Latency Timer the software decoder assumes, 0 = none).

Field positions come from :func:`~pcispy.spy.format.record_fields` and nowhere else.
Every damage a file can have raises :class:`~pcispy.host.errors.TraceFormatError` naming the
byte offset.
"""

import enum
import json
import struct

import numpy as np
from amaranth.lib import data

from pcispy.spy.format import (
                               FORMAT_VERSION, TIMESTAMP_BITS, CaptureMode, RecordKind, record_bits, record_fields,
                               record_layouts,
                               )
from pcispy.host.errors import PcispyError, TraceFormatError

__all__ = [
    "MAGIC", "HEADER_BYTES", "Trace", "write_trace", "read_trace", "parse_trace",
    "trace_bytes", "record_dtype", "unpack_columns", "unpack_records", "pack_records",
]

MAGIC = b"PCITRACE"
_HEADER = struct.Struct("<8sHHI")
#: Size of the fixed part of the header; the JSON metadata follows it.
HEADER_BYTES = _HEADER.size
_VERSION_OFFSET = 8
_SIZE_OFFSET = 10
_JSON_LENGTH_OFFSET = 12

#: Record kinds each capture mode may hold (event records fit either size).
_KINDS_OF_MODE = {
    CaptureMode.RAW: frozenset(RecordKind) - {RecordKind.SUMMARY},
    CaptureMode.SUMMARY: frozenset(RecordKind) - {RecordKind.RAW},
}

_KIND_OF_LAYOUT = {type(layout): kind for kind, layout in record_layouts().items()}

#: Highest bus clock a trace may name (PCI runs at 33 or 66 MHz; a VCD clock is >= 1 ps).
_MAX_CLOCK_MHZ = 1000

_METADATA_DEFAULTS = {
    "bus_width": 32, "masters": 1, "clock_mhz": 100 / 3, "capture": {}, "overruns": 0,
    "lost": 0, "start_timestamp": 0, "raw_time_offset": 0, "latency_timer": 0,
}


def _unsigned(width):
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        if width <= np.dtype(dtype).itemsize * 8:
            return np.dtype(dtype)
    raise ValueError(f"record fields wider than 64 bits are not supported ({width} bits)")


def record_dtype(layout):
    """numpy structured dtype of ``layout``: one unsigned field per entry of
    :func:`record_fields` (dotted names for nested fields, e.g. ``bus.frame``)."""
    return np.dtype([(name, _unsigned(width)) for name, _, width in record_fields(layout)])


def _as_words(records, record_bytes):
    """``records`` (n, record_bytes) uint8 as (n, record_bytes // 8) little-endian uint64."""
    records = np.ascontiguousarray(records, dtype=np.uint8).reshape(-1, record_bytes)
    return records.view("<u8")


def unpack_columns(records, layout, record_bytes=None, names=None):
    """Decode ``records`` ((n, record_bytes) uint8) as ``layout``: ``{field: array}`` of
    contiguous unsigned arrays (dtype as in :func:`record_dtype`), for ``names`` (default:
    every field). Vectorised: a field inside one byte is cut from that byte's column, a wider
    one from at most two little-endian 64-bit words."""
    record_bytes = record_bytes or layout.size // 8
    records = np.ascontiguousarray(records, dtype=np.uint8).reshape(-1, record_bytes)
    words = records.view("<u8")
    # Each byte or word column is gathered once (a strided read of the whole trace) and
    # shared by the fields it holds.
    byte_columns, word_columns = {}, {}

    def byte_column(index):
        if index not in byte_columns:
            byte_columns[index] = np.ascontiguousarray(records[:, index])
        return byte_columns[index]

    def word_column(index):
        if index not in word_columns:
            word_columns[index] = np.ascontiguousarray(words[:, index])
        return word_columns[index]

    columns = {}
    for name, offset, width in record_fields(layout):
        if names is not None and name not in names:
            continue
        if offset + width > record_bytes * 8:
            raise ValueError(f"field {name} ends past a {record_bytes}-byte record")
        byte, bit = divmod(offset, 8)
        if bit + width <= 8:
            value = byte_column(byte)
            if bit:
                value = value >> np.uint8(bit)
            if width < 8:
                value = value & np.uint8((1 << width) - 1)
        else:
            word, shift = divmod(offset, 64)
            value = word_column(word) >> np.uint64(shift)
            if shift + width > 64:
                value = value | (word_column(word + 1) << np.uint64(64 - shift))
            if width < 64:
                value = value & np.uint64((1 << width) - 1)
        columns[name] = np.ascontiguousarray(value, dtype=_unsigned(width))
    return columns


def unpack_records(records, layout, record_bytes=None):
    """Decode ``records`` ((n, record_bytes) uint8) as ``layout``: a structured array of
    :func:`record_dtype` (see :func:`unpack_columns`)."""
    columns = unpack_columns(records, layout, record_bytes)
    out = np.empty(len(next(iter(columns.values()))) if columns else 0,
                   dtype=record_dtype(layout))
    for name, value in columns.items():
        out[name] = value
    return out


def pack_records(layout, fields, count=None, size_bits=None):
    """Encode records of ``layout``: ``fields`` maps field names (as in :func:`record_dtype`)
    to scalars or arrays; missing fields are 0, ``kind`` defaults to the layout's kind when
    ``fields`` gives none. Returns an (n, record_bytes) uint8 array; ``size_bits`` pads
    records to a capture's record size (events in a summary capture)."""
    record_bytes = (size_bits or layout.size) // 8
    known = {name: (offset, width) for name, offset, width in record_fields(layout)}
    unknown = set(fields) - set(known)
    if unknown:
        raise ValueError(f"no field(s) {sorted(unknown)} in {type(layout).__name__}")
    if count is None:
        sizes = {np.size(value) for value in fields.values() if np.ndim(value)}
        if len(sizes) > 1:
            raise ValueError(f"fields of different lengths {sorted(sizes)}")
        count = sizes.pop() if sizes else 1
    words = np.zeros((count, record_bytes // 8), dtype="<u8")
    for name, (offset, width) in known.items():
        if name not in fields:
            continue
        value = np.broadcast_to(np.asarray(fields[name], dtype=np.uint64), (count,))
        if width < 64 and np.any(value >> np.uint64(width)):
            raise ValueError(f"a value of field {name} does not fit in {width} bits")
        word, shift = divmod(offset, 64)
        words[:, word] |= value << np.uint64(shift)
        if shift + width > 64:
            words[:, word + 1] |= value >> np.uint64(64 - shift)
    if "kind" not in fields:
        words[:, 0] |= np.uint64(_KIND_OF_LAYOUT[type(layout)].value)
    return words.view(np.uint8).reshape(count, record_bytes)


class Trace:
    """A trace read from a file (or built in memory).

    Attributes:
        metadata: the JSON metadata (with defaults filled in).
        mode: :class:`~pcispy.spy.format.CaptureMode`.
        width, masters: the bus the records describe.
        data: (n, record_bytes) uint8, every record in capture order.
        kinds: (n,) uint8, the :class:`RecordKind` of each record.
        offset: byte offset of the first record in the file.
    """
    def __init__(self, metadata, data, offset=0):
        self.metadata = metadata
        self.mode = CaptureMode[metadata["mode"].upper()]
        self.width = metadata["bus_width"]
        self.masters = metadata["masters"]
        self.record_bytes = metadata["record_bits"] // 8
        self.data = np.asarray(data, dtype=np.uint8).reshape(-1, self.record_bytes)
        self.kinds = self.data[:, 0] & 0xF
        self.offset = offset
        self._cache = {}

    def __len__(self):
        return len(self.data)

    @property
    def layouts(self):
        return record_layouts(self.width, self.masters)

    def indices(self, kind):
        """Positions (in capture order) of the records of ``kind``."""
        return np.flatnonzero(self.kinds == RecordKind(kind).value)

    def _of_kind(self, kind):
        where = self.indices(kind)
        return self.data if len(where) == len(self.data) else self.data[where]

    def records(self, kind):
        """Structured array of every record of ``kind`` (fields from ``record_fields``)."""
        kind = RecordKind(kind)
        if kind not in self._cache:
            self._cache[kind] = unpack_records(self._of_kind(kind), self.layouts[kind],
                                               self.record_bytes)
        return self._cache[kind]

    def columns(self, kind, names=None):
        """``{field: contiguous array}`` of the records of ``kind`` (only ``names``, when
        given): the fast form for whole-trace processing."""
        kind = RecordKind(kind)
        return unpack_columns(self._of_kind(kind), self.layouts[kind], self.record_bytes,
                              names)

    @property
    def raw(self):
        return self.records(RecordKind.RAW)

    @property
    def summaries(self):
        return self.records(RecordKind.SUMMARY)

    def times(self):
        """Absolute time (clocks) of every record: event and summary records carry their
        timestamp; a raw record is the previous record's time plus its delta (the first one
        counts from ``start_timestamp``), less ``raw_time_offset``; EMPTY records repeat
        the time before them."""
        kinds = self.kinds
        raw = kinds == RecordKind.RAW.value
        anchored = ~raw & (kinds != RecordKind.EMPTY.value)
        step = np.zeros(len(kinds), dtype=np.int64)
        step[raw] = self.columns(RecordKind.RAW, ["delta"])["delta"]
        # Each anchor (a record with a timestamp) restarts the running sum.
        anchor_time = np.zeros(len(kinds), dtype=np.int64)
        for kind in RecordKind:
            if kind in (RecordKind.RAW, RecordKind.EMPTY):
                continue
            where = self.indices(kind)
            if len(where):
                anchor_time[where] = self.records(kind)["timestamp"]
        total = np.cumsum(step)
        if not anchored.any():
            times = self.metadata["start_timestamp"] + total
            times[raw] -= self.metadata["raw_time_offset"]
            return times
        anchor = np.maximum.accumulate(np.where(anchored, np.arange(len(kinds)), -1))
        has = anchor >= 0
        base = np.where(has, anchor_time[np.maximum(anchor, 0)] - total[np.maximum(anchor, 0)],
                        self.metadata["start_timestamp"])
        times = base + total
        times[raw] -= self.metadata["raw_time_offset"]
        return times


def _enum_fields(layout, prefix=""):
    """``[(field name, enum class)]`` of the fields of ``layout`` that hold an enum (a
    record with another value in one is damaged)."""
    fields = []
    for name, field in layout:
        shape = field.shape
        if isinstance(shape, data.StructLayout):
            fields += _enum_fields(shape, f"{prefix}{name}.")
        elif isinstance(shape, type) and issubclass(shape, enum.Enum) and name != "kind":
            fields.append((f"{prefix}{name}", shape))
    return fields


def _check_enum_fields(trace, name):
    """Refuse a record whose enum field holds a value its enum does not have (e.g. a
    summary's termination 7), naming the first such record's offset."""
    for kind in RecordKind:
        where = trace.indices(kind)
        if kind is RecordKind.EMPTY or not len(where):
            continue
        layout = trace.layouts[kind]
        fields = _enum_fields(layout)
        if not fields:
            continue
        columns = trace.columns(kind, [field for field, _ in fields])
        for field, shape in fields:
            known = np.array([member.value for member in shape], dtype=columns[field].dtype)
            bad = np.flatnonzero(~np.isin(columns[field], known))
            if len(bad):
                index = int(where[bad[0]])
                raise _error(name, trace.offset + index * trace.record_bytes,
                             f"record {index} ({kind.name}) has {field} "
                             f"{int(columns[field][bad[0]])}, which is no {shape.__name__}")


def _error(name, offset, message):
    return TraceFormatError(f"{name}: {message} at byte offset {offset}")


def _check_metadata(metadata, name, record_bytes):
    where = HEADER_BYTES

    def bad(message):
        return _error(name, where, f"bad metadata: {message}")
    if not isinstance(metadata, dict):
        raise bad("not a JSON object")
    if metadata.get("mode") not in ("raw", "summary"):
        raise bad(f"mode {metadata.get('mode')!r} is not 'raw' or 'summary'")
    full = dict(_METADATA_DEFAULTS)
    full.update(metadata)
    if full["bus_width"] not in (32, 64) or not isinstance(full["bus_width"], int):
        raise bad(f"bus_width {full['bus_width']!r} is not 32 or 64")
    for key in ("masters", "overruns", "lost", "start_timestamp", "raw_time_offset",
                "latency_timer"):
        if not isinstance(full[key], int) or isinstance(full[key], bool) or full[key] < 0:
            raise bad(f"{key} {full[key]!r} is not a non-negative integer")
    if not 1 <= full["masters"] <= 15:
        raise bad(f"masters {full['masters']} is not 1..15")
    try:
        record_layouts(full["bus_width"], full["masters"])
    except ValueError as error:
        raise bad(f"masters {full['masters']} on a {full['bus_width']}-bit bus: "
                  f"{error}") from None
    if full["latency_timer"] > 255:
        raise bad(f"latency_timer {full['latency_timer']} is not 0..255")
    for key in ("start_timestamp", "raw_time_offset"):
        if full[key] >> TIMESTAMP_BITS:
            raise bad(f"{key} {full[key]} does not fit the {TIMESTAMP_BITS}-bit timestamp")
    clock = full["clock_mhz"]
    if not isinstance(clock, (int, float)) or isinstance(clock, bool) or \
            not 0 < clock <= _MAX_CLOCK_MHZ:      # also refuses NaN
        raise bad(f"clock_mhz {clock!r} is not a clock frequency (0 < MHz <= "
                  f"{_MAX_CLOCK_MHZ})")
    mode = CaptureMode[full["mode"].upper()]
    bits = record_bits(mode)
    layout = type(record_layouts()[RecordKind.RAW if mode is CaptureMode.RAW
                                   else RecordKind.SUMMARY]).__name__
    if full.setdefault("record_bits", bits) != bits:
        raise bad(f"record_bits {full['record_bits']!r} disagrees with {mode.name.lower()} "
                  f"mode ({bits})")
    if full.setdefault("record_layout", layout) != layout:
        raise bad(f"record_layout {full['record_layout']!r} is not {layout!r}")
    if record_bytes is not None and record_bytes * 8 != bits:
        raise _error(name, _SIZE_OFFSET, f"record size {record_bytes} bytes disagrees with "
                                         f"the {layout} layout ({bits // 8} bytes)")
    full["format_version"] = FORMAT_VERSION
    return full


def trace_bytes(records, metadata):
    """The bytes of a ``.pcitrace`` file holding ``records`` (bytes or a uint8 array of whole
    records, in capture order) and ``metadata`` (``mode`` required; see the module docstring;
    missing keys take their defaults)."""
    full = _check_metadata(metadata, "metadata", None)
    record_bytes = full["record_bits"] // 8
    body = np.ascontiguousarray(np.frombuffer(records, dtype=np.uint8)
                                if isinstance(records, (bytes, bytearray, memoryview))
                                else np.asarray(records, dtype=np.uint8)).tobytes()
    if len(body) % record_bytes:
        raise ValueError(f"{len(body)} bytes of records are not whole {record_bytes}-byte "
                         "records")
    text = json.dumps(full, sort_keys=True).encode()
    return _HEADER.pack(MAGIC, FORMAT_VERSION, record_bytes, len(text)) + text + body


def write_trace(path, records, metadata):
    """Write a ``.pcitrace`` file (see :func:`trace_bytes`)."""
    with open(path, "wb") as file:
        file.write(trace_bytes(records, metadata))


def parse_trace(blob, name="trace"):
    """A :class:`Trace` from the bytes of a file; ``name`` prefixes error messages."""
    if len(blob) < HEADER_BYTES:
        raise _error(name, len(blob), f"truncated header ({len(blob)} of {HEADER_BYTES} "
                                      "bytes)")
    magic, version, record_bytes, json_length = _HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise _error(name, 0, f"not a pcispy trace (magic {magic!r}, expected {MAGIC!r})")
    if version > FORMAT_VERSION:
        raise _error(name, _VERSION_OFFSET, f"format version {version} is newer than this "
                     f"pcispy reads ({FORMAT_VERSION}); upgrade pcispy")
    if version != FORMAT_VERSION:
        raise _error(name, _VERSION_OFFSET, f"format version {version} is no longer "
                     f"supported (this pcispy reads {FORMAT_VERSION})")
    end = HEADER_BYTES + json_length
    if len(blob) < end:
        raise _error(name, len(blob), f"truncated header: metadata of {json_length} bytes "
                     f"from offset {HEADER_BYTES} ends past the file ({len(blob)} bytes)")
    try:
        text = bytes(blob[HEADER_BYTES:end]).decode()
    except UnicodeDecodeError as error:
        raise _error(name, HEADER_BYTES + error.start, "metadata is not UTF-8") from None

    def byte_offset(position):
        return HEADER_BYTES + len(text[:position].encode())

    def not_json(constant):
        # Python's json reads NaN and Infinity, which JSON does not have.
        raise json.JSONDecodeError(f"{constant} is not a JSON number", text, text.find(constant))
    try:
        metadata = json.loads(text, parse_constant=not_json)
    except json.JSONDecodeError as error:
        raise _error(name, byte_offset(error.pos),
                     f"metadata is not valid JSON ({error.msg})") from None
    except RecursionError:
        raise _error(name, HEADER_BYTES, "metadata nests too deeply") from None
    metadata = _check_metadata(metadata, name, record_bytes)
    body = len(blob) - end
    whole, partial = divmod(body, record_bytes)
    if partial:
        at = end + whole * record_bytes
        raise _error(name, at, f"truncated record {whole} ({partial} of {record_bytes} "
                     "bytes)")
    trace = Trace(metadata, np.frombuffer(blob, dtype=np.uint8, count=body, offset=end), end)
    allowed = _KINDS_OF_MODE[trace.mode]
    codes = np.array([k.value for k in allowed], dtype=np.uint8)
    wrong = np.flatnonzero(~np.isin(trace.kinds, codes))
    if len(wrong):
        index = int(wrong[0])
        code = int(trace.kinds[index])
        what = (f"a {RecordKind(code).name} record" if code in RecordKind._value2member_map_
                else f"unknown record kind {code}")
        raise _error(name, end + index * record_bytes, f"record {index} is {what}, which a "
                     f"{trace.mode.name.lower()} capture cannot hold")
    _check_enum_fields(trace, name)
    return trace


def read_trace(path):
    """Read a ``.pcitrace`` file into a :class:`Trace`."""
    try:
        with open(path, "rb") as file:
            blob = file.read()
    except OSError as error:
        raise PcispyError(f"cannot read {path}: {error.strerror}") from None
    return parse_trace(blob, str(path))
