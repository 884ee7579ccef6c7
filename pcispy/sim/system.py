# SPDX-License-Identifier: BSD-2-Clause
"""The simulated PCI system: the board and the behavioural agents on one bus.

Everything here is Amaranth RTL compiled into one Verilator model: the board under test
(with its real pads, so the I/O flip-flops and their one-clock delays are simulated as they
will be placed), the host bridge (an initiator, the host-memory target and the interrupt
responder), the arbiter, a test device (target + initiator), a legacy ISA-bridge device,
the bus resolver and the protocol checker.

Slots and masters::

    slot 0: the board (IDSEL = AD[16])        master 0: the host bridge
    slot 1: the test device (IDSEL = AD[17])  master 1: the board
                                               master 2: the test device
                                               master 3: the saboteur

The saboteur (pcispy/sim/bfm/saboteur.py) breaks the resolver's driver rules on command: a master
that can park badly and two channels that drive any line at any moment, three agents on
the resolver (``SystemConfig(saboteur=False)`` leaves it out; idle, it drives nothing).
The resolver, the saboteur and the protocol checker run on the bus clock without the bus
reset (:func:`driver_names` lists the resolver's agents in order).

With ``SystemConfig(trace_memory="sram")`` the board's spy keeps its trace in an
asynchronous SRAM model (pcispy/sim/bfm/sram.py) wired to the board's SRAM pins, as a board with
SRAM would have it; its timing breaches and data-pin contention are system registers.
With ``SystemConfig(trace_memory="sdram")`` the trace goes to an SDRAM model written from
the data sheet (pcispy/sim/bfm/sdram.py) on the board's SDRAM pins, clocked by the bus clock
like the board's SDRAM controller; the rules it saw broken are system registers.
``SystemConfig(decode="slow")`` builds the board's target with slow decode, as the
bitstreams are built.

With ``SystemConfig(bridge=True)`` slot 0 sits behind a PCI-to-PCI bridge
(pcispy/sim/bfm/bridge.py): the bridge takes slot 0 and master 1 of the bus above
(the primary), and the board is device 0 (IDSEL = AD[16]) and master 1 of a bus of its
own (the secondary, bus number :data:`SECONDARY_BUS`), whose master 0 is the bridge,
with a resolver, an arbiter and a protocol checker of its own (:func:`_secondary_bus`;
its evidence is the :attr:`Agent.SECONDARY_SYSTEM` registers, its agents
:func:`secondary_driver_names`). The board's INTA# reaches the primary through the
bridge.

Python reaches every agent through one multiplexed control port (:class:`Agent` picks
which); the model's top-level ports are only the clock, the reset, that port and the
board's two trigger pins (``trigger_in``, ``trigger_out``). See
:mod:`pcispy.sim.control` for the access timing and :mod:`pcispy.sim.api` for the cocotb
side.

Imports: the CLI and the launcher import this module for :class:`SystemConfig` and
:func:`build_system`, and a cached model needs no elaboration, so the gateware of the
board and of the bus models (more than the rest of the CLI takes to load) is imported
only where a system is elaborated.
"""

import enum
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from amaranth import (Cat, ClockDomain, Const, ClockSignal, DomainRenamer, Instance, Module, Mux,
                      ResetSignal, Signal)
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.bus import ACTIVE_LOW, BusState, DevselSpeed, bus_lines
from pcispy.pci.rules import DRIVER_RULES
from pcispy.sim.control import (CONTROL_ADDR_BITS, ControlRegisters, ControlSignature, ControlField,
                                ControlRegister, register_reads, register_writes, written)
from pcispy.sim.bfm.arbiter import Arbiter
from pcispy.sim.bfm.resolver import BusResolver, shared_lines
from pcispy.core import ram
from pcispy.sim.core import CoreDescription, core_component
from pcispy.sim import build_progress, verilate

__all__ = ["Agent", "SystemConfig", "PCISystem", "build_system", "SystemReg", "REGISTERS",
           "BOARD_SLOT", "TEST_DEVICE_SLOT", "IDSEL_AD_BIT", "MASTERS", "driver_names",
           "slot0_component", "slot0_is_master", "slot0_name", "generator_key",
           "RESET_FOLLOW_SOURCE", "SECONDARY_BUS", "SECONDARY_MASTERS",
           "secondary_driver_names"]

#: The Verilog of the system's RST# register (:class:`PCISystem`).
RESET_FOLLOW_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reset_follow.v")

#: IDSEL of slot k is AD[IDSEL_AD_BIT + k].
IDSEL_AD_BIT = 16
BOARD_SLOT = 0
TEST_DEVICE_SLOT = 1
#: Master numbers on the arbiter.
MASTERS = {"host": 0, "board": 1, "test_device": 2, "saboteur": 3}
#: With a bridge: the secondary bus's number, and the master numbers on its arbiter.
SECONDARY_BUS = 1
SECONDARY_MASTERS = {"bridge": 0, "board": 1}


class Agent(enum.IntEnum):
    """Control-port select values (``ctl_sel``) of the agents."""
    HOST_INITIATOR = 0
    HOST_MEMORY = 1
    IRQ_RESPONDER = 2
    TEST_INITIATOR = 3
    TEST_TARGET = 4
    LEGACY = 5
    ARBITER = 6
    SYSTEM = 7
    SABOTEUR = 8
    BRIDGE = 9
    SECONDARY_ARBITER = 10
    SECONDARY_SYSTEM = 11


