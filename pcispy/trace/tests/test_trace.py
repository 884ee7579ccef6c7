# SPDX-License-Identifier: BSD-2-Clause
"""Trace files: record packing against the format declaration, file round trips (raw and
summary captures), record times, and every kind of damage through the CLI."""

import json
import struct
import subprocess
import sys

import numpy as np
import pytest

from pcispy.pci.bus import Termination
from pcispy.spy.format import (
                               FORMAT_VERSION, RawRecord, RecordKind, SummaryRecord, TriggerEvent, OverrunEvent,
                               WrapEvent, record_fields, record_layouts,
                               )
from pcispy.app.cli import main
from pcispy.host.errors import TraceFormatError
from pcispy.trace.file import (
                                  HEADER_BYTES, MAGIC, pack_records, parse_trace, read_trace, record_dtype, trace_bytes,
                                  unpack_records, write_trace,
                                  )

pytestmark = pytest.mark.spy


def _random_fields(layout, count, rng):
    return {name: rng.integers(0, 1 << width, count, dtype=np.uint64, endpoint=False)
            if width < 64 else rng.integers(0, 1 << 63, count, dtype=np.uint64) * 2 + 1
            for name, _, width in record_fields(layout) if name != "kind"}


@pytest.mark.parametrize("width,masters", [(32, 1), (64, 3)])
def test_every_field_lands_at_its_declared_bits(width, masters):
    rng = np.random.default_rng(width + masters)
    for kind, layout in record_layouts(width, masters).items():
        fields = _random_fields(layout, 50, rng)
        packed = pack_records(layout, fields)
        # Against the declaration, one record at a time, with Python integers.
        for i in range(3):
            value = int.from_bytes(packed[i].tobytes(), "little")
            for name, offset, bits in record_fields(layout):
                expected = kind.value if name == "kind" else int(fields[name][i])
                assert (value >> offset) & ((1 << bits) - 1) == expected, (kind, name)
        unpacked = unpack_records(packed, layout)
        assert unpacked.dtype == record_dtype(layout)
        for name, value in fields.items():
            assert np.array_equal(unpacked[name], value), (kind, name)
        assert np.all(unpacked["kind"] == kind.value)


def test_pack_refuses_values_that_do_not_fit():
    with pytest.raises(ValueError, match="bus.cbe"):
        pack_records(RawRecord(), {"bus.cbe": [16]})
    with pytest.raises(ValueError, match="nonsense"):
        pack_records(RawRecord(), {"nonsense": [1]})


def _raw_stream(rng, count=20):
    raw = pack_records(RawRecord(64, 2), _random_fields(RawRecord(64, 2), count, rng))
    events = [pack_records(TriggerEvent(), {"timestamp": 77, "source": 2}),
              pack_records(OverrunEvent(), {"timestamp": 99, "lost": 5}),
              pack_records(WrapEvent(), {"timestamp": 1 << 40})]
    return np.concatenate([raw[:5], events[0], raw[5:10], events[1], raw[10:], events[2]])


def test_raw_trace_round_trip(tmp_path):
    rng = np.random.default_rng(7)
    stream = _raw_stream(rng)
    metadata = {"mode": "raw", "bus_width": 64, "masters": 2, "clock_mhz": 66.0,
                "capture": {"trigger": "register", "pre": 100}, "overruns": 1, "lost": 5}
    path = tmp_path / "raw.pcitrace"
    write_trace(path, stream, metadata)
    trace = read_trace(path)
    assert trace.metadata == {**metadata, "start_timestamp": 0, "raw_time_offset": 0,
                              "latency_timer": 0, "memory_fills": 0,
                              "format_version": FORMAT_VERSION,
                              "record_layout": "RawRecord", "record_bits": 128}
    assert np.array_equal(trace.data, stream)
    assert list(trace.kinds[[0, 5, 11, 22]]) == [1, 3, 4, 5]
    assert np.array_equal(trace.raw, unpack_records(
        stream[trace.kinds == RecordKind.RAW.value], RawRecord(64, 2)))
    assert list(trace.records(RecordKind.OVERRUN)[["timestamp", "lost"]].tolist()) == [(99, 5)]
    assert trace.offset == HEADER_BYTES + len(json.dumps(trace.metadata, sort_keys=True))
    # Writing what was read gives the same bytes.
    assert trace_bytes(trace.data, trace.metadata) == path.read_bytes()


