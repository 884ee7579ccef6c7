# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the interrupt-latency unit as the board sees it (pcispy/irq/unit.py): raise and
acknowledge timestamps exact to the clock, missed interrupts, Interrupt Disable and Status,
checkpoints, counters, histogram, clear, and a randomised handler over fixed seeds."""

import collections
import random

import pytest

from pcispy.irq.registers import IRQ_MARKERS
from pcispy.irq.gaps import MODES, random_gaps
from pcispy.irq.bins import bin_of
from pcispy.irq.unit import InterruptUnit
from pcispy.tests import reusable_sim

__all__ = []

pytestmark = pytest.mark.irq

#: The unit's own ports; every other name is a register of its ``irq`` block.
UNIT_PORTS = ("timestamp", "inta", "interrupt_disable", "interrupt_status")
#: Names for the fields of the registers that hold more than one, or one of another name.
FIELDS = {"mode": ("ctrl", "mode"), "arm": ("command", "arm"), "stop": ("command", "stop"),
          "clear": ("command", "clear"), "hist_index": ("hist_index", "index")}
#: Pulses, zeroed after the clock they are given in (with the ``marker_<k>`` writes).
PULSES = ("arm", "stop", "clear", "ack", "now_lo_read", "raise_ts_lo_read",
          "ack_ts_lo_read", "marker_ts_lo_read")


def port(dut, name):
    """The signal the bank would drive or read for ``name``: a unit port, ``<reg>_read`` a
    register's read strobe, ``marker_<k>`` the write strobe of checkpoint register k, else
    a register's field (the one-field registers' field shares their name)."""
    if name in UNIT_PORTS:
        return getattr(dut, name)
    if name.endswith("_read"):
        return getattr(dut.regs, name.removesuffix("_read")).r_stb
    if name.startswith("marker_") and name[len("marker_"):].isdigit():
        return getattr(dut.regs, name).w_stb
    register, field = FIELDS.get(name, (name, name))
    return getattr(getattr(dut.regs, register), field)


def is_pulse(name):
    return name in PULSES or (name.startswith("marker_") and name[len("marker_"):].isdigit())


class Driver:
    """Drives the unit's register ports clock by clock, as the CSR bank would."""
    def __init__(self, ctx, dut):
        self.ctx, self.dut = ctx, dut

    def get(self, name):
        return self.ctx.get(port(self.dut, name))

    def set(self, **values):
        for name, value in values.items():
            self.ctx.set(port(self.dut, name), value)

    async def step(self, **pulses):
        """One clock with ``pulses`` high; returns ``now`` of that clock."""
        self.set(**pulses)
        now = self.get("timestamp")
        await self.ctx.tick()
        self.set(**{name: 0 for name in pulses if is_pulse(name)})
        return now

    async def idle(self, clocks):
        for _ in range(clocks):
            await self.step()

    async def read64(self, name):
        """Read ``name_lo`` (with its strobe) then ``name_hi``."""
        self.set(**{f"{name}_lo_read": 1})
        lo = self.get(f"{name}_lo")
        await self.step()
        self.set(**{f"{name}_lo_read": 0})
        return (self.get(f"{name}_hi") << 32) | lo

    async def pop_marker(self):
        self.set(marker_ts_lo_read=1)
        lo = self.get("marker_ts_lo")
        await self.step()
        self.set(marker_ts_lo_read=0)
        await self.step()
        return ((self.get("marker_ts_hi") << 32) | lo,
                self.ctx.get(self.dut.regs.marker_id.id),
                self.ctx.get(self.dut.regs.marker_id.valid))

    async def histogram(self):
        counts = {}
        for index in range(self.dut.nbins):
            self.set(hist_index=index)
            await self.step()
            if self.get("hist_count"):
                counts[index] = self.get("hist_count")
        return counts

    def counters(self):
        return {name: self.get(name) for name in ("raised", "acked", "missed", "overruns")}

    def status(self, field):
        return self.ctx.get(getattr(self.dut.regs.status, field))

    async def arm(self, **settings):
        """Set the generator's registers, arm it; returns ``now`` of the arm clock."""
        self.set(**settings)
        return await self.step(arm=1)

    async def wait_for_inta(self, limit=10_000):
        for _ in range(limit):
            if self.get("interrupt_status"):
                return self.get("timestamp")
            await self.step()
        raise AssertionError("no interrupt raised")


def simulate(bench, **params):
    """Run ``await bench(driver)`` on an interrupt unit of ``params``, from reset (the
    tests of one configuration share its simulator); returns the unit."""
    def build():
        dut = InterruptUnit(**params)
        return dut, dut
    simulation = reusable_sim.shared(("irq_unit", *sorted(params.items())), build,
                                     {"sync": 1e-6})
    dut = simulation.handles

    async def testbench(ctx):
        await bench(Driver(ctx, dut))

    simulation.run(testbench)
    return dut


