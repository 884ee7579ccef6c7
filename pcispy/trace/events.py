# SPDX-License-Identifier: BSD-2-Clause
"""What a trace says beside its bus cycles and transactions, for every export: its events
(trigger, overrun, violation, marker records and the raw records' marks), the records it
lost, a segmented capture's segments, and the lines printed under the table (which a pcapng
holds as comments)."""

import numpy as np

from pcispy.pci.bus import Termination
from pcispy.pci.rules import RULES
from pcispy.spy.format import RecordKind, TriggerSource
from pcispy.trace.records import Trace

__all__ = ["trace_events", "losses", "loss_line", "note_lines", "segment_starts",
           "segment_numbers", "segment_lines", "without_devsel"]


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


def loss_line(lost):
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
    lost = loss_line(losses(trace, events))
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


def without_devsel(termination, devsel):
    """Whether summaries (``termination`` and ``devsel`` values, scalars or arrays) have no
    DEVSEL# timing: a master abort (no target claimed it) with the 0 the spy and the decoder
    write there. A master abort with another value keeps it, so that every record reads
    back."""
    return (termination == Termination.MASTER_ABORT.value) & (devsel == 0)