#: The system's own control-port registers (:attr:`Agent.SYSTEM`).
REGISTERS = ControlRegisters("SystemReg", [
    ControlRegister("CYCLE_LO", 0, doc="clocks since the model started, the one count the "
                    "checker and resolver logs use too (RST# does not reset it); reading LO "
             "latches HI"),
    ControlRegister("CYCLE_HI", 1),
    ControlRegister("CONTENTION", 2, doc="sticky flags, one per shared line (shared_lines order)"),
    ControlRegister("CONTENTION_LINE", 3, doc="index of the line of the first contention"),
    ControlRegister("CONTENTION_CYCLE", 4),
    ControlRegister("CLEAR", 5, doc="write 1: clear contention and checker evidence"),
    ControlRegister("CHECK_ANY", 8, doc="1 when any checker rule fired"),
    ControlRegister("CHECK_FIRST_RULE", 9),
    ControlRegister("CHECK_FIRST_CYCLE", 10),
    ControlRegister("CHECK_INDEX", 11, doc="write a rule index, then read CHECK_COUNT"),
    ControlRegister("CHECK_COUNT", 12),
    ControlRegister("CHECK_ENABLE_LO", 13, doc="rule enable mask, bits 0..31"),
    ControlRegister("CHECK_ENABLE_HI", 14, doc="rule enable mask, bits 32..63"),
    ControlRegister("SRAM_ERRORS", 15,
                    doc="with an SRAM trace memory: the SRAM model's timing breaches"),
    ControlRegister("SRAM_CONTENTION", 16,
                    doc="clocks both the board and the SRAM drove the SRAM's data pins"),
    ControlRegister("SDRAM_FLAGS", 6, doc="with an SDRAM trace memory: the SDRAM model's broken "
                    "rules, sticky, bit = pcispy.sim.bfm.sdram.Violation"),
    ControlRegister("SDRAM_ERRORS", 7, doc="clocks the SDRAM model saw a rule broken in"),
    ControlRegister("SDRAM_REFRESHES", 22, doc="REFRESH commands the SDRAM model took"),
    # The resolver's driver rules (pcispy/pci/rules.py DRIVER_RULES; bit/offset = id).
    ControlRegister("DRIVER_FLAGS", 17, doc="sticky flags, one per driver rule"),
    ControlRegister("DRIVER_LOG_ENTRIES", 18,
                    doc="entries in the resolver's violation log (0..16)"),
    ControlRegister("DRIVER_LOG_INDEX", 19, doc="write an entry index, then read the entry"),
    ControlRegister("DRIVER_LOG_CYCLE", 20,
                    doc="the entry's cycle (clocks since the model started)"),
    ControlRegister("DRIVER_LOG_ENTRY", 21, doc="the entry", fields=(
        ControlField("rule", 0, 8, "the driver rule's id"),
        ControlField("line", 8, 8, "the line (index into shared_lines)"),
        ControlField("agent_a", 16, 8, "agent A (index into driver_names(), 15 = none)"),
        ControlField("agent_b", 24, 8, "agent B (likewise)"),
    )),
    # The protocol checker's violation log (one entry per clock with a violation).
    ControlRegister("CHECK_LOG_ENTRIES", 24, doc="entries in the checker's log (0..16)"),
    ControlRegister("CHECK_LOG_INDEX", 25, doc="write an entry index, then read the entry"),
    ControlRegister("CHECK_LOG_CYCLE", 26,
                    doc="the entry's cycle (clocks since the model started)"),
    ControlRegister("CHECK_LOG_RULES_LO", 27, doc="the rules broken in that clock, bits 0..31"),
    ControlRegister("CHECK_LOG_RULES_HI", 28, doc="bits 32..63"),
    ControlRegister("CHECK_LOG_MASTER", 29, doc="the master of the transaction then (7: unknown)"),
    ControlRegister("CHECK_LOG_TARGET", 30, doc="the agent that answered as the target then "
                    "(index into driver_names(); 15: none)"),
    ControlRegister("DRIVER_COUNT", 32, words=len(DRIVER_RULES),
                    doc="word = driver rule id: clocks that rule was broken in (saturating)"),
    ControlRegister("PINS_LO", 48, doc="the signature of every agent's pins (each line's output "
                    "enable and, while enabled, its output; REQ#/GNT#, RST#) over every clock so "
             "far; reading LO latches HI"),
    ControlRegister("PINS_HI", 49),
])

#: Register indices of the system's control port.
SystemReg = REGISTERS.enum()


@dataclass(frozen=True)
class SystemConfig:
    """What the simulated system contains. Part of the model's identity (cache key)."""
    width: int = 32
    board: bool = True
    test_device: bool = True
    legacy: bool = True
    checker: bool = True
    host_memory_addr_bits: int = 20     # words of host memory (2**20 x 4 bytes = 4 MiB)
    test_memory_addr_bits: int = 12
    exerciser_size: int = 64 * 1024     # bytes of the board's BAR2
    #: The board's trace memory: "bram", "sram" (an asynchronous SRAM model on the
    #: board's SRAM pins, of sram_addr_bits x sram_data_bits: 2**18 x 32 = 1 MiB, 65536
    #: trace slots) or "sdram" (below).
    trace_memory: str = "bram"
    sram_addr_bits: int = 18
    sram_data_bits: int = 32
    #: With "sdram" (an SDRAM model on the board's SDRAM pins, the data sheet's timing at
    #: 33 MHz): its rows per bank, log2 (4: 4 banks x 16 rows x 512 columns x 16 bits =
    #: 128 KiB, 4096 trace slots, as deep as the block RAM; the ULX3S's part has 13), and
    #: the slots of the FIFO in front of it (on the bus clock the SDRAM takes a summary
    #: each 16 clocks; retry storms bring them faster).
    sdram_row_bits: int = 4
    sdram_fifo_depth: int = 256
    #: The board target's decode speed by name: "medium", or "slow" (the bitstreams').
    decode: str = "medium"
    #: The saboteur (master 3 and two line channels, pcispy/sim/bfm/saboteur.py).
    saboteur: bool = True
    #: The core in slot 0: None for pcispy's board (PCIBoard), a
    #: :class:`~pcispy.sim.core.CoreDescription` of a Verilog core (a dict of one is
    #: converted, as a bench's JSON brings it), or ``"module:function"`` naming a function
    #: of the bus width that returns an Amaranth component keeping the slot-0 contract
    #: (pcispy/sim/core.py). The board's options (trace memory, decode, exerciser size)
    #: apply to the board only.
    core: object = None
    #: Slot 0 behind a PCI-to-PCI bridge, on a secondary bus of its own (32-bit only).
    bridge: bool = False
    #: False: the reference build of the same sources, their simulation optimisation off:
    #: every agent and the resolver's evidence on the plain bus clock (no clock gating,
    #: pcispy/sim/bfm/gate.py). It behaves the same at every pin, clock for clock, only
    #: slower (test_pin_trace.py holds the two side by side).
    optimised: bool = True

    def __post_init__(self):
        if isinstance(self.core, dict):
            object.__setattr__(self, "core", CoreDescription.from_dict(self.core))
        if self.core is not None and self.trace_memory != "bram":
            raise ValueError(f"trace_memory={self.trace_memory!r} is an option of pcispy's "
                             "board, not of another core in slot 0")
        if self.bridge and (self.width != 32 or not self.board):
            raise ValueError("the bridge is a 32-bit bridge in front of slot 0: it needs "
                             "width=32 and a board")

    @property
    def name(self):
        parts = [f"pcisys{self.width}"]
        if not self.board:
            parts.append("noboard")
        if self.trace_memory != "bram":
            parts.append(self.trace_memory)
        if self.decode != "medium":
            parts.append(self.decode)
        if not self.saboteur:
            parts.append("nosab")
        if self.core is not None:
            label = getattr(self.core, "label", None) or str(self.core).rpartition(":")[2]
            parts.append(f"core-{label}")
        if self.bridge:
            parts.append("bridge")
        if not self.optimised:
            parts.append("reference")
        return "_".join(parts)

    def sdram_timing(self):
        """The SDRAM's :class:`~pcispy.spy.sdram.SDRAMTiming` (in bus clocks, 33 MHz)."""
        # elaboration only: the spy's gateware waits (see "Imports" above)
        from pcispy.spy.sdram import SDRAMTiming
        return SDRAMTiming.for_clock(33, row_bits=self.sdram_row_bits)

    def board_options(self):
        """The board's keyword arguments for its trace memory and decode speed."""
        options = {"decode": DevselSpeed[self.decode.upper()]}
        if self.trace_memory == "sdram":
            options.update(trace_memory="sdram", sdram_timing=self.sdram_timing(),
                           sdram_fifo_depth=self.sdram_fifo_depth)
        elif self.trace_memory != "bram":
            options.update(trace_memory=self.trace_memory, sram_addr_bits=self.sram_addr_bits,
                           sram_data_bits=self.sram_data_bits)
        return options


