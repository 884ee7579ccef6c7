# SPDX-License-Identifier: BSD-2-Clause
"""Segmented captures and markers in the host's reading of a trace: a raw trace's time
restarting at each segment, no transaction joined across two segments, the segments and
the trigger input's markers in every export (table, CSV, JSON, VCD, pcapng) and in
``pcispy decode``, and decoding a run of records at a time still giving what decoding the
whole gives."""

import io
import json

import numpy as np
import pytest
from vcdvcd import VCDVCD

from pcispy.app.cli import main
from pcispy.pci.bus import Command
from pcispy.trace import pcapng
from pcispy.trace.decode import _synthetic_clocks, iter_summaries, raw_records, summarise
from pcispy.trace.events import note_lines, segment_starts, trace_events
from pcispy.trace.export import export, read_csv, summary_rows, trace_json
from pcispy.trace.tests.test_bounded_decode import _exports
from pcispy.spy.format import MarkerEvent, RawRecord, SummaryRecord, TriggerEvent, WrapEvent
from pcispy.trace.file import (TraceFormatError, pack_records, parse_trace, trace_bytes,
                                  write_trace)

pytestmark = pytest.mark.spy

MW = Command.MEM_WRITE.value


def _write(address, data):
    """A single-word memory write: address phase, data phase, then an idle clock."""
    return [dict(frame=1, ad=address, cbe=MW), dict(irdy=1, trdy=1, devsel=1, ad=data),
            {}]


def _segment(first, records, start, trigger=0):
    return {"index": None, "first_record": first, "records": records, "start": 0,
            "trigger_index": 0, "trigger_timestamp": trigger, "triggered": bool(trigger),
            "start_timestamp": start, "time_base": "trigger"}


def _table(*entries):
    """The ``segments`` metadata of ``(records, start_timestamp, trigger)`` entries."""
    table, first = [], 0
    for index, (records, start, trigger) in enumerate(entries):
        table.append(dict(_segment(first, records, start, trigger), index=index))
        first += records
    return table


def _raw(records, segments=None, **metadata):
    meta = {"mode": "raw", "raw_time_offset": 1, **metadata}
    if segments is not None:
        meta["segments"] = segments
        meta.setdefault("start_timestamp", segments[0]["start_timestamp"])
    return parse_trace(trace_bytes(np.concatenate(records), meta))


def _times_in_runs(trace, records):
    out, start = [], None
    for _, chunk in trace.chunks(records):
        times = chunk.times(start)
        start = chunk.time_after(times)
        out += times.tolist()
    return out


def test_raw_time_restarts_at_each_segment():
    """Each segment's first raw record counts its delta from the segment's
    ``start_timestamp`` (less ``raw_time_offset``), whatever came before; an event
    record anchors time as ever, also as a segment's first record; an empty segment gives
    way to the next one starting at the same record."""
    raw = pack_records(RawRecord(), {"delta": np.array([1, 2, 3, 4, 1, 5, 2, 7])})
    wrap = pack_records(WrapEvent(), {"timestamp": 500})
    trigger = pack_records(TriggerEvent(), {"timestamp": 900})
    segments = _table((3, 100, 0), (0, 7, 0), (4, 200, 0), (3, 800, 0))
    trace = _raw([raw[:3], raw[3:5], wrap, raw[5:6], trigger, raw[6:]], segments)
    expected = [100 + 1 - 1, 100 + 3 - 1, 100 + 6 - 1,          # segment 0
                200 + 4 - 1, 200 + 5 - 1, 500, 500 + 5 - 1,    # segment 2 (1 is empty)
                900, 900 + 2 - 1, 900 + 9 - 1]                  # segment 3: the TRIGGER
    assert trace.times().tolist() == expected
    for records in (1, 2, 3, 4, 100):
        assert _times_in_runs(trace, records) == expected, f"runs of {records}"
    # Without the segment table the raw records after segment 0 run on from it.
    plain = _raw([raw[:3], raw[3:5]], start_timestamp=100)
    assert plain.times().tolist() == [100, 102, 105, 109, 110]


