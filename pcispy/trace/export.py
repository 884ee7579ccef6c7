# SPDX-License-Identifier: BSD-2-Clause
"""Exports of transaction summaries (table, CSV, JSON, and pcapng: :mod:`.pcapng`) and of raw
traces (VCD: :mod:`.vcd`); :func:`export` writes any of them.

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
  Wireshark, every summary field in the layout of :mod:`pcispy.trace.pcapng`, time-stamped
  in ns at the nominal PCI clock period (:func:`~.vcd.vcd_clock_period`), for the dissector
  contrib/wireshark/pcispy.lua (:func:`~.pcapng.write_pcapng`).
- VCD shows every bus line of a raw trace at its pin level (active-low lines as on the wire,
  named ``..._n``) from each record's clock on, for GTKWave or Surfer, at the nominal PCI
  clock period (:func:`~.vcd.vcd_clock_period`); clocks the trace does not hold are ``x``
  (:func:`~.vcd.write_vcd`).

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
from rich.console import Console
from rich.table import Table

from pcispy.host.errors import PcispyError
from pcispy.pci.bus import COMMAND_MNEMONICS, TERMINATION_NAMES, Command, DevselSpeed, Termination
from pcispy.spy.format import RecordKind
from pcispy.trace.decode import SUMMARY_DTYPE, iter_summaries, summarise
from pcispy.trace.formats import BINARY_FORMATS, FORMATS
from pcispy.trace.events import (loss_line, losses, note_lines, segment_numbers,
                                 segment_starts, trace_events, without_devsel)
from pcispy.trace.pcapng import write_pcapng
from pcispy.trace.vcd import write_vcd

__all__ = ["CSV_COLUMNS", "TABLE_COLUMNS", "summary_rows", "to_csv", "read_csv",
           "to_json", "trace_json", "summaries_from_json", "write_table", "FORMATS",
           "BINARY_FORMATS", "export", "write_csv", "write_json", "write_trace_json",
           "SEGMENT_COLUMN"]

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
_READS = [Command(code).is_read for code in range(len(Command))]


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


_MASTER_ABORT = Termination.MASTER_ABORT.label


def _devsel_name(devsel, termination):
    """A summary's ``devsel`` field as the JSON has it: the speed's name, or None where
    :func:`without_devsel` (``termination``: the field's value)."""
    if without_devsel(termination, devsel):
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


def _warn_on_stderr(line):
    print(f"pcispy: warning: {line}", file=sys.stderr)


def export(trace, fmt, out, latency_timer=None, warn=_warn_on_stderr):
    """Write ``trace`` (:class:`~pcispy.trace.records.Trace`) to the text stream ``out`` in
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
    lost = loss_line(losses(trace, events))
    if lost:
        warn(lost)
    return count
