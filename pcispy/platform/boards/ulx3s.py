# SPDX-License-Identifier: BSD-2-Clause
"""The ULX3S (Lattice ECP5, BG381) with a 32-bit PCI slot on its 56-pin GPIO header.

The header has 28 pin pairs (GP0..GP27 / GN0..GN27 on the silkscreen, ``"N+"``/``"N-"``
of connector ``gpio 0`` in amaranth-boards). A 32-bit PCI slot needs 54 signals; RST#
goes to two header pins (see :data:`PCI_PINOUT`), one pin is spare. Every pin is 3.3 V
LVCMOS: the board only attaches to 3.3 V signalling PCI (docs/wiring.md).

:data:`PCI_PINOUT` is the one declaration of the wiring: the platform resource, the
wiring table in docs/wiring.md and the tests all derive from it.
"""

from amaranth.build import Attrs, Clock, Pins, Resource, Subsignal
from amaranth_boards.ulx3s import (ULX3S_12F_Platform, ULX3S_25F_Platform,
                                   ULX3S_45F_Platform, ULX3S_85F_Platform)

from pcispy.pci.bus import bus_lines
from pcispy.core.pads import INPUT_ONLY_LINES
from pcispy.platform.ecp5.cells import ECP5Cells
from pcispy.platform.timing import PCI_CLOCK_MHZ

__all__ = ["WIDTH", "BUS_CLOCK_MHZ", "FLOORPLAN_DATA_PATHS", "NEXTPNR_DEFAULTS", "PCI_PINOUT", "PCI_EDGE_PINS", "CLOCK_LINE", "RESET_LINE", "BOARDS",
           "TRIGGER_PINS", "trigger_resource",
           "pci_resource", "pci_subsignal", "header_label", "ball", "add_pci"]

#: Bus width of this pin-out.
WIDTH = 32

#: The bus clock (MHz) this pin-out lets an active build sample every input in time at:
#: the header spreads the PCI pins over three edges of the die, and the paths from a
#: handshake pin to the AD output registers on the far edges take up to 12 ns (the
#: default build, seed 2: 28.6 MHz at most; docs/timing.md), where a 33 MHz bus leaves 7.
#: Declared with a margin for what nextpnr's delay model leaves out. ``make bitstream``
#: builds an active board for it, ``make timing`` holds it to it, and the board reports
#: it (``id.config.bus_clock``, ``pcispy info``).
BUS_CLOCK_MHZ = 25

#: Whether the floorplan places the logic before AD's registers too: not on this header,
#: whose AD pins sit on three edges of the die; a cell feeding several of them belongs
#: where the placer puts it, between them.
FLOORPLAN_DATA_PATHS = False

#: The SDRAM trace memory's own clock offered by ``--sdram-clock`` (domain ``sdram``, from
#: the 25 MHz oscillator by a PLL), MHz: 220 MB/s on the x16 data pins, 209 sustained. The
#: passive ULX3S-85F build with it meets its timing (120.55 MHz, seed 2); the default
#: passive build still keeps the SDRAM on the PCI clock, whose read timing has the wider
#: margins while neither is checked on a board (docs/sdram.md).
SDRAM_CLOCK_MHZ = 110

#: Resource subsignal of the PCI clock, and of RST#'s second pin (the reset of domain
#: ``pci``: an FPGA pin feeds one input buffer, and the pads already sample ``rst``).
CLOCK_LINE = "clk"
RESET_LINE = "rst_domain"

