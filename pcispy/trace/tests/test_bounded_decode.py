# SPDX-License-Identifier: BSD-2-Clause
"""Decoding and exporting a trace a run of records at a time (bounded memory) gives what
decoding it whole gives, byte for byte: raw transactions that cross the runs' boundaries,
record times and lost-record marks carried from run to run, in every export."""

import io

import numpy as np
import pytest

import pcispy.trace.file as tracefile
import pcispy.trace.records as tracerecords
from pcispy.trace.decode import _synthetic_clocks, iter_summaries, raw_records, summarise
from pcispy.trace.export import FORMATS, export
from pcispy.spy.format import OverrunEvent, RecordKind, SummaryRecord, WrapEvent
from pcispy.trace.file import pack_records, parse_trace, read_trace, trace_bytes, write_trace

pytestmark = pytest.mark.spy

#: The seeds of the randomised traces (each failure names its seed).
SEEDS = (1, 2, 3, 4, 5)
#: Run lengths that cut transactions at many places (1: every record its own run).
CHUNKS = (1, 7, 64)


def _raw_trace(seed, select=False):
    """A raw trace of random transactions (pcispy.trace.decode's generator), 3% of its
    records followed by an OVERRUN record and 1% by a WRAP record (times running on),
    deltas 1..3 (idle compression)."""
    rng = np.random.default_rng(seed)
    clocks = [{}]
    for _ in range(120):
        clocks += _synthetic_clocks(rng)
    deltas = rng.choice([1, 1, 1, 2, 3], len(clocks))
    raw = raw_records(clocks, deltas=deltas)
    rows, time = [], 1000
    for index, record in enumerate(raw):
        rows.append(record)
        time += int(deltas[index])
        draw = rng.random()
        if draw < 0.03:
            rows.append(pack_records(OverrunEvent(), {"timestamp": time, "lost": 3},
                                     size_bits=128)[0])
        elif draw < 0.04:
            time += int(rng.integers(1, 5))
            rows.append(pack_records(WrapEvent(), {"timestamp": time}, size_bits=128)[0])
    metadata = {"mode": "raw", "start_timestamp": 1000, "raw_time_offset": 1,
                "capture": {"raw_select": select}}
    return parse_trace(trace_bytes(np.array(rows), metadata))


def _summary_trace(seed):
    rng = np.random.default_rng(seed)
    count = 300
    summaries = pack_records(SummaryRecord(), {
        "timestamp": np.cumsum(rng.integers(1, 50, count)),
        "address": rng.integers(0, 1 << 32, count),
        "command": rng.choice([6, 7, 2, 3], count), "data_phases": rng.integers(0, 9, count),
        "termination": rng.integers(0, 6, count), "devsel": rng.integers(0, 4, count)})
    rows = []
    for index, record in enumerate(summaries):
        if rng.random() < 0.05:
            rows.append(pack_records(OverrunEvent(), {"timestamp": index, "lost": 1},
                                     size_bits=256)[0])
        rows.append(record)
    return parse_trace(trace_bytes(np.array(rows), {"mode": "summary"}))


def _exports(trace, chunk, monkeypatch):
    """Every export of ``trace`` (bytes) with runs of ``chunk`` records."""
    monkeypatch.setattr(tracerecords, "CHUNK_RECORDS", chunk)
    outputs = {}
    for fmt in FORMATS:
        if fmt == "vcd" and trace.mode.name == "SUMMARY":
            continue
        out = io.BytesIO() if fmt == "pcapng" else io.StringIO()
        export(trace, fmt, out, warn=lambda line: None)
        outputs[fmt] = out.getvalue()
        if fmt == "vcd":
            # Its first line is the date it was written.
            outputs[fmt] = outputs[fmt].split("\n", 1)[1]
    return outputs


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("select", [False, True])
def test_raw_decode_in_runs_equals_the_whole(seed, select):
    trace = _raw_trace(seed, select)
    whole = summarise(trace, chunk_records=len(trace))
    assert len(whole) > 50, f"seed {seed}"
    for chunk in CHUNKS:
        parts = list(iter_summaries(trace, chunk_records=chunk))
        assert np.concatenate(parts).tobytes() == whole.tobytes(), f"seed {seed} chunk {chunk}"
    # Runs did cut transactions (the test means something): a run of 7 records ends
    # inside a transaction somewhere.
    times = trace.times()[trace.indices(RecordKind.RAW)]
    starts = np.searchsorted(times, whole["timestamp"].astype(np.int64))
    ends = starts + whole["duration"].astype(np.int64) - 1
    assert np.any(starts // 7 != ends // 7), f"seed {seed}"


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_every_export_in_runs_is_byte_identical(seed, monkeypatch):
    for trace in (_raw_trace(seed), _raw_trace(seed, select=True), _summary_trace(seed)):
        whole = _exports(trace, len(trace), monkeypatch)
        for chunk in (5, 97):
            assert _exports(trace, chunk, monkeypatch) == whole, f"seed {seed} chunk {chunk}"


def test_large_file_is_memory_mapped_and_read_in_runs(tmp_path, monkeypatch):
    trace = _raw_trace(7)
    path = tmp_path / "big.pcitrace"
    write_trace(path, trace.data, trace.metadata)
    monkeypatch.setattr(tracefile, "MAP_BYTES", 1)
    mapped = read_trace(path)
    assert isinstance(mapped.data, np.memmap) and mapped.path == path
    assert _exports(mapped, 13, monkeypatch) == _exports(trace, len(trace), monkeypatch)
    chunks = list(mapped.chunks(100))
    assert [first for first, _ in chunks] == list(range(0, len(trace), 100))
    assert not isinstance(chunks[0][1].data, np.memmap)      # read, not mapped
    assert np.concatenate([c.data for _, c in chunks]).tobytes() == trace.data.tobytes()


def test_damage_past_the_first_run_names_its_record(tmp_path, monkeypatch):
    trace = _summary_trace(3)
    data = trace.data.copy()
    index = int(trace.indices(RecordKind.SUMMARY)[200])
    data[index] = pack_records(SummaryRecord(), {"timestamp": 5, "termination": 7})[0]
    path = tmp_path / "bad.pcitrace"
    write_trace(path, data, trace.metadata)
    monkeypatch.setattr(tracerecords, "CHUNK_RECORDS", 64)
    with pytest.raises(tracefile.TraceFormatError,
                       match=f"record {index} \\(SUMMARY\\) has termination 7, which is no "
                             f"Termination at byte offset {trace.offset + 32 * index}"):
        read_trace(path)
