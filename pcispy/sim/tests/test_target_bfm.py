# SPDX-License-Identifier: BSD-2-Clause
"""Unit tests of the behavioural target and the legacy device, in Amaranth's simulator.

A small scripted initiator lives in this file: it drives one transaction clock by clock
from the PCI rules, resolves the bus (target drivers, its own, pull-ups) and records every
clock, so each test can assert exact clocks of DEVSEL#/TRDY#/STOP#, exact bytes and exact
waveforms of the error-injection knobs. It also checks the target's drivers clock by clock
as the system's bus resolver does (a sustained tri-state line released while asserted, a
line taken over from the initiator without a turnaround clock): :func:`run` fails on any
such problem a test does not expect.
"""

from dataclasses import dataclass, field

import pytest
from amaranth.sim import Simulator

from pcispy.pci.bus import Command, DevselSpeed, parity
from amaranth import Module

from pcispy.check.checker import ProtocolChecker, RULES, RULES_BY_NAME
from pcispy.sim.control import PysimControl
from pcispy.sim.bfm.profiles import DisconnectMode, RetryMode, PROFILES, RTC
from pcispy.sim.bfm.target import BehaviouralTarget
from pcispy.sim.bfm.target_control import Event, Knob, Reg, TargetConfigError, check_profile
from pcispy.sim.bfm.target_driver import TargetDriver
from pcispy.sim.bfm.legacy import LegacyDevice, LegacyDriver

pytestmark = pytest.mark.bfm

_TARGET_LINES = ("trdy", "stop", "devsel", "perr", "serr", "ack64")


@dataclass
class Result:
    """One transaction as the initiator saw it."""
    clocks: list                      # per clock: dict of resolved lines, clock 1 first
    data: list = field(default_factory=list)   # words read (or 64-bit values)
    phases: int = 0
    termination: str = ""

    def first(self, line, value=1):
        """Clock number (address phase = 1) where ``line`` first equals ``value``."""
        for n, c in enumerate(self.clocks, 1):
            if c[line] == value:
                return n
        return None

    def clocks_where(self, **cond):
        return [n for n, c in enumerate(self.clocks, 1)
                if all(c[k] == v for k, v in cond.items())]


class Bench:
    """The target under test plus a scripted initiator, inside one testbench."""
    def __init__(self, ctx, dut, checker=None):
        self.ctx, self.dut = ctx, dut
        self.checker = checker
        self.bus = dut.bus
        self.wide = dut.width == 64
        self.ctl = PysimControl(ctx, dut.ctl)
        # The driver learns the width from the target (Reg.INFO).
        self.drv = (LegacyDriver if isinstance(dut, LegacyDevice) else TargetDriver)(self.ctl)
        self.init = {}    # initiator-driven lines: name -> value (absent = not driving)
        self.extra_devsel = False
        self.clock = 0
        self.drivers = {}            # this clock's: line -> (target drives, its value, we drive)
        self.driver_problems = []    # "clock N: ..." for each broken driver rule
        self.resolve()

    def resolve(self):
        """Bus values for the current clock; returns the snapshot."""
        ctx, bus = self.ctx, self.bus
        snap = {}
        lines = ["ad", "cbe", "par", "frame", "irdy", "trdy", "stop", "devsel", "perr", "serr",
                 "idsel", "lock"]
        if self.wide:
            lines += ["ad_hi", "cbe_hi", "par64", "req64", "ack64"]
        for name in lines:
            port = getattr(bus, name)
            t_oe = ctx.get(port.oe)
            if t_oe and name in self.init and name not in ("serr",):
                raise AssertionError(f"contention on {name}")
            if t_oe:
                value = ctx.get(port.o)
            elif name in self.init:
                value = self.init[name]
            elif name in ("ad", "ad_hi"):
                value = 0xFFFF_FFFF
            elif name in ("cbe", "cbe_hi"):
                value = 0xF
            elif name in ("par", "par64"):
                value = 1
            else:
                value = 0
            if name in ("devsel", "trdy") and self.extra_devsel:
                value = 1   # another target claims, with zero wait states
            ctx.set(port.i, value)
            if self.checker is not None:
                ctx.set(getattr(self.checker.bus, name), value)
            snap[name] = value
            snap[name + "_t"] = int(t_oe)
            self.drivers[name] = (bool(t_oe), value, name in self.init)
        return snap

    async def tick(self):
        before = dict(self.drivers)
        await self.ctx.tick()
        self.clock += 1
        snap = self.resolve()
        for name, (t_now, _, i_now) in self.drivers.items():
            t_before, v_before, i_before = before[name]
            if name in _STS and t_before and v_before and not t_now:
                self.driver_problems.append(f"clock {self.clock}: target released {name} "
                                            "while asserted")
            if name != "serr" and ((t_now and i_before) or (i_now and t_before)):
                self.driver_problems.append(f"clock {self.clock}: {name} changed driver "
                                            "without a turnaround clock")
        return snap

    async def idle(self, n=1):
        self.init = {}
        snaps = []
        for _ in range(n):
            snaps.append(await self.tick())
        return snaps

    async def transaction(self, cmd, addr, *, data=None, count=1, be=0x0, req64=False,
                          idsel=False, irdy_waits=None, bad_addr_par=False, bad_data_par=(),
                          bad_wait_par=(), other_devsel=None, max_clocks=200):
        """Run one transaction; ``data`` (list) for writes, ``count`` words for reads.

        ``irdy_waits`` = {phase: clocks of IRDY# deasserted before that phase};
        ``bad_data_par`` = write data phases whose PAR is wrong in the clock after they
        complete; ``bad_wait_par`` = write data phases whose PAR is wrong while they wait
        (IRDY# asserted, no TRDY#/STOP# yet);
        ``other_devsel`` = clock from which another target asserts DEVSEL# and TRDY#.
        """
        cmd = Command(cmd)
        write = not cmd.is_read
        n = len(data) if write else count
        waits = dict(irdy_waits or {})
        res = Result(clocks=[])
        self.init = {"frame": 1, "irdy": 0, "ad": addr, "cbe": cmd.value,
                     "idsel": int(idsel)}
        if self.wide:
            self.init.update(req64=int(req64), ad_hi=0, cbe_hi=0xF if not req64 else 0)
        prev_ad = None   # parity owed for the AD this initiator drove last clock
        prev_ad64 = None  # ... and for AD[63:32] (PAR64)
        phase, wait_left = 0, waits.get(0, 0)
        stopping = done = False
        devsel_seen = False
        wide_xfer = False
        clock = 1
        snap = self.resolve()
        while not done:
            if clock > max_clocks:
                raise AssertionError(f"transaction did not end in {max_clocks} clocks")
            res.clocks.append(snap)
            # What the initiator sees at the end of this clock.
            devsel_seen |= bool(snap["devsel"])
            if self.wide and snap.get("ack64") and snap["devsel"]:
                wide_xfer = True
            moved = clock > 1 and snap["irdy"] and snap["trdy"]
            last = clock > 1 and snap["irdy"] and not snap["frame"] and (snap["trdy"] or snap["stop"])
            if moved:
                if not write:
                    word = snap["ad"]
                    if wide_xfer and self.wide:
                        word |= snap["ad_hi"] << 32
                    res.data.append(word)
                phase += 1
                wait_left = waits.get(phase, 0)
            if clock > 1 and snap["stop"] and not stopping:
                stopping = True
                res.termination = ("target_abort" if not snap["devsel"] and devsel_seen else
                                   "retry" if phase == 0 and not snap["trdy"] else
                                   "disconnect_data" if snap["trdy"] else "disconnect_nodata")
            master_abort = clock >= 5 and not devsel_seen and not stopping
            if last or (not snap["frame"] and not snap["irdy"] and clock > 1):
                done = True
                res.phases = phase
                res.termination = res.termination or "completion"
                if master_abort:
                    res.termination = "master_abort"
            # Next clock's initiator drivers.
            drive = dict(self.init)
            parity_due = prev_ad
            if clock == 1:
                parity_due = (addr, cmd.value)
            if done:
                drive = {}
            else:
                if write:
                    if phase < n:
                        drive["ad"] = data[phase] & 0xFFFF_FFFF
                        if self.wide:
                            drive["ad_hi"] = (data[phase] >> 32) if req64 else 0
                else:
                    drive.pop("ad", None)
                    drive.pop("ad_hi", None)
                drive["cbe"] = be & 0xF
                if self.wide:
                    drive["cbe_hi"] = (be >> 4) & 0xF if req64 else 0xF
                if wait_left and not stopping and not master_abort:
                    wait_left -= 1
                    irdy = 0
                else:
                    irdy = 1
                if master_abort and not snap["frame"]:
                    irdy = 0
                drive["irdy"] = irdy if (snap["frame"] or master_abort) else snap["irdy"]
                final = (phase >= n - 1) or stopping or master_abort
                drive["frame"] = 0 if (final and drive["irdy"]) else (
                    snap["frame"] and not (stopping or master_abort))
                if not snap["frame"] and clock > 1:
                    drive["frame"] = 0
                if self.wide and not snap["frame"] and clock > 1:
                    drive["req64"] = 0
                elif self.wide:
                    drive["req64"] = int(req64) if drive["frame"] else 0
            if parity_due is not None:
                pad, pcbe = parity_due
                p = parity(pad, pcbe)
                waiting = clock > 1 and snap["irdy"] and not (snap["trdy"] or snap["stop"])
                if (clock == 1 and bad_addr_par) or (clock > 1 and (phase - 1) in bad_data_par
                                                    and moved) or \
                        (waiting and phase in bad_wait_par):
                    p ^= 1
                drive["par"] = p
            else:
                drive.pop("par", None)
            drive.pop("par64", None)
            if parity_due is not None and clock > 1 and req64 and prev_ad64 is not None:
                drive["par64"] = parity(*prev_ad64)
            if write and not done and "ad" in drive:
                prev_ad = (drive["ad"], drive["cbe"])
                prev_ad64 = (drive.get("ad_hi", 0), drive.get("cbe_hi", 0xF))
            else:
                prev_ad = prev_ad64 = None
            self.init = drive
            self.extra_devsel = other_devsel is not None and clock + 1 >= other_devsel and not done
            snap = await self.tick()
            clock += 1
        # Two more clocks: the initiator's parity tail and the target's release.
        res.clocks.append(snap)
        self.init = {k: v for k, v in self.init.items() if k in ("par", "par64")}
        self.extra_devsel = False
        res.clocks.append(await self.tick())
        self.init = {}
        res.clocks.append(await self.tick())
        return res


