# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb side of the simulated PCI system (inside the simulator; the host side that
starts it is :mod:`pcispy.sim.launcher`).

:class:`SimSystem` starts the clock, resets the bus, and offers the operations a test or a
feature needs: enumeration, configuration/I/O/memory reads and writes by the host bridge
(blocking and non-blocking), the host-memory backdoor, interrupts, a reset of the bus in
the middle of a run, and the report of both monitors (the protocol checker's rules on the
pins, the resolver's rules on who drives the lines) with :meth:`SimSystem.assert_clean`.

Python never runs on every PCI clock while traffic flows: every operation writes a command
into an agent's control registers and sleeps until the agent's ``event`` line rises.

Benches receive their parameters through the environment
(:func:`pcispy.sim.launcher.bench_env`, :func:`~pcispy.sim.launcher.run_bench`), so one
cached model serves every test.
"""

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import (ClockCycles, FallingEdge, First, Lock, RisingEdge, Timer,
                             ValueChange)
from cocotb.utils import get_sim_steps

from pcispy.host.errors import PcispyError, TransportError
from pcispy.pci.rules import ALL_RULES, DRIVER_RULES, DRIVERS, RULES
from pcispy.sim.bfm.arbiter import ArbiterDriver
from pcispy.sim.bfm.bridge_driver import BridgeDriver, Type1Config
from pcispy.sim.bfm.firmware import enumerate_bridge, enumerate_bus
from pcispy.sim.bfm.initiator_driver import InitiatorDriver
from pcispy.sim.bfm.legacy import LegacyDriver
from pcispy.sim.bfm.profiles import Profile, profile_by_name
from pcispy.sim.bfm.resolver import AGENT_NONE, shared_lines
from pcispy.sim.bfm.saboteur import SaboteurDriver
from pcispy.sim.bfm.sdram import violation_names
from pcispy.sim.bfm.target_driver import TargetDriver
from pcispy.sim.launcher import CONFIG_ENV, PROFILE_ENV, SEED_ENV
from pcispy.sim.scenarios import SCENARIOS, start_scenario
from pcispy.sim.system import (BOARD_SLOT, MASTERS, REGISTERS, SECONDARY_BUS, SECONDARY_MASTERS,
                               TEST_DEVICE_SLOT, Agent, SystemConfig, SystemReg, driver_names,
                               secondary_driver_names, slot0_is_master, slot0_name)
from pcispy.check.registers import LOG_DEPTH

__all__ = ["BusClock", "ControlPins", "CocotbControl", "SimSystem", "CLOCK_PERIOD_NS"]

#: Bus clock period in ns for each supported frequency.
CLOCK_PERIOD_NS = {33: 30, 66: 15}
#: From this many clocks on, :meth:`SimSystem.clocks` sleeps on a timer rather than
#: waking Python at every clock edge.
_SLEEP_CLOCKS = 3


class BusClock:
    """Lets bus clocks pass without Python running on every clock.

    ``ClockCycles(clk, n)`` wakes Python at each of the ``n`` edges; :meth:`clocks` returns
    at the same point (right after the ``n``-th rising edge) from one timer and one edge,
    once :meth:`note_edge` has told it the clock's phase. ``clk`` is a clock that a cocotb
    :class:`~cocotb.clock.Clock` of ``period_ns`` drives.
    """

    def __init__(self, clk, period_ns):
        self.clk = clk
        self.period = get_sim_steps(period_ns, "ns")
        #: Simulator time (steps) of a rising edge, once noted.
        self.edge = None

    def note_edge(self):
        """Note the clock's phase: call right after a rising edge (``RisingEdge``,
        ``ClockCycles``)."""
        self.edge = get_sim_time("step")

    async def clocks(self, count):
        """Let ``count`` rising edges pass and return right after the last one, as
        ``ClockCycles(clk, count)`` does: an edge due in this very step and not taken yet
        counts. One timer sleeps until half a clock before the last edge."""
        period = self.period
        if self.edge is None or count < _SLEEP_CLOCKS or period % 2:
            await ClockCycles(self.clk, count)
            return
        now = get_sim_time("step")
        phase = (now - self.edge) % period
        if phase == 0 and not int(self.clk.value):
            first = now                   # this step's edge is still to come
        else:
            first = now + period - phase
        await Timer(first + (count - 1) * period - period // 2 - now, unit="step")
        await RisingEdge(self.clk)


class ControlPins:
    """The system top's control-port pins (``ctl_*``), the bus clock's falling edge and
    ``cpu_held``, each looked up once. Every control access passes here, a Python wake-up
    at each of its two clocks; a handle looked up by name or a pin written again with its
    own value costs Python time at each (time the simulator waits; no bus clock passes).

    ``ctl_sel``, ``ctl_addr`` and ``ctl_wdata`` keep what was last driven on them (only
    this object drives them), so :meth:`present` writes only what changes: the pins carry
    the same values clock for clock as if every access wrote all of them.
    """

    def __init__(self, dut):
        self.falling = FallingEdge(dut.pci_clk)
        self.sel, self.addr, self.wdata = dut.ctl_sel, dut.ctl_addr, dut.ctl_wdata
        self.we, self.re, self.rdata = dut.ctl_we, dut.ctl_re, dut.ctl_rdata
        self.cpu_held = dut.cpu_held
        self._sel = self._addr = self._wdata = None

    def reset(self):
        """Drive every control input low (no access)."""
        for pin in (self.we, self.re, self.sel, self.addr, self.wdata):
            pin.value = 0
        self._sel = self._addr = self._wdata = 0

    def present(self, sel, addr):
        """Drive ``sel`` and ``addr`` for this clock's access."""
        if sel != self._sel:
            self.sel.value = self._sel = sel
        if addr != self._addr:
            self.addr.value = self._addr = addr

    def data(self, value):
        """Drive ``wdata`` for this clock's write."""
        if value != self._wdata:
            self.wdata.value = self._wdata = value


