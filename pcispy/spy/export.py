# SPDX-License-Identifier: BSD-2-Clause
"""Exports of transaction summaries (table, CSV, JSON, pcapng) and of raw traces (VCD).

- The table has the columns of Pamette Figure 3 (Trans, Addr, R/W, Lgth, Dur, Lat, delta
  cycle#) plus the command, wait states, termination and data; it is drawn with ``rich`` on
  a terminal and as plain aligned text otherwise.
- CSV columns are :data:`CSV_COLUMNS`: addresses and data in hex with ``0x``, ``cmd`` a
  :data:`~pcispy.pci.bus.COMMAND_MNEMONICS` name, ``rw`` R or W, ``len`` data
  phases, ``dur``/``lat``/``wait``/``delta`` in clocks (``wait`` = initiator + target wait
  states, ``delta`` = clocks from the previous transaction's start), ``term`` a
  :data:`~pcispy.pci.bus.TERMINATION_NAMES` name.
- JSON holds every field of every summary (enums by name; ``devsel`` null for a master
  abort, which no target claimed) and reads back losslessly, and beside them
  ``lost``/``overruns`` and the ``events`` (:func:`trace_events`).
- pcapng (bytes, not text: :data:`BINARY_FORMATS`) holds one packet per transaction for
  Wireshark, every summary field in the layout of :mod:`pcispy.spy.pcapng`, time-stamped
  in ns at the nominal PCI clock period (:func:`vcd_clock_period`), for the dissector
  contrib/wireshark/pcispy.lua (:func:`write_pcapng`).
- VCD shows every bus line of a raw trace at its pin level (active-low lines as on the wire,
  named ``..._n``) from each record's clock on, for GTKWave or Surfer, at the nominal PCI
  clock period (:func:`vcd_clock_period`); clocks the trace does not hold are ``x``
  (:func:`write_vcd`).

Nothing lost is left unsaid: records the spy could not store (metadata
``lost``/``overruns``, OVERRUN records) get a line under the table, a warning on standard
error beside a CSV, VCD or pcapng (whose formats have no room for it, or none a reader
shows unasked), and fields in the JSON; in a pcapng the lines under the table are the
section's comments too and a transaction after lost records carries a flag. The trigger,
protocol violations and the trigger input's markers get a line under the table (and so a
pcapng comment) and their events in the JSON; VCD has a ``marker`` signal beside
``trigger`` and ``violation``.

A segmented capture (metadata ``segments``) adds a line per segment under the table
(its trigger clock and records), a ``Seg`` column to the table, a ``segment`` column to
the CSV and a ``segment`` to every JSON transaction and event (:func:`segment_starts`);
in a VCD the clocks between two segments are ``x``.
"""

import csv
import io
import json
import sys

import numpy as np
from vcd import VCDWriter

from pcispy import __version__
from pcispy.pci.bus import (ACTIVE_LOW, COMMAND_MNEMONICS, TERMINATION_NAMES, BusState,
                                     Command, DevselSpeed, Termination)
from pcispy.spy import pcapng
from pcispy.spy.format import CaptureMode, RecordKind, TriggerSource
from pcispy.trace.decode import (SUMMARY_DTYPE, lost_marks, after_lost_records,
                               is_select_capture, iter_summaries, segment_marks, summarise)
from pcispy.trace.file import Trace
from pcispy.host.errors import PcispyError, TraceFormatError
from pcispy.spy.checker import RULES

__all__ = ["CSV_COLUMNS", "TABLE_COLUMNS", "summary_rows", "to_csv", "read_csv",
           "to_json", "trace_json", "summaries_from_json", "write_table", "write_vcd",
           "vcd_clock_period", "unknown_after", "NOMINAL_PCI_PERIODS_PS", "pin_name",
           "trace_events", "losses", "note_lines", "pcapng_packets", "lost_before",
           "write_pcapng", "FORMATS", "BINARY_FORMATS", "export", "write_csv", "write_json",
           "write_trace_json", "SEGMENT_COLUMN", "segment_starts", "segment_numbers",
           "segment_lines"]

#: The CSV header, in order.
CSV_COLUMNS = ("trans", "time", "addr", "cmd", "rw", "len", "dur", "lat", "wait", "term",
               "data", "delta")