#: Sustained tri-state lines (PCI LB 3.0 §2.1): driven deasserted one clock before release.
_STS = ("frame", "irdy", "trdy", "stop", "devsel", "lock", "perr", "req64", "ack64")


def run(dut, body, *, checked=False, driver_problems=()):
    """Simulate ``body(bench)`` against ``dut``; return what it returns, and with
    ``checked`` also the set of protocol-checker rules the bus broke. The target's drivers
    must break no rule but those named in ``driver_problems`` (exact messages)."""
    top = Module()
    top.submodules.dut = dut
    checker = None
    if checked:
        top.submodules.checker = checker = ProtocolChecker(width=dut.width)
    sim = Simulator(top)
    sim.add_clock(1e-6)
    outcome = {}

    async def testbench(ctx):
        bench = Bench(ctx, dut, checker)
        await bench.idle(2)
        outcome["value"] = await body(bench)
        if checker is not None:
            await bench.idle(3)
            flags = ctx.get(checker.flags)
            outcome["rules"] = {rule.name for rule in RULES if flags >> rule.id & 1}
        outcome["drivers"] = bench.driver_problems

    sim.add_testbench(testbench)
    sim.run()
    assert outcome["drivers"] == list(driver_problems)
    if checked:
        return outcome.get("value"), outcome["rules"]
    return outcome.get("value")


def target(width=32, **fields):
    base = {"mem_base": 0x1000_0000, "mem_size": 0x1000}
    base.update(fields)
    return BehaviouralTarget(width=width, mem_addr_bits=10, verilog_ram=False, fields=base)


MR, MW = Command.MEM_READ, Command.MEM_WRITE
IOR, IOW = Command.IO_READ, Command.IO_WRITE
BASE = 0x1000_0000


@pytest.mark.parametrize("speed,clock", [(DevselSpeed.FAST, 2), (DevselSpeed.MEDIUM, 3),
                                         (DevselSpeed.SLOW, 4), (DevselSpeed.SUBTRACTIVE, 5)])
def test_devsel_timing(speed, clock):
    async def body(b):
        w = await b.transaction(MW, BASE + 8, data=[0x1234_5678])
        r = await b.transaction(MR, BASE + 8)
        return w, r
    w, r = run(target(devsel_speed=speed.value), body)
    assert w.first("devsel") == clock
    assert w.first("trdy") == clock               # zero latency: TRDY# with DEVSEL#
    assert w.termination == "completion" and w.phases == 1
    assert r.first("devsel") == clock
    assert r.first("trdy") == max(clock, 3)       # reads: turnaround clock 2 first
    assert r.data == [0x1234_5678]
    # DEVSEL# released through one driven-deasserted clock (sustained tri-state).
    end = r.clocks_where(trdy=1)[-1]
    assert r.clocks[end]["devsel_t"] == 1 and r.clocks[end]["devsel"] == 0
    assert r.clocks[end + 1]["devsel_t"] == 0