def test_summary_trace_round_trip(tmp_path):
    rng = np.random.default_rng(8)
    fields = _random_fields(SummaryRecord(), 30, rng)
    fields["termination"] %= len(Termination)        # 7 is no termination: a damaged file
    summaries = pack_records(SummaryRecord(), fields)
    trigger = pack_records(TriggerEvent(), {"timestamp": 5, "source": 1}, size_bits=256)
    stream = np.concatenate([trigger, summaries])
    path = tmp_path / "sum.pcitrace"
    write_trace(path, stream, {"mode": "summary"})
    trace = read_trace(path)
    assert trace.record_bytes == 32 and len(trace) == 31
    assert np.array_equal(trace.summaries, unpack_records(summaries, SummaryRecord()))
    assert trace.records(RecordKind.TRIGGER)["source"].tolist() == [1]


def test_record_times_follow_deltas_and_event_timestamps():
    raw = pack_records(RawRecord(), {"delta": [3, 1, 2]})
    wrap = pack_records(WrapEvent(), {"timestamp": 100_000})
    overrun = pack_records(OverrunEvent(), {"timestamp": 200_000, "lost": 1})
    stream = np.concatenate([raw, wrap, raw, overrun, raw[:1]])
    trace = parse_trace(trace_bytes(stream, {"mode": "raw", "start_timestamp": 10}))
    assert trace.times().tolist() == [13, 14, 16, 100_000, 100_003, 100_004, 100_006,
                                      200_000, 200_003]
    shifted = parse_trace(trace_bytes(stream, {"mode": "raw", "start_timestamp": 10,
                                               "raw_time_offset": 1}))
    assert shifted.times().tolist() == [12, 13, 15, 100_000, 100_002, 100_003, 100_005,
                                        200_000, 200_002]


def _good_file(mode="raw"):
    layout = RawRecord() if mode == "raw" else SummaryRecord()
    return trace_bytes(pack_records(layout, {"delta": [1, 1, 1]} if mode == "raw" else
                                    {"timestamp": [1, 2, 3]}), {"mode": mode})


def _header(blob, **changes):
    magic, version, size, length = struct.unpack_from("<8sHHI", blob)
    fields = dict(magic=magic, version=version, size=size, length=length)
    fields.update(changes)
    return struct.pack("<8sHHI", *fields.values()) + blob[16:]


def _with_metadata(blob, text):
    length = struct.unpack_from("<I", blob, 12)[0]
    body = blob[HEADER_BYTES + length:]
    return _header(blob[:HEADER_BYTES] + text, length=len(text)) + body


GOOD = _good_file()
JSON_END = HEADER_BYTES + struct.unpack_from("<I", GOOD, 12)[0]
_SUMMARIES = _good_file("summary")
_SUMMARIES_END = HEADER_BYTES + struct.unpack_from("<I", _SUMMARIES, 12)[0]

