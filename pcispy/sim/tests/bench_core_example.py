# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benches of the example Verilog target (examples/verilog_target/) in slot 0,
built from its core description as a user's core is: enumeration and BAR sizing, and
single, burst and partial reads and writes through the host bridge, with both monitors
clean. Run by pcispy/sim/tests/test_core_example.py."""

import cocotb

from pcispy.sim.api import SimSystem
from pcispy.sim.bfm.initiator_control import Outcome
from pcispy.sim.system import BOARD_SLOT

__all__ = ["example_enumerates", "example_reads_and_writes", "example_window_end"]

#: What examples/verilog_target/core.json and pci_target.v say.
VENDOR, DEVICE, WINDOW = 0x1209, 0x0001, 1024


async def _started(dut):
    """The system started and enumerated: ``(system, the core's Function, its BAR)``."""
    system = await SimSystem(dut).start()
    core = next(f for f in await system.enumerate() if f.slot == BOARD_SLOT)
    assert (core.vendor, core.device) == (VENDOR, DEVICE), core
    (bar,) = core.bars
    return system, core, bar


@cocotb.test()
async def example_enumerates(dut):
    system, core, bar = await _started(dut)
    assert (bar.index, bar.kind, bar.size, bar.prefetchable) == (0, "memory", WINDOW, True), bar
    assert core.class_code == 0x058000 and core.revision == 1, core
    # Memory space on; the target keeps no I/O, bus-master, parity or SERR# bit.
    assert core.command == 0x0002, hex(core.command)
    # Enumeration set Cache Line Size; a target-only device hard-wires Latency Timer to 0.
    assert (core.cache_line_size, core.latency_timer) == (8, 0), core
    status = (await system.host.config_read(BOARD_SLOT, 0x04)).value >> 16
    assert status >> 9 & 3 == 1, f"DEVSEL timing {status:#06x}: medium expected"
    # Functions 1..7 are not there: a master abort.
    absent = await system.host.config_read(BOARD_SLOT, 0x00, function=1)
    assert absent.status == Outcome.MASTER_ABORT, absent
    await system.assert_clean()


@cocotb.test()
async def example_reads_and_writes(dut):
    system, _, bar = await _started(dut)
    host = system.host
    single = await host.mem_write(bar.address + 8, (0x1234_5678).to_bytes(4, "little"))
    assert single.ok and single.phases == 1, single
    back = await host.mem_read(bar.address + 8, 4)
    assert back.ok and back.data == (0x1234_5678).to_bytes(4, "little"), back
    # Byte enables: two bytes in the middle of the word.
    assert (await host.mem_write(bar.address + 9, b"\xaa\xbb")).ok
    back = await host.mem_read(bar.address + 8, 4)
    assert back.data == bytes([0x78, 0xAA, 0xBB, 0x12]), back
    # The window's RAM is named bd_mem: public in the model, a backdoor for Python (the
    # core's instance is "core" inside the slot-0 wrapper "board").
    ram = dut.board.core.bd_mem
    assert int(ram[2].value) == 0x12BB_AA78, hex(int(ram[2].value))
    ram[3].value = 0xCAFE_F00D
    back = await host.mem_read(bar.address + 12, 4)
    assert back.data == (0xCAFE_F00D).to_bytes(4, "little"), back
    # Bursts of 16 data phases, no wait states on the target's side.
    data = bytes((7 * i) & 0xFF for i in range(256))
    wrote = await host.mem_write(bar.address + 256, data, burst=16)
    assert wrote.ok and wrote.phases == 64 and wrote.disconnects == 0, wrote
    back = await host.mem_read(bar.address + 256, len(data), burst=16)
    assert back.ok and back.data == data and back.disconnects == 0, back
    dut._log.info(f"burst read: {back.clocks} clocks, first data at clock {back.latency}")
    await system.assert_clean()


@cocotb.test()
async def example_window_end(dut):
    system, _, bar = await _started(dut)
    host = system.host
    # A burst up to the window's last word: the target asserts STOP# with its last
    # TRDY# (it cannot know the master ends there too), which counts as a disconnect.
    data = bytes(range(64))
    end = bar.address + WINDOW
    wrote = await host.mem_write(end - 64, data, burst=16)
    assert wrote.ok and wrote.phases == 16 and wrote.transactions == 1, wrote
    back = await host.mem_read(end - 64, 64, burst=16)
    assert back.ok and back.data == data, back
    # One past it: the target disconnects with its last word, the host goes on at the
    # next address, where nobody answers.
    over = await host.mem_read(end - 16, 32, burst=16)
    assert over.disconnects == 1 and over.status == Outcome.MASTER_ABORT, over
    assert over.data[:16] == data[-16:], over
    await system.assert_clean()
