# SPDX-License-Identifier: BSD-2-Clause
"""The board core: pads, configuration space, target, BAR0 registers, exerciser windows,
DMA master, spy, protocol checker and interrupt unit.

:class:`PCIBoard` is everything of the board that lives on the PCI clock. The caller
supplies clock domain ``pci`` (the simulated system drives it; the hardware platform
wrapper derives it from the PCI clock and RST#) and the pads' ports (``platform.request``
results, or :func:`~pcispy.core.pads.simulation_ports` when ``ports`` is None; they
are kept as ``board.ports`` so the simulated system can wire them).

BARs (the defaults; every size is a parameter):

- BAR0, memory, 4 KiB: the register bank (:class:`~pcispy.csr.bank.CSRBank`).
- BAR1, memory, prefetchable: the trace window, answered by the spy's trace memory
  (block RAM, or an external asynchronous SRAM: ``trace_memory``). Present when
  ``spy_addr_bits`` is not 0 (the spy is built only then).
- BAR2, memory: the exerciser window, scratch RAM with the programmed response. On a
  64-bit board its upper half (offset bit ``log2(exerciser_size) - 1`` set) aliases the
  lower half's RAM but answers 32-bit only (no ACK64#).
- BAR3, I/O, 256 bytes: the I/O exerciser window (its own small scratch RAM), same response.

Several blocks drive the bus (the target, the DMA initiator, the interrupt unit's INTA#):
every core's ``PCIBusSignature`` joins :func:`merge_bus_drivers`, which ORs the values of
the owners. A core that does not own a line keeps its ``oe`` low; on AD (whose enables the
pads join) it also presents 0.

The spy and the protocol checker watch the same sample of the bus the cores see: the
pads' input flip-flops.

A passive build (every port an input: the ``--passive`` bitstream) is the spy alone:
pads without drivers, the register bank, the interrupt unit's clock counter, the checker
and the spy, reached through the side channel. It builds no configuration space, target,
exerciser window or DMA master: they could never answer or drive the bus, and their logic
would only hang on the bus's input pins (paths that would have to meet PCI timing).
"""

from amaranth import Cat, ClockDomain, ClockSignal, Const, DomainRenamer, Module, Signal, Value
from amaranth.lib import data, io, wiring
from amaranth.lib.wiring import In, Out

from pcispy.board.clock_meter import DEFAULT_GATE_LOG2, ClockMeter
from pcispy.csr.bank import CSRBank
from pcispy.exerciser.response import ExerciserResponse
from pcispy.exerciser.scratch import ScratchRAM
from pcispy.pci.bus import PRESENTED_GATED, DevselSpeed, bus_lines
from pcispy.core.config import BarSpec, ConfigSpace
from pcispy.dma.engine import DMAEngine
from pcispy.irq.unit import InterruptUnit
from pcispy.pci.bus import BusState
from pcispy.core.pads import (CORE_GATED_LINES, LIVE_LINES, PIN_GROUP, PCIPads,
                              ad_decision_groups, simulation_ports)
from pcispy.check.unit import CheckUnit
from pcispy.check.checker import RULES
from pcispy.spy.spy import SpyUnit
from pcispy.spy.trigger import RecorderState, trigger_pulse_clocks
from pcispy.spy.tracemem import SRAMPads, sram_simulation_ports
from pcispy.spy.sdram import SDRAMPads, SDRAMTiming, sdram_simulation_ports
from pcispy.core.target import PCITarget, Window
from pcispy.pci.backend import BackendSignature
from pcispy.board.registers import (BAR0_SIZE, DEFAULT_DEVICE_ID, DEFAULT_VENDOR_ID,
                                    REGISTER_MAP, TRACE_MEMORY)
from pcispy.exerciser.registers import decode_resets
from pcispy.sidechannel.local import LocalAccess, LocalAccessSignature, SharedBackend
from pcispy.sidechannel.protocol import Space

__all__ = ["PCIBoard", "merge_bus_drivers", "connect_response", "IO_WINDOW_SIZE",
           "INDICATORS"]

