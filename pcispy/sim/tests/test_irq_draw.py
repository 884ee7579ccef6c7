# SPDX-License-Identifier: BSD-2-Clause
"""The interrupt responder's delay draw is uniform (Amaranth's Python simulator).

:class:`UniformDraw` alone is driven one draw per clock, so thousands of draws take a
second; the responder itself is then checked to log exactly the values the reference
model :func:`uniform_draws` gives for its seed. The statistical checks run over fixed
seeds and name the seed when they fail; :func:`test_checks_reject_a_skewed_draw` shows
they reject the kind of skew a masked redraw from a one-bit-per-clock LFSR gives.
"""

import math
import statistics

import pytest
from amaranth.sim import Simulator

from pcispy.pci.lfsr import lfsr_advance, lfsr_step
from pcispy.sim.bfm.irq_responder import InterruptResponderDriver, UniformDraw, uniform_draws
from pcispy.sim.control import PysimControl
from pcispy.sim.tests._initiator_bench import TargetScript, run_bench

pytestmark = pytest.mark.irq

DRAWS = 2000
LOW, HIGH = 100, 400       # the default simulated acknowledge delay (profiles.py)
BINS = 10
#: Significance of the chi-square test (per seed).
ALPHA = 0.001


def _draw(seed, low, high, count):
    """``count`` values from :class:`UniformDraw` after loading ``seed``, one per clock."""
    dut = UniformDraw()
    values = []

    async def bench(ctx):
        ctx.set(dut.low, low)
        ctx.set(dut.high, high)
        ctx.set(dut.seed, seed)
        ctx.set(dut.load, 1)
        await ctx.tick()
        ctx.set(dut.load, 0)
        ctx.set(dut.start, 1)
        await ctx.tick()
        while len(values) < count:
            assert ctx.get(dut.valid)
            values.append(ctx.get(dut.value))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(30e-9)
    sim.add_testbench(bench)
    sim.run()
    return values


def _chi2_cdf(x, df):
    """P(X <= x) for X ~ chi-square(df): the regularized lower incomplete gamma function
    P(df/2, x/2), by its power series (converges for every x)."""
    a, z = df / 2, x / 2
    term = total = 1 / a
    k = 1
    while term > 1e-16 * total:
        term *= z / (a + k)
        total += term
        k += 1
    return math.exp(a * math.log(z) - z - math.lgamma(a)) * total


def _chi2_critical(df, alpha):
    """The x with P(X > x) = alpha, by bisection."""
    lo, hi = 0.0, 10.0 * df + 100
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _chi2_cdf(mid, df) < 1 - alpha else (lo, mid)
    return (lo + hi) / 2