def test_subtractive_declines_claimed_transaction():
    async def body(b):
        return await b.transaction(MW, BASE, data=[1], other_devsel=3)
    res = run(target(devsel_speed=DevselSpeed.SUBTRACTIVE.value), body)
    assert all(c["devsel_t"] == 0 and c["trdy_t"] == 0 for c in res.clocks)


def test_subtractive_claim_all():
    async def body(b):
        w = await b.transaction(MW, 0x5000_0000, data=[0xAA])
        n = await b.transaction(MW, 0x5000_0000, data=[0xBB], other_devsel=2)
        return w, n
    w, n = run(target(devsel_speed=DevselSpeed.SUBTRACTIVE.value, claim_all=1), body)
    assert w.first("devsel") == 5 and w.termination == "completion"
    assert n.clocks_where(devsel_t=1) == []


def test_every_command_and_window():
    async def body(b):
        await b.drv.set_windows(io=(0x2000, 0x100), io_ram_offset=0x40)
        out = {}
        for i, cmd in enumerate((MW, Command.MEM_WRITE_INVALIDATE)):
            out[cmd] = await b.transaction(cmd, BASE + 16 * i, data=[0xA0 + i, 0xB0 + i])
        for cmd in (MR, Command.MEM_READ_LINE, Command.MEM_READ_MULTIPLE):
            out[cmd] = await b.transaction(cmd, BASE + 16, count=2)
        out[IOW] = await b.transaction(IOW, 0x2004, data=[0x600D])
        out[IOR] = await b.transaction(IOR, 0x2004)
        for cmd in (Command.RESERVED_4, Command.DUAL_ADDRESS, Command.INTERRUPT_ACK,
                    Command.SPECIAL_CYCLE):
            out[cmd] = await b.transaction(cmd, BASE, data=[0]) if not cmd.is_read else \
                await b.transaction(cmd, BASE)
        out["outside"] = await b.transaction(MR, BASE + 0x1000)
        out["io_ram"] = await b.drv.backdoor_read(0x44, 4)
        return out
    out = run(target(), body)
    for cmd in (MW, Command.MEM_WRITE_INVALIDATE, IOW):
        assert out[cmd].termination == "completion" and out[cmd].phases == len(
            out[cmd].clocks_where(trdy=1, irdy=1)), cmd
    for cmd in (MR, Command.MEM_READ_LINE, Command.MEM_READ_MULTIPLE):
        assert out[cmd].data == [0xA1, 0xB1], cmd
    assert out[IOR].data == [0x600D] and out["io_ram"] == (0x600D).to_bytes(4, "little")
    for key in (Command.RESERVED_4, Command.DUAL_ADDRESS, Command.INTERRUPT_ACK,
                Command.SPECIAL_CYCLE, "outside"):
        assert out[key].termination == "master_abort", key


@pytest.mark.parametrize("cmd,lat,first", [(MR, 10, 11), (MW, 10, 11), (MR, 0, 3),
                                            (MW, 1, 2), (MR, 40, 41)])
def test_initial_latency_fixed(cmd, lat, first):
    async def body(b):
        if cmd == MW:
            return await b.transaction(cmd, BASE, data=[7])
        return await b.transaction(cmd, BASE)
    res = run(target(read_latency_min=lat, read_latency_max=lat,
                     write_latency_min=lat, write_latency_max=lat), body)
    assert res.first("trdy") == first


@pytest.mark.parametrize("seed", [1, 7, 0xC0FFEE])
def test_initial_latency_uniform_is_seeded(seed):
    async def body(b):
        lats = []
        for _ in range(8):
            res = await b.transaction(MR, BASE)
            lats.append(res.first("trdy") - 1)
        return lats
    make = lambda: BehaviouralTarget(
        width=32, mem_addr_bits=8, verilog_ram=False, seed=seed,
        fields={"mem_base": BASE, "mem_size": 0x400, "read_latency_min": 20,
                "read_latency_max": 27})
    first, again = run(make(), body), run(make(), body)
    assert first == again, f"seed {seed}: not reproducible"
    assert all(20 <= v <= 27 for v in first), f"seed {seed}: {first}"
    assert len(set(first)) >= 3, f"seed {seed}: {first}"


def test_wait_pattern():
    async def body(b):
        await b.drv.backdoor_write(0, bytes(range(32)))
        return await b.transaction(MR, BASE, count=8)
    # Phases 2 and 6 (bit 2 of a period of 4) get two wait states each.
    res = run(target(wait_mask=0b0100, wait_period=4, wait_clocks=2), body)
    assert res.clocks_where(trdy=1, irdy=1) == [3, 4, 7, 8, 9, 10, 13, 14]
    assert res.data == [int.from_bytes(bytes(range(i, i + 4)), "little") for i in range(0, 32, 4)]


@pytest.mark.parametrize("mode,moved,term", [(DisconnectMode.WITH_DATA, 4, "disconnect_data"),
                                             (DisconnectMode.WITHOUT_DATA, 4, "disconnect_nodata")])
def test_disconnect_every_n(mode, moved, term):
    async def body(b):
        return await b.transaction(MW, BASE, data=list(range(10)))
    res = run(target(disconnect_mode=mode.value, disconnect_every=4), body)
    assert res.phases == moved and res.termination == term
    stop_clock = res.first("stop")
    assert stop_clock == (5 if mode == DisconnectMode.WITH_DATA else 6)
    assert res.clocks[stop_clock - 1]["trdy"] == (mode == DisconnectMode.WITH_DATA)


def test_disconnect_at_cache_line():
    async def body(b):
        return await b.transaction(MW, BASE + 4, data=list(range(10)))
    res = run(target(disconnect_mode=DisconnectMode.CACHE_LINE.value, cache_line_size=4), body)
    assert res.phases == 3 and res.termination == "disconnect_data"


def test_reserved_burst_order_disconnects():
    async def body(b):
        return await b.transaction(MW, BASE | 1, data=[1, 2, 3])
    res = run(target(), body)
    assert res.phases == 1 and res.termination == "disconnect_data"


def test_retry_first_k_then_every_n():
    async def body(b):
        first = [(await b.transaction(MW, BASE, data=[5])).termination for _ in range(6)]
        stats = await b.drv.stats()
        await b.drv.set_fields(retry_mode=RetryMode.EVERY.value, retry_count=3)
        every = [(await b.transaction(MR, BASE)).termination for _ in range(6)]
        return first, stats, every, await b.drv.stats()
    first, stats, every, after = run(target(retry_mode=RetryMode.FIRST.value, retry_count=2), body)
    # p = 256/256: every new transaction is retried K = 2 times, then goes through.
    assert first == ["retry", "retry", "completion"] * 2
    assert stats["retries"] == 4 and stats["transactions"] == 6 and stats["data_phases"] == 2
    assert every == ["completion", "completion", "retry"] * 2
    assert after["retries"] == 6


