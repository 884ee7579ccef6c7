# SPDX-License-Identifier: BSD-2-Clause
"""The BAR0 register bank built from the register map: every access kind, byte enables,
refusal and the read/write strobes."""

import pytest
from amaranth.sim import Simulator

from pcispy.csr.bank import CSRBank
from pcispy.board.registers import BAR0_SIZE, IDENTITY_MAGIC, REGISTER_MAP
from pcispy.csr.map import Access, Block, Field, reg32, Register, RegisterMap

from pcispy.core.tests.pci_host import BackendDriver

pytestmark = pytest.mark.target

DEMO = RegisterMap([Block("demo", 0x40, (
    Register("ctrl", 0x00, (
        Field("mode", 0, 4, Access.RW, 5, "a mode"),
        Field("go", 8, 1, Access.WO, 0, "a strobe"),
        Field("errors", 16, 2, Access.W1C, 0, "sticky errors"),
        Field("level", 24, 8, Access.RO, 0x42, "a value the hardware presents"),
    )),
    reg32("limit", 0x04, Access.RW, "a checked value", 7),
    reg32("pop", 0x08, Access.RC, "read to pop"),
))], BAR0_SIZE)


def run(bench, register_map=DEMO, dut=None):
    dut = dut or CSRBank(register_map)
    sim = Simulator(dut)
    sim.add_clock(30e-9, domain="pci")

    async def testbench(ctx):
        await bench(BackendDriver(ctx, dut.access), ctx, dut)
    sim.add_testbench(testbench)
    sim.run()


def test_reset_values_and_access_kinds():
    async def bench(acc, ctx, dut):
        ctrl = dut.demo.ctrl
        assert await acc.read(0x40 // 4) == 0x4200_0005
        assert await acc.read(0x44 // 4) == 7
        assert await acc.read(0x3C // 4) == 0                   # no register there
        # RW with byte enables: only byte 0 written; WO pulses one clock, reads as 0.
        await acc.write(0x40 // 4, 0xFFFF_FF0A, be=0b0011)
        assert ctx.get(ctrl.mode) == 0xA and ctx.get(ctrl.go) == 1
        await ctx.tick("pci")
        assert ctx.get(ctrl.go) == 0
        assert await acc.read(0x40 // 4) == 0x4200_000A
        # RO follows the hardware; W1C: set by hardware, cleared by writing 1.
        ctx.set(ctrl.level, 0x99)
        ctx.set(ctrl.errors_set, 0b11)
        await ctx.tick("pci")
        ctx.set(ctrl.errors_set, 0)
        assert await acc.read(0x40 // 4) == 0x9903_000A
        await acc.write(0x40 // 4, 0x0001_000A)
        assert await acc.read(0x40 // 4) == 0x9902_000A
        # A set in the same clock as the clearing write wins.
        ctx.set(ctrl.errors_set, 0b10)
        await acc.write(0x40 // 4, 0x0002_000A)
        ctx.set(ctrl.errors_set, 0)
        assert (await acc.read(0x40 // 4)) >> 16 & 3 == 0b10
    run(bench)


def test_refusal_keeps_the_old_value_and_strobes():
    async def bench(acc, ctx, dut):
        limit = dut.demo.limit
        ctx.set(limit.refuse, 1)
        ctx.set(dut.access.addr, 0x44 // 4)
        ctx.set(dut.access.w_data, 1234)
        ctx.set(dut.access.w_be, 0xF)
        ctx.set(dut.access.write, 1)
        ctx.set(dut.access.valid, 1)
        assert ctx.get(limit.w_stb) == 1 and ctx.get(limit.w_data) == 1234
        await ctx.tick("pci")
        ctx.set(dut.access.valid, 0)
        ctx.set(limit.refuse, 0)
        assert ctx.get(limit.limit) == 7
        await acc.write(0x44 // 4, 1234)
        assert ctx.get(limit.limit) == 1234
        # w_data merges disabled bytes with the current contents.
        ctx.set(dut.access.addr, 0x44 // 4)
        ctx.set(dut.access.w_data, 0xAB00_0000)
        ctx.set(dut.access.w_be, 0b1000)
        ctx.set(dut.access.valid, 1)
        assert ctx.get(limit.w_data) == 0xAB00_04D2
        await ctx.tick("pci")
        ctx.set(dut.access.valid, 0)
    run(bench)


def test_read_strobe_for_read_side_effects():
    async def bench(acc, ctx, dut):
        pop = dut.demo.pop
        ctx.set(pop.pop, 77)
        ctx.set(dut.access.addr, 0x48 // 4)
        ctx.set(dut.access.write, 0)
        ctx.set(dut.access.valid, 1)
        assert ctx.get(pop.r_stb) == 1
        await ctx.tick("pci")
        ctx.set(dut.access.valid, 0)
        assert ctx.get(pop.r_stb) == 0 and ctx.get(dut.access.r_data) == 77
    run(bench)


def test_project_register_map_builds_with_named_ports():
    async def bench(acc, ctx, dut):
        address, _ = REGISTER_MAP["id.magic"]
        assert await acc.read(address // 4) == IDENTITY_MAGIC
        address, reg = REGISTER_MAP["target.disconnect"]
        assert await acc.read(address // 4) == reg.reset
        assert dut.register("target.response") is dut.target.response
    bank = CSRBank(REGISTER_MAP)
    with pytest.raises(KeyError, match="nope"):
        bank.register("target.nope")
    run(bench, dut=bank)
