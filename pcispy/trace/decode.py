# SPDX-License-Identifier: BSD-2-Clause
"""The software decoder: raw bus cycles -> one summary per transaction, vectorised.

It reads the sampled bus of a raw trace and applies the PCI rules (PCI LB 3.0 §3.3, §3.6.1,
§3.7, §3.9) with numpy array operations only (no Python loop per clock), producing records
with the fields of the hardware :class:`~pcispy.spy.format.SummaryRecord` (same
dtype as a summary trace's records), so the two can be compared record for record.

The rules, clock by clock (clock 0 = the address phase, the clock FRAME# is first asserted):

- a transaction starts where FRAME# is asserted and was not on the clock before (fast
  back-to-back included: FRAME# is always deasserted for a clock in between); a Dual Address
  Cycle's second clock is a second address phase carrying AD[63:32] and the real command;
- it owns every following clock with FRAME# or IRDY# asserted;
- a data phase completes on a clock with IRDY# and TRDY#; ``latency`` is the first clock with
  a completed phase or STOP#; ``initiator_wait`` counts data clocks without IRDY#,
  ``target_wait`` data clocks with IRDY# but neither TRDY# nor STOP#;
- the ending: STOP# with DEVSEL# gone after DEVSEL# was seen is a target abort; no DEVSEL#
  a master abort; STOP# before any data a retry; otherwise STOP# met by IRDY# with TRDY# a
  disconnect with data, without it a disconnect without data; a master ending while its
  GNT# was removed, at least ``latency_timer`` clocks after the address phase, a
  latency-timer expiry; else a completion;
- ``devsel`` counts from the last address phase (1 clock = fast); a master abort reports 0;
- PAR covers the AD/C/BE# of the clock before, when that clock was an address phase or a
  completed data phase; a mismatch (on the transaction's clocks or on the clock after its
  last) or PERR#/SERR# during it sets ``parity_error``;
- ``master`` is 1 + the lowest GNT# line asserted on the clock before the address phase.

Records lost or left out are handled from the record times. Idle-compressed clocks are
quiet, so the clock before a gap had FRAME# deasserted and GNT# as the record before the
gap. A raw capture of selected transactions only (``--select``; metadata ``capture.
raw_select``) stores each selected transaction's clocks and nothing around them: the clock
before its address phase is unknown unless recorded (``master`` 0), and the clock after its
last is not stored, so a transaction whose records stop is complete when its last record
ends it (FRAME# deasserted with IRDY# and TRDY# or STOP#, or IRDY# without any DEVSEL# five
clocks or more after the address phase: a master abort); the PAR of that last clock is not
checked. The first clock of the trace and the first after an OVERRUN event are of unknown
history: a transaction in flight there, or one whose end was not seen before the trace
ends or records were lost, is left out. So is the first clock of each segment of a
segmented capture (metadata ``segments``): a segment is a capture of its own, and no
transaction is joined across the clocks between two segments, which were not recorded.
"""

import os
import subprocess
import sys
import time

import numpy as np

from pcispy.pci.bus import Command, DevselSpeed, Termination, bus_lines
from pcispy.spy.format import (
    RawRecord, RecordKind, SummaryRecord, CaptureMode,
)
from pcispy.trace.file import parse_trace, trace_bytes, write_trace
from pcispy.trace.records import pack_records, record_dtype

__all__ = ["SUMMARY_DTYPE", "summarise", "iter_summaries", "summarise_raw", "is_select_capture",
           "after_lost_records", "lost_marks", "segment_marks", "raw_records", "synthetic_trace",
           "synthetic_summary_trace", "measure_decode_speed", "measure_decode_memory"]

#: dtype of a summary: the fields of the hardware record.
SUMMARY_DTYPE = record_dtype(SummaryRecord())


def _saturate(values, bits):
    return np.minimum(values, (1 << bits) - 1)


def _parity_of(*values):
    ones = sum(np.bitwise_count(np.asarray(v)) for v in values)
    return (ones & 1).astype(bool)


def _cumulative(mask):
    # int32 running sums are several times faster than numpy's default int64 ones.
    return np.cumsum(mask, dtype=np.int32 if len(mask) < 1 << 31 else np.int64)


def _spans(lead, ends, n):
    """``(n,) bool``: the records inside one of the spans ``[lead, ends]``."""
    edges = np.zeros(n + 1, dtype=np.int8)
    edges[lead] = 1
    edges[ends + 1] -= 1
    return np.cumsum(edges[:n], dtype=np.int8).astype(bool)


