# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the PCI initiator against a small scripted target, with the pads' timing.

The harness puts the initiator behind a model of the pads (output and output-enable
flip-flops, one extra deasserted clock on sustained tri-state lines, registered inputs
plus the unregistered handshake lines), resolves the bus with the target's drivers and
pull-ups, and flags two drivers on AD. The scripted target is written from the PCI rules
(PCI LB 3.0 §3.3, §3.6.1), clock by clock, in Python: it answers on the pins, never
looking inside the initiator.
"""

import random

import pytest
from amaranth import Cat, Module, Signal, Mux
from amaranth.sim import Simulator

from pcispy.pci.bus import Command, Termination, SUSTAINED_TRISTATE, bus_lines, parity
from pcispy.core.initiator import Initiator, DescriptorResult
from pcispy.dma.patterns import Pattern, PatternGenerator
from pcispy.tests import reusable_sim

__all__ = ["Harness", "ScriptedTarget", "run", "simulate"]

pytestmark = pytest.mark.dma

#: Lines the scripted target (or the test) may drive.
TARGET_LINES = ("ad", "ad_hi", "par", "par64", "trdy", "stop", "devsel", "ack64", "perr")


class Harness:
    """Pads + resolver around ``dut`` (an :class:`Initiator`, or a block holding one).

    ``bus`` is the initiator's bus port; ``now`` its handshake port.
    """
    def __init__(self, bus, now, width):
        self.m = m = Module()
        self.width = width
        self.pins = {}       # resolved inside-level value of every line
        self.tgt = {}        # (o, oe) the target drives, set by the testbench
        self.clash = Signal()
        self.drive = {}      # (o, oe) on the pins from the board's output flip-flops
        for name, bits in bus_lines(width).items():
            port = getattr(bus, name)
            pin_o = Signal(bits, name=f"pad_{name}_o")
            pin_oe = Signal(name=f"pad_{name}_oe")
            owned = Signal(name=f"pad_{name}_owned")
            m.d.pci += owned.eq(port.oe)
            sts = name in SUSTAINED_TRISTATE
            # Output flip-flops; s/t/s lines are driven deasserted one clock after release.
            if name in ("par", "par64"):
                # The pads make PAR from the AD they drove and C/BE# one clock earlier.
                ad, cbe = ("ad", "cbe") if name == "par" else ("ad_hi", "cbe_hi")
                ad_o, ad_oe = self.drive[ad]
                m.d.pci += [pin_oe.eq(ad_oe),
                            pin_o.eq(Cat(ad_o, self.pins[cbe]).xor())]
            else:
                m.d.pci += [pin_oe.eq(port.oe | (owned if sts else 0)),
                             pin_o.eq(Mux(port.oe, port.o, 0))]
            self.drive[name] = (pin_o, pin_oe)
            pull = (1 << bits) - 1 if name in ("ad", "ad_hi", "cbe", "cbe_hi", "par", "par64") else 0
            value = Signal(bits, name=f"bus_{name}")
            if name in TARGET_LINES or name == "gnt":
                t_o = Signal(bits, name=f"tgt_{name}_o")
                t_oe = Signal(name=f"tgt_{name}_oe")
                self.tgt[name] = (t_o, t_oe)
                m.d.comb += value.eq(Mux(pin_oe, pin_o, Mux(t_oe, t_o, pull)))
                if name in ("ad", "ad_hi", "par", "par64", "perr"):
                    with m.If(pin_oe & t_oe):
                        m.d.pci += self.clash.eq(1)
            else:
                m.d.comb += value.eq(Mux(pin_oe, pin_o, pull))
            self.pins[name] = value
            m.d.pci += port.i.eq(value)          # input flip-flops
            if hasattr(now, name):
                m.d.comb += getattr(now, name).eq(value)
        # The pads' live parity check: PAR now against AD and C/BE# of the previous clock.
        self.par_error = Signal()
        self.par64_error = Signal()
        m.d.comb += self.par_error.eq(Cat(bus.ad.i, bus.cbe.i, self.pins["par"]).xor())
        if width == 64:
            m.d.comb += self.par64_error.eq(
                Cat(bus.ad_hi.i, bus.cbe_hi.i, self.pins["par64"]).xor())


    def drive_target(self, ctx, out):
        """Put the scripted target's outputs (``{line: value or None}``) on the bus."""
        for name, (o_sig, oe_sig) in self.tgt.items():
            if name == "gnt":
                continue
            if out.get(name) is not None:
                ctx.set(o_sig, out[name])
                ctx.set(oe_sig, 1)
            else:
                ctx.set(oe_sig, 0)


