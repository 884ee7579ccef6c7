# SPDX-License-Identifier: BSD-2-Clause
"""Filters (every mode: value/mask, command set, address space, any/all, include/exclude),
counters and histograms, and the record format declarations."""

import pytest

from amaranth.sim import Simulator

from pcispy.pci.bus import Command
from pcispy.spy.filters import (FilterSet, FilterCombine, IO_COMMANDS,
                                MEMORY_COMMANDS, CONFIG_COMMANDS,
                                command_set)
from pcispy.spy.counters import latency_bin, gap_bin, HISTOGRAM_BINS
from pcispy.spy.format import (record_layouts, record_fields, RecordKind,
                               RAW_RECORD_BITS, SUMMARY_RECORD_BITS, SLOT_BITS,
                               CaptureMode)

from pcispy.spy.tests.test_spy_waves import idle, transaction, finish
from pcispy.spy.tests.test_spy_capture import Bench, comparator

pytestmark = pytest.mark.spy

OFF = comparator(enable=0)


def filter_verdicts(comparators, combine, cases):
    """``[(match, hits)]`` of a FilterSet for each ``(address, command)`` case."""
    dut = FilterSet(4)
    results = []

    async def bench(ctx):
        for i, comp in enumerate(list(comparators) + [OFF] * (4 - len(comparators))):
            ctx.set(dut.comparators[i], comp)
        ctx.set(dut.combine, combine)
        for address, command in cases:
            ctx.set(dut.address, address)
            ctx.set(dut.command, command)
            await ctx.delay(1e-9)
            results.append((ctx.get(dut.match), ctx.get(dut.hits)))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return results


CASES = [(0x70, Command.IO_WRITE), (0x71, Command.IO_READ), (0x72, Command.IO_READ),
         (0x70, Command.MEM_READ), (0x1_0000_0070, Command.MEM_WRITE),
         (0x70, Command.CONFIG_READ)]


def test_no_comparator_passes_everything():
    assert [m for m, _ in filter_verdicts([], FilterCombine.ANY, CASES)] == [1] * 6


def test_value_mask_and_address_space():
    # io:0x70/0xfffe as in `pcispy capture --filter io:0x70/0xfffe`
    rtc = comparator(0x70, 0xFFFF_FFFF_FFFF_FFFE, IO_COMMANDS)
    assert filter_verdicts([rtc], FilterCombine.ANY, CASES) == [
        (1, 1), (1, 1), (0, 0), (0, 0), (0, 0), (0, 0)]
    # the same value in memory space; the 64-bit mask tells 0x70 from 0x1_0000_0070
    mem = comparator(0x70, 0xFFFF_FFFF_FFFF_FFFF, MEMORY_COMMANDS)
    assert [m for m, _ in filter_verdicts([mem], FilterCombine.ANY, CASES)] == \
        [0, 0, 0, 1, 0, 0]
    low_only = comparator(0x70, 0xFFFF_FFFF, MEMORY_COMMANDS)
    assert [m for m, _ in filter_verdicts([low_only], FilterCombine.ANY, CASES)] == \
        [0, 0, 0, 1, 1, 0]
    cfg = comparator(0, 0, CONFIG_COMMANDS)
    assert [m for m, _ in filter_verdicts([cfg], FilterCombine.ANY, CASES)] == \
        [0, 0, 0, 0, 0, 1]


def test_command_set():
    reads = comparator(commands=command_set(Command.IO_READ, Command.MEM_READ))
    assert [m for m, _ in filter_verdicts([reads], FilterCombine.ANY, CASES)] == \
        [0, 1, 1, 1, 0, 0]


def test_any_and_all():
    a = comparator(0x70, 0xFF)                    # low byte 0x70
    b = comparator(commands=IO_COMMANDS)          # I/O
    any_ = filter_verdicts([a, b], FilterCombine.ANY, CASES)
    all_ = filter_verdicts([a, b], FilterCombine.ALL, CASES)
    assert [h for _, h in any_] == [0b11, 0b10, 0b10, 0b01, 0b01, 0b01]
    assert [m for m, _ in any_] == [1, 1, 1, 1, 1, 1]
    assert [m for m, _ in all_] == [1, 0, 0, 0, 0, 0]


