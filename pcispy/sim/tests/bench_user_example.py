# SPDX-License-Identifier: BSD-2-Clause
"""The example of docs/using-the-simulator.md: a cocotb test of a PCI core (here the
pcispy board in slot 0) through the simulated system's host bridge. The page shows this
file; pcispy/app/tests/test_docs.py checks that they agree and runs it."""

import cocotb

from pcispy.sim.api import SimSystem
from pcispy.sim.system import BOARD_SLOT

__all__ = ["core_answers_config_and_memory"]


@cocotb.test()
async def core_answers_config_and_memory(dut):
    # Clock, reset, and the host-bridge profile named by run_bench(profile=...).
    system = await SimSystem(dut).start()
    # Enumerate like firmware: size and assign every BAR, enable decoding.
    core = next(f for f in await system.enumerate() if f.slot == BOARD_SLOT)
    assert (core.vendor, core.device) == (0x5C15, 0x0001), core
    window = next(bar for bar in core.bars if bar.index == 2)
    # A burst of 16 data phases into the core's memory window, then read it back.
    data = bytes(range(64))
    wrote = await system.host.mem_write(window.address, data, burst=16)
    assert wrote.ok and wrote.phases == 16, wrote
    back = await system.host.mem_read(window.address, len(data), burst=16)
    assert back.ok and back.data == data, back
    # What the bus cost: clocks of the read and its first-data latency.
    dut._log.info(f"read: {back.clocks} clocks, first data at clock {back.latency}")
    # No rule of the protocol checker broken, no line driven by two agents.
    await system.assert_clean()
