# SPDX-License-Identifier: BSD-2-Clause
"""Unit tests of the bus resolver and the arbiter (Amaranth Python simulator)."""

import pytest
from amaranth.sim import Simulator

from pcispy.sim.bfm.arbiter import Arbiter, ArbiterDriver
from pcispy.sim.bfm.resolver import BusResolver, shared_lines
from pcispy.sim.control import PysimControl

pytestmark = pytest.mark.bfm


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(30e-9)
    sim.add_testbench(bench)
    sim.run()


def test_resolver_pull_ups_single_driver_and_wired_and():
    dut = BusResolver(agents=3, width=32)
    line_index = list(shared_lines(32))

    async def bench(ctx):
        # Nobody drives: active-low lines deasserted, AD pulled up to all ones.
        assert ctx.get(dut.frame) == 0 and ctx.get(dut.devsel) == 0
        assert ctx.get(dut.ad) == 0xFFFF_FFFF and ctx.get(dut.cbe) == 0xF
        # Agent 1 drives AD and FRAME#.
        ctx.set(dut.ad_o, 0x1234_5678 << 32)
        ctx.set(dut.ad_oe, 0b010)
        ctx.set(dut.frame_o, 0b010)
        ctx.set(dut.frame_oe, 0b010)
        assert ctx.get(dut.ad) == 0x1234_5678 and ctx.get(dut.frame) == 1
        # Open drain: INTA# asserted by agent 2 while agent 0 drives it deasserted.
        ctx.set(dut.inta_o, 0b100)
        ctx.set(dut.inta_oe, 0b101)
        assert ctx.get(dut.inta) == 1
        await ctx.tick().repeat(3)
        assert ctx.get(dut.contention) == 0          # open drain never contends
        # Agents 0 and 2 both drive TRDY#: contention on that line, first cycle latched.
        ctx.set(dut.trdy_oe, 0b101)
        await ctx.tick()
        ctx.set(dut.trdy_oe, 0b001)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.contention) == 1 << line_index.index("trdy")
        assert ctx.get(dut.first_line) == line_index.index("trdy")
        assert ctx.get(dut.first_cycle) == 3
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        assert ctx.get(dut.contention) == 0

    _run(dut, bench)


def test_arbiter_parks_rotates_and_removes_gnt():
    dut = Arbiter(masters=3)

    async def bench(ctx):
        ctl = PysimControl(ctx, dut.ctl)
        arbiter = ArbiterDriver(ctl)
        await arbiter.park_on(1)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.gnt) == 0b010              # parked on master 1
        # Master 0 and 2 request; grant goes round-robin from the owner (1): 2 first,
        # after one clock with no GNT# at all (the bus is idle).
        ctx.set(dut.req, 0b101)
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b100
        # Master 2 starts a transaction: the grant moves on to master 0 (hidden arbitration).
        ctx.set(dut.frame, 1)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.gnt) == 0b001
        # Master 0 alone requests; with forced removal 4 clocks into its FRAME#.
        ctx.set(dut.req, 0b001)
        ctx.set(dut.frame, 0)
        await arbiter.remove_gnt_after(4)
        ctx.set(dut.frame, 1)
        for clock in range(1, 6):
            await ctx.tick()
            assert ctx.get(dut.gnt) == (0b001 if clock < 4 else 0), clock
        # Its transaction over, master 0 (still requesting, alone) gets GNT# back.
        ctx.set(dut.frame, 0)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.gnt) == 0b001
        ctx.set(dut.req, 0)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.gnt) == 0b010              # back to the park master
        assert (await arbiter.counters())["removals"] == 1
        await arbiter.double_grant(True)
        await ctx.tick()
        assert bin(ctx.get(dut.gnt)).count("1") == 2

    _run(dut, bench)


def test_arbiter_skip_idle_gap_moves_gnt_without_a_free_clock():
    dut = Arbiter(masters=3)

    async def bench(ctx):
        arbiter = ArbiterDriver(PysimControl(ctx, dut.ctl))
        await ctx.tick().repeat(2)
        assert ctx.get(dut.gnt) == 0b001              # parked on master 0
        await arbiter.skip_idle_gap(True)
        ctx.set(dut.req, 0b100)
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b100              # no clock without GNT# in between
        await arbiter.skip_idle_gap(False)
        ctx.set(dut.req, 0)
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0                  # back to the park master, with a gap
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b001

    _run(dut, bench)