def test_exclude_vetoes():
    everything_io = comparator(commands=IO_COMMANDS)
    not_71 = comparator(0x71, 0xFFFF_FFFF, exclude=1)
    assert [m for m, _ in filter_verdicts([everything_io, not_71], FilterCombine.ANY,
                                          CASES)] == [1, 0, 1, 0, 0, 0]
    # exclude alone: everything but the excluded passes
    assert [m for m, _ in filter_verdicts([not_71], FilterCombine.ALL, CASES)] == \
        [1, 0, 1, 1, 1, 1]


def test_filter_selects_counted_transactions_and_histograms():
    # Three RTC transactions (two I/O writes to 0x70 with latency 33/31, one read of 0x71
    # with latency 39), memory traffic in between that the filter excludes.
    wave = idle(2)
    starts = []
    plan = [(Command.IO_WRITE, 0x70, 33), (Command.MEM_WRITE, 0x2000, None),
            (Command.IO_READ, 0x71, 39), (Command.MEM_READ, 0x3000, None),
            (Command.IO_WRITE, 0x70, 31)]
    for command, address, latency in plan:
        starts.append(len(wave))
        wave += transaction(command, address, [0x5A, 0xA5] if latency is None else [0x11],
                            devsel=4 if latency else 1, latency=latency, be=0x0) + idle(3)
    bench = Bench(addr_bits=6)
    rtc = comparator(0x70, 0xFFFF_FFFE, IO_COMMANDS)
    mem = comparator(0, 0, MEMORY_COMMANDS)
    res = bench.run(wave, config={"mode": CaptureMode.SUMMARY}, comparators=[rtc, mem])
    # The memory comparator is enabled, so it is included: combine ANY selects all five.
    assert res["counters"].transactions == 5
    res = bench.run(wave, config={"mode": CaptureMode.SUMMARY},
                    comparators=[rtc, dict(mem, exclude=1)])
    c = res["counters"]
    assert c.transactions == 3 and c.data_phases == 3 and c.bytes == 12
    assert (c.latency_min, c.latency_max, c.latency_sum) == (31, 39, 33 + 39 + 31)
    assert (c.hits[0], c.hits[1]) == (3, 2)
    assert c.target_wait == (33 - 1) + (39 - 1) + (31 - 1)
    summaries = [r for r in res["records"] if r["kind"] == RecordKind.SUMMARY]
    assert [r["address"] for r in summaries] == [0x70, 0x71, 0x70]


def test_histograms_bins():
    assert [latency_bin(x) for x in (0, 39, 62, 63, 500)] == [0, 39, 62, 63, 63]
    assert [gap_bin(x) for x in (0, 1, 2, 3, 4, 32000)] == [0, 1, 2, 2, 3, 15]
    assert HISTOGRAM_BINS == 64


def test_histograms_in_hardware():
    from pcispy.spy.spy import Spy
    # Four writes, latencies 1, 1, 5, 70, spaced so the start-to-start gaps land in
    # different log2 bins.
    wave = idle(2)
    starts = []
    for latency, pause in ((1, 8), (1, 8), (5, 32), (70, 3)):
        starts.append(len(wave))
        wave += transaction(Command.MEM_WRITE, 0x40, [1], devsel=1, latency=latency)
        wave += idle(pause)
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    spy = Spy(32, addr_bits=5)
    bins = {}

    async def bench(ctx):
        for i in range(spy.filters):
            ctx.set(spy.comparators[i], OFF)
        ctx.set(spy.clear, 1)
        await ctx.tick()
        ctx.set(spy.clear, 0)
        await ctx.tick()            # the histograms take the clear a clock late
        while ctx.get(spy.status.clearing):
            await ctx.tick()
        for t, clock in enumerate(finish(wave + idle(3))):
            ctx.set(spy.timestamp, t)
            for name, value in clock.items():
                ctx.set(getattr(spy.bus, name), value)
            await ctx.tick()
        for select in (0, 1):
            ctx.set(spy.hist_select, select)
            for b in range(HISTOGRAM_BINS):
                ctx.set(spy.hist_addr, b)
                await ctx.tick().repeat(2)      # the bin, two clocks after its address
                if ctx.get(spy.hist_data):
                    bins[(select, b)] = ctx.get(spy.hist_data)

    sim = Simulator(spy)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    want = {}
    for latency in (1, 1, 5, 70):
        want[(0, latency_bin(latency))] = want.get((0, latency_bin(latency)), 0) + 1
    for gap in gaps:
        want[(1, gap_bin(gap))] = want.get((1, gap_bin(gap)), 0) + 1
    assert bins == want