#: ``{subsignal: [gpio connector pins, bit 0 first]}``. The header's pin pairs sit on
#: three edges of the die (each pair of one I/O tile: pairs 0-7 and 22-27 on the top edge,
#: 8-13 on the left, 14-21 on the right), so which line takes which pair decides how far
#: the handshake lines must reach in the clock they arrive. The handshake lines (FRAME#,
#: IRDY#, TRDY#, STOP#, DEVSEL#, GNT#) and REQ#, which the master decides from them, share
#: pairs 0-3 in the middle of the top edge (tiles X58-X65), with CLK on pair 0's primary
#: clock input (ball B11, PCLKT0_0); C/BE#, PAR, PERR# and SERR#, whose paths start at
#: PAR or end at C/BE#'s registers, the pairs next nearest (25-27 and 4); AD the sixteen
#: pairs after those, byte lane by byte lane; and the lines only sampled or driven from
#: registers (INTA#..INTD#, RST#, IDSEL, LOCK#) the four pairs farthest away (14-17, the
#: right edge's lower half). docs/timing.md has the measured gain. RST# takes two pins: an
#: FPGA pin feeds one input buffer, and the pads sample ``rst`` while the domain's reset
#: needs it unregistered; one pin is spare (4-).
PCI_PINOUT = {
    "ad": [f"{pair}{side}" for pair in (5, 6, 7, 8, 10, 11, 9, 13, 12, 18, 19, 20, 21, 22,
                                        23, 24) for side in "+-"],
    "cbe": ["25+", "25-", "26+", "26-"],
    "par": ["27+"], "perr": ["27-"], "serr": ["4+"],
    CLOCK_LINE: ["0+"], "frame": ["0-"], "irdy": ["1+"], "trdy": ["1-"],
    "stop": ["2+"], "devsel": ["2-"], "gnt": ["3+"], "req": ["3-"],
    "inta": ["14+"], "intb": ["14-"], "intc": ["15+"], "intd": ["15-"],
    "rst": ["16+"], RESET_LINE: ["16-"], "idsel": ["17+"], "lock": ["17-"],
}

#: The PCI edge-connector pin of each signal bit (PCI Local Bus spec, 32-bit connector,
#: side A/B), ``{subsignal: [pin, bit 0 first]}``.
PCI_EDGE_PINS = {
    "ad": ["A58", "B58", "A57", "B56", "A55", "B55", "A54", "B53",
           "B52", "A49", "B48", "A47", "B47", "A46", "B45", "A44",
           "A32", "B32", "A31", "B30", "A29", "B29", "A28", "B27",
           "A25", "B24", "A23", "B23", "A22", "B21", "A20", "B20"],
    "cbe": ["A52", "B44", "B33", "B26"],
    "par": ["A43"], "frame": ["A34"], "irdy": ["B35"], "trdy": ["A36"],
    "stop": ["A38"], "devsel": ["B37"], "idsel": ["A26"], "lock": ["B39"],
    "perr": ["B40"], "serr": ["B42"], "req": ["B18"], "gnt": ["A17"],
    "inta": ["A6"], "intb": ["B7"], "intc": ["A7"], "intd": ["B8"],
    "rst": ["A15"], RESET_LINE: ["A15"],
    CLOCK_LINE: ["B16"],
}


def header_label(pin):
    """The silkscreen label of a gpio connector pin: ``"3+"`` -> ``"GP3"``."""
    return ("GP" if pin.endswith("+") else "GN") + pin[:-1]


def ball(platform, pin):
    """The FPGA ball of gpio connector pin ``pin`` on ``platform``."""
    return platform.connectors[("gpio", 0)].mapping[pin]


def pci_resource(passive=False, clock_mhz=PCI_CLOCK_MHZ):
    """The ``pci`` resource: one subsignal per line of ``bus_lines(32)`` plus the clock
    and RST#'s reset pin. Pins are pin-level (the pads invert the active-low lines).

    A ``passive`` resource makes every PCI pin an input: the bitstream then contains no
    output driver on the bus at all. ``clock_mhz`` is the bus clock the design is
    constrained to (33 or 66).
    """
    return Resource("pci", 0, *(
        pci_subsignal(name, " ".join(PCI_PINOUT[name]), passive, clock_mhz,
                      conn=("gpio", 0))
        for name in list(bus_lines(32)) + [RESET_LINE, CLOCK_LINE]))


def pci_subsignal(name, pins, passive, clock_mhz=PCI_CLOCK_MHZ, **pins_args):
    """The subsignal of PCI line ``name`` on ``pins`` (space-separated, bit 0 first):
    an input for the lines the board only samples (every line when ``passive``), else
    bidirectional; 3.3 V LVCMOS, no pull-ups (the bus has them), fast 8 mA drivers; the
    clock carries its constraint (``clock_mhz``)."""
    inputs = passive or name in INPUT_ONLY_LINES or name in (RESET_LINE, CLOCK_LINE)
    attrs = Attrs(IO_TYPE="LVCMOS33", PULLMODE="NONE")
    if not inputs:
        # PCI lines are terminated by the bus's pull-ups; fast edges for 66 MHz.
        attrs = Attrs(IO_TYPE="LVCMOS33", PULLMODE="NONE", DRIVE="8", SLEWRATE="FAST")
    extra = [Clock(clock_mhz * 1e6)] if name == CLOCK_LINE else []
    return Subsignal(name, Pins(pins, dir="i" if inputs else "io", **pins_args), attrs, *extra)


