# SPDX-License-Identifier: BSD-2-Clause
"""Trace files (``.pcitrace``): write them, and read them into a :class:`Trace` (its
records as numpy arrays, pcispy/trace/records.py).

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
(records lost), ``memory_fills`` (the times the trace memory's FIFO filled: the SDRAM's,
0 for block RAM and SRAM), ``start_timestamp`` (the time the first raw record's delta counts from),
``raw_time_offset`` (clocks subtracted from raw record times so that they are bus clocks),
``latency_timer`` (the Latency Timer the software decoder assumes, 0 = none), and for a file
written as the board was read out (pcispy/spy/readout_feature.py) ``readout``: ``{"complete",
"records_total", "start", "capacity", "trigger_timestamp"}`` (the capture the records come
from; the records read are the whole records the file holds). A file whose readout is not
complete is a *partial readout*: :func:`read_trace` refuses it unless asked for the part.
A segmented capture (``pcispy capture --segments N``) has ``segments``: one object per
segment, in capture order, with at least ``first_record`` (the file's record its records
begin at), ``records`` and ``start_timestamp`` (the time its first raw record's delta
counts from: a raw trace's running time restarts there), and as the capture writes them
``index``, ``start``, ``trigger_index``, ``trigger_timestamp``, ``triggered`` and
``time_base`` (pcispy/spy/capture_feature.py).

A file written as records arrive (:class:`TraceFileWriter`) pads its JSON metadata with spaces
(JSON allows them) so that the header can be rewritten in place when the readout ends.
Large files are memory-mapped, and :meth:`Trace.chunks` reads them a block of records at a
time, so that whole-trace work runs in bounded memory.

Field positions come from :func:`~pcispy.spy.format.record_fields` and nowhere else.
Every damage a file can have raises :class:`~pcispy.host.errors.TraceFormatError` naming the
byte offset. A damaged record is one the spy cannot have written: a kind the capture mode
cannot hold, a value an enum field does not have, or a bit set where its layout has none
(reserved). ``skip_damaged`` reads past them instead (``pcispy decode --partial``): every
other record is kept, and :attr:`Trace.skipped` says what was left out (damaged records,
the part of a record a cut file ends in, the records a complete readout is missing).
Metadata that contradicts the records is refused all the same: a raw trace whose metadata
says 64-bit while no record has anything on the 64-bit extension (AD[63:32], C/BE#[7:4],
PAR64, REQ64#, ACK64#: on a 64-bit bus their pull-ups show), or 32-bit while most records
carry bits a 32-bit record does not have.
"""

import enum
import json
import os
import struct

import numpy as np
from amaranth.lib import data

from pcispy.spy.format import (FORMAT_VERSION, TIMESTAMP_BITS, CaptureMode, RecordKind,
                               record_bits, record_fields, record_layouts)
from pcispy.host.errors import PcispyError, TraceFormatError
# The records' names stay importable from here, where a trace's readers look for them.
from pcispy.trace.records import (CHUNK_RECORDS, Trace, pack_records, record_dtype,
                                  trace_error, unpack_columns, unpack_records)

