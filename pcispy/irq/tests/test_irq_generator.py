# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the interrupt generator (pcispy/irq/generator.py): modes, exact fire clocks,
pseudo-random gaps within bounds (pcispy/irq/gaps.py), refusal of settings it cannot
honour."""

import collections

import pytest
from amaranth.sim import Simulator

from pcispy.irq.registers import IRQ_MIN_GAP
from pcispy.irq.gaps import MODES, lfsr_draw, random_gaps
from pcispy.irq.generator import InterruptGenerator
from pcispy.pci.lfsr import LFSR_TAPS, lfsr_step

__all__ = []

pytestmark = pytest.mark.irq

SEEDS = [1, 0x1234_5678, 0xDEAD_BEEF, 0xFFFF_FFFF]


def run_generator(settings, cycles, actions=()):
    """Arm in clock 0 with ``settings``; ``actions`` is ``{clock: {port: value}}`` (pulses
    for one clock). Returns the clocks in which ``fire`` was high, and the final
    ``running`` and ``refused`` values."""
    dut = InterruptGenerator()
    actions = dict(actions)
    fires = []
    final = {}

    async def bench(ctx):
        for name, value in settings.items():
            ctx.set(getattr(dut, name), value)
        ctx.set(dut.arm, 1)
        for clock in range(cycles):
            for name, value in actions.get(clock, {}).items():
                ctx.set(getattr(dut, name), value)
            if ctx.get(dut.fire):
                fires.append(clock)
            await ctx.tick()
            ctx.set(dut.arm, 0)
            ctx.set(dut.stop, 0)
            for name in actions.get(clock, {}):
                if name in ("arm", "stop", "busy"):
                    ctx.set(getattr(dut, name), 0)
        final["running"] = ctx.get(dut.running)
        final["refused"] = {f: ctx.get(getattr(dut.refused, f))
                            for f in ("mode", "delay", "gap", "seed", "busy")}

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return fires, final


def test_lfsr_is_maximal_length():
    """The LFSR's transition matrix over GF(2) has order exactly 2**32 - 1."""
    def apply(matrix, vector):
        result = 0
        for i in range(32):
            if vector >> i & 1:
                result ^= matrix[i]
        return result

    def power(matrix, n):
        result = [1 << i for i in range(32)]
        while n:
            if n & 1:
                result = [apply(matrix, column) for column in result]
            matrix = [apply(matrix, column) for column in matrix]
            n >>= 1
        return result

    step = [lfsr_step(1 << i) for i in range(32)]
    identity = [1 << i for i in range(32)]
    order = 2**32 - 1
    assert power(step, order) == identity
    for prime in (3, 5, 17, 257, 65537):                 # 2**32 - 1 = 3*5*17*257*65537
        assert power(step, order // prime) != identity
    assert lfsr_step(1) == LFSR_TAPS ^ 0 and lfsr_draw(0) == 0


def test_one_shot_fires_once_delay_minus_one_clocks_after_arm():
    fires, final = run_generator({"mode": MODES["one_shot"], "delay": 37}, 120)
    assert fires == [36]
    assert final["running"] == 0


def test_minimum_delay_fires_three_clocks_after_arm():
    fires, _ = run_generator({"mode": MODES["one_shot"], "delay": IRQ_MIN_GAP}, 20)
    assert fires == [IRQ_MIN_GAP - 1]


def test_periodic_fires_every_period():
    fires, final = run_generator(
        {"mode": MODES["periodic"], "delay": 10, "period": 25}, 130)
    assert fires == [9, 34, 59, 84, 109]
    assert final["running"] == 1


def test_stop_ends_the_countdown_and_rearm_restarts_it():
    fires, _ = run_generator(
        {"mode": MODES["periodic"], "delay": 10, "period": 7}, 80,
        {20: {"stop": 1}, 40: {"arm": 1, "delay": 5}})
    assert fires == [9, 16, 44, 51, 58, 65, 72, 79]


def test_settings_are_taken_at_arm_only():
    fires, _ = run_generator(
        {"mode": MODES["periodic"], "delay": 10, "period": 10}, 45, {12: {"period": 4}})
    assert fires == [9, 19, 29, 39]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("min_gap,max_gap,draws", [
    (IRQ_MIN_GAP, IRQ_MIN_GAP + 7, 400),      # every value of a small range
    (100, 900, 40),
    (IRQ_MIN_GAP, IRQ_MIN_GAP, 20),            # degenerate range: exactly periodic
])
def test_random_gaps_follow_the_lfsr_and_stay_in_bounds(seed, min_gap, max_gap, draws):
    delay = 6
    expected_gaps = random_gaps(seed, min_gap, max_gap, draws)
    cycles = delay + sum(expected_gaps)
    fires, _ = run_generator({"mode": MODES["random"], "delay": delay, "seed": seed,
                              "min_gap": min_gap, "max_gap": max_gap}, cycles)
    gaps = [b - a for a, b in zip(fires, fires[1:])]
    context = f"seed={seed:#x} range=[{min_gap},{max_gap}]"
    assert fires[0] == delay - 1, context
    assert len(gaps) == draws, context
    assert all(min_gap <= gap <= max_gap for gap in gaps), f"{context}: {gaps}"
    assert gaps == expected_gaps, context
    if max_gap - min_gap == 7:
        # Uniform over 8 values: every value drawn, none more than 1.5x its share.
        histogram = collections.Counter(gaps)
        assert set(histogram) == set(range(min_gap, max_gap + 1)), context
        assert max(histogram.values()) < 1.5 * draws / 8, f"{context}: {histogram}"


def test_random_gap_reference_reaches_both_bounds_over_the_full_range():
    gaps = random_gaps(0xACE1, 4, 2**32 - 1, 2000)
    assert min(gaps) >= 4 and max(gaps) <= 2**32 - 1
    # The draws spread over the whole range (top and bottom eighths both reached).
    assert min(gaps) < 2**29 and max(gaps) > 7 * 2**29


@pytest.mark.parametrize("settings,reason", [
    ({"mode": 3, "delay": 10}, "mode"),
    ({"mode": MODES["one_shot"], "delay": IRQ_MIN_GAP - 1}, "delay"),
    ({"mode": MODES["periodic"], "delay": 10, "period": IRQ_MIN_GAP - 1}, "gap"),
    ({"mode": MODES["random"], "delay": 10, "seed": 1, "min_gap": 50, "max_gap": 49}, "gap"),
    ({"mode": MODES["random"], "delay": 10, "seed": 1, "min_gap": 2, "max_gap": 49}, "gap"),
    ({"mode": MODES["random"], "delay": 10, "seed": 0, "min_gap": 5, "max_gap": 9}, "seed"),
])
def test_refused_arm_changes_nothing_and_says_why(settings, reason):
    fires, final = run_generator(settings, 40)
    assert fires == []
    assert final["running"] == 0
    assert final["refused"] == {f: int(f == reason)
                                for f in ("mode", "delay", "gap", "seed", "busy")}


def test_refused_arm_keeps_the_running_countdown():
    fires, final = run_generator(
        {"mode": MODES["periodic"], "delay": 10, "period": 10}, 45,
        {15: {"arm": 1, "period": 1}})
    assert fires == [9, 19, 29, 39]
    assert final["refused"]["gap"] == 1 and final["running"] == 1


def test_arm_while_busy_is_refused():
    fires, final = run_generator({"mode": MODES["one_shot"], "delay": 10, "busy": 1}, 30)
    assert fires == [] and final["refused"]["busy"] == 1
