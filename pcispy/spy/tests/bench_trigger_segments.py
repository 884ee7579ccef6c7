# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benches of captures through the spy's SDRAM trace memory in the simulated system,
driven through the host features: the memory filling and stopping, a trigger from the
board's trigger input pin with pre-trigger records and markers (the trigger output pin
watched), and segmented captures (summary and raw).

Run by ``pcispy/spy/tests/test_sdram_system.py`` (pytest), which picks the system.
"""

import base64

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, RisingEdge

from pcispy.host.board import Board
from pcispy.spy.tests.bench_spy import TEST_MEM, _setup, _trace
from pcispy.spy.capture_feature import finish_capture, start_capture, wait_capture
from pcispy.spy.format import RecordKind, TriggerSource
from pcispy.spy.trigger import trigger_pulse_clocks
from pcispy.trace.file import parse_trace, trace_bytes

#: The test device's memory window: what the captures below select.
WINDOW = f"MW:{TEST_MEM:#x}/0xffffc000"
#: Clocks between single writes: a summary takes 16 clocks of the SDRAM (two slots), so
#: the SDRAM keeps up and nothing is lost.
SPACING = 16
#: Clocks the trigger input is held before and after a change: the board sees the pin and
#: the bus two clocks after the pins, so a change between two writes falls between their
#: summaries.
SETTLE = 8


class OutputWatch:
    """Samples the board's trigger output pin at every rising clock edge: ``high`` lists
    the clocks (counted from the start of the watch) it was high in."""
    def __init__(self, dut):
        self.dut = dut
        self.high = []
        self._task = cocotb.start_soon(self._watch())

    async def _watch(self):
        clock = 0
        while True:
            await RisingEdge(self.dut.pci_clk)
            if int(self.dut.trigger_out.value):
                self.high.append(clock)
            clock += 1

    def pulses(self):
        """``[(first clock, clocks high)]`` of each pulse."""
        runs = []
        for clock in self.high:
            if runs and runs[-1][0] + runs[-1][1] == clock:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                runs.append((clock, 1))
        return runs

    def stop(self):
        self._task.cancel()


async def _write(system, index):
    """One single-word write of ``index`` at word ``index`` of the window, then the spacing."""
    await system.host.mem_write(TEST_MEM + 4 * index, index.to_bytes(4, "little"))
    await ClockCycles(system.dut.pci_clk, SPACING)


async def _pulse_input(system, rise=True):
    """The trigger input rises (or falls) between two writes."""
    await ClockCycles(system.dut.pci_clk, SETTLE)
    await system.set_trigger_input(int(rise))
    await ClockCycles(system.dut.pci_clk, SETTLE)


def _words(summaries):
    """The window word each summary's write went to (the index :func:`_write` wrote)."""
    return [(int(address) - TEST_MEM) // 4 for address in summaries["address"]]


@cocotb.test()
async def full_through_sdram(dut):
    """Without ring mode the capture stops by itself when the SDRAM is full: it keeps the
    TRIGGER record and the first ``capacity - 1`` selected writes, in order, nothing lost;
    the writes after it are not recorded."""
    system, transport = await _setup(dut)
    board = Board(transport)
    run = await start_capture(transport, trigger="filter", filters=[WINDOW])
    capacity = await board.read("spy.capacity")
    for index in range(capacity + 4):
        await _write(system, index)
    assert await wait_capture(run) == (False, False)
    result = await finish_capture(run)
    status, trace = result["status"], _trace(result)
    dut._log.info(f"full through SDRAM: status {status}")
    assert status["state"] == "done" and status["lost"] == 0, status
    assert status["count"] == capacity and status["start"] == 0, status
    assert trace.kinds[0] == RecordKind.TRIGGER.value
    assert _words(trace.summaries) == list(range(capacity - 1))
    await system.assert_clean()


@cocotb.test()
async def external_trigger_pre_and_markers_through_sdram(dut):
    """The trigger input pin triggers a capture with 4 pre-trigger records; its rising
    edges are markers among the summaries; the trigger output pulses once, 1 us long."""
    system, transport = await _setup(dut)
    board = Board(transport)
    watch = OutputWatch(dut)
    run = await start_capture(transport, trigger="external", pre=4, count=7, markers=True,
                              filters=[WINDOW])
    for index in range(16):
        await _write(system, index)
        if index == 9:
            await _pulse_input(system, True)        # the trigger, and a marker
            assert (await board.fields("spy.trigger_io"))["level"] == 1
        elif index == 10:
            await _pulse_input(system, False)       # falling: not counted
        elif index == 11:
            await _pulse_input(system, True)        # a marker
    assert await wait_capture(run) == (False, False)
    result = await finish_capture(run)
    watch.stop()
    status, trace = result["status"], _trace(result)
    dut._log.info(f"external trigger through SDRAM: status {status}, pulses "
                  f"{watch.pulses()}")
    assert status["lost"] == 0 and status["count"] == 11, status
    kinds = [RecordKind(k) for k in trace.kinds.tolist()]
    S, T, M = RecordKind.SUMMARY, RecordKind.TRIGGER, RecordKind.MARKER
    assert kinds == [S, S, S, S, T, M, S, S, M, S, S], kinds
    assert _words(trace.summaries) == [6, 7, 8, 9, 10, 11, 12, 13]
    trigger = trace.records(RecordKind.TRIGGER)
    markers = trace.records(RecordKind.MARKER)
    assert int(trigger["source"][0]) == TriggerSource.EXTERNAL.value
    assert int(trigger["timestamp"][0]) == status["trigger_timestamp"]
    # The edge that triggers is the first marker, of the trigger's clock.
    assert markers["timestamp"].tolist()[0] == status["trigger_timestamp"]
    assert markers["falling"].tolist() == [0, 0] and markers["edges"].tolist() == [1, 1]
    summaries = trace.summaries["timestamp"].tolist()
    assert summaries[5] < int(markers["timestamp"][1]) < summaries[6]
    assert [width for _, width in watch.pulses()] == [trigger_pulse_clocks(33)]
    await system.assert_clean()


@cocotb.test()
async def segments_through_sdram(dut):
    """Four segments, 2 records before each trigger and 3 from it: the trigger input rises
    after writes 3, 9, 15 and 21; the spy re-arms by itself after each segment and stops
    after the fourth; the file lists the segments, each holding exactly its writes; the
    trigger output pulses once per segment."""
    system, transport = await _setup(dut)
    board = Board(transport)
    watch = OutputWatch(dut)
    run = await start_capture(transport, trigger="external", pre=2, count=3, segments=4,
                              filters=[WINDOW])
    capacity = await board.read("spy.capacity")
    for index in range(26):
        await _write(system, index)
        if index % 6 == 3:
            await _pulse_input(system, True)
            await _pulse_input(system, False)
    assert await wait_capture(run) == (False, False)
    result = await finish_capture(run)
    watch.stop()
    status, trace = result["status"], _trace(result)
    segments = result["metadata"]["segments"]
    dut._log.info(f"segments through SDRAM: status {status}, segments {segments}")
    assert status["segment"] == 3 and status["lost"] == 0, status
    assert [(s["index"], s["first_record"], s["records"], s["triggered"])
            for s in segments] == [(j, 5 * j, 5, True) for j in range(4)]
    size = capacity // 4
    kinds = [RecordKind(k) for k in trace.kinds.tolist()]
    S, T = RecordKind.SUMMARY, RecordKind.TRIGGER
    for j, segment in enumerate(segments):
        assert segment["start"] // size == j, segment
        assert segment["trigger_index"] == segment["start"] + 2, segment
        part = slice(segment["first_record"], segment["first_record"] + segment["records"])
        assert kinds[part] == [S, S, T, S, S], (j, kinds[part])
    assert _words(trace.summaries) == [6 * j + k for j in range(4) for k in (2, 3, 4, 5)]
    triggers = trace.records(RecordKind.TRIGGER)["timestamp"].tolist()
    assert triggers == [s["trigger_timestamp"] for s in segments]
    assert triggers == sorted(triggers) and len(set(triggers)) == 4
    assert [width for _, width in watch.pulses()] == [trigger_pulse_clocks(33)] * 4
    await system.assert_clean()


@cocotb.test()
async def raw_segments_through_sdram(dut):
    """A raw segmented capture (idle clocks left out): eight segments, each triggered by
    the next write's address phase after it was re-armed, with up to 4 clocks before it
    and 12 from it; each segment's time base puts its trigger record at its trigger's
    timestamp."""
    system, transport = await _setup(dut)
    run = await start_capture(transport, mode="raw", trigger="filter", filters=[WINDOW],
                              pre=4, count=12, segments=8)
    for index in range(24):
        await _write(system, index)
    assert await wait_capture(run) == (False, False)
    result = await finish_capture(run)
    status, metadata = result["status"], result["metadata"]
    segments = metadata["segments"]
    dut._log.info(f"raw segments through SDRAM: status {status}, segments {segments}")
    assert status["segment"] == 7 and status["lost"] == 0, status
    # The whole file: its times restart at each segment (pcispy/trace/file.py).
    trace = parse_trace(trace_bytes(base64.b64decode(result["records"]), metadata))
    assert (trace.kinds == RecordKind.RAW.value).all()
    raw = trace.columns(RecordKind.RAW, ["trigger", "bus.ad", "bus.frame"])
    times = trace.times()
    written = []
    for segment in segments:
        first, count = segment["first_record"], segment["records"]
        marked = (first + np.flatnonzero(raw["trigger"][first:first + count])).tolist()
        assert len(marked) == 1 and marked[0] - first <= 4, segment
        assert first + count - marked[0] == 12, segment
        assert raw["bus.frame"][marked[0]] == 1, segment
        written.append((int(raw["bus.ad"][marked[0]]) - TEST_MEM) // 4)
        assert segment["time_base"] == "trigger", segment
        assert int(times[marked[0]]) == segment["trigger_timestamp"], segment
    # Each segment triggered on a later write than the one before.
    assert written == sorted(set(written)) and len(written) == 8, written
    await system.assert_clean()