#: The spy's trigger pins, ``{subsignal: (FPGA ball, label on the display header)}``: the
#: 7-pin display (OLED) header, which a PCI spy leaves free, has a GND pin beside them for
#: the probe's or the cable's ground, and is away from the PCI ribbon (a 1 us edge next
#: to the PCI clock pin, GP27, is noise on it). ``trigger_out``: 3.3 V LVCMOS, 8 mA;
#: ``trigger_in``: 3.3 V LVCMOS with a pull-down, so an open input reads low (no edge).
TRIGGER_PINS = {"trigger_out": ("N2", "CS"), "trigger_in": ("P1", "DC")}


def trigger_resource():
    """The ``pci_trigger`` resource: subsignals ``out`` and ``input`` on :data:`TRIGGER_PINS`
    (BoardTop wires them to the spy's trigger output and input)."""
    return Resource("pci_trigger", 0,
                    Subsignal("out", Pins(TRIGGER_PINS["trigger_out"][0], dir="o"),
                              Attrs(IO_TYPE="LVCMOS33", DRIVE="8", PULLMODE="NONE")),
                    Subsignal("input", Pins(TRIGGER_PINS["trigger_in"][0], dir="i"),
                              Attrs(IO_TYPE="LVCMOS33", PULLMODE="DOWN")))


#: AD pins per I/O tile as the pin-out places them: each pin pair of the header is the two
#: pins of one tile, so the pads make one copy of AD's enable and decision per pair
#: (:class:`~pcispy.core.pads.PCIPads`'s ``pin_group``).
PCI_PIN_GROUP = 2


def add_pci(platform, passive=False, clock_mhz=PCI_CLOCK_MHZ, sdram_clock_mhz=None):
    """Add the ``pci`` resource to ``platform`` and return it, with its
    ``pci_pin_group`` and ``pci_trace_memory`` (what BoardTop keeps the spy's trace in:
    the passive build, a spy alone, uses the board's 32 MB SDRAM, amaranth-boards'
    ``sdram`` resource, docs/sdram.md; the active build keeps block RAM) and
    ``pci_sdram_clock_mhz`` (``sdram_clock_mhz``: the SDRAM's own clock from a PLL, e.g.
    :data:`SDRAM_CLOCK_MHZ`; None, the default: the SDRAM runs on the PCI clock); the
    ``pci_trigger`` resource too (:func:`trigger_resource`), named by
    ``pci_trigger_resource``; and ``get_live_cells``, the hook that hands the cores the
    ECP5 primitives for their live paths (:func:`pcispy.core.live.cells_for`)."""
    platform.add_resources([pci_resource(passive, clock_mhz), trigger_resource()])
    platform.get_live_cells = ECP5Cells
    platform.pci_trigger_resource = "pci_trigger"
    platform.pci_pin_group = PCI_PIN_GROUP
    platform.pci_trace_memory = "sdram" if passive else "bram"
    platform.pci_sdram_clock_mhz = sdram_clock_mhz
    return platform


#: nextpnr's placement seed and threads unless ``make bitstream`` is told otherwise
#: (``ARGS="--seed N --threads N"``). ``make bench`` reports the ULX3S-85F built with them.
#: Seed 2 on one thread: a placement measured to route the active design and meet PCI at
#: 33 MHz (docs/timing.md). HeAP's placement may differ with the thread count, so both
#: are pinned.
NEXTPNR_DEFAULTS = {"seed": 2, "threads": 1}

#: ``{board name: platform class}`` for ``make bitstream BOARD=...``.
BOARDS = {
    "ulx3s-85f": ULX3S_85F_Platform,
    "ulx3s-45f": ULX3S_45F_Platform,
    "ulx3s-25f": ULX3S_25F_Platform,
    "ulx3s-12f": ULX3S_12F_Platform,
}
