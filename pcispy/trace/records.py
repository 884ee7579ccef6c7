# SPDX-License-Identifier: BSD-2-Clause
"""A trace's records on the host, as numpy arrays: the structured dtype of a record layout,
the vectorised unpacking of records (bytes as the trace memory holds them) into columns or
a structured array, the packing of field values into records, and :class:`Trace`, the
records of one capture with their metadata, read a run at a time.

A record is the little-endian integer value of one record layout of pcispy/spy/format.py
(bit 0 = bit 0 of the first byte); its fields' positions come from
:func:`~pcispy.spy.format.record_fields` and nowhere else. The ``.pcitrace`` file
(:mod:`pcispy.trace.file`) holds records in this form, and reads and writes a
:class:`Trace`.
"""

import numpy as np

from pcispy.host.errors import TraceFormatError
from pcispy.spy.format import CaptureMode, RecordKind, record_fields, record_layouts

__all__ = ["Trace", "CHUNK_RECORDS", "record_dtype", "unpack_columns", "unpack_records",
           "pack_records", "trace_error"]

#: The record kind of each record layout, for records packed without one.
_KIND_OF_LAYOUT = {type(layout): kind for kind, layout in record_layouts().items()}

#: Records a chunk of :meth:`Trace.chunks` holds by default (4 MiB of raw records: runs of
#: this size decode faster than the whole trace at once, their columns staying in cache).
CHUNK_RECORDS = 1 << 18


def trace_error(name, offset, message):
    """The :class:`~pcispy.host.errors.TraceFormatError` of damage in the trace ``name`` at
    byte ``offset``."""
    return TraceFormatError(f"{name}: {message} at byte offset {offset}")


def _unsigned(width):
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        if width <= np.dtype(dtype).itemsize * 8:
            return np.dtype(dtype)
    raise ValueError(f"record fields wider than 64 bits are not supported ({width} bits)")