def test_summary_times_do_not_change_with_segments():
    summaries = pack_records(SummaryRecord(), {"timestamp": np.array([10, 20, 30, 40])})
    metadata = {"mode": "summary", "start_timestamp": 5}
    plain = parse_trace(trace_bytes(summaries, metadata))
    split = parse_trace(trace_bytes(summaries, dict(metadata, segments=_table(
        (2, 5, 10), (2, 1000, 30)))))
    assert split.times().tolist() == plain.times().tolist() == [10, 20, 30, 40]


def _joined_trace(with_segments):
    """Segment 0: a write at clock 101, then a write's address phase at 104 (the segment
    ends there); segment 1 from clock 105, as if it went on (a data phase), then a write at
    107; segment 2 restarts at 5000 with an idle clock at 5002 (delta 3), a write at
    5003."""
    first = raw_records([{}] + _write(0x1000, 0xA) + [dict(frame=1, ad=0x2000, cbe=MW)])
    second = raw_records([dict(irdy=1, trdy=1, devsel=1, ad=0xB), {}] + _write(0x3000, 0xC))
    third = raw_records([{}] + _write(0x4000, 0xD), deltas=[3, 1, 1, 1])
    if not with_segments:
        return _raw([first, second], start_timestamp=100)
    return _raw([first, second, third], _table((5, 100, 101), (5, 105, 107),
                                               (4, 5000, 5003)))


def test_no_transaction_is_joined_across_segments():
    joined = summarise(_joined_trace(False))
    assert joined["address"].tolist() == [0x1000, 0x2000, 0x3000]
    trace = _joined_trace(True)
    summaries = summarise(trace)
    assert summaries["address"].tolist() == [0x1000, 0x3000, 0x4000]
    assert summaries["timestamp"].tolist() == [101, 107, 5003]
    assert summaries["first_data"].tolist() == [0xA, 0xC, 0xD]
    for records in (1, 2, 3, 5, 6, 13):
        parts = list(iter_summaries(trace, chunk_records=records))
        assert np.concatenate(parts).tobytes() == summaries.tobytes(), records


