# SPDX-License-Identifier: BSD-2-Clause
"""The trigger pins: the input's synchroniser and edge choice, the output's pulse width and
level, the external trigger source and markers (exact clocks and timestamps), through the
whole spy in the Amaranth simulator. :func:`pin_bench` (test_spy_capture's Bench with a
short trigger pulse) is shared with test_segments.py."""

import pytest

from amaranth.sim import Simulator

from pcispy.pci.bus import Command
from pcispy.spy.format import RecordKind, TriggerSource, CaptureMode
from pcispy.spy.spy import Spy
from pcispy.spy.trigger import (MAX_SEGMENTS, RecorderState, TriggerInput, TriggerOutput,
                                trigger_pulse_clocks)
from pcispy.spy.tests.test_spy_capture import Bench
from pcispy.spy.tests.test_spy_waves import idle, transaction, finish

pytestmark = pytest.mark.spy

#: The wave clock ``i`` of a bench run is presented with timestamp FIRST + i.
FIRST = 2
#: Clocks from the clock the pin changes in (before its ending edge) to the clock in which
#: the spy sees the edge: the two synchroniser stages.
SYNC_CLOCKS = 2
#: The pulse of the benches' trigger output (short, so a test sees all of it).
PULSE = 5


def pin_bench():
    """The spy bench (test_spy_capture.Bench) with this file's short trigger pulse."""
    return Bench(pulse_clocks=PULSE)


#: AD of wave clock ``i`` of :func:`numbered` clocks is NUMBERED + i.
NUMBERED = 0x5000


def numbered(count):
    """``count`` idle clocks, each with its index on AD (offset by NUMBERED), so that a raw
    record says which wave clock it holds."""
    return [idle(1, ad=NUMBERED + i)[0] for i in range(count)]


def clock_of(record):
    """The wave clock a raw record of :func:`numbered` clocks holds."""
    return record["bus.ad"] - NUMBERED


def _run_component(component, script, watch, clocks):
    """Drive ``component`` with ``script[i]`` ({port: value}) at clock ``i`` and return
    ``watch``'s value at every clock."""
    seen = []

    async def bench(ctx):
        for i in range(clocks):
            for name, value in script.get(i, {}).items():
                ctx.set(getattr(component, name), value)
            seen.append(ctx.get(getattr(component, watch)))
            await ctx.tick()

    sim = Simulator(component)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return seen


@pytest.mark.parametrize("falling", [0, 1])
def test_input_is_synchronised_then_edge_detected(falling):
    # The pin rises before the edge ending clock 3 and falls before the one ending 9: the
    # level follows two clocks later; the edge chosen is seen for one clock with it.
    script = {0: {"falling": falling, "pin": 0}, 3: {"pin": 1}, 9: {"pin": 0}}
    level = _run_component(TriggerInput(), script, "level", 16)
    assert level == [0] * 5 + [1] * 6 + [0] * 5
    edges = _run_component(TriggerInput(), script, "edge", 16)
    at = 11 if falling else 5
    assert edges == [int(i == at) for i in range(16)]


def test_input_ignores_a_pin_that_does_not_change():
    script = {0: {"pin": 1}}         # high from the start: one rising edge, then none
    edges = _run_component(TriggerInput(), script, "edge", 12)
    assert edges == [int(i == 2) for i in range(12)]


def test_output_pulse_is_exactly_its_width_and_restarts():
    script = {2: {"fire": 1}, 3: {"fire": 0}, 20: {"fire": 1}, 21: {"fire": 0},
              23: {"fire": 1}, 24: {"fire": 0}}
    pin = _run_component(TriggerOutput(7), script, "pin", 40)
    high = [i for i, value in enumerate(pin) if value]
    # 7 clocks from DELAY clocks after each fire; the third fire restarts the second pulse.
    d = TriggerOutput.DELAY
    assert high == list(range(2 + d, 9 + d)) + list(range(20 + d, 30 + d))


def test_output_level_follows_the_recording():
    script = {0: {"level": 1}, 4: {"fire": 1, "hold": 0}, 5: {"fire": 0, "hold": 1},
              30: {"hold": 0}}
    pin = _run_component(TriggerOutput(3), script, "pin", 36)
    d = TriggerOutput.DELAY
    assert [i for i, value in enumerate(pin) if value] == list(range(4 + d, 30 + d))


def test_pulse_is_one_microsecond():
    assert trigger_pulse_clocks(33) == 33 and trigger_pulse_clocks(66) == 66
    assert trigger_pulse_clocks(33.333) == 34


@pytest.mark.parametrize("falling", [0, 1])
def test_external_trigger_marks_the_raw_record_and_pulses_the_output(falling):
    # Raw, every clock, 3 records before the trigger. The pin rises at wave clock 8 and
    # falls at 20: the chosen edge triggers SYNC_CLOCKS later.
    edge = 20 if falling else 8
    fire = edge + SYNC_CLOCKS
    res = pin_bench().run(numbered(30), pin={8: 1, 20: 0},
                         config={"source": TriggerSource.EXTERNAL, "pre": 3, "post": 6,
                                 "falling": falling})
    st = res["status"]
    assert st["state"] == RecorderState.DONE and st["lost"] == 0
    assert st["trigger_timestamp"] == FIRST + fire
    records = res["records"]
    assert [r["kind"] for r in records] == [RecordKind.RAW] * 9
    assert [r["trigger"] for r in records] == [0, 0, 0, 1, 0, 0, 0, 0, 0]
    # The trigger record is the bus clock the edge was seen in.
    assert [clock_of(r) for r in records] == list(range(fire - 3, fire + 6))
    assert all(r["delta"] == 1 for r in records) and all(not r["marker"] for r in records)
    # The output: high PULSE clocks from TriggerOutput.DELAY clocks after the trigger (seen
    # Spy.LAG clocks after its bus clock), and never before.
    rise = fire + TriggerOutput.DELAY + Spy.LAG
    assert [i for i, value in enumerate(res["out"]) if value] == list(range(rise, rise + PULSE))