def test_retry_stop_clock():
    async def body(b):
        return await b.transaction(MW, BASE, data=[5])
    res = run(target(retry_mode=RetryMode.RANDOM.value, retry_probability=256,
                     devsel_speed=DevselSpeed.MEDIUM.value, retry_latency=5), body)
    assert res.termination == "retry" and res.first("stop") == 6 and res.first("trdy") is None


def test_target_abort():
    async def body(b):
        res = await b.transaction(MW, BASE + 0x100, data=[1, 2])
        ok = await b.transaction(MW, BASE + 0x200, data=[1])
        rd = await b.transaction(MR, BASE + 0x180, count=2)
        return res, ok, rd, await b.drv.status(), await b.drv.stats()
    res, ok, rd, status, stats = run(target(abort_base=BASE + 0x100, abort_size=0x100), body)
    assert rd.termination == "target_abort" and rd.first("stop") == 3
    assert all(c["ad_t"] == 0 for c in rd.clocks)    # no read data without DEVSEL#
    assert res.termination == "target_abort" and res.phases == 0
    assert res.first("devsel") == 2 and res.first("stop") == 3
    assert res.clocks[2]["devsel"] == 0
    assert ok.termination == "completion"
    assert status & (1 << 11) and stats["aborts"] == 2


def test_64bit_ack64():
    async def body(b):
        w = await b.transaction(MW, BASE, data=[0x1111_2222_3333_4444, 0x5555_6666_7777_8888],
                                req64=True)
        r = await b.transaction(MR, BASE, count=2, req64=True)
        n = await b.transaction(MR, BASE, count=2)
        raw = await b.drv.backdoor_read(0, 16)
        await b.drv.set_fields(ack64_capable=0)
        x = await b.transaction(MR, BASE, count=2, req64=True)
        return w, r, n, raw, x
    w, r, n, raw, x = run(target(width=64, ack64_capable=1), body)
    assert w.first("ack64") == w.first("devsel") == 2
    assert raw == (0x1111_2222_3333_4444).to_bytes(8, "little") + \
        (0x5555_6666_7777_8888).to_bytes(8, "little")
    assert r.data == [0x1111_2222_3333_4444, 0x5555_6666_7777_8888]
    # PAR64 one clock after each AD[63:32] the target drove, even parity.
    for n_clk in r.clocks_where(trdy=1, irdy=1):
        c, nxt = r.clocks[n_clk - 1], r.clocks[n_clk]
        assert nxt["par64"] == parity(c["ad_hi"], c["cbe_hi"])
    assert n.first("ack64") is None and n.data == [0x3333_4444, 0x1111_2222]
    assert x.first("ack64") is None and x.data == [0x3333_4444, 0x1111_2222]


def test_read_parity_and_injection():
    async def body(b):
        await b.drv.backdoor_write(0, bytes(range(16)))
        return await b.transaction(MR, BASE, count=4)
    res = run(target(bad_par_enable=1, bad_par_phase=1), body)
    bad = []
    for n_clk in res.clocks_where(trdy=1, irdy=1):
        c, nxt = res.clocks[n_clk - 1], res.clocks[n_clk]
        if nxt["par"] != parity(c["ad"], c["cbe"]):
            bad.append(n_clk)
    assert bad == [4]     # data phase 1 is clock 4 (clock 3 has phase 0)


def test_byte_enable_writes():
    async def body(b):
        await b.drv.backdoor_write(0, bytes([0xEE] * 8))
        await b.transaction(MW, BASE, data=[0x4433_2211, 0x8877_6655], be=0b1010)
        return await b.drv.backdoor_read(0, 8)
    assert run(target(), body) == bytes([0x11, 0xEE, 0x33, 0xEE, 0x55, 0xEE, 0x77, 0xEE])


def test_write_parity_error_perr_and_address_parity_serr():
    async def body(b):
        d = await b.transaction(MW, BASE, data=[1, 2, 3], bad_data_par=(1,))
        a = await b.transaction(MW, BASE, data=[1], bad_addr_par=True)
        return d, a, await b.drv.stats(), await b.drv.status()
    d, a, stats, status = run(target(serr_enable=1), body)
    # Data phase 1 completes in clock 3; PAR in clock 4; PERR# in clock 5, then released.
    assert d.clocks_where(perr=1) == [5]
    assert d.clocks[5]["perr_t"] == 1 and d.clocks[6]["perr_t"] == 0
    assert a.clocks_where(serr=1) == [3]
    assert stats["parity_errors"] == 2
    assert status & (1 << 15) and status & (1 << 14)


def test_configuration_space_and_bar():
    CR, CW = Command.CONFIG_READ, Command.CONFIG_WRITE

    async def body(b):
        ident = (await b.transaction(CR, 0x00, idsel=True)).data
        no = await b.transaction(CR, 0x00)
        await b.transaction(CW, 0x10, data=[0xFFFF_FFFF], idsel=True)
        size = (await b.transaction(CR, 0x10, idsel=True)).data
        await b.transaction(CW, 0x10, data=[0x2000_0000], idsel=True)
        await b.transaction(CW, 0x0C, data=[0x0000_0010], be=0b1110, idsel=True)
        cls = (await b.transaction(CR, 0x0C, idsel=True)).data
        cmd = (await b.transaction(CR, 0x04, idsel=True)).data
        w = await b.transaction(MW, 0x2000_0008, data=[0xCAFE])
        raw = await b.drv.backdoor_read(8, 4)
        return ident, no, size, cls, cmd, w, raw
    ident, no, size, cls, cmd, w, raw = run(
        target(config_enable=1, vendor_id=0x1172, device_id=0x5043,
               devsel_speed=DevselSpeed.MEDIUM.value), body)
    assert ident == [0x5043_1172]
    assert no.termination == "master_abort"
    assert size == [0xFFFF_F000]                   # 4 KiB memory BAR
    assert cls == [0x10]
    assert cmd[0] >> 16 & 0x600 == 0x200           # DEVSEL timing: medium
    assert w.termination == "completion" and raw == (0xCAFE).to_bytes(4, "little")