class ScriptedTarget:
    """A PCI target answering on the pins, one decision per clock.

    Memory is a dict of DWORD address -> value. Knobs: ``devsel`` (1 fast .. 3 slow, None
    = never claim), ``wait0`` (wait states before the first data phase), ``wait`` (between
    phases), ``ack64``, ``retries`` (retry this many transactions first),
    ``disconnect`` ((n, with_data): end every transaction after n phases),
    ``abort_at`` (target abort at this data phase of the first transaction),
    ``bad_par`` (set of read phase numbers, counted over the whole run, whose PAR is wrong).
    """
    def __init__(self, memory=None, *, devsel=2, wait0=0, wait=0, ack64=True, retries=0,
                 disconnect=None, abort_at=None, bad_par=()):
        self.mem = {} if memory is None else memory
        self.devsel, self.wait0, self.wait = devsel, wait0, wait
        self.ack64, self.retries, self.disconnect = ack64, retries, disconnect
        self.abort_at, self.bad_par = abort_at, set(bad_par)
        self.t = 0
        self.prev = {"frame": 0, "irdy": 0}
        self.txn = None
        self.dac_lo = None
        self.out = {}
        self.read_phases = 0
        self.log = []        # (clock of address phase, cmd, address, data phases, how it ended)
        self.pending_par = None

    def step(self, s):
        """``s``: resolved pins sampled at the end of clock ``t``; returns outputs for t+1."""
        t, o = self.t, self.out
        self.t += 1
        nxt = {}
        if self.pending_par is not None:           # PAR one clock after our read data
            nxt["par"], nxt["par64"] = self.pending_par
            self.pending_par = None
        T = self.txn
        addr_phase = s["frame"] and not self.prev["frame"] and not self.prev["irdy"]
        if T is None and self.dac_lo is not None:
            addr, self.dac_lo = self.dac_lo | (s["ad"] << 32), None
            T = self._start(t, s, addr)
        elif T is None and addr_phase:
            if s["cbe"] == Command.DUAL_ADDRESS.value:
                self.dac_lo = s["ad"]
            else:
                T = self._start(t, s, s["ad"])
        elif T is not None:
            c = t - T["a"]
            xfer = s["irdy"] and o.get("trdy") and o.get("devsel")
            wide = bool(T["req64"] and o.get("ack64"))
            if xfer:
                n = 2 if wide else 1
                if T["write"]:
                    words = [s["ad"], s["ad_hi"]][:n]
                    for i, w in enumerate(words):
                        self.mem[T["addr"] // 4 + i] = w
                T["addr"] += 4 * n
                T["phases"] += 1
                T["next_ok"] = c + 1 + self.wait
            if not s["frame"] and (xfer or o.get("stop")):
                self.log.append((T["a"], T["cmd"], T["start"], T["phases"],
                                 "stop" if o.get("stop") else "done"))
                T = None
            else:
                nxt.update(self._drive(T, c + 1))
        self.txn = T
        if T is not None and T["c0"]:
            T["c0"] = False
            nxt.update(self._drive(T, 1))
        self.prev = {"frame": s["frame"], "irdy": s["irdy"]}
        self.out = {k: v for k, v in nxt.items() if k in ("trdy", "stop", "devsel", "ack64")}
        return nxt

    def _start(self, t, s, addr):
        if self.devsel is None:
            return None
        cmd = Command(s["cbe"])
        T = {"a": t, "cmd": cmd, "addr": addr, "start": addr, "write": cmd.value & 1,
             "req64": s.get("req64", 0), "phases": 0, "stopping": False, "c0": True,
             "retry": self.retries > 0, "abort": self.abort_at is not None,
             "next_ok": max(self.devsel, 1 if cmd.value & 1 else 2) + self.wait0}
        if self.retries > 0:
            self.retries -= 1
        if self.abort_at is not None:
            T["abort_phase"], self.abort_at = self.abort_at, None
        return T

    def _drive(self, T, c):
        """Target outputs for clock ``c`` of transaction ``T`` (address phase = 0)."""
        out = {}
        if T["stopping"]:
            return {"stop": 1, "devsel": T["stop_devsel"], "trdy": 0,
                    "ack64": T["stop_devsel"] and T["req64"] and self.ack64}
        if c < self.devsel:
            return out
        out["devsel"] = 1
        out["ack64"] = int(bool(T["req64"] and self.ack64))
        ready = c >= T["next_ok"]
        n = T["phases"]
        stop = trdy = 0
        if ready and T["retry"]:
            stop = 1
        elif ready and T["abort"] and n == T["abort_phase"]:
            stop, out["devsel"], out["ack64"] = 1, 0, 0
        elif self.disconnect is not None and ready and n == self.disconnect[0] - 1 and self.disconnect[1]:
            stop = trdy = 1
        elif self.disconnect is not None and n >= self.disconnect[0] and ready:
            stop = 1
        else:
            trdy = int(ready)
        out.update(trdy=trdy, stop=stop)
        if stop:
            T["stopping"], T["stop_devsel"] = True, out["devsel"]
        if not T["write"] and c >= 2:
            wide = T["req64"] and self.ack64
            lo = self.mem.get(T["addr"] // 4, 0)
            hi = self.mem.get(T["addr"] // 4 + 1, 0) if wide else 0
            out["ad"] = lo
            if wide:
                out["ad_hi"] = hi
            if trdy:
                bad = self.read_phases in self.bad_par
                self.read_phases += 1
            else:
                bad = False
            self.pending_par = (parity(lo, 0) ^ bad, parity(hi, 0) if wide else None)
        return out


class Run:
    """The result of :func:`run`: per-clock pin trace, events, target log, read words."""
    def __init__(self):
        self.trace = []
        self.events = []
        self.reads = []
        self.clash = False
        self.cbe_oe = []
        self.pad_oe = []     # per clock: {line: the board's output enable on the pin}


#: How the tests of this module build the initiator (``Initiator(expand_live=...)``): the
#: ``expand_live`` fixture builds it with the live lines as inputs of one decision
#: (folded, eight times faster to simulate), and tests marked :data:`BOTH_BUILDS` run
#: again with the decision built per value of them, as the FPGA build has it (in make
#: test-heavy, as is the proof). The expansion proof (pcispy/formal, ``expansion_prove``)
#: shows the two builds are the same machine, 32- and 64-bit, whatever the inputs, so
#: every test holds for both; the few run on both keep the proof's harness honest about
#: the instance.
_build = {"expand_live": None}


@pytest.fixture(autouse=True)
def expand_live(request):
    _build["expand_live"] = getattr(request, "param", False)
    yield _build["expand_live"]
    _build["expand_live"] = None


#: Run a test on the folded and on the expanded build.
BOTH_BUILDS = pytest.mark.parametrize(
    "expand_live", [pytest.param(False, id="folded"),
                    pytest.param(True, id="expanded", marks=pytest.mark.heavy)], indirect=True)


def run(descs, target, *, width=32, gnt=lambda t: 1, clocks=200, latency_timer=255,
        cache_line=8, irdy_wait=0, parity_response=1, stop_at=None, pattern=Pattern.COUNTER,
        seed=0x1000, gnt_allowed=lambda t: 1, drive_allowed=lambda t: 1, offer_from=0):
    """Run ``descs`` (list of dicts for :class:`Descriptor`) through an initiator, offered
    from clock ``offer_from`` on.
    ``gnt(t)`` is GNT# on the pin in clock ``t``; ``gnt_allowed(t)`` the initiator's
    permission to see it; ``drive_allowed(t)`` its permission to drive C/BE#.
    ``res.cbe_oe`` records the C/BE# enable it presents in each clock."""
    expand_live = _build["expand_live"]
    simulation = reusable_sim.shared(("initiator_gw", width, expand_live),
                                     lambda: _initiator_bench(width, expand_live),
                                     {"pci": 30e-9})
    dut, h, gen = simulation.handles
    res = Run()
    lines = list(bus_lines(width))

    async def bench(ctx):
        ctx.set(gen.pattern, pattern)
        ctx.set(gen.seed, seed)
        ctx.set(gen.restart, 1)
        ctx.set(dut.latency_timer, latency_timer)
        ctx.set(dut.cache_line, cache_line)
        ctx.set(dut.irdy_wait, irdy_wait)
        ctx.set(dut.parity_response, parity_response)
        await ctx.tick("pci")
        ctx.set(gen.restart, 0)
        queue = list(descs)
        for t in range(clocks):
            offering = bool(queue) and t >= offer_from
            if offering:
                d = queue[0]
                ctx.set(dut.desc.valid, 1)
                ctx.set(dut.desc.payload, {"cmd": d["cmd"], "addr": d["addr"],
                                           "dwords": d["dwords"], "wide": d.get("wide", 0),
                                           "more": d.get("more", 0)})
            else:
                ctx.set(dut.desc.valid, 0)
            # (This offer does not wait on the initiator's busy.)
            ctx.set(dut.offer_when_free, int(offering and queue[0]["dwords"] != 0))
            ctx.set(dut.stop, int(stop_at is not None and t == stop_at))
            ctx.set(h.tgt["gnt"][0], gnt(t))
            ctx.set(h.tgt["gnt"][1], 1)
            ctx.set(dut.gnt_allowed, gnt_allowed(t))
            ctx.set(dut.drive_allowed, drive_allowed(t))
            sampled = await ctx.tick("pci").sample(*[h.pins[n] for n in lines], dut.desc.ready,
                                              dut.events, dut.rdata, dut.status,
                                              *[h.drive[n][1] for n in lines], dut.bus.cbe.oe)
            values = sampled[2:-1 - len(lines)]
            res.pad_oe.append(dict(zip(lines, sampled[-1 - len(lines):-1])))
            res.cbe_oe.append(sampled[-1])
            s = {n: v for n, v in zip(lines, values)}
            s.setdefault("ad_hi", 0xFFFF_FFFF)
            ready, ev, rd, st = values[len(lines):]
            if offering and ready:
                queue.pop(0)
            res.trace.append(s)
            res.events.append({"start": ev.start, "end": ev.end, "term": Termination(ev.term),
                               "phase": ev.phase, "dwords": ev.dwords, "first": ev.first,
                               "latency": ev.latency, "done": ev.done,
                               "result": DescriptorResult(ev.result), "owning": ev.owning,
                               "gnt_wait": ev.gnt_wait,
                               "perr_status": st.master_data_parity})
            for i in range(rd.count):
                res.reads.append(rd.dw[i])
            h.drive_target(ctx, target.step(s))
        res.clash = ctx.get(h.clash)

    simulation.run(bench)
    return res


def simulate(m, bench):
    """Run ``bench`` on design ``m`` with a 33 MHz ``pci`` clock."""
    sim = Simulator(m)
    sim.add_clock(30e-9, domain="pci")
    sim.add_testbench(bench)
    sim.run()


def _initiator_bench(width, expand_live):
    """The initiator of ``width`` on a harness's bus, its write data from a pattern
    generator whose pattern and seed the bench sets: ``(design, (initiator, harness,
    generator))``. The tests of one build share its simulator (reset between them)."""
    dut = Initiator(width, expand_live=expand_live)
    h = Harness(dut.bus, dut.now, width)
    m = h.m
    m.submodules.dut = dut
    m.d.comb += [dut.par_error.eq(h.par_error), dut.par64_error.eq(h.par64_error)]
    m.submodules.gen = gen = PatternGenerator()
    ts = Signal(32)
    m.d.pci += ts.eq(ts + 1)
    m.d.comb += [gen.take.eq(dut.wdata_take), gen.timestamp.eq(ts), dut.wdata.eq(gen.window)]
    return m, (dut, h, gen)


def addr_phases(res):
    """Clock indices of address phases on the pins (FRAME# asserted after an idle bus)."""
    out = []
    for t in range(1, len(res.trace)):
        p, s = res.trace[t - 1], res.trace[t]
        if s["frame"] and not p["frame"] and not p["irdy"]:
            out.append(t)
    return out


def data_phases(res):
    return [t for t, s in enumerate(res.trace) if s["irdy"] and s["trdy"] and s["devsel"]]


def terms(res):
    return [e["term"] for e in res.events if e["end"]]


def counter_words(n, seed=0x1000):
    return [(seed + i) & 0xFFFF_FFFF for i in range(n)]


# --- tests -----------------------------------------------------------------------------

@BOTH_BUILDS
@pytest.mark.parametrize("burst", [1, 2, 16])
def test_write_burst_clock_exact(burst):
    """MW burst B with a fast zero-wait target: 1 address + B data + 1 idle clocks each."""
    tgt = ScriptedTarget(devsel=1)
    descs = [{"cmd": Command.MEM_WRITE, "addr": 0x100 + 4 * burst * i, "dwords": burst,
              "more": 1} for i in range(3)]
    res = run(descs, tgt, clocks=20 + 3 * (burst + 2))
    a = addr_phases(res)
    assert len(a) == 3
    assert [a[1] - a[0], a[2] - a[1]] == [burst + 2] * 2
    d = data_phases(res)
    assert d == [x + 1 + i for x in a for i in range(burst)]
    assert [tgt.mem[0x40 + i] for i in range(3 * burst)] == counter_words(3 * burst)
    assert terms(res) == [Termination.COMPLETION] * 3
    assert sum(e["done"] for e in res.events) == 3
    # FRAME# deasserted exactly on each last data phase; parity follows AD by one clock.
    for x in a:
        assert not res.trace[x + burst]["frame"] and res.trace[x + burst]["irdy"]
    # C/BE#: the command in the address phase, every byte enabled in the data phases.
    for x in a:
        assert res.trace[x]["cbe"] == Command.MEM_WRITE.value
        assert all(res.trace[x + 1 + i]["cbe"] == 0 for i in range(burst))
    assert not res.clash


def test_read_burst_turnaround_medium_devsel():
    """MR burst 8, medium DEVSEL: data from clock 3 (address = 1), AD turned around."""
    mem = {0x80 + i: 0xA5000000 + i for i in range(16)}
    tgt = ScriptedTarget(mem, devsel=2)
    res = run([{"cmd": Command.MEM_READ_MULTIPLE, "addr": 0x200, "dwords": 8}], tgt, clocks=30)
    (a,) = addr_phases(res)
    assert data_phases(res) == [a + 2 + i for i in range(8)]
    assert res.reads == [0xA5000000 + i for i in range(8)]
    assert res.trace[a]["cbe"] == Command.MEM_READ_MULTIPLE.value
    lat = [e["latency"] for e in res.events if e["first"]]
    assert lat == [2]
    assert not res.clash


def test_retry_storm_repeats_same_transaction():
    tgt = ScriptedTarget(devsel=1, retries=5)
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0x40, "dwords": 4}], tgt, clocks=60)
    a = addr_phases(res)
    assert len(a) == 6
    assert all(res.trace[x]["ad"] == 0x40 for x in a)
    assert terms(res) == [Termination.RETRY] * 5 + [Termination.COMPLETION]
    assert [tgt.mem[0x10 + i] for i in range(4)] == counter_words(4)
    # Retried at FRAME# asserted: address, one stopped phase, FRAME# off, idle, address.
    assert a[1] - a[0] == 4
    # REQ# deasserted for two clocks around the idle clock after each retry.
    assert not res.trace[a[0] + 2]["req"] and not res.trace[a[0] + 3]["req"]