class CocotbControl:
    """A control accessor for one agent of the system, from cocotb.

    Same methods as :class:`pcispy.sim.control.PysimControl` (``write``, ``read``,
    ``wait_event``, ``clocks``), so agent drivers run unchanged in both. ``backdoor`` is
    the cocotb handle of the agent's instance, for direct memory access. The host
    initiator's accesses are the host CPU's: they wait while the CPU runs an interrupt
    handler (:meth:`SimSystem.cpu_free`).
    """
    def __init__(self, system, agent):
        self.system = system
        self.agent = int(agent)
        self.backdoor = getattr(system.dut, agent.name.lower(), None)
        self.cpu = agent == Agent.HOST_INITIATOR

    async def write(self, addr, value):
        pins = self.system.pins
        if self.cpu:
            await self.system.cpu_free()
        async with self.system.ctl_lock:
            await pins.falling
            pins.present(self.agent, addr)
            pins.data(value & 0xFFFF_FFFF)
            pins.we.value = 1
            await pins.falling
            pins.we.value = 0

    async def read(self, addr):
        pins = self.system.pins
        if self.cpu:
            await self.system.cpu_free()
        async with self.system.ctl_lock:
            await pins.falling
            pins.present(self.agent, addr)
            pins.re.value = 1
            await pins.falling
            pins.re.value = 0
            return int(pins.rdata.value)

    async def wait_event(self, timeout=10_000_000):
        """Sleep until the agent's ``event`` is high (``timeout`` in clocks)."""
        dut = self.system.dut
        deadline = Timer(timeout * self.system.period_ns, unit="ns")
        while not (int(dut.events.value) >> self.agent) & 1:
            fired = await First(ValueChange(dut.events), deadline)
            if fired is deadline:
                raise TimeoutError(f"agent {self.agent}: no event within {timeout} clocks")

    async def clocks(self, count):
        await self.system.clocks(count)