#: Size of the BAR3 I/O window, bytes.
IO_WINDOW_SIZE = 256

#: What the board shows a human (LEDs): one bit each.
INDICATORS = data.StructLayout({"armed": 1, "triggered": 1, "overrun": 1, "passive": 1})


def merge_bus_drivers(m, pads_bus, cores, lines=(), *, joined_by_pads=None,
                      decided_by_pads=None):
    """Join the ``bus`` ports of ``cores`` (each ``Out(PCIBusSignature)``) onto the pads.

    Each line is the OR of the values of the cores that own it (``oe``); every core sees
    the sampled inputs. ``lines`` adds single-line drivers as ``(line, o, oe)`` (e.g.
    ``("inta", irq.inta, 1)`` for an interrupt unit without a bus port).
    ``joined_by_pads`` maps a line to the pads' port taking one enable per core (in the
    order of ``cores``: :class:`PCIPads`'s ``ad_oe_by``): the pads join those enables
    themselves, and the line's ``oe`` carries only the ``lines`` drivers.
    ``decided_by_pads`` maps a line to the core whose value and enable the pads take as
    its decision (:class:`PCIPads`'s ``master_ad``): that core is left out of the line's
    value and of its joined enables (the caller connects the decision). On the
    :data:`~.pci.bus.PRESENTED_GATED` lines (AD and the handshake lines) each core
    presents 0 where it does not drive: the cores' values are ORed as they are, so that
    the value waits for neither core's enable (the formal jobs' ``released_zero``).
    Returns ``{line: the cores' enable}`` (the OR, whoever forms it).
    """
    joined_by_pads = joined_by_pads or {}
    decided_by_pads = decided_by_pads or {}
    enables = {}
    for name, bits in bus_lines(pads_bus.signature.width).items():
        pad = getattr(pads_bus, name)
        value, enable, pad_enable = Const(0, bits), Const(0, 1), Const(0, 1)
        merged = [core for core in cores if decided_by_pads.get(name) is not core]
        core_enables = [getattr(core.bus, name).oe for core in merged]
        drivers = [(getattr(core.bus, name).o, oe, True)
                   for core, oe in zip(merged, core_enables)]
        drivers += [(o, oe, False) for line, o, oe in lines if line == name]
        for o, oe, from_core in drivers:
            oe = Value.cast(oe)
            joined = from_core and name in joined_by_pads
            value = value | (o if from_core and name in PRESENTED_GATED
                             else o & oe.replicate(bits))
            enable = enable | oe
            if not joined:
                pad_enable = pad_enable | oe
        if name in decided_by_pads:
            enable = enable | getattr(decided_by_pads[name].bus, name).oe
        for core in cores:
            m.d.comb += getattr(core.bus, name).i.eq(pad.i)
        m.d.comb += [pad.o.eq(value), pad.oe.eq(pad_enable)]
        if name in joined_by_pads:
            m.d.comb += joined_by_pads[name].eq(Cat(*core_enables))
        enables[name] = enable
    return enables


def connect_response(m, target, response, registers):
    """Wire the exerciser response between the target and its ``target`` register block."""
    wiring.connect(m, registers, response.regs)
    m.d.comb += [
        target.knobs.eq(response.knobs), target.retry.eq(response.retry),
        response.attempt.eq(target.attempt),
        response.corrupt_taken.eq(target.corrupt_taken),
        response.aborted.eq(target.signaled_target_abort),
        response.parity_error.eq(target.detected_parity),
    ]


def _connect_backend(m, requester, backend):
    """Connect a target backend port to a backend that decodes fewer address bits."""
    for name in ("write", "w_data", "w_be", "valid"):
        m.d.comb += getattr(backend, name).eq(getattr(requester, name))
    m.d.comb += [backend.addr.eq(requester.addr[:len(backend.addr)]),
                 requester.ready.eq(backend.ready), requester.r_data.eq(backend.r_data),
                 requester.r_valid.eq(backend.r_valid)]