@pytest.mark.parametrize("with_data", [True, False])
def test_disconnect_continues_at_next_address(with_data):
    tgt = ScriptedTarget(devsel=1, disconnect=(3, with_data))
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0x1000, "dwords": 10}], tgt, clocks=80)
    a = addr_phases(res)
    assert [res.trace[x]["ad"] for x in a] == [0x1000, 0x100C, 0x1018, 0x1024]
    assert [tgt.mem[0x400 + i] for i in range(10)] == counter_words(10)
    term = Termination.DISCONNECT_DATA if with_data else Termination.DISCONNECT_NODATA
    assert terms(res)[:3] == [term] * 3
    assert terms(res)[3] == (Termination.COMPLETION)


def test_target_abort_stops_and_reports():
    tgt = ScriptedTarget(devsel=1, abort_at=2)
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0x0, "dwords": 8}], tgt, clocks=30)
    assert len(addr_phases(res)) == 1
    assert terms(res) == [Termination.TARGET_ABORT]
    done = [e["result"] for e in res.events if e["done"]]
    assert done == [DescriptorResult.TARGET_ABORT]
    assert len(data_phases(res)) == 2


def test_master_abort_no_devsel():
    tgt = ScriptedTarget(devsel=None)
    res = run([{"cmd": Command.MEM_READ, "addr": 0x0, "dwords": 4}], tgt, clocks=20)
    (a,) = addr_phases(res)
    # No DEVSEL# by clock 5: FRAME# off in clock 6, IRDY# off in clock 7 (address = 1).
    assert res.trace[a + 4]["frame"] and not res.trace[a + 5]["frame"]
    assert res.trace[a + 5]["irdy"] and not res.trace[a + 6]["irdy"]
    assert terms(res) == [Termination.MASTER_ABORT]
    assert [e["result"] for e in res.events if e["done"]] == [DescriptorResult.MASTER_ABORT]