def test_refused_values_and_backdoor_registers():
    async def body(b):
        await b.ctl.write(Reg.LAT_READ, 0x0510)         # min 16 > max 5
        err = await b.ctl.read(Reg.ERROR)
        lat = await b.ctl.read(Reg.LAT_READ)
        ev = await b.drv.events()
        raised = None
        try:
            await b.drv.set_fields(mem_size=0x3000)
        except TargetConfigError as e:
            raised = str(e)
        await b.drv.backdoor_write(5, b"\x01\x02\x03\x04\x05")
        back = await b.drv.backdoor_read(4, 8)
        return err, lat, ev, raised, back, await b.ctl.read(Reg.INFO)
    err, lat, ev, raised, back, info = run(target(), body)
    assert err == (1 | Reg.LAT_READ << 16) and lat == 0
    assert info == 32 | 10 << 8
    assert ev & (1 << Event.REFUSED)
    assert "power of two" in raised
    assert back == b"\x00\x01\x02\x03\x04\x05\x00\x00"


def test_profiles_apply():
    async def body(b):
        await b.drv.apply_profile("alphastation200", seed=3)
        res = await b.transaction(MW, BASE, data=list(range(20)))
        return res, await b.ctl.read(Reg.SEED)
    res, seed = run(target(), body)
    assert res.phases == 16 and res.termination == "disconnect_data" and seed == 3
    assert res.first("devsel") == 3
    for p in PROFILES.values():
        for width in (32, 64):
            check_profile(p, width=width)
        # The latency rules a profile breaks are declared (16 clocks; 32 for a bridge).
        worst = max(p.read_latency[1], p.write_latency[1])
        expected = {"target_initial_latency"} if worst > 16 else set()
        expected |= {"target_initial_latency_bridge"} if worst > 32 else set()
        assert set(p.breaks_rules) == expected, p.name
        assert set(p.breaks_rules) <= set(RULES_BY_NAME), p.name
    assert [n for n, p in PROFILES.items() if not p.deterministic] == ["pentiumpro200", "rtc",
                                                                     "dellpro200"]
    assert not PROFILES["ideal"].but(retry=RetryMode.RANDOM, retry_probability=10).deterministic
    assert PROFILES["ideal"].but(retry=RetryMode.EVERY, retry_count=3).deterministic
    with pytest.raises(TargetConfigError, match="read latency min > max"):
        check_profile(PROFILES["ideal"].but(read_latency=(9, 3)))


# --- error-injection knobs: each one's waveform ---------------------------------------------

#: The checker rule each knob breaks (pcispy/check/checker.py), and nothing else.
KNOB_RULES = {
    Knob.TRDY_WITHOUT_DEVSEL: "trdy_without_devsel",
    Knob.STOP_WITHOUT_CLAIM: "stop_without_claim",
    Knob.DEVSEL_ON_IDLE: "devsel_while_idle",
    Knob.DEVSEL_LATE: "devsel_late",
    Knob.DEVSEL_DROP: "devsel_dropped",
    Knob.STOP_EARLY_RELEASE: "stop_released_early",
    Knob.TRDY_WITHDRAW: "trdy_withdrawn",
    Knob.TRDY_IN_TURNAROUND: "trdy_in_read_turnaround",
    Knob.INITIAL_LATENCY_17: "target_initial_latency",
    Knob.SUBSEQUENT_LATENCY_9: "target_subsequent_latency",
    Knob.BAD_PAR: "read_data_parity",
    Knob.BAD_PAR64: "data_parity64",
    Knob.PERR_WRONG_TIME: "perr_timing",
    Knob.ACK64_WITHOUT_REQ64: "ack64_without_req64",
    Knob.ACK64_LATE: "ack64_devsel_mismatch",
    Knob.IGNORE_BURST_ORDER: "reserved_burst_order_continued",
    Knob.READ_DATA_CHANGE: "read_data_changed_in_wait",
    Knob.CLAIM_SPECIAL: "devsel_on_special_cycle",
    Knob.STOP_ADDED_IN_WAIT: "target_response_changed",
    Knob.TRDY_AFTER_STOP: "data_after_stop",
    Knob.PERR_ON_GOOD_DATA: "perr_without_parity_error",
    Knob.DEVSEL_IN_RESET: "signals_during_reset",
    Knob.PERR_RELEASED_EARLY: "perr_released_early",
}


def test_every_knob_names_its_rule():
    assert set(KNOB_RULES) == set(Knob)


def knob_run(knob, txn, width=32, phase=None, driver_problems=(), **fields):
    """Run ``txn`` with ``knob`` set; check the checker saw exactly the knob's rule (and
    the target's drivers broke only ``driver_problems``)."""
    async def body(b):
        await b.drv.inject(knob, bad_par_phase=phase)
        return await txn(b)
    res, rules = run(target(width=width, **fields), body, checked=True,
                     driver_problems=driver_problems)
    assert rules == {KNOB_RULES[knob]}, (knob.name, rules)
    return res


def test_knob_a_trdy_without_devsel():
    res = knob_run(Knob.TRDY_WITHOUT_DEVSEL, lambda b: b.transaction(MW, BASE, data=[1]))
    assert res.first("trdy") == 2 and res.first("devsel") is None


def test_knob_b_stop_without_claim():
    res = knob_run(Knob.STOP_WITHOUT_CLAIM, lambda b: b.transaction(MW, BASE, data=[1]))
    assert res.first("stop") == 2 and res.first("devsel") is None


def test_knob_c_devsel_on_idle():
    async def body(b):
        await b.drv.inject(Knob.DEVSEL_ON_IDLE)
        snaps = await b.idle(6)
        return snaps, await b.ctl.read(Reg.INJECT)
    (snaps, inject), rules = run(target(), body, checked=True)
    assert rules == {KNOB_RULES[Knob.DEVSEL_ON_IDLE]}
    assert [s["devsel"] for s in snaps].count(1) == 1
    assert all(not s["frame"] and not s["irdy"] for s in snaps)
    assert inject == 0


def test_knob_d_devsel_late():
    res = knob_run(Knob.DEVSEL_LATE, lambda b: b.transaction(MW, BASE, data=[1]))
    assert res.first("devsel") == 6


def test_knob_e_devsel_drop():
    res = knob_run(Knob.DEVSEL_DROP, lambda b: b.transaction(MW, BASE, data=[1, 2, 3]))
    dev = [c["devsel"] for c in res.clocks[1:6]]
    assert dev == [1, 0, 1, 1, 0] or dev[:3] == [1, 0, 1]
    assert res.clocks_where(stop=1) == [] and res.phases == 3


def test_knob_f_stop_early_release():
    res = knob_run(Knob.STOP_EARLY_RELEASE, lambda b: b.transaction(MW, BASE, data=[1, 2, 3]),
                   disconnect_mode=DisconnectMode.WITHOUT_DATA.value, disconnect_every=1)
    s = res.first("stop")
    assert res.clocks[s - 1]["frame"] == 1 and res.clocks[s]["stop"] == 0
    assert res.clocks[s + 1]["stop"] == 1 and res.termination == "disconnect_nodata"
    assert res.phases == 1