#: (case, damaged bytes, the offset the message must name, words it must contain)
DAMAGED = [
    ("empty", b"", 0, "truncated header"),
    ("truncated fixed header", GOOD[:11], 11, "truncated header"),
    ("truncated metadata", GOOD[:JSON_END - 5], JSON_END - 5, "truncated header"),
    ("wrong magic", b"PCITRACF" + GOOD[8:], 0, "not a pcispy trace"),
    ("future version", _header(GOOD, version=FORMAT_VERSION + 1), 8, "newer than this"),
    ("old version", _header(GOOD, version=0), 8, "no longer supported"),
    ("bad JSON", _with_metadata(GOOD, b'{"mode": "raw",, }'), 31, "not valid JSON"),
    ("not UTF-8", _with_metadata(GOOD, b'{"mode": "\xff"}'), 26, "not UTF-8"),
    ("JSON not an object", _with_metadata(GOOD, b'[1, 2]'), 16, "not a JSON object"),
    ("unknown mode", _with_metadata(GOOD, b'{"mode": "both"}'), 16, "mode 'both'"),
    ("bad bus width", _with_metadata(GOOD, b'{"mode": "raw", "bus_width": 48}'), 16,
     "bus_width 48"),
    ("bad latency timer", _with_metadata(GOOD, b'{"mode": "raw", "latency_timer": 256}'),
     16, "latency_timer 256"),
    ("metadata layout", _with_metadata(GOOD, b'{"mode": "raw", "record_bits": 256}'), 16,
     "record_bits 256"),
    ("record size vs layout", _header(GOOD, size=32)[:-16], 10, "record size 32 bytes"),
    ("truncated record", GOOD[:-3], JSON_END + 32, "truncated record 2 (13 of 16 bytes)"),
    ("kind of the other mode", GOOD[:-16] + bytes([RecordKind.SUMMARY.value]) + bytes(15),
     JSON_END + 32, "SUMMARY record"),
    ("unknown kind", GOOD[:-16] + bytes([9]) + bytes(15), JSON_END + 32,
     "unknown record kind 9"),
    ("reserved enum value", _SUMMARIES[:-32] + pack_records(
        SummaryRecord(), {"termination": 7}).tobytes(), _SUMMARIES_END + 64,
     "record 2 (SUMMARY) has termination 7, which is no Termination"),
    ("too many masters for the record", _with_metadata(
        GOOD, b'{"mode": "raw", "bus_width": 64, "masters": 15}'), 16, "masters 15 on a 64"),
]


@pytest.mark.parametrize("case,blob,offset,words", DAMAGED, ids=[d[0] for d in DAMAGED])
def test_damaged_file_is_one_error_line_naming_the_offset(tmp_path, capsys, case, blob,
                                                          offset, words):
    path = tmp_path / "damaged.pcitrace"
    path.write_bytes(blob)
    with pytest.raises(TraceFormatError, match=f"at byte offset {offset}$"):
        read_trace(path)
    status = main(["decode", str(path)])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1
    assert err.startswith(f"pcispy: error: {path}: ") and words in err
    assert err.rstrip().endswith(f"at byte offset {offset}")


def test_damaged_file_through_the_installed_command(tmp_path):
    path = tmp_path / "cut.pcitrace"
    path.write_bytes(GOOD[:-1])
    result = subprocess.run([sys.executable, "-m", "pcispy.app.cli", "decode", str(path)],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr == (f"pcispy: error: {path}: truncated record 2 (15 of 16 bytes) "
                             f"at byte offset {JSON_END + 32}\n")
    assert result.stdout == ""


def test_missing_file_is_one_error_line(tmp_path, capsys):
    assert main(["decode", str(tmp_path / "nothing.pcitrace")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read" in err and "No such file" in err


def test_good_files_read():
    for mode in ("raw", "summary"):
        trace = parse_trace(_good_file(mode))
        assert len(trace) == 3 and trace.metadata["mode"] == mode
        assert MAGIC == _good_file(mode)[:8]


@pytest.mark.parametrize("value", [-1, True, "3"])
def test_a_bad_memory_fills_count_is_refused_in_one_line(value):
    with pytest.raises(TraceFormatError, match=f"bad metadata: memory_fills {value!r} is not "
                                               "a non-negative integer at byte offset 16"):
        parse_trace(trace_bytes(b"", {"mode": "raw", "memory_fills": value}))