def test_external_trigger_waits_for_the_chosen_edge():
    # Falling edges count: a pin that only rises never triggers.
    res = pin_bench().run(idle(20), pin={5: 1},
                         config={"source": TriggerSource.EXTERNAL, "falling": 1})
    assert res["status"]["trigger_timestamp"] == 0 and not any(res["out"])
    # Armed from the first wave clock the arm reaches the recorder in on.
    assert all(state == RecorderState.PRE for state in res["state"][Spy.LAG:])


def test_summary_markers_carry_the_edge_clock():
    # Summary capture of three I/O writes; the pin rises at 3 and 25, falls at 12: with
    # rising edges chosen, two MARKER events with the timestamps of the clocks the edges
    # were seen in, among the summaries in time order.
    wave = (idle(2) + transaction(Command.IO_WRITE, 0x70, [1]) + idle(6) +
            transaction(Command.IO_WRITE, 0x71, [2]) + idle(10) +
            transaction(Command.IO_WRITE, 0x72, [3]) + idle(4))
    res = pin_bench().run(wave, pin={3: 1, 12: 0, 25: 1},
                         config={"mode": CaptureMode.SUMMARY, "markers": 1})
    records = res["records"]
    kinds = [r["kind"] for r in records]
    assert kinds.count(RecordKind.MARKER) == 2 and kinds.count(RecordKind.SUMMARY) == 3
    markers = [r for r in records if r["kind"] == RecordKind.MARKER]
    assert [(m["timestamp"], m["falling"], m["edges"]) for m in markers] == \
        [(FIRST + 3 + SYNC_CLOCKS, 0, 1), (FIRST + 25 + SYNC_CLOCKS, 0, 1)]
    times = [r["timestamp"] for r in records if r["kind"] in (RecordKind.MARKER,
                                                               RecordKind.SUMMARY)]
    # Each summary is written when its transaction ends: the order follows that.
    assert len(times) == 5
    assert res["status"]["lost"] == 0


def test_summary_markers_of_falling_edges_say_so():
    res = pin_bench().run(idle(20), pin={3: 1, 12: 0},
                         config={"mode": CaptureMode.SUMMARY, "markers": 1, "falling": 1})
    # The trigger 'now' (its TRIGGER event first), then the one falling edge.
    assert [(r["kind"], r["timestamp"], r.get("falling")) for r in res["records"]] == \
        [(RecordKind.TRIGGER, FIRST, None), (RecordKind.MARKER, FIRST + 12 + SYNC_CLOCKS, 1)]


def test_no_markers_unless_asked():
    res = pin_bench().run(idle(20), pin={3: 1, 12: 0}, config={"mode": CaptureMode.SUMMARY})
    assert [r["kind"] for r in res["records"]] == [RecordKind.TRIGGER]


def test_raw_markers_mark_the_stored_clock_or_take_an_idle_one():
    # Raw with idle compression: an edge during a transaction sets the marker bit of that
    # clock's record; an edge on an idle (unstored) clock writes a MARKER event with its
    # timestamp, and the next raw record's delta counts from it.
    first = idle(2) + transaction(Command.MEM_WRITE, 0x1000, [0xA1, 0xA2, 0xA3, 0xA4])
    wave = first + idle(12) + transaction(Command.MEM_WRITE, 0x2000, [0xB1]) + idle(2)
    clocks = finish(wave)
    data_clock = 5                          # the second data phase: AD = 0xA2
    assert clocks[data_clock]["ad"] == 0xA2 and clocks[data_clock]["irdy"]
    seen_idle = len(first) + 5              # an idle clock, not stored
    second = len(first) + 12                # the second transaction's address phase
    res = pin_bench().run(wave, pin={data_clock - SYNC_CLOCKS: 1,
                                    data_clock - SYNC_CLOCKS + 1: 0,
                                    seen_idle - SYNC_CLOCKS: 1},
                         config={"idle_compress": 1, "markers": 1})
    records = res["records"]
    marked = [r for r in records if r["kind"] == RecordKind.RAW and r["marker"]]
    events = [r for r in records if r["kind"] == RecordKind.MARKER]
    assert [r["bus.ad"] for r in marked] == [0xA2]
    assert [(e["timestamp"], e["edges"], e["falling"]) for e in events] == \
        [(FIRST + seen_idle, 1, 0)]
    # The next raw record (the second address phase) counts its delta from the marker.
    after = records[records.index(events[0]) + 1]
    assert after["kind"] == RecordKind.RAW and after["bus.ad"] == 0x2000
    assert after["delta"] == second - seen_idle
    assert res["status"]["lost"] == 0


def test_max_segments_fits_the_register():
    from pcispy.spy.registers import SPY
    field = SPY.register("segment_select").field("segment")
    assert (1 << field.width) == MAX_SEGMENTS


def test_wiring_doc_lists_the_trigger_pins_as_declared():
    # docs/wiring.md's trigger pin table, row for row from ulx3s.TRIGGER_PINS.
    import re
    from pathlib import Path
    from pcispy.platform.boards.ulx3s import TRIGGER_PINS
    text = (Path(__file__).resolve().parents[3] / "docs" / "wiring.md").read_text()
    table = re.search(r"<!-- trigger pins ulx3s -->\n(.*?)<!-- end trigger pins -->", text,
                      re.DOTALL).group(1)
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in table.splitlines()[2:]]
    assert {row[0]: (row[2], row[1]) for row in rows} == TRIGGER_PINS
