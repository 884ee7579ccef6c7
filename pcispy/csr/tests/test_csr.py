# SPDX-License-Identifier: BSD-2-Clause
"""The BAR0 register bank built from the register map: every access kind, byte enables,
refusal, the read/write strobes and their clocks (a register sees a request one clock after
the bank takes it; the read data follows READ_LATENCY clocks after the request)."""

import pytest
from amaranth.sim import Simulator

from pcispy.csr.bank import READ_LATENCY, CSRBank
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


def offer(ctx, port, addr, *, data=0, be=0xF, write=0):
    """Present one request on the bank's access port for one clock."""
    ctx.set(port.addr, addr)
    ctx.set(port.w_data, data)
    ctx.set(port.w_be, be)
    ctx.set(port.write, write)
    ctx.set(port.valid, 1)


def run(bench, register_map=DEMO, dut=None):
    dut = dut or CSRBank(register_map)
    sim = Simulator(dut)
    sim.add_clock(30e-9, domain="pci")

    async def testbench(ctx):
        await bench(BackendDriver(ctx, dut.access, read_latency=READ_LATENCY,
                                  write_latency=1), ctx, dut)
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
        offer(ctx, dut.access, 0x40 // 4, data=0x0002_000A, write=1)
        await ctx.tick("pci")
        ctx.set(dut.access.valid, 0)
        ctx.set(ctrl.errors_set, 0b10)
        await ctx.tick("pci")
        ctx.set(ctrl.errors_set, 0)
        assert (await acc.read(0x40 // 4)) >> 16 & 3 == 0b10
    run(bench)


def test_refusal_keeps_the_old_value_and_strobes():
    async def bench(acc, ctx, dut):
        limit = dut.demo.limit
        ctx.set(limit.refuse, 1)
        offer(ctx, dut.access, 0x44 // 4, data=1234, write=1)
        assert ctx.get(limit.w_stb) == 0            # the block takes the request first
        await ctx.tick("pci")
        ctx.set(dut.access.valid, 0)
        assert ctx.get(limit.w_stb) == 1 and ctx.get(limit.w_data) == 1234
        await ctx.tick("pci")
        ctx.set(limit.refuse, 0)
        assert ctx.get(limit.w_stb) == 0 and ctx.get(limit.limit) == 7
        await acc.write(0x44 // 4, 1234)
        assert ctx.get(limit.limit) == 1234
        # w_data merges disabled bytes with the current contents.
        offer(ctx, dut.access, 0x44 // 4, data=0xAB00_0000, be=0b1000, write=1)
        await ctx.tick("pci")
        ctx.set(dut.access.valid, 0)
        assert ctx.get(limit.w_data) == 0xAB00_04D2
    run(bench)


def test_read_strobe_for_read_side_effects():
    async def bench(acc, ctx, dut):
        pop = dut.demo.pop
        ctx.set(pop.pop, 77)
        offer(ctx, dut.access, 0x48 // 4)
        assert ctx.get(pop.r_stb) == 0
        await ctx.tick("pci")
        ctx.set(dut.access.valid, 0)
        # The value is sampled at the edge that ends the strobe's clock.
        assert ctx.get(pop.r_stb) == 1 and ctx.get(dut.access.r_valid) == 0
        await ctx.tick("pci")
        ctx.set(pop.pop, 78)
        assert ctx.get(pop.r_stb) == 0 and ctx.get(dut.access.r_valid) == 1
        assert ctx.get(dut.access.r_data) == 77
        await ctx.tick("pci")
        assert ctx.get(dut.access.r_valid) == 0 and ctx.get(dut.access.r_data) == 0
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


def test_back_to_back_requests_to_two_blocks_answer_in_order():
    two = RegisterMap([
        Block("low", 0x00, (reg32("a", 0x00, Access.RO, "a", 0x1111),
                            reg32("b", 0x3C, Access.RW, "b", 0x2222))),
        Block("high", 0x40, (reg32("c", 0x00, Access.RO, "c", 0x3333),)),
    ], BAR0_SIZE)

    async def bench(acc, ctx, dut):
        # A read every clock, alternating blocks, with a write to low.b between: each
        # answer comes READ_LATENCY clocks after its request, the write seen by the read
        # that follows it.
        requests = [(0x00, 0, 0), (0x40, 0, 0), (0x3C, 1, 0xBEEF), (0x3C, 0, 0), (0x44, 0, 0),
                    (0xFFC, 0, 0)]
        answers = []
        for clock in range(len(requests) + READ_LATENCY):
            if clock < len(requests):
                address, write, data = requests[clock]
                offer(ctx, dut.access, address // 4, data=data, write=write)
            else:
                ctx.set(dut.access.valid, 0)
            await ctx.tick("pci")
            if ctx.get(dut.access.r_valid):
                answers.append((clock, ctx.get(dut.access.r_data)))
        reads = [n for n, (_, write, _) in enumerate(requests) if not write]
        assert answers == list(zip([n + READ_LATENCY - 1 for n in reads],
                                   [0x1111, 0x3333, 0xBEEF, 0, 0]))
    run(bench, register_map=two)