def test_knob_g_trdy_withdraw():
    res = knob_run(Knob.TRDY_WITHDRAW,
                   lambda b: b.transaction(MW, BASE, data=[1], irdy_waits={0: 2}))
    assert [c["trdy"] for c in res.clocks[1:5]] == [1, 0, 1, 0]
    assert res.clocks_where(trdy=1, irdy=1) == [4] and res.phases == 1


def test_knob_h_trdy_in_turnaround():
    # The word moved in the turnaround clock (2) is the pulled-up AD, and nobody drives PAR
    # for it in clock 3 either; byte enables of odd parity (0001) make the pulled-up PAR
    # right for it, so only the turnaround rule breaks.
    res = knob_run(Knob.TRDY_IN_TURNAROUND,
                   lambda b: b.transaction(MR, BASE, count=2, be=0b0001))
    assert res.first("trdy") == 2
    assert [(c["ad_t"], c["par_t"]) for c in res.clocks[1:4]] == [(0, 0), (1, 0), (0, 1)]


def test_knob_i_initial_latency():
    res = knob_run(Knob.INITIAL_LATENCY_17, lambda b: b.transaction(MR, BASE))
    assert res.first("trdy") == 18


def test_knob_j_subsequent_latency():
    res = knob_run(Knob.SUBSEQUENT_LATENCY_9, lambda b: b.transaction(MR, BASE, count=2))
    assert res.clocks_where(trdy=1, irdy=1) == [3, 12]


def test_knob_k_bad_par():
    res = knob_run(Knob.BAD_PAR, lambda b: b.transaction(MR, BASE, count=3), phase=2)
    c, nxt = res.clocks[4], res.clocks[5]           # phase 2 in clock 5
    assert nxt["par"] != parity(c["ad"], c["cbe"])
    c, nxt = res.clocks[3], res.clocks[4]
    assert nxt["par"] == parity(c["ad"], c["cbe"])


def test_knob_l_bad_par64():
    res = knob_run(Knob.BAD_PAR64, lambda b: b.transaction(MR, BASE, count=1, req64=True),
                   width=64, ack64_capable=1, phase=0)
    c, nxt = res.clocks[2], res.clocks[3]
    assert nxt["par64"] != parity(c["ad_hi"], c["cbe_hi"])
    assert nxt["par"] == parity(c["ad"], c["cbe"])


def test_knob_m_perr_wrong_time():
    res = knob_run(Knob.PERR_WRONG_TIME, lambda b: b.transaction(MR, BASE))
    assert res.clocks_where(perr=1) == [2]


def test_knob_n_ack64_without_req64():
    res = knob_run(Knob.ACK64_WITHOUT_REQ64, lambda b: b.transaction(MR, BASE),
                   width=64, ack64_capable=1)
    assert res.first("ack64") == 2 and res.clocks[0]["req64"] == 0


def test_knob_o_ack64_late():
    res = knob_run(Knob.ACK64_LATE, lambda b: b.transaction(MR, BASE, count=2, req64=True),
                   width=64, ack64_capable=1)
    assert res.first("devsel") == 2 and res.first("ack64") == 3


def test_knob_p_ignore_burst_order():
    res = knob_run(Knob.IGNORE_BURST_ORDER, lambda b: b.transaction(MW, BASE | 1, data=[1, 2, 3]))
    assert res.phases == 3 and res.termination == "completion"


def test_knob_q_read_data_change():
    async def body(b):
        await b.drv.backdoor_write(0, b"\x11\x22\x33\x44")
        await b.drv.inject(Knob.READ_DATA_CHANGE)
        return await b.transaction(MR, BASE, irdy_waits={0: 3})
    res, rules = run(target(), body, checked=True)
    assert rules == {KNOB_RULES[Knob.READ_DATA_CHANGE]}
    waiting = res.clocks_where(trdy=1, irdy=0)
    values = {res.clocks[n - 1]["ad"] for n in waiting}
    assert len(waiting) >= 2 and len(values) == 2


def test_knob_r_claim_special():
    res = knob_run(Knob.CLAIM_SPECIAL,
                   lambda b: b.transaction(Command.SPECIAL_CYCLE, 0, data=[0x1234]))
    assert res.first("devsel") == 2


def test_knob_s_stop_added_in_wait():
    res = knob_run(Knob.STOP_ADDED_IN_WAIT,
                   lambda b: b.transaction(MW, BASE, data=[1, 2], irdy_waits={0: 3}))
    # TRDY# from clock 2; STOP# joins it in clock 3 while IRDY# still waits; the word moves
    # with both (a disconnect with data) once IRDY# comes.
    assert [c["trdy"] for c in res.clocks[1:4]] == [1, 1, 1]
    assert [c["stop"] for c in res.clocks[1:4]] == [0, 1, 1]
    assert res.clocks_where(trdy=1, irdy=1) == [4]
    assert res.termination == "disconnect_data" and res.phases == 1


def test_knob_t_trdy_after_stop():
    res = knob_run(Knob.TRDY_AFTER_STOP, lambda b: b.transaction(MW, BASE, data=[1, 2, 3]),
                   disconnect_mode=DisconnectMode.WITH_DATA.value, disconnect_every=1)
    # Phase 0 moves with STOP# (FRAME# still asserted); TRDY# stays for the initiator's
    # final phase, so a second word moves although STOP# was given.
    assert res.clocks_where(trdy=1, irdy=1) == [2, 3]
    assert res.clocks_where(stop=1) == [2, 3] and res.clocks[2]["frame"] == 0
    assert res.phases == 2


def test_knob_u_perr_on_good_data():
    res = knob_run(Knob.PERR_ON_GOOD_DATA, lambda b: b.transaction(MW, BASE, data=[5]))
    c, nxt = res.clocks[1], res.clocks[2]
    assert nxt["par"] == parity(c["ad"], c["cbe"])      # the data's parity was right
    assert res.clocks_where(trdy=1, irdy=1) == [2] and res.clocks_where(perr=1) == [4]


