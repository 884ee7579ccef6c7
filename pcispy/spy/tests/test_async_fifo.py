# SPDX-License-Identifier: BSD-2-Clause
"""The registered asynchronous FIFO (pcispy/spy/async_fifo.py) in Amaranth's simulator:
every word comes out once and in order under random writes and reads at the SDRAM trace
memory's clock ratios, the exact latency from a write to ``r_rdy``, the capacity, the
level, and the write domain's reset emptying it."""

import gc
import random
import warnings

import pytest
from amaranth.hdl import ClockDomain, Module, Signal, UnusedElaboratable
from amaranth.sim import Simulator

from pcispy.spy.async_fifo import (WRITE_TO_READ_CLOCKS, RegisteredAsyncFIFO, gray_decode,
                                   gray_encode)

#: (write period, read period) in ns: the PCI clock against the SDRAM's 110 and 125 MHz
#: and a slower 20 MHz one.
RATIOS = {"33_110": (30.0, 1000 / 110), "33_125": (30.0, 8.0), "33_20": (30.0, 50.0)}
SEEDS = [1, 2, 3, 17, 2026]


def _fifo(width=16, depth=8):
    m = Module()
    m.domains.sync = sync = ClockDomain("sync")
    m.domains.read = ClockDomain("read")
    m.submodules.fifo = fifo = RegisteredAsyncFIFO(width, depth, w_domain="sync",
                                                   r_domain="read")
    return m, fifo, sync


def _simulate(m, periods, *testbenches):
    sim = Simulator(m)
    # The read clock starts a third of its period late: no edge meets a write edge.
    sim.add_clock(periods[0] * 1e-9, domain="sync")
    sim.add_clock(periods[1] * 1e-9, domain="read", phase=periods[1] * 1e-9 / 3)
    for testbench in testbenches:
        sim.add_testbench(testbench)
    sim.run()


def test_gray_code_round_trip():
    # One bit changes per step (the wrap included); gray_decode is the inverse.
    assert all(bin(gray_encode(v) ^ gray_encode((v + 1) % 512)).count("1") == 1
               for v in range(512))
    m = Module()
    code, value = Signal(9), Signal(9)
    m.d.comb += value.eq(gray_decode(code))
    seen = []

    async def bench(ctx):
        for v in range(512):
            ctx.set(code, gray_encode(v))
            seen.append(ctx.get(value))
    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert seen == list(range(512))


@pytest.mark.parametrize("ratio", RATIOS)
@pytest.mark.parametrize("seed", SEEDS)
def test_words_come_out_once_and_in_order(ratio, seed):
    rng = random.Random(seed)
    words = 300
    m, fifo, _ = _fifo(depth=8)
    written, taken = [], []
    # Each side's appetite changes every 40 of its clocks, from idle to every clock, so
    # the FIFO runs full and empty in turn.
    async def writer(ctx):
        p = 0.5
        n = 0
        clocks = 0
        while n < words:
            if clocks % 40 == 0:
                p = rng.choice([0.05, 0.3, 0.7, 1.0])
            clocks += 1
            enable = rng.random() < p
            ctx.set(fifo.w_en, enable)
            ctx.set(fifo.w_data, n)
            level = ctx.get(fifo.w_level)
            assert level <= 8, f"seed {seed}: level {level}"
            if enable and ctx.get(fifo.w_rdy):
                written.append(n)
                n += 1
            await ctx.tick("sync")
        ctx.set(fifo.w_en, 0)

    async def reader(ctx):
        p = 0.5
        clocks = 0
        while len(taken) < words and clocks < 200_000:
            if clocks % 40 == 0:
                p = rng.choice([0.05, 0.3, 0.7, 1.0])
            clocks += 1
            enable = rng.random() < p
            ctx.set(fifo.r_en, enable)
            if enable and ctx.get(fifo.r_rdy):
                taken.append(ctx.get(fifo.r_data))
            await ctx.tick("read")
        ctx.set(fifo.r_en, 0)
        for _ in range(20):
            await ctx.tick("read")
        assert not ctx.get(fifo.r_rdy), f"seed {seed}: a word too many"

    _simulate(m, RATIOS[ratio], writer, reader)
    assert taken == written == list(range(words)), f"seed {seed}, {ratio}"


@pytest.mark.parametrize("ratio", RATIOS)
def test_latency_from_write_to_r_rdy(ratio):
    m, fifo, _ = _fifo()
    state = {"written": False, "edges": None}

    async def writer(ctx):
        for _ in range(5):
            await ctx.tick("sync")
        ctx.set(fifo.w_en, 1)
        ctx.set(fifo.w_data, 0x1234)
        await ctx.tick("sync")              # the write edge
        state["written"] = True
        ctx.set(fifo.w_en, 0)

    async def reader(ctx):
        edges = 0
        while edges < 20:
            await ctx.tick("read")
            if state["written"]:
                edges += 1
                if ctx.get(fifo.r_rdy):
                    state["edges"] = edges
                    assert ctx.get(fifo.r_data) == 0x1234
                    return
            else:
                assert not ctx.get(fifo.r_rdy)

    _simulate(m, RATIOS[ratio], writer, reader)
    assert state["edges"] == WRITE_TO_READ_CLOCKS == 6


