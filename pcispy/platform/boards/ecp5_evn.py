# SPDX-License-Identifier: BSD-2-Clause
"""The Lattice ECP5-5G Evaluation Board (LFE5UM5G-85F, BG381) with a 64-bit PCI slot.

Why this board: a 64-bit slot needs 94 signals (92 bus lines, RST# twice for the
``pci`` domain's reset, CLK), more than any ULX3S, ECPIX-5 (64 PMOD pins) or Versa
(about 60 expansion pins) offers. The ECP5-5G EVN brings 95 free 3.3 V-capable balls
out to its Raspberry Pi header (JP8), the J40 expansion header and the J32/J33/J5 GPIO
headers, and carries the same 85k-LUT die as the ULX3S-85F in the faster -8 speed grade,
so the whole active design fits with room to spare.

:data:`PCI_PINOUT` is the one declaration of the wiring: ``{line: [(connector, pin),
...], bit 0 first}``, filled in order from :data:`FREE_PINS` so that each AD byte lane
sits on neighbouring header pins. The platform resource, the wiring table in
docs/wiring.md and the tests all derive from it; :data:`PCI_EDGE_PINS` adds the 64-bit
extension's edge pins to the 32-bit ones of :mod:`.ulx3s`.

Every PCI pin must run at 3.3 V: the board's VCCIO1 defaults to 2.5 V, so the pin-out
avoids bank 1 (J40 pins 3, 33, 36, 37 and J39) and builds the platform with both
configurable banks at 3.3 V (:func:`platform`).
"""

from amaranth.build import Resource
from amaranth_boards.ecp5_5g_evn import ECP55GEVNPlatform

from pcispy.pci.bus import bus_lines
from pcispy.platform.ecp5.cells import ECP5Cells
from pcispy.platform.timing import PCI_CLOCK_MHZ
from pcispy.platform.boards.ulx3s import (CLOCK_LINE, PCI_EDGE_PINS as PCI_EDGE_PINS_32, RESET_LINE,
                                          pci_subsignal)

__all__ = ["WIDTH", "BUS_CLOCK_MHZ", "FLOORPLAN_DATA_PATHS", "NEXTPNR_DEFAULTS", "FREE_PINS", "LINE_ORDER", "PCI_PINOUT", "PCI_EDGE_PINS", "BOARDS",
           "platform", "pci_resource", "add_pci", "header_label", "ball"]

#: Bus width of this pin-out.
WIDTH = 64

#: The bus clock (MHz) this pin-out lets an active build sample every input in time at:
#: its headers spread the 64-bit slot over the die, and its last routed build took up to
#: 19.2 ns from a handshake pin to a control register (docs/wiring.md, "64-bit slot"),
#: which a bus of 23 MHz leaves it (20 MHz keeps a margin for the AD paths, not yet
#: measured on this board).
BUS_CLOCK_MHZ = 20

#: Whether the floorplan places the logic before AD's registers too: not with the slot
#: spread over the board's headers (as the ULX3S's).
FLOORPLAN_DATA_PATHS = False

#: nextpnr's placement seed and threads unless told otherwise: the one placement of this
#: board's active design measured to route. With seed 1 router1 stalls (about 92,000
#: arcs left after 21 minutes, flat for 17,000 iterations); seed 2 on one thread routes
#: (68 minutes of place and route; docs/wiring.md, "64-bit slot"). HeAP's placement may
#: differ with the thread count, so both are pinned.
NEXTPNR_DEFAULTS = {"seed": 2, "threads": 1}

#: The connector pins the slot uses, in wiring order: the Raspberry Pi header, J40
#: without its bank-1 pins, then the J32, J33 and J5 GPIO headers (``(connector, pin)``,
#: as amaranth-boards names them).
FREE_PINS = [
    *(("JP_8", p) for p in (3, 5, 7, 8, 10, 11, 12, 13, 15, 16, 18, 19, 21, 22, 23, 24,
                            26, 27, 28, 29, 31, 32, 33, 35, 36, 37, 38, 40)),
    *(("J_40", p) for p in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 21,
                            23, 25, 27, 28, 29, 31, 32, 35, 39)),
    *(("J_32", p) for p in (5, 6, 9, 10, 13, 14, 17, 18, 21, 22, 25, 26, 29, 30, 33, 34,
                            37, 38)),
    *(("J_33", p) for p in (5, 6, 9, 10, 13, 14, 17, 18, 21, 22, 25, 26, 29, 30)),
    *(("J_5", p) for p in (3, 4, 7, 8, 11, 12, 15, 16, 19)),
]