#: Table headings and the row key each shows (Pamette Figure 3's first, then ours).
TABLE_COLUMNS = (("Trans", "trans"), ("Addr", "addr"), ("R/W", "rw"), ("Lgth", "len"),
                 ("Dur", "dur"), ("Lat", "lat"), ("delta cycle#", "delta"), ("Cmd", "cmd"),
                 ("Wait", "wait"), ("Term", "term"), ("Data", "data"))

#: The column (CSV; ``Seg`` in the table) and JSON key of a segmented capture's segment.
SEGMENT_COLUMN = "segment"

_MNEMONIC_COMMANDS = {name: command for command, name in COMMAND_MNEMONICS.items()}
_NAMED_TERMINATIONS = {name: term for term, name in TERMINATION_NAMES.items()}
_HEX = ("addr", "data")


def _hex(value, digits=8):
    return f"0x{value:0{digits}x}"


def _address_digits(address):
    return 16 if address >> 32 else 8


def summary_rows(summaries, first=1, previous=None, segments=None):
    """One ``{column: value}`` per summary with the CSV columns, typed (ints, and strings for
    ``cmd``, ``rw``, ``term``); ``trans`` counts from ``first`` (1), ``delta`` from the
    timestamp ``previous`` (None: the first summary's delta is 0), so that the rows of a
    trace's summaries taken a part at a time are those of the whole. ``segments``
    (:func:`segment_starts`): each row has the :data:`SEGMENT_COLUMN` too."""
    starts = summaries["timestamp"].astype(np.int64)
    deltas = np.diff(starts, prepend=starts[:1] if previous is None else [previous])
    numbers = segment_numbers(summaries, segments)
    rows = []
    for number, (record, delta) in enumerate(zip(summaries, deltas), start=first):
        command = Command(int(record["command"]))
        rows.append({} if numbers is None else {SEGMENT_COLUMN: int(numbers[number - first])})
        rows[-1].update({
            "trans": number,
            "time": int(record["timestamp"]),
            "addr": int(record["address"]),
            "cmd": command.mnemonic,
            "rw": "R" if command.is_read else "W",
            "len": int(record["data_phases"]),
            "dur": int(record["duration"]),
            "lat": int(record["latency"]),
            "wait": int(record["initiator_wait"]) + int(record["target_wait"]),
            "term": Termination(int(record["termination"])).label,
            "data": int(record["first_data"]),
            "delta": int(delta),
        })
    return rows


def segment_starts(trace):
    """``(segment numbers, clocks)`` of a segmented capture (metadata ``segments``): each
    segment that holds records (its ``index``) and the clock of its first record, in
    capture order; None for a capture of one segment. A segment is re-armed after the one
    before it ends, so its records are later than that one's: a transaction is of the last
    segment that starts at or before its clock (:func:`segment_numbers`)."""
    segments = trace.metadata.get("segments")
    if not segments:
        return None
    numbers, clocks = [], []
    for position, segment in enumerate(segments):
        first = segment["first_record"]
        if not segment["records"] or first >= len(trace):
            continue
        # A segment's first record is timed by itself: its timestamp, or (raw) its delta
        # from the segment's start.
        alone = Trace(trace.metadata, trace.data[first:first + 1],
                      trace.offset + first * trace.record_bytes, first=first)
        numbers.append(segment.get("index", position))
        clocks.append(int(alone.times(segment["start_timestamp"])[0]))
    return np.asarray(numbers, dtype=np.int64), np.asarray(clocks, dtype=np.int64)


def segment_numbers(summaries, segments):
    """The segment of each of ``summaries`` (``segments``: :func:`segment_starts`; None
    gives None)."""
    if segments is None:
        return None
    numbers, clocks = segments
    if not len(numbers):
        return np.zeros(len(summaries), dtype=np.int64)
    at = np.searchsorted(clocks, summaries["timestamp"].astype(np.int64), side="right") - 1
    return numbers[np.maximum(at, 0)]


def segment_lines(trace):
    """A line per segment of a segmented capture (the lines under the table): its number,
    its trigger's clock (or that it did not trigger) and its records."""
    lines = []
    for position, segment in enumerate(trace.metadata.get("segments") or ()):
        number = segment.get("index", position)
        triggered = segment.get("triggered", True) and "trigger_timestamp" in segment
        trigger = (f"trigger at clock {segment['trigger_timestamp']}" if triggered
                   else "not triggered")
        count = segment["records"]
        lines.append(f"segment {number}: {trigger}, {count} record{'s' if count != 1 else ''}"
                     f" from record {segment['first_record']}")
    return lines


