# SPDX-License-Identifier: BSD-2-Clause
"""The whole spy: raw capture and idle compression, summary capture, triggers of every
kind, pre-trigger, ring mode, stop after N, overrun (exact lost counts and event records),
and both trace memories (block RAM and the external SRAM model)."""

import pytest

from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from pcispy.pci.bus import Command, Termination
from pcispy.spy.format import (RecordKind, TriggerSource, CaptureMode, record_layouts,
                               record_fields, MAX_DELTA)
from pcispy.spy.filters import IO_COMMANDS, ALL_COMMANDS, MEMORY_COMMANDS
from pcispy.spy.spy import Spy
from pcispy.spy.trigger import RecorderState
from pcispy.sim.bfm.sram import AsyncSRAM

from pcispy.spy.tests.test_spy_waves import idle, transaction, finish

pytestmark = pytest.mark.spy


def decode(value, width=32):
    """One record (an int) into ``{field: value}`` through format.record_fields."""
    kind = RecordKind(value & 0xF)
    layout = record_layouts(width)[kind]
    fields = {name: (value >> offset) & ((1 << bits) - 1)
              for name, offset, bits in record_fields(layout)}
    fields["kind"] = kind
    return fields


def comparator(address=0, mask=0, commands=ALL_COMMANDS, exclude=0, enable=1):
    return {"enable": enable, "exclude": exclude, "commands": commands, "address": address,
            "mask": mask}