__all__ = [
    "MAGIC", "HEADER_BYTES", "Trace", "write_trace", "read_trace", "parse_trace",
    "trace_bytes", "record_dtype", "unpack_columns", "unpack_records", "pack_records",
    "TraceFileWriter", "PartialReadout", "CHUNK_RECORDS", "MAP_BYTES", "READOUT_KEYS",
    "SEGMENT_KEYS",
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

#: Highest bus clock a trace may name (PCI runs at 33 or 66 MHz; a VCD clock is >= 1 ps).
_MAX_CLOCK_MHZ = 1000

#: Files at least this large are memory-mapped by :func:`read_trace`, not read whole.
MAP_BYTES = 16 << 20
#: The keys of the ``readout`` metadata, each a non-negative integer but ``complete``.
READOUT_KEYS = ("records_total", "start", "capacity", "trigger_timestamp")
#: The keys every entry of the ``segments`` metadata has, each a non-negative integer (what
#: reading the records needs; the capture writes more).
SEGMENT_KEYS = ("first_record", "records", "start_timestamp")
#: Spaces a :class:`TraceFileWriter` leaves after the JSON metadata, for the values it changes
#: when the readout ends (``complete``, a raw capture's ``start_timestamp``).
_RESERVE = 256

_METADATA_DEFAULTS = {
    "bus_width": 32, "masters": 1, "clock_mhz": 100 / 3, "capture": {}, "overruns": 0,
    "lost": 0, "memory_fills": 0, "start_timestamp": 0, "raw_time_offset": 0,
    "latency_timer": 0,
}


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


def _check_metadata(metadata, name, record_bytes):
    where = HEADER_BYTES

    def bad(message):
        return trace_error(name, where, f"bad metadata: {message}")
    if not isinstance(metadata, dict):
        raise bad("not a JSON object")
    if metadata.get("mode") not in ("raw", "summary"):
        raise bad(f"mode {metadata.get('mode')!r} is not 'raw' or 'summary'")
    full = dict(_METADATA_DEFAULTS)
    full.update(metadata)
    if full["bus_width"] not in (32, 64) or not isinstance(full["bus_width"], int):
        raise bad(f"bus_width {full['bus_width']!r} is not 32 or 64")
    for key in ("masters", "overruns", "lost", "memory_fills", "start_timestamp",
                "raw_time_offset", "latency_timer"):
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
        raise trace_error(name, _SIZE_OFFSET, f"record size {record_bytes} bytes disagrees with "
                                         f"the {layout} layout ({bits // 8} bytes)")
    if "segments" in full:
        _check_segments(full["segments"], bad)
    if "readout" in full:
        readout = full["readout"]
        if not isinstance(readout, dict) or not isinstance(readout.get("complete"), bool):
            raise bad(f"readout {readout!r} is not an object with complete true or false")
        for key in READOUT_KEYS:
            value = readout.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise bad(f"readout {key} {value!r} is not a non-negative integer")
    full["format_version"] = FORMAT_VERSION
    return full


def _check_segments(segments, bad):
    """Refuse a ``segments`` metadata value that is not a list of objects with the
    :data:`SEGMENT_KEYS` (non-negative integers; ``start_timestamp`` fits a timestamp),
    the segments following each other (each begins where the one before ends)."""
    if not isinstance(segments, list):
        raise bad(f"segments {segments!r} is not a list")
    end = 0
    for number, segment in enumerate(segments):
        if not isinstance(segment, dict):
            raise bad(f"segment {number} {segment!r} is not an object")
        for key in SEGMENT_KEYS:
            value = segment.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise bad(f"segment {number} {key} {value!r} is not a non-negative integer")
        if segment["start_timestamp"] >> TIMESTAMP_BITS:
            raise bad(f"segment {number} start_timestamp {segment['start_timestamp']} does "
                      f"not fit the {TIMESTAMP_BITS}-bit timestamp")
        if segment["first_record"] != end:
            raise bad(f"segment {number} first_record {segment['first_record']} is not "
                      f"where the segments before it end ({end})")
        end += segment["records"]


def _header(metadata, record_bytes, reserve=0):
    """The header and JSON metadata of a file (``metadata`` checked and complete), the JSON
    followed by ``reserve`` spaces."""
    text = json.dumps(metadata, sort_keys=True).encode() + b" " * reserve
    return _HEADER.pack(MAGIC, FORMAT_VERSION, record_bytes, len(text)) + text


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
    return _header(full, record_bytes) + body


def write_trace(path, records, metadata):
    """Write a ``.pcitrace`` file (see :func:`trace_bytes`)."""
    with open(path, "wb") as file:
        file.write(trace_bytes(records, metadata))


class PartialReadout(TraceFormatError):
    """A trace file whose readout from the board did not end (``pcispy readout --resume``
    continues it)."""


def _parse_header(blob, name):
    """``(metadata, record_bytes, offset of the first record)`` of the bytes ``blob`` that
    begin a file (at least its header and metadata; more is ignored)."""
    if len(blob) < HEADER_BYTES:
        raise trace_error(name, len(blob), f"truncated header ({len(blob)} of {HEADER_BYTES} "
                                      "bytes)")
    magic, version, record_bytes, json_length = _HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise trace_error(name, 0, f"not a pcispy trace (magic {magic!r}, expected {MAGIC!r})")
    if version > FORMAT_VERSION:
        raise trace_error(name, _VERSION_OFFSET, f"format version {version} is newer than this "
                     f"pcispy reads ({FORMAT_VERSION}); upgrade pcispy")
    if version != FORMAT_VERSION:
        raise trace_error(name, _VERSION_OFFSET, f"format version {version} is no longer "
                     f"supported (this pcispy reads {FORMAT_VERSION})")
    end = HEADER_BYTES + json_length
    if len(blob) < end:
        raise trace_error(name, len(blob), f"truncated header: metadata of {json_length} bytes "
                     f"from offset {HEADER_BYTES} ends past the file ({len(blob)} bytes)")
    try:
        text = bytes(blob[HEADER_BYTES:end]).decode()
    except UnicodeDecodeError as error:
        raise trace_error(name, HEADER_BYTES + error.start, "metadata is not UTF-8") from None

    def byte_offset(position):
        return HEADER_BYTES + len(text[:position].encode())

    def not_json(constant):
        # Python's json reads NaN and Infinity, which JSON does not have.
        raise json.JSONDecodeError(f"{constant} is not a JSON number", text, text.find(constant))
    try:
        metadata = json.loads(text, parse_constant=not_json)
    except json.JSONDecodeError as error:
        raise trace_error(name, byte_offset(error.pos),
                     f"metadata is not valid JSON ({error.msg})") from None
    except RecursionError:
        raise trace_error(name, HEADER_BYTES, "metadata nests too deeply") from None
    return _check_metadata(metadata, name, record_bytes), record_bytes, end


def _whole_records(metadata, name, size, end, record_bytes, skipped=None):
    """The records a file of ``size`` bytes holds from ``end`` on. A partial readout may end
    in part of a record (the readout stopped while writing it): that part is not read.
    ``skipped`` (a dict): read a file cut short too, saying in it what is not read
    (``cut_bytes``, the bytes of the record it ends in; ``missing``, the records a complete
    readout gives that it has not)."""
    whole, partial = divmod(size - end, record_bytes)
    readout = metadata.get("readout")
    if skipped is not None:
        total = readout["records_total"] if readout and readout["complete"] else None
        if partial and (readout is None or readout["complete"]):
            skipped["cut_bytes"] = partial
        if total is not None and whole < total:
            skipped["missing"] = total - whole
        if readout is None or readout["complete"] or whole <= readout["records_total"]:
            return min(whole, total) if total is not None else whole
    if partial and (readout is None or readout["complete"]):
        at = end + whole * record_bytes
        raise trace_error(name, at, f"truncated record {whole} ({partial} of {record_bytes} "
                     "bytes)")
    if readout is not None and whole > readout["records_total"]:
        raise trace_error(name, end + readout["records_total"] * record_bytes,
                     f"{whole} records, more than the {readout['records_total']} the "
                     "readout metadata gives")
    if readout is not None and readout["complete"] and whole != readout["records_total"]:
        raise trace_error(name, end + whole * record_bytes,
                     f"{whole} records where the complete readout has "
                     f"{readout['records_total']}")
    return whole


def _used_bytes(layout, record_bytes):
    """A uint8 array of ``record_bytes``: the bits the fields of ``layout`` occupy."""
    bits = np.zeros(record_bytes * 8, dtype=bool)
    for _, offset, width in record_fields(layout):
        bits[offset:offset + width] = True
    return np.packbits(bits, bitorder="little")


def _damage(chunk):
    """``(bad, why)`` of the records of ``chunk``: a bool array marking the damaged ones
    (a kind its mode cannot hold, an enum field value its enum does not have, a reserved
    bit set) and, for the first of them, what is wrong with it."""
    allowed = np.array([k.value for k in _KINDS_OF_MODE[chunk.mode]], dtype=np.uint8)
    bad = ~np.isin(chunk.kinds, allowed)
    why = {}
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        code = int(chunk.kinds[index])
        what = (f"a {RecordKind(code).name} record"
                if code in RecordKind._value2member_map_ else f"unknown record kind {code}")
        why[index] = f"is {what}, which a {chunk.mode.name.lower()} capture cannot hold"
    for kind in RecordKind:
        where = chunk.indices(kind)
        if kind is RecordKind.EMPTY or not len(where) or kind not in _KINDS_OF_MODE[chunk.mode]:
            continue
        layout = chunk.layouts[kind]
        stray = np.any(chunk.data[where] & ~_used_bytes(layout, chunk.record_bytes), axis=1)
        if stray.any():
            index = int(where[np.flatnonzero(stray)[0]])
            why.setdefault(index, f"({kind.name}) has bits set where its layout has none")
            bad[where[stray]] = True
        fields = _enum_fields(layout)
        if not fields:
            continue
        columns = chunk.columns(kind, [field for field, _ in fields])
        for field, shape in fields:
            known = np.array([member.value for member in shape], dtype=columns[field].dtype)
            wrong = np.flatnonzero(~np.isin(columns[field], known))
            if len(wrong):
                index = int(where[wrong[0]])
                why.setdefault(index, f"({kind.name}) has {field} "
                                      f"{int(columns[field][wrong[0]])}, which is no "
                                      f"{shape.__name__}")
                bad[where[wrong]] = True
    first = int(np.flatnonzero(bad)[0]) if bad.any() else None
    return bad, (why[first] if first is not None else None)


#: The lines a 64-bit bus adds to a raw record (:func:`~pcispy.pci.bus.bus_lines`).
_EXTENSION = ("bus.ad_hi", "bus.cbe_hi", "bus.par64", "bus.req64", "bus.ack64")


def _check_width(trace, name):
    """Refuse a raw trace whose metadata's bus width contradicts its records (see the
    module docstring): one clear line, whatever else is damaged."""
    if trace.mode is not CaptureMode.RAW or not len(trace):
        return
    try:
        wide = record_layouts(64, trace.masters)[RecordKind.RAW]
    except ValueError:
        return                # that many masters' lines do not fit a 64-bit raw record
    extension = np.zeros(trace.record_bytes * 8, dtype=bool)
    for field, offset, width in record_fields(wide):
        if field in _EXTENSION:
            extension[offset + (field == "bus.ad_hi"):offset + width] = True
    extension = np.packbits(extension, bitorder="little")
    unused_32 = ~_used_bytes(record_layouts(32, trace.masters)[RecordKind.RAW],
                             trace.record_bytes)
    records = seen = 0
    for _, chunk in trace.chunks():
        raw = chunk.data[chunk.kinds == RecordKind.RAW.value]
        records += len(raw)
        mask = extension if trace.width == 64 else unused_32
        seen += int(np.count_nonzero(np.any(raw & mask, axis=1)))
    if not records:
        return
    if trace.width == 64 and seen == 0:
        raise trace_error(name, HEADER_BYTES, f"bad metadata: bus_width 64, but its {records} raw "
                     "records are of a 32-bit bus: none has anything on AD[63:33], C/BE#[7:4], "
                     "PAR64, REQ64# or ACK64#, whose pull-ups a 64-bit bus shows")
    if trace.width == 32 and seen * 2 > records:
        raise trace_error(name, HEADER_BYTES, f"bad metadata: bus_width 32, but {seen} of its "
                     f"{records} raw records are of a 64-bit bus: they have bits set that a "
                     "32-bit record does not have")


def _check_records(trace, name, skip_damaged=False):
    """Refuse records the spy cannot have written (:func:`_damage`), a chunk at a time,
    naming the first; with ``skip_damaged``, return the bool array of the damaged ones
    instead (None: there are none)."""
    _check_width(trace, name)
    damaged = None
    for first, chunk in trace.chunks():
        bad, why = _damage(chunk)
        if not bad.any():
            continue
        if not skip_damaged:
            index = int(np.flatnonzero(bad)[0])
            raise trace_error(name, chunk.offset + index * trace.record_bytes,
                         f"record {first + index} {why}")
        if damaged is None:
            damaged = np.zeros(len(trace), dtype=bool)
            index = int(np.flatnonzero(bad)[0])
            trace.skipped = dict(trace.skipped or {}, first_damaged={
                "record": first + index, "offset": chunk.offset + index * trace.record_bytes,
                "why": why})
        damaged[first:first + len(chunk)] = bad
    return damaged


def _without(trace, damaged):
    """``trace`` without the records ``damaged`` marks (held in memory), counting them in
    :attr:`Trace.skipped`."""
    if damaged is None:
        return trace
    kept = Trace(trace.metadata, np.ascontiguousarray(trace.data[~damaged]), trace.offset)
    kept.skipped = dict(trace.skipped, damaged=int(np.count_nonzero(damaged)))
    return kept


def _refuse_partial(trace, name, partial):
    if trace.partial is not None and not partial:
        read, total = trace.partial
        raise PartialReadout(
            f"{name}: partial readout: {read} of {total} records; resume with `pcispy "
            f"readout --resume {name}` (with the transport of the board that holds the "
            "capture), or decode the part read with --partial")


def parse_trace(blob, name="trace", *, partial=False, skip_damaged=False):
    """A :class:`Trace` from the bytes of a file; ``name`` prefixes error messages. A partial
    readout raises :class:`PartialReadout` unless ``partial`` (then the trace holds the
    records read). ``skip_damaged``: leave damaged records out and read a file cut short
    (:attr:`Trace.skipped` says what was left out) instead of refusing them."""
    metadata, record_bytes, end = _parse_header(blob, name)
    skipped = {} if skip_damaged else None
    whole = _whole_records(metadata, name, len(blob), end, record_bytes, skipped)
    trace = Trace(metadata, np.frombuffer(blob, dtype=np.uint8, count=whole * record_bytes,
                                          offset=end), end)
    trace.skipped = skipped or None
    trace = _without(trace, _check_records(trace, name, skip_damaged))
    _refuse_partial(trace, name, partial)
    return trace


def read_trace(path, *, partial=False, skip_damaged=False):
    """Read a ``.pcitrace`` file into a :class:`Trace`: a file of :data:`MAP_BYTES` or more
    is memory-mapped (its records are read as they are used; :meth:`Trace.chunks` reads
    them a run at a time), a smaller one read whole. ``partial`` and ``skip_damaged`` as
    for :func:`parse_trace` (a large file with damaged records is then held in memory
    without them)."""
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size < MAP_BYTES:
                return parse_trace(file.read(), str(path), partial=partial,
                                   skip_damaged=skip_damaged)
            head = file.read(HEADER_BYTES)
            if len(head) == HEADER_BYTES:
                head += file.read(_HEADER.unpack_from(head)[3])
    except OSError as error:
        raise PcispyError(f"cannot read {path}: {error.strerror}") from None
    name = str(path)
    metadata, record_bytes, end = _parse_header(head, name)
    skipped = {} if skip_damaged else None
    whole = _whole_records(metadata, name, size, end, record_bytes, skipped)
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=end,
                     shape=(whole, record_bytes)) if whole else np.zeros((0, record_bytes),
                                                                          np.uint8)
    trace = Trace(metadata, data, end, path=path)
    trace.skipped = skipped or None
    trace = _without(trace, _check_records(trace, name, skip_damaged))
    _refuse_partial(trace, name, partial)
    return trace


