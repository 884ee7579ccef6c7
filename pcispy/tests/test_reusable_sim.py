# SPDX-License-Identifier: BSD-2-Clause
"""A shared simulator gives each bench what a fresh simulator of the design would: every
register, memory word and input from its initial value, clocks from time zero; and a
bench that raised never hands its simulator to the next one."""

import pytest
from amaranth import Module, Signal
from amaranth.lib import memory
from amaranth.sim import Simulator

from pcispy.tests import reusable_sim


class _Design:
    """A counter, a register loaded from an input, and a memory with initial contents
    written through a port: state of every kind a bench can leave behind."""

    def __init__(self):
        self.m = m = Module()
        self.count = Signal(8)
        self.load = Signal(8)
        self.held = Signal(8, init=5)
        self.addr = Signal(2)
        self.w_data = Signal(8)
        self.w_en = Signal()
        m.submodules.mem = mem = memory.Memory(shape=8, depth=4, init=[1, 2, 3, 4])
        write = mem.write_port()
        read = mem.read_port(domain="comb")
        self.r_data = read.data
        m.d.comb += [write.addr.eq(self.addr), write.data.eq(self.w_data),
                     write.en.eq(self.w_en), read.addr.eq(self.addr)]
        m.d.sync += self.count.eq(self.count + 1)
        with m.If(self.load != 0):
            m.d.sync += self.held.eq(self.load)


def _build():
    design = _Design()
    return design.m, design


def _scribble(d):
    """A bench that changes every kind of state and leaves its inputs set."""
    async def bench(ctx):
        ctx.set(d.load, 0x77)
        for addr in range(4):
            ctx.set(d.addr, addr)
            ctx.set(d.w_data, 0xA0 + addr)
            ctx.set(d.w_en, 1)
            await ctx.tick()
        await ctx.tick().repeat(7)
    return bench


def _observe(d, seen):
    """A bench that records, clock by clock, what the design shows from reset."""
    async def bench(ctx):
        seen.append(("inputs", ctx.get(d.load), ctx.get(d.w_en), ctx.get(d.addr)))
        for clock in range(6):
            ctx.set(d.addr, clock % 4)
            seen.append((clock, ctx.get(d.count), ctx.get(d.held), ctx.get(d.r_data)))
            await ctx.tick()
    return bench


def _fresh_observation():
    design = _Design()
    sim = Simulator(design.m)
    sim.add_clock(1e-6)
    seen = []
    sim.add_testbench(_observe(design, seen))
    sim.run()
    return seen


def test_a_reused_simulator_starts_each_bench_as_a_fresh_one():
    expected = _fresh_observation()
    assert expected[:3] == [("inputs", 0, 0, 0), (0, 0, 5, 1), (1, 1, 5, 2)]
    design = _Design()
    simulation = reusable_sim.ReusableSimulation(design.m, {"sync": 1e-6}, design)
    simulation.run(_scribble(design))
    for _ in range(2):
        seen = []
        simulation.run(_observe(design, seen))
        assert seen == expected


def test_background_benches_run_beside_the_bench_and_stop_with_it():
    design = _Design()
    simulation = reusable_sim.ReusableSimulation(design.m, {"sync": 1e-6}, design,
                                                 background_slots=2)
    loads = []

    async def loader(ctx):
        while True:
            await ctx.tick()
            ctx.set(design.load, 9)

    async def bench(ctx):
        for _ in range(3):
            loads.append(ctx.get(design.held))
            await ctx.tick()
    simulation.run(bench, [loader])
    assert loads == [5, 5, 9]
    seen = []
    simulation.run(_observe(design, seen))          # the loader is gone after its run
    assert seen == _fresh_observation()
    with pytest.raises(ValueError, match="3 background testbenches, 2 slots"):
        simulation.run(bench, [loader] * 3)


def test_a_bench_that_raised_hands_the_next_test_a_fresh_simulator():
    key = ("test_reusable_sim", "raise")
    first = reusable_sim.shared(key, _build, {"sync": 1e-6})

    async def failing(ctx):
        await ctx.tick()
        raise AssertionError("the bench failed")
    with pytest.raises(AssertionError, match="the bench failed"):
        first.run(failing)
    assert first.broken
    second = reusable_sim.shared(key, _build, {"sync": 1e-6})
    assert second is not first and not second.broken
    seen = []
    second.run(_observe(second.handles, seen))
    assert seen == _fresh_observation()
    assert reusable_sim.shared(key, _build, {"sync": 1e-6}) is second