class _Spans:
    """Reductions over each transaction's records ``[lead, ends]`` (masks are subsets of
    the transactions' records): one running sum per mask, no loop per transaction."""
    def __init__(self, lead, ends):
        self.lead = lead
        self.ends = ends

    def _sums(self, mask):
        running = _cumulative(mask)
        before = np.where(self.lead > 0, running[np.maximum(self.lead - 1, 0)], 0)
        return running, before, running[self.ends]

    def total(self, mask):
        _, before, through = self._sums(mask)
        return through - before

    def first(self, mask):
        """``(has, position)`` of the first record of each transaction where ``mask``."""
        _, before, through = self._sums(mask)
        where = np.flatnonzero(mask)
        has = through > before
        return has, np.where(has, where[np.minimum(before, max(len(where) - 1, 0))]
                             if len(where) else 0, 0)

    def last(self, mask):
        _, before, through = self._sums(mask)
        where = np.flatnonzero(mask)
        has = through > before
        return has, np.where(has, where[np.maximum(through - 1, 0)] if len(where) else 0, 0)


def summarise_raw(raw, times, segment_start=None, *, width=32, masters=1, latency_timer=0,
                  selected=False):
    """Summaries of the raw records ``raw`` (structured array or ``{field: array}`` of
    :class:`~pcispy.spy.format.RawRecord` fields) taken at clocks ``times``.

    ``segment_start`` marks records whose previous clock is unknown (the first, and the first
    after lost records); ``latency_timer`` (clocks, 0 = never) tells a latency-timer ending
    from a completion; ``selected``: the records are a capture of selected transactions only
    (see the module docstring). Returns a :data:`SUMMARY_DTYPE` array in transaction order.
    """
    out, _, _, complete = _summarise_raw(raw, times, segment_start, width=width,
                                         masters=masters, latency_timer=latency_timer,
                                         selected=selected)
    return out[complete]


