# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the DMA exerciser: exact clock counts, counters, refusals, patterns.

The engine runs behind the pads model and against the scripted target of
test_initiator_gw.py; its register block is driven directly (as the CSR bank would).
"""

import random

import pytest

from pcispy.pci.bus import Command, bus_lines
from pcispy.dma.engine import DMAEngine
from pcispy.dma.dwords import pattern_dwords
from pcispy.dma.patterns import Pattern, PatternGenerator
from pcispy.pci.lfsr import LFSR_TAPS, lfsr_step
from pcispy.dma.registers import DMA

from pcispy.core.tests.test_initiator_gw import Harness, ScriptedTarget, simulate

pytestmark = pytest.mark.dma

DEFAULTS = {f"{reg.name}.{f.name}": f.reset for reg in DMA.registers for f in reg.fields
            if f.access.value == "rw"}


STATUS = next(r for r in DMA.registers if r.name == "status")
W1C_FIELDS = [f.name for f in STATUS.fields if f.access.value == "w1c"]


class DMARun:
    def __init__(self):
        self.results = {}
        self.status = {}
        self.addr_phases = []
        self.done_at = None
        self.start_at = None
        self.clash = False


def run_dma(settings, target, *, width=32, clocks=400, gnt=lambda t: 1, stop_at=None,
            cfg=None):
    """Program the engine with ``settings`` ({"reg.field": value}), start it, run."""
    dut = DMAEngine(width)
    h = Harness(dut.bus, dut.now, width)
    m = h.m
    m.submodules.dma = dut
    m.d.comb += [dut.par_error.eq(h.par_error), dut.par64_error.eq(h.par64_error)]
    config = {"bus_master": 1, "mwi_enable": 1, "parity_response": 1, "latency_timer": 64,
              "cache_line": 8}
    config.update(cfg or {})
    values = dict(DEFAULTS)
    values.update(settings)
    res = DMARun()
    lines = list(bus_lines(width))
    status_fields = [f.name for f in STATUS.fields]

    async def bench(ctx):
        for name, value in config.items():
            ctx.set(getattr(dut, name), value)
        for name, value in values.items():
            reg, field = name.split(".")
            ctx.set(getattr(getattr(dut.regs, reg), field), value)
        prev = {"frame": 0, "irdy": 0}
        sticky = {}
        for t in range(clocks):
            ctx.set(dut.regs.control.start, int(t == 1))
            ctx.set(dut.regs.control.stop, int(stop_at is not None and t == stop_at))
            ctx.set(h.tgt["gnt"][0], gnt(t))
            ctx.set(h.tgt["gnt"][1], 1)
            sets = [getattr(dut.regs.status, f + "_set") for f in W1C_FIELDS]
            sampled = await ctx.tick("pci").sample(*[h.pins[n] for n in lines], *sets)
            s = dict(zip(lines, sampled[2:]))
            s.setdefault("ad_hi", 0xFFFF_FFFF)
            for f, v in zip(W1C_FIELDS, sampled[2 + len(lines):]):
                if v:
                    sticky[f] = 1
            if sticky.get("done") and res.done_at is None:
                res.done_at = t
            if s["frame"] and not prev["frame"] and not prev["irdy"]:
                res.addr_phases.append(t)
            prev = s
            h.drive_target(ctx, target.step(s))
        for reg in DMA.registers:
            for f in reg.fields:
                if f.access.value == "ro":
                    res.results[f.name] = ctx.get(getattr(getattr(dut.regs, reg.name), f.name))
        res.status = {f: res.results.get(f, sticky.get(f, 0)) for f in status_fields}
        res.clash = ctx.get(h.clash)

    simulate(m, bench)
    return res


def test_mw_bursts_exact_clocks_and_counters():
    tgt = ScriptedTarget(devsel=1)
    res = run_dma({"mode.cmd": Command.MEM_WRITE.value, "addr_lo.addr_lo": 0x1000,
                   "length.length": 256, "burst.phases": 16, "seed.seed": 0x100},
                  tgt, clocks=120)
    r = res.results
    # Each burst: 1 address clock + 16 data clocks + 1 idle clock, nothing else.
    assert r["clocks_lo"] == 4 * 18
    assert r["bus_clocks_lo"] == 4 * 17
    assert [b - a for a, b in zip(res.addr_phases, res.addr_phases[1:])] == [18] * 3
    assert (r["bytes_lo"], r["data_phases"], r["transactions"]) == (256, 64, 4)
    assert (r["latency_min"], r["latency_max"], r["latency_sum_lo"]) == (1, 1, 4)
    assert (r["gnt_wait_min"], r["gnt_wait_max"], r["latency_count"]) == (0, 0, 4)
    assert r["retries"] == r["master_aborts"] == r["target_aborts"] == 0
    assert [tgt.mem[0x400 + i] for i in range(64)] == pattern_dwords(Pattern.COUNTER, 0x100, 64)
    assert res.status["done"] and not res.status["busy"]
    assert not res.clash


def test_mw_64bit_exact_clocks():
    tgt = ScriptedTarget(devsel=1, ack64=True)
    res = run_dma({"mode.cmd": Command.MEM_WRITE.value, "mode.width64": 1,
                   "length.length": 256, "burst.phases": 8, "mode.pattern": Pattern.LFSR.value,
                   "seed.seed": 0xACE1}, tgt, width=64, clocks=80)
    assert res.results["clocks_lo"] == 4 * 10
    assert res.results["bytes_lo"] == 256 and res.results["data_phases"] == 32
    assert [tgt.mem[i] for i in range(64)] == pattern_dwords(Pattern.LFSR, 0xACE1, 64)


@pytest.mark.parametrize("corrupt", [None, 37])
def test_read_verify(corrupt):
    words = pattern_dwords(Pattern.LFSR, 0x1234, 64)
    mem = {0x100 + i: w for i, w in enumerate(words)}
    if corrupt is not None:
        mem[0x100 + corrupt] ^= 0x10
    tgt = ScriptedTarget(mem, devsel=2)
    res = run_dma({"mode.cmd": Command.MEM_READ_MULTIPLE.value, "addr_lo.addr_lo": 0x400,
                   "length.length": 256, "burst.phases": 32, "mode.pattern": Pattern.LFSR.value,
                   "mode.verify": 1, "seed.seed": 0x1234}, tgt, clocks=120)
    r = res.results
    # Read, medium DEVSEL: address, turnaround, 32 data, idle = 35 clocks per burst.
    assert r["clocks_lo"] == 2 * 35
    assert (r["latency_min"], r["latency_max"]) == (2, 2)
    assert r["mismatches"] == (0 if corrupt is None else 1)
    assert r["first_mismatch"] == (0xFFFF_FFFF if corrupt is None else corrupt)


def test_idle_clocks_and_passes():
    tgt = ScriptedTarget(devsel=1)
    res = run_dma({"mode.cmd": Command.MEM_WRITE.value, "length.length": 64,
                   "burst.phases": 4, "idle.clocks": 3, "passes.count": 2}, tgt, clocks=150)
    a = res.addr_phases
    assert len(a) == 8
    assert [y - x for x, y in zip(a, a[1:])] == [4 + 2 + 3] * 7
    assert res.results["passes_done"] == 2
    assert res.results["bytes_lo"] == 128
    assert [tgt.mem[i] for i in range(16)] == pattern_dwords(Pattern.COUNTER, 1, 16)


def test_retries_and_disconnects_counted():
    tgt = ScriptedTarget(devsel=1, retries=3, disconnect=(5, False))
    res = run_dma({"mode.cmd": Command.MEM_WRITE.value, "length.length": 64,
                   "burst.phases": 16}, tgt, clocks=150)
    r = res.results
    assert r["retries"] == 3
    assert r["disconnects_nodata"] == 3        # 16 DWORDs in pieces of 5, 5, 5, 1
    assert r["transactions"] == 3 + 4
    assert r["data_phases"] == 16 and r["bytes_lo"] == 64
    assert [tgt.mem[i] for i in range(16)] == pattern_dwords(Pattern.COUNTER, 1, 16)


def test_master_abort_ends_run():
    tgt = ScriptedTarget(devsel=None)
    res = run_dma({"mode.cmd": Command.MEM_READ.value, "length.length": 64}, tgt, clocks=40)
    assert res.status["master_abort"] and res.status["done"]
    assert res.results["master_aborts"] == 1 and not res.results["busy"]
    assert len(res.addr_phases) == 1


def test_target_abort_ends_run():
    tgt = ScriptedTarget(devsel=1, abort_at=3)
    res = run_dma({"mode.cmd": Command.MEM_WRITE.value, "length.length": 64}, tgt, clocks=40)
    assert res.status["target_abort"] and res.results["target_aborts"] == 1
    assert res.results["data_phases"] == 3


def test_stop_continuous():
    tgt = ScriptedTarget(devsel=1)
    res = run_dma({"mode.cmd": Command.MEM_WRITE.value, "length.length": 64,
                   "burst.phases": 8, "mode.continuous": 1}, tgt, clocks=200, stop_at=100)
    assert res.status["stopped"] and res.status["done"] and not res.results["busy"]
    assert res.results["passes_done"] >= 4
    assert res.done_at < 110


def test_latency_timer_counted():
    tgt = ScriptedTarget(devsel=1)
    res = run_dma({"mode.cmd": Command.MEM_WRITE.value, "length.length": 256,
                   "burst.unlimited": 1}, tgt, clocks=200,
                  gnt=lambda t: int(t % 40 < 30), cfg={"latency_timer": 16})
    r = res.results
    assert r["latency_timer_ends"] >= 2
    assert r["bytes_lo"] == 256
    assert [tgt.mem[i] for i in range(64)] == pattern_dwords(Pattern.COUNTER, 1, 64)
    assert r["gnt_wait_max"] > 0


REFUSALS = [
    ("err_burst", {"burst.phases": 0}, {}, 32),
    ("err_burst", {"burst.phases": 4097}, {}, 32),
    ("err_length", {"length.length": 6}, {}, 32),
    ("err_length", {"length.length": 12, "mode.width64": 1}, {}, 64),
    ("err_width", {"mode.width64": 1, "length.length": 64}, {}, 32),
    ("err_width", {"mode.width64": 1, "mode.cmd": Command.IO_WRITE.value}, {}, 64),
    ("err_align", {"addr_lo.addr_lo": 2}, {}, 32),
    ("err_cmd", {"mode.cmd": Command.DUAL_ADDRESS.value}, {}, 32),
    ("err_cmd", {"mode.cmd": Command.RESERVED_4.value}, {}, 32),
    ("err_mwi_line", {"mode.cmd": Command.MEM_WRITE_INVALIDATE.value}, {"cache_line": 0}, 32),
    ("err_mwi_line", {"mode.cmd": Command.MEM_WRITE_INVALIDATE.value}, {"cache_line": 6}, 32),
    ("err_mwi_line", {"mode.cmd": Command.MEM_WRITE_INVALIDATE.value}, {"mwi_enable": 0}, 32),
    ("err_mwi_align", {"mode.cmd": Command.MEM_WRITE_INVALIDATE.value,
                       "addr_lo.addr_lo": 0x10}, {}, 32),
    ("err_mwi_align", {"mode.cmd": Command.MEM_WRITE_INVALIDATE.value,
                       "length.length": 40}, {}, 32),
    ("err_addr", {"mode.cmd": Command.IO_READ.value, "addr_hi.addr_hi": 1}, {}, 32),
    ("err_seed", {"mode.pattern": Pattern.LFSR.value, "seed.seed": 0}, {}, 32),
    ("err_verify", {"mode.verify": 1}, {}, 32),
    ("err_verify", {"mode.verify": 1, "mode.cmd": Command.MEM_READ.value,
                    "mode.pattern": Pattern.TIMESTAMP.value}, {}, 32),
    ("err_master", {}, {"bus_master": 0}, 32),
]


@pytest.mark.parametrize("error,settings,cfg,width", REFUSALS,
                         ids=[f"{e}-{i}" for i, (e, *_ ) in enumerate(REFUSALS)])
def test_impossible_settings_refused(error, settings, cfg, width):
    tgt = ScriptedTarget(devsel=1)
    res = run_dma(settings, tgt, width=width, cfg=cfg, clocks=12)
    errors = {k for k, v in res.status.items() if k.startswith("err_") and v}
    assert errors == {error}
    assert res.addr_phases == [] and res.done_at is None and not res.results["busy"]


def test_valid_mwi_whole_lines():
    tgt = ScriptedTarget(devsel=1)
    res = run_dma({"mode.cmd": Command.MEM_WRITE_INVALIDATE.value, "addr_lo.addr_lo": 0x40,
                   "length.length": 64, "burst.phases": 16}, tgt, clocks=40)
    assert not any(v for k, v in res.status.items() if k.startswith("err_"))
    assert res.results["bytes_lo"] == 64
    assert [c for (_, c, *_r) in tgt.log] == [Command.MEM_WRITE_INVALIDATE]


@pytest.mark.parametrize("pattern", [Pattern.COUNTER, Pattern.LFSR, Pattern.CONSTANT])
def test_pattern_generator_matches_reference(pattern):
    """The gateware window, advanced by random takes, equals the Python reference."""
    rng = random.Random(int(pattern.value) + 7)
    seed = 0xDEAD_BEEF
    ref = pattern_dwords(pattern, seed, 400)
    gen = PatternGenerator()
    got = []

    async def bench(ctx):
        ctx.set(gen.pattern, pattern)
        ctx.set(gen.seed, seed)
        ctx.set(gen.restart, 1)
        await ctx.tick("pci")
        ctx.set(gen.restart, 0)
        pos = 0
        while pos < 300:
            window = [ctx.get(gen.window[i]) for i in range(4)]
            assert window == ref[pos:pos + 4], f"at DWORD {pos}"
            take = rng.choice([0, 1, 2])
            ctx.set(gen.take, take)
            await ctx.tick("pci")
            pos += take
            got.append(pos)

    simulate(gen, bench)
    assert got[-1] >= 300


def test_lfsr_reference():
    # A maximal-length LFSR never returns to its seed within a short run, and the taps
    # are what the module declares.
    assert lfsr_step(1) == LFSR_TAPS and lfsr_step(2) == 1
    seq = pattern_dwords(Pattern.LFSR, 1, 1000)
    assert len(set(seq)) == 1000
    with pytest.raises(ValueError):
        pattern_dwords(Pattern.LFSR, 0, 4)
    with pytest.raises(ValueError):
        pattern_dwords(Pattern.TIMESTAMP, 1, 4)


#: Bus clock of the goal figures (33.33 MHz).
PCI_HZ = 100e6 / 3


@pytest.mark.parametrize("cmd,width,devsel,goal", [
    (Command.MEM_WRITE, 32, 2, 131), (Command.MEM_READ_MULTIPLE, 32, 2, 129),
    (Command.MEM_WRITE, 64, 2, 262)])
def test_goal_throughput_burst_256(cmd, width, devsel, goal):
    """Burst 256 against a zero-wait medium-DEVSEL target: MB/s at 33 MHz over 4 bursts."""
    size = 4 * 256 * width // 8
    tgt = ScriptedTarget({}, devsel=devsel)
    res = run_dma({"mode.cmd": cmd.value, "mode.width64": int(width == 64),
                   "length.length": size, "burst.phases": 256}, tgt, width=width,
                  clocks=4 * 262 + 10)
    clocks = res.results["clocks_lo"]
    # Address, one clock before the first data (medium DEVSEL for writes, the AD
    # turnaround for reads), 256 data clocks, the idle clock.
    per_burst = 1 + 1 + 256 + 1
    assert clocks == 4 * per_burst
    assert res.results["bytes_lo"] == size
    mbps = size / (clocks / PCI_HZ) / 1e6
    assert mbps >= goal, f"{mbps:.1f} MB/s"


@pytest.mark.parametrize("width", [32, 64])
def test_converts_to_verilog(width):
    from amaranth.back import verilog
    text = verilog.convert(DMAEngine(width), name="dma")
    assert "module dma" in text


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_random_runs_agree_with_the_target(seed):
    """Random settings and target behaviour: the engine's counters equal what the target saw."""
    rng = random.Random(seed)
    try:
        width = rng.choice([32, 64])
        wide = width == 64 and rng.random() < 0.7
        unit = 8 if wide else 4
        length = unit * rng.randint(1, 24)
        write = rng.random() < 0.5
        cmd = Command.MEM_WRITE if write else rng.choice(
            [Command.MEM_READ, Command.MEM_READ_LINE, Command.MEM_READ_MULTIPLE])
        pattern = rng.choice([Pattern.COUNTER, Pattern.LFSR, Pattern.CONSTANT])
        words = pattern_dwords(pattern, 0x2468, length // 4)
        mem = {} if write else {0x100 + i: w for i, w in enumerate(words)}
        disc = rng.choice([None, (rng.randint(1, 6), rng.random() < 0.5)])
        tgt = ScriptedTarget(mem, devsel=rng.choice([1, 2, 3]), wait0=rng.randint(0, 2),
                             wait=rng.randint(0, 1), ack64=rng.random() < 0.5,
                             retries=rng.randint(0, 2), disconnect=disc)
        res = run_dma({"mode.cmd": cmd.value, "mode.width64": int(wide),
                       "addr_lo.addr_lo": 0x400, "length.length": length,
                       "burst.phases": rng.randint(1, 9), "idle.clocks": rng.randint(0, 2),
                       "mode.pattern": pattern.value, "seed.seed": 0x2468,
                       "mode.verify": int(not write), "wait.irdy": rng.randint(0, 1)},
                      tgt, width=width, clocks=900)
        r = res.results
        assert res.status["done"] and not r["busy"]
        assert r["transactions"] == len(tgt.log)
        assert r["data_phases"] == sum(entry[3] for entry in tgt.log)
        assert r["retries"] == sum(1 for e in tgt.log if e[3] == 0 and e[4] == "stop")
        assert wide_bytes(r) == length
        if write:
            assert [tgt.mem.get(0x100 + i) for i in range(length // 4)] == words
        else:
            assert r["mismatches"] == 0
        assert not res.clash
    except AssertionError:
        print(f"failing seed: {seed}")
        raise


def wide_bytes(r):
    return r["bytes_lo"] | (r["bytes_hi"] << 32)


def test_timestamp_pattern_counts_clocks():
    """Zero-wait burst: each DWORD carries the clock it was put on AD, one apart."""
    tgt = ScriptedTarget(devsel=1)
    run_dma({"mode.cmd": Command.MEM_WRITE.value, "length.length": 64, "burst.phases": 8,
             "mode.pattern": Pattern.TIMESTAMP.value}, tgt, clocks=40)
    words = [tgt.mem[i] for i in range(16)]
    assert [b - a for a, b in zip(words, words[1:8])] == [1] * 7
    # Between bursts: the last data phase, the idle clock, the address phase.
    assert words[8] - words[7] == 3


def test_settings_writes_refused_while_running():
    dut = DMAEngine(32)
    seen = {}

    async def bench(ctx):
        for name, value in {"bus_master": 1, "latency_timer": 64, "cache_line": 8}.items():
            ctx.set(getattr(dut, name), value)
        for name, value in DEFAULTS.items():
            reg, field = name.split(".")
            ctx.set(getattr(getattr(dut.regs, reg), field), value)
        ctx.set(dut.now.gnt, 0)              # never granted: the run stays busy
        ctx.set(dut.regs.length.w_stb, 1)
        seen["idle_refuse"] = ctx.get(dut.regs.length.refuse)
        ctx.set(dut.regs.length.w_stb, 0)
        ctx.set(dut.regs.control.start, 1)
        await ctx.tick("pci")
        ctx.set(dut.regs.control.start, 0)
        await ctx.tick("pci")
        seen["busy"] = ctx.get(dut.regs.status.busy)
        ctx.set(dut.regs.length.w_stb, 1)
        seen["busy_refuse"] = ctx.get(dut.regs.length.refuse)
        await ctx.tick("pci")
        ctx.set(dut.regs.length.w_stb, 0)
        await ctx.tick("pci")
        seen["err_busy"] = ctx.get(dut.regs.status.err_busy)
        ctx.set(dut.regs.control.stop, 1)
        await ctx.tick("pci")
        ctx.set(dut.regs.control.stop, 0)
        for _ in range(3):
            await ctx.tick("pci")
        seen["after_stop"] = ctx.get(dut.regs.status.busy)

    simulate(dut, bench)
    assert seen == {"idle_refuse": 0, "busy": 1, "busy_refuse": 1, "err_busy": 1,
                    "after_stop": 0}