class PCIBoard(wiring.Component):
    """The board on the PCI clock (domain ``pci``).

    Ports:
        trace (Out, BackendSignature): only with ``external_trace``: the BAR1 backend
            (word-addressed reads of any latency; writes are dropped by the target).
        local (In, LocalAccessSignature()): local access (the UART side channel) to BAR0,
            BAR1 and the configuration space, shared with the PCI target (the target has
            priority); left idle in the simulated system.
        indicators (Out, :data:`INDICATORS`): for LEDs: the spy is armed (waiting for its
            trigger), triggered (recording after it), has lost records since it was armed
            (overrun); passive mode is in force.
        clock_gate (In, 1): the board oscillator's gate (any domain; changes every
            ``2**clock_gate_log2`` us: :class:`~pcispy.board.clock_meter.OscillatorGate`):
            the board measures its PCI clock against it (``id.clock``). Left 0 (the
            simulated system), ``id.clock`` reads "not measured".
        trigger_in (In, 1), trigger_out (Out, 1): only with the spy: its trigger input
            pin (asynchronous: the spy synchronises it) and trigger output pin (from a
            flip-flop), :class:`~pcispy.spy.trigger.TriggerInput`/``TriggerOutput``.
        The PCI pins are not component ports: they are ``board.ports`` (io ports).

    Parameters:
        width: bus width, 32 or 64.
        ports: ``{line: io port}`` for every line of ``bus_lines(width)``, or None for
            :func:`simulation_ports`. All inputs: a passive build (:attr:`passive_build`).
        exerciser_size: bytes of BAR2 (power of two, >= 16).
        spy_addr_bits: log2 of the spy's trace memory in 16-byte slots (BAR1 is
            ``16 << spy_addr_bits`` bytes); 0 builds the board without spy and BAR1.
            Default: 12 with block RAM; with an SRAM its size sets it (leave it out).
        trace_memory: where the spy stores its trace: ``"bram"`` (block RAM),
            ``"sram"``, an external asynchronous SRAM on the pins ``sram_ports``
            (:class:`~pcispy.spy.tracemem.SRAMTraceMemory`; docs/architecture.md
            says how a board attaches one), or ``"sdram"``, an x16 SDRAM on the pins
            ``sdram_ports`` (:class:`~pcispy.spy.sdram.SDRAMTraceMemory`, docs/sdram.md).
        sram_addr_bits, sram_data_bits: with an SRAM, its address and data widths (data
            32, 64 or 128 bits; the trace holds ``2**sram_addr_bits * sram_data_bits / 128``
            slots).
        sram_ports: with an SRAM, ``{pin: io port}`` for
            :data:`~pcispy.spy.tracemem.SRAM_PINS` (``platform.request`` results),
            or None for :func:`~pcispy.spy.tracemem.sram_simulation_ports` (kept as
            ``board.sram_ports`` for the simulated system to wire to its SRAM model).
        sdram_timing: with an SDRAM, its :class:`~pcispy.spy.sdram.SDRAMTiming` in PCI
            clocks (its geometry sets the trace depth; default: the ULX3S's part at
            ``clock_mhz``). sdram_fifo_depth: slots of the
            FIFO in front of it. sdram_ports: ``{pin: io port}`` for
            :data:`~pcispy.spy.sdram.SDRAM_PINS` (amaranth-boards' ``sdram`` resource), or
            None for :func:`~pcispy.spy.sdram.sdram_simulation_ports` (kept as
            ``board.sdram_ports``). sdram_domain: the clock domain of the SDRAM
            controller and pins (the caller supplies it; None: ``pci``, and
            ``sdram_timing`` in PCI clocks).
        external_trace: answer BAR1 from the ``trace`` port instead of the spy (no spy is
            built): unit tests use it to put a deliberately slow backend behind BAR1.
        clock_mhz: nominal PCI clock (reported in ``id.config`` and ``66 MHz capable``).
        bus_clock_mhz: the fastest bus clock at which the build samples every input in
            time (``id.config.bus_clock``, whole MHz): the limit of the pin-out it is built
            for; default ``clock_mhz`` (a simulated board has no pins to limit it).
        clock_gate_log2: log2 of the ``clock_gate`` period in microseconds.
        scratch_verilog: keep the scratch RAM's words in the hand-written Verilog RAM
            (:data:`pcispy.core.ram.VERILOG_SOURCE`, for Verilator) instead of an Amaranth
            Memory (the FPGA's block RAM, Python-simulator unit tests).
        decode: the target's decode speed (one of :data:`~pcispy.pci.bus.DECODE_SPEEDS`,
            reported in Status and id.config). MEDIUM: DEVSEL# on clock 3, what the
            simulated system runs. FAST: within the address phase, DEVSEL# on clock 2 (the
            pads offer AD, C/BE#, IDSEL unregistered: check timing before using it).
            SLOW: the decode registered before the claim, DEVSEL# on clock 4 (the address
            pins do not reach AD's drivers in one clock).
        config: extra keyword arguments of :class:`ConfigSpace` (IDs, class code ...).
        pin_group: AD pins per I/O tile on the board's pin-out (the pads' ``pin_group``;
            the platform's ``pci_pin_group``).
    """
    def __init__(self, width=32, ports=None, *, exerciser_size=16 * 1024, spy_addr_bits=None,
                 trace_memory="bram", sram_addr_bits=None, sram_data_bits=32, sram_ports=None,
                 sdram_timing=None, sdram_fifo_depth=256, sdram_ports=None,
                 sdram_domain=None, external_trace=False, clock_mhz=33, bus_clock_mhz=None,
                 clock_gate_log2=DEFAULT_GATE_LOG2,
                 scratch_verilog=False, decode=DevselSpeed.MEDIUM, config=None,
                 pin_group=PIN_GROUP):
        if width not in (32, 64):
            raise ValueError(f"PCI bus width must be 32 or 64, not {width!r}")
        self.sdram_fifo_depth = sdram_fifo_depth
        self.sdram_domain = sdram_domain
        spy_addr_bits = self._trace_memory(trace_memory, spy_addr_bits, sram_addr_bits,
                                           sram_data_bits, sram_ports, external_trace,
                                           sdram_timing, sdram_ports, clock_mhz)
        self.width = width
        self.ports = simulation_ports(width) if ports is None else ports
        self.clock_mhz = clock_mhz
        self.bus_clock_mhz = clock_mhz if bus_clock_mhz is None else bus_clock_mhz
        if not 0 < self.bus_clock_mhz < clock_mhz + 1:
            raise ValueError(f"a {clock_mhz} MHz board samples its inputs at up to "
                             f"{clock_mhz} MHz, not {self.bus_clock_mhz}")
        self.clock_gate_log2 = clock_gate_log2
        self.scratch_verilog = scratch_verilog
        self.decode = decode
        self.config_args = dict(config or {})
        self.pin_group = pin_group
        exerciser_bar = BarSpec("exerciser", "mem", exerciser_size)
        self.spy_addr_bits = spy_addr_bits
        # BAR1 is the spy's trace memory: 2**spy_addr_bits slots of 16 bytes.
        trace_bar = (BarSpec("trace", "mem", 16 << spy_addr_bits, prefetchable=True)
                     if spy_addr_bits else None)
        self.windows = (
            Window(BarSpec("registers", "mem", BAR0_SIZE)),
            Window(trace_bar, data_width=width, prefetch=True, read_only=True)
            if trace_bar else None,
            Window(exerciser_bar, data_width=width, prefetch=True, exerciser=True,
                   ack64_bit=exerciser_bar.size_bits - 1 if width == 64 else None),
            Window(BarSpec("io", "io", IO_WINDOW_SIZE), exerciser=True),
        )
        self.external_trace = external_trace
        members = {"local": In(LocalAccessSignature()), "indicators": Out(INDICATORS),
                   "clock_gate": In(1)}
        if external_trace and trace_bar:
            members["trace"] = Out(BackendSignature(self.windows[1].addr_bits, width))
        elif trace_bar:
            members.update(trigger_in=In(1), trigger_out=Out(1))
        super().__init__(members)

    def _trace_memory(self, memory, spy_addr_bits, sram_addr_bits, sram_data_bits, sram_ports,
                      external_trace, sdram_timing, sdram_ports, clock_mhz):
        """Check and keep the trace memory's parameters; return the trace depth (log2 of
        its slots)."""
        self.trace_memory = memory
        self.sram_data_bits = sram_data_bits
        self.sram_addr_bits = sram_addr_bits
        self.sram_ports = None
        self.sdram_timing = sdram_timing
        self.sdram_ports = None
        if memory != "sdram" and (sdram_timing is not None or sdram_ports is not None):
            raise ValueError("sdram_timing and sdram_ports are for trace_memory='sdram'")
        if memory == "bram":
            if sram_addr_bits is not None or sram_ports is not None:
                raise ValueError("sram_addr_bits and sram_ports are for trace_memory='sram'")
            return 12 if spy_addr_bits is None else spy_addr_bits
        if memory not in ("sram", "sdram"):
            raise ValueError(f"trace memory must be 'sdram', 'bram' or 'sram', not {memory!r}")
        if spy_addr_bits is not None or external_trace:
            raise ValueError("an external trace memory sets the trace depth itself: give "
                             "its size, not spy_addr_bits or external_trace")
        if memory == "sdram":
            if sram_addr_bits is not None or sram_ports is not None:
                raise ValueError("sram_addr_bits and sram_ports are for trace_memory='sram'")
            self.sdram_timing = (SDRAMTiming.for_clock(clock_mhz) if sdram_timing is None
                                 else sdram_timing)
            self.sdram_ports = (sdram_simulation_ports() if sdram_ports is None
                                else sdram_ports)
            return self.sdram_timing.slot_bits
        if sram_data_bits not in (32, 64, 128):
            raise ValueError(f"SRAM data width must be 32, 64 or 128, not {sram_data_bits}")
        word_bits = (128 // sram_data_bits).bit_length() - 1     # SRAM words per slot, log2
        if sram_addr_bits is None or sram_addr_bits <= word_bits:
            raise ValueError(f"an SRAM trace memory needs sram_addr_bits (more than "
                             f"{word_bits} for {sram_data_bits}-bit data)")
        self.sram_ports = (sram_simulation_ports(sram_addr_bits, sram_data_bits)
                           if sram_ports is None else sram_ports)
        return sram_addr_bits - word_bits

    @property
    def bars(self):
        return [w.bar if w is not None else None for w in self.windows]

    @property
    def passive_build(self):
        """Every PCI pin is an input (a passive build's resource, pcispy.platform.boards): the
        board is a spy only. It has no configuration space, target, exerciser windows or
        DMA master (nothing could answer or drive the bus); BAR0 and BAR1 are reached
        through the side channel."""
        return all(port.direction == io.Direction.Input for port in self.ports.values())

    def elaborate(self, platform):
        m = Module()
        passive_build = self.passive_build
        # In the active build the target and the DMA master drive AD: the pads join their
        # enables; on a 32-bit bus they take the master's AD as its decision and make it
        # in the cells of the join (``ADDecision``).
        decided = not passive_build and self.width == 32
        m.submodules.pads = pads = PCIPads(
            self.width, self.ports, fast_decode=self.decode is DevselSpeed.FAST and not
            passive_build, ad_drivers=0 if passive_build else 1 if decided else 2,
            master_ad=decided, pin_group=self.pin_group)
        m.submodules.bank = bank = CSRBank(REGISTER_MAP.with_resets(decode_resets(self.decode)))
        # A passive build keeps the interrupt unit's cycle counter alone: the timestamps.
        m.submodules.irq = irq = DomainRenamer("pci")(InterruptUnit(clock_only=passive_build))
        wiring.connect(m, bank.irq, irq.regs)
        if passive_build:
            # Nothing on the board can drive the bus: passive mode is always in force. The
            # target's side of the shared backends stays idle.
            target = None
            shared = {Space.BAR0: self._share(m, "bar0", None, bank.access)}
            m.d.comb += [bank.id.mode.passive_on.eq(1), self.indicators.passive.eq(1),
                         bank.id.config.passive.eq(1)]
        else:
            target, shared = self._bus_agents(m, pads, bank, irq)

        # What the board sees of the bus, one sample per clock (the pads' input flip-flops).
        sample = Signal(BusState(self.width))
        for name in bus_lines(self.width):
            m.d.comb += getattr(sample, name).eq(getattr(pads.bus, name).i)

        # The protocol checker watches the bus, RST# included: it runs on the bus clock
        # without the bus reset (it has a rule about what may happen during RST#).
        m.domains.pci_monitor = monitor = ClockDomain("pci_monitor", reset_less=True)
        m.d.comb += monitor.clk.eq(ClockSignal("pci"))
        # The checker and the spy see each sample a clock later, with its timestamp: one
        # register between the input flip-flops (wherever the connector put the pins, up
        # to a wire across the die away) and their logic, so the wire and the logic are not
        # in one clock. Records still carry the clock their bus state was on the pins.
        observed = Signal(BusState(self.width))
        observed_time = Signal.like(irq.timestamp)
        m.d.pci_monitor += [observed.eq(sample), observed_time.eq(irq.timestamp)]
        m.submodules.checker = checker = DomainRenamer("pci_monitor")(CheckUnit(self.width))
        wiring.connect(m, bank.check, checker.regs)
        m.d.comb += checker.bus.eq(observed)

        # The spy: capture, summaries, filters, counters; its trace memory answers BAR1.
        if self.external_trace and self.windows[1] is not None:
            shared[Space.BAR1] = self._share(m, "bar1", target and target.bar1,
                                             wiring.flipped(self.trace))
        elif self.windows[1] is not None:
            spy = SpyUnit(self.width, rules=len(RULES), addr_bits=self.spy_addr_bits,
                          memory=self.trace_memory, sram_data_bits=self.sram_data_bits,
                          sdram_timing=self.sdram_timing,
                          sdram_fifo_depth=self.sdram_fifo_depth,
                          sdram_domain=self.sdram_domain, own=target is not None,
                          trigger_pulse_clocks=trigger_pulse_clocks(self.clock_mhz))
            m.submodules.spy = spy = DomainRenamer("pci")(spy)
            wiring.connect(m, bank.spy, spy.regs)
            if self.trace_memory == "sdram":
                m.submodules.sdram_pads = sdram_pads = DomainRenamer(
                    self.sdram_domain or "pci")(
                    SDRAMPads(self.sdram_ports))
                wiring.connect(m, spy.sdram, sdram_pads.sdram)
            m.d.comb += [spy.bus.eq(observed), spy.timestamp.eq(observed_time),
                         spy.violation.eq(checker.violation),
                         spy.trigger_in.eq(self.trigger_in),
                         self.trigger_out.eq(spy.trigger_out)]
            if target is not None:
                # The target's claims of BAR0 transactions (the host's register accesses,
                # which the spy leaves out of its figures), registered in the target and
                # timed to the address phase of `observed`.
                m.d.comb += spy.own_claim.eq(target.bar0_claimed)
            if self.trace_memory == "sram":
                m.submodules.sram_pads = sram_pads = SRAMPads(
                    self.sram_ports, self.sram_addr_bits, self.sram_data_bits)
                wiring.connect(m, spy.sram, sram_pads.sram)
            m.d.comb += [
                bank.id.config.trace_memory.eq(TRACE_MEMORY[self.trace_memory]),
                bank.id.config.trace_depth.eq(self.spy_addr_bits),
            ]
            shared[Space.BAR1] = self._share(m, "bar1", target and target.bar1, spy.trace)
            m.d.comb += [
                self.indicators.armed.eq(spy.status.state == RecorderState.PRE),
                self.indicators.triggered.eq(spy.status.state == RecorderState.POST),
                self.indicators.overrun.eq(spy.status.lost != 0),
            ]

        # Local access (the side channel) reaches every shared backend by its space.
        m.submodules.local_access = local_access = LocalAccess(
            {space: len(s.local.addr) for space, s in shared.items()})
        wiring.connect(m, wiring.flipped(self.local), local_access.request)
        for space, s in shared.items():
            wiring.connect(m, getattr(local_access, space.name.lower()), s.local)

        # Identity, and the PCI clock as measured.
        m.submodules.clock_meter = meter = DomainRenamer("pci")(ClockMeter())
        m.d.comb += [
            bank.id.config.bus_width.eq(self.width == 64),
            bank.id.config.decode.eq(self.decode.value),
            bank.id.config.clock_mhz.eq(self.clock_mhz),
            bank.id.config.bus_clock.eq(int(self.bus_clock_mhz)),
            meter.gate.eq(self.clock_gate),
            bank.id.clock.pci_count.eq(meter.count),
            bank.id.clock.gate_log2.eq(self.clock_gate_log2),
        ]
        return m

    def _bus_agents(self, m, pads, bank, irq):
        """The active build's PCI function: configuration space, target, exerciser
        windows and response, DMA master, the bus drivers (INTA# for ``irq``) and passive
        mode. Returns the target and ``{Space: SharedBackend}`` of the spaces it shares
        with the side channel (configuration space, BAR0)."""
        m.submodules.config = config = ConfigSpace(
            self.bars, mhz66=self.clock_mhz > 33, devsel=self.decode,
            **{"vendor_id": DEFAULT_VENDOR_ID, "device_id": DEFAULT_DEVICE_ID,
               **self.config_args})
        m.submodules.target = target = PCITarget(self.width, self.windows, decode=self.decode)
        m.submodules.response = response = ExerciserResponse(decode=self.decode)
        if self.decode is DevselSpeed.FAST:
            wiring.connect(m, pads.decode, target.decode)

        m.submodules.dma = dma = DMAEngine(self.width,
                                                  ad_groups=ad_decision_groups(self.pin_group))

        # The bus: the target and the DMA master drive it; the interrupt unit pulls INTA#.
        # Passive mode (id.mode.passive), once asked for, starts nothing new: the target
        # claims nothing, the master never sees GNT#, INTA# is released. It takes hold in a
        # clock in which the board drives no line (REQ#, always driven by a master, aside)
        # and the target is idle: from then on the pads drive nothing, so nothing is left
        # half-done on the bus when it is cleared again. What is driven is read from
        # registered copies of the enables (the lines on the pins now), so that the live
        # handshake lines end at output flip-flops and never reach this decision.
        passive = bank.id.mode.passive
        passive_on = Signal()
        quiet = ~passive & ~passive_on
        joined = pads.joined_enables()
        decided = pads.master_ad_decided
        decisions = {"ad": dma} if decided else {}
        enables = merge_bus_drivers(m, pads.bus, [target, dma],
                                    lines=[("inta", irq.inta, irq.inta & quiet)],
                                    joined_by_pads=joined, decided_by_pads=decisions)
        if decided:
            m.d.comb += pads.master_ad.eq(dma.ad_decision)
        # One permission for the pads, the target, which gates AD's enable itself (the
        # pads' copies have no input left for it), and the master, which gates C/BE#'s.
        drive_allowed = ~passive_on
        m.d.comb += [pads.drive_allowed.eq(drive_allowed), target.drive_allowed.eq(drive_allowed),
                     dma.drive_allowed.eq(drive_allowed)]
        # (REQ# is always driven by a master: it does not count.) For AD the pads say
        # whether they drive it: their copy of a tristate register, placed with it, rather
        # than a copy of the cores' enables (the end of the enables' whole decision); it
        # costs no register of its own. Nor do the lines the cores gate themselves
        # (CORE_GATED_LINES), whose enables leave the cores in the tristate register's
        # polarity (a register here would take an inverter after the live choice): the
        # master drives C/BE# only with FRAME#, IRDY# or AD (a parked bus: AD and C/BE#
        # together; initiator_prove's ``one_driver``), and SERR# is a one-clock pulse the
        # target does not start once passive mode is asked for (``claim_enable``).
        driven = pads.joined_driven()
        held_lines = {name: enable for name, enable in enables.items()
                      if name != "req" and name not in driven and name not in CORE_GATED_LINES}
        on_pins = [Signal(len(enable), name=f"{name}_on_pins")
                   for name, enable in held_lines.items()]
        m.d.pci += Cat(*on_pins).eq(Cat(*held_lines.values()))
        with m.If(passive & ~Cat(*on_pins, *driven.values()).any() & ~target.busy):
            m.d.pci += passive_on.eq(1)
        with m.Elif(~passive):
            m.d.pci += passive_on.eq(0)
        m.d.comb += [bank.id.mode.passive_on.eq(passive_on), target.claim_enable.eq(quiet),
                     self.indicators.passive.eq(passive_on)]
        for name in LIVE_LINES:
            m.d.comb += getattr(target.live, name).eq(getattr(pads.live, name))
            m.d.comb += getattr(dma.now, name).eq(getattr(pads.live, name))
        m.d.comb += dma.gnt_allowed.eq(quiet)
        m.d.comb += dma.now.ack64.eq(pads.live.ack64 if self.width == 64 else 0)
        m.d.comb += [target.par_error.eq(pads.par_error), pads.corrupt_par.eq(target.corrupt_par)]
        m.d.comb += dma.par_error.eq(pads.par_error)
        if self.width == 64:
            m.d.comb += [target.par64_error.eq(pads.par64_error),
                         pads.corrupt_par64.eq(target.corrupt_par64),
                         dma.par64_error.eq(pads.par64_error)]

        # Configuration space <-> target (and the local port).
        shared = {Space.CONFIG: self._share(m, "config", target.config, config.access)}
        for i in range(len(self.windows)):
            m.d.comb += target.bar_base[i].eq(config.bar_base[i])
        m.d.comb += [
            target.io_enable.eq(config.io_enable),
            target.memory_enable.eq(config.memory_enable),
            target.parity_response.eq(config.parity_response),
            target.serr_enable.eq(config.serr_enable),
            config.set_detected_parity.eq(target.detected_parity | dma.status.detected_parity),
            config.set_signaled_serr.eq(target.signaled_serr),
            config.set_signaled_target_abort.eq(target.signaled_target_abort),
        ]

        # Configuration space <-> DMA master and interrupt unit.
        wiring.connect(m, bank.dma, dma.regs)
        m.d.comb += [
            dma.bus_master.eq(config.master_enable & ~passive_on),
            dma.mwi_enable.eq(config.command[4]),
            dma.parity_response.eq(config.parity_response),
            dma.latency_timer.eq(config.latency_timer),
            dma.cache_line.eq(config.cache_line_size),
            config.set_received_master_abort.eq(dma.status.received_master_abort),
            config.set_received_target_abort.eq(dma.status.received_target_abort),
            config.set_master_parity.eq(dma.status.master_data_parity),
            irq.interrupt_disable.eq(config.int_disable),
            config.interrupt_status.eq(irq.interrupt_status),
        ]

        # BAR backends.
        shared[Space.BAR0] = self._share(m, "bar0", target.bar0, bank.access)
        exerciser = self.windows[2]
        # On a 64-bit board the top offset bit of BAR2 only selects 32-bit answers: both
        # halves reach the same RAM.
        alias_bits = 1 if exerciser.ack64_bit is not None else 0
        m.submodules.scratch = scratch = ScratchRAM(
            width=exerciser.data_width, addr_bits=exerciser.addr_bits - alias_bits,
            verilog=self.scratch_verilog)
        _connect_backend(m, target.bar2, scratch.bus)
        m.submodules.io_scratch = io_scratch = ScratchRAM(
            width=32, addr_bits=self.windows[3].addr_bits, verilog=False)
        wiring.connect(m, target.bar3, io_scratch.bus)

        # Exerciser response.
        connect_response(m, target, response, bank.target)

        return target, shared

    @staticmethod
    def _share(m, name, requester, backend):
        """Put a :class:`SharedBackend` between the target's port ``requester`` (None in a
        passive build: that side stays idle) and ``backend``; return it (its ``local`` port
        is for the side channel)."""
        shared = m.submodules[f"shared_{name}"] = SharedBackend(
            len(backend.addr), len(backend.w_data))
        if requester is not None:
            wiring.connect(m, requester, shared.target)
        wiring.connect(m, shared.backend, backend)
        return shared
