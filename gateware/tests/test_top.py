# SPDX-License-Identifier: BSD-2-Clause
"""The board core: it converts to Verilog with pin-level ports for 32- and 64-bit buses."""

import re

import pytest
from amaranth.back import verilog

from pcispy.gateware.pci.bus import bus_lines
from pcispy.gateware.pci.pads import INPUT_ONLY_LINES
from pcispy.gateware.top import PCIBoard

pytestmark = pytest.mark.target


def board_ports(board):
    ports = []
    for name, port in board.ports.items():
        ports.append(port.i)
        if name not in INPUT_ONLY_LINES:
            ports += [port.o, port.oe]
    if "trace" in board.signature.members:
        ports += [getattr(board.trace, n) for n in board.trace.signature.members]
    return ports


@pytest.mark.parametrize("width", [32, 64])
def test_board_converts_with_pin_ports(width):
    board = PCIBoard(width, trace_size=64 * 1024, scratch_verilog=True)
    text = verilog.convert(board, ports=board_ports(board), name="pcispy_board")
    header = text[text.index("module pcispy_board("):]
    header = header[:header.index(");")]
    declared = set(re.findall(r"\b(\w+__(?:o|oe|i))\b", header))
    expected = set()
    for name in bus_lines(width):
        expected.add(f"{name}__i")
        if name not in INPUT_ONLY_LINES:
            expected |= {f"{name}__o", f"{name}__oe"}
    assert declared == expected
    assert "pcispy_scratch_ram" in text                 # the scratch RAM is the Verilog one
    assert ("ad_hi__o" in declared) == (width == 64)


@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_board_without_trace_window_has_no_bar1_port():
    board = PCIBoard(32)
    assert "trace" not in board.signature.members
    assert board.bars[1] is None


@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_bad_width_is_refused():
    with pytest.raises(ValueError, match="32 or 64"):
        PCIBoard(48)