class SimSystem:
    """The simulated system as seen from a cocotb bench (``dut`` is the model's top)."""

    def __init__(self, dut, *, profile=None, seed=None, clock_mhz=33):
        self.dut = dut
        self.config = SystemConfig(**json.loads(os.environ.get(CONFIG_ENV, "{}")))
        self.profile_name = profile or os.environ.get(PROFILE_ENV, "ideal")
        self.seed = int(seed if seed is not None else os.environ.get(SEED_ENV, "1"))
        self.period_ns = CLOCK_PERIOD_NS[clock_mhz]
        self.clock_mhz = clock_mhz
        self.ctl_lock = Lock()
        self.pins = ControlPins(dut)
        self.ctl = {agent: CocotbControl(self, agent) for agent in Agent}
        self.bus_clock = BusClock(dut.pci_clk, self.period_ns)
        self._build_drivers()

    def _build_drivers(self):
        width = self.config.width
        self.host = InitiatorDriver(self.ctl[Agent.HOST_INITIATOR], width=width)
        self.host_memory = TargetDriver(self.ctl[Agent.HOST_MEMORY], width=width)
        self.arbiter = ArbiterDriver(self.ctl[Agent.ARBITER])
        if self.config.test_device:
            self.test_initiator = InitiatorDriver(self.ctl[Agent.TEST_INITIATOR], width=width)
            self.test_target = TargetDriver(self.ctl[Agent.TEST_TARGET], width=width)
        if self.config.legacy:
            self.legacy = LegacyDriver(self.ctl[Agent.LEGACY])
        if self.config.saboteur:
            self.saboteur = SaboteurDriver(self.ctl[Agent.SABOTEUR], width=width)
        if self.config.bridge:
            self.bridge = BridgeDriver(self.ctl[Agent.BRIDGE])
            self.secondary_arbiter = ArbiterDriver(self.ctl[Agent.SECONDARY_ARBITER])
        # Host memory answers from bus address 0; DMA buffers are carved from it.
        self.host_memory_size = (1 << self.config.host_memory_addr_bits) * (width // 8)
        self.dma_region = (0, self.host_memory_size)

    async def start(self):
        """Start the bus clock, hold RST# for 8 clocks, apply the profile."""
        dut = self.dut
        self.pins.reset()
        dut.trigger_in.value = 0
        cocotb.start_soon(Clock(dut.pci_clk, self.period_ns, unit="ns").start())
        dut.pci_rst.value = 1
        await ClockCycles(dut.pci_clk, 8)
        self.bus_clock.note_edge()
        await FallingEdge(dut.pci_clk)
        dut.pci_rst.value = 0
        # A scenario name (pcispy/sim/scenarios.py) runs its background traffic on the host
        # bridge profile it names.
        scenario = SCENARIOS.get(self.profile_name)
        await self._set_up(scenario.profile if scenario else self.profile_name)
        if scenario:
            start_scenario(self, scenario.name, self.seed)
        return self

    async def clocks(self, count):
        """Let ``count`` bus clocks pass (:meth:`BusClock.clocks`)."""
        await self.bus_clock.clocks(count)

    async def set_trigger_input(self, level):
        """Drive the board's trigger input pin to ``level`` from the next falling clock
        edge (the board samples it at the rising edge after)."""
        await FallingEdge(self.dut.pci_clk)
        self.dut.trigger_in.value = int(level)

    def trigger_output(self):
        """The board's trigger output pin now (0 or 1)."""
        return int(self.dut.trigger_out.value)

    async def _set_up(self, profile):
        """What RST# undoes and the system needs: host memory's window, the profile."""
        await self.host_memory.set_windows(mem=(0, self.host_memory_size))
        await self.apply_profile(profile)

    async def pulse_reset(self, clocks=8):
        """Assert RST# for ``clocks`` clocks in the middle of a run (from one falling
        clock edge), then set up again what :meth:`start` set up: host memory's window
        and the profile (target knobs, arbiter parking). Everything else on the bus is
        back at its reset state (the board unconfigured, the test device's windows
        closed, the arbiter's knobs off, the checker's rule mask all enabled). The
        monitors' evidence and the saboteur's settings survive (they run without the
        bus reset)."""
        dut = self.dut
        await FallingEdge(dut.pci_clk)
        dut.pci_rst.value = 1
        await ClockCycles(dut.pci_clk, clocks)
        await FallingEdge(dut.pci_clk)
        dut.pci_rst.value = 0
        await self._set_up(self.profile)

    async def apply_profile(self, name):
        """Program the host-memory target with the named behaviour profile (a name or a
        :class:`~pcispy.sim.bfm.profiles.Profile`), and the arbiter with its parking."""
        if isinstance(name, Profile):
            profile = name
        else:
            try:
                profile = profile_by_name(name)
            except ValueError as error:      # its message names the known profiles
                raise PcispyError(str(error)) from None
        self.profile = profile
        await self.host_memory.apply_profile(profile, seed=self.seed)
        if self.config.bridge:
            await self.bridge.apply_profile(profile.bridge or "transparent")
        park = profile.park
        if park == "board" and not slot0_is_master(self.config):
            park = "host"          # a target-only core in slot 0 has no GNT# to park on
        if park == "last":
            await self.arbiter.park_on_last()
        else:
            await self.arbiter.park_on(MASTERS[park])

    async def enumerate(self):
        """Enumerate the bus like firmware; return the :class:`Function` of every slot
        (with a bridge: the board's is the one on the secondary bus)."""
        slots = [BOARD_SLOT] if self.config.board and not self.config.bridge else []
        if self.config.test_device:
            slots.append(TEST_DEVICE_SLOT)
        behind, bases = [], {}
        if self.config.bridge:
            behind, bases = await enumerate_bridge(self.host, BOARD_SLOT, SECONDARY_BUS,
                                                   [BOARD_SLOT])
        self.devices = behind + await enumerate_bus(self.host, slots, **bases)
        return self.devices

    async def enumerate_board(self):
        """Enumerate, then return the board's BARs as the sim transport wants them."""
        devices = await self.enumerate()
        bus = self.board_bus()
        board = next((function for function in devices
                      if function.slot == BOARD_SLOT and function.bus == bus), None)
        if board is None:
            raise TransportError("no device answers in the board's slot")
        return {bar.index: {"kind": bar.kind, "address": bar.address, "size": bar.size}
                for bar in board.bars}

    def board_bus(self):
        """The number of the bus the board is on (0; with a bridge, the secondary's)."""
        return SECONDARY_BUS if self.config.bridge else 0

    def board_config(self):
        """Configuration access to the board's slot (``config_read``/``config_write`` of
        :class:`~pcispy.sim.bfm.initiator_driver.InitiatorDriver`, ``slot`` = BOARD_SLOT):
        Type 0 cycles by the host bridge, or Type 1 through the bridge."""
        if not self.config.bridge:
            return self.host
        return Type1Config(self.host, self.board_bus())

    async def cpu_free(self):
        """Wait while the host's CPU runs an interrupt handler (the interrupt responder
        with ``hold_cpu``: :class:`~pcispy.sim.bfm.irq_responder.InterruptResponder`)."""
        pins = self.pins
        while int(pins.cpu_held.value):
            await pins.falling

    async def wait_interrupt(self, timeout_s):
        """Wait until INTA# is asserted on the bus (``timeout_s`` of simulated time);
        False when it was not within that time."""
        clocks = max(1, int(timeout_s * self.clock_mhz * 1e6))
        try:
            await self.ctl[Agent.SYSTEM].wait_event(timeout=clocks)
        except TimeoutError:
            return False
        return True

    # --- status ------------------------------------------------------------------

    async def cycle(self):
        """Clocks since the model started (64-bit, read atomically): the one count of
        the system, which the checker's and the resolver's logs use too; a mid-run RST#
        does not reset it. The value is that of the clock the read is presented in."""
        ctl = self.ctl[Agent.SYSTEM]
        lo = await ctl.read(SystemReg.CYCLE_LO)
        hi = await ctl.read(SystemReg.CYCLE_HI)
        return hi << 32 | lo

    async def pin_signature(self):
        """The signature of every agent's pins over every clock so far (64-bit, read
        atomically; :class:`~pcispy.sim.system.SystemReg` ``PINS_LO``): two runs of one
        workload that end with the same signature drove every pin alike in every clock."""
        ctl = self.ctl[Agent.SYSTEM]
        lo = await ctl.read(SystemReg.PINS_LO)
        hi = await ctl.read(SystemReg.PINS_HI)
        return hi << 32 | lo

    async def checker_report(self, *, secondary=False):
        """Both monitors' evidence since the last :meth:`clear_checker` (``secondary``:
        those of the bus behind the bridge)::

            {"violations": {pin rule name: count}, "first": {"rule", "cycle"} or None,
             "log": [{"cycle", "rules": [pin rule names], "master": name or None,
                      "target": name or None}],
             "drivers": {driver rule name: clocks broken},
             "driver_log": [{"cycle", "rule", "line", "agent_a", "agent_b"}],
             "contention": [line names], "contention_first": {"line", "cycle"}}

        ``violations``/``first``/``log`` are the protocol checker's (rules on the pins);
        ``log`` holds its first 16 clocks with a violation, ``master`` the master of the
        transaction then (a :data:`~pcispy.sim.system.MASTERS` name, slot 0's by its
        :func:`~pcispy.sim.system.slot0_name`), ``target`` the agent that answered as its
        target (a :func:`~pcispy.sim.system.driver_names` name). ``drivers`` and
        ``driver_log`` are the resolver's (:data:`~pcispy.pci.rules.DRIVER_RULES`):
        the log holds its first 16 violations, one per rule per clock, naming the first
        line it was broken on and agents A and B by :func:`~pcispy.sim.system.driver_names`
        name (None for none; what A and B are per rule: :mod:`pcispy.sim.bfm.resolver`).
        Log cycles count clocks since the model started. ``contention`` lists the lines
        two agents drove at once (``contention_first`` only when there is one). With an
        SRAM trace memory also ``"sram": {"errors", "contention"}`` (the SRAM model's
        timing breaches, clocks both sides drove its data pins); with an SDRAM one
        ``"sdram": {"violations", "errors", "refreshes"}`` (the names of the data-sheet
        rules the SDRAM model saw broken, :class:`~pcispy.sim.bfm.sdram.Violation`; the
        clocks with one; the REFRESH commands it took). The secondary bus's report names
        its agents and masters by :func:`~pcispy.sim.system.secondary_driver_names` and
        :data:`~pcispy.sim.system.SECONDARY_MASTERS`; with a bridge, master 1 of the
        primary bus is ``"bridge"``, and the primary's report holds the secondary's as
        ``"secondary"``."""
        ctl = self.ctl[Agent.SECONDARY_SYSTEM if secondary else Agent.SYSTEM]
        report = {"violations": {}, "first": None, "log": [], "drivers": {},
                  "driver_log": [], "contention": []}
        if self.config.checker:
            if await ctl.read(SystemReg.CHECK_ANY):
                for rule in RULES:
                    await ctl.write(SystemReg.CHECK_INDEX, rule.id)
                    count = await ctl.read(SystemReg.CHECK_COUNT)
                    if count:
                        report["violations"][rule.name] = count
                first = await ctl.read(SystemReg.CHECK_FIRST_RULE)
                report["first"] = {"rule": RULES[first].name,
                                   "cycle": await ctl.read(SystemReg.CHECK_FIRST_CYCLE)}
                report["log"] = await self._checker_log(ctl, RULES, secondary)
        if not secondary and self.config.board and self.config.trace_memory == "sram":
            report["sram"] = {"errors": await ctl.read(SystemReg.SRAM_ERRORS),
                              "contention": await ctl.read(SystemReg.SRAM_CONTENTION)}
        if not secondary and self.config.board and self.config.trace_memory == "sdram":
            report["sdram"] = {
                "violations": violation_names(await ctl.read(SystemReg.SDRAM_FLAGS)),
                "errors": await ctl.read(SystemReg.SDRAM_ERRORS),
                "refreshes": await ctl.read(SystemReg.SDRAM_REFRESHES)}
        names = list(shared_lines(self.config.width))
        agents = (secondary_driver_names if secondary else driver_names)(self.config)

        def agent(index):
            return None if index == AGENT_NONE else agents[index]

        flags = await ctl.read(SystemReg.DRIVER_FLAGS)
        for rule in DRIVER_RULES:
            if flags >> rule.id & 1:
                report["drivers"][rule.name] = await ctl.read(SystemReg.DRIVER_COUNT + rule.id)
        for index in range(await ctl.read(SystemReg.DRIVER_LOG_ENTRIES) if flags else 0):
            await ctl.write(SystemReg.DRIVER_LOG_INDEX, index)
            entry = REGISTERS["DRIVER_LOG_ENTRY"].unpack(
                await ctl.read(SystemReg.DRIVER_LOG_ENTRY))
            report["driver_log"].append({
                "cycle": await ctl.read(SystemReg.DRIVER_LOG_CYCLE),
                "rule": DRIVER_RULES[entry["rule"]].name,
                "line": names[entry["line"]],
                "agent_a": agent(entry["agent_a"]),
                "agent_b": agent(entry["agent_b"])})
        lines = await ctl.read(SystemReg.CONTENTION)
        report["contention"] = [names[i] for i in range(len(names)) if lines >> i & 1]
        if lines:
            report["contention_first"] = {
                "line": names[await ctl.read(SystemReg.CONTENTION_LINE)],
                "cycle": await ctl.read(SystemReg.CONTENTION_CYCLE)}
        if self.config.bridge and not secondary:
            report["secondary"] = await self.checker_report(secondary=True)
        return report

    async def _checker_log(self, ctl, rules, secondary):
        """The protocol checker's log: its first clocks with a violation."""
        agents = (secondary_driver_names if secondary else driver_names)(self.config)
        masters = SECONDARY_MASTERS if secondary else MASTERS
        by_number = {number: name for name, number in masters.items()}
        by_number[masters["board"]] = ("bridge" if self.config.bridge and not secondary
                                       else slot0_name(self.config))
        log = []
        for index in range(min(LOG_DEPTH, await ctl.read(SystemReg.CHECK_LOG_ENTRIES))):
            await ctl.write(SystemReg.CHECK_LOG_INDEX, index)
            vector = (await ctl.read(SystemReg.CHECK_LOG_RULES_HI) << 32
                      | await ctl.read(SystemReg.CHECK_LOG_RULES_LO))
            target = await ctl.read(SystemReg.CHECK_LOG_TARGET)
            log.append({"cycle": await ctl.read(SystemReg.CHECK_LOG_CYCLE),
                        "rules": [rule.name for rule in rules if vector >> rule.id & 1],
                        "master": by_number.get(await ctl.read(SystemReg.CHECK_LOG_MASTER)),
                        "target": agents[target] if target < len(agents) else None})
        return log

    async def clear_checker(self):
        await self.ctl[Agent.SYSTEM].write(SystemReg.CLEAR, 1)
        if self.config.bridge:
            await self.ctl[Agent.SECONDARY_SYSTEM].write(SystemReg.CLEAR, 1)

    async def set_rule_enable(self, mask):
        ctl = self.ctl[Agent.SYSTEM]
        await ctl.write(SystemReg.CHECK_ENABLE_LO, mask & 0xFFFF_FFFF)
        await ctl.write(SystemReg.CHECK_ENABLE_HI, mask >> 32)

    async def assert_clean(self, expected=(), *, secondary_expected=()):
        """Fail unless the SRAM or SDRAM (if any) saw its rules kept, the checker rules
        that fired are exactly the pin rules of ``expected``, and no driver rule fired but
        those of ``expected`` (rule names of either monitor: a profile's
        ``breaks_rules``, broken on purpose; ``"contention"`` is a driver rule). With a
        bridge, the same for the secondary bus with ``secondary_expected``."""
        await self._assert_clean(expected, secondary=False)
        if self.config.bridge:
            await self._assert_clean(secondary_expected, secondary=True)

    async def _assert_clean(self, expected, *, secondary):
        known = {rule.name: rule.seen_by for rule in ALL_RULES}
        unknown = sorted(set(expected) - set(known))
        if unknown:
            raise ValueError(f"unknown rules {unknown}")
        pins = {name for name in expected if known[name] != DRIVERS}
        drivers = set(expected) - pins
        report = await self.checker_report(secondary=secondary)
        where = "secondary bus: " if secondary else ""
        assert "contention" in drivers or not report["contention"], \
            f"{where}two drivers on a line: {report}"
        unexpected = sorted(set(report["drivers"]) - drivers)
        assert not unexpected, f"{where}driver rules fired {unexpected}: {report}"
        assert report.get("sram", {"errors": 0, "contention": 0}) == \
            {"errors": 0, "contention": 0}, f"the SRAM's pins misused: {report}"
        assert not report.get("sdram", {}).get("violations"), \
            f"the SDRAM's rules broken: {report['sdram']}"
        assert set(report["violations"]) == pins, \
            f"{where}checker rules fired {sorted(report['violations'])}, expected " \
            f"{sorted(pins)}: {report}"
