# SPDX-License-Identifier: BSD-2-Clause
"""The platform wrapper: :class:`~pcispy.board.top.PCIBoard` on a real FPGA board.

:class:`BoardTop` takes the ``pci`` resource of a platform (pcispy.platform.boards adds it),
derives clock domain ``pci`` from the PCI clock with its reset from RST#, leaves ``sync``
to the platform's oscillator, and shows liveness on the LEDs. A passive build's resource
declares every PCI pin an input, so the pads build no output driver at all.

The UART side channel (:mod:`pcispy.sidechannel`) sits on the platform's ``uart``
resource (the ULX3S's FTDI USB serial) in both builds: for a passive spy it is the only
way to reach the board's registers and trace memory.
"""

from amaranth import ClockDomain, ClockSignal, Module, ResetSignal, Signal
from amaranth.lib import io, wiring
from amaranth.lib.cdc import FFSynchronizer, ResetSynchronizer

from pcispy.board.clock_meter import OscillatorGate
from pcispy.core.pads import PIN_GROUP
from pcispy.pci.bus import bus_lines
from pcispy.sidechannel.protocol import DEFAULT_BAUD
from pcispy.sidechannel.sidechannel import SideChannel
from pcispy.platform.ecp5.pll import ECP5PLL, pll_dividers, pll_phase
from pcispy.spy.sdram import SDRAM_PINS, SDRAMTiming, board_clock_phase
from pcispy.board.top import PCIBoard

__all__ = ["BoardTop", "LED_MEANING", "sdram_clocking"]


def sdram_clocking(input_mhz, mhz):
    """The SDRAM's own clock of ``mhz`` made by an ECP5 PLL from ``input_mhz``:
    ``(dividers, phase, timing)``: the PLL's dividers, the phase of its second output
    (the SDRAM's clock pin: :func:`~pcispy.spy.sdram.board_clock_phase` rounded to the
    PLL's steps, docs/sdram.md) and the SDRAM's timing with the read delay for that phase.
    Raises ValueError when the PLL cannot make it or the SDRAM cannot run at it."""
    dividers = pll_dividers(input_mhz, mhz)
    phase = pll_phase(dividers, board_clock_phase(mhz))
    return dividers, phase, SDRAMTiming.for_clock(mhz, board=True,
                                                  clock_phase=phase.fraction)

#: What each board LED shows, LED 0 first (documented in docs/wiring.md).
LED_MEANING = (
    "PCI clock running (blinks about once a second at 33 MHz)",
    "RST# asserted",
    "board oscillator running (blinks, domain sync)",
    "passive build (no PCI output drivers)",
    "spy armed, waiting for its trigger",
    "spy triggered, recording",
    "spy overrun: records lost since it was armed",
    "passive mode in force (id.mode.passive)",
)