def test_capacity_level_and_room_again():
    # The reader idle: exactly `depth` words are taken, w_level counts them (the two read
    # stages included), then each word taken frees one place.
    m, fifo, _ = _fifo(depth=8)
    out = {}

    async def writer(ctx):
        accepted = 0
        ctx.set(fifo.w_en, 1)
        for n in range(30):
            ctx.set(fifo.w_data, n)
            if ctx.get(fifo.w_rdy):
                accepted += 1
            await ctx.tick("sync")
        ctx.set(fifo.w_en, 0)
        out["accepted"], out["level_full"] = accepted, ctx.get(fifo.w_level)
        for _ in range(10):
            await ctx.tick("sync")
        out["level_later"] = ctx.get(fifo.w_level)

    async def reader(ctx):
        for _ in range(400):
            await ctx.tick("read")
        out["first"] = ctx.get(fifo.r_data), ctx.get(fifo.r_rdy)
        got = []
        ctx.set(fifo.r_en, 1)
        while len(got) < 8:
            if ctx.get(fifo.r_rdy):
                got.append(ctx.get(fifo.r_data))
            await ctx.tick("read")
        ctx.set(fifo.r_en, 0)
        out["got"] = got

    async def after(ctx):
        for _ in range(200):             # the reader has taken them all by then
            await ctx.tick("sync")
        out["level_empty"] = ctx.get(fifo.w_level)

    _simulate(m, RATIOS["33_110"], writer, reader, after)
    assert out["accepted"] == 8 and out["level_full"] == 8 and out["level_later"] == 8
    assert out["first"] == (0, 1)
    assert out["got"] == list(range(8))
    assert out["level_empty"] == 0


@pytest.mark.parametrize("ratio", RATIOS)
def test_latency_from_take_to_room(ratio):
    # A full FIFO: a word taken at a read edge is counted by the Gray register at the next
    # read edge; w_level shows the room at the third write edge after that (two
    # synchroniser flip-flops, the decoded count), w_rdy at the fourth.
    m, fifo, _ = _fifo(depth=8)
    state = {"counted": False, "level": None, "ready": None}

    async def writer(ctx):
        ctx.set(fifo.w_en, 1)
        for n in range(8):
            ctx.set(fifo.w_data, n)
            await ctx.tick("sync")
        ctx.set(fifo.w_en, 0)
        edges = 0
        while state["ready"] is None:
            await ctx.tick("sync")
            if state["counted"]:
                edges += 1
                if state["level"] is None and ctx.get(fifo.w_level) == 7:
                    state["level"] = edges
                if ctx.get(fifo.w_rdy):
                    state["ready"] = edges
            else:
                assert ctx.get(fifo.w_level) == 8 and not ctx.get(fifo.w_rdy)
            assert edges < 20

    async def reader(ctx):
        while not ctx.get(fifo.r_rdy):
            await ctx.tick("read")
        for _ in range(int(20 * 30 / RATIOS[ratio][1]) + 20):   # the writer is done
            await ctx.tick("read")
        ctx.set(fifo.r_en, 1)
        await ctx.tick("read")              # the take edge
        ctx.set(fifo.r_en, 0)
        await ctx.tick("read")              # the Gray count's edge
        state["counted"] = True

    _simulate(m, RATIOS[ratio], writer, reader)
    assert (state["level"], state["ready"]) == (3, 4)


def test_write_reset_empties_it():
    m, fifo, sync = _fifo(depth=8)
    out = {}

    async def writer(ctx):
        ctx.set(fifo.w_en, 1)
        for n in range(5):
            ctx.set(fifo.w_data, n)
            await ctx.tick("sync")
        ctx.set(fifo.w_en, 0)
        for _ in range(5):
            await ctx.tick("sync")
        out["before"] = ctx.get(fifo.w_level)
        ctx.set(sync.rst, 1)
        for _ in range(2):
            await ctx.tick("sync")
        ctx.set(sync.rst, 0)
        for _ in range(10):
            await ctx.tick("sync")
        out["after"] = ctx.get(fifo.w_level), ctx.get(fifo.w_rdy)
        ctx.set(fifo.w_en, 1)
        ctx.set(fifo.w_data, 99)
        await ctx.tick("sync")
        ctx.set(fifo.w_en, 0)

    async def reader(ctx):
        for _ in range(30):
            await ctx.tick("read")
        out["rdy_before"] = ctx.get(fifo.r_rdy)
        for _ in range(100):
            await ctx.tick("read")
        got = []
        ctx.set(fifo.r_en, 1)
        for _ in range(40):
            if ctx.get(fifo.r_rdy):
                got.append(ctx.get(fifo.r_data))
            await ctx.tick("read")
        out["got"] = got

    _simulate(m, RATIOS["33_110"], writer, reader)
    assert out["before"] == 5 and out["rdy_before"] == 1
    assert out["after"] == (0, 1)
    assert out["got"] == [99]


def test_parameters_checked():
    with warnings.catch_warnings():
        # The refused objects are never elaborated; collect them inside this block.
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="power of two, 2 or more, not 12"):
            RegisteredAsyncFIFO(8, 12)
        with pytest.raises(ValueError, match="must differ, not both 'sync'"):
            RegisteredAsyncFIFO(8, 8, w_domain="sync", r_domain="sync")
        gc.collect()
