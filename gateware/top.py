# SPDX-License-Identifier: BSD-2-Clause
"""The board core: pads, configuration space, target, BAR0 registers, exerciser windows.

:class:`PCIBoard` is everything of the board that lives on the PCI clock. The caller
supplies clock domain ``pci`` (the simulated system drives it; the hardware platform
wrapper derives it from the PCI clock and RST#) and the pads' ports (``platform.request``
results, or :func:`~pcispy.gateware.pci.pads.simulation_ports` when ``ports`` is None; they
are kept as ``board.ports`` so the simulated system can wire them).

BARs (DESIGN.md, "BARs"):

- BAR0, memory, 4 KiB: the register bank (:class:`~pcispy.gateware.csr.CSRBank`).
- BAR1, memory, prefetchable: the trace window; its backend bus is the board port
  ``trace`` (the spy's trace memory answers it). Present when ``trace_size`` is not 0.
- BAR2, memory: the exerciser window, scratch RAM with the programmed response. On a
  64-bit board its upper half (offset bit ``log2(exerciser_size) - 1`` set) aliases the
  lower half's RAM but answers 32-bit only (no ACK64#).
- BAR3, I/O, 256 bytes: the I/O exerciser window (its own small scratch RAM), same response.

Several blocks may drive the bus (the target now; the DMA initiator and the interrupt
unit later): every core's ``PCIBusSignature`` joins :func:`merge_bus_drivers`, which ORs
the values of the owners. A core that does not own a line keeps its ``oe`` low.
"""

from amaranth import Const, Module, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from .csr import CSRBank
from .exerciser.response import ExerciserResponse
from .exerciser.scratch import ScratchRAM
from .pci.bus import DevselSpeed, bus_lines
from .pci.config import BarSpec, ConfigSpace
from .pci.pads import PCIPads, simulation_ports
from .pci.target import BackendSignature, PCITarget, Window
from .regs import BAR0_SIZE, REGISTER_MAP

__all__ = ["PCIBoard", "merge_bus_drivers", "IO_WINDOW_SIZE"]

#: Size of the BAR3 I/O window, bytes.
IO_WINDOW_SIZE = 256