class BoardTop(wiring.Component):
    """A board with one PCI slot. No ports: everything is a platform resource.

    Resources used: ``pci`` (subsignals for every line of ``bus_lines(width)``, ``clk`` and
    ``rst_domain``: RST# on a second pin), ``led`` 0..3, ``uart`` (``rx``, ``tx``: the
    side channel), and the platform's default clock for domain ``sync``; the spy's trigger
    pins (``out``, ``input``) when the platform names a ``pci_trigger_resource``; ``sdram`` when
    the platform's ``pci_trace_memory`` is ``"sdram"`` (the spy's trace memory,
    :class:`~pcispy.spy.sdram.SDRAMTraceMemory`, on the PCI clock, or on clock domain
    ``sdram`` of ``pci_sdram_clock_mhz`` from the oscillator by an ECP5 PLL where the
    platform names one).

    Parameters:
        passive: the ``pci`` resource is all inputs (a spy that cannot disturb the bus);
            it is recorded in ``id.config.passive`` by the caller's choice of resource.
        clock_mhz: nominal PCI clock reported by the board (33 or 66).
        width: bus width of the slot, 32 or 64 (the resource must have its lines).
        board: extra keyword arguments of :class:`PCIBoard` (e.g. ``spy_addr_bits``).
        baud: the side channel's line rate (the divisor is the default clock over it).
    """
    def __init__(self, *, passive=False, clock_mhz=33, board=None, width=32,
                 baud=DEFAULT_BAUD):
        self.passive = passive
        self.baud = baud
        self.width = width
        self.clock_mhz = clock_mhz
        self.board_args = dict(board or {})
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        pins = platform.request("pci", 0, dir="-")
        ports = {name: getattr(pins, name) for name in bus_lines(self.width)}
        directions = {port.direction for port in ports.values()}
        if self.passive and directions != {io.Direction.Input}:
            raise ValueError("a passive build needs a pci resource whose pins are all inputs")

        # Domain pci: the bus clock; reset asserted with RST# at once, released on the
        # clock (RST# deasserts asynchronously to CLK; a synchronous release keeps every
        # flip-flop leaving reset in the same clock).
        m.submodules.clk_buffer = clk_buffer = io.Buffer("i", pins.clk)
        m.submodules.rst_buffer = rst_buffer = io.Buffer("i", ~pins.rst_domain)
        m.domains.pci = ClockDomain("pci", async_reset=True)
        m.d.comb += ClockSignal("pci").eq(clk_buffer.i)
        # The synchronised reset reaches the domain's thousands of flip-flops on a global
        # line: on fabric it would be the design's largest net (about 9,000 LSR inputs)
        # and a large share of the router's congestion.
        m.domains.pci_reset = ClockDomain("pci_reset", async_reset=True)
        m.d.comb += ClockSignal("pci_reset").eq(clk_buffer.i)
        m.submodules.pci_reset = ResetSynchronizer(rst_buffer.i, domain="pci_reset")
        m.d.comb += ResetSignal("pci").eq(platform.get_live_cells().global_buffer(
            m, ResetSignal("pci_reset"), "pci_reset_buffer"))

        # The pin-out says how many AD pins share an I/O tile (pcispy.platform.boards).
        board_args = {"pin_group": getattr(platform, "pci_pin_group", PIN_GROUP),
                      **self.board_args}
        # The pin-out also says where the spy's trace goes (block RAM unless it says);
        # board arguments choosing a trace memory or depth win.
        if (getattr(platform, "pci_trace_memory", "bram") == "sdram"
                and not {"trace_memory", "spy_addr_bits"} & set(board_args)):
            sdram = platform.request("sdram", 0, dir="-")
            # Its pins go through I/O cell flip-flops (SDRAMPads). By default the
            # controller runs on the PCI clock and the clock pin is that clock inverted;
            # the platform may give the SDRAM its own clock, domain sdram, from the
            # oscillator by a PLL (held in reset until the PLL locks). The read delay
            # follows from the clock pin's phase (docs/sdram.md).
            mhz = getattr(platform, "pci_sdram_clock_mhz", None)
            sdram_ports = {pin: getattr(sdram, pin) for pin in SDRAM_PINS}
            if mhz is None:
                domain = None
                timing = SDRAMTiming.for_clock(self.clock_mhz, board=True)
            else:
                # The SDRAM's clock pin from the PLL's second output, phase-shifted to
                # centre the read data on a clock edge (docs/sdram.md), through a DDR
                # cell like the other pins' registers; SDRAMPads drives the rest. A PCI
                # reset resets the controller too (both ends of its FIFO together).
                domain = "sdram"
                m.domains.sdram = ClockDomain("sdram")
                m.domains.sdram_pin = ClockDomain("sdram_pin", reset_less=True)
                input_mhz = platform.default_clk_frequency / 1e6
                _, phase, timing = sdram_clocking(input_mhz, mhz)
                m.submodules.sdram_pll = pll = ECP5PLL(
                    input_mhz, mhz, domain="sdram", phase_domain="sdram_pin",
                    phase=phase.fraction)
                m.d.comb += [pll.clk_in.eq(ClockSignal("sync")),
                             pll.reset.eq(ResetSignal("pci"))]
                m.submodules.sdram_clk = sdram_clk = io.DDRBuffer(
                    "o", sdram_ports["clk"], o_domain="sdram_pin")
                m.d.comb += [sdram_clk.o[0].eq(1), sdram_clk.o[1].eq(0)]
                sdram_ports["clk"] = None
            board_args.update(trace_memory="sdram", sdram_ports=sdram_ports,
                              sdram_timing=timing, sdram_domain=domain)
        m.submodules.board = board = PCIBoard(self.width, ports, clock_mhz=self.clock_mhz,
                                              **board_args)
        # The spy's trigger pins, where the pin-out has them (pcispy.platform.boards).
        trigger_resource = getattr(platform, "pci_trigger_resource", None)
        if trigger_resource and "trigger_in" in board.signature.members:
            trigger = platform.request(trigger_resource, 0, dir="-")
            m.submodules.trigger_out = trigger_out = io.Buffer("o", trigger.out)
            m.submodules.trigger_in = trigger_in = io.Buffer("i", trigger.input)
            m.d.comb += [trigger_out.o.eq(board.trigger_out),
                         board.trigger_in.eq(trigger_in.i)]
        # The board oscillator gates the meter of the PCI clock (id.clock).
        m.submodules.clock_gate = clock_gate = OscillatorGate(
            platform.default_clk_frequency, board.clock_gate_log2)
        m.d.comb += board.clock_gate.eq(clock_gate.toggle)

        # The UART side channel (sync), reaching the board through its local port.
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = uart_rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = uart_tx = io.Buffer("o", uart.tx)
        m.submodules.side_channel = side = SideChannel(
            round(platform.default_clk_frequency / self.baud))
        m.d.comb += [side.rx.eq(uart_rx.i), uart_tx.o.eq(side.tx)]
        wiring.connect(m, side.local, board.local)

        # LEDs (the platform's first eight). They cross no data between domains: a human
        # watches them.
        leds = []
        for i in range(len(LED_MEANING)):
            m.submodules[f"led_{i}"] = led = io.Buffer("o", platform.request("led", i, dir="-"))
            leds.append(led)
        pci_count = Signal(25)
        m.d.pci += pci_count.eq(pci_count + 1)
        sync_count = Signal(25)
        m.d.sync += sync_count.eq(sync_count + 1)
        # RST# shown from the sync domain, so the LED lights even with no PCI clock.
        in_reset = Signal()
        m.submodules.rst_led_sync = FFSynchronizer(rst_buffer.i, in_reset, o_domain="sync")
        shown = board.indicators
        m.d.comb += [
            leds[0].o.eq(pci_count[-1]),
            leds[1].o.eq(in_reset),
            leds[2].o.eq(sync_count[-1]),
            leds[3].o.eq(self.passive),
            leds[4].o.eq(shown.armed),
            leds[5].o.eq(shown.triggered),
            leds[6].o.eq(shown.overrun),
            leds[7].o.eq(shown.passive),
        ]
        return m