def test_raise_and_ack_timestamps_and_latency_are_exact():
    result = {}

    async def bench(d):
        await d.idle(5)
        armed = await d.arm(mode=MODES["one_shot"], delay=40)
        raised = await d.wait_for_inta()
        result["raise_clock"] = raised - armed
        assert d.get("inta") == 1 and d.status("pending") == 1
        result["raise_ts"] = await d.read64("raise_ts")
        await d.idle(17)
        acked = await d.step(ack=1)
        result["after_ack"] = (d.get("inta"), d.get("interrupt_status"))
        result["ack_ts"] = await d.read64("ack_ts")
        result["expected"] = (raised, acked)
        result["counters"] = d.counters()
        result["running"] = d.status("running")
        result["histogram"] = await d.histogram()

    simulate(bench)
    raised, acked = result["expected"]
    assert result["raise_clock"] == 40                 # raised exactly `delay` after arm
    assert result["raise_ts"] == raised
    assert result["ack_ts"] == acked
    assert acked - raised == 18                        # raise_ts read (1) + idle (17)
    assert result["after_ack"] == (0, 0)
    assert result["counters"] == {"raised": 1, "acked": 1, "missed": 0, "overruns": 0}
    assert result["running"] == 0
    assert result["histogram"] == {bin_of(18): 1}


def test_raises_while_pending_are_missed_and_keep_the_first_raise_time():
    result = {}

    async def bench(d):
        await d.arm(mode=MODES["periodic"], delay=10, period=30)
        first = await d.wait_for_inta()
        await d.idle(75)                               # two more fires, both missed
        result["before_ack"] = d.counters()
        result["raise_ts"] = await d.read64("raise_ts")
        acked = await d.step(ack=1)
        result["first"], result["acked"] = first, acked
        result["pending"] = d.status("pending")
        result["after_ack"] = d.counters()
        result["histogram"] = await d.histogram()

    simulate(bench)
    assert result["before_ack"] == {"raised": 3, "acked": 0, "missed": 2, "overruns": 0}
    assert result["raise_ts"] == result["first"]
    assert result["pending"] == 0
    after = result["after_ack"]
    assert after["acked"] == 1
    assert after["raised"] == after["acked"] + after["missed"] + result["pending"]
    assert result["histogram"] == {bin_of(result["acked"] - result["first"]): 1}


def test_ack_in_the_clock_of_a_new_fire_counts_both():
    result = {}

    async def bench(d):
        await d.arm(mode=MODES["periodic"], delay=10, period=20)
        first = await d.wait_for_inta()
        await d.idle(19)
        fire_clock = await d.step(ack=1)               # the generator fires in this clock
        result["ts"] = (first, fire_clock)
        result["pending"] = d.status("pending")
        result["raise_ts"] = await d.read64("raise_ts")
        result["counters"] = d.counters()

    simulate(bench)
    first, fire_clock = result["ts"]
    assert result["pending"] == 1
    assert result["raise_ts"] == fire_clock + 1 == first + 20
    assert result["counters"] == {"raised": 2, "acked": 1, "missed": 0, "overruns": 0}


def test_ack_with_nothing_pending_is_ignored():
    result = {}

    async def bench(d):
        await d.idle(3)
        await d.step(ack=1)
        result["counters"] = d.counters()
        result["ack_ts"] = await d.read64("ack_ts")
        result["histogram"] = await d.histogram()

    simulate(bench)
    assert result["counters"]["acked"] == 0
    assert result["ack_ts"] == 0 and result["histogram"] == {}


def test_interrupt_disable_masks_inta_but_status_follows_pending():
    seen = []

    async def bench(d):
        d.set(interrupt_disable=1, mode=MODES["one_shot"], delay=8)
        await d.step(arm=1)
        await d.wait_for_inta()
        seen.append((d.get("inta"), d.get("interrupt_status"), d.status("pending")))
        d.set(interrupt_disable=0)
        await d.step()
        seen.append((d.get("inta"), d.get("interrupt_status"), d.status("pending")))
        d.set(interrupt_disable=1)
        await d.step(ack=1)
        seen.append((d.get("inta"), d.get("interrupt_status"), d.status("pending")))
        d.set(interrupt_disable=0)
        await d.step()
        seen.append((d.get("inta"), d.get("interrupt_status"), d.status("pending")))

    simulate(bench)
    assert seen == [(0, 1, 1), (1, 1, 1), (0, 0, 0), (0, 0, 0)]


def test_cycle_counter_reads_through_the_unit():
    result = {}

    async def bench(d):
        await d.idle(1234)
        d.set(now_lo_read=1)
        result["now"] = d.get("timestamp")
        result["read"] = await d.read64("now")

    simulate(bench)
    assert result["now"] == 1234 and result["read"] == 1234


