# SPDX-License-Identifier: BSD-2-Clause
"""The reference PCI card's pin-out, as nextpnr binds its balls: every PCI line on the
die's right edge, the upper group in the edge connector's order, CLK amid the lines it
clocks, and the same balls on the LFE5U-45F."""

import re

import pytest

from pcispy.pci.bus import bus_lines
from pcispy.platform.boards import board_platform, pci_card
from pcispy.platform.boards.ulx3s import CLOCK_LINE, RESET_LINE
from pcispy.platform.build import _tool
from pcispy.platform.ecp5.floorplan import pin_tiles
from pcispy.platform.top import BoardTop

pytestmark = [pytest.mark.board, pytest.mark.heavy]

#: The lines read or driven in the clock they arrive, or whose paths start or end at
#: them (the handshake, REQ#, PAR and its error lines, C/BE#, AD); the rest are sampled
#: only or driven from registers.
TIMED = ["gnt", "req", "ad", "idsel", "cbe", "frame", "irdy", "trdy", "devsel", "stop",
         "perr", "serr", "par", CLOCK_LINE]

#: The upper group in the order the PCI edge connector has them (its pins A17 .. B58).
CONNECTOR_ORDER = ["gnt", "req", *(f"ad[{bit}]" for bit in range(31, 23, -1)), "idsel",
                   "cbe[3]", *(f"ad[{bit}]" for bit in range(23, 15, -1)), "cbe[2]",
                   "frame", "irdy", "trdy", "devsel", "stop", "perr", "serr", "par",
                   "cbe[1]", *(f"ad[{bit}]" for bit in range(15, 7, -1)), "cbe[0]",
                   *(f"ad[{bit}]" for bit in range(7, -1, -1))]


def _tiles(board, tmp_path):
    """``{line label: (x, y)}`` of every PCI pin of ``board`` as nextpnr binds it."""
    platform, _ = board_platform(board)
    plan = platform.build(BoardTop(board={"spy_addr_bits": 6, "exerciser_size": 256}),
                          name="top", do_build=False)
    plan.extract(str(tmp_path))
    device = platform._nextpnr_device_options[platform.device].split()
    package = platform._nextpnr_package_options[platform.package].upper()
    ports = {f"pci_0__{line}__io": width for line, width in
             {**bus_lines(32), RESET_LINE: 1, CLOCK_LINE: 1}.items()}
    tiles = pin_tiles(_tool("nextpnr"), device, package, tmp_path / "top.lpf", ports,
                      tmp_path)
    labels = {}
    for name, tile in tiles.items():
        line, bit = re.fullmatch(r"pci_0__(\w+?)__io(?:\[(\d+)\])?", name).groups()
        labels[line if bit is None or len(pci_card.PCI_PINOUT[line]) == 1
               else f"{line}[{bit}]"] = tile
    return labels


@pytest.fixture(scope="module")
def card_tiles(tmp_path_factory):
    return _tiles("pci-card-85f", tmp_path_factory.mktemp("card"))


def test_every_pci_line_sits_on_one_edge_of_the_die(card_tiles):
    assert len(card_tiles) == sum(len(pins) for pins in pci_card.PCI_PINOUT.values())
    assert {x for x, _ in card_tiles.values()} == {126}


def test_the_timed_lines_keep_the_connectors_order_within_45_rows(card_tiles):
    timed = [label for label in card_tiles if re.sub(r"\[\d+\]", "", label) in TIMED]
    rows = [card_tiles[label][1] for label in timed]
    assert max(rows) - min(rows) <= 45
    order = [card_tiles[label][1] for label in CONNECTOR_ORDER]
    assert order == sorted(order)
    # CLK and the handshake lines in the middle of the AD pins they steer.
    ad = [card_tiles[f"ad[{bit}]"][1] for bit in range(32)]
    for line in ("frame", "irdy", "trdy", "devsel", "stop", CLOCK_LINE):
        assert min(ad) + 15 < card_tiles[line][1] < max(ad) - 10, line


def test_the_same_balls_bind_on_the_45f(tmp_path):
    assert _tiles("pci-card-45f", tmp_path).keys() == {
        label for line, pins in pci_card.PCI_PINOUT.items()
        for label in ([line] if len(pins) == 1 else
                      [f"{line}[{bit}]" for bit in range(len(pins))])}