def test_latency_timer_with_gnt_removed():
    tgt = ScriptedTarget(devsel=1)
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0x0, "dwords": 32}], tgt, clocks=80,
              latency_timer=8, gnt=lambda t: int(not 8 <= t < 14))
    a = addr_phases(res)
    assert terms(res)[0] == Termination.LATENCY_TIMER
    # FRAME# asserted at a[0]; GNT# gone and timer expired: FRAME# drops at a[0] + 9.
    first = [t for t in data_phases(res) if a[0] < t < a[1]]
    assert first[-1] == a[0] + 9 and not res.trace[a[0] + 9]["frame"]
    assert a[1] >= 15
    # REQ# dropped while the burst ends (so an arbiter holding GNT# back returns it).
    assert not res.trace[a[0] + 10]["req"] and not res.trace[a[0] + 11]["req"]
    assert res.trace[a[0] + 13]["req"]
    assert [tgt.mem[i] for i in range(32)] == counter_words(32)


@pytest.mark.parametrize("withheld", [range(0, 10), range(8, 14)],
                         ids=["before_the_start", "in_the_burst"])
def test_gnt_withheld_by_permission_is_gnt_deasserted(withheld):
    """``gnt_allowed`` low (passive mode asked for) acts clock for clock as GNT#
    deasserted on the pin: the start waits for it, and a burst past its latency timer
    ends on it."""
    def withheld_gnt(t):
        return int(t not in withheld)

    def runs(**gnt):
        tgt = ScriptedTarget(devsel=1)
        res = run([{"cmd": Command.MEM_WRITE, "addr": 0x0, "dwords": 32}], tgt, clocks=80,
                  latency_timer=8, **gnt)
        return res, [{k: v for k, v in clock.items() if k != "gnt"} for clock in res.trace]
    by_pin, pins_a = runs(gnt=withheld_gnt)
    by_permission, pins_b = runs(gnt_allowed=withheld_gnt)
    assert pins_a == pins_b
    a = addr_phases(by_permission)
    if withheld.start == 0:
        assert a[0] == 11
    else:
        assert terms(by_permission)[0] == Termination.LATENCY_TIMER
    assert not by_permission.clash


