# SPDX-License-Identifier: BSD-2-Clause
"""VCD of a raw trace: every bus line at its pin level (active-low lines as on the wire, named
``..._n``) from each record's clock on, for GTKWave or Surfer, at the nominal PCI clock
period (:func:`vcd_clock_period`); clocks the trace does not hold are ``x``
(:func:`write_vcd`). A ``marker`` signal stands beside ``trigger`` and ``violation``; in a
segmented capture the clocks between two segments are ``x``."""

import numpy as np
from vcd import VCDWriter

from pcispy.host.errors import PcispyError, TraceFormatError
from pcispy.pci.bus import ACTIVE_LOW, BusState
from pcispy.spy.format import RecordKind
from pcispy.trace.decode import after_lost_records, is_select_capture, lost_marks, segment_marks

__all__ = ["write_vcd", "vcd_clock_period", "unknown_after", "pin_name",
           "NOMINAL_PCI_PERIODS_PS", "NOMINAL_CLOCK_TOLERANCE"]


def pin_name(line):
    """The VCD name of a bus line: active-low lines (and C/BE#, carried at pin level) end in
    ``_n``."""
    return f"{line}_n" if line in ACTIVE_LOW or line.startswith("cbe") else line


#: The PCI clocks by the names boards report them with (``id.config.clock_mhz``, the trace
#: metadata's ``clock_mhz``) and their periods in ps: the specification gives each by its
#: minimum cycle time Tcyc, 30 ns for "33 MHz" PCI (33.33 MHz) and 15 ns for "66 MHz" PCI
#: (66.67 MHz).
NOMINAL_PCI_PERIODS_PS = {33: 30_000, 66: 15_000}
#: How far a trace's ``clock_mhz`` may be from a nominal PCI clock's frequency and still be
#: that clock: the board reports the nominal name (33 or 66, 1 % below) or the clock it
#: measured (within an oscillator's tolerance of 33.33 or 66.67 MHz).
NOMINAL_CLOCK_TOLERANCE = 0.02


def vcd_clock_period(clock_mhz):
    """The period in ps of one bus clock of a trace whose metadata says ``clock_mhz``: the
    nominal PCI period (:data:`NOMINAL_PCI_PERIODS_PS`) when ``clock_mhz`` is within
    :data:`NOMINAL_CLOCK_TOLERANCE` of a nominal PCI clock (33 or 33.333 -> 30 000 ps, 66
    or 66.667 -> 15 000 ps); else (a bus run slower, e.g. 25 MHz) ``1e6 / clock_mhz``
    rounded to whole ps."""
    for period in NOMINAL_PCI_PERIODS_PS.values():
        if abs(clock_mhz * period / 1e6 - 1) <= NOMINAL_CLOCK_TOLERANCE:
            return period
    return max(1, round(1e6 / clock_mhz))


def unknown_after(trace, times):
    """``(n,) bool`` over the raw records of ``trace`` at clocks ``times``: the clocks from
    the one after the record up to the next record's are not in the trace. That is every
    gap of a ``--select`` capture (the spy left out whatever was on the bus between the
    selected transactions), a gap with an OVERRUN record in it (records lost there) and
    one between two segments of a segmented capture (not recorded). Any other gap is idle
    compression's: idle clocks, as the record before them."""
    gap = np.zeros(len(times), dtype=bool)
    gap[:-1] = times[1:] > times[:-1] + 1
    if is_select_capture(trace):
        return gap
    lost_before_next = np.zeros(len(times), dtype=bool)
    lost_before_next[:-1] = (after_lost_records(trace) | segment_marks(trace, None)[0])[1:]
    return gap & lost_before_next


