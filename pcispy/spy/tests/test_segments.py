# SPDX-License-Identifier: BSD-2-Clause
"""Segmented capture in the Amaranth simulator: the memory split into 2**k segments, each
with its own pre-trigger records and trigger, re-armed by itself after each fills, stopped
when the last is full; exact record indices and records per segment, the segment table,
a stop in the middle, and the settings the arm refuses."""

import pytest

from pcispy.host.errors import UsageError
from pcispy.pci.bus import Command
from pcispy.spy.capture_settings_feature import check_settings, parse_segments
from pcispy.spy.format import RecordKind, TriggerSource, CaptureMode
from pcispy.spy.spy import Spy
from pcispy.spy.trigger import MAX_SEGMENTS, RecorderState, TriggerOutput
from pcispy.spy.tests.test_spy_waves import idle, transaction
from pcispy.spy.tests.test_trigger_pins import (FIRST, PULSE, SYNC_CLOCKS, clock_of,
                                                numbered, pin_bench)

pytestmark = pytest.mark.spy

#: The benches' memory: 64 slots, 64 raw records or 32 summaries.
RAW_CAPACITY, SUMMARY_CAPACITY = 64, 32


def test_raw_segments_triggered_now_rearm_until_all_are_full():
    # Four segments of 16 raw records, triggered at once: each holds the 16 clocks from its
    # trigger; the clock in which a segment fills and the next segment's first (a
    # pre-trigger record, none kept) are not in any: segment j starts at wave clock 18 j.
    res = pin_bench().run(numbered(90), config={"segments_log2": 2}, stop=False)
    st = res["status"]
    assert st["state"] == RecorderState.DONE and st["done"] and st["segment"] == 3
    assert st["lost"] == 0 and st["capacity"] == RAW_CAPACITY
    assert res["entries"] == [
        {"start": 16 * j + 1, "count": 16, "trigger_index": 16 * j + 1,
         "trigger_timestamp": FIRST + 18 * j} for j in range(4)]
    for j, records in enumerate(res["segments"]):
        assert [clock_of(r) for r in records] == list(range(18 * j, 18 * j + 16)), j
        assert [r["trigger"] for r in records] == [1] + [0] * 15
    # It stopped by itself when the last segment filled (wave clock 71) and the trigger
    # output pulsed once per segment (each seen Spy.LAG clocks after its bus clock).
    assert res["state"].index(RecorderState.DONE) == 18 * 3 + 17 + 1 + Spy.LAG
    pulses = [i for i, (a, b) in enumerate(zip([0] + res["out"], res["out"])) if b and not a]
    assert pulses == [18 * j + TriggerOutput.DELAY + Spy.LAG for j in range(4)]


def test_raw_segments_keep_their_own_pre_trigger_records():
    # Two segments of 32 raw records, 3 before each trigger, 5 from it (--count 5): the
    # pin's rising edges at wave clocks 10 and 50 trigger them.
    edges = (10, 50)
    fires = [edge + SYNC_CLOCKS for edge in edges]
    res = pin_bench().run(numbered(70), pin={10: 1, 20: 0, 50: 1},
                         config={"source": TriggerSource.EXTERNAL, "segments_log2": 1,
                                 "pre": 3, "post": 5}, stop=False)
    st = res["status"]
    assert st["state"] == RecorderState.DONE and st["segment"] == 1 and st["lost"] == 0
    for j, (fire, records) in enumerate(zip(fires, res["segments"])):
        assert [clock_of(r) for r in records] == list(range(fire - 3, fire + 5)), j
        assert [r["trigger"] for r in records] == [0, 0, 0, 1, 0, 0, 0, 0]
        entry = res["entries"][j]
        assert entry["trigger_timestamp"] == FIRST + fire
        # The pre-trigger records wrap inside the segment (32 j .. 32 j + 31).
        assert entry["count"] == 8 and entry["start"] // 32 == j
        assert entry["trigger_index"] == 32 * j + (entry["start"] + 3) % 32


def _io_writes(count, gap=8):
    """``count`` I/O writes to ports 0..count-1, each followed by ``gap`` idle clocks;
    returns the wave and the clock each write's gap starts at."""
    wave, gaps = idle(2), []
    for port in range(count):
        wave += transaction(Command.IO_WRITE, port, [port])
        gaps.append(len(wave))
        wave += idle(gap)
    return wave, gaps