def _summarise_raw(raw, times, segment_start, *, width, masters, latency_timer, selected):
    """:func:`summarise_raw` before the incomplete transactions are left out: ``(summaries,
    first record, last record, complete)`` of every transaction that starts in ``raw``."""
    n = len(times)
    nothing = (np.zeros(0, dtype=SUMMARY_DTYPE), np.zeros(0, np.int64), np.zeros(0, np.int64),
               np.zeros(0, bool))
    if n == 0:
        return nothing
    line = {name: raw[f"bus.{name}"] for name in bus_lines(width)}
    flag = {name: line[name].astype(bool) for name in
            ("frame", "irdy", "trdy", "stop", "devsel", "perr", "serr")}
    frame, irdy, trdy, stop, devsel = (flag[k] for k in ("frame", "irdy", "trdy", "stop",
                                                         "devsel"))
    ad = line["ad"]
    cbe = line["cbe"]
    times = np.asarray(times, dtype=np.int64)
    seg = np.zeros(n, dtype=bool) if segment_start is None else np.asarray(segment_start,
                                                                            dtype=bool).copy()
    seg[0] = True
    contiguous = np.zeros(n, dtype=bool)
    contiguous[1:] = times[1:] == times[:-1] + 1
    contiguous &= ~seg

    # --- transactions: a start, then every contiguous busy clock that is not a start
    prev_frame = np.zeros(n, dtype=bool)
    prev_frame[1:] = frame[:-1] & contiguous[1:]
    prev_frame |= seg                       # unknown history: not an address phase
    start = frame & ~prev_frame
    breaker = start | ~((frame | irdy) & contiguous)
    leaders = np.flatnonzero(breaker)
    is_txn = start[leaders]
    lead = leaders[is_txn]
    ends = np.append(leaders[1:], n)[is_txn] - 1
    count = len(lead)
    if count == 0:
        return nothing
    g = _Spans(lead, ends)
    member = _spans(lead, ends, n)
    later = member.copy()                   # a transaction's clocks after the address phase
    later[lead] = False

    dac = cbe[lead] == Command.DUAL_ADDRESS.value
    has_second = dac & (ends > lead)
    second = np.minimum(lead + 1, n - 1)
    dac_second = np.zeros(n, dtype=bool)
    dac_second[lead[has_second] + 1] = True
    data_clock = later & ~dac_second
    transfer = data_clock & irdy & trdy

    # --- parity: this clock's PAR covers the previous clock's AD/C/BE# when it drove them
    drove_ad = start | dac_second | transfer
    par_bad = np.zeros(n, dtype=bool)
    expected = _parity_of(ad, cbe)
    par_bad[1:] = contiguous[1:] & drove_ad[:-1] & (line["par"][1:].astype(bool) !=
                                                     expected[:-1])
    if width == 64:
        req64 = line["req64"].astype(bool)[lead]
        ack64 = line["ack64"].astype(bool)
        wide_transfer = transfer & ack64 & _spans(lead[req64], ends[req64], n)
        expected64 = _parity_of(line["ad_hi"], line["cbe_hi"])
        par_bad[1:] |= contiguous[1:] & wide_transfer[:-1] & (
            line["par64"][1:].astype(bool) != expected64[:-1])

    # --- a transaction is complete when the clock after its last one was recorded
    after = np.minimum(ends + 1, n - 1)
    complete = (ends + 1 < n) & ~seg[after]
    finish_par = complete & contiguous[after] & par_bad[after]
    claimed, devsel_at = g.first(later & devsel)
    if selected:
        # That clock is never stored: the last record must show the end itself.
        last_phase = irdy[ends] & ~frame[ends]
        complete |= last_phase & (trdy[ends] | stop[ends] |
                                  (~claimed & (ends - lead - dac >= 5)))

    out = np.zeros(count, dtype=SUMMARY_DTYPE)
    out["kind"] = RecordKind.SUMMARY.value
    out["timestamp"] = times[lead]
    out["address"] = ad[lead].astype(np.uint64) | np.where(
        has_second, ad[second].astype(np.uint64) << np.uint64(32), 0)
    out["command"] = np.where(has_second, cbe[second], cbe[lead])
    out["dac"] = dac

    has, at = g.first(data_clock & irdy)
    first_be = cbe[at]
    if width == 64:
        first_be = first_be | (line["cbe_hi"][at] << np.uint8(4))
    out["first_be"] = np.where(has, first_be, 0)
    has, at = g.first(transfer)
    out["first_data"] = np.where(has, ad[at], 0)
    phases = g.total(transfer)
    out["data_phases"] = _saturate(phases, 16)
    has, at = g.first(data_clock & ((irdy & trdy) | stop))
    out["latency"] = np.where(has, _saturate(at - lead, 8), 0)
    out["initiator_wait"] = _saturate(g.total(data_clock & ~irdy), 12)
    out["target_wait"] = _saturate(g.total(data_clock & irdy & ~trdy & ~stop), 12)
    out["duration"] = _saturate(ends - lead + 1, 16)

    speed = devsel_at - lead - dac
    out["devsel"] = np.where(~claimed, 0, np.select(
        [speed <= 1, speed == 2, speed == 3],
        [DevselSpeed.FAST.value, DevselSpeed.MEDIUM.value, DevselSpeed.SLOW.value],
        DevselSpeed.SUBTRACTIVE.value))
    if width == 64:
        out["is64"] = req64 & (g.total(later & devsel & ack64) > 0)

    # --- the ending
    stopped = g.total(data_clock & stop) > 0
    stop_met, stop_at = g.first(data_clock & stop & irdy)
    with_data = stop_met & trdy[stop_at]
    # Target abort: STOP# without DEVSEL# after DEVSEL# was seen (the last such clock is
    # after the first DEVSEL# if any is).
    dropped, dropped_at = g.last(data_clock & stop & ~devsel)
    aborted = claimed & dropped & (dropped_at > devsel_at)
    frame_fell = np.zeros(n, dtype=bool)
    frame_fell[1:] = frame[:-1] & ~frame[1:]
    fell, fell_at = g.last(later & frame_fell)
    # The clock before the address phase: recorded, or (idle compression) as the record
    # before the gap; a selected capture leaves out clocks that are not quiet.
    known = contiguous[lead] if selected else ~seg[lead]
    master = _master(line["gnt"], lead, known, masters)
    own_gnt = np.where(master > 0,
                       (line["gnt"][fell_at].astype(np.int64) >> np.maximum(master - 1, 0)) & 1,
                       1)
    timer = (latency_timer != 0) & fell & (own_gnt == 0) & (fell_at - lead >= latency_timer)
    out["termination"] = np.select(
        [aborted, ~claimed, stopped & (phases == 0), stopped & with_data, stopped, timer],
        [Termination.TARGET_ABORT.value, Termination.MASTER_ABORT.value,
         Termination.RETRY.value, Termination.DISCONNECT_DATA.value,
         Termination.DISCONNECT_NODATA.value, Termination.LATENCY_TIMER.value],
        Termination.COMPLETION.value)

    errors = g.total((member & (flag["perr"] | flag["serr"])) | (later & par_bad))
    out["parity_error"] = (errors > 0) | finish_par
    out["master"] = master
    return out, lead, ends, complete


