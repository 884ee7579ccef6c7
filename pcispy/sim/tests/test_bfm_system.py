# SPDX-License-Identifier: BSD-2-Clause
"""The bus models against each other in the Verilator system (benches in bench_bfm.py)."""

import pytest

from pcispy.sim.launcher import run_bench
from pcispy.sim.bfm.profiles import PROFILES
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.bfm

BENCH = "pcispy.sim.tests.bench_bfm"
#: The host-bridge profiles (the rtc profile belongs to the legacy device).
HOST_PROFILES = sorted(name for name in PROFILES if name != "rtc")


def _config(width):
    # The whole system (the board sits idle in its slot): one model per width serves
    # every bench of the project.
    return SystemConfig(width=width)


@pytest.mark.parametrize("width", [32, 64])
def test_host_bridge_against_test_device(width):
    # One simulator process for the three benches: each starts its system afresh, and a
    # simulator's start (about 3 s of CPU) is most of what each costs alone.
    run_bench(BENCH, ["memory_every_command_and_burst", "io_and_config",
                      "every_termination"], _config(width))


@pytest.mark.parametrize("profile", HOST_PROFILES)
def test_test_device_masters_host_memory_32(profile):
    run_bench(BENCH, "test_device_masters_host_memory", _config(32), profile=profile)


@pytest.mark.parametrize("profile", ["ideal", "alphaserver4100"])
def test_test_device_masters_host_memory_64(profile):
    run_bench(BENCH, "test_device_masters_host_memory", _config(64), profile=profile)


#: The fixed seeds CI runs; more with PCISPY_SEEDS=N.
SEEDS = list(range(1, 1 + int(__import__("os").environ.get("PCISPY_SEEDS", "4"))))


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("width", [32, 64])
def test_randomised_traffic(width, seed):
    run_bench(BENCH, "randomised_traffic", _config(width), seed=seed)


# --- the clock gate and the view of a sleeping agent (pcispy/sim/bfm/gate.py) -----------

#: Per clock: wake (the bus part), access (a control-port access begins at the falling
#: edge before). Asleep runs of one and several clocks, an access alone, back to back.
GATE_PATTERN = [(1, 0), (1, 0), (0, 0), (0, 0), (0, 0), (1, 0), (0, 0), (0, 1), (0, 0),
                (0, 0), (0, 0), (0, 1), (1, 0), (0, 0), (0, 0), (1, 1), (0, 0), (0, 0)]


def _gate_probe():
    """A counter on every clock, and gated logic that counts its own clocks (``ticks``)
    and copies the counter through the view (``seen``)."""
    from amaranth import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from pcispy.sim.bfm.gate import Gate

    class GateProbe(wiring.Component):
        wake: In(1)
        access: In(1)
        count: Out(8)
        ticks: Out(8)
        seen: Out(8)

        def elaborate(self, platform):
            top, logic = Module(), Module()
            top.d.sync += self.count.eq(self.count + 1)
            gate = Gate(top)
            logic.d.sync += [self.ticks.eq(self.ticks + 1),
                             self.seen.eq(gate.view(self.count, "count"))]
            gate.add(logic, self.wake | self.access, self.wake, self.access)
            return top

    return GateProbe()


def gate_expected(pattern):
    """``[(count, ticks, seen)]`` after each rising edge: the gated logic runs at the edges
    with wake or access and at the one after each of those, and then sees the counter
    as it was before the edge."""
    count = ticks = seen = 0
    woke = False
    out = []
    for wake, access in pattern:
        awake = bool(wake or access or woke)
        if awake:
            ticks, seen = ticks + 1, count
        woke = bool(wake or access)
        count += 1
        out.append((count, ticks, seen))
    return out


def test_gate_runs_exactly_its_clocks():
    import json
    import os
    import tempfile
    from amaranth.back import verilog
    from pcispy.sim.pcisystem import RESET_FOLLOW_SOURCE
    from pcispy.sim.verilate import build_model
    text = verilog.convert(_gate_probe(), name="gateprobe", emit_src=False)
    model = build_model(text, "gateprobe", sources=[RESET_FOLLOW_SOURCE])
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "gate.json")
        model.run("pcispy.sim.tests.test_bfm_system", "gate_bench",
                  env={"PCISPY_RESULT": result, "PCISPY_PATTERN": json.dumps(GATE_PATTERN)})
        with open(result) as f:
            assert [tuple(row) for row in json.load(f)] == gate_expected(GATE_PATTERN)


try:
    import cocotb
except ImportError:        # pytest alone does not need it
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def gate_bench(dut):
        """Drive the probe's wake and access from falling edges; record the probe after
        every rising edge."""
        import json
        import os
        from cocotb.clock import Clock
        from cocotb.triggers import FallingEdge, RisingEdge, Timer
        pattern = json.loads(os.environ["PCISPY_PATTERN"])
        dut.wake.value = 0
        dut.access.value = 0
        dut.rst.value = 1
        cocotb.start_soon(Clock(dut.clk, 30, unit="ns").start())
        await RisingEdge(dut.clk)
        await Timer(1, unit="ns")
        dut.rst.value = 0
        rows = []
        for wake, access in pattern:
            # The bus part changes just after a rising edge, as the bus does; the access
            # at the falling edge, as Python's control port does.
            dut.wake.value = wake
            await FallingEdge(dut.clk)
            dut.access.value = access
            await RisingEdge(dut.clk)
            await Timer(1, unit="ns")
            rows.append((int(dut.count.value), int(dut.ticks.value), int(dut.seen.value)))
        with open(os.environ["PCISPY_RESULT"], "w") as f:
            json.dump(rows, f)