def test_knob_v_devsel_in_reset():
    """DEVSEL# is driven while RST# is asserted (the knob outlives that reset), never
    outside it, and the knob disarms itself when RST# is released."""
    async def body(b):
        await b.drv.inject(Knob.DEVSEL_IN_RESET)
        seen = []
        for rst in (0, 1, 1, 1, 0, 0, 1, 1, 0):
            # RST# for the whole of this clock: the bus as it is then, then the next clock.
            b.ctx.set(b.bus.rst.i, rst)
            b.ctx.set(b.checker.bus.rst, rst)
            snap = b.resolve()
            seen.append((snap["devsel"], snap["devsel_t"]))
            await b.tick()
        return seen
    seen, rules = run(target(), body, checked=True)
    assert rules == {KNOB_RULES[Knob.DEVSEL_IN_RESET]}
    # Armed: asserted through the first reset, driven deasserted for the clock after it (a
    # sustained tri-state line), then released; disarmed: not again.
    assert seen == [(0, 0), (1, 1), (1, 1), (1, 1), (0, 1), (0, 0), (0, 0), (0, 0), (0, 0)]


def _early_perr(b, **kwargs):
    """A one-DWORD write the target waits for (TRDY# in clock 5, IRDY# from clock 2), then
    two idle clocks: every clock from the address phase to the PERR# tail."""
    async def clocks():
        res = await b.transaction(MW, BASE, data=[5], **kwargs)
        return res.clocks + await b.idle(2)
    return clocks()


_WAIT_FIELDS = {"write_latency_min": 4, "write_latency_max": 4}


def test_knob_w_perr_released_early():
    """The write data's PAR is wrong while the phase waits (clocks 3 and 4 cover clocks 2
    and 3), right after it completes (clock 5): the knob reports the error at once (clock
    4) but for one clock only, so PERR# is gone before completion + 2 (clock 7)."""
    clocks = knob_run(Knob.PERR_RELEASED_EARLY,
                      lambda b: _early_perr(b, bad_wait_par=(0,)), **_WAIT_FIELDS)
    assert [n for n, c in enumerate(clocks, 1) if c["trdy"] and c["irdy"]] == [5]
    assert [n for n, c in enumerate(clocks, 1) if c["perr"]] == [4]
    assert [n for n, c in enumerate(clocks, 1) if c["perr_t"]] == [4, 5]


def test_early_perr_held_to_completion_plus_two():
    """``perr_early``: the parity error shows while the phase waits (PAR of clock 3 covers
    clock 2); PERR# from clock 4, held through clock 7 (completion in 5, + 2), driven
    deasserted in 8, released in 9. The data's PAR stays wrong after completion too, so
    the checker sees that write parity error and nothing about PERR#."""
    async def body(b):
        clocks = await _early_perr(b, bad_wait_par=(0,), bad_data_par=(0,))
        return clocks, await b.drv.stats(), await b.drv.status()
    (clocks, stats, status), rules = run(target(perr_early=1, **_WAIT_FIELDS), body,
                                         checked=True)
    assert rules == {"write_data_parity"}
    assert [n for n, c in enumerate(clocks, 1) if c["trdy"] and c["irdy"]] == [5]
    assert [n for n, c in enumerate(clocks, 1) if c["perr"]] == [4, 5, 6, 7]
    assert [n for n, c in enumerate(clocks, 1) if c["perr_t"]] == [4, 5, 6, 7, 8]
    # One parity error, seen early: counted once.
    assert stats["parity_errors"] == 1 and status & (1 << 15)


def test_early_perr_off_reports_two_clocks_after_completion():
    async def body(b):
        return await _early_perr(b, bad_wait_par=(0,), bad_data_par=(0,))
    clocks, rules = run(target(**_WAIT_FIELDS), body, checked=True)
    assert rules == {"write_data_parity"}
    assert [n for n, c in enumerate(clocks, 1) if c["perr"]] == [7]
    assert [n for n, c in enumerate(clocks, 1) if c["perr_t"]] == [7, 8]


def _enabled(clocks, line):
    """``"0110..."``: whether the target drove ``line`` in each clock, clock 1 first."""
    return "".join(str(c[line + "_t"]) for c in clocks)


def _values(clocks, line):
    return "".join(str(c[line] & 1) for c in clocks)


@pytest.mark.parametrize("case", ["write", "read", "retry", "target_abort", "disconnect"])
def test_target_lines_claim_to_release(case):
    """DEVSEL#, TRDY#, STOP# driven from the claim through the last data phase, driven
    deasserted one clock, then released; read data from clock 3 to the last data phase
    and PAR a clock behind it (PCI LB 3.0 §2.1, §3.3.1)."""
    fields, txn = {
        "write": ({}, lambda b: b.transaction(MW, BASE, data=[1, 2])),
        "read": ({}, lambda b: b.transaction(MR, BASE, count=2)),
        "retry": ({"retry_mode": RetryMode.FIRST.value, "retry_count": 1,
                   "devsel_speed": DevselSpeed.MEDIUM.value},
                  lambda b: b.transaction(MW, BASE, data=[1])),
        "target_abort": ({"abort_base": BASE, "abort_size": 0x100},
                         lambda b: b.transaction(MR, BASE, count=2)),
        "disconnect": ({"disconnect_mode": DisconnectMode.WITH_DATA.value,
                        "disconnect_every": 1},
                       lambda b: b.transaction(MR, BASE, count=3)),
    }[case]

    async def body(b):
        return await txn(b)
    res, rules = run(target(**fields), body, checked=True)
    assert rules == set()
    c = res.clocks
    expected = {
        # (DEVSEL#/TRDY#/STOP# enables, DEVSEL#, TRDY#, STOP#, AD enable, PAR enable)
        "write":        ("011100", "011000", "011000", "000000", "000000", "000000"),
        "read":         ("0111100", "0111000", "0011000", "0000000", "0011000", "0001100"),
        "retry":        ("001100", "001000", "000000", "001000", "000000", "000000"),
        # STOP# in clock 3 completes phase 0 with FRAME# still asserted: STOP# held through
        # the final phase (clock 4), where FRAME# is deasserted.
        "target_abort": ("0111100", "0100000", "0000000", "0011000", "0000000", "0000000"),
        "disconnect":   ("0111100", "0111000", "0010000", "0011000", "0011000", "0001100"),
    }[case]
    got = (_enabled(c, "devsel"), _values(c, "devsel"), _values(c, "trdy"),
           _values(c, "stop"), _enabled(c, "ad"), _enabled(c, "par"))
    assert got == expected
    assert _enabled(c, "trdy") == _enabled(c, "stop") == expected[0]


def test_legacy_device_releases_its_lines():
    async def body(b):
        return await b.transaction(IOR, 0x71, be=0b1101)
    res = run(LegacyDevice(profile=RTC.but(retry=RetryMode.NONE)), body)
    last = res.clocks_where(trdy=1, irdy=1)[-1]          # latency 39: clock 40

    def at(clock, line):
        return res.clocks[clock - 1][line]
    assert last == 40 and res.first("devsel") == 5       # subtractive decode
    assert [at(n, "devsel_t") for n in (last, last + 1, last + 2)] == [1, 1, 0]
    assert [at(n, "devsel") for n in (last, last + 1)] == [1, 0]
    # Read data from the claim (clock 5) through the last data phase, PAR a clock behind.
    assert [at(n, "ad_t") for n in (4, 5, last, last + 1)] == [0, 1, 1, 0]
    assert [at(n, "par_t") for n in (5, 6, last + 1, last + 2)] == [0, 1, 1, 0]


