# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the PCI clock meter (pcispy/board/clock_meter.py): the oscillator's gate and the
count of PCI clocks in it, across two unrelated clocks."""

import gc
import warnings

import pytest
from amaranth import ClockDomain, DomainRenamer, Module
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from pcispy.board.clock_meter import ClockMeter, OscillatorGate

__all__ = []

pytestmark = pytest.mark.board

#: The board oscillator of the tests: 25 MHz, as on the ULX3S.
OSCILLATOR_PERIOD = 40e-9


def meter_in_pci():
    """A design with domain ``pci`` and a 10-bit :class:`ClockMeter` in it; returns
    (module, meter)."""
    m = Module()
    m.domains.pci = ClockDomain("pci")
    m.submodules.meter = meter = DomainRenamer("pci")(ClockMeter(count_bits=10))
    return m, meter


def test_gate_changes_every_gate_of_oscillator_clocks():
    """25 MHz, a 2 us gate (gate_log2 1): the toggle changes every 50 clocks exactly."""
    gate = OscillatorGate(25_000_000, gate_log2=1)
    changes = []

    async def bench(ctx):
        last = ctx.get(gate.toggle)
        for clock in range(1, 181):
            await ctx.tick()
            if ctx.get(gate.toggle) != last:
                last = ctx.get(gate.toggle)
                changes.append(clock)

    sim = Simulator(gate)
    sim.add_clock(OSCILLATOR_PERIOD)
    sim.add_testbench(bench)
    sim.run()
    assert changes == [50, 100, 150]


@pytest.mark.parametrize("hz", [12_500_000, 500_000])
def test_an_oscillator_without_whole_microseconds_is_refused(hz):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)    # refused: never elaborated
        with pytest.raises(ValueError, match=f"{hz} Hz has no whole number of clocks"):
            OscillatorGate(hz)
        gc.collect()


@pytest.mark.parametrize("pci_period, expected", [(32e-9, [125, 125, 125]),
                                                  (15e-9, [267, 267, 266])])
def test_meter_counts_pci_clocks_of_each_gate(pci_period, expected):
    """A 4 us gate of the 25 MHz oscillator: 125 clocks of a 31.25 MHz PCI clock, each
    gate alike (the periods are commensurate: every change meets the same phase); at
    66.7 MHz 266.7 clocks a gate, counted 267, 267, 266 as the phase walks (800 clocks
    in 12 us: no clock lost or counted twice). 0 until the second change closes a whole
    gate."""
    m, meter = meter_in_pci()
    m.submodules.gate = gate = OscillatorGate(25_000_000, gate_log2=2)
    m.d.comb += meter.gate.eq(gate.toggle)
    counts = []

    async def bench(ctx):
        assert ctx.get(meter.count) == 0
        await ctx.changed(gate.toggle)
        await ctx.delay(100e-9)               # through the synchroniser: one change seen
        assert ctx.get(meter.count) == 0
        for _ in range(3):
            await ctx.changed(gate.toggle)
            await ctx.delay(100e-9)
            counts.append(ctx.get(meter.count))

    sim = Simulator(m)
    sim.add_clock(OSCILLATOR_PERIOD, domain="sync")
    sim.add_clock(pci_period, domain="pci")
    sim.add_testbench(bench)
    sim.run()
    assert counts == expected


def test_meter_reads_zero_once_the_gate_stops():
    """A gate toggled by hand every 3 us, then left: the count holds 100 (30 ns clocks)
    until 2**10 clocks pass without a change, then reads 0 (no measurement)."""
    m, meter = meter_in_pci()
    seen = {}

    async def bench(ctx):
        for _ in range(3):
            await ctx.delay(3e-6)
            ctx.set(meter.gate, 1 - ctx.get(meter.gate))
        await ctx.delay(200e-9)
        seen["measuring"] = ctx.get(meter.count)
        await ctx.delay(1023 * 30e-9 - 300e-9)       # 2**10 clocks after the last change
        seen["just before"] = ctx.get(meter.count)
        await ctx.delay(300e-9)
        seen["stopped"] = ctx.get(meter.count)

    sim = Simulator(m)
    sim.add_clock(30e-9, domain="pci")
    sim.add_testbench(bench)
    sim.run()
    assert seen == {"measuring": 100, "just before": 100, "stopped": 0}