def _text(row, column):
    value = row[column]
    if column == "addr":
        return _hex(value, _address_digits(value))
    if column == "data":
        return _hex(value)
    return str(value)


def to_csv(summaries):
    """CSV text of ``summaries`` (header :data:`CSV_COLUMNS`)."""
    out = io.StringIO()
    write_csv([summaries], out)
    return out.getvalue()


#: Summaries turned into Python rows at a time (a row is a dict of some 1 KB).
_ROWS_AT_ONCE = 4096
#: Summaries turned into CSV lines at a time (some 500 bytes of Python objects each).
_CSV_ROWS_AT_ONCE = 16384


def _slices(parts, most):
    """The non-empty arrays of ``parts`` cut into slices of at most ``most``."""
    for part in parts:
        for at in range(0, len(part), most):
            yield part[at:at + most]


def _numbered(parts, segments=None):
    """``(rows of summary_rows, summaries)`` of at most :data:`_ROWS_AT_ONCE` summaries at a
    time from the arrays of ``parts`` (consecutive summaries of one trace), numbered and
    timed across them (``segments``: as for :func:`summary_rows`)."""
    first, previous = 1, None
    for summaries in _slices(parts, _ROWS_AT_ONCE):
        yield summary_rows(summaries, first, previous, segments), summaries
        first += len(summaries)
        previous = int(summaries["timestamp"][-1])


#: Command mnemonics and termination labels by code (no CSV quoting needed: no comma,
#: quote or line break in any).
_MNEMONICS = [Command(code).mnemonic for code in range(len(Command))]
_LABELS = {term.value: term.label for term in Termination}


def write_csv(parts, out, segments=None):
    """Write the CSV of the summaries in ``parts`` (an iterable of arrays, e.g.
    :func:`~pcispy.trace.decode.iter_summaries`) to ``out`` as they come; returns how many.
    The text is what :mod:`csv` writes of the rows of :func:`summary_rows`, made column by
    column (a few times faster than a dict per row); ``segments``
    (:func:`segment_starts`): a last column :data:`SEGMENT_COLUMN`."""
    out.write(",".join(CSV_COLUMNS + ((SEGMENT_COLUMN,) if segments is not None else ()))
              + "\n")
    first, previous = 1, None
    for summaries in _slices(parts, _CSV_ROWS_AT_ONCE):
        starts = summaries["timestamp"].astype(np.int64)
        deltas = np.diff(starts, prepend=starts[:1] if previous is None else [previous])
        address = summaries["address"].tolist()
        lines = [
            f"{trans},{time},0x{addr:0{16 if addr >> 32 else 8}x},{_MNEMONICS[cmd]},"
            f"{'R' if _READS[cmd] else 'W'},{phases},{duration},{latency},{wait},"
            f"{_LABELS[term]},0x{data:08x},{delta}"
            for trans, time, addr, cmd, phases, duration, latency, wait, term, data, delta
            in zip(range(first, first + len(summaries)), starts.tolist(), address,
                   summaries["command"].tolist(), summaries["data_phases"].tolist(),
                   summaries["duration"].tolist(), summaries["latency"].tolist(),
                   (summaries["initiator_wait"].astype(np.int64) +
                    summaries["target_wait"]).tolist(),
                   summaries["termination"].tolist(), summaries["first_data"].tolist(),
                   deltas.tolist())]
        if segments is not None:
            lines = [f"{line},{number}" for line, number in
                     zip(lines, segment_numbers(summaries, segments).tolist())]
        out.write("\n".join(lines) + "\n")
        first += len(summaries)
        previous = int(starts[-1])
    return first - 1


def read_csv(text):
    """The rows of a CSV export, typed as :func:`summary_rows` gives them (with the
    :data:`SEGMENT_COLUMN` when the CSV has it)."""
    reader = csv.reader(io.StringIO(text))
    header = tuple(next(reader, ()))
    if header not in (CSV_COLUMNS, CSV_COLUMNS + (SEGMENT_COLUMN,)):
        raise PcispyError(f"not a pcispy CSV export: header {','.join(header)!r}")
    rows = []
    for line, fields in enumerate(reader, start=2):
        if len(fields) != len(header):
            raise PcispyError(f"CSV line {line}: {len(fields)} fields, expected "
                              f"{len(header)}")
        row = {}
        for column, text in zip(header, fields):
            if column in ("cmd", "rw", "term"):
                row[column] = text
            else:
                try:
                    row[column] = int(text, 16 if column in _HEX else 10)
                except ValueError:
                    raise PcispyError(f"CSV line {line}: {column} {text!r} is not a "
                                      "number") from None
        rows.append(row)
    return rows