def _figures(values, low, high):
    """median - low, chi-square over BINS bins of (nearly) equal width, the mean's
    distance from the centre in standard errors, and the lag-1 serial correlation."""
    n = high - low + 1
    count = len(values)
    bin_of = [(v - low) * BINS // n for v in range(low, high + 1)]
    expected = [count * bin_of.count(b) / n for b in range(BINS)]
    observed = [0] * BINS
    for v in values:
        observed[bin_of[v - low]] += 1
    chi2 = sum((o - e) ** 2 / e for o, e in zip(observed, expected))
    mean = statistics.fmean(values)
    standard_error = math.sqrt((n * n - 1) / 12 / count)
    variance = statistics.pvariance(values, mean)
    lag1 = sum((a - mean) * (b - mean) for a, b in zip(values, values[1:]))
    return {
        "median-min": sorted(values)[(count - 1) // 2] - low,
        "chi2": chi2,
        "mean_z": (mean - (low + high) / 2) / standard_error,
        "lag1_r": lag1 / ((count - 1) * variance),
    }


def _failures(values, low, high):
    """What is wrong with ``values`` as uniform draws from [low, high] (empty if none)."""
    out = []
    outside = [v for v in values if not low <= v <= high]
    if outside:
        return [f"{len(outside)} values outside [{low}, {high}], e.g. {outside[:5]}"]
    fig = _figures(values, low, high)
    half = (high - low) / 2
    if abs(fig["median-min"] - half) > 0.1 * half:
        out.append(f"median - min {fig['median-min']}, expected {half:g} +- {0.1 * half:g}")
    critical = _chi2_critical(BINS - 1, ALPHA)
    if fig["chi2"] > critical:
        out.append(f"chi-square {fig['chi2']:.1f} over {BINS} bins > {critical:.2f} "
                   f"(p = {ALPHA})")
    if abs(fig["mean_z"]) > 4:
        out.append(f"mean {fig['mean_z']:+.1f} standard errors from the centre")
    if abs(fig["lag1_r"]) >= 0.1:
        out.append(f"lag-1 serial correlation {fig['lag1_r']:+.3f}")
    return out


def test_chi2_critical_value():
    # Tabulated 0.999 quantiles of chi-square with 9 and 1 degrees of freedom.
    assert _chi2_critical(9, 0.001) == pytest.approx(27.877, abs=1e-3)
    assert _chi2_critical(1, 0.001) == pytest.approx(10.828, abs=1e-3)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_draws_are_uniform(seed):
    values = _draw(seed, LOW, HIGH, DRAWS)
    assert values == uniform_draws(seed, LOW, HIGH, DRAWS), f"seed {seed}: RTL != model"
    fig = _figures(values, LOW, HIGH)
    assert not _failures(values, LOW, HIGH), f"seed {seed}: {_failures(values, LOW, HIGH)}, {fig}"


def test_checks_reject_a_skewed_draw():
    """A masked draw redrawn one LFSR step later on rejection (the words of successive
    tries are the same bits shifted by one), with the next interrupt's draw a delay's
    worth of steps on: the figures must flag it."""
    state = 1
    span, mask = HIGH - LOW, 511
    values = []
    while len(values) < DRAWS:
        while state & mask > span:
            state = lfsr_step(state)
        values.append(LOW + (state & mask))
        state = lfsr_advance(state, values[-1] + 40)
    assert _failures(values, LOW, HIGH)


@pytest.mark.parametrize("seed", [1, 4])
def test_small_ranges(seed):
    assert set(_draw(seed, 250, 250, 200)) == {250}, f"seed {seed}"
    pair = _draw(seed, 37, 38, DRAWS)
    # Binomial(2000, 1/2): standard deviation 22.4; allow 5 of them.
    assert set(pair) == {37, 38} and abs(pair.count(37) - DRAWS / 2) < 112, (
        f"seed {seed}: 37 drawn {pair.count(37)} times of {DRAWS}")
    # A range given upside down draws its low end.
    assert set(_draw(seed, 90, 80, 20)) == {90}, f"seed {seed}"


def test_seeds():
    assert _draw(0, LOW, HIGH, 50) == _draw(1, LOW, HIGH, 50)        # 0 is taken as 1
    assert _draw(7, LOW, HIGH, 50) != _draw(8, LOW, HIGH, 50)
    # The full 32-bit range (n = 2**32 needs the 33-bit multiplier).
    full = _draw(9, 0, 2**32 - 1, 50)
    assert full == uniform_draws(9, 0, 2**32 - 1, 50) and len(set(full)) == 50


@pytest.mark.parametrize("seed", [3, 0xC0FFEE])
def test_responder_logs_the_drawn_delays(seed):
    """Each interrupt takes the next draw, whatever the time between interrupts."""
    box = {"delays": []}
    count = 24

    async def bench(ctx, drv, target, h):
        irq = InterruptResponderDriver(PysimControl(ctx, h.responder.ctl))
        await irq.configure(ack_addr=0x500, ack_value=1, delay_range=(20, 60), seed=seed)
        for k in range(count):
            before = len(target.writes)
            ctx.set(h.inta, 1)
            while len(target.writes) == before:
                await ctx.tick()
            ctx.set(h.inta, 0)
            await ctx.tick().repeat(1 + 5 * (k % 3))
            if k % 8 == 7:          # the log keeps 16 entries
                box["delays"] += [e["delay"] for e in await irq.entries()]

    run_bench(bench, TargetScript(), responder=True)
    assert box["delays"] == uniform_draws(seed, 20, 60, count), f"seed {seed:#x}"
