# SPDX-License-Identifier: BSD-2-Clause
"""``BusClock.clocks(n)`` sleeps on a timer and still returns where ``ClockCycles(clk, n)``
does: after the same number of rising edges, at the same simulator time, from whatever
point it is called at (right after a rising or a falling edge, at any phase after a timer,
and at the very step of an edge that has not been taken yet).

The bench runs on the empty design of the speed figures (a counter on the bus clock): for
each point of call it measures ``ClockCycles`` first and then ``BusClock.clocks`` from the
same phase a whole number of clocks later, and compares the time and the design's clock
count each advanced.
"""

import json
import os
import tempfile

import cocotb
import pytest

pytestmark = pytest.mark.bfm

RESULT_ENV = "PCISPY_BUS_CLOCK_RESULT"
PERIOD_NS = 30
#: Points of call, by how a bench gets there from a rising edge: ("rise",), ("fall",),
#: ("timer", steps after the edge) (0 and one period land on an edge's step after it
#: was taken; the timer then is the clock's own).
COUNTS = (1, 2, 3, 4, 7, 31, 1000)


async def _point(dut, how, offset):
    from cocotb.triggers import FallingEdge, RisingEdge, Timer
    await RisingEdge(dut.pci_clk)
    if how == "fall":
        await FallingEdge(dut.pci_clk)
    elif how == "timer":
        await Timer(offset, unit="step")


@cocotb.test()
async def clocks_match(dut):
    """Time and clocks each way takes, for every point of call and count."""
    from cocotb.clock import Clock
    from cocotb.simtime import get_sim_time
    from cocotb.triggers import ClockCycles, RisingEdge
    from cocotb.utils import get_sim_steps
    from pcispy.sim.api import BusClock
    period = get_sim_steps(PERIOD_NS, "ns")
    cocotb.start_soon(Clock(dut.pci_clk, PERIOD_NS, unit="ns").start())
    dut.pci_rst.value = 0
    await RisingEdge(dut.pci_clk)
    bus = BusClock(dut.pci_clk, PERIOD_NS)
    bus.note_edge()
    points = [("rise", 0), ("fall", 0)] + [
        ("timer", offset) for offset in (1, period // 4, period // 2 - 1, period // 2,
                                         period // 2 + 1, period - 1, period, 2 * period)]
    results = []
    for how, offset in points:
        for count in COUNTS:
            seen = []
            for wait in (lambda n: ClockCycles(dut.pci_clk, n), bus.clocks):
                await _point(dut, how, offset)
                start, clocks = get_sim_time("step"), int(dut.count.value)
                await wait(count)
                seen.append((get_sim_time("step") - start, int(dut.count.value) - clocks))
            results.append({"point": [how, offset], "count": count, "cycles": seen[0],
                            "bus_clock": seen[1], "period": period})
    with open(os.environ[RESULT_ENV], "w") as out:
        json.dump(results, out)


def test_bus_clock_returns_where_clock_cycles_does():
    from amaranth.back import verilog
    from pcispy.sim.speed import EmptyDesign
    from pcispy.sim.verilate import build_model
    model = build_model(verilog.convert(EmptyDesign(), name="emptydesign", emit_src=False),
                        "emptydesign")
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "clock.json")
        model.run("pcispy.sim.tests.test_bus_clock", "clocks_match", env={RESULT_ENV: result})
        with open(result) as f:
            results = json.load(f)
    period = results[0]["period"]
    assert len(results) == 10 * len(COUNTS)
    for row in results:
        assert row["bus_clock"] == row["cycles"], row
        # ClockCycles itself: the n-th edge from the point of call, at most n clocks on.
        steps, count = row["cycles"][0], row["count"]
        assert (count - 1) * period <= steps <= count * period, row