def test_drive_permission_withholds_only_cbe_enable():
    """``drive_allowed`` low gates C/BE#'s enable (the pads leave it to the master) in
    exactly the clocks it is low, and changes nothing else the master does: FRAME#,
    IRDY#, AD and the events are those of the run with permission throughout."""
    withheld = range(3, 9)      # the address phase and the first data phases

    def runs(**allowed):
        tgt = ScriptedTarget(devsel=1)
        return run([{"cmd": Command.MEM_WRITE, "addr": 0x40, "dwords": 8}], tgt, clocks=20,
                   **allowed)
    free = runs()
    gated = runs(drive_allowed=lambda t: int(t not in withheld))
    assert any(free.cbe_oe[t] for t in withheld)
    assert gated.cbe_oe == [oe and t not in withheld for t, oe in enumerate(free.cbe_oe)]
    assert [{k: v for k, v in clock.items() if k in ("frame", "irdy", "ad")}
            for clock in gated.trace] == [
        {k: v for k, v in clock.items() if k in ("frame", "irdy", "ad")}
        for clock in free.trace]
    assert gated.events == free.events


@BOTH_BUILDS
def test_64bit_write_and_fallback_without_ack64():
    tgt = ScriptedTarget(devsel=1, ack64=True)
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0x100, "dwords": 8, "wide": 1}], tgt,
              width=64, clocks=20)
    (a,) = addr_phases(res)
    assert res.trace[a]["req64"]
    assert len(data_phases(res)) == 4
    assert [tgt.mem[0x40 + i] for i in range(8)] == counter_words(8)

    tgt = ScriptedTarget(devsel=1, ack64=False)
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0x100, "dwords": 8, "wide": 1}], tgt,
              width=64, clocks=30)
    assert len(data_phases(res)) == 8
    assert [tgt.mem[0x40 + i] for i in range(8)] == counter_words(8)


