# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the cycle counter and its atomic 64-bit read (pcispy/irq/timer.py)."""

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from pcispy.irq.timer import CycleCounter, AtomicRead64

__all__ = []

pytestmark = pytest.mark.irq


def simulate(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_counter_counts_every_clock_from_init():
    counter = CycleCounter(init=1000)
    seen = []

    async def bench(ctx):
        for _ in range(5):
            seen.append(ctx.get(counter.now))
            await ctx.tick()

    simulate(counter, bench)
    assert seen == [1000, 1001, 1002, 1003, 1004]


def test_counter_wraps_at_its_width():
    counter = CycleCounter(width=8, init=254)
    seen = []

    async def bench(ctx):
        for _ in range(4):
            seen.append(ctx.get(counter.now))
            await ctx.tick()

    simulate(counter, bench)
    assert seen == [254, 255, 0, 1]


@pytest.mark.parametrize("high", [0, 5, 0xFFFF_FFFE])
@pytest.mark.parametrize("hi_delay", [1, 3])
def test_lo_hi_read_is_atomic_across_carries(high, hi_delay):
    """Read lo in each clock around a carry out of the low word (lo = 0xFFFFFFFF included),
    then hi ``hi_delay`` clocks later: the pair is the counter value of the clock lo was
    read, never torn."""
    start = (high << 32) | 0xFFFF_FFFA

    for offset in range(12):
        m = Module()
        m.submodules.counter = counter = CycleCounter(init=start)
        m.submodules.reader = reader = AtomicRead64()
        m.d.comb += reader.value.eq(counter.now)
        reading = {}

        async def bench(ctx):
            if offset:
                await ctx.tick().repeat(offset)
            # The bank samples lo in the clock it pulses read_lo ...
            ctx.set(reader.read_lo, 1)
            reading["lo"] = ctx.get(reader.lo)
            reading["now"] = ctx.get(counter.now)
            await ctx.tick()
            ctx.set(reader.read_lo, 0)
            # ... and reads hi at any later clock.
            if hi_delay > 1:
                await ctx.tick().repeat(hi_delay - 1)
            reading["hi"] = ctx.get(reader.hi)

        simulate(m, bench)
        assert reading["now"] == start + offset
        read = (reading["hi"] << 32) | reading["lo"]
        assert read == start + offset, f"read {read:#x} at counter {start + offset:#x}"


def test_hi_holds_until_the_next_lo_read():
    m = Module()
    m.submodules.reader = reader = AtomicRead64()
    hi_seen = []

    async def bench(ctx):
        ctx.set(reader.value, 0x0000_0007_FFFF_FFFF)
        ctx.set(reader.read_lo, 1)
        await ctx.tick()
        ctx.set(reader.read_lo, 0)
        ctx.set(reader.value, 0x0000_0008_0000_0000)
        await ctx.tick()
        hi_seen.append(ctx.get(reader.hi))
        assert ctx.get(reader.lo) == 0
        ctx.set(reader.read_lo, 1)
        await ctx.tick()
        hi_seen.append(ctx.get(reader.hi))

    simulate(m, bench)
    assert hi_seen == [7, 8]