def _rule_names(mask):
    """The checker rule names of the bits set in ``mask`` (``rule N`` for an id this
    gateware does not have: a damaged or newer file)."""
    names = {rule.id: rule.name for rule in RULES}
    return [names.get(bit, f"rule {bit}") for bit in range(64) if mask >> bit & 1]


def trace_events(trace):
    """What a trace holds besides bus cycles and transactions, in capture order: one dict
    per event record (OVERRUN, TRIGGER, VIOLATION, and any other kind format.py declares
    besides WRAP, which is only a time base, with its fields as numbers) and per
    raw record marked as the trigger, with a violation or with a marker. Keys: ``kind``
    (``overrun``, ``trigger``, ``violation``, ``marker``), ``time`` (clock); ``lost``
    (overrun: records dropped before it); ``source`` (a TRIGGER record's
    :class:`TriggerSource` name); ``rules`` (violation: checker rule names; a raw record
    names its lowest, ``more_rules`` says whether others fired in that clock too) and
    ``clocks`` (a VIOLATION record: the clocks merged into it); ``edge`` (marker:
    ``rising`` or ``falling``; a raw record's marker bit has the capture's ``edge``
    setting, none when the metadata lacks it) and ``edges`` (marker: the edges merged into
    it); ``segment`` (a segmented capture: the segment's ``index``)."""
    found, start = [], None
    segments = trace.metadata.get("segments")
    for first, chunk in trace.chunks():
        times = chunk.times(start)
        start = chunk.time_after(times)
        events = _chunk_events(chunk, times)
        if segments and events:
            where = chunk.segment_of([first + index for index, _ in events])
            for (_, event), position in zip(events, where.tolist()):
                event["segment"] = segments[position].get("index", position)
        found += [(first + index, event) for index, event in events]
    return [event for _, event in sorted(found, key=lambda item: item[0])]


def _marker_edge(metadata):
    """The edge a raw record's marker bit stands for: the capture's ``edge`` setting
    (``rising`` or ``falling``), None when the metadata does not say."""
    settings = metadata.get("capture")
    edge = settings.get("edge") if isinstance(settings, dict) else None
    return edge if edge in ("rising", "falling") else None


#: Record kinds that are no event: bus records, and WRAP records (only a time base).
_NOT_EVENTS = (RecordKind.EMPTY, RecordKind.RAW, RecordKind.SUMMARY, RecordKind.WRAP)


def _chunk_events(trace, times):
    """``[(index, event)]`` of :func:`trace_events` in a run of records at ``times``."""
    found = []
    for kind in RecordKind:
        where = trace.indices(kind)
        if kind in _NOT_EVENTS or not len(where):
            continue
        for index, record in zip(where, trace.records(kind)):
            event = {"kind": kind.name.lower(), "time": int(times[index])}
            if kind is RecordKind.OVERRUN:
                event["lost"] = int(record["lost"])
            elif kind is RecordKind.TRIGGER:
                event["source"] = TriggerSource(int(record["source"])).name.lower()
            elif kind is RecordKind.VIOLATION:
                event.update(rules=_rule_names(int(record["rules"])),
                             clocks=int(record["clocks"]))
            elif kind is RecordKind.MARKER:
                event.update(edge="falling" if record["falling"] else "rising",
                             edges=int(record["edges"]))
            else:
                # Any other event record: its fields as numbers.
                event.update({name: int(record[name]) for name in record.dtype.names
                              if name not in ("kind", "timestamp")})
            found.append((int(index), event))
    raw_at = trace.indices(RecordKind.RAW)
    if len(raw_at):
        marks = trace.columns(RecordKind.RAW, ["trigger", "violation", "rule", "many_rules",
                                               "marker"])
        marked = np.flatnonzero(marks["trigger"] | marks["violation"] | marks["marker"])
        edge = _marker_edge(trace.metadata)
        for at in marked:
            index = int(raw_at[at])
            if marks["trigger"][at]:
                found.append((index, {"kind": "trigger", "time": int(times[index])}))
            if marks["violation"][at]:
                found.append((index, {"kind": "violation", "time": int(times[index]),
                                      "rules": _rule_names(1 << int(marks["rule"][at])),
                                      "more_rules": bool(marks["many_rules"][at])}))
            if marks["marker"][at]:
                marker = {"kind": "marker", "time": int(times[index])}
                if edge is not None:
                    marker["edge"] = edge
                found.append((index, dict(marker, edges=1)))
    return found


