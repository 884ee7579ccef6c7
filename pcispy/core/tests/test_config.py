# SPDX-License-Identifier: BSD-2-Clause
"""Configuration space: identity, BAR sizing, Command/Status, partial writes, zeros."""

import gc

import pytest
from amaranth.sim import Simulator

from pcispy.core.config import BarSpec, ConfigSpace
from pcispy.core.tests.pci_host import BackendDriver

pytestmark = pytest.mark.target

BARS = [BarSpec("regs", "mem", 4096), None, BarSpec("win", "mem", 64 * 1024, prefetchable=True),
        BarSpec("io", "io", 256)]


def run(bench, **kwargs):
    dut = ConfigSpace(BARS, **{"vendor_id": 0x5C15, "device_id": 0x0001, **kwargs})
    sim = Simulator(dut)
    sim.add_clock(30e-9, domain="pci")

    async def testbench(ctx):
        await bench(BackendDriver(ctx, dut.access), ctx, dut)
    sim.add_testbench(testbench)
    sim.run()


def test_identity_and_header():
    async def bench(acc, ctx, dut):
        assert await acc.read(0x00) == 0x0001_5C15
        assert await acc.read(0x02) == 0x1180_0001          # class 11/80/00, revision 1
        assert await acc.read(0x03) == 0x0000_0000          # header type 0, no BIST
        assert await acc.read(0x0B) == 0x0001_5C15          # subsystem
        assert await acc.read(0x0F) == 0x0000_0100          # INTA#, line 0
        for unimplemented in (0x09, 0x0A, 0x0C, 0x0D, 0x0E, 0x10, 0x3F):
            await acc.write(unimplemented, 0xFFFF_FFFF)
            assert await acc.read(unimplemented) == 0
    run(bench)


def test_identity_parameters():
    async def bench(acc, ctx, dut):
        assert await acc.read(0x00) == 0xBEEF_1234
        assert await acc.read(0x0B) == 0x0001_0002
        assert (await acc.read(0x01)) >> 16 == 0x0220       # medium DEVSEL, 66 MHz
    run(bench, vendor_id=0x1234, device_id=0xBEEF, subsystem_vendor_id=2, subsystem_id=1,
        mhz66=True)


def test_bar_sizing():
    async def bench(acc, ctx, dut):
        for reg in range(0x04, 0x0A):
            await acc.write(reg, 0xFFFF_FFFF)
        assert await acc.read(0x04) == 0xFFFF_F000                 # 4 KiB memory
        assert await acc.read(0x05) == 0                           # no BAR1
        assert await acc.read(0x06) == 0xFFFF_0008                 # 64 KiB prefetchable
        assert await acc.read(0x07) == 0xFFFF_FF01                 # 256 bytes I/O
        assert await acc.read(0x08) == 0
        await acc.write(0x06, 0x1234_5678)
        assert await acc.read(0x06) == 0x1234_0008
        assert ctx.get(dut.bar_base[2]) == 0x1234_0000
    run(bench)


def test_command_implemented_bits_and_status_w1c():
    async def bench(acc, ctx, dut):
        await acc.write(0x01, 0x0000_FFFF)
        assert await acc.read(0x01) & 0xFFFF == 0x0557
        assert ctx.get(dut.memory_enable) and ctx.get(dut.io_enable)
        assert ctx.get(dut.parity_response) and ctx.get(dut.serr_enable)
        for name, bit in (("detected_parity", 15), ("signaled_target_abort", 11),
                          ("received_master_abort", 13)):
            ctx.set(getattr(dut, f"set_{name}"), 1)
            await ctx.tick("pci")
            ctx.set(getattr(dut, f"set_{name}"), 0)
        assert (await acc.read(0x01)) >> 16 == 0xA800 | 0x0200
        await acc.write(0x01, 0x0000_0557)                          # 0s leave them
        assert (await acc.read(0x01)) >> 16 == 0xAA00
        await acc.write(0x01, 0x2000_0000 | 0x0557)                 # clear one
        assert (await acc.read(0x01)) >> 16 == 0x8A00
        ctx.set(dut.interrupt_status, 1)
        assert (await acc.read(0x01)) >> 16 == 0x8A08
    run(bench)


def test_partial_writes_honour_byte_enables():
    async def bench(acc, ctx, dut):
        await acc.write(0x03, 0x0000_4010, be=0b0001)               # cache line size only
        assert await acc.read(0x03) == 0x0000_0010
        await acc.write(0x03, 0x0000_4020, be=0b0010)               # latency timer only
        assert await acc.read(0x03) == 0x0000_4010
        await acc.write(0x0F, 0xFFFF_FF0B, be=0b1110)               # line not enabled
        assert await acc.read(0x0F) == 0x0000_0100
        await acc.write(0x0F, 0x0000_000B, be=0b0001)
        assert await acc.read(0x0F) == 0x0000_010B
        await acc.write(0x04, 0xABCD_EF00, be=0b1000)
        assert await acc.read(0x04) == 0xAB00_0000
        # Writing only the Status bytes does not touch Command.
        await acc.write(0x01, 0x0000_0002, be=0b0011)
        await acc.write(0x01, 0xFFFF_0000, be=0b1100)
        assert await acc.read(0x01) & 0xFFFF == 0x0002
    run(bench)


def test_target_only_device_hardwires_master_bits():
    async def bench(acc, ctx, dut):
        await acc.write(0x01, 0x0000_FFFF)
        assert await acc.read(0x01) & 0xFFFF == 0x0543
        await acc.write(0x03, 0xFFFF_FFFF)
        assert await acc.read(0x03) == 0x0000_00FF
    run(bench, master=False)


@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_bad_bar_specs_are_refused():
    with pytest.raises(ValueError, match="power of two"):
        BarSpec("x", "mem", 3000)
    with pytest.raises(ValueError, match="256"):
        BarSpec("x", "io", 512)
    with pytest.raises(ValueError, match="six"):
        ConfigSpace([BarSpec("x", "mem", 4096)] * 7, vendor_id=0x5C15, device_id=1)
    gc.collect()                # report the unelaborated object within this test