def driver_names(config=SystemConfig()):
    """The resolver's agents in its order (the names its evidence uses): the agents with
    a bus by :class:`Agent` name, then slot 0's (:func:`slot0_name`), then the saboteur's
    three agents (``"saboteur"``, its master; ``"saboteur_a"``, ``"saboteur_b"``, its
    channels)."""
    names = ["host_initiator", "host_memory"]
    if config.test_device:
        names += ["test_initiator", "test_target"]
    if config.legacy:
        names.append("legacy")
    if config.board:
        names.append("bridge" if config.bridge else slot0_name(config))
    if config.saboteur:
        names += ["saboteur", "saboteur_a", "saboteur_b"]
    return names


def secondary_driver_names(config):
    """The agents of the secondary bus's resolver, in its order (with a bridge)."""
    return ["bridge", slot0_name(config)]


class PCISystem(wiring.Component):
    """The whole simulated bus as one component (top of the Verilator model).

    Ports:
        ctl_sel (In, 4): which agent the control access is for (:class:`Agent`).
        ctl_addr (In, 10), ctl_wdata (In, 32), ctl_we (In, 1), ctl_re (In, 1):
            the access (see :mod:`pcispy.sim.control`).
        ctl_rdata (Out, 32): read data of the selected agent, one clock after ctl_addr.
        events (Out, 16): each agent's ``event`` line, bit = :class:`Agent` value.
        trigger_in (In, 1), trigger_out (Out, 1): the board's trigger pins (its spy's
            trigger input and output; unconnected without a spy), for a bench to drive
            and watch.
        pci_clk (In, 1), pci_rst (In, 1): the bus clock and RST# (1 = asserted): clock
            domain ``pci``, whose reset and the bus RST# follow ``pci_rst`` through
            :data:`RESET_FOLLOW_SOURCE` (a Verilator build needs it among its sources).

    Parameters:
        config: a :class:`SystemConfig`.
    """
    def __init__(self, config=SystemConfig()):
        self.config = config
        super().__init__({
            "ctl_sel": In(4), "ctl_addr": In(CONTROL_ADDR_BITS), "ctl_wdata": In(32),
            "ctl_we": In(1), "ctl_re": In(1), "ctl_rdata": Out(32),
            "events": Out(16), "trigger_in": In(1), "trigger_out": Out(1),
            "pci_clk": In(1), "pci_rst": In(1),
        })

    def _agents(self):
        """``{Agent: (component, master number or None, slot or None)}`` (renamed to pci)."""
        # elaboration only: the bus models waits (see "Imports" above)
        from pcispy.sim.bfm.initiator import BehaviouralInitiator
        from pcispy.sim.bfm.target import BehaviouralTarget
        from pcispy.sim.bfm.irq_responder import InterruptResponder
        cfg = self.config
        agents = {}
        # The bus agents sleep on gated clocks while they have nothing to do (the model
        # skips them then: pcispy/sim/bfm/gate.py); not in the reference build.
        gated = cfg.optimised
        host_initiator = BehaviouralInitiator(width=cfg.width, gated=gated)
        agents[Agent.HOST_INITIATOR] = (host_initiator, MASTERS["host"], None)
        agents[Agent.HOST_MEMORY] = (
            BehaviouralTarget(width=cfg.width, mem_addr_bits=cfg.host_memory_addr_bits,
                              gated=gated),
            None, None)
        agents[Agent.IRQ_RESPONDER] = (InterruptResponder(gated=gated), None, None)
        if cfg.test_device:
            agents[Agent.TEST_INITIATOR] = (BehaviouralInitiator(width=cfg.width, gated=gated),
                                            MASTERS["test_device"], None)
            agents[Agent.TEST_TARGET] = (
                BehaviouralTarget(width=cfg.width, mem_addr_bits=cfg.test_memory_addr_bits,
                                  gated=gated),
                None, TEST_DEVICE_SLOT)
        if cfg.legacy:
            # elaboration only: the bus models waits (see "Imports" above)
            from pcispy.sim.bfm.legacy import LegacyDevice
            agents[Agent.LEGACY] = (LegacyDevice(gated=gated), None, None)
        if cfg.bridge:
            # elaboration only: the bus models waits (see "Imports" above)
            from pcispy.sim.bfm.bridge import PCIBridge
            agents[Agent.BRIDGE] = (PCIBridge(), None, None)
        return agents

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        # The bus clock, and RST# through a register that changes only when pci_rst does
        # (reset_follow.v says why): with the port itself as the domain's reset, all the
        # pci domain's next-state logic ran on both clock edges.
        m.domains.pci = ClockDomain("pci")
        rst = Signal(name="bus_rst")
        m.submodules.rst_follow = Instance("pcispy_rst_follow", i_clk=self.pci_clk,
                                           i_i=self.pci_rst, o_o=rst)
        m.d.comb += [ClockSignal("pci").eq(self.pci_clk), ResetSignal("pci").eq(rst)]
        lines = shared_lines(cfg.width)
        agents = self._agents()
        for agent, (component, _, _) in agents.items():
            m.submodules[agent.name.lower()] = DomainRenamer({"sync": "pci"})(component)

        # The monitors (and the saboteur, which must be able to drive through RST#) run
        # on the bus clock without the bus reset.
        m.domains.monitor = monitor = ClockDomain("monitor", reset_less=True)
        m.d.comb += monitor.clk.eq(ClockSignal("pci"))
        # One clock count for the whole system, from the model's start, RST# or not: the
        # checker's and the resolver's logs and the control port's CYCLE all read it.
        cycle = Signal(64, name="cycle")
        m.d.monitor += cycle.eq(cycle + 1)

        # Every driver of the bus, at inside level: (o/oe/i accessor per line, master,
        # slot, name), in driver_names() order.
        drivers = []
        for agent, (component, master, slot) in agents.items():
            if hasattr(component, "bus"):
                drivers.append((component.bus, master, slot, agent.name.lower()))
        sram = sdram = None
        if cfg.board:
            board = slot0_component(cfg)
            m.submodules.board = board
            # A target-only core has no REQ#/GNT#: the arbiter never grants it.
            master = MASTERS["board"] if slot0_is_master(cfg) else None
            if cfg.bridge:
                bridge = agents[Agent.BRIDGE][0]
                drivers.append((bridge.primary, MASTERS["board"], BOARD_SLOT, "bridge"))
                secondary = _secondary_bus(m, cfg, bridge, _PinAdaptor(m, board.ports, 32),
                                           cycle)
            else:
                drivers.append((_PinAdaptor(m, board.ports, cfg.width), master,
                                BOARD_SLOT, slot0_name(cfg)))
            if board.sram_ports is not None:
                sram = _connect_sram(m, board.sram_ports, cfg)
            if getattr(board, "sdram_ports", None) is not None:
                sdram = _connect_sdram(m, board.sdram_ports, cfg)
            if "trigger_in" in board.signature.members:
                m.d.comb += [board.trigger_in.eq(self.trigger_in),
                             self.trigger_out.eq(board.trigger_out)]
        saboteur = None
        if cfg.saboteur:
            # elaboration only: the bus models waits (see "Imports" above)
            from pcispy.sim.bfm.saboteur import Saboteur
            saboteur = Saboteur(width=cfg.width, gated=cfg.optimised)
            m.submodules.saboteur = DomainRenamer({"sync": "monitor"})(saboteur)
            drivers += [(saboteur.bus, MASTERS["saboteur"], None, "saboteur"),
                        (saboteur.chan_a, None, None, "saboteur_a"),
                        (saboteur.chan_b, None, None, "saboteur_b")]
        names = [name for _, _, _, name in drivers]
        if names != driver_names(cfg):
            raise AssertionError(f"drivers {names} out of step with driver_names()")

        # The resolver combines the shared lines and judges the drivers; it knows which
        # agent parks for which master.
        masters = len(MASTERS)
        master_agents = [None] * masters
        for index, (_, master, _, _) in enumerate(drivers):
            if master is not None:
                master_agents[master] = index
        m.submodules.resolver = resolver = DomainRenamer({"sync": "monitor"})(
            BusResolver(len(drivers), cfg.width, masters=master_agents, shared_cycle=True,
                        gated=cfg.optimised))
        m.d.comb += [resolver.rst.eq(ResetSignal("pci")), resolver.cycle.eq(cycle[:32])]
        for name, bits in lines.items():
            # A 32-bit agent on a 64-bit bus has no 64-bit extension lines: it never
            # drives them (the slot's pull-ups hold them).
            present = [getattr(bus, name, None) for bus, _, _, _ in drivers]
            m.d.comb += [
                getattr(resolver, f"{name}_o").eq(
                    Cat(line.o if line is not None else Const(0, bits) for line in present)),
                getattr(resolver, f"{name}_oe").eq(
                    Cat(line.oe if line is not None else Const(0, 1) for line in present)),
            ]
            for line in present:
                if line is not None:
                    m.d.comb += line.i.eq(getattr(resolver, name))

        # The interrupt responder acknowledges through the host initiator's priority port.
        responder = agents[Agent.IRQ_RESPONDER][0]
        host_initiator = agents[Agent.HOST_INITIATOR][0]
        wiring.connect(m, responder.cmd, host_initiator.prio)
        m.d.comb += [responder.inta.eq(resolver.inta),
                     responder.done.eq(host_initiator.prio_done),
                     responder.done_status.eq(host_initiator.prio_status)]

        # What every agent drives at its pins (a line's output only while its output is
        # enabled: an undriven pin has no value), folded into one signature per clock.
        pins = [getattr(bus, name, None) for bus, _, _, _ in drivers for name in lines]
        pins = Cat(Cat(line.o & line.oe.replicate(len(line.o)), line.oe)
                   for line in pins if line is not None)

        # Point-to-point lines: REQ#/GNT# through the arbiter, IDSEL from AD, RST#.
        m.submodules.arbiter = arbiter = DomainRenamer({"sync": "pci"})(Arbiter(masters))
        m.d.comb += [arbiter.frame.eq(resolver.frame), arbiter.irdy.eq(resolver.irdy),
                     resolver.gnt.eq(arbiter.gnt)]
        for bus, master, slot, _ in drivers:
            m.d.comb += bus.rst.i.eq(ResetSignal("pci"))
            if master is not None:
                m.d.comb += [
                    arbiter.req[master].eq(bus.req.o & bus.req.oe),
                    bus.gnt.i.eq(arbiter.gnt[master]),
                ]
            if slot is not None:
                m.d.comb += bus.idsel.i.eq(resolver.ad[IDSEL_AD_BIT + slot])

        # The protocol checker watches the resolved bus with every master's REQ#/GNT#.
        state = Signal(BusState(cfg.width, masters))
        for name in bus_lines(cfg.width):
            if name in lines:
                m.d.comb += getattr(state, name).eq(getattr(resolver, name))
        m.d.comb += [state.req.eq(arbiter.req), state.gnt.eq(arbiter.gnt),
                     state.rst.eq(ResetSignal("pci"))]
        checker = None
        if cfg.checker:
            # elaboration only: the checker's gateware waits (see "Imports" above)
            from pcispy.spy.checker import ProtocolChecker
            # The checker keeps the Command register of every slot's device (IDSEL known),
            # sees which of them asserts DEVSEL# and which agent answers as the target (the
            # resolver's view of the drivers, as it sees every GNT#).
            slots = sorted(slot for _, _, slot, _ in drivers if slot is not None)
            devices = [IDSEL_AD_BIT + slot for slot in slots]
            master_devices = {master: slots.index(slot) for _, master, slot, _ in drivers
                              if master is not None and slot is not None}
            # The checker must keep watching while RST# is asserted (it has a rule about
            # what may happen then), so it runs in the monitor domain.
            m.submodules.checker = checker = DomainRenamer({"sync": "monitor"})(
                ProtocolChecker(width=cfg.width, masters=masters, arbiter_visible=True,
                                shared_cycle=True, devices=devices,
                                master_devices=master_devices, target_visible=True))
            m.d.comb += [checker.bus.eq(state), checker.cycle.eq(cycle[:32])]
            m.d.comb += checker.target.eq(_answering([bus for bus, _, _, _ in drivers]))
            if devices:
                by_slot = {slot: bus for bus, _, slot, _ in drivers if slot is not None}
                m.d.comb += checker.claim.eq(Cat(by_slot[slot].devsel.o &
                                                 by_slot[slot].devsel.oe for slot in slots))

        # Control port multiplexing.
        controls = {agent: component.ctl for agent, (component, _, _) in agents.items()}
        controls[Agent.ARBITER] = arbiter.ctl
        if saboteur is not None:
            controls[Agent.SABOTEUR] = saboteur.ctl
        signature = _pin_signature(m, Cat(pins, arbiter.req, arbiter.gnt, ResetSignal("pci")))
        system_ctl = _SystemRegisters(cycle, resolver, checker, resolver.inta, sram, sdram,
                                      signature)
        m.submodules.system_registers = DomainRenamer({"sync": "pci"})(system_ctl)
        controls[Agent.SYSTEM] = system_ctl.ctl
        if cfg.bridge:
            s_resolver, s_arbiter, s_checker = secondary
            controls[Agent.SECONDARY_ARBITER] = s_arbiter.ctl
            secondary_ctl = _SystemRegisters(cycle, s_resolver, s_checker, s_resolver.inta)
            m.submodules.secondary_registers = DomainRenamer({"sync": "pci"})(secondary_ctl)
            controls[Agent.SECONDARY_SYSTEM] = secondary_ctl.ctl
        # The access through registers that change only with it (reset_follow.v), for the
        # reason RST# goes through one.
        access = Cat(self.ctl_re, self.ctl_we, self.ctl_wdata, self.ctl_addr, self.ctl_sel)
        held = Signal(len(access), name="ctl_held")
        m.submodules.ctl_follow = Instance("pcispy_ctl_follow", p_W=len(access),
                                           i_clk=self.pci_clk, i_we=self.ctl_we,
                                           i_re=self.ctl_re, i_i=access, o_o=held)
        ctl_re, ctl_we = held[0], held[1]
        ctl_wdata = held[2:34]
        ctl_addr = held[34:34 + len(self.ctl_addr)]
        ctl_sel = held[34 + len(self.ctl_addr):]
        rdata = 0
        for agent, ctl in controls.items():
            selected = ctl_sel == agent
            m.d.comb += [
                ctl.addr.eq(ctl_addr), ctl.w_data.eq(ctl_wdata),
                ctl.w_en.eq(ctl_we & selected), ctl.r_en.eq(ctl_re & selected),
                self.events[agent].eq(ctl.event),
            ]
            rdata = Mux(selected, ctl.r_data, rdata)
        m.d.comb += self.ctl_rdata.eq(rdata)
        return m