def test_segments_in_table_csv_and_json():
    trace = _joined_trace(True)
    starts = segment_starts(trace)
    assert [part.tolist() for part in starts] == [[0, 1, 2], [100, 105, 5002]]
    out = io.StringIO()
    assert export(trace, "table", out) == 3
    assert out.getvalue().splitlines() == [
        "Seg  Trans        Addr  R/W  Lgth  Dur  Lat  delta cycle#  Cmd  Wait        Term"
        "        Data",
        "  0      1  0x00001000    W     1    2    1             0   MW     0  completion"
        "  0x0000000a",
        "  1      2  0x00003000    W     1    2    1             6   MW     0  completion"
        "  0x0000000c",
        "  2      3  0x00004000    W     1    2    1          4896   MW     0  completion"
        "  0x0000000d",
        "segment 0: trigger at clock 101, 5 records from record 0",
        "segment 1: trigger at clock 107, 5 records from record 5",
        "segment 2: trigger at clock 5003, 4 records from record 10",
    ]
    out = io.StringIO()
    export(trace, "csv", out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "trans,time,addr,cmd,rw,len,dur,lat,wait,term,data,delta,segment"
    assert lines[1:] == ["1,101,0x00001000,MW,W,1,2,1,0,completion,0x0000000a,0,0",
                         "2,107,0x00003000,MW,W,1,2,1,0,completion,0x0000000c,6,1",
                         "3,5003,0x00004000,MW,W,1,2,1,0,completion,0x0000000d,4896,2"]
    assert read_csv(out.getvalue()) == summary_rows(summarise(trace), segments=starts)
    document = trace_json(trace)
    assert [item["segment"] for item in document["transactions"]] == [0, 1, 2]
    assert document["metadata"]["segments"] == trace.metadata["segments"]
    out = io.StringIO()
    export(trace, "json", out)
    assert json.loads(out.getvalue()) == json.loads(json.dumps(document))


def _marked_summary_trace():
    """Two segments of a summary capture with markers: summaries at 10 and 20, a MARKER
    (rising) at 15; then a TRIGGER at 40, a MARKER (falling, 3 edges merged) at 41 and a
    summary at 42."""
    def summary(time, address):
        return pack_records(SummaryRecord(), {"timestamp": time, "address": address,
                                              "command": MW, "data_phases": 1})
    def event(layout, **fields):
        return pack_records(layout, fields, size_bits=256)
    records = [summary(10, 0x100), event(MarkerEvent(), timestamp=15, edges=1),
               summary(20, 0x200), event(TriggerEvent(), timestamp=40, source=4),
               event(MarkerEvent(), timestamp=41, falling=1, edges=3), summary(42, 0x300)]
    table = _table((3, 0, 0), (3, 30, 40))
    return parse_trace(trace_bytes(np.concatenate(records), {
        "mode": "summary", "segments": table, "capture": {"markers": True}}))


def test_markers_and_segments_are_events_and_notes():
    trace = _marked_summary_trace()
    events = trace_events(trace)
    assert events == [
        {"kind": "marker", "time": 15, "edge": "rising", "edges": 1, "segment": 0},
        {"kind": "trigger", "time": 40, "source": "external", "segment": 1},
        {"kind": "marker", "time": 41, "edge": "falling", "edges": 3, "segment": 1},
    ]
    assert note_lines(trace, events) == [
        "segment 0: not triggered, 3 records from record 0",
        "segment 1: trigger at clock 40, 3 records from record 3",
        "trigger at clock 40 (external)",
        "1 marker (trigger input rising edge) at clock 15",
        "1 marker (trigger input falling edge) (3 edges) at clock 41",
    ]
    document = trace_json(trace)
    assert document["events"] == events
    assert [(item["address"], item["segment"]) for item in document["transactions"]] == [
        (0x100, 0), (0x200, 0), (0x300, 1)]


def test_raw_marker_bits_are_events_and_a_vcd_signal(tmp_path):
    clocks = [{}] + _write(0x1000, 0xA) + [{}]
    clocks[2]["marker"] = 1
    clocks[4]["marker"] = 1
    records = raw_records(clocks)
    trace = _raw([records], start_timestamp=10,
                 capture={"markers": True, "edge": "falling"})
    assert trace_events(trace) == [
        {"kind": "marker", "time": 12, "edge": "falling", "edges": 1},
        {"kind": "marker", "time": 14, "edge": "falling", "edges": 1}]
    assert note_lines(trace, trace_events(trace)) == [
        "2 markers (trigger input falling edges) at clocks 12, 14"]
    path = tmp_path / "raw.pcitrace"
    write_trace(path, trace.data, trace.metadata)
    assert main(["decode", str(path), "--format", "vcd", "-o", str(tmp_path / "a.vcd")]) == 0
    vcd = VCDVCD(str(tmp_path / "a.vcd"))
    period = 30_000
    assert vcd["spy.marker"].tv == [(10 * period, "0"), (12 * period, "1"),
                                    (13 * period, "0"), (14 * period, "1")]
    # Without the markers setting the VCD has no marker signal (nothing to show).
    plain = _raw([records], start_timestamp=10)
    out = io.StringIO()
    export(plain, "vcd", out)
    assert "marker" not in out.getvalue()


def test_vcd_clocks_between_segments_are_unknown(tmp_path):
    trace = _joined_trace(True)
    out = io.StringIO()
    export(trace, "vcd", out)
    path = tmp_path / "seg.vcd"
    path.write_text(out.getvalue())
    frame = VCDVCD(str(path))["pci.frame_n"].tv
    # Segment 2 restarts at 5000 (its first record at 5002): the clocks from 110 on are
    # not in the trace; segment 1 follows segment 0 at once (no gap, nothing unknown).
    assert [(time // 30_000, value) for time, value in frame] == [
        (100, "1"), (101, "0"), (102, "1"), (104, "0"), (105, "1"), (107, "0"), (108, "1"),
        (110, "x"), (5002, "1"), (5003, "0"), (5004, "1")]


def test_pcapng_comments_name_segments_and_markers():
    trace = _marked_summary_trace()
    out = io.BytesIO()
    assert export(trace, "pcapng", out) == 3
    capture = pcapng.read_pcapng(out.getvalue())
    assert capture.comments == note_lines(trace, trace_events(trace))
    assert capture.packets["addr"].tolist() == [0x100, 0x200, 0x300]


def test_decode_command_shows_segments_and_markers(tmp_path, capsys):
    trace = _marked_summary_trace()
    path = tmp_path / "seg.pcitrace"
    write_trace(path, trace.data, trace.metadata)
    assert main(["decode", str(path)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[:2] == ["Seg", "Trans"]
    assert "segment 1: trigger at clock 40, 3 records from record 3" in text
    assert "1 marker (trigger input falling edge) (3 edges) at clock 41" in text
    assert main(["decode", str(path), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "1,10,0x00000100,MW,W,1,0,0,0,completion,0x00000000,0,0",
        "2,20,0x00000200,MW,W,1,0,0,0,completion,0x00000000,10,0",
        "3,42,0x00000300,MW,W,1,0,0,0,completion,0x00000000,22,1"]
    assert main(["decode", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [event["kind"] for event in document["events"]] == ["marker", "trigger", "marker"]


@pytest.mark.parametrize("segments,message", [
    ("x", "segments 'x' is not a list"),
    ([{"first_record": 0, "records": 1}], "segment 0 start_timestamp None is not a "
                                          "non-negative integer"),
    ([{"first_record": 0, "records": 1, "start_timestamp": 0},
      {"first_record": 2, "records": 1, "start_timestamp": 0}],
     r"segment 1 first_record 2 is not where the segments before it end \(1\)"),
    ([{"first_record": 0, "records": 1, "start_timestamp": 1 << 48}],
     "segment 0 start_timestamp 281474976710656 does not fit the 48-bit timestamp"),
])
def test_bad_segment_tables_are_refused_in_one_line(segments, message):
    with pytest.raises(TraceFormatError, match=f"bad metadata: {message} at byte offset 16"):
        trace_bytes(b"", {"mode": "raw", "segments": segments})


#: The seeds of the randomised segmented traces (each failure names its seed).
SEEDS = (1, 2, 3)


def _random_segmented(seed):
    """A raw trace of random transactions cut into 5 segments of random sizes (cutting
    transactions), each starting at a later random time; marker bits on 2% of records."""
    rng = np.random.default_rng(seed)
    clocks = [{}]
    for _ in range(50):
        clocks += _synthetic_clocks(rng)
    for clock in clocks:
        if rng.random() < 0.02:
            clock["marker"] = 1
    deltas = rng.choice([1, 1, 1, 2, 3], len(clocks))
    records = raw_records(clocks, deltas=deltas)
    cuts = np.sort(rng.choice(np.arange(1, len(records)), 4, replace=False))
    sizes = np.diff(np.concatenate([[0], cuts, [len(records)]])).tolist()
    table, time = [], 1000
    for size in sizes:
        table.append((size, time, time + 3))
        time += int(deltas.sum()) + int(rng.integers(1, 100))
    return _raw([records], _table(*table), capture={"markers": True, "edge": "rising"})


def test_every_export_of_a_segmented_summary_trace_in_runs_is_byte_identical(monkeypatch):
    trace = _marked_summary_trace()
    whole = _exports(trace, len(trace), monkeypatch)
    for records in (1, 2, 4):
        assert _exports(trace, records, monkeypatch) == whole, f"runs of {records}"


@pytest.mark.parametrize("seed", SEEDS)
def test_every_export_of_a_segmented_trace_in_runs_is_byte_identical(seed, monkeypatch):
    trace = _random_segmented(seed)

    def exports(records):
        return _exports(trace, records, monkeypatch)
    whole = exports(len(trace))
    assert " marker $end" in whole["vcd"], f"seed {seed}"
    for records in (4, 97):
        assert exports(records) == whole, f"seed {seed} runs of {records}"
    # The segments restart time: each segment's first transaction is after its start.
    summaries = summarise(trace)
    numbers = [row["segment"] for row in summary_rows(summaries,
                                                      segments=segment_starts(trace))]
    assert numbers == sorted(numbers) and len(set(numbers)) >= 4, f"seed {seed}"