def test_64bit_read_fallback():
    mem = {0x40 + i: 0x5A00 + i for i in range(8)}
    for ack in (True, False):
        tgt = ScriptedTarget(dict(mem), devsel=1, ack64=ack)
        res = run([{"cmd": Command.MEM_READ_LINE, "addr": 0x100, "dwords": 8, "wide": 1}],
                  tgt, width=64, clocks=30)
        assert res.reads == [0x5A00 + i for i in range(8)]
        assert len(data_phases(res)) == (4 if ack else 8)


def test_perr_on_bad_read_parity():
    mem = {i: 0x1111 * i for i in range(8)}
    tgt = ScriptedTarget(mem, devsel=1, bad_par={2})
    res = run([{"cmd": Command.MEM_READ, "addr": 0x0, "dwords": 6}], tgt, clocks=30)
    d = data_phases(res)
    perr = [t for t, s in enumerate(res.trace) if s["perr"]]
    assert perr == [d[2] + 2]
    assert sum(e["perr_status"] for e in res.events) == 1


def test_dual_address_cycle():
    tgt = ScriptedTarget(devsel=1)
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0x1_2345_6780, "dwords": 2}], tgt, clocks=20)
    (a,) = addr_phases(res)
    assert res.trace[a]["cbe"] == Command.DUAL_ADDRESS.value
    assert res.trace[a + 1]["cbe"] == Command.MEM_WRITE.value
    assert res.trace[a + 1]["ad"] == 1
    assert tgt.mem[0x1_2345_6780 // 4] == 0x1000


def test_irdy_wait_states():
    tgt = ScriptedTarget(devsel=1)
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0, "dwords": 3}], tgt, clocks=20,
              irdy_wait=2)
    (a,) = addr_phases(res)
    assert data_phases(res) == [a + 3, a + 6, a + 9]
    assert [tgt.mem[i] for i in range(3)] == counter_words(3)


def test_mwi_whole_lines_only():
    """MWI from a misaligned address writes up to the line end as MW, then MWI."""
    tgt = ScriptedTarget(devsel=1)
    res = run([{"cmd": Command.MEM_WRITE_INVALIDATE, "addr": 0x18, "dwords": 10}], tgt,
              clocks=40, cache_line=8)
    a = addr_phases(res)
    assert [Command(res.trace[x]["cbe"]) for x in a] == [Command.MEM_WRITE,
                                                          Command.MEM_WRITE_INVALIDATE]
    assert [res.trace[x]["ad"] for x in a] == [0x18, 0x20]
    assert [tgt.mem[6 + i] for i in range(10)] == counter_words(10)


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_random_target_behaviour(seed):
    rng = random.Random(seed)
    try:
        width = rng.choice([32, 64])
        devsel = rng.choice([1, 2, 3])
        disc = rng.choice([None, (rng.randint(1, 5), rng.random() < 0.5)])
        tgt = ScriptedTarget(devsel=devsel, wait0=rng.randint(0, 3), wait=rng.randint(0, 2),
                             ack64=rng.random() < 0.5, retries=rng.randint(0, 3),
                             disconnect=disc)
        n = 2 * rng.randint(1, 12)
        write = rng.random() < 0.5
        cmd = Command.MEM_WRITE if write else rng.choice(
            [Command.MEM_READ, Command.MEM_READ_LINE, Command.MEM_READ_MULTIPLE])
        if not write:
            tgt.mem.update({0x200 + i: w for i, w in enumerate(counter_words(n, 0x77))})
        res = run([{"cmd": cmd, "addr": 0x800, "dwords": n, "wide": 1}], tgt,
                  width=width, clocks=400, irdy_wait=rng.randint(0, 2))
        if write:
            assert [tgt.mem.get(0x200 + i) for i in range(n)] == counter_words(n)
        else:
            assert res.reads == counter_words(n, 0x77)
        assert [e["result"] for e in res.events if e["done"]] == [DescriptorResult.OK]
        assert not res.clash
    except AssertionError:
        print(f"failing seed: {seed}")
        raise


