# SPDX-License-Identifier: BSD-2-Clause
"""The hardware histogram (:class:`~pcispy.spy.counters.Histogram`) on its own: seeded
samples into a few bins, read back bin by bin on every clock while they go on, against a
model: a snapshot shows every bin as it was at its clock until release (a second snapshot
takes new values, a clear while held leaves it), the live bins lose no sample, and the
clear takes HISTOGRAM_BINS + 1 clocks in which samples are not counted."""

import random

import pytest

from amaranth.sim import Simulator

from pcispy.spy.counters import HISTOGRAM_BINS, Histogram

pytestmark = pytest.mark.spy

#: Bins the samples go to: few, so that a bin is hit before and after a snapshot.
BINS = (0, 1, 2, 5, 63)


#: Bins read, in turn: the sampled ones often (a read in the clock a bin is first written
#: after a snapshot must see the old value), and one never sampled.
READS = BINS + (10,)


def _schedule(rng, clocks, strobes):
    """A sample (its bin) or None per clock, never two in a row (the histogram takes one
    every other clock), and one in each clock of ``strobes``."""
    samples, last = [], False
    for t in range(clocks):
        take = t in strobes or (not last and t + 1 not in strobes and rng.random() < 0.45)
        samples.append(rng.choice(BINS) if take else None)
        last = take
    return samples


def _run(samples, events):
    """Feed ``samples`` with the strobes ``events`` ({clock: name}); read bin
    ``READS[t % len(READS)]`` on every clock ``t``. Returns ``(reads, clearing, live)``:
    ``reads[t]`` the count shown for the bin read in clock ``t``, ``clearing`` the clocks
    in which ``clearing`` was high, ``live`` every bin read after the run."""
    dut = Histogram()
    reads, clearing, live = {}, [], []

    async def bench(ctx):
        for t, bin_ in enumerate(samples):
            ctx.set(dut.sample, bin_ is not None)
            ctx.set(dut.bin, bin_ or 0)
            for name in ("snapshot", "release", "clear"):
                ctx.set(getattr(dut, name), events.get(t) == name)
            ctx.set(dut.r_addr, READS[t % len(READS)])
            if ctx.get(dut.clearing):
                clearing.append(t)
            await ctx.tick()
            if t:       # r_data: the bin whose address came the clock before
                reads[t - 1] = ctx.get(dut.r_data)
        for name in ("sample", "snapshot", "release", "clear"):
            ctx.set(getattr(dut, name), 0)
        await ctx.tick().repeat(3)
        for b in range(HISTOGRAM_BINS):
            ctx.set(dut.r_addr, b)
            await ctx.tick().repeat(2)
            live.append(ctx.get(dut.r_data))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return reads, clearing, live


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_snapshot_shows_one_clock_while_samples_go_on_and_none_is_lost(seed):
    clocks, clear, release = 900, 420, 620
    events = {150: "snapshot", 330: "snapshot", clear: "clear", release: "release"}
    samples = _schedule(random.Random(seed), clocks, events)
    reads, clearing, live = _run(samples, events)

    # Counted: not in the clear's clock nor while it zeroes the bins (which it starts a
    # clock late: the inputs wait a clock in registers).
    assert clearing == list(range(clear + 2, clear + HISTOGRAM_BINS + 3))
    counted = [(t, b) for t, b in enumerate(samples)
               if b is not None and not clear <= t <= clear + HISTOGRAM_BINS + 1]

    def counts(before, after=0):
        """Bins as of the samples counted in clocks [after, before)."""
        bins = [0] * HISTOGRAM_BINS
        for t, b in counted:
            if after <= t < before:
                bins[b] += 1
        return bins

    # A snapshot holds for the reads from two clocks after its own up to the clock after
    # the next snapshot's, or the release's (the strobes wait a clock like the samples):
    # the samples of its clock and later are not in it, the clear while held does not
    # touch it.
    for start, last in ((150, 330), (330, release + 1)):
        shown = counts(start)
        for t in range(start + 2, last + 1):
            assert reads[t] == shown[READS[t % len(READS)]], (seed, start, t)
    # Samples did land in held bins meanwhile (else the test would prove nothing).
    assert counts(330) != counts(150) and counts(release, clear) != counts(330)
    # Live again: every sample counted since the clear, none lost to the holds.
    assert live == counts(clocks, clear)
    assert sum(live) > 100