def merge_bus_drivers(m, pads_bus, cores, lines=()):
    """Join the ``bus`` ports of ``cores`` (each ``Out(PCIBusSignature)``) onto the pads.

    Each line is the OR of the values of the cores that own it (``oe``); every core sees
    the sampled inputs. ``lines`` adds single-line drivers as ``(line, o, oe)`` (e.g.
    ``("inta", irq.inta, 1)`` for an interrupt unit without a bus port).
    """
    for name, bits in bus_lines(pads_bus.signature.width).items():
        pad = getattr(pads_bus, name)
        value, enable = Const(0, bits), Const(0, 1)
        drivers = [(getattr(core.bus, name).o, getattr(core.bus, name).oe) for core in cores]
        drivers += [(o, oe) for line, o, oe in lines if line == name]
        for o, oe in drivers:
            oe = Value.cast(oe)
            value = value | (o & oe.replicate(bits))
            enable = enable | oe
        for core in cores:
            m.d.comb += getattr(core.bus, name).i.eq(pad.i)
        m.d.comb += [pad.o.eq(value), pad.oe.eq(enable)]


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
        trace (Out, BackendSignature): BAR1 backend (only when ``trace_size`` != 0): read
            requests for the trace memory, word-addressed, ``width`` bits (writes to BAR1
            are dropped by the target; reads may take any latency: beyond the PCI
            latency rules the target retries or disconnects).
        The PCI pins are not component ports: they are ``board.ports`` (io ports).

    Parameters:
        width: bus width, 32 or 64.
        ports: ``{line: io port}`` for every line of ``bus_lines(width)``, or None for
            :func:`simulation_ports`.
        exerciser_size: bytes of BAR2 (power of two, >= 16).
        trace_size: bytes of BAR1, 0 for no BAR1.
        clock_mhz: nominal PCI clock (reported in ``id.config`` and ``66 MHz capable``).
        scratch_verilog: build the scratch RAM from the hand-written Verilog
            (:data:`pcispy.gateware.exerciser.scratch.VERILOG_SOURCE`, for Verilator and
            synthesis) instead of an Amaranth Memory (Python-simulator unit tests).
        fast_decode: decode addresses within the address phase (DEVSEL# on clock 2; the
            pads offer AD, C/BE#, IDSEL unregistered: check timing before using it).
        config: extra keyword arguments of :class:`ConfigSpace` (IDs, class code ...).
    """
    def __init__(self, width=32, ports=None, *, exerciser_size=16 * 1024, trace_size=0,
                 clock_mhz=33, scratch_verilog=False, fast_decode=False, config=None):
        if width not in (32, 64):
            raise ValueError(f"PCI bus width must be 32 or 64, not {width!r}")
        self.width = width
        self.ports = simulation_ports(width) if ports is None else ports
        self.clock_mhz = clock_mhz
        self.scratch_verilog = scratch_verilog
        self.fast_decode = fast_decode
        self.config_args = dict(config or {})
        exerciser_bar = BarSpec("exerciser", "mem", exerciser_size)
        trace_bar = BarSpec("trace", "mem", trace_size, prefetchable=True) if trace_size else None
        self.windows = (
            Window(BarSpec("registers", "mem", BAR0_SIZE)),
            Window(trace_bar, data_width=width, prefetch=True, read_only=True)
            if trace_bar else None,
            Window(exerciser_bar, data_width=width, prefetch=True, exerciser=True,
                   ack64_bit=exerciser_bar.size_bits - 1 if width == 64 else None),
            Window(BarSpec("io", "io", IO_WINDOW_SIZE), exerciser=True),
        )
        members = {}
        if trace_bar:
            members["trace"] = Out(BackendSignature(self.windows[1].addr_bits, width))
        super().__init__(members)

    @property
    def bars(self):
        return [w.bar if w is not None else None for w in self.windows]

    def elaborate(self, platform):
        m = Module()
        fast = self.fast_decode
        m.submodules.pads = pads = PCIPads(self.width, self.ports, fast_decode=fast)
        m.submodules.config = config = ConfigSpace(
            self.bars, mhz66=self.clock_mhz > 33,
            devsel=DevselSpeed.FAST if fast else DevselSpeed.MEDIUM, **self.config_args)
        m.submodules.target = target = PCITarget(self.width, self.windows, fast_decode=fast)
        m.submodules.bank = bank = CSRBank(REGISTER_MAP)
        m.submodules.response = response = ExerciserResponse(fast_decode=fast)
        if fast:
            wiring.connect(m, pads.decode, target.decode)

        # The bus: every core that drives it joins here (DMA initiator: helper E; the
        # interrupt unit drives INTA# through its own bus port or `inta` below).
        merge_bus_drivers(m, pads.bus, [target])
        wiring.connect(m, pads.live, target.live)
        m.d.comb += [target.par_error.eq(pads.par_error), pads.corrupt_par.eq(target.corrupt_par)]
        if self.width == 64:
            m.d.comb += [target.par64_error.eq(pads.par64_error),
                         pads.corrupt_par64.eq(target.corrupt_par64)]

        # Configuration space <-> target.
        wiring.connect(m, target.config, config.access)
        for i in range(len(self.windows)):
            m.d.comb += target.bar_base[i].eq(config.bar_base[i])
        m.d.comb += [
            target.io_enable.eq(config.io_enable),
            target.memory_enable.eq(config.memory_enable),
            target.parity_response.eq(config.parity_response),
            target.serr_enable.eq(config.serr_enable),
            config.set_detected_parity.eq(target.detected_parity),
            config.set_signaled_serr.eq(target.signaled_serr),
            config.set_signaled_target_abort.eq(target.signaled_target_abort),
        ]
        # Received master/target abort and master data parity: the DMA initiator (E)
        # drives config.set_received_*/set_master_parity. Interrupt status: the irq unit (H).

        # BAR backends.
        wiring.connect(m, target.bar0, bank.access)
        if self.windows[1] is not None:
            wiring.connect(m, target.bar1, wiring.flipped(self.trace))
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
        wiring.connect(m, bank.target, response.regs)
        m.d.comb += [
            target.knobs.eq(response.knobs), target.retry.eq(response.retry),
            response.attempt.eq(target.attempt),
            response.corrupt_taken.eq(target.corrupt_taken),
            response.aborted.eq(target.signaled_target_abort),
            response.parity_error.eq(target.detected_parity),
        ]

        # Identity.
        m.d.comb += [
            bank.id.config.bus_width.eq(self.width == 64),
            bank.id.config.clock_mhz.eq(self.clock_mhz),
        ]
        # Blocks still to wire (each reports its ports): DMA engine (bank.dma, a bus
        # port into merge_bus_drivers), spy (bank.spy, BAR1 `trace`), interrupt unit
        # (bank.irq, INTA#), protocol checker (bank.check, watching pads.bus inputs).
        return m
