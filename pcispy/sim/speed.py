# SPDX-License-Identifier: BSD-2-Clause
"""Simulation speed: how many PCI clocks per second a Verilator model runs.

``sim.empty_cycles_per_s`` is measured on an empty design with the same clocking as the
system (a ``pci`` domain and a counter), so the other figures can be read as a fraction of
what the simulator itself costs per clock. ``sim.bfm_cycles_per_s`` is the system with the
bus busy on every clock; ``sim.idle_cycles_per_s`` the system with the bus idle, which is
what most of the clocks of an interactive command are (``pcispy irq`` waits thousands of
clocks between interrupts, a capture waits for the traffic it filters).
"""

import json
import os
import tempfile
import time

from amaranth import Module
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from pcispy.pci.bus import Command
from pcispy.sim.launcher import RESULT_ENV, run_bench
from pcispy.sim.system import SystemConfig
from pcispy.sim.verilate import build_model

__all__ = ["EmptyDesign", "measure_empty_cycles_per_s", "measure_bfm_cycles_per_s",
           "measure_idle_cycles_per_s"]


class EmptyDesign(wiring.Component):
    """A ``pci``-domain counter and nothing else.

    Ports:
        count (Out, 32): clocks since reset.
    """
    count: Out(32)

    def elaborate(self, platform):
        m = Module()
        m.d.pci += self.count.eq(self.count + 1)
        return m


#: How many clocks ``empty_speed`` times: about 10 s of wall time, so that the ratio of
#: the system's speed to it is steady from run to run (a few seconds' window is not).
EMPTY_CYCLES = 8_000_000


def measure_empty_cycles_per_s(cycles=EMPTY_CYCLES):
    """Build the empty model and return its simulated clocks per wall-clock second."""
    model = build_model(verilog.convert(EmptyDesign(), name="emptydesign", emit_src=False),
                        "emptydesign")
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "speed.json")
        model.run("pcispy.sim.speed", "empty_speed",
                  env={RESULT_ENV: result, "PCISPY_CYCLES": cycles})
        with open(result) as f:
            return json.load(f)["cycles_per_s"]


def measure_bfm_cycles_per_s():
    """Simulated clocks per second while the host bridge bursts to the test device (the
    32-bit system model, ideal profile)."""
    return _system_cycles_per_s("bfm_speed")


def measure_idle_cycles_per_s():
    """Simulated clocks per second of the 32-bit system (ideal profile) with nothing on
    the bus, after enumeration."""
    return _system_cycles_per_s("idle_speed")


def _system_cycles_per_s(bench):
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "speed.json")
        run_bench("pcispy.sim.speed", bench, SystemConfig(width=32), result=result)
        with open(result) as f:
            return json.load(f)["cycles_per_s"]


try:
    import cocotb
except ImportError:        # the host tool does not need cocotb (an optional dependency)
    cocotb = None

if cocotb is not None:     # the benches below run inside the simulator
    from cocotb.clock import Clock
    from cocotb.triggers import ClockCycles, Timer

    from pcispy.sim.api import SimSystem

    @cocotb.test()
    async def empty_speed(dut):
        """Run the empty design for PCISPY_CYCLES clocks and time it."""
        cycles = int(os.environ["PCISPY_CYCLES"])
        cocotb.start_soon(Clock(dut.pci_clk, 30, unit="ns").start())
        dut.pci_rst.value = 1
        await ClockCycles(dut.pci_clk, 2)
        dut.pci_rst.value = 0
        start = time.perf_counter()
        await Timer(30 * cycles, unit="ns")
        elapsed = time.perf_counter() - start
        assert int(dut.count.value) >= cycles - 2
        with open(os.environ[RESULT_ENV], "w") as f:
            json.dump({"cycles_per_s": cycles / elapsed}, f)

    #: How many 16 KiB bursts ``bfm_speed`` times: 512 are about 2.2 million clocks, a
    #: window long enough to be steady from run to run.
    BFM_BURSTS = 512

    @cocotb.test()
    async def bfm_speed(dut):
        """Host bridge -> test device, 16 KiB unlimited bursts, BFM_BURSTS times; time only
        the commands (the data is placed in the initiator's buffer once)."""
        system = await SimSystem(dut).start()
        window = 0x4000
        await system.test_target.set_windows(mem=(0x9000_0000, window))
        await system.host.buffer_write(0, range(window // 4))
        begin_clock, begin = await system.cycle(), time.perf_counter()
        for _ in range(BFM_BURSTS):
            result = await system.host.run(Command.MEM_WRITE, 0x9000_0000, window // 4,
                                           burst=0, buf_off=0)
            assert result.ok, result
        elapsed = time.perf_counter() - begin
        clocks = await system.cycle() - begin_clock
        await system.assert_clean()
        with open(os.environ[RESULT_ENV], "w") as f:
            json.dump({"cycles_per_s": clocks / elapsed}, f)

    #: How many clocks ``idle_speed`` times: about 10 s of wall time, as ``empty_speed``.
    IDLE_CYCLES = 2_000_000

    @cocotb.test()
    async def idle_speed(dut):
        """Let IDLE_CYCLES clocks pass on the enumerated system with nothing on the bus
        (the agents asleep, the board's spy not armed) and time them."""
        system = await SimSystem(dut).start()
        begin_clock, begin = await system.cycle(), time.perf_counter()
        await system.clocks(IDLE_CYCLES)
        elapsed = time.perf_counter() - begin
        clocks = await system.cycle() - begin_clock
        await system.assert_clean()
        with open(os.environ[RESULT_ENV], "w") as f:
            json.dump({"cycles_per_s": clocks / elapsed}, f)
