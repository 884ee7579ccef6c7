# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the log-binned latency histogram (pcispy/irq/histogram.py): the bin edges
(pcispy/irq/bins.py), the gateware's bin index against :func:`bin_of`, exact counts,
clearing."""

import collections
import gc
import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from pcispy.irq.bins import BINS_PER_OCTAVE, DEFAULT_BINS, bin_of, bin_low, bin_high, bin_edges
from pcispy.irq.histogram import LatencyHistogram

__all__ = []

pytestmark = pytest.mark.irq


def test_bin_edges_partition_the_latencies():
    edges = bin_edges()
    assert len(edges) == DEFAULT_BINS
    assert edges[0][0] == 0 and edges[-1][1] is None
    for (low, high), (next_low, _) in zip(edges, edges[1:]):
        assert high == next_low and high > low
    for index, (low, high) in enumerate(edges):
        assert bin_of(low) == index
        if high is not None:
            assert bin_of(high - 1) == index


def test_bin_edges_are_exact_below_two_octaves_then_log_scaled():
    assert [bin_low(i) for i in range(2 * BINS_PER_OCTAVE)] == list(range(8))
    assert bin_edges()[8:13] == [(8, 10), (10, 12), (12, 14), (14, 16), (16, 20)]
    # Each octave from 8 on has BINS_PER_OCTAVE bins of equal width.
    assert bin_low(8 + 4 * 10) == 8 << 10
    assert bin_high(8 + 4 * 10) - bin_low(8 + 4 * 10) == 2 << 10
    assert bin_of(2**64 - 1) == DEFAULT_BINS - 1
    with pytest.raises(ValueError):
        bin_of(-1)


def latencies_to_try(seed):
    rng = random.Random(seed)
    values = list(range(40))
    for bit in range(3, 64):
        values += [(1 << bit) - 1, 1 << bit, (1 << bit) + 1, (3 << bit) >> 1]
    values += [2**64 - 1] + [rng.getrandbits(rng.randrange(1, 40)) for _ in range(60)]
    values = [v for v in values if v < 2**64]
    values += [values[-1]] * 3                # back-to-back samples of one bin
    return values


def run_histogram(dut, latencies, extra=None):
    """Feed one latency per clock, then read every bin. Returns ``{bin: count}``."""
    counts = {}

    async def bench(ctx):
        for latency in latencies:
            ctx.set(dut.sample, 1)
            ctx.set(dut.latency, latency)
            await ctx.tick()
        ctx.set(dut.sample, 0)
        await ctx.tick().repeat(5)
        if extra:
            await extra(ctx)
        for index in range(256):
            ctx.set(dut.index, index)
            await ctx.tick()
            count = ctx.get(dut.count)
            if count:
                counts[index] = count

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return counts


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("nbins", [DEFAULT_BINS, 16])
def test_gateware_bins_match_bin_of_exactly(seed, nbins):
    latencies = latencies_to_try(seed)
    counts = run_histogram(LatencyHistogram(nbins), latencies)
    expected = collections.Counter(bin_of(v, nbins) for v in latencies)
    assert counts == dict(expected), f"seed={seed}"


def test_clear_takes_nbins_clocks_and_zeroes_every_bin():
    dut = LatencyHistogram(32)
    busy_clocks = []

    async def clear(ctx):
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        ctx.set(dut.sample, 1)               # samples during the clear are not counted
        ctx.set(dut.latency, 5)
        for clock in range(40):
            busy_clocks.append(ctx.get(dut.busy))
            await ctx.tick()
        ctx.set(dut.sample, 0)
        await ctx.tick().repeat(5)

    counts = run_histogram(dut, [3, 3, 100, 7], clear)
    assert busy_clocks[:32] == [1] * 32
    # After the clear ends, the samples still arriving count again (8 clocks of them).
    assert busy_clocks[32:] == [0] * 8
    assert counts == {bin_of(5): 8}


def test_nbins_must_be_a_power_of_two():
    with warnings.catch_warnings():
        # The refused object is never elaborated; Amaranth would warn when it is freed.
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError):
            LatencyHistogram(100)
        gc.collect()
