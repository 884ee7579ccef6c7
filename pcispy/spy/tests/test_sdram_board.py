# SPDX-License-Identifier: BSD-2-Clause
"""The SDRAM trace memory on the board: PCIBoard's parameters, and the ULX3S passive build
putting the spy's trace in the board's SDRAM (amaranth-boards' ``sdram`` resource)."""

import gc
import re
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable

from pcispy.board.board_top import BoardTop
from pcispy.board.top import PCIBoard
from pcispy.platform.boards.ulx3s import BOARDS, add_pci
from pcispy.spy.sdram import SDRAMTiming


def test_board_parameters():
    small = PCIBoard(trace_memory="sdram", sdram_timing=SDRAMTiming(row_bits=4))
    ulx3s = PCIBoard(trace_memory="sdram")
    for board in (small, ulx3s):
        board._MustUse__silence = True      # built for its parameters only
    assert small.spy_addr_bits == 12 and small.bars[1].size == 16 << 12
    assert ulx3s.spy_addr_bits == 21        # 32 MiB
    with warnings.catch_warnings():
        # The refused objects are never elaborated; collect them inside this block.
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="sdram_timing"):
            PCIBoard(sdram_timing=SDRAMTiming())
        with pytest.raises(ValueError, match="sets the trace depth"):
            PCIBoard(trace_memory="sdram", spy_addr_bits=10)
        with pytest.raises(ValueError, match="'sdram', 'bram' or 'sram', not 'dram'"):
            PCIBoard(trace_memory="dram")
        gc.collect()

def test_ulx3s_passive_build_keeps_its_trace_in_the_sdram():
    platform = add_pci(BOARDS["ulx3s-85f"](), passive=True)
    assert platform.pci_trace_memory == "sdram"
    assert add_pci(BOARDS["ulx3s-85f"](), passive=False).pci_trace_memory == "bram"
    plan = platform.build(BoardTop(passive=True), name="top", do_build=False)
    located = dict(re.findall(r'LOCATE COMP "(\S+)" SITE "(\w+)";', plan.files["top.lpf"]))
    # The ULX3S's SDRAM pins (amaranth-boards): the clock, CS#, and the data bits.
    assert located["sdram_0__clk__io"] == "F19"
    assert located["sdram_0__cs__io"] == "P20"
    assert sum(name.startswith("sdram_0__dq__io") for name in located) == 16