class Bench:
    """A Spy fed with a waveform and a trigger input level per clock, watched clock by
    clock (its trigger output and state), then read out like the host would: the status,
    every segment's table entry and records. ``pulse_clocks``: the trigger output's
    pulse (the Spy's default when None)."""
    def __init__(self, *, memory="bram", addr_bits=6, fifo_depth=8, rules=4, width=32,
                 sram_data_bits=32, pulse_clocks=None):
        self.width = width
        pulse = {} if pulse_clocks is None else {"trigger_pulse_clocks": pulse_clocks}
        self.spy = Spy(width, rules=rules, memory=memory, addr_bits=addr_bits,
                       fifo_depth=fifo_depth, sram_data_bits=sram_data_bits, **pulse)
        self.top = Module()
        self.top.submodules.spy = self.spy
        self.sram = None
        if memory == "sram":
            pins = self.spy.sram
            self.sram = sram = AsyncSRAM(self.spy._trace.sram_addr_bits, sram_data_bits)
            self.top.submodules.sram = sram
            # The pads: active-low controls, and the data bus resolved between two drivers.
            self.top.d.comb += [
                sram.a.eq(pins.a), sram.ce_n.eq(~pins.ce), sram.we_n.eq(~pins.we),
                sram.oe_n.eq(~pins.oe), sram.d_i.eq(pins.d.o),
                pins.d.i.eq(sram.d_o),
            ]
            # Clocks in which both sides drive the data pins.
            self.fights = Signal(16)
            with self.top.If(pins.d.oe & sram.d_oe):
                self.top.d.sync += self.fights.eq(self.fights + 1)

    def run(self, clocks, *, config=None, comparators=(), strobes=None, violations=None,
            read=True, stop=True, jumps=None, pin=None, after=0):
        """Arm, feed ``clocks`` (wave clock ``i`` with timestamp 2 + i) and read the trace
        back. ``strobes[i]``: "trigger" or "stop" in wave clock ``i``; ``pin[i]``: the
        trigger input's level from wave clock ``i`` on; ``jumps[i]``: the timestamp skips
        that many clocks before wave clock ``i`` (a long idle bus, cheaply); ``after``
        idle clocks follow the wave before the stop (if ``stop``)."""
        spy = self.spy
        config = dict({"mode": CaptureMode.RAW, "source": TriggerSource.IMMEDIATE,
                       "ring": 0, "idle_compress": 0, "raw_select": 0, "combine": 0,
                       "latency_timer": 0,
                       "pre": 0, "post": 0, "violation_mask": 0xF}, **(config or {}))
        strobes = strobes or {}
        violations = violations or {}
        pin = pin or {}
        clocks = finish(list(clocks) + idle(after), self.width)
        result = {"out": [], "state": []}

        jumps = jumps or {}
        now = [0]

        async def tick(ctx):
            await ctx.tick()
            now[0] += 1
            ctx.set(spy.timestamp, now[0])

        async def bench(ctx):
            ctx.set(spy.config, config)
            for i, comp in enumerate(list(comparators) + [comparator(enable=0)] *
                                     (spy.filters - len(comparators))):
                ctx.set(spy.comparators[i], comp)
            ctx.set(spy.bus, finish(idle(1), self.width)[0])
            await tick(ctx)
            ctx.set(spy.arm, 1)
            await tick(ctx)
            ctx.set(spy.arm, 0)
            level = 0
            for index, clock in enumerate(clocks):
                if index in jumps:
                    now[0] += jumps[index]
                    ctx.set(spy.timestamp, now[0])
                for name, value in clock.items():
                    ctx.set(getattr(spy.bus, name), value)
                level = pin.get(index, level)
                ctx.set(spy.trigger_in, level)
                for name in ("trigger", "stop"):
                    ctx.set(getattr(spy, name), strobes.get(index) == name)
                ctx.set(spy.violation, violations.get(index, 0))
                result["out"].append(ctx.get(spy.trigger_out))
                result["state"].append(ctx.get(spy.status.state))
                await tick(ctx)
            ctx.set(spy.trigger, 0)
            ctx.set(spy.violation, 0)
            if stop:
                ctx.set(spy.stop, 1)
                await tick(ctx)
                ctx.set(spy.stop, 0)
            for _ in range(500):
                if ctx.get(spy.status.done):
                    break
                await tick(ctx)
            status = ctx.get(spy.status)
            result["status"] = st = {name: getattr(status, name) for name in
                                     ("state", "done", "pre_error", "segment_error",
                                      "capacity", "start", "count", "trigger_index",
                                      "trigger_timestamp", "lost", "overruns", "segment")}
            result["counters"] = ctx.get(spy.counters)
            if not read:
                return
            # The segment table (finished segments), then the segment in progress.
            entries = []
            for index in range(st["segment"]):
                ctx.set(spy.segment_select, index)
                await tick(ctx)
                await tick(ctx)         # the entry shows two clocks after the select
                entry = ctx.get(spy.segment_entry)
                entries.append({name: getattr(entry, name) for name in
                                ("start", "count", "trigger_index", "trigger_timestamp")})
            entries.append({name: st[name] for name in
                            ("start", "count", "trigger_index", "trigger_timestamp")})
            result["entries"] = entries
            slots = 2 if config["mode"] == CaptureMode.SUMMARY else 1
            size = st["capacity"] >> config.get("segments_log2", 0)
            segments = []
            for entry in entries if not (st["pre_error"] or st["segment_error"]) else []:
                base = entry["start"] - entry["start"] % size
                records = []
                for k in range(entry["count"]):
                    index = base + (entry["start"] - base + k) % size
                    records.append(await self._read(ctx, tick, index, slots))
                segments.append(records)
            result["segments"] = segments
            result["records"] = [record for part in segments for record in part]
            if self.sram is not None:
                result["sram_errors"] = ctx.get(self.sram.errors)
                result["sram_fights"] = ctx.get(self.fights)

        sim = Simulator(self.top)
        sim.add_clock(1e-6)
        sim.add_testbench(bench)
        sim.run()
        return result

    async def _read(self, ctx, tick, index, slots):
        """Record ``index`` through the BAR1 backend (request with valid/ready, then
        r_valid), decoded."""
        spy = self.spy
        per_word = self.width // 32          # 32-bit words per backend word
        value = 0
        for w in range(4 * slots // per_word):
            ctx.set(spy.trace.addr, (index * slots * 4) // per_word + w)
            ctx.set(spy.trace.valid, 1)
            while not ctx.get(spy.trace.ready):
                await tick(ctx)
            await tick(ctx)
            ctx.set(spy.trace.valid, 0)
            while not ctx.get(spy.trace.r_valid):
                await tick(ctx)
            value |= ctx.get(spy.trace.r_data) << (self.width * w)
            await tick(ctx)
        return decode(value, self.width)


def raw_times(records):
    """Absolute clocks of raw records, from the deltas, relative to the first."""
    times, t = [], 0
    for i, rec in enumerate(records):
        if i:
            t += rec["delta"]
        times.append(t)
    return times


def test_raw_capture_every_clock():
    wave = idle(2) + transaction(Command.MEM_WRITE, 0x1000, [0xA, 0xB]) + idle(2)
    res = Bench().run(wave)
    recs = res["records"]
    st = res["status"]
    # arm at timestamp 1; clocks of the wave from timestamp 2 until the stop
    assert st["lost"] == 0 and st["state"] == RecorderState.DONE
    raws = [r for r in recs if r["kind"] == RecordKind.RAW]
    assert len(raws) == len(wave)
    assert all(r["delta"] == 1 for r in raws)
    assert raws[0]["trigger"] == 1 and sum(r["trigger"] for r in raws) == 1
    frames = [r["bus.frame"] for r in raws]
    assert frames == [c.get("frame", 0) for c in wave]
    assert raws[2]["bus.ad"] == 0x1000 and raws[2]["bus.cbe"] == Command.MEM_WRITE.value


def test_idle_compression_deltas():
    wave = (idle(2) + transaction(Command.MEM_WRITE, 0x10, [1]) + idle(30) +
            transaction(Command.MEM_READ, 0x20, [2]) + idle(5))
    res = Bench().run(wave, config={"idle_compress": 1})
    raws = [r for r in res["records"] if r["kind"] == RecordKind.RAW]
    # Stored: the first clock (trigger), the 3 clocks of the write and the first idle after
    # (PAR), the 3 clocks of the read and the idle after.
    busy = [r["bus.frame"] | r["bus.irdy"] for r in raws]
    assert busy == [0, 1, 1, 1, 0, 1, 1, 1, 0]
    assert [r["delta"] for r in raws] == [1, 2, 1, 1, 1, 30, 1, 1, 1]
    # Interrupt lines are not data: an INTA# edge on an idle bus is kept.
    wave = idle(3) + idle(3, inta=1) + idle(3)
    res = Bench().run(wave, config={"idle_compress": 1})
    raws = [r for r in res["records"] if r["kind"] == RecordKind.RAW]
    assert [(r["bus.inta"], r["delta"]) for r in raws] == [(0, 1), (1, 3), (1, 1), (0, 2),
                                                            (0, 1)]


def test_wrap_event_when_delta_overflows():
    wave = idle(1) + transaction(Command.MEM_WRITE, 0x10, [1]) + idle(10) + \
        transaction(Command.MEM_WRITE, 0x20, [2])
    # The bus stays idle for MAX_DELTA more clocks after the first idle ones.
    res = Bench().run(wave, config={"idle_compress": 1}, jumps={8: MAX_DELTA})
    kinds = [r["kind"] for r in res["records"]]
    assert kinds.count(RecordKind.WRAP) == 1
    i = kinds.index(RecordKind.WRAP)
    wrap, before, after = res["records"][i], res["records"][i - 1], res["records"][i + 1]
    assert before["bus.frame"] == 0 and before["delta"] == 1   # the idle after the write
    assert after["bus.ad"] == 0x20 and after["bus.frame"] == 1
    # timestamps: arm 1, wave clock k at 2 + k (+ MAX_DELTA from clock 8 on); the idle after
    # the write is clock 4 -> 6; at clock 8 the delta would be 10 + MAX_DELTA - 6: the wrap
    # is written there; the address phase is clock 14 -> 16 + MAX_DELTA.
    assert wrap["timestamp"] == 10 + MAX_DELTA
    assert after["delta"] == 6


def test_summary_capture_with_filter_and_counters():
    wave = (idle(2) + transaction(Command.IO_WRITE, 0x70, [0x0A], be=0xE, devsel=4, latency=33) +
            idle(3) + transaction(Command.MEM_WRITE, 0x1000, [1, 2, 3], devsel=1) + idle(2) +
            transaction(Command.IO_READ, 0x71, [0x42], be=0xD, devsel=4, latency=39) +
            idle(2) + transaction(Command.IO_WRITE, 0x70, [0x0B], ending="retry") + idle(4))
    res = Bench().run(wave, config={"mode": CaptureMode.SUMMARY},
                      comparators=[comparator(0x70, ~1 & 0xFFFF_FFFF, IO_COMMANDS)])
    recs = res["records"]
    assert [r["kind"] for r in recs] == [RecordKind.TRIGGER] + [RecordKind.SUMMARY] * 3
    sums = recs[1:]
    assert [(r["address"], r["command"], r["data_phases"], r["latency"], r["termination"],
             r["filters"]) for r in sums] == [
        (0x70, Command.IO_WRITE.value, 1, 33, Termination.COMPLETION.value, 1),
        (0x71, Command.IO_READ.value, 1, 39, Termination.COMPLETION.value, 1),
        (0x70, Command.IO_WRITE.value, 0, 2, Termination.RETRY.value, 1)]
    assert sums[0]["first_be"] == 0xE and sums[1]["first_data"] == 0x42
    c = res["counters"]
    assert (c.transactions, c.data_phases, c.bytes, c.retries) == (3, 2, 2, 1)
    assert (c.latency_sum, c.latency_min, c.latency_max) == (33 + 39 + 2, 2, 39)
    assert c.hits[0] == 3
    assert c.busy_clocks + c.idle_clocks >= len(wave)
    busy = sum(1 for clk in wave if clk.get("frame") or clk.get("irdy"))
    assert c.busy_clocks == busy


@pytest.mark.parametrize("source", ["filter", "register", "violation"])
def test_trigger_sources_with_pre_trigger(source):
    # Six single writes; the trigger comes with the fourth. Pre-trigger depth 2.
    wave = idle(1)
    starts = []
    for i in range(6):
        starts.append(len(wave))
        wave += transaction(Command.MEM_WRITE, 0x100 * (i + 1), [i], devsel=1) + idle(2)
    config = {"mode": CaptureMode.SUMMARY, "pre": 2}
    comparators, strobes, violations = [], {}, {}
    if source == "filter":
        config["source"] = TriggerSource.FILTER
        comparators = [comparator(0x400, 0xFFFF_FFFF)]
    elif source == "register":
        config["source"] = TriggerSource.REGISTER
        strobes = {starts[3]: "trigger"}
    else:
        config["source"] = TriggerSource.VIOLATION
        config["violation_mask"] = 0b0100
        violations = {starts[3]: 0b0110, starts[1]: 0b0001}
    res = Bench().run(wave, config=config, comparators=comparators, strobes=strobes,
                      violations=violations)
    recs = res["records"]
    kinds = [r["kind"] for r in recs]
    st = res["status"]
    if source == "filter":
        # Only the matching transaction is stored: trigger event then its summary.
        assert kinds == [RecordKind.TRIGGER, RecordKind.SUMMARY]
        assert recs[1]["address"] == 0x400
        assert recs[0]["timestamp"] == 1 + 1 + starts[3]
        return
    addresses = [r["address"] for r in recs if r["kind"] == RecordKind.SUMMARY]
    if source == "register":
        # pre: summaries 2 and 3 (the 4th ends after the trigger), then the trigger, 4, 5, 6
        assert kinds[2] == RecordKind.TRIGGER
        assert addresses == [0x200, 0x300, 0x400, 0x500, 0x600]
        assert recs[2]["source"] == TriggerSource.REGISTER.value
    else:
        # rule 0 is masked out: no event for it; of rules 1 and 2 (with the 4th address
        # phase) only 2 is enabled. The event waits for the 4th summary (it has priority).
        assert kinds[2:5] == [RecordKind.TRIGGER, RecordKind.SUMMARY, RecordKind.VIOLATION]
        assert recs[4]["rules"] == 0b0100 and recs[4]["clocks"] == 1
        assert recs[4]["timestamp"] == 2 + starts[3]
        assert addresses == [0x200, 0x300, 0x400, 0x500, 0x600]
    assert st["trigger_timestamp"] == 2 + starts[3]
    assert (st["trigger_index"] - st["start"]) % st["capacity"] == 2


def test_raw_trigger_register_marks_its_clock_and_post_count_stops():
    wave = idle(20)
    res = Bench().run(wave, config={"source": TriggerSource.REGISTER, "pre": 3, "post": 4},
                      strobes={10: "trigger"}, stop=False)
    recs = res["records"]
    st = res["status"]
    assert st["state"] == RecorderState.DONE and st["count"] == 7
    assert [r["trigger"] for r in recs] == [0, 0, 0, 1, 0, 0, 0]
    assert st["trigger_timestamp"] == 12


def test_stop_on_full_and_ring_mode():
    # Capacity 64 raw records (addr_bits 6); 100 clocks of bus.
    wave = idle(100, inta=0)
    for i, clock in enumerate(wave):
        clock["ad"] = i
    res = Bench().run(wave)
    st = res["status"]
    assert st["count"] == 64 and st["lost"] == 0
    # the first record is the wave's first clock (the trigger fires on the first clock armed)
    assert [r["bus.ad"] for r in res["records"]] == list(range(64))
    res = Bench().run(wave, config={"ring": 1})
    st = res["status"]
    assert st["count"] == 64
    ads = [r["bus.ad"] for r in res["records"]]
    # the last 64 records: the wave's last 64 clocks
    assert ads == list(range(36, 100))


def test_pre_trigger_too_large_is_refused():
    res = Bench().run(idle(4), config={"pre": 64}, read=False)
    assert res["status"]["pre_error"] == 1
    assert res["status"]["state"] == RecorderState.IDLE


@pytest.mark.parametrize("data_bits", [32, 128])
def test_sram_overrun_is_never_silent(data_bits):
    # Raw capture of every clock into an SRAM that takes 3 clocks per word and one per
    # slot: 13 (32-bit) or 4 (128-bit) clocks per record. Records are dropped; every drop
    # is accounted for.
    bench = Bench(memory="sram", sram_data_bits=data_bits, fifo_depth=4)
    wave = idle(40)
    for i, clock in enumerate(wave):
        clock["ad"] = 0x1000 + i
    res = bench.run(wave, config={"ring": 1})
    st = res["status"]
    recs = res["records"]
    assert res["sram_errors"] == 0 and res["sram_fights"] == 0
    raws = [r for r in recs if r["kind"] == RecordKind.RAW]
    overruns = [r for r in recs if r["kind"] == RecordKind.OVERRUN]
    assert st["lost"] > 0 and len(overruns) == st["overruns"] > 0
    # Every clock of the capture (the wave) is stored or counted lost, and the OVERRUN
    # events in the trace add up to the total.
    assert len(raws) + st["lost"] == len(wave)
    assert sum(r["lost"] for r in overruns) == st["lost"]
    # Between two stored clocks, the AD gap is exactly the loss reported in between.
    previous, lost_since = None, 0
    for r in recs:
        if r["kind"] == RecordKind.OVERRUN:
            lost_since += r["lost"]
        elif previous is not None:
            assert r["bus.ad"] - previous - 1 == lost_since
            previous, lost_since = r["bus.ad"], 0
        else:
            previous = r["bus.ad"]
    assert recs[0]["bus.ad"] == 0x1000


def test_sram_memory_holds_a_slow_capture():
    # With idle compression the SRAM keeps up with sparse traffic: nothing is lost and the
    # records read back through the SRAM model are exact.
    wave = idle(1)
    for i in range(3):
        wave += transaction(Command.MEM_WRITE, 0x100 * (i + 1), [i]) + idle(24)
    res = Bench(memory="sram", sram_data_bits=32, fifo_depth=8).run(
        wave, config={"idle_compress": 1})
    st = res["status"]
    assert st["lost"] == 0 and res["sram_errors"] == 0 and res["sram_fights"] == 0
    addresses = [r["bus.ad"] for r in res["records"]
                 if r["kind"] == RecordKind.RAW and r["bus.frame"] and not r["bus.irdy"]]
    assert addresses == [0x100, 0x200, 0x300]


@pytest.mark.parametrize("data_bits", [32, 64])
def test_sram_read_between_slot_writes(data_bits):
    # The controller alone on the SRAM model: slots written back to back; a read asked for
    # in the middle goes before the next slot, reads what was written, and no pin rule is
    # broken (setup, strobe, hold, turnaround).
    from pcispy.spy.tracemem import SRAMTraceMemory
    top = Module()
    top.submodules.ctl = ctl = SRAMTraceMemory(addr_bits=4, data_bits=data_bits)
    top.submodules.sram = sram = AsyncSRAM(ctl.sram_addr_bits, data_bits)
    pins = ctl.sram
    top.d.comb += [sram.a.eq(pins.a), sram.ce_n.eq(~pins.ce), sram.we_n.eq(~pins.we),
                   sram.oe_n.eq(~pins.oe), sram.d_i.eq(pins.d.o), pins.d.i.eq(sram.d_o)]
    words_per_slot = 128 // data_bits
    slot_clocks = 3 * words_per_slot + 1

    def pattern(slot):
        return sum((0x1000 * slot + lane) << (32 * lane) for lane in range(4))

    got = {}

    async def bench(ctx):
        taken, fights = [], 0
        for clock in range(6 * slot_clocks):
            slot = len(taken)
            ctx.set(ctl.mem.w_en, slot < 6)
            ctx.set(ctl.mem.w_addr, slot)
            ctx.set(ctl.mem.w_data, pattern(slot))
            # Ask for word 2 of slot 1 once slot 2 is being written.
            ask = clock == 2 * slot_clocks + 2
            ctx.set(ctl.mem.r_en, ask)
            ctx.set(ctl.mem.r_addr, 4 * 1 + 2)
            if ask:
                got["asked"] = clock
            if ctx.get(ctl.mem.w_ready) and slot < 6:
                taken.append(clock)
            if ctx.get(ctl.mem.r_valid):
                got["answer"] = (clock, ctx.get(ctl.mem.r_data))
            fights += ctx.get(pins.d.oe) & ctx.get(sram.d_oe)
            await ctx.tick()
        got["taken"], got["fights"], got["errors"] = taken, fights, ctx.get(sram.errors)

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    taken = got["taken"]
    # Slots 0-2 back to back, one every slot_clocks; the read delays slot 3 by its 3 clocks.
    assert [b - a for a, b in zip(taken, taken[1:])] == [slot_clocks] * 2 + \
        [slot_clocks + 3] + [slot_clocks] * 2
    clock, data = got["answer"]
    assert data == 0x1002 and clock == taken[2] + slot_clocks + 3
    assert got["errors"] == 0 and got["fights"] == 0


def test_raw_capture_of_selected_transactions_only():
    # Memory at 0x1_0000_0000 (a dual address cycle) is selected; I/O and low memory not.
    high = comparator(0x1_0000_0000, 0xFFFF_FFFF_0000_0000)
    wave = (idle(2) + transaction(Command.IO_WRITE, 0x70, [1]) + idle(2) +
            transaction(Command.MEM_READ, 0x1_0000_0040, [0xAB], dac=True) + idle(2) +
            transaction(Command.MEM_READ, 0x2_0000_0000, [0xCD], dac=True) + idle(1) +
            transaction(Command.MEM_WRITE, 0x40, [2]) + idle(2))
    res = Bench().run(wave, config={"raw_select": 1, "source": TriggerSource.FILTER,
                                    "pre": 1}, comparators=[high])
    raws = [r for r in res["records"] if r["kind"] == RecordKind.RAW]
    # The verdict comes with the second address phase (the trigger); the first phase,
    # one clock earlier, is kept as the one pre-trigger record.
    assert [(r["bus.ad"], r["trigger"]) for r in raws] == [
        (0x40, 0), (0x1, 1), (0, 0), (0xAB, 0)]
    # Memory above 4 GiB: include memory commands, exclude a zero upper address.
    upper = [comparator(commands=MEMORY_COMMANDS),
             comparator(0, 0xFFFF_FFFF_0000_0000, exclude=1)]
    res = Bench().run(wave, config={"raw_select": 1}, comparators=upper)
    raws = [r for r in res["records"] if r["kind"] == RecordKind.RAW]
    # the immediate trigger keeps the first clock after arm; then both DACs, 4 clocks each
    assert raws[0]["trigger"] == 1 and raws[0]["bus.frame"] == 0
    assert len(raws) == 1 + 4 + 4
    firsts = [i for i, r in enumerate(raws) if r["bus.frame"] and
              r["bus.cbe"] == Command.DUAL_ADDRESS.value]
    assert [raws[i]["bus.ad"] for i in firsts] == [0x40, 0]
    # deltas cover what was left out: the second DAC starts 3 clocks after the first ends
    assert raws[firsts[1]]["delta"] == 3


def test_64bit_bus_raw_and_summary_through_a_64bit_backend():
    clocks = transaction(Command.MEM_WRITE, 0x8000, [0x1111_2222, 0x3333_4444], devsel=1,
                         req64=True)
    for clock in clocks[1:]:
        clock.update(ack64=clock["devsel"], cbe_hi=0, ad_hi=0xA000_0000 | clock["ad"])
    wave = idle(2) + clocks + idle(2)
    bench = Bench(width=64)
    res = bench.run(wave)
    raws = [r for r in res["records"] if r["kind"] == RecordKind.RAW]
    data = [(r["bus.ad_hi"], r["bus.ad"]) for r in raws if r["bus.irdy"] and r["bus.trdy"]]
    assert data == [(0xA000_0000 | 0x1111_2222, 0x1111_2222),
                    (0xA000_0000 | 0x3333_4444, 0x3333_4444)]
    assert all(r["bus.ack64"] == r["bus.devsel"] for r in raws)
    res = Bench(width=64).run(wave, config={"mode": CaptureMode.SUMMARY})
    summary = [r for r in res["records"] if r["kind"] == RecordKind.SUMMARY][0]
    assert (summary["is64"], summary["data_phases"], summary["first_be"]) == (1, 2, 0x00)
    assert res["counters"].bytes == 16


def test_trace_backend_answers_a_word_per_clock_from_bram():
    from amaranth.sim import Simulator
    from pcispy.spy.tracemem import BRAMTraceMemory, TraceBackend
    top = Module()
    top.submodules.mem = mem = BRAMTraceMemory(4)
    top.submodules.backend = backend = TraceBackend(4, 32)
    top.d.comb += [mem.mem.r_addr.eq(backend.mem.r_addr), mem.mem.r_en.eq(backend.mem.r_en),
                   backend.mem.r_data.eq(mem.mem.r_data),
                   backend.mem.r_valid.eq(mem.mem.r_valid)]
    answers = []

    async def bench(ctx):
        slot = 0x0123_4567_89AB_CDEF_0011_2233_4455_6677
        # write slot 3 directly through the write side
        ctx.set(mem.mem.w_addr, 3)
        ctx.set(mem.mem.w_data, slot)
        ctx.set(mem.mem.w_en, 1)
        await ctx.tick()
        ctx.set(mem.mem.w_en, 0)
        ctx.set(backend.bus.valid, 1)
        for clock in range(8):
            ctx.set(backend.bus.addr, 12 + min(clock, 3))
            assert ctx.get(backend.bus.ready) == 1
            if ctx.get(backend.bus.r_valid):
                answers.append((clock, ctx.get(backend.bus.r_data)))
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    # requests for words 12, 13, 14, 15, 15, ... every clock; answers from the next clock on
    assert answers[:4] == [(1, 0x4455_6677), (2, 0x0011_2233), (3, 0x89AB_CDEF),
                           (4, 0x0123_4567)]
    assert len(answers) == 7


def test_summary_stop_on_full_keeps_pre_and_fills_the_rest():
    # 32 slots hold 16 summary records: 3 pre-trigger, then the trigger event and 12 more.
    wave = idle(1)
    starts = []
    for i in range(30):
        starts.append(len(wave))
        wave += transaction(Command.MEM_WRITE, 0x100 * (i + 1), [i], devsel=1) + idle(1)
    res = Bench(addr_bits=5).run(wave, config={"mode": CaptureMode.SUMMARY, "pre": 3,
                                               "source": TriggerSource.REGISTER},
                                 strobes={starts[8]: "trigger"}, stop=False)
    st = res["status"]
    recs = res["records"]
    assert st["capacity"] == 16 and st["count"] == 16 and st["state"] == RecorderState.DONE
    addresses = [r["address"] // 0x100 for r in recs if r["kind"] == RecordKind.SUMMARY]
    # transactions are numbered 1..30; the 8th ends as the trigger (9th) begins
    assert addresses == list(range(6, 9)) + list(range(9, 21))
    assert recs[3]["kind"] == RecordKind.TRIGGER
    assert (st["trigger_index"] - st["start"]) % 16 == 3
