# SPDX-License-Identifier: BSD-2-Clause
"""cocotb bench: enumeration sets Cache Line Size and Latency Timer as Linux does
(pcispy/sim/bfm/firmware.py) on pcispy's board in slot 0. Run by
pcispy/sim/tests/test_core_firmware.py."""

import cocotb

from pcispy.sim.api import SimSystem
from pcispy.sim.bfm.firmware import CACHE_LINE_SIZE, LATENCY_TIMER
from pcispy.sim.system import BOARD_SLOT

__all__ = ["enumeration_sets_line_registers"]


@cocotb.test()
async def enumeration_sets_line_registers(dut):
    system = await SimSystem(dut).start()
    board = next(f for f in await system.enumerate() if f.slot == BOARD_SLOT)
    assert (board.cache_line_size, board.latency_timer) == (CACHE_LINE_SIZE, LATENCY_TIMER), \
        board
    word = (await system.host.config_read(BOARD_SLOT, 0x0C)).value
    # Header Type and BIST (bytes 2 and 3) untouched; the two bytes as written.
    assert word & 0xFFFF == LATENCY_TIMER << 8 | CACHE_LINE_SIZE, hex(word)
    await system.assert_clean()