def test_special_cycle_ends_without_devsel_as_completion():
    tgt = ScriptedTarget(devsel=None)
    res = run([{"cmd": Command.SPECIAL_CYCLE, "addr": 0, "dwords": 1}], tgt, clocks=16)
    (a,) = addr_phases(res)
    assert res.trace[a]["cbe"] == Command.SPECIAL_CYCLE.value
    assert [res.trace[a + i]["irdy"] for i in range(1, 7)] == [1, 1, 1, 1, 0, 0]
    assert terms(res) == [Termination.COMPLETION]
    assert [e["result"] for e in res.events if e["done"]] == [DescriptorResult.OK]


@pytest.mark.parametrize("cmd", [Command.IO_WRITE, Command.CONFIG_WRITE, Command.IO_READ,
                                 Command.CONFIG_READ, Command.INTERRUPT_ACK])
def test_non_memory_commands_are_32bit(cmd):
    """Only memory commands ask for 64-bit phases; the command code goes out as given."""
    tgt = ScriptedTarget({0x40: 0x1234, 0x41: 0x5678}, devsel=2)
    res = run([{"cmd": cmd, "addr": 0x100, "dwords": 2, "wide": 1}], tgt, width=64, clocks=20)
    (a,) = addr_phases(res)
    assert res.trace[a]["cbe"] == cmd.value and not res.trace[a]["req64"]
    assert len(data_phases(res)) == 2
    if cmd.value & 1:
        assert [tgt.mem[0x40], tgt.mem[0x41]] == counter_words(2)
    else:
        assert res.reads == [0x1234, 0x5678]


def test_empty_descriptor_finishes_without_a_transaction():
    tgt = ScriptedTarget(devsel=1)
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0, "dwords": 0},
               {"cmd": Command.MEM_WRITE, "addr": 0, "dwords": 1}], tgt, clocks=12)
    assert len(addr_phases(res)) == 1
    assert [e["result"] for e in res.events if e["done"]] == [DescriptorResult.OK] * 2


def test_mwi_latency_timer_ends_on_a_line_boundary():
    tgt = ScriptedTarget(devsel=1)
    res = run([{"cmd": Command.MEM_WRITE_INVALIDATE, "addr": 0x0, "dwords": 32}], tgt,
              clocks=80, cache_line=8, latency_timer=3, gnt=lambda t: int(not 4 <= t < 20))
    a = addr_phases(res)
    first = [t for t in data_phases(res) if a[0] < t < a[1]]
    # Expired at clock 3 with GNT# gone, but MWI finishes the cache line: 8 phases.
    assert len(first) == 8 and not res.trace[first[-1]]["frame"]
    assert terms(res)[0] == Termination.LATENCY_TIMER
    assert [tgt.mem[i] for i in range(32)] == counter_words(32)


def test_stop_ends_at_the_next_data_phase():
    tgt = ScriptedTarget(devsel=1)
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0x0, "dwords": 1000}], tgt, clocks=30,
              stop_at=10)
    (a,) = addr_phases(res)
    d = data_phases(res)
    # stop seen in clock 10 -> held a clock -> FRAME# off for the phase in clock 12.
    assert d[-1] == 12 and not res.trace[12]["frame"]
    assert [e["result"] for e in res.events if e["done"]] == [DescriptorResult.STOPPED]
    assert len(tgt.mem) == len(d)


def frame_dropped_in_wait(res):
    """Clocks where FRAME# went off while IRDY# still waited for the target (a PCI rule
    break: FRAME# may not change until the data phase completes)."""
    return [t for t in range(1, len(res.trace))
            if res.trace[t - 1]["irdy"] and res.trace[t - 1]["frame"]
            and not (res.trace[t - 1]["trdy"] or res.trace[t - 1]["stop"])
            and res.trace[t]["irdy"] and not res.trace[t]["frame"]]


def test_latency_timer_expiring_in_a_target_wait_keeps_frame_until_the_phase_completes():
    """Slow DEVSEL#, two target wait states per phase: the timer (8) expires with GNT#
    gone while phase 3 waits for TRDY#. FRAME# stays asserted through that phase; phase
    4 is the last (the system bench's seed 5 broke frame_dropped_in_wait here)."""
    tgt = ScriptedTarget(devsel=3, wait=2)
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0x0, "dwords": 32}], tgt, clocks=120,
              latency_timer=8, gnt=lambda t: int(not 7 <= t < 13))
    a = addr_phases(res)
    assert a[0] == 1
    first = [t for t in data_phases(res) if a[0] < t < a[1]]
    assert first == [4, 7, 10, 13]
    assert all(res.trace[t]["frame"] for t in range(1, 11))
    assert [res.trace[t]["frame"] for t in (11, 12, 13)] == [0, 0, 0]
    assert all(res.trace[t]["irdy"] for t in range(2, 14)) and not res.trace[14]["irdy"]
    assert frame_dropped_in_wait(res) == []
    assert terms(res)[0] == Termination.LATENCY_TIMER
    assert [tgt.mem[i] for i in range(32)] == counter_words(32)