def _master(gnt, lead, known, masters):
    """1 + the lowest GNT# line asserted on the clock before each address phase, which the
    record before it holds where ``known`` (0 when none is asserted, or unknown)."""
    before = np.maximum(lead - 1, 0)
    known = (lead > 0) & known
    lines = gnt[before].astype(np.int64)
    master = np.zeros(len(lead), dtype=np.int64)
    for i in reversed(range(masters)):
        master = np.where((lines >> i) & 1, i + 1, master)
    return np.where(known, master, 0)


def summarise(trace, latency_timer=None, chunk_records=None):
    """The transaction summaries of ``trace`` (:class:`~pcispy.trace.records.Trace`): a summary
    capture's own records, or the software decode of a raw capture. ``latency_timer``
    defaults to the trace metadata's; ``chunk_records`` as for :func:`iter_summaries`."""
    parts = list(iter_summaries(trace, latency_timer, chunk_records))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=SUMMARY_DTYPE)


def iter_summaries(trace, latency_timer=None, chunk_records=None):
    """:func:`summarise` a run of ``chunk_records`` records of ``trace`` at a time
    (:meth:`~pcispy.trace.records.Trace.chunks`; default
    :data:`~pcispy.trace.records.CHUNK_RECORDS`): yields :data:`SUMMARY_DTYPE` arrays
    whose concatenation is the summaries of the whole trace, whatever ``chunk_records``.

    A raw trace is decoded across the runs: the records of a transaction still going at the
    end of a run (and the record before it, the clock before its address phase) are decoded
    again with the next run; record times and lost-record marks carry over from run to
    run. Memory holds a run and that transaction. The first raw record of each segment
    (:func:`segment_marks`) starts a new decode, as one after lost records does."""
    if trace.mode is CaptureMode.SUMMARY:
        for _, chunk in trace.chunks(chunk_records):
            yield chunk.summaries.astype(SUMMARY_DTYPE)
        return
    if latency_timer is None:
        latency_timer = trace.metadata["latency_timer"]
    settings = dict(width=trace.width, masters=trace.masters, latency_timer=latency_timer,
                    selected=is_select_capture(trace))
    names = [f"bus.{name}" for name in bus_lines(trace.width)]
    start, overrun, segment = trace.metadata["start_timestamp"], False, None
    # The raw records not decoded for good yet: the record before the transaction going
    # on, and its records.
    pending = None
    chunks = trace.chunks(chunk_records)
    chunk = next(chunks, (None, None))[1]
    while chunk is not None:
        following = next(chunks, (None, None))[1]
        times = chunk.times(start)
        start = chunk.time_after(times)
        lost, overrun = lost_marks(chunk, overrun)
        begins, segment = segment_marks(chunk, segment)
        raw_at = chunk.indices(RecordKind.RAW)
        part = (chunk.columns(RecordKind.RAW, names), times[raw_at], lost | begins)
        if pending is not None:
            part = ({name: np.concatenate([pending[0][name], part[0][name]]) for name in names},
                    np.concatenate([pending[1], part[1]]), np.concatenate([pending[2], part[2]]))
        columns, raw_times, seg = part
        if not len(raw_times):
            chunk = following
            continue
        if pending is None:
            # The history before the first record is unknown.
            seg[0] = True
        out, lead, ends, complete = _summarise_raw(columns, raw_times, seg, **settings)
        n = len(raw_times)
        if following is None:
            yield out[complete]
            return
        going = ends == n - 1
        restart = int(lead[going][0]) if going.any() else n
        yield out[complete & ~going]
        keep = slice(restart - 1, None)
        pending = ({name: value[keep] for name, value in columns.items()}, raw_times[keep],
                   seg[keep])
        chunk = following


def is_select_capture(trace):
    """Whether ``trace`` is a raw capture of selected transactions only (``--select``): its
    gaps between records are clocks the spy left out whatever they held, not idle clocks.
    The capture settings are free-form metadata: only a capture that says so is one."""
    settings = trace.metadata.get("capture")
    return isinstance(settings, dict) and settings.get("raw_select") is True