def _answering(buses):
    """Which of ``buses`` (the drivers of one resolver, in its order) answers as the
    target in this clock (drives DEVSEL#, TRDY# or STOP# asserted): its index, the lowest
    if several, else NO_TARGET."""
    # elaboration only: the checker's gateware waits (see "Imports" above)
    from pcispy.spy.checker import NO_TARGET
    answering = Const(NO_TARGET, 4)
    for index, bus in reversed(list(enumerate(buses))):
        answers = Cat(getattr(bus, line).o & getattr(bus, line).oe
                      for line in ("devsel", "trdy", "stop")).any()
        answering = Mux(answers, index, answering)
    return answering


def _secondary_bus(m, cfg, bridge, board, cycle):
    """The bus behind the bridge: the bridge's secondary side (master 0) and slot 0's
    ``board`` (its inside-level lines; master 1, IDSEL = AD[16]), resolved, arbitrated and
    checked as the primary bus is. Returns ``(resolver, arbiter, checker)``."""
    # elaboration only: the checker's gateware waits (see "Imports" above)
    from pcispy.spy.checker import ProtocolChecker
    master = SECONDARY_MASTERS["board"] if slot0_is_master(cfg) else None
    drivers = [(bridge.secondary, SECONDARY_MASTERS["bridge"], None),
               (board, master, BOARD_SLOT)]
    masters = len(SECONDARY_MASTERS)
    parkers = [None] * masters
    for index, (_, number, _) in enumerate(drivers):
        if number is not None:
            parkers[number] = index
    resolver = BusResolver(len(drivers), 32, masters=parkers, shared_cycle=True,
                           gated=cfg.optimised)
    m.submodules.secondary_resolver = DomainRenamer({"sync": "monitor"})(resolver)
    m.submodules.secondary_arbiter = arbiter = DomainRenamer({"sync": "pci"})(Arbiter(masters))
    # As on the primary bus: the checker keeps the board's Command register (its IDSEL
    # known) and sees who claims and who answers as the target.
    checker = ProtocolChecker(width=32, masters=masters, arbiter_visible=True,
                              shared_cycle=True, devices=[IDSEL_AD_BIT + BOARD_SLOT],
                              master_devices={} if master is None else {master: 0},
                              target_visible=True)
    m.submodules.secondary_checker = DomainRenamer({"sync": "monitor"})(checker)
    state = Signal(BusState(32, masters))
    rst = ResetSignal("pci")
    m.d.comb += [resolver.rst.eq(rst), resolver.cycle.eq(cycle[:32]),
                 resolver.gnt.eq(arbiter.gnt), arbiter.frame.eq(resolver.frame),
                 arbiter.irdy.eq(resolver.irdy), state.req.eq(arbiter.req),
                 state.gnt.eq(arbiter.gnt), state.rst.eq(rst),
                 checker.bus.eq(state), checker.cycle.eq(cycle[:32]),
                 checker.claim.eq(board.devsel.o & board.devsel.oe)]
    m.d.comb += checker.target.eq(_answering([bus for bus, _, _ in drivers]))
    for name, bits in shared_lines(32).items():
        lines = [getattr(bus, name) for bus, _, _ in drivers]
        m.d.comb += [getattr(resolver, f"{name}_o").eq(Cat(line.o for line in lines)),
                     getattr(resolver, f"{name}_oe").eq(Cat(line.oe for line in lines)),
                     getattr(state, name).eq(getattr(resolver, name))]
        m.d.comb += [line.i.eq(getattr(resolver, name)) for line in lines]
    for bus, number, slot in drivers:
        m.d.comb += bus.rst.i.eq(rst)
        if number is not None:
            m.d.comb += [arbiter.req[number].eq(bus.req.o & bus.req.oe),
                         bus.gnt.i.eq(arbiter.gnt[number])]
        if slot is not None:
            m.d.comb += bus.idsel.i.eq(resolver.ad[IDSEL_AD_BIT + slot])
    return resolver, arbiter, checker