def record_dtype(layout):
    """numpy structured dtype of ``layout``: one unsigned field per entry of
    :func:`record_fields` (dotted names for nested fields, e.g. ``bus.frame``)."""
    return np.dtype([(name, _unsigned(width)) for name, _, width in record_fields(layout)])


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
        kinds: (n,) uint8, the :class:`RecordKind` of each record (found on first use).
        offset: byte offset of the first record in the file.
        path: the file the records are read from by :meth:`chunks` (None: from ``data``).
        first: the index in the whole trace of the first record (a run of
            :meth:`chunks`: where the run begins; the ``segments`` metadata counts records
            of the whole trace).
    """
    def __init__(self, metadata, data, offset=0, path=None, first=0):
        self.metadata = metadata
        self.mode = CaptureMode[metadata["mode"].upper()]
        self.width = metadata["bus_width"]
        self.masters = metadata["masters"]
        self.record_bytes = metadata["record_bits"] // 8
        self.data = data.reshape(-1, self.record_bytes) if isinstance(data, np.memmap) \
            else np.asarray(data, dtype=np.uint8).reshape(-1, self.record_bytes)
        self.offset = offset
        self.path = path
        self.first = first
        #: What reading left out (``skip_damaged``): ``{"damaged", "first_damaged",
        #: "cut_bytes", "missing"}`` (:func:`read_trace`); None when nothing was.
        self.skipped = None
        self._kinds = None
        self._cache = {}

    def __len__(self):
        return len(self.data)

    @property
    def kinds(self):
        if self._kinds is None:
            self._kinds = self.data[:, 0] & 0xF
        return self._kinds

    @property
    def partial(self):
        """``(records read, records of the capture)`` of a partial readout (metadata
        ``readout`` not complete), else None."""
        readout = self.metadata.get("readout")
        if readout is None or readout["complete"]:
            return None
        return len(self), readout["records_total"]

    def chunks(self, records=None):
        """``(index of the first record, Trace)`` of consecutive runs of at most ``records``
        (default :data:`CHUNK_RECORDS`) records, in capture order. The records of a trace
        read from a file are read from it run by run (not through the memory map, whose
        pages would stay in memory), so that a pass over a trace of any length holds one
        run at a time."""
        records = max(1, int(CHUNK_RECORDS if records is None else records))
        if self.path is None or len(self) <= records:
            for first in range(0, len(self), records):
                yield first, Trace(self.metadata, self.data[first:first + records],
                                   self.offset + first * self.record_bytes,
                                   first=self.first + first)
            return
        with open(self.path, "rb") as file:
            for first in range(0, len(self), records):
                count = min(records, len(self) - first)
                file.seek(self.offset + first * self.record_bytes)
                block = np.empty(count * self.record_bytes, dtype=np.uint8)
                if file.readinto(block) != len(block):
                    raise trace_error(str(self.path), self.offset + first * self.record_bytes,
                                      "the file changed while it was read")
                yield first, Trace(self.metadata, block,
                                   self.offset + first * self.record_bytes,
                                   first=self.first + first)

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

    def segment_restarts(self):
        """``{index in this trace: start_timestamp}`` of the segments (metadata
        ``segments``) whose first record is among this trace's records: where a raw trace's
        running time restarts. An empty segment gives way to the next that begins there."""
        restarts = {}
        for segment in self.metadata.get("segments") or ():
            at = segment["first_record"] - self.first
            if 0 <= at < len(self):
                restarts[at] = segment["start_timestamp"]
        return restarts

    def segment_of(self, indices):
        """The segment (its position in the ``segments`` metadata; 0 without segments) of
        each record at ``indices`` (of the whole trace). A record at an empty segment's
        first record is the next segment's."""
        firsts = [segment["first_record"] for segment in self.metadata.get("segments") or ()]
        return np.maximum(np.searchsorted(np.asarray(firsts, dtype=np.int64),
                                          np.asarray(indices, dtype=np.int64),
                                          side="right") - 1, 0)

    def times(self, start=None):
        """Absolute time (clocks) of every record: event and summary records carry their
        timestamp; a raw record is the previous record's time plus its delta (the first one
        counts from ``start``, default ``start_timestamp``: a chunk of a trace passes the
        :meth:`time_after` of the records before it), less ``raw_time_offset``; EMPTY
        records repeat the time before them. In a raw trace with ``segments``, the first
        record of each segment counts from the segment's ``start_timestamp`` (a segment is a
        capture of its own: what came before it is not its time base)."""
        if start is not None:
            return Trace(dict(self.metadata, start_timestamp=start), self.data,
                         self.offset, first=self.first).times()
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
        restarts = self.segment_restarts() if self.mode is CaptureMode.RAW else {}
        if not anchored.any() and not restarts:
            times = self.metadata["start_timestamp"] + total
            times[raw] -= self.metadata["raw_time_offset"]
            return times
        # Each position's time base is the latest anchor or segment restart at or before
        # it: an anchor at i is key 2i + 1, a restart before record i (its delta counts
        # from the segment's start) key 2i, so that an anchor at a segment's first record
        # wins over the restart.
        positions = np.arange(len(kinds), dtype=np.int64)
        key = np.where(anchored, 2 * positions + 1, -1)
        restart_at = np.fromiter(restarts.keys(), dtype=np.int64, count=len(restarts))
        key[restart_at] = np.maximum(key[restart_at], 2 * restart_at)
        restart_time = np.zeros(len(kinds), dtype=np.int64)
        restart_time[restart_at] = np.fromiter(restarts.values(), dtype=np.int64,
                                               count=len(restarts))
        latest = np.maximum.accumulate(key)
        at = np.maximum(latest, 0) // 2
        base = np.where(latest & 1, anchor_time[at] - total[at],
                        restart_time[at] - (total[at] - step[at]))
        base = np.where(latest >= 0, base, self.metadata["start_timestamp"])
        times = base + total
        times[raw] -= self.metadata["raw_time_offset"]
        return times

    def time_after(self, times):
        """The time the next record's delta counts from, after records at ``times``
        (:meth:`times`): the last record's time, before ``raw_time_offset``."""
        if not len(times):
            return self.metadata["start_timestamp"]
        last = int(times[-1])
        return last + self.metadata["raw_time_offset"] * int(
            self.kinds[-1] == RecordKind.RAW.value)
