# SPDX-License-Identifier: BSD-2-Clause
"""The spy behind the CSR bank, as the host driver sees it: registers by name from
pcispy/spy/registers.py, a capture armed through them, counters read as _lo/_hi pairs, the
per-filter counters through fcount_select/_lo/_hi, the trace read through the BAR1
backend."""

import pytest

from amaranth.hdl import Module, DomainRenamer
from amaranth.lib import wiring
from amaranth.sim import Simulator

from pcispy.csr.bank import READ_LATENCY, CSRBank
from pcispy.core.tests.pci_host import BackendDriver
from pcispy.pci.bus import Command
from pcispy.board.registers import REGISTER_MAP
from pcispy.spy.counters import (FILTER_COUNTER_INIT, HISTOGRAM_BINS, FilterCounter,
                                 gap_bin, latency_bin)
from pcispy.spy.filters import IO_COMMANDS, command_set
from pcispy.spy.format import CaptureMode, RecordKind, TriggerSource
from pcispy.spy.spy import SpyUnit
from pcispy.spy.trigger import RecorderState

from pcispy.spy.tests.test_spy_waves import idle, transaction, finish
from pcispy.spy.tests.test_spy_capture import decode

pytestmark = pytest.mark.spy


class BankAccess:
    """Register accesses by name to the ``spy`` block of ``bank``, as the target makes
    them: a read takes :data:`READ_LATENCY` clocks, a write ``WRITE_CLOCKS`` (the
    request, and the clock the block's register takes it in)."""
    WRITE_CLOCKS = 2

    def __init__(self, ctx, bank):
        self.driver = BackendDriver(ctx, bank.access, read_latency=READ_LATENCY,
                                    write_latency=self.WRITE_CLOCKS - 1)

    async def write(self, name, value):
        await self.driver.write(REGISTER_MAP[f"spy.{name}"][0] // 4, value)

    async def read(self, name):
        return await self.driver.read(REGISTER_MAP[f"spy.{name}"][0] // 4)


def spy_behind_a_bank():
    """``(top, bank, spy)``: a 32-bit spy (32 trace slots) wired to a CSR bank, as the board
    wires it (:class:`~pcispy.spy.spy.SpyUnit`)."""
    top = Module()
    top.submodules.bank = bank = CSRBank(REGISTER_MAP)
    spy = SpyUnit(32, addr_bits=5)
    top.submodules.spy = DomainRenamer("pci")(spy)
    wiring.connect(top, bank.spy, spy.regs)
    return top, bank, spy


async def drive(ctx, spy, wave):
    """Put the clocks of ``wave`` on the spy's bus, one a clock, with ``own_claim`` where
    a clock has it (the board's target claimed that address phase: BAR0)."""
    for clock in wave:
        ctx.set(spy.own_claim, clock.get("own_claim", 0))
        for name, value in clock.items():
            if name != "own_claim":
                ctx.set(getattr(spy.bus, name), value)
        await ctx.tick("pci")


def strobe(name):
    """The value of spy.control that gives strobe ``name``."""
    return 1 << REGISTER_MAP["spy.control"][1].field(name).lsb


def count_clocks(spy):
    """A process giving the spy its timestamp: the clock count."""
    async def process(ctx):
        value = 0
        while True:
            ctx.set(spy.timestamp, value)
            await ctx.tick("pci")
            value += 1
    return process


def test_capture_through_the_register_bank():
    top, bank, spy = spy_behind_a_bank()
    wave = (idle(2) + transaction(Command.IO_WRITE, 0x70, [0x0A], be=0xE, devsel=4,
                                  latency=33) + idle(3) +
            transaction(Command.MEM_WRITE, 0x1000, [1, 2]) + idle(2) +
            transaction(Command.IO_READ, 0x71, [0x42], be=0xD, devsel=4, latency=39) +
            idle(4))
    got = {}

    async def bench(ctx):
        access = BankAccess(ctx, bank)
        write, read = access.write, access.read
        config = REGISTER_MAP["spy.config"][1]
        await write("config", CaptureMode.SUMMARY.value << config.field("mode").lsb |
                    TriggerSource.REGISTER.value << config.field("source").lsb)
        ctl = REGISTER_MAP["spy.filter0_control"][1]
        await write("filter0_control", 1 | IO_COMMANDS << ctl.field("commands").lsb)
        await write("filter0_address_lo", 0x70)
        await write("filter0_mask_lo", 0xFFFF_FFFE)
        await write("filter0_mask_hi", 0xFFFF_FFFF)
        await write("pre", 100)     # more than the 16 summaries 32 slots hold: refused
        await write("control", 1)   # arm (the strobe comes the clock after the write)
        await ctx.tick("pci")
        status = REGISTER_MAP["spy.status"][1]
        got["refused"] = status.decode(await read("status"))
        await write("pre", 0)
        await write("control", 1)       # arm
        await write("control", 4)       # the trigger register
        for clock in finish(wave):
            for name, value in clock.items():
                ctx.set(getattr(spy.bus, name), value)
            await ctx.tick("pci")
        await write("control", 2)   # stop
        await ctx.tick("pci").repeat(4)
        got["status"] = status.decode(await read("status"))
        got["count"] = await read("count")
        got["transactions"] = await read("transactions")
        got["bytes"] = (await read("bytes_lo"), await read("bytes_hi"))
        got["latency"] = (await read("latency_min"), await read("latency_max"),
                          await read("latency_sum_lo"))
        got["hits0"] = await read("hits0")
        # the trace through BAR1: records of 2 slots (8 words) from `start`
        start = await read("start")
        records = []
        for index in range(got["count"]):
            value = 0
            for w in range(8):
                ctx.set(spy.trace.addr, ((start + index) % 16) * 8 + w)
                ctx.set(spy.trace.valid, 1)
                await ctx.tick("pci")
                ctx.set(spy.trace.valid, 0)
                while not ctx.get(spy.trace.r_valid):
                    await ctx.tick("pci")
                value |= ctx.get(spy.trace.r_data) << (32 * w)
                await ctx.tick("pci")
            records.append(decode(value))
        got["records"] = records

    sim = Simulator(top)
    sim.add_clock(1e-6, domain="pci")
    sim.add_testbench(bench)
    sim.run()
    assert got["refused"]["pre_error"] == 1
    assert got["refused"]["state"] == RecorderState.IDLE.value
    assert got["status"]["done"] == 1 and got["status"]["pre_error"] == 0
    assert got["status"]["state"] == RecorderState.DONE.value
    assert got["transactions"] == 2 and got["hits0"] == 2
    assert got["bytes"] == (2, 0)
    assert got["latency"] == (33, 39, 72)
    kinds = [r["kind"] for r in got["records"]]
    assert kinds == [RecordKind.TRIGGER, RecordKind.SUMMARY, RecordKind.SUMMARY]
    assert [r["address"] for r in got["records"][1:]] == [0x70, 0x71]


def test_per_filter_counters_through_the_register_bank():
    # Two comparators (I/O at 0x70/0x71, memory writes) over a mixed waveform; the host's
    # reads of fcount_select/_lo/_hi.
    top, bank, spy = spy_behind_a_bank()
    wave = (idle(2) + transaction(Command.IO_WRITE, 0x70, [0x0A], be=0xE, devsel=4,
                                  latency=33) + idle(3) +
            transaction(Command.MEM_WRITE, 0x1000, [1, 2], be=0x0) + idle(2) +
            transaction(Command.IO_READ, 0x71, [0x42], be=0xD, devsel=4, latency=39) +
            idle(2) + transaction(Command.MEM_WRITE, 0x1040, [3], be=0x3) + idle(4))
    got = {}

    async def bench(ctx):
        access = BankAccess(ctx, bank)
        write, read = access.write, access.read
        ctl = REGISTER_MAP["spy.filter0_control"][1]
        commands = ctl.field("commands").lsb
        await write("config", CaptureMode.SUMMARY.value)
        await write("filter0_control", 1 | IO_COMMANDS << commands)
        await write("filter0_address_lo", 0x70)
        await write("filter0_mask_lo", 0xFFFF_FFFE)
        await write("filter0_mask_hi", 0xFFFF_FFFF)
        await write("filter1_control", 1 | command_set(Command.MEM_WRITE) << commands)
        for clock in finish(wave):
            for name, value in clock.items():
                ctx.set(getattr(spy.bus, name), value)
            await ctx.tick("pci")
        await ctx.tick("pci").repeat(64 + 8)   # every summary counted
        select = REGISTER_MAP["spy.fcount_select"][1]
        for f in (0, 1, 2):
            values = {}
            for counter in FilterCounter:
                await write("fcount_select", f << select.field("filter").lsb |
                            counter.value << select.field("counter").lsb)
                # The value follows two clocks after the write (a bus never reads sooner).
                await ctx.tick("pci")
                lo = await read("fcount_lo")
                values[counter.name.lower()] = lo | await read("fcount_hi") << 32
            got[f] = values
        got["combined"] = {name: await read(name) for name in ("transactions", "bytes_lo")}

    sim = Simulator(top)
    sim.add_clock(1e-6, domain="pci")
    sim.add_testbench(bench)
    sim.run()
    # I/O: a 1-byte write (first data at clock 33) and a 1-byte read (at clock 39).
    assert got[0]["transactions"] == 2 and got[0]["bytes"] == 2
    assert (got[0]["latency_min"], got[0]["latency_max"], got[0]["latency_sum"]) == (33, 39, 72)
    assert got[0]["data_phases"] == 2 and got[0]["retries"] == 0
    # Memory writes: 2 phases of 4 bytes and 1 of 2 bytes.
    assert (got[1]["transactions"], got[1]["data_phases"], got[1]["bytes"]) == (2, 3, 10)
    # Comparator 2 is disabled: it hits nothing.
    assert got[2] == {c.name.lower(): FILTER_COUNTER_INIT[c] for c in FilterCounter}
    # The comparators combine (any): the combined counters see all four.
    assert got["combined"] == {"transactions": 4, "bytes_lo": 12}
    assert got[0]["busy_clocks"] + got[1]["busy_clocks"] == \
        sum(1 for clock in wave if clock.get("frame") or clock.get("irdy"))


def test_counter_snapshot_holds_one_clock_while_counting_goes_on():
    """control.snapshot holds every counter register at one clock's values while the bus
    keeps running (a host reading the counters one by one over a UART); release shows the
    running counters again, which counted the whole time; a second snapshot while held
    takes new values. busy_clocks + idle_clocks, the clocks counted, tells the clocks apart
    exactly."""
    top, bank, spy = spy_behind_a_bank()
    first = finish(idle(2) + transaction(Command.MEM_WRITE, 0x1000, [1, 2]) + idle(3))
    later = finish(transaction(Command.MEM_WRITE, 0x1040, [3], be=0x3) + idle(2) +
                    transaction(Command.MEM_WRITE, 0x1080, [4, 5, 6]) + idle(3))
    control = REGISTER_MAP["spy.control"][1]
    status = REGISTER_MAP["spy.status"][1]
    snapshot, release = (1 << control.field(name).lsb for name in ("snapshot", "release"))
    got = {}

    async def bench(ctx):
        access = BankAccess(ctx, bank)
        write, read = access.write, access.read

        async def counters():
            clocks = (await read("busy_clocks_lo") | await read("busy_clocks_hi") << 32) + \
                     (await read("idle_clocks_lo") | await read("idle_clocks_hi") << 32)
            return {"transactions": await read("transactions"),
                    "bytes": await read("bytes_lo"), "clocks": clocks,
                    "held": status.decode(await read("status"))["held"]}

        await drive(ctx, spy, first)
        await ctx.tick("pci").repeat(8)          # the summary counted
        await write("control", snapshot)
        got["held"] = await counters()
        await drive(ctx, spy, later)
        await ctx.tick("pci").repeat(8)
        got["still_held"] = await counters()
        await write("control", snapshot)          # again while held: new values
        got["second"] = await counters()
        await write("control", release)
        await ctx.tick("pci")
        got["running"] = await counters()

    sim = Simulator(top)
    sim.add_clock(1e-6, domain="pci")
    sim.add_testbench(bench)
    sim.run()
    held, still, second, running = (got[k] for k in ("held", "still_held", "second", "running"))
    assert (held["transactions"], held["bytes"], held["held"]) == (1, 8, 1)
    assert still == held
    assert (second["transactions"], second["bytes"], second["held"]) == (3, 22, 1)
    # The two snapshots are `later`'s clocks, 8 waits, two rounds of counters() (7 reads
    # each) and the second snapshot's write apart.
    assert second["clocks"] - held["clocks"] == \
        len(later) + 8 + 2 * 7 * READ_LATENCY + BankAccess.WRITE_CLOCKS
    assert running["held"] == 0 and running["transactions"] == 3
    assert running["clocks"] > second["clocks"]


async def read_histograms(ctx, access):
    """``{"latency": [...], "gap": [...]}`` through hist_select and hist_data."""
    bins = {}
    for select, name in enumerate(("latency", "gap")):
        counts = []
        for index in range(HISTOGRAM_BINS):
            await access.write("hist_select", select | index << 8)
            await ctx.tick("pci")          # the bin's RAM read
            counts.append(await access.read("hist_data"))
        bins[name] = counts
    return bins


def _latency(clocks):
    """First-data latency of a transaction's clocks: the first TRDY# (with IRDY#) or STOP#."""
    return next(i for i, c in enumerate(clocks) if i and (c["trdy"] and c["irdy"] or c["stop"]))


@pytest.mark.parametrize("count_own", [0, 1])
def test_own_register_accesses_are_left_out_and_counted_apart(count_own):
    """The transactions the board's target claims on BAR0 (own_claim in the clock of their
    address phase) are in no counter, histogram, filter hit or per-filter counter: they
    count in own_transactions and their clocks in own_clocks, also back to back with the
    others (fast back-to-back: a transaction's summary comes in the next one's address
    phase). spy.counting.own = 1 counts them with the rest."""
    top, bank, spy = spy_behind_a_bank()
    others = [transaction(Command.MEM_WRITE, 0x1000, [1, 2]),
              transaction(Command.MEM_WRITE, 0x1040, [3], be=0x3),
              transaction(Command.MEM_READ, 0x2000, [9], latency=5)]
    own = [transaction(Command.MEM_READ, 0x8000_0010, [7]),
           transaction(Command.MEM_WRITE, 0x8000_0020, [5, 6]),
           transaction(Command.MEM_READ, 0x8000_0030, [8])]
    # W1 O1 W2 (back to back), idle, O2 W3 (back to back), idle, O3 alone, idle.
    parts = [("W", others[0]), ("O", own[0]), ("W", others[1]), ("-", idle(3)),
             ("O", own[1]), ("W", others[2]), ("-", idle(2)), ("O", own[2]),
             ("-", idle(4))]
    wave, starts = idle(2), []
    for kind, clocks in parts:
        if kind == "W":
            starts.append(len(wave))
        wave += [dict(c, own_claim=int(kind == "O" and i == 0)) for i, c in enumerate(clocks)]
    wave = finish(wave)
    got = {}

    async def bench(ctx):
        access = BankAccess(ctx, bank)
        write, read = access.write, access.read
        counting = REGISTER_MAP["spy.counting"][1]
        await write("counting", count_own << counting.field("own").lsb)
        await write("filter0_control", 1 | 0xFFFF << 16)   # every transaction: mask 0
        await write("control", strobe("clear"))
        while REGISTER_MAP["spy.status"][1].decode(await read("status"))["clearing"]:
            await ctx.tick("pci")
        await drive(ctx, spy, wave)
        await ctx.tick("pci").repeat(80)            # the per-filter counters' round
        await write("control", strobe("snapshot"))
        for name in ("transactions", "data_phases", "bytes_lo", "busy_clocks_lo",
                     "latency_sum_lo", "hits0", "own_transactions", "own_clocks_lo"):
            got[name] = await read(name)
        got["histograms"] = await read_histograms(ctx, access)
        await write("fcount_select", 0)              # filter 0, transactions
        await ctx.tick("pci").repeat(2)
        got["per_filter"] = await read("fcount_lo")

    sim = Simulator(top)
    sim.add_clock(1e-6, domain="pci")
    sim.add_process(count_clocks(spy))
    sim.add_testbench(bench)
    sim.run()
    counted = others + own if count_own else others
    left_out = [] if count_own else own
    latencies = [_latency(clocks) for clocks in counted]
    assert got["transactions"] == got["hits0"] == got["per_filter"] == len(counted)
    assert got["data_phases"] == sum(sum(c["irdy"] & c["trdy"] for c in clocks)
                                     for clocks in counted)
    assert got["bytes_lo"] == 4 * 2 + 2 + 4 + (4 + 8 + 4 if count_own else 0)
    assert got["busy_clocks_lo"] == sum(len(clocks) for clocks in counted)
    assert got["own_transactions"] == len(left_out)
    assert got["own_clocks_lo"] == sum(len(clocks) for clocks in left_out)
    assert got["latency_sum_lo"] == sum(latencies)
    want_latency = [0] * HISTOGRAM_BINS
    for latency in latencies:
        want_latency[latency_bin(latency)] += 1
    assert got["histograms"]["latency"] == want_latency
    if not count_own:
        want_gap = [0] * HISTOGRAM_BINS
        for gap in (b - a for a, b in zip(starts, starts[1:])):
            want_gap[gap_bin(gap)] += 1
        assert got["histograms"]["gap"] == want_gap
    assert sum(got["histograms"]["gap"]) == len(counted) - 1


def test_histograms_are_held_with_the_counters():
    """control.snapshot holds hist_data with the counters: while held, more transactions
    change neither (the latency histogram has as many entries as `transactions` says);
    a second snapshot and the release show everything, nothing lost."""
    top, bank, spy = spy_behind_a_bank()
    first = [transaction(Command.MEM_WRITE, 0x1000, [1], latency=latency)
             for latency in (2, 3, 3)]
    later = [transaction(Command.MEM_WRITE, 0x1000, [1], latency=latency)
             for latency in (3, 7, 2, 3)]

    def wave(transactions):
        clocks = []
        for clocks_of_one in transactions:
            clocks += clocks_of_one + idle(2)
        return finish(clocks + idle(4))

    got = {}

    async def bench(ctx):
        access = BankAccess(ctx, bank)
        read = access.read

        async def reading():
            return {"transactions": await read("transactions"),
                    "latency": (await read_histograms(ctx, access))["latency"]}

        await drive(ctx, spy, wave(first))
        await access.write("control", strobe("snapshot"))
        await drive(ctx, spy, wave(later))
        got["held"] = await reading()
        await access.write("control", strobe("snapshot"))
        got["second"] = await reading()
        await access.write("control", strobe("release"))
        await drive(ctx, spy, wave(later[:1]))
        got["running"] = await reading()

    sim = Simulator(top)
    sim.add_clock(1e-6, domain="pci")
    sim.add_testbench(bench)
    sim.run()

    def histogram(latencies):
        bins = [0] * HISTOGRAM_BINS
        for latency in latencies:
            bins[latency] += 1
        return bins
    assert got["held"] == {"transactions": 3, "latency": histogram([2, 3, 3])}
    assert got["second"] == {"transactions": 7, "latency": histogram([2, 3, 3, 3, 7, 2, 3])}
    assert got["running"] == {"transactions": 8,
                              "latency": histogram([2, 3, 3, 3, 7, 2, 3, 3])}