def after_lost_records(trace):
    """``(n,) bool`` over the raw records of ``trace`` (in capture order): the record has an
    OVERRUN record between it and the raw record before it, so the clocks between the two
    are not known (records were lost there). The first raw record is marked when an
    OVERRUN record precedes it."""
    return lost_marks(trace, False)[0]


def lost_marks(trace, before, kind=RecordKind.RAW):
    """:func:`after_lost_records` of a run of a trace, over its records of ``kind`` (RAW, or
    SUMMARY: records were lost before the summary); ``before``: an OVERRUN record came after
    the last record of ``kind`` of the runs before. Returns the marks and whether an OVERRUN
    record comes after the run's last record of ``kind`` (the next run's ``before``)."""
    raw_at = trace.indices(kind)
    overruns = trace.indices(RecordKind.OVERRUN)
    seen = np.searchsorted(overruns, raw_at)
    lost = np.zeros(len(raw_at), dtype=bool)
    if len(raw_at):
        lost[0] = before or seen[0] > 0
        lost[1:] = seen[1:] != seen[:-1]
        return lost, bool(len(overruns) and overruns[-1] > raw_at[-1])
    return lost, before or bool(len(overruns))


def segment_marks(trace, before, kind=RecordKind.RAW):
    """``(n,) bool`` over the records of ``kind`` of ``trace`` (a run of
    :meth:`~pcispy.trace.records.Trace.chunks`, or a whole trace): the record is the first
    of its kind in its segment (metadata ``segments``), so the clocks before it are not in
    the trace. ``before``: the segment of the last record of ``kind`` of the runs before
    (None: none). Returns the marks and the segment of the run's last record of ``kind``
    (the next run's ``before``). Without segments nothing is marked."""
    at = trace.indices(kind)
    marks = np.zeros(len(at), dtype=bool)
    if "segments" not in trace.metadata or not len(at):
        return marks, before
    segment = trace.segment_of(trace.first + at)
    marks[1:] = segment[1:] != segment[:-1]
    marks[0] = before is not None and segment[0] != before
    return marks, int(segment[-1])


def raw_records(clocks, width=32, masters=1, deltas=1):
    """Raw records ((n, 16) uint8) of ``clocks``: a list of ``{line: value}`` (inside-level,
    lines of :func:`~pcispy.pci.bus.bus_lines`, missing = 0), one per clock, each
    ``deltas`` (scalar or per record) after the one before. PAR (and PAR64), where a clock
    leaves it out, is computed from the clock before, as a correct agent drives it. Other
    record fields (``trigger``, ``violation``, ...) may be given too."""
    lines = bus_lines(width)
    count = len(clocks)
    columns = {}
    names = set().union(*(clock.keys() for clock in clocks)) if clocks else set()
    for name in names:
        columns[name] = np.array([clock.get(name, 0) for clock in clocks], dtype=np.uint64)
    for name, data, enables in (("par", "ad", "cbe"), ("par64", "ad_hi", "cbe_hi")):
        if name in lines:
            value = _parity_of(columns.get(data, np.zeros(count, np.uint64)),
                               columns.get(enables, np.zeros(count, np.uint64)))
            value = np.concatenate([[0], value[:-1]]).astype(np.uint64)
            given = np.array([name in clock for clock in clocks], dtype=bool)
            columns[name] = np.where(given, columns.get(name, 0), value)
    fields = {"delta": np.broadcast_to(deltas, (count,))}
    for name, value in columns.items():
        fields[f"bus.{name}" if name in lines else name] = value
    return pack_records(RawRecord(width, masters), fields, count)


_ENDINGS = ("completion", "completion", "retry", "disconnect_data", "disconnect_nodata",
            "target_abort", "master_abort")
_COMMANDS = (Command.MEM_READ, Command.MEM_WRITE, Command.MEM_READ_LINE,
             Command.MEM_READ_MULTIPLE, Command.MEM_WRITE_INVALIDATE, Command.IO_READ,
             Command.IO_WRITE, Command.CONFIG_READ, Command.CONFIG_WRITE)