def losses(trace, events):
    """``{"lost", "overruns", "at"}``: records the spy dropped, in how many overruns, and the
    clocks of the OVERRUN records the trace holds. The counts are the board's (metadata),
    or what the OVERRUN records say where that is more (a trace built without the board's
    counts)."""
    overruns = [event for event in events if event["kind"] == "overrun"]
    return {"lost": max(trace.metadata["lost"], sum(event["lost"] for event in overruns)),
            "overruns": max(trace.metadata["overruns"], len(overruns)),
            "at": [event["time"] for event in overruns]}


def _clocks(times, most=8):
    shown = ", ".join(str(time) for time in times[:most])
    more = f", ... ({len(times)} in all)" if len(times) > most else ""
    return f"clock{'s' if len(times) > 1 else ''} {shown}{more}"


def _loss_line(lost):
    if not lost["lost"] and not lost["overruns"]:
        return None
    where = f" at {_clocks(lost['at'])}" if lost["at"] else ""
    return (f"{lost['lost']} records lost in {lost['overruns']} overrun"
            f"{'s' if lost['overruns'] != 1 else ''} (the spy's trace writer fell behind the "
            f"bus){where}: transactions around them are missing or left out")


def note_lines(trace, events):
    """The lines printed under the table: records lost (see :func:`losses`), the segments
    (:func:`segment_lines`), the trigger, the markers (how many, by edge, and their clocks)
    and the protocol violations by rule (how often, from which clock)."""
    lines = []
    lost = _loss_line(losses(trace, events))
    if lost:
        lines.append(lost)
    lines += segment_lines(trace)
    for event in events:
        if event["kind"] == "trigger":
            source = f" ({event['source']})" if "source" in event else ""
            lines.append(f"trigger at clock {event['time']}{source}")
    seen = {}
    for event in events:
        if event["kind"] == "violation":
            for rule in event["rules"]:
                seen.setdefault(rule, []).append(event["time"])
    markers = {}                            # edge -> [edges merged, clocks]
    for event in events:
        if event["kind"] == "marker":
            seen_edge = markers.setdefault(event.get("edge"), [0, []])
            seen_edge[0] += event.get("edges", 1)
            seen_edge[1].append(event["time"])
    for edge, (edges, times) in markers.items():
        which = f"{edge} edge" if edge else "edge"
        merged = f" ({edges} edges)" if edges != len(times) else ""
        lines.append(f"{len(times)} marker{'s' if len(times) != 1 else ''} (trigger input "
                     f"{which}{'s' if len(times) != 1 else ''}){merged} at {_clocks(times)}")
    if seen:
        lines.append("protocol violations: " + "; ".join(
            f"{rule} x{len(times)} from clock {times[0]}" for rule, times in seen.items()))
    return lines


_MASTER_ABORT = Termination.MASTER_ABORT.label


def _without_devsel(termination, devsel):
    """Whether summaries (``termination`` and ``devsel`` values, scalars or arrays) have no
    DEVSEL# timing: a master abort (no target claimed it) with the 0 the spy and the decoder
    write there. A master abort with another value keeps it, so that every record reads
    back."""
    return (termination == Termination.MASTER_ABORT.value) & (devsel == 0)


def _devsel_name(devsel, termination):
    """A summary's ``devsel`` field as the JSON has it: the speed's name, or None where
    :func:`_without_devsel` (``termination``: the field's value)."""
    if _without_devsel(termination, devsel):
        return None
    return DevselSpeed(devsel).name.lower()


def to_json(summaries, metadata=None, events=None, lost=None, segments=None):
    """A JSON-able object: ``metadata``, ``lost`` and ``overruns`` (:func:`losses`; from the
    metadata when not given), ``events`` (:func:`trace_events`), and one object per
    transaction holding every summary field (``command``, ``termination``, ``devsel`` by
    name; ``devsel`` null for a master abort, which no target claimed) and the CSV's
    derived columns (with ``segments``, :func:`segment_starts`: its ``segment``)."""
    document = _json_head(metadata, events, lost)
    document["transactions"] = _transactions(summary_rows(summaries, segments=segments),
                                             summaries)
    return document


