# SPDX-License-Identifier: BSD-2-Clause
"""A reference PCI card: an ECP5 (CABGA381) whose PCI lines sit on the banks of one edge.

Where the ULX3S header spreads the bus over three edges of the die, a card designed for
PCI keeps the lines on one: here the right edge of the die, banks 2 and 3 (balls in
columns 16 to 20 of the package), in the order the card's edge connector routes them
(GNT#, REQ#, AD[31:24], IDSEL, C/BE#[3], AD[23:16], C/BE#[2], FRAME#, IRDY#, TRDY#,
DEVSEL#, STOP#, PERR#, SERR#, PAR, C/BE#[1], AD[15:8], C/BE#[0], AD[7:0]), so that
the traces from the connector do not cross, and the handshake lines land in the middle
of the AD pins they steer. CLK takes a primary clock input of the same edge (PCLKT2_1),
amid the lines it clocks. The lines only sampled and never read in the clock they
arrive (INTA#..INTD#, RST# and LOCK#) take the same edge's lower balls, which leaves the
upper group within the balls the LFE5U-45F bonds as well. Everything else of the card
(its 25 MHz oscillator, eight LEDs, a UART to a USB bridge for the side channel, the
trigger pins) is on bank 1, the right half of the top edge: the side channel and the
register bank it reaches the PCI core through then sit between the UART and the PCI
edge, not across the die from it. docs/hardware.md describes what such a card needs.

:data:`PCI_PINOUT` is the one declaration of the wiring: the platform resource, the pin
table of docs/hardware.md and the tests derive from it.
"""

from amaranth.build import Attrs, Clock, Pins, Resource, Subsignal
from amaranth.vendor import LatticeECP5Platform
from amaranth_boards.resources import LEDResources, UARTResource

from pcispy.pci.bus import bus_lines
from pcispy.platform.boards.ulx3s import CLOCK_LINE, PCI_EDGE_PINS, RESET_LINE, pci_subsignal
from pcispy.platform.ecp5.cells import ECP5Cells
from pcispy.platform.timing import PCI_CLOCK_MHZ

__all__ = ["WIDTH", "BUS_CLOCK_MHZ", "FLOORPLAN_DATA_PATHS", "NEXTPNR_DEFAULTS", "PCI_PINOUT", "PCI_EDGE_PINS",
           "BOARDS", "PCICard85FPlatform", "PCICard45FPlatform", "pci_resource", "add_pci",
           "header_label", "ball"]

#: Bus width of this pin-out.
WIDTH = 32

#: The bus clock (MHz) this pin-out lets an active build sample every input in time at:
#: PCI's 33 MHz. Built for it, the pci clock reaches 38.3-42.4 MHz and every live path
#: fits its 7 ns (6.83 ns at worst) on each of seeds 1-5 (docs/timing.md, "Current
#: figures").
BUS_CLOCK_MHZ = 33

#: Whether the floorplan places the logic between the live handshake pins and AD's
#: registers too (:func:`~pcispy.platform.ecp5.floorplan.floorplan`): every AD pin is on
#: the handshake pins' edge, so each of those cells goes beside the pins it joins; left to
#: the placer they sat up to 35 rows from their AD pin (docs/timing.md).
FLOORPLAN_DATA_PATHS = True

#: nextpnr's placement seed and threads unless told otherwise (as the other boards: one
#: thread, so that every machine gets the same placement).
NEXTPNR_DEFAULTS = {"seed": 2, "threads": 1}

#: ``{subsignal: [FPGA ball, bit 0 first]}``. From the top of the die's right edge down
#: (tiles X126/Y11 to Y56, four balls a tile), in the connector's order; CLK on J19
#: (PCLKT2_1, tile Y44); the sampled-only lines below (tiles Y83, Y86).
PCI_PINOUT = {
    "gnt": ["C18"], "req": ["D17"],
    "ad": ["R17", "R16", "P16", "N17", "P17", "N18", "M17", "N16",      # AD[7:0]
           "L18", "L17", "L16", "M19", "L19", "M20", "L20", "K20",      # AD[15:8]
           "E19", "D20", "D19", "C20", "J16", "J17", "H17", "H18",      # AD[23:16]
           "G18", "F17", "F18", "E18", "E17", "D18", "F16", "E16"],     # AD[31:24]
    "idsel": ["G16"],
    "cbe": ["M18", "J20", "E20", "H16"],
    "frame": ["F19"], "irdy": ["F20"], "trdy": ["G20"], "devsel": ["G19"], "stop": ["H20"],
    "perr": ["J18"], "serr": ["K18"], "par": ["K19"],
    CLOCK_LINE: ["J19"],
    "inta": ["N19"], "intb": ["N20"], "intc": ["P19"], "intd": ["P18"],
    "rst": ["P20"], RESET_LINE: ["R20"], "lock": ["T20"],
}