#: Lines in wiring order: the 32-bit slot first (as on the ULX3S), then the extension.
LINE_ORDER = [*bus_lines(32), RESET_LINE, CLOCK_LINE,
              *(name for name in bus_lines(64) if name not in bus_lines(32))]


def _pinout():
    widths = {**bus_lines(64), RESET_LINE: 1, CLOCK_LINE: 1}
    pins = iter(FREE_PINS)
    return {name: [next(pins) for _ in range(widths[name])] for name in LINE_ORDER}


#: ``{subsignal: [(connector, pin), ...]}``, bit 0 first.
PCI_PINOUT = _pinout()

#: The PCI edge-connector pin of each signal bit (PCI Local Bus spec, 64-bit connector:
#: the 32-bit part plus pins 60 and 63-94 of sides A/B), ``{subsignal: [pin, ...]}``.
PCI_EDGE_PINS = {
    **PCI_EDGE_PINS_32,
    "ad_hi": ["A91", "B90", "A89", "B89", "A88", "B87", "A86", "B86",
              "A85", "B84", "A83", "B83", "A82", "B81", "A80", "B80",
              "A79", "B78", "A77", "B77", "A76", "B75", "A74", "B74",
              "A73", "B72", "A71", "B71", "A70", "B69", "A68", "B68"],
    "cbe_hi": ["B66", "A65", "B65", "A64"],
    "par64": ["A67"], "req64": ["A60"], "ack64": ["B60"],
}


def header_label(pin):
    """The board's label of a connector pin: ``("JP_8", 3)`` -> ``"JP8-3"``."""
    connector, number = pin
    return f"{connector.replace('_', '')}-{number}"


def ball(board, pin):
    """The FPGA ball of connector pin ``pin`` on ``board``."""
    connector, number = pin
    name, index = connector.split("_")
    return board.connectors[(name, int(index))].mapping[str(number)]


def pci_resource(board, passive=False, clock_mhz=PCI_CLOCK_MHZ):
    """The ``pci`` resource of ``board`` (an ECP5-5G EVN platform): one subsignal per
    line of ``bus_lines(64)`` plus the clock and RST#'s reset pin, by FPGA ball. A
    ``passive`` resource makes every PCI pin an input; ``clock_mhz`` is the clock
    constraint."""
    return Resource("pci", 0, *(
        pci_subsignal(name, " ".join(ball(board, pin) for pin in PCI_PINOUT[name]), passive,
                      clock_mhz)
        for name in LINE_ORDER))


def platform():
    """The board with both configurable I/O banks at 3.3 V (VCCIO1 needs the resistor
    change the board's user guide describes: R100 off, R105 on)."""
    return ECP55GEVNPlatform(VCCIO1="3V3", VCCIO6="3V3")


#: AD pins per I/O tile as the pin-out places them (:class:`~pcispy.core.pads.PCIPads`'s
#: ``pin_group``): the expansion headers' pins are taken in pairs, as on the ULX3S.
PCI_PIN_GROUP = 2


def add_pci(board, passive=False, clock_mhz=PCI_CLOCK_MHZ):
    """Add the ``pci`` resource to ``board`` and return it, with its ``pci_pin_group``
    and the live paths' cell backend (``get_live_cells``: the ECP5 primitives)."""
    board.add_resources([pci_resource(board, passive, clock_mhz)])
    board.get_live_cells = ECP5Cells
    board.pci_pin_group = PCI_PIN_GROUP
    return board


#: ``{board name: platform factory}`` for ``make bitstream BOARD=...``.
BOARDS = {"ecp5-evn": platform}