def _json_head(metadata, events, lost):
    """:func:`to_json`'s object without its transactions."""
    metadata = metadata or {}
    if lost is None:
        lost = {"lost": metadata.get("lost", 0), "overruns": metadata.get("overruns", 0)}
    return {"metadata": metadata, "lost": lost["lost"], "overruns": lost["overruns"],
            "events": events or []}


def _transactions(rows, summaries):
    """The transaction objects of :func:`to_json` of ``summaries`` and their ``rows``."""
    transactions = []
    for row, record in zip(rows, summaries):
        item = {name: int(record[name]) for name in SUMMARY_DTYPE.names if name != "kind"}
        item["devsel"] = _devsel_name(item["devsel"], item["termination"])
        item["command"] = row["cmd"]
        item["termination"] = row["term"]
        item.update(trans=row["trans"], rw=row["rw"], wait=row["wait"], delta=row["delta"])
        if SEGMENT_COLUMN in row:
            item[SEGMENT_COLUMN] = row[SEGMENT_COLUMN]
        transactions.append(item)
    return transactions


def write_json(parts, out, metadata=None, events=None, lost=None, segments=None):
    """Write ``json.dumps(to_json(...), indent=1)`` and a newline to ``out``, the summaries
    coming in ``parts`` (an iterable of arrays) and written as they come; returns how many
    transactions."""
    head = json.dumps(dict(_json_head(metadata, events, lost), transactions=[]), indent=1)
    empty = '"transactions": []\n}'
    out.write(head[:-len(empty)] + '"transactions": [')
    count = 0
    for rows, summaries in _numbered(parts, segments):
        for item in _transactions(rows, summaries):
            text = json.dumps(item, indent=1).replace("\n", "\n  ")
            out.write(("," if count else "") + "\n  " + text)
            count += 1
    out.write(("\n ]" if count else "]") + "\n}\n")
    return count


def trace_json(trace, latency_timer=None):
    """:func:`to_json` of a whole trace: its summaries (a raw trace decoded in software),
    metadata, losses and events."""
    events = trace_events(trace)
    return to_json(summarise(trace, latency_timer), trace.metadata, events,
                   losses(trace, events), segment_starts(trace))


def write_trace_json(trace, out, latency_timer=None, chunk_records=None):
    """Write :func:`trace_json` of ``trace`` to ``out`` (as :func:`write_json` does), a run
    of records at a time; returns the number of transactions."""
    events = trace_events(trace)
    return write_json(iter_summaries(trace, latency_timer, chunk_records), out,
                      trace.metadata, events, losses(trace, events), segment_starts(trace))


def summaries_from_json(document):
    """The summaries of a :func:`to_json` object, as a :data:`SUMMARY_DTYPE` array."""
    try:
        items = document["transactions"]
        out = np.zeros(len(items), dtype=SUMMARY_DTYPE)
        out["kind"] = RecordKind.SUMMARY.value
        for index, item in enumerate(items):
            for name in SUMMARY_DTYPE.names:
                if name == "kind":
                    continue
                value = item[name]
                if name == "command":
                    value = _MNEMONIC_COMMANDS[value].value
                elif name == "termination":
                    value = _NAMED_TERMINATIONS[value].value
                elif name == "devsel" and value is None:
                    if item["termination"] != _MASTER_ABORT:
                        raise ValueError(f"devsel null for a {item['termination']} (only "
                                         "a master abort has no DEVSEL#)")
                    value = 0
                elif name == "devsel":
                    value = DevselSpeed[value.upper()].value
                out[index][name] = value
    except (KeyError, TypeError, AttributeError, OverflowError, ValueError) as error:
        raise PcispyError(f"not a pcispy JSON export ({type(error).__name__}: {error})") \
            from None
    return out