def write_vcd(trace, out):
    """Write the raw records of ``trace`` to ``out`` (a text stream) as VCD: every line of
    the bus at its pin level, changing at its record's clock edge, plus the spy's
    ``trigger``, ``violation`` and (a capture with ``--markers``) ``marker`` marks (raw
    records' bits). Time unit 1 ps; a clock is
    :func:`vcd_clock_period` of the metadata's ``clock_mhz`` (30 000 ps at 33 MHz).

    Idle clocks left out by idle compression show the record before them (they were idle).
    Clocks the trace does not hold (:func:`unknown_after`: between the transactions of a
    ``--select`` capture, where records were lost, or between two segments) are ``x`` on
    every signal, from the clock after the last record before them to the next record's
    clock."""
    period = vcd_clock_period(trace.metadata["clock_mhz"])
    select = is_select_capture(trace)
    marks = _vcd_marks(trace.metadata)
    lines = [(line, field.width) for line, field in BusState(trace.width, trace.masters)]
    writer = variables = None
    start, overrun, segment = None, False, None
    # The last raw record of the runs before (its changes are written; whether the clocks
    # after it are unknown needs the next record): its index, time, values, lost mark.
    carry = None
    try:
        for first, chunk in trace.chunks():
            all_times = chunk.times(start)
            start = chunk.time_after(all_times)
            lost, overrun = lost_marks(chunk, overrun)
            # The clocks before a segment's first record were not recorded either.
            begins, segment = segment_marks(chunk, segment)
            lost = lost | begins
            raw_at = chunk.indices(RecordKind.RAW)
            if not len(raw_at):
                continue
            raw = chunk.columns(RecordKind.RAW)
            values = []
            for line, bits in lines:
                value = raw[f"bus.{line}"].astype(np.uint64)
                if line in ACTIVE_LOW:
                    value = ~value & np.uint64((1 << bits) - 1)
                values.append(value)
            values += [raw[mark].astype(np.uint64) for mark in marks]
            index, times = first + raw_at, all_times[raw_at]
            if carry is not None:
                index, times, lost, *values = (np.concatenate([[old], new]) for old, new in
                                               zip(carry, [index, times, lost] + values))
            _check_vcd_times(trace, index, times, carry is None)
            if writer is None:
                writer = VCDWriter(out, timescale="1 ps", version="pcispy",
                                   init_timestamp=int(times[0]) * period)
                variables = [writer.register_var(scope, name, "wire", size=bits,
                                                 init=int(value[0]))
                             for (scope, name, bits), value in zip(_vcd_signals(lines, marks),
                                                                   values)]
            _write_vcd_changes(writer, variables, values, times, lost, select, period)
            carry = [index[-1], times[-1], lost[-1]] + [value[-1] for value in values]
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise PcispyError("VCD needs a raw capture; this trace has no raw records")


def _vcd_marks(metadata):
    """The raw record's one-bit marks a VCD of a trace with ``metadata`` shows as signals
    of the ``spy`` scope: ``trigger`` and ``violation``, and ``marker`` when the capture
    stored the trigger input's edges (its ``markers`` setting)."""
    settings = metadata.get("capture")
    markers = isinstance(settings, dict) and settings.get("markers") is True
    return ("trigger", "violation") + (("marker",) if markers else ())


def _vcd_signals(lines, marks):
    """``(scope, name, bits)`` of the VCD's signals: the bus lines, the spy's ``marks``."""
    return ([("pci", pin_name(line), bits) for line, bits in lines] +
            [("spy", mark, 1) for mark in marks])


def _check_vcd_times(trace, index, times, first):
    """Refuse raw records (``index`` in the trace, at ``times``; ``first``: the first is the
    trace's first raw record) whose times go back, as a capture's never do (its times
    start at 0 or later); a damaged file's may."""
    wrong = np.flatnonzero(np.diff(times, prepend=0 if first else times[0]) < 0)
    if len(wrong):
        at = int(index[wrong[0]])
        raise TraceFormatError(
            f"cannot write a VCD: record {at} is at clock {int(times[wrong[0]])}, "
            + (f"before the raw record before it (clock {int(times[wrong[0] - 1])})"
               if wrong[0] else "before clock 0")
            + f"; the trace is damaged at byte offset {trace.offset + at * trace.record_bytes}")


def _write_vcd_changes(writer, variables, values, times, lost, select, period):
    """Write the changes of a run of raw records (the first: the last record of the run
    before, or the trace's first, whose values are written already): each signal that
    changed, at its record's clock; every signal ``x`` from the clock after a record whose
    next clocks are unknown (:func:`unknown_after`: a gap of a ``--select`` capture, or
    one with lost records), and set again at the next record's."""
    gap = np.zeros(len(times), dtype=bool)
    gap[:-1] = times[1:] > times[:-1] + 1
    if select:
        unknown = gap
    else:
        lost_before_next = np.zeros(len(times), dtype=bool)
        lost_before_next[:-1] = lost[1:]
        unknown = gap & lost_before_next
    known_again = np.zeros(len(times), dtype=bool)
    known_again[1:] = unknown[:-1]
    changed = np.zeros(len(times), dtype=bool)
    changes = []
    for value in values:
        moved = known_again.copy()
        moved[1:] |= value[1:] != value[:-1]
        changes.append(moved)
        changed |= moved
    changed[0] = False                      # written already
    for index in np.flatnonzero(changed | unknown):
        if changed[index]:
            stamp = int(times[index]) * period
            for variable, value, moved in zip(variables, values, changes):
                if moved[index]:
                    writer.change(variable, stamp, int(value[index]))
        if unknown[index]:
            stamp = (int(times[index]) + 1) * period
            for variable in variables:
                writer.change(variable, stamp, "x")