def _pin_signature(m, pins):
    """A 64-bit signature of ``pins`` over every clock from the model's start (monitor
    domain): each clock it turns one bit and takes in the pins, 64 bits at a time, each
    word turned by its own amount, so that two runs whose pins differ in any clock end
    with different signatures (but for a chance of 2**-64 per difference)."""
    signature = Signal(64, name="pin_signature")
    folded = Const(0, 64)
    for k, start in enumerate(range(0, len(pins), 64)):
        word = pins[start:start + 64]
        folded = folded ^ Cat(word, Const(0, 64 - len(word))).rotate_left(7 * k % 64)
    m.d.monitor += signature.eq(signature.rotate_left(1) ^ folded)
    return signature


def slot0_component(config):
    """The component in slot 0 of ``config``'s system: pcispy's board, or the core
    ``config.core`` names (pcispy/sim/core.py states the contract both keep)."""
    if config.core is not None:
        return core_component(config.core, config.width)
    # elaboration only: the board's gateware waits (see "Imports" above)
    from pcispy.board.top import PCIBoard
    # The exerciser window is backed by the hand-written scratch RAM (a large Amaranth
    # memory would be emitted a line per word); its storage is the backdoor
    # `board.scratch.ram.bd_storage`.
    return PCIBoard(width=config.width, exerciser_size=config.exerciser_size,
                    scratch_verilog=True, **config.board_options())