def _synthetic_clocks(rng, width=32, masters=1):
    """One random transaction and 0-3 idle clocks after it (none: fast back-to-back), clock
    by clock, from the PCI rules: DAC, 64-bit requests (accepted or not), every DEVSEL#
    speed, initiator and target waits, every ending, GNT# removed at the end, PERR#."""
    command = _COMMANDS[rng.integers(len(_COMMANDS))]
    read = command.is_read
    dac = command.is_memory and rng.random() < 0.15
    wide = width == 64 and command.is_memory and rng.random() < 0.5
    ack = wide and rng.random() < 0.7
    ending = _ENDINGS[rng.integers(len(_ENDINGS))]
    words = int(rng.integers(1, 7))
    stop_phase = int(rng.integers(0 if ending in ("disconnect_data", "target_abort") else 1,
                                  words + 1)) if ending != "retry" else 0
    devsel_at = int(rng.integers(1, 5))       # fast, medium, slow, subtractive
    grant = int(rng.integers(0, 1 << masters))
    preempted = rng.random() < 0.3            # GNT# removed before the master ends
    extra = {"req64": 1} if wide else {}
    clocks = []
    if dac:
        clocks.append(dict(frame=1, ad=int(rng.integers(0, 1 << 32)) & ~3,
                           cbe=Command.DUAL_ADDRESS.value, **extra))
    clocks.append(dict(frame=1, ad=int(rng.integers(0, 1 << 32)) & ~3, cbe=command.value,
                       **extra))
    base = len(clocks) - 1                    # the last address phase
    moved = phase_waits = 0
    irdy = trdy = False
    while True:
        rel = len(clocks) - base
        last = moved == words - 1
        if not irdy and phase_waits == 0 and rng.random() < 0.3:
            phase_waits = int(rng.integers(1, 3))     # initiator wait states
        if phase_waits:
            phase_waits -= 1
        else:
            irdy = True
        c = {"frame": int(not (irdy and last)), "irdy": int(irdy), "cbe": 0 if irdy else 0xF,
             "ad": int(rng.integers(0, 1 << 32)), **extra}
        if wide:
            c["ad_hi"] = int(rng.integers(0, 1 << 32))
        clocks.append(c)
        if ending == "master_abort":
            if rel >= 5 and irdy:             # nobody claimed it by clock 5: give up
                c["frame"] = 0
                break
            c["frame"] = 1
            continue
        if rel < devsel_at:
            continue
        c["devsel"] = 1
        if ack:
            c["ack64"] = 1
        if read and rel < 2:
            continue                          # turnaround: no read data before clock 2
        if moved == stop_phase and irdy and ending != "completion" and rel > devsel_at - (
                ending != "target_abort"):
            c["stop"] = 1
            c["trdy"] = int(ending == "disconnect_data")
            if ending == "target_abort":
                c.pop("devsel")
                c.pop("ack64", None)
            if c["frame"]:                    # the master sees STOP# and ends next clock
                clocks.append(dict(irdy=1, stop=1, **({} if ending == "target_abort"
                                                      else {"devsel": 1}),
                                   ad=c["ad"], cbe=c["cbe"]))
            break
        trdy = trdy or rng.random() < 0.7
        c["trdy"] = int(trdy)
        if irdy and trdy:
            moved += 1
            irdy = trdy = False
            if last:
                break
    for c in clocks:
        c["gnt"] = grant
    if preempted:
        clocks[-1]["gnt"] = clocks[-2]["gnt"] = 0
    if rng.random() < 0.05:
        clocks[int(rng.integers(len(clocks)))]["perr"] = 1
    return clocks + [{"gnt": grant}] * int(rng.integers(0, 4))