def test_summary_segments_exact_records_per_segment():
    # Four segments of 8 summaries; 2 kept before each trigger, 3 from it (its TRIGGER
    # event and two summaries). The trigger input rises in the gap after writes 3, 9, 15
    # and 21: segment j holds writes 6j+2 .. 6j+5 around its trigger.
    wave, gaps = _io_writes(26)
    rises = [gaps[6 * j + 3] + 1 for j in range(4)]
    pin = {}
    for rise in rises:
        pin.update({rise: 1, rise + 3: 0})
    res = pin_bench().run(wave, pin=pin, stop=False,
                         config={"mode": CaptureMode.SUMMARY, "pre": 2, "post": 3,
                                 "source": TriggerSource.EXTERNAL, "segments_log2": 2})
    st = res["status"]
    assert st["state"] == RecorderState.DONE and st["segment"] == 3 and st["lost"] == 0
    assert st["capacity"] == SUMMARY_CAPACITY
    assert res["entries"] == [
        {"start": 8 * j + 2, "count": 5, "trigger_index": 8 * j + 4,
         "trigger_timestamp": FIRST + rises[j] + SYNC_CLOCKS} for j in range(4)]
    for j, records in enumerate(res["segments"]):
        assert [r["kind"] for r in records] == [RecordKind.SUMMARY] * 2 + \
            [RecordKind.TRIGGER] + [RecordKind.SUMMARY] * 2, j
        assert [r["address"] for r in records if r["kind"] == RecordKind.SUMMARY] == \
            [6 * j + 2, 6 * j + 3, 6 * j + 4, 6 * j + 5], j
        assert records[2]["source"] == TriggerSource.EXTERNAL.value
        assert records[2]["timestamp"] == FIRST + rises[j] + SYNC_CLOCKS
    pulses = [i for i, (a, b) in enumerate(zip([0] + res["out"], res["out"])) if b and not a]
    assert pulses == [rise + SYNC_CLOCKS + TriggerOutput.DELAY + Spy.LAG for rise in rises]
    assert all(sum(res["out"][p:p + PULSE + 1]) == PULSE for p in pulses)


def test_stop_ends_the_current_segment():
    # Four segments; two triggers come, then the stop: segments 0 and 1 are in the table,
    # segment 2 never triggered and keeps every record it took (as a capture stopped
    # before its trigger does).
    wave, gaps = _io_writes(12)
    rises = [gaps[3] + 1, gaps[7] + 1]
    res = pin_bench().run(wave, pin={rises[0]: 1, rises[0] + 2: 0, rises[1]: 1},
                         config={"mode": CaptureMode.SUMMARY, "pre": 2, "post": 2,
                                 "source": TriggerSource.EXTERNAL, "segments_log2": 2})
    st = res["status"]
    assert st["state"] == RecorderState.DONE and st["segment"] == 2
    assert [e["trigger_timestamp"] != 0 for e in res["entries"]] == [True, True, False]
    assert [[r["address"] for r in records if r["kind"] == RecordKind.SUMMARY]
            for records in res["segments"]] == [[2, 3, 4], [6, 7, 8], [9, 10, 11]]
    assert res["entries"][2] == {"start": 16, "count": 3, "trigger_index": 0,
                                 "trigger_timestamp": 0}


@pytest.mark.parametrize("config, error", [
    ({"segments_log2": 7}, "segment_error"),                         # over 64 segments
    ({"segments_log2": 6, "mode": CaptureMode.SUMMARY}, "segment_error"),  # 0 records each
    ({"segments_log2": 1, "ring": 1}, "segment_error"),
    ({"segments_log2": 3, "pre": 8}, "pre_error"),                   # 8 records each
])
def test_arm_refuses_segments_it_cannot_make(config, error):
    res = pin_bench().run(numbered(10), config=config)
    st = res["status"]
    assert st[error] == 1 and st["pre_error" if error == "segment_error" else
                                 "segment_error"] == 0
    assert st["state"] == RecorderState.IDLE and st["count"] == 0


SETTINGS = dict(mode="summary", filters=(), combine="any", trigger="now", pre=0, count=0,
                latency_timer=0)


@pytest.mark.parametrize("segments", [1, 2, 4, 64])
def test_segments_are_powers_of_two(segments):
    assert parse_segments(segments) == segments.bit_length() - 1
    check_settings(**SETTINGS, segments=segments)


@pytest.mark.parametrize("segments", [0, 3, 6, 128, -4])
def test_other_segment_counts_are_refused_in_one_line(segments):
    with pytest.raises(UsageError, match=rf"--segments {segments}: give a power of two from "
                                         rf"1 to {MAX_SEGMENTS}"):
        check_settings(**SETTINGS, segments=segments)


@pytest.mark.parametrize("settings, message", [
    (dict(segments=4, ring=True, count=10), "--ring and --segments exclude each other"),
    (dict(edge="falling"), "--edge falling applies to --trigger external and --markers"),
    (dict(edge="up"), "--edge 'up': give rising or falling"),
    (dict(trigger_out="toggle"), "--trigger-out 'toggle': give pulse or level"),
    (dict(trigger="outside"), "give one of now, filter, register, violation, external"),
])
def test_trigger_pin_and_segment_settings_are_checked(settings, message):
    with pytest.raises(UsageError, match=message):
        check_settings(**dict(SETTINGS, **settings))


def test_external_trigger_and_markers_take_either_edge():
    assert check_settings(**dict(SETTINGS, trigger="external", edge="falling"))[1] is \
        TriggerSource.EXTERNAL
    check_settings(**SETTINGS, markers=True, edge="falling")