class TraceFileWriter:
    """A ``.pcitrace`` file written as its records arrive (a readout from the board).

    The header and metadata come first (``metadata`` as for :func:`trace_bytes`), the JSON
    followed by spaces so that :meth:`update` can rewrite it in place; :meth:`append` adds
    whole records and flushes them, so that a readout that stops leaves every record it
    read in the file. :meth:`reopen` continues a file written so.

    Attributes:
        path: the file.
        metadata: the metadata as the file holds it (checked, defaults filled in).
        records: the records the file holds.
    """
    def __init__(self, path, metadata, *, reserve=_RESERVE):
        self.path = path
        self.metadata = _check_metadata(metadata, "metadata", None)
        self.record_bytes = self.metadata["record_bits"] // 8
        header = _header(self.metadata, self.record_bytes, reserve)
        self._metadata_bytes = len(header) - HEADER_BYTES
        self._end = len(header)
        try:
            self._file = open(path, "wb")
            self._file.write(header)
            self._file.flush()
        except OSError as error:
            raise PcispyError(f"cannot write {path}: {error.strerror}") from None
        self.records = 0

    @classmethod
    def reopen(cls, path):
        """The writer of an existing file, positioned after its last whole record (part of
        a record at its end, from a readout stopped while writing it, is cut off)."""
        writer = cls.__new__(cls)
        writer.path = path
        try:
            with open(path, "rb") as file:
                head = file.read(HEADER_BYTES)
                if len(head) == HEADER_BYTES:
                    head += file.read(_HEADER.unpack_from(head)[3])
                size = os.fstat(file.fileno()).st_size
            metadata, record_bytes, end = _parse_header(head, str(path))
            whole = _whole_records(metadata, str(path), size, end, record_bytes)
            writer._file = open(path, "r+b")
            writer._file.truncate(end + whole * record_bytes)
            writer._file.seek(0, os.SEEK_END)
        except OSError as error:
            raise PcispyError(f"cannot open {path}: {error.strerror}") from None
        writer.metadata = metadata
        writer.record_bytes = record_bytes
        writer._metadata_bytes = end - HEADER_BYTES
        writer._end = end
        writer.records = whole
        return writer

    def append(self, records):
        """Add whole records (bytes or an (n, record_bytes) uint8 array) and flush them."""
        body = bytes(records) if isinstance(records, (bytes, bytearray, memoryview)) else \
            np.ascontiguousarray(records, dtype=np.uint8).tobytes()
        if len(body) % self.record_bytes:
            raise ValueError(f"{len(body)} bytes are not whole {self.record_bytes}-byte "
                             "records")
        self._file.write(body)
        self._file.flush()
        self.records += len(body) // self.record_bytes

    def update(self, metadata):
        """Rewrite the metadata in place (it must fit the room the file has for it)."""
        full = _check_metadata(metadata, "metadata", self.record_bytes)
        text = json.dumps(full, sort_keys=True).encode()
        if len(text) > self._metadata_bytes:
            raise ValueError(f"metadata of {len(text)} bytes does not fit the "
                             f"{self._metadata_bytes} bytes the file has for it")
        position = self._file.tell()
        self._file.seek(HEADER_BYTES)
        self._file.write(text + b" " * (self._metadata_bytes - len(text)))
        self._file.seek(position)
        self._file.flush()
        self.metadata = full

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