def test_record_fields_cover_each_layout_exactly():
    for width in (32, 64):
        for kind, layout in record_layouts(width).items():
            fields = record_fields(layout)
            assert fields[0] == ("kind", 0, 4)
            used = sorted((offset, bits) for _, offset, bits in fields)
            for (o1, b1), (o2, _) in zip(used, used[1:]):
                assert o1 + b1 <= o2, f"{kind}: fields overlap"
            size = RAW_RECORD_BITS if kind is RecordKind.RAW else \
                SUMMARY_RECORD_BITS if kind is RecordKind.SUMMARY else SLOT_BITS
            assert layout.size == size
            assert used[-1][0] + used[-1][1] <= size
    raw64 = dict((n, (o, w)) for n, o, w in record_fields(record_layouts(64)[RecordKind.RAW]))
    assert raw64["bus.ad_hi"][1] == 32 and "bus.ack64" in raw64
    names = [n for n, _, _ in record_fields(record_layouts()[RecordKind.SUMMARY])]
    assert names[:4] == ["kind", "timestamp", "address", "command"]


def test_counters_of_every_ending_and_clear():
    from pcispy.pci.bus import Termination
    wave = idle(2)
    plan = [dict(ending="completion", initiator_waits=[1, 0, 2]),
            dict(ending="retry"),
            dict(ending="disconnect_data", stop_phase=0),
            dict(ending="disconnect_nodata", stop_phase=2),
            dict(ending="target_abort", latency=3),
            dict(ending="master_abort")]
    for kwargs in plan:
        wave += transaction(Command.MEM_WRITE, 0x40, [1, 2, 3], devsel=1, be=0x3,
                            **kwargs) + idle(2)
    res = Bench().run(wave, config={"mode": CaptureMode.SUMMARY})
    c = res["counters"]
    sums = [r for r in res["records"] if r["kind"] == RecordKind.SUMMARY]
    assert [Termination(r["termination"]) for r in sums] == [
        Termination.COMPLETION, Termination.RETRY, Termination.DISCONNECT_DATA,
        Termination.DISCONNECT_NODATA, Termination.TARGET_ABORT, Termination.MASTER_ABORT]
    assert (c.transactions, c.retries, c.disconnects, c.target_aborts, c.master_aborts) == \
        (6, 1, 2, 1, 1)
    assert c.data_phases == 3 + 0 + 1 + 2 + 0 + 0
    assert c.bytes == 2 * c.data_phases           # C/BE# 0b0011: two bytes a phase
    assert c.initiator_wait == sum(r["initiator_wait"] for r in sums) == 3
    assert c.target_wait == sum(r["target_wait"] for r in sums)
    assert c.latency_sum == sum(r["latency"] for r in sums[:5])   # not the master abort
    busy = sum(1 for clock in wave if clock.get("frame") or clock.get("irdy"))
    assert c.busy_clocks == busy

    # clear zeroes everything (latency_min back to its "none yet" value)
    from amaranth.sim import Simulator
    from pcispy.spy.counters import Counters
    dut = Counters(4)

    async def bench(ctx):
        ctx.set(dut.busy, 1)
        await ctx.tick().repeat(3)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        ctx.set(dut.busy, 0)
        values = ctx.get(dut.values)
        assert (values.busy_clocks, values.idle_clocks, values.latency_min) == (0, 0, 0xFFFF)
        assert ctx.get(dut.clearing) == 1
        # The histograms take HISTOGRAM_BINS + 1 clocks, the per-filter counters a round.
        clocks = max(HISTOGRAM_BINS + 1, dut.per_filter.clear_clocks)
        await ctx.tick().repeat(clocks - 1)
        assert ctx.get(dut.clearing) == 1
        await ctx.tick()
        assert ctx.get(dut.clearing) == 0
        assert ctx.get(dut.values).idle_clocks == clocks

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