def synthetic_trace(cycles, seed=1, width=32, distinct=64):
    """A raw :class:`~pcispy.trace.records.Trace` of at least ``cycles`` clocks: ``distinct``
    random transactions (each with idle clocks after it) repeated as a whole; returns
    ``(trace, number of transactions)``."""
    rng = np.random.default_rng(seed)
    clocks = [{}]                    # an idle clock first: the address phase is seen rising
    for _ in range(distinct):
        clocks += _synthetic_clocks(rng)
    if width == 64:
        # Nobody drives the 64-bit extension in these 32-bit transactions: its pull-ups do.
        clocks = [{"ad_hi": 0xFFFF_FFFF, "cbe_hi": 0xF, **clock} for clock in clocks]
    tile = raw_records(clocks, width)
    repeat = -(-cycles // len(tile))
    trace = parse_trace(trace_bytes(np.tile(tile, (repeat, 1)),
                                    {"mode": "raw", "bus_width": width}))
    return trace, distinct * repeat


def measure_decode_speed(cycles=2_000_000, seed=1, runs=3):
    """Raw cycles decoded per second (``spy.decode_cycles_per_s``): parse a file's bytes and
    summarise every record, over a synthetic trace of at least ``cycles`` clocks; the best
    of ``runs`` after one warm-up run (the first run pays for page faults)."""
    trace, transactions = synthetic_trace(cycles, seed)
    blob = trace_bytes(trace.data, trace.metadata)
    best = float("inf")
    for _ in range(runs + 1):
        begin = time.perf_counter()
        summaries = summarise(parse_trace(blob))
        best = min(best, time.perf_counter() - begin)
        if len(summaries) != transactions:
            raise RuntimeError(f"decoded {len(summaries)} transactions of {transactions}")
    return len(trace) / best


def synthetic_summary_trace(count, seed=1, distinct=4096):
    """A summary :class:`~pcispy.trace.records.Trace` of ``count`` summaries: the software
    decode of :func:`synthetic_trace`'s transactions, repeated, timestamps running on."""
    trace, _ = synthetic_trace(distinct * 8, seed)
    one = summarise(trace)[:distinct]
    repeat = -(-count // len(one))
    summaries = np.tile(one, repeat)[:count]
    span = int(one["timestamp"][-1]) + 10
    summaries["timestamp"] += np.repeat(np.arange(repeat, dtype=np.uint64) * np.uint64(span),
                                        len(one))[:count]
    fields = {name: summaries[name] for name in SUMMARY_DTYPE.names}
    return parse_trace(trace_bytes(pack_records(SummaryRecord(), fields, count),
                                   {"mode": "summary"}))


#: The child of :func:`measure_decode_memory`: runs ``pcispy decode FILE --format csv -o
#: OUT`` and prints its exit status, the high-water mark of its memory (VmHWM: this
#: program's own, where the rusage maximum would also count the parent's pages a fork
#: shares until exec) in KiB and its CPU seconds.
_DECODE_CHILD = """
import resource, sys
from pcispy.app.cli import main
status = main(["decode", sys.argv[1], "--format", "csv", "-o", sys.argv[2]])
with open("/proc/self/status") as file:
    peak = next(line.split()[1] for line in file if line.startswith("VmHWM:"))
usage = resource.getrusage(resource.RUSAGE_SELF)
print(status, peak, usage.ru_utime + usage.ru_stime)
"""


def _decode_in_child(path, out):
    """``(peak memory in MB, seconds, CPU seconds)`` of ``pcispy decode`` of ``path`` into
    the CSV ``out``, in a child process."""
    begin = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _DECODE_CHILD, path, out],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - begin
    fields = done.stdout.split()
    if done.returncode or len(fields) != 3 or fields[0] != "0":
        raise RuntimeError(f"pcispy decode {path} failed: {done.stderr or done.stdout}")
    return int(fields[1]) / 1024, seconds, float(fields[2])


def measure_decode_memory(directory, raw=2_000_000, summaries=1_000_000, seed=1):
    """Peak memory and time of ``pcispy decode FILE --format csv -o OUT`` (a child process)
    of a synthetic raw trace of ``raw`` records and a summary trace of ``summaries``
    records, written into ``directory``; and of a trace of one record (what the command
    needs whatever the trace: Python, numpy, Amaranth's record layouts). Returns
    ``{"spy.decode_peak_mb.raw_2m", "spy.decode_seconds.raw_2m" (wall clock),
    "spy.decode_cpu_seconds.raw_2m", ...summary_1m, ...one_record}``."""
    traces = {
        "raw_2m": lambda: synthetic_trace(raw, seed)[0],
        "summary_1m": lambda: synthetic_summary_trace(summaries, seed),
        "one_record": lambda: synthetic_summary_trace(1, seed),
    }
    figures = {}
    for name, make in traces.items():
        path = os.path.join(directory, f"{name}.pcitrace")
        trace = make()
        write_trace(path, trace.data, trace.metadata)
        del trace
        peak, seconds, cpu = _decode_in_child(path, os.path.join(directory, f"{name}.csv"))
        figures[f"spy.decode_peak_mb.{name}"] = round(peak, 1)
        figures[f"spy.decode_seconds.{name}"] = round(seconds, 2)
        figures[f"spy.decode_cpu_seconds.{name}"] = round(cpu, 2)
    return figures
