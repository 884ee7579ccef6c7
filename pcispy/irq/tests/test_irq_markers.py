# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the checkpoint FIFO (pcispy/irq/markers.py): exact timestamps and ids,
pop protocol, empty pops, overrun counting, clear."""

import gc
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from pcispy.irq.markers import MarkerFIFO

__all__ = []

pytestmark = pytest.mark.irq

BASE = 0x0000_0003_FFFF_FFF0      # timestamps cross a carry of the low word


def run_fifo(dut, bench):
    """Run ``bench(ctx, clock)``; the FIFO's timestamp input is BASE + the clock number."""
    async def clock_driver(ctx):
        clock = 0
        while True:
            ctx.set(dut.timestamp, BASE + clock)
            await ctx.tick()
            clock += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_process(clock_driver)
    sim.add_testbench(bench)
    sim.run()


async def pop(ctx, dut):
    """One host pop: lo sampled in the pop clock, hi/id/valid read afterwards."""
    ctx.set(dut.pop, 1)
    lo = ctx.get(dut.head_ts_lo)
    await ctx.tick()
    ctx.set(dut.pop, 0)
    await ctx.tick()
    return ((ctx.get(dut.ts_hi) << 32) | lo, ctx.get(dut.id), ctx.get(dut.valid))


async def write_markers(ctx, dut, ids_at):
    """Pulse ``write`` at clock offsets from now; returns the timestamps expected."""
    stamps = []
    for clock in range(max(ids_at) + 1):
        if clock in ids_at:
            ctx.set(dut.write, 1)
            ctx.set(dut.write_id, ids_at[clock])
            stamps.append((ctx.get(dut.timestamp), ids_at[clock]))
        await ctx.tick()
        ctx.set(dut.write, 0)
    return stamps


def test_checkpoints_pop_in_order_with_exact_timestamps():
    dut = MarkerFIFO(depth=8)
    got = []

    async def bench(ctx):
        await ctx.tick().repeat(3)
        ids_at = {0: 1, 1: 2, 2: 7, 9: 0, 15: 4}     # back-to-back writes included
        stamps = await write_markers(ctx, dut, ids_at)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.level) == 5
        for _ in range(6):
            got.append(await pop(ctx, dut))
        assert ctx.get(dut.level) == 0
        got.append(stamps)

    run_fifo(dut, bench)
    stamps = got.pop()
    assert [s for s, _ in stamps] == [BASE + 3, BASE + 4, BASE + 5, BASE + 12, BASE + 18]
    assert got[:5] == [(ts, marker, 1) for ts, marker in stamps]
    assert got[5] == (0, 0, 0)                       # popping an empty FIFO: valid = 0


def test_overruns_are_counted_exactly_and_the_first_entries_kept():
    dut = MarkerFIFO(depth=4)
    result = {}

    async def bench(ctx):
        stamps = await write_markers(ctx, dut, {n: n % 8 for n in range(10)})
        await ctx.tick()
        result["overruns"] = ctx.get(dut.overruns)
        result["level"] = ctx.get(dut.level)
        result["popped"] = [await pop(ctx, dut) for _ in range(4)]
        result["stamps"] = stamps
        # One more write lands now that there is room.
        await write_markers(ctx, dut, {0: 5})
        await ctx.tick()
        result["level_after"] = ctx.get(dut.level)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        await ctx.tick()
        result["after_clear"] = (ctx.get(dut.overruns), ctx.get(dut.level))
        result["empty_pop"] = await pop(ctx, dut)

    run_fifo(dut, bench)
    assert result["overruns"] == 6 and result["level"] == 4
    assert result["popped"] == [(ts, marker, 1) for ts, marker in result["stamps"][:4]]
    assert result["level_after"] == 1
    assert result["after_clear"] == (0, 0)
    assert result["empty_pop"][2] == 0


def test_depth_is_checked():
    with warnings.catch_warnings():
        # The refused object is never elaborated; Amaranth would warn when it is freed.
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError):
            MarkerFIFO(depth=256)
        gc.collect()
