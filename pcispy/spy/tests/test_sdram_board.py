# SPDX-License-Identifier: BSD-2-Clause
"""The SDRAM trace memory on the board: PCIBoard's parameters (the ULX3S passive build
putting the spy's trace in the board's SDRAM is elaborated once, in
pcispy/platform/tests/test_pll.py)."""

import gc
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable

from pcispy.board.top import PCIBoard
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
