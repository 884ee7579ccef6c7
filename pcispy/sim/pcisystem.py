# SPDX-License-Identifier: BSD-2-Clause
""" 
"""

import os
from dataclasses import dataclass

from amaranth import (Cat, ClockDomain, Const, ClockSignal, DomainRenamer, Instance, Module, Mux,
                      ResetSignal, Signal)
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.board.top import PCIBoard
from pcispy.pci.bus import ACTIVE_LOW, BusState, bus_lines
from pcispy.sim.bfm.arbiter import Arbiter
from pcispy.sim.bfm.bridge import PCIBridge
from pcispy.sim.bfm.initiator import BehaviouralInitiator
from pcispy.sim.bfm.irq_responder import InterruptResponder
from pcispy.sim.bfm.legacy import LegacyDevice
from pcispy.sim.bfm.resolver import BusResolver, shared_lines
from pcispy.sim.bfm.saboteur import Saboteur
from pcispy.sim.bfm.sdram import SDRAMModel
from pcispy.sim.bfm.sram import AsyncSRAM, UNSTABLE
from pcispy.sim.bfm.target import BehaviouralTarget
from pcispy.sim.control import (CONTROL_ADDR_BITS, ControlSignature, register_reads,
                                register_writes, written)
from pcispy.sim.verilog_core import core_component
from pcispy.sim.system import (BOARD_SLOT, IDSEL_AD_BIT, MASTERS, REGISTERS, SECONDARY_MASTERS,
                               TEST_DEVICE_SLOT, Agent, SystemConfig, SystemReg, driver_names,
                               slot0_is_master, slot0_name)
from pcispy.check.checker import NO_TARGET, ProtocolChecker

__all__ = ["PCISystem", "slot0_component", "RESET_FOLLOW_SOURCE"]


#: The Verilog of the system's RST# register (:class:`PCISystem`).
RESET_FOLLOW_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reset_follow.v")


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
        cpu_held (Out, 1): the host's CPU runs an interrupt handler (the interrupt
            responder's ``cpu_busy``): Python holds the host's own accesses meanwhile.
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
            "events": Out(16), "trigger_in": In(1), "trigger_out": Out(1), "cpu_held": Out(1),
            "pci_clk": In(1), "pci_rst": In(1),
        })

    def _agents(self):
        """``{Agent: (component, master number or None, slot or None)}`` (renamed to pci)."""
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
            agents[Agent.LEGACY] = (LegacyDevice(gated=gated), None, None)
        if cfg.bridge:
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
        m.d.comb += [responder.inta.eq(resolver.inta), self.cpu_held.eq(responder.cpu_busy),
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
    ``config.core`` names (pcispy/sim/core_description.py states the contract both keep)."""
    if config.core is not None:
        return core_component(config.core, config.width)
    # The exerciser window is backed by the hand-written scratch RAM (a large Amaranth
    # memory would be emitted a line per word); its storage is the backdoor
    # `board.scratch.ram.bd_storage`.
    return PCIBoard(width=config.width, exerciser_size=config.exerciser_size,
                    scratch_verilog=True, **config.board_options())


def _connect_sram(m, ports, cfg):
    """An asynchronous SRAM model on the board's SRAM pins (pin level, as on a board):
    returns ``(model, contention)``, ``contention`` high in a clock both drive the data."""
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