def test_checker_clean_under_profiles():
    """Without knobs the target keeps every rule, under every host profile that keeps
    the latency rules (and its waits, disconnects, retries, aborts)."""
    async def body(b):
        await b.drv.backdoor_write(0, bytes(range(64)))
        seen = []
        for name, p in PROFILES.items():
            if p.breaks_rules:
                continue
            await b.drv.apply_profile(p.but(retry=RetryMode.EVERY, retry_count=2,
                                            abort_range=(BASE + 0x800, 0x100)))
            for cmd, kw in ((MW, {"data": list(range(20))}), (MR, {"count": 20}),
                            (MR, {"count": 3, "irdy_waits": {1: 2}}),
                            (MW, {"data": [1, 2], "irdy_waits": {0: 1}}),
                            (MR, {"count": 2})):
                seen.append((await b.transaction(cmd, BASE, **kw)).termination)
            for _ in range(2):   # every second one is retried: the other aborts
                seen.append((await b.transaction(MW, BASE + 0x800, data=[1])).termination)
        return seen
    seen, rules = run(target(), body, checked=True)
    assert rules == set()
    assert {"retry", "target_abort", "completion", "disconnect_data"} <= set(seen)


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_random_traffic_scoreboard(seed):
    """Random memory traffic (commands, lengths, byte enables, IRDY# waits) under random
    waits/disconnects/retries: memory matches a Python scoreboard, the bus stays clean."""
    import random
    rnd = random.Random(seed)
    profile = PROFILES["ideal"].but(
        devsel=rnd.choice(list(DevselSpeed)),
        read_latency=(rnd.randint(0, 6),) * 2, write_latency=(rnd.randint(0, 4),) * 2,
        wait_mask=rnd.getrandbits(16), wait_period=rnd.randint(1, 16),
        wait_clocks=rnd.randint(0, 3),
        disconnect=rnd.choice(list(DisconnectMode)), disconnect_every=rnd.randint(1, 6),
        cache_line_dwords=rnd.choice([4, 8]),
        retry=RetryMode.RANDOM, retry_probability=rnd.randint(0, 80), ack64=True)
    width = rnd.choice([32, 64])
    size = 256

    async def body(b):
        await b.drv.apply_profile(profile, seed=seed)
        model = bytearray(rnd.getrandbits(8) for _ in range(size))
        await b.drv.backdoor_write(0, bytes(model))
        for _ in range(14):
            dword = rnd.randrange(size // 4 - 8)
            count = rnd.randint(1, 8)
            wide = width == 64 and rnd.random() < 0.5
            if wide:
                dword &= ~1
            step = 8 if wide else 4
            waits = {rnd.randrange(count): rnd.randint(1, 3)} if rnd.random() < 0.5 else {}
            if rnd.random() < 0.5:
                words = [rnd.getrandbits(64 if wide else 32) for _ in range(count)]
                be = rnd.getrandbits(8 if wide else 4)
                res = await b.transaction(rnd.choice([MW, Command.MEM_WRITE_INVALIDATE])
                                          if not be and not wide else MW,
                                          BASE + 4 * dword, data=words, be=be, req64=wide,
                                          irdy_waits=waits)
                lanes = [not (be >> i & 1) for i in range(step)]
                for phase in range(res.phases):
                    for i in range(step):
                        if lanes[i]:
                            model[4 * dword + step * phase + i] = words[phase] >> (8 * i) & 0xFF
            else:
                res = await b.transaction(rnd.choice([MR, Command.MEM_READ_LINE,
                                                      Command.MEM_READ_MULTIPLE]),
                                          BASE + 4 * dword, count=count, req64=wide,
                                          irdy_waits=waits)
                for phase, word in enumerate(res.data):
                    at = 4 * dword + step * phase
                    assert word == int.from_bytes(model[at:at + step], "little"), \
                        f"seed {seed}: read at {at:#x}"
            assert res.phases <= count, f"seed {seed}"
        assert await b.drv.backdoor_read(0, size) == bytes(model), f"seed {seed}: memory"
        return True

    ok, rules = run(target(width=width), body, checked=True)
    assert ok and rules == set(), f"seed {seed}: {rules}"


def test_knobs_refused_on_32bit():
    async def body(b):
        try:
            await b.drv.inject(Knob.ACK64_LATE)
        except TargetConfigError as e:
            return str(e)
    assert "64-bit" in run(target(), body)


# --- the legacy device -----------------------------------------------------------------------


def test_legacy_rtc_latencies_and_data():
    async def body(b):
        await b.drv.cmos_write(0x0E, b"\x5A")
        writes, reads = [], []
        for i in range(6):
            w = await b.transaction(IOW, 0x70, data=[0x0E], be=0b1110)
            r = await b.transaction(IOR, 0x71, be=0b1101)
            writes.append((w.first("trdy") - 1, w.termination))
            reads.append((r.first("trdy") - 1, (r.data[0] >> 8) & 0xFF, r.first("devsel")))
        await b.transaction(IOW, 0x71, data=[0x7700], be=0b1101)
        return writes, reads, await b.drv.cmos_read(0x0E, 1)
    writes, reads, cmos = run(LegacyDevice(profile=RTC.but(retry=RetryMode.NONE)), body)
    assert all(31 <= lat <= 34 and t == "completion" for lat, t in writes), writes
    assert len({lat for lat, _ in writes}) > 1
    assert reads == [(39, 0x5A, 5)] * 6
    assert cmos == b"\x77"


@pytest.mark.parametrize("seed", [1, 2])
def test_legacy_retry_runs(seed):
    """The RTC profile: about one write in six (43/256) is retried 7 times in a row."""
    async def body(b):
        runs = []
        for _ in range(16):
            run_len = 0
            while True:
                w = await b.transaction(IOW, 0x70, data=[0x0A], be=0b1110)
                if w.termination != "retry":
                    break
                assert w.first("stop") == 5 and w.clocks_where(trdy=1) == []
                run_len += 1
            runs.append(run_len)
        return runs, await b.drv.stats()
    runs, stats = run(LegacyDevice(seed=seed), body)
    assert set(runs) == {0, 7}, f"seed {seed}: {runs}"
    assert stats["retries"] == 7 * runs.count(7), f"seed {seed}"