def write_table(summaries, out, use_rich=None, notes=(), segments=None):
    """Print the table to ``out``, then the ``notes`` lines (:func:`note_lines`) under it;
    ``use_rich`` defaults to whether ``out`` is a terminal; ``segments``
    (:func:`segment_starts`): a first column ``Seg``."""
    columns = ((("Seg", SEGMENT_COLUMN),) if segments is not None else ()) + TABLE_COLUMNS
    rows = [[_text(row, key) for _, key in columns]
            for row in summary_rows(summaries, segments=segments)]
    headings = [heading for heading, _ in columns]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headings)]
    terminal = hasattr(out, "isatty") and out.isatty()
    if use_rich is None:
        use_rich = terminal
    if use_rich:
        from rich.console import Console
        from rich.table import Table
        table = Table(*headings)
        for column in table.columns[:-1]:
            column.justify = "right"
        for row in rows:
            table.add_row(*row)
        # Off a terminal rich would assume 80 columns and cut cells: give it the full width.
        width = None if terminal else sum(widths) + 3 * len(widths) + 1
        console = Console(file=out, width=width)
        console.print(table)
        for line in notes:
            console.print(line, markup=False, highlight=False)
        return
    for row in [headings] + rows:
        out.write("  ".join(cell.rjust(width) for cell, width in zip(row, widths)).rstrip()
                  + "\n")
    for line in notes:
        out.write(line + "\n")


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


#: The packet fields of :mod:`pcispy.spy.pcapng` that are a summary field as it is.
_PACKET_SUMMARY_FIELDS = {
    "cmd": "command", "term": "termination", "be": "first_be", "master": "master",
    "clock": "timestamp", "addr": "address", "data": "first_data", "len": "data_phases",
    "dur": "duration", "lat": "latency", "iwait": "initiator_wait",
    "twait": "target_wait", "filters": "filters",
}
#: Whether each command code reads (``rw`` 1) or writes (0).
_READS = np.array([Command(code).is_read for code in range(len(Command))])


def pcapng_packets(summaries, lost, first=1):
    """The pcapng packets (:data:`~pcispy.spy.pcapng.PACKET_DTYPE`) of ``summaries``,
    numbered from ``first``; ``lost``: ``(n,) bool``, records were lost before each
    transaction (:func:`lost_before`)."""
    packets = np.zeros(len(summaries), dtype=pcapng.PACKET_DTYPE)
    packets["version"] = pcapng.PACKET_VERSION
    packets["trans"] = np.arange(first, first + len(summaries))
    for packet_field, summary_field in _PACKET_SUMMARY_FIELDS.items():
        packets[packet_field] = summaries[summary_field]
    packets["rw"] = _READS[summaries["command"]]
    packets["devsel"] = np.where(_without_devsel(summaries["termination"],
                                                 summaries["devsel"]),
                                 pcapng.DEVSEL_NONE, summaries["devsel"])
    # Every flag but lost_before is the summary's one-bit field of its name.
    flags = {"lost_before": np.asarray(lost, dtype=bool)}
    for name, mask, *_ in pcapng.PACKET_FLAGS:
        bits = flags[name] if name in flags else summaries[name].astype(bool)
        packets["flags"] |= np.where(bits, mask, 0).astype(np.uint8)
    return packets


def lost_before(trace, summaries):
    """``(n,) bool`` over ``summaries`` of ``trace`` (:func:`~pcispy.trace.decode.summarise`):
    records were lost between the transaction and the one before it (the first: before it).
    A summary capture knows where its OVERRUN records stand among its summaries; a raw
    capture decodes anew after each (:func:`~pcispy.trace.decode.after_lost_records`), so a
    transaction is marked when it is the first to start from such a record's clock on."""
    marks = _LostBefore(trace)
    return marks(summaries)


class _LostBefore:
    """:func:`lost_before` of the summaries of ``trace`` taken a part at a time, in order:
    each call marks the next part."""
    def __init__(self, trace):
        self.trace = trace
        if trace.mode is CaptureMode.SUMMARY:
            self.runs = trace.chunks()
            self.overrun = False
            self.pending = np.zeros(0, dtype=bool)
        else:
            # The clocks where decoding started again after lost records (one per
            # overrun at most).
            restarts, start, overrun = [], None, False
            for _, chunk in trace.chunks():
                times = chunk.times(start)
                start = chunk.time_after(times)
                lost, overrun = lost_marks(chunk, overrun)
                restarts.append(times[chunk.indices(RecordKind.RAW)][lost])
            self.restarts = np.sort(np.concatenate(restarts)) if restarts else \
                np.zeros(0, np.int64)
            self.before = 0

    def __call__(self, summaries):
        if self.trace.mode is CaptureMode.SUMMARY:
            # A summary is marked when an OVERRUN record comes between it and the summary
            # before it: the marks of the summary records, run by run.
            while len(self.pending) < len(summaries):
                _, chunk = next(self.runs)
                lost, self.overrun = lost_marks(chunk, self.overrun, RecordKind.SUMMARY)
                self.pending = np.concatenate([self.pending, lost])
            marks, self.pending = self.pending[:len(summaries)], self.pending[len(summaries):]
            return marks
        before = np.searchsorted(self.restarts, summaries["timestamp"].astype(np.int64),
                                 side="right")
        marks = np.diff(before, prepend=self.before) > 0
        if len(before):
            self.before = int(before[-1])
        return marks