#: The card's oscillator (on the bank's primary clock input PCLKT1_0), LEDs, UART (rx,
#: tx) and trigger pins: bank 1, tiles X71-X116 of the top edge on the 85F. With them on
#: banks 0, 6 and 7 (the top-left corner) the same design's pci clock reached 37.97 MHz
#: and its worst control path took 6.99 ns; here 39.78 MHz and 6.55 ns (seed 2,
#: docs/timing.md).
CLOCK_BALL = "B12"
LED_BALLS = "A15 B15 C15 D15 E15 B16 C16 D16"
UART_BALLS = {"rx": "A16", "tx": "A17"}
TRIGGER_BALLS = {"trigger_out": "B17", "trigger_in": "C17"}


def header_label(pin):
    """The card's name of a PCI line's pin: its ball (no header between)."""
    return pin


def ball(platform, pin):
    """The FPGA ball of pin ``pin``: the pin is the ball."""
    return pin


def pci_resource(passive=False, clock_mhz=PCI_CLOCK_MHZ):
    """The ``pci`` resource (as :func:`pcispy.platform.boards.ulx3s.pci_resource`)."""
    return Resource("pci", 0, *(
        pci_subsignal(name, " ".join(PCI_PINOUT[name]), passive, clock_mhz)
        for name in list(bus_lines(WIDTH)) + [RESET_LINE, CLOCK_LINE]))


class _PCICardPlatform(LatticeECP5Platform):
    package = "BG381"
    speed = "6"
    default_clk = "clk25"
    resources = [
        Resource("clk25", 0, Pins(CLOCK_BALL, dir="i"), Clock(25e6),
                 Attrs(IO_TYPE="LVCMOS33")),
        *LEDResources(pins=LED_BALLS, attrs=Attrs(IO_TYPE="LVCMOS33", DRIVE="4")),
        UARTResource(0, rx=UART_BALLS["rx"], tx=UART_BALLS["tx"],
                     attrs=Attrs(IO_TYPE="LVCMOS33")),
        Resource("pci_trigger", 0,
                 Subsignal("out", Pins(TRIGGER_BALLS["trigger_out"], dir="o"),
                           Attrs(IO_TYPE="LVCMOS33", DRIVE="8", PULLMODE="NONE")),
                 Subsignal("input", Pins(TRIGGER_BALLS["trigger_in"], dir="i"),
                           Attrs(IO_TYPE="LVCMOS33", PULLMODE="DOWN"))),
    ]
    connectors = []


class PCICard85FPlatform(_PCICardPlatform):
    """The card with an LFE5U-85F."""
    device = "LFE5U-85F"


class PCICard45FPlatform(_PCICardPlatform):
    """The card with an LFE5U-45F (the same balls: the pin-out leaves out the two the 45F
    does not bond on this edge, K16 and K17)."""
    device = "LFE5U-45F"


#: AD pins per I/O tile group the pads copy AD's enable and decision for (pairs, as on
#: the ULX3S: two of a tile's four balls).
PCI_PIN_GROUP = 2


def add_pci(platform, passive=False, clock_mhz=PCI_CLOCK_MHZ):
    """Add the ``pci`` resource to ``platform`` and return it, with ``pci_pin_group``,
    ``pci_trace_memory`` (block RAM: the card has no SDRAM), ``pci_trigger_resource`` and
    the live paths' cell backend (``get_live_cells``: the ECP5 primitives)."""
    platform.add_resources([pci_resource(passive, clock_mhz)])
    platform.pci_pin_group = PCI_PIN_GROUP
    platform.pci_trace_memory = "bram"
    platform.pci_trigger_resource = "pci_trigger"
    platform.get_live_cells = ECP5Cells
    return platform


#: ``{board name: platform class}`` for ``make bitstream BOARD=...``.
BOARDS = {"pci-card-85f": PCICard85FPlatform, "pci-card-45f": PCICard45FPlatform}