def test_checkpoints_are_stamped_with_the_clock_of_their_write():
    result = {"expected": []}

    async def bench(d):
        await d.idle(7)
        for marker, gap in ((0, 0), (3, 1), (7, 12), (5, 0)):
            await d.idle(gap)
            result["expected"].append((await d.step(**{f"marker_{marker}": 1}), marker, 1))
        await d.idle(2)
        result["level"] = d.status("marker_level")
        result["popped"] = [await d.pop_marker() for _ in range(5)]
        result["level_after"] = d.status("marker_level")

    simulate(bench)
    assert result["level"] == 4 and result["level_after"] == 0
    assert result["popped"][:4] == result["expected"]
    assert result["popped"][4][2] == 0


def test_marker_overruns_are_counted():
    result = {}

    async def bench(d):
        for n in range(11):
            await d.step(**{f"marker_{n % IRQ_MARKERS}": 1})
        await d.step()
        result["counters"] = d.counters()
        result["level"] = d.status("marker_level")

    simulate(bench, marker_depth=8)
    assert result["counters"]["overruns"] == 3 and result["level"] == 8


def test_clear_zeroes_everything_and_refuses_arm_while_busy():
    result = {}

    async def bench(d):
        await d.arm(mode=MODES["periodic"], delay=10, period=12)
        await d.wait_for_inta()
        await d.idle(2)
        await d.step(ack=1)
        await d.idle(20)
        await d.step(marker_2=1)
        result["before"] = d.counters()
        await d.step(clear=1)
        busy = []
        for clock in range(40):
            busy.append(d.status("busy"))
            await d.step(arm=int(clock == 5))
        result["busy"] = busy
        result["after"] = d.counters()
        result["status"] = {f: d.status(f) for f in ("pending", "running", "err_busy",
                                                      "marker_level")}
        result["histogram"] = await d.histogram()
        await d.step(arm=1)
        result["err_busy_after_good_arm"] = d.status("err_busy")

    simulate(bench, nbins=32)
    assert result["before"]["acked"] == 1 and result["before"]["raised"] >= 2
    assert result["busy"] == [1] * 32 + [0] * 8
    assert result["after"] == {"raised": 0, "acked": 0, "missed": 0, "overruns": 0}
    assert result["status"] == {"pending": 0, "running": 0, "err_busy": 1,
                                "marker_level": 0}
    assert result["histogram"] == {}
    assert result["err_busy_after_good_arm"] == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_randomised_handler_histogram_and_counters_are_exact(seed):
    """A handler model acknowledges each interrupt after a random delay (some longer than
    the gap, so interrupts are missed) and writes a checkpoint just before; the unit's
    counters, histogram and checkpoints must match what the model saw, clock for clock."""
    rng = random.Random(seed)
    lfsr_seed = rng.getrandbits(32) | 1
    min_gap, max_gap = 30, 90
    gaps = random_gaps(lfsr_seed, min_gap, max_gap, 40)
    clocks = 20 + sum(gaps)
    model = {"latencies": [], "raises": [], "markers": []}
    result = {}

    async def bench(d):
        d.set(mode=MODES["random"], delay=20, seed=lfsr_seed, min_gap=min_gap,
              max_gap=max_gap)
        await d.step(arm=1)
        raise_ts = ack_at = None
        for _ in range(clocks):
            now = d.get("timestamp")
            if d.get("interrupt_status") and raise_ts is None:
                raise_ts = now
                model["raises"].append(now)
                ack_at = now + rng.choice([rng.randrange(4, 25), rng.randrange(60, 200)])
            pulses = {}
            if ack_at is not None and now == ack_at - 2:
                pulses[f"marker_{raise_ts % IRQ_MARKERS}"] = 1
                model["markers"].append((now, raise_ts % IRQ_MARKERS, 1))
            if ack_at is not None and now == ack_at:
                pulses["ack"] = 1
                model["latencies"].append(now - raise_ts)
                raise_ts = ack_at = None
            await d.step(**pulses)
        await d.step(stop=1)
        await d.idle(5)
        result["counters"] = d.counters()
        result["pending"] = d.status("pending")
        result["histogram"] = await d.histogram()
        result["markers"] = [await d.pop_marker() for _ in range(len(model["markers"]))]

    simulate(bench, marker_depth=64)
    context = f"seed={seed}"
    counters = result["counters"]
    # Fires 0..len(gaps): the last one makes its interrupt pending in the last clock.
    assert counters["raised"] == len(gaps) + 1, context
    assert counters["acked"] == len(model["latencies"]), context
    assert counters["raised"] == counters["acked"] + counters["missed"] + result["pending"]
    assert counters["missed"] > 0, f"{context}: the model must miss some interrupts"
    assert result["histogram"] == dict(collections.Counter(
        bin_of(latency) for latency in model["latencies"])), context
    assert result["markers"] == model["markers"], context
    # Every raise the model saw is one of the generator's scheduled instants.
    schedule = {20 + sum(gaps[:k]) for k in range(len(gaps) + 1)}
    first = model["raises"][0]
    assert {r - first + 20 for r in model["raises"]} <= schedule, context