def write_pcapng(trace, out, latency_timer=None, events=None,
                 chunk_records=None):
    """Write the transactions of ``trace`` to the binary stream ``out`` as pcapng
    (:mod:`pcispy.spy.pcapng`): a packet each (:func:`pcapng_packets`), time-stamped at
    :func:`vcd_clock_period` of the metadata's ``clock_mhz``, and the lines under the table
    (:func:`note_lines`; ``events``: :func:`trace_events`, found when not given) as the
    section's comments; decoded and written a run of ``chunk_records`` records at a time.
    Returns the number of transactions."""
    events = trace_events(trace) if events is None else events
    clock_mhz = trace.metadata["clock_mhz"]
    period = vcd_clock_period(clock_mhz)
    marks = _LostBefore(trace)
    count = [0]

    def parts():
        for summaries in iter_summaries(trace, latency_timer, chunk_records):
            packets = pcapng_packets(summaries, marks(summaries), count[0] + 1)
            count[0] += len(summaries)
            yield packets, pcapng.nanoseconds(summaries["timestamp"], period)
    pcapng.write_pcapng_parts(
        out, parts(), name="pcispy",
        description=f"transactions of a {trace.width}-bit PCI bus at {clock_mhz:g} MHz "
                    f"({period} ps a clock)",
        comments=note_lines(trace, events), application=f"pcispy {__version__}")
    return count[0]


class _BytesAsText:
    """A binary stream over a text stream that has no byte buffer (``io.StringIO``): each
    byte is written as the character of its code point (latin-1), which
    ``.encode("latin-1")`` turns back into the bytes."""
    def __init__(self, text):
        self.text = text

    def write(self, data):
        """Write ``data`` (bytes) as characters."""
        return self.text.write(bytes(data).decode("latin-1"))


def _byte_stream(out):
    """``out`` to write bytes to: a binary stream as it is, a text stream's byte buffer
    (flushed first: ``sys.stdout``), else :class:`_BytesAsText`."""
    if not isinstance(out, io.TextIOBase):
        return out
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        return _BytesAsText(out)
    out.flush()
    return buffer


#: The formats :func:`export` writes.
FORMATS = ("table", "csv", "json", "vcd", "pcapng")
#: Those of them that are bytes, not text (a file for them is opened in binary mode).
BINARY_FORMATS = ("pcapng",)


def _warn_on_stderr(line):
    print(f"pcispy: warning: {line}", file=sys.stderr)


def export(trace, fmt, out, latency_timer=None, warn=_warn_on_stderr):
    """Write ``trace`` (:class:`~pcispy.trace.file.Trace`) to the text stream ``out`` in
    ``fmt`` (one of :data:`FORMATS`): its summaries (a raw trace is decoded in software), or
    for ``vcd`` its raw bus cycles. A format of :data:`BINARY_FORMATS` takes a binary stream
    or a text stream's byte buffer (see :func:`_byte_stream`). Records lost go under the
    table, into the JSON, and for CSV, VCD and pcapng (which keep their formats) to ``warn``
    (a callable taking one line; default: standard error). Returns the number of
    transactions or raw records."""
    if fmt not in FORMATS:
        raise PcispyError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")
    if fmt == "json":
        return write_trace_json(trace, out, latency_timer)
    events = trace_events(trace)
    if fmt == "vcd":
        write_vcd(trace, out)
        count = len(trace.indices(RecordKind.RAW))
    elif fmt == "table":
        summaries = summarise(trace, latency_timer)
        write_table(summaries, out, notes=note_lines(trace, events),
                    segments=segment_starts(trace))
        return len(summaries)
    elif fmt == "pcapng":
        count = write_pcapng(trace, _byte_stream(out), latency_timer, events)
    else:
        count = write_csv(iter_summaries(trace, latency_timer), out, segment_starts(trace))
    lost = _loss_line(losses(trace, events))
    if lost:
        warn(lost)
    return count