def slot0_name(config):
    """What reports call slot 0's agent: ``"board"`` for pcispy's board, else the core's
    name (a description's ``label``, a ``"module:function"`` core's function name)."""
    core = config.core
    if core is None:
        return "board"
    name = core.rpartition(":")[2] if isinstance(core, str) else core.label
    # Never one of the other agents' names, so that evidence names one agent only.
    others = {agent.name.lower() for agent in Agent} | {"saboteur", "saboteur_a", "saboteur_b"}
    return f"slot0_{name}" if name in others else name


def slot0_is_master(config):
    """Whether slot 0 of ``config`` holds a master (REQ#/GNT# on the arbiter's master
    ``MASTERS["board"]``): pcispy's board and Amaranth cores do; a described core does
    when its pin map drives REQ# and reads GNT#."""
    core = config.core
    return config.board and (core is None or isinstance(core, str) or core.is_master)


def _connect_sram(m, ports, cfg):
    """An asynchronous SRAM model on the board's SRAM pins (pin level, as on a board):
    returns ``(model, contention)``, ``contention`` high in a clock both drive the data."""
    # elaboration only: the bus models waits (see "Imports" above)
    from pcispy.sim.bfm.sram import AsyncSRAM, UNSTABLE
    m.submodules.sram = sram = DomainRenamer({"sync": "pci"})(
        AsyncSRAM(cfg.sram_addr_bits, cfg.sram_data_bits, verilog=True))
    data = ports["d"]
    board_drives = data.oe.any()
    floating = int(f"{UNSTABLE:08x}" * (cfg.sram_data_bits // 32), 16)
    contention = Signal(name="sram_contention")
    m.d.comb += [
        sram.a.eq(ports["a"].o), sram.ce_n.eq(ports["ce_n"].o), sram.we_n.eq(ports["we_n"].o),
        sram.oe_n.eq(ports["oe_n"].o), sram.d_i.eq(data.o),
        # What the data pins carry: the SRAM's word, the board's, or nothing (garbage).
        data.i.eq(Mux(sram.d_oe, sram.d_o, Mux(board_drives, data.o, floating))),
        contention.eq(sram.d_oe & board_drives),
    ]
    return sram, contention


def _connect_sdram(m, ports, cfg):
    """An SDRAM model on the board's SDRAM pins (pin level, as on a board; the model
    samples on the bus clock, the controller's): returns the model."""
    # elaboration only: the bus models waits (see "Imports" above)
    from pcispy.sim.bfm.sdram import SDRAMModel
    m.submodules.sdram = sdram = DomainRenamer({"sync": "pci"})(
        SDRAMModel(**cfg.sdram_timing().model_args(), verilog=True))
    data = ports["dq"]
    board_drives = data.oe.any()
    m.d.comb += [
        sdram.cke.eq(ports["clk_en"].o), sdram.cs_n.eq(ports["cs"].o),
        sdram.ras_n.eq(ports["ras"].o), sdram.cas_n.eq(ports["cas"].o),
        sdram.we_n.eq(ports["we"].o), sdram.ba.eq(ports["ba"].o), sdram.a.eq(ports["a"].o),
        sdram.dqm.eq(ports["dqm"].o), sdram.dq_i.eq(data.o), sdram.dq_driven.eq(board_drives),
        # What the data pins carry: the SDRAM's word, else the board's (or 0, floating).
        data.i.eq(Mux(sdram.dq_oe, sdram.dq_o, Mux(board_drives, data.o, 0))),
    ]
    return sdram


class _PinAdaptor:
    """The board's pin-level simulation ports seen as inside-level o/oe/i triples.

    The board's pads drive pin levels (active-low lines low when asserted); the resolver
    works at inside level. This inverts the active-low lines on the way in and out.
    """
    def __init__(self, m, ports, width):
        for name, bits in bus_lines(width).items():
            port = ports[name]
            o, oe, i = Signal(bits, name=f"board_{name}_o"), Signal(name=f"board_{name}_oe"), \
                Signal(bits, name=f"board_{name}_i")
            invert = name in ACTIVE_LOW
            m.d.comb += [
                o.eq(~port.o if invert else port.o),
                oe.eq(port.oe.any()),
                port.i.eq(~i if invert else i),
            ]
            setattr(self, name, _Triple(o, oe, i))


@dataclass
class _Triple:
    o: Signal
    oe: Signal
    i: Signal


class _SystemRegisters(wiring.Component):
    """The system's own control port: the system's clock count ``cycle`` (a 64-bit
    signal it reads, counted elsewhere), the resolver's driver-rule evidence (contention
    included) and the checker's evidence (:class:`SystemReg`). Its ``event`` is INTA# on
    the bus, so host code can sleep until an interrupt.

    Ports:
        ctl (Out, ControlSignature): the registers.
    """

    def __init__(self, cycle, resolver, checker, inta, sram=None, sdram=None, pins=None):
        self._cycle = cycle
        self._pins = pins              # the pin signature (64 bits)
        self._resolver = resolver
        self._checker = checker
        self._inta = inta
        self._sram = sram              # (model, contention) with an SRAM trace memory
        self._sdram = sdram            # the model, with an SDRAM trace memory
        super().__init__({"ctl": Out(ControlSignature())})

    def elaborate(self, platform):
        m = Module()
        ctl = self.ctl
        cycle = self._cycle
        cycle_hi = Signal(32)
        m.d.comb += ctl.event.eq(self._inta)
        clear = Signal()
        m.d.comb += clear.eq(written(ctl, SystemReg.CLEAR) & ctl.w_data[0])
        m.d.comb += self._resolver.clear.eq(clear)
        checker = self._checker
        resolver = self._resolver
        log_entry = Signal(REGISTERS["DRIVER_LOG_ENTRY"].layout)
        m.d.comb += [log_entry.rule.eq(resolver.log_rule), log_entry.line.eq(resolver.log_line),
                     log_entry.agent_a.eq(resolver.log_agent_a),
                     log_entry.agent_b.eq(resolver.log_agent_b)]
        values = {
            SystemReg.CYCLE_LO: cycle[:32],
            SystemReg.CYCLE_HI: cycle_hi,
            SystemReg.CONTENTION: resolver.contention,
            SystemReg.CONTENTION_LINE: resolver.first_line,
            SystemReg.CONTENTION_CYCLE: resolver.first_cycle,
            SystemReg.DRIVER_FLAGS: resolver.flags,
            SystemReg.DRIVER_LOG_ENTRIES: resolver.log_entries,
            SystemReg.DRIVER_LOG_INDEX: resolver.log_index,
            SystemReg.DRIVER_LOG_CYCLE: resolver.log_cycle,
            SystemReg.DRIVER_LOG_ENTRY: log_entry.as_value(),
            **REGISTERS["DRIVER_COUNT"].slices(resolver.counts),
        }
        log_index = Signal.like(resolver.log_index)
        m.d.comb += resolver.log_index.eq(log_index)
        writable = {SystemReg.DRIVER_LOG_INDEX: log_index}
        if checker is not None:
            index = Signal(8)
            enable = Signal(64, init=(1 << 64) - 1)
            m.d.comb += [checker.clear.eq(clear), checker.count_index.eq(index),
                         checker.rule_enable.eq(enable[:len(checker.rule_enable)])]
            writable.update({SystemReg.CHECK_INDEX: index,
                             SystemReg.CHECK_ENABLE_LO: enable[:32],
                             SystemReg.CHECK_ENABLE_HI: enable[32:]})
            values.update({
                SystemReg.CHECK_ANY: checker.any,
                SystemReg.CHECK_FIRST_RULE: checker.first_rule,
                SystemReg.CHECK_FIRST_CYCLE: checker.first_cycle,
                SystemReg.CHECK_INDEX: index,
                # An index naming no rule reads 0 (the checker's own index is narrower).
                SystemReg.CHECK_COUNT: Mux(index < len(checker.rule_enable), checker.count, 0),
                SystemReg.CHECK_ENABLE_LO: enable[:32],
                SystemReg.CHECK_ENABLE_HI: enable[32:],
            })
            check_log_index = Signal.like(checker.log_index)
            m.d.comb += checker.log_index.eq(check_log_index)
            writable[SystemReg.CHECK_LOG_INDEX] = check_log_index
            rules = Signal(64)
            m.d.comb += rules.eq(checker.log_rules)
            values.update({
                SystemReg.CHECK_LOG_ENTRIES: checker.log_entries,
                SystemReg.CHECK_LOG_INDEX: check_log_index,
                SystemReg.CHECK_LOG_CYCLE: checker.log_cycle,
                SystemReg.CHECK_LOG_RULES_LO: rules[:32],
                SystemReg.CHECK_LOG_RULES_HI: rules[32:],
                SystemReg.CHECK_LOG_MASTER: checker.log_master,
                SystemReg.CHECK_LOG_TARGET: checker.log_target,
            })
        if self._sram is not None:
            model, contention = self._sram
            fights = Signal(32)
            with m.If(contention & (fights != 0xFFFF_FFFF)):
                m.d.sync += fights.eq(fights + 1)
            values.update({SystemReg.SRAM_ERRORS: model.errors,
                           SystemReg.SRAM_CONTENTION: fights})
        if self._sdram is not None:
            values.update({SystemReg.SDRAM_FLAGS: self._sdram.flags,
                           SystemReg.SDRAM_ERRORS: self._sdram.errors,
                           SystemReg.SDRAM_REFRESHES: self._sdram.refreshes})
        with m.If(ctl.r_en & (ctl.addr == SystemReg.CYCLE_LO)):
            m.d.sync += cycle_hi.eq(cycle[32:])
        if self._pins is not None:
            pins_hi = Signal(32)
            values.update({SystemReg.PINS_LO: self._pins[:32], SystemReg.PINS_HI: pins_hi})
            with m.If(ctl.r_en & (ctl.addr == SystemReg.PINS_LO)):
                m.d.sync += pins_hi.eq(self._pins[32:])
        register_writes(m, ctl, writable)
        register_reads(m, ctl, values)
        return m


#: Models found in this process, by config.
_MODELS = {}

#: Where the generator index lives: ``<config name>-<generator key>`` files under it name
#: the model folder that configuration's Verilog went to (see :func:`build_system`).
_INDEX = "index"


def generator_key(config):
    """A hash of everything the system's Verilog is generated from, without generating it:
    the bytes of pcispy's gateware and simulation sources (every ``.py`` and ``.v`` file of
    the package outside ``tests/``), the Amaranth version and ``config`` (its core's
    description included; for a ``"module:function"`` core, that module's file)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    digest.update(importlib.metadata.version("amaranth").encode() + b"\0")
    digest.update(repr(config).encode() + b"\0")
    files = sorted(path for path in package.rglob("*")
                   if path.suffix in (".py", ".v") and "tests" not in path.parts)
    if isinstance(config.core, str):
        spec = importlib.util.find_spec(config.core.partition(":")[0])
        if spec is not None and spec.origin:
            files.append(Path(spec.origin))
    for path in files:
        data = path.read_bytes()
        digest.update(f"{path}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()[:16]


def build_system(config=SystemConfig(), waves=None):
    """Build (or reuse from the cache) the Verilator model of the system ``config``;
    ``waves`` ("fst" or "vcd") for a model that records waves (a model of its own).

    Elaborating the system to Verilog takes 10-20 s; the model folder it names is
    remembered under the :func:`generator_key` of ``config`` (build/sim/index/), so while
    pcispy's sources and ``config`` stay the same, a later run finds the model by hashing
    files (milliseconds) and re-checks every file Verilator read (a core's sources and
    their included files), rebuilding the model when one changed.
    """
    model = _MODELS.get((config, waves))
    if model is not None and \
            verilate.cached_model(model.build_dir, model.toplevel, waves) is not None:
        return model
    label = f"{config.name}_{waves}" if waves else config.name
    index = verilate.BUILD_ROOT / _INDEX / f"{label}-{generator_key(config)}"
    index.parent.mkdir(parents=True, exist_ok=True)
    # One process elaborates a configuration at a time: a second one (another pytest
    # worker) waits here for the index rather than elaborating the same Verilog.
    with open(index.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        model = _indexed_model(index, waves) or _elaborate_and_build(config, waves, index)
    _MODELS[(config, waves)] = model
    return model


def _indexed_model(index, waves):
    """The model the index file ``index`` names, when it is built and current, else None."""
    if not index.exists():
        return None
    return verilate.cached_model(verilate.BUILD_ROOT / index.read_text().strip(), "pcisystem",
                                 waves)


def _elaborate_and_build(config, waves, index):
    """Elaborate the system ``config`` to Verilog, build its model, record it in ``index``."""
    build_progress.stage("elaborating")
    # Verilator's runtime objects compile on the other core while this one elaborates.
    runtime = threading.Thread(target=verilate.prepare_runtime, daemon=True)
    runtime.start()
    system = PCISystem(config)
    text = verilog.convert(system, name="pcisystem", emit_src=False)
    runtime.join()
    # Every large RAM of the system (the agents' buffers and host memory, the board's
    # scratch RAM, the SRAM model) keeps its words in the one hand-written Verilog RAM.
    sources = [ram.VERILOG_SOURCE, RESET_FOLLOW_SOURCE]
    options = {}
    core = config.core
    if core is not None and not isinstance(core, str):
        sources += core.model_sources()
        options = dict(include_dirs=core.include_dirs, defines=core.defines,
                       flags=core.verilator_flags, identity=repr(core))
    model = verilate.build_model(text, "pcisystem", public=[("*", "bd_*")], sources=sources,
                        name=config.name, waves=waves, **options)
    partial = index.with_suffix(f".{os.getpid()}")
    partial.write_text(model.build_dir.name + "\n")
    partial.replace(index)          # atomic: a reader sees the old index or the new
    return model