def test_stop_request_in_a_target_wait_keeps_frame_until_the_phase_completes():
    """A stop request seen (clock 7, held a clock) while phase 3 waits for TRDY#: FRAME#
    stays asserted through it; phase 4 is the last."""
    tgt = ScriptedTarget(devsel=3, wait=2)
    res = run([{"cmd": Command.MEM_WRITE, "addr": 0x0, "dwords": 1000}], tgt, clocks=30,
              stop_at=7)
    assert data_phases(res) == [4, 7, 10, 13]
    assert res.trace[10]["frame"] and not res.trace[11]["frame"]
    assert frame_dropped_in_wait(res) == []
    assert [e["result"] for e in res.events if e["done"]] == [DescriptorResult.STOPPED]


def _last_data_phases(res):
    """Clock indices of the last data phase of each transaction (FRAME# deasserted,
    IRDY# and TRDY# asserted)."""
    return [t for t, c in enumerate(res.trace) if c["irdy"] and c["trdy"] and not c["frame"]]


@BOTH_BUILDS
@pytest.mark.parametrize("width", [32, 64])
@pytest.mark.parametrize("cmd", [Command.MEM_WRITE, Command.MEM_READ_MULTIPLE])
def test_frame_and_irdy_turnaround(cmd, width):
    """FRAME# is driven from the address phase to the last data phase (deasserted there)
    and released in the clock after it, where another master may start; IRDY# is not
    driven in the address phase (the previous master may still drive it deasserted
    then), but from the clock after it to the clock after the last data phase, driven
    deasserted there, then released (PCI LB 3.0 §3.3.3.1, s/t/s lines). A 64-bit
    master's REQ64# follows FRAME#."""
    tgt = ScriptedTarget({0x40 + i: i for i in range(16)}, devsel=2)
    wide = int(width == 64)
    descs = [{"cmd": cmd, "addr": 0x100, "dwords": 4 << wide, "wide": wide}]
    res = run(descs, tgt, width=width, clocks=40, gnt=lambda t: int(t < 6))
    [x] = addr_phases(res)
    [last] = _last_data_phases(res)
    oe = res.pad_oe
    frame_oe = [0] + [1] * (last - x + 1) + [0, 0]
    assert [oe[t]["frame"] for t in range(x - 1, last + 3)] == frame_oe
    if wide:
        assert [oe[t]["req64"] for t in range(x - 1, last + 3)] == frame_oe
    assert not res.trace[last]["frame"] and res.trace[last - 1]["frame"]
    assert [oe[t]["irdy"] for t in range(x - 1, last + 3)] == \
        [0, 0] + [1] * (last - x + 1) + [0]
    assert not res.trace[last + 1]["irdy"]
    assert not res.clash


@BOTH_BUILDS
def test_parking_drives_ad_cbe_then_par_and_releases_with_gnt():
    """GNT# on an idle bus with nothing to do: AD and C/BE# are driven from the next clock
    (PCI LB 3.0 §3.4.3 allows eight), PAR one clock later with the parity of what they
    carried; the clock after GNT# is sampled deasserted they float, PAR a clock later."""
    res = run([], ScriptedTarget(), clocks=40, gnt=lambda t: int(10 <= t < 20))
    oe = res.pad_oe
    for line in ("ad", "cbe"):
        assert [oe[t][line] for t in range(8, 24)] == [0] * 3 + [1] * 10 + [0] * 3, line
    assert [oe[t]["par"] for t in range(8, 24)] == [0] * 4 + [1] * 10 + [0] * 2
    assert [oe[t]["frame"] | oe[t]["irdy"] for t in range(40)] == [0] * 40
    for t in range(12, 21):
        assert res.trace[t]["par"] == parity(res.trace[t - 1]["ad"], res.trace[t - 1]["cbe"])


def test_no_parking_without_permission():
    """GNT# withheld by permission (passive mode) is no GNT#: the bus is not parked on us."""
    res = run([], ScriptedTarget(), clocks=30, gnt=lambda t: 1, gnt_allowed=lambda t: 0)
    assert all(not (c["ad"] or c["cbe"] or c["par"]) for c in res.pad_oe)


def test_parked_master_starts_from_the_parked_bus():
    """Parked, a descriptor arrives: the address phase follows on the AD and C/BE# already
    driven (the same driver, no turnaround needed), and after the transaction the bus is
    parked again once it is idle."""
    tgt = ScriptedTarget(devsel=1)
    descs = [{"cmd": Command.MEM_WRITE, "addr": 0x200, "dwords": 2}]
    res = run(descs, tgt, clocks=40, gnt=lambda t: 1, offer_from=10)
    [x] = addr_phases(res)
    [last] = _last_data_phases(res)
    oe = res.pad_oe
    assert x == 11
    assert all(oe[t]["ad"] and oe[t]["cbe"] for t in range(2, last + 1))
    assert not oe[last + 1]["ad"] and not oe[last + 1]["cbe"]
    assert all(oe[t]["ad"] and oe[t]["cbe"] for t in range(last + 2, 40))
    assert [tgt.mem[0x80], tgt.mem[0x81]] == counter_words(2)
    assert not res.clash

