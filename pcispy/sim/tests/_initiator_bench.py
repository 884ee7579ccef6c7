# SPDX-License-Identifier: BSD-2-Clause
"""Test bench pieces for the behavioural initiator under Amaranth's Python simulator.

- :class:`Harness`: the initiator, a pull-up resolver for its bus, the lines a scripted
  target drives, GNT# (which the test holds), the lines of another master a test may drive
  by hand (``o``, with that master's GNT# ``o_gnt``) and, on request, the protocol checker
  watching the bus with both GNT#s.
- :class:`ScriptedTarget`: a small PCI target written from the rules as a Python testbench
  (one decision per clock, outputs registered), with scripted DEVSEL# timing, wait states,
  retries, disconnects, target abort, ACK64# and bad read parity. It records every clock
  of the resolved bus and who drove each line, so tests can assert waveforms line by line
  and check the initiator's drivers (:func:`driver_problems`).
"""

from dataclasses import dataclass, field

from amaranth import Cat, Elaboratable, Module, Mux, Signal
from amaranth.lib import wiring

from pcispy.pci.bus import ACTIVE_LOW, bus_lines, parity
from pcispy.check.checker import RULES, ProtocolChecker
from pcispy.sim.bfm.initiator import BehaviouralInitiator
from pcispy.sim.bfm.initiator_driver import InitiatorDriver
from pcispy.sim.bfm.irq_responder import InterruptResponder
from pcispy.sim.control import PysimControl
from pcispy.tests import reusable_sim

__all__ = ["Harness", "TargetScript", "ConfigFunction", "ScriptedTarget", "run_bench", "waves",
           "enables", "driver_problems"]

#: Lines the scripted target may drive.
TARGET_LINES = ("ad", "ad_hi", "par", "par64", "trdy", "stop", "devsel", "ack64", "perr")
#: Lines another master, driven by hand from a test, may drive.
OTHER_LINES = ("ad", "cbe", "par", "frame", "irdy")


class Harness(Elaboratable):
    """The initiator on a bus with pull-ups; ``t[name]`` = (o, oe) of the target's lines,
    ``o[name]`` = (o, oe) of another master's; ``checker`` (with ``checked``) watches the
    resolved bus, GNT# of the initiator being master 0's and ``o_gnt`` master 1's."""

    def __init__(self, width=32, responder=False, checked=False):
        self.width = width
        self.lines = bus_lines(width)
        self.dut = BehaviouralInitiator(width=width, buffer_addr_bits=6, verilog_ram=False)
        self.responder = InterruptResponder() if responder else None
        self.checker = (ProtocolChecker(width=width, masters=2, arbiter_visible=True)
                        if checked else None)
        self.inta = Signal()      # INTA# as a device would pull it (set by the test)
        self.t = {name: (Signal(bits, name=f"t_{name}_o"), Signal(name=f"t_{name}_oe"))
                  for name, bits in self.lines.items() if name in TARGET_LINES}
        self.o = {name: (Signal(bits, name=f"o_{name}_o"), Signal(name=f"o_{name}_oe"))
                  for name, bits in self.lines.items() if name in OTHER_LINES}
        self.gnt = Signal(init=1)
        self.o_gnt = Signal()
        self.bus = {name: Signal(bits, name=f"bus_{name}") for name, bits in self.lines.items()}
        self.contention = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self.dut
        clash = []
        for name, bits in self.lines.items():
            line = getattr(self.dut.bus, name)
            value = 0 if name in ACTIVE_LOW else (1 << bits) - 1   # pull-ups, inside level
            drivers = [line.oe]
            for side in (self.t, self.o):
                if name in side:
                    o, oe = side[name]
                    value = Mux(oe, o, value)
                    drivers.append(oe)
            if len(drivers) > 1:
                clash.append(sum(drivers) > 1)
            value = Mux(line.oe, line.o, value)
            if name == "gnt":
                value = self.gnt
            if name == "inta":
                value = self.inta
            m.d.comb += [self.bus[name].eq(value), line.i.eq(self.bus[name])]
        m.d.comb += self.contention.eq(sum(clash) != 0)
        if self.checker is not None:
            m.submodules.checker = checker = self.checker
            for name in self.lines:
                if name not in ("req", "gnt"):
                    m.d.comb += getattr(checker.bus, name).eq(self.bus[name])
            m.d.comb += [checker.bus.gnt.eq(Cat(self.gnt, self.o_gnt)),
                         checker.bus.req.eq(Cat(self.bus["req"], 0))]
        if self.responder is not None:
            m.submodules.responder = responder = self.responder
            wiring.connect(m, responder.cmd, self.dut.prio)
            m.d.comb += [responder.inta.eq(self.bus["inta"]), responder.done.eq(self.dut.prio_done),
                         responder.done_status.eq(self.dut.prio_status)]
        return m


@dataclass
class TargetScript:
    """What the scripted target does. Clocks count the address phase as clock 1."""
    devsel_clock: int = 2        # 2 fast, 3 medium, 4 slow, 5 subtractive; None: never claims
    initial_wait: int = 0        # TRDY# waits beyond the earliest possible first data phase
    wait: int = 0                # TRDY# waits before each later data phase
    retries: int = 0             # retry this many transactions first
    disconnect_after: int = None # data phases before disconnecting
    disconnect_with_data: bool = True
    abort_at: int = None         # target abort on this data phase (0 = the first)
    ack64: bool = False          # answer REQ64# with ACK64#
    bad_parity_phase: int = None # read data phase (of each transaction) given a wrong PAR
    stop_unclaimed: bool = False # a broken target: STOP# from devsel_clock on, never DEVSEL#
    memory: dict = field(default_factory=dict)   # DWORD address -> value
    config: dict = field(default_factory=dict)   # slot -> ConfigFunction (type 0 cycles)


class ConfigFunction:
    """Configuration space of one function: a type 0 header with sizable BARs.

    ``bars``: list of ``(kind, size)`` with kind "io", "mem", "mem-pf", "mem64" (the
    latter takes two BAR registers). Unimplemented registers read as zero.
    """

    def __init__(self, vendor, device, class_code, bars):
        self.regs = [0] * 64
        self.regs[0] = device << 16 | vendor
        self.regs[2] = class_code << 8
        self.masks = {}
        index = 4
        for kind, size in bars:
            if kind == "io":
                self.regs[index], self.masks[index] = 1, ~(size - 1) & 0xFFFF_FFFC
            elif kind == "mem64":
                self.regs[index], self.masks[index] = 0b100, ~(size - 1) & 0xFFFF_FFF0
                self.regs[index + 1], self.masks[index + 1] = 0, 0xFFFF_FFFF
                index += 1
            else:
                self.regs[index] = 0b1000 if kind == "mem-pf" else 0
                self.masks[index] = ~(size - 1) & 0xFFFF_FFF0
            index += 1
        self.masks[1] = 0x0000_0547   # Command: I/O, memory, master, parity, SERR#

    def read(self, reg):
        return self.regs[reg]

    def write(self, reg, value, cbe):
        if reg not in self.masks:
            return
        mask = self.masks[reg]
        for byte in range(4):
            if (cbe >> byte) & 1:
                mask &= ~(0xFF << (8 * byte))
        self.regs[reg] = (self.regs[reg] & ~mask) | (value & mask)


#: Simulated clock period, and how long after a rising edge the scripted target reads the bus.
_PERIOD = 30e-9
_SETTLE = 1e-9


def _default_word(dword_addr):
    return (0xA500_0000 | dword_addr * 0x0101) & 0xFFFF_FFFF


class ScriptedTarget:
    """A PCI target testbench following :class:`TargetScript`; records the bus.

    ``trace`` holds one dict per clock: inside-level values of every line, ``contention``,
    and ``"oe"``/``"t_oe"``/``"o_oe"``: ``{line: 1 or 0}``, whether the initiator / this
    target / the other master drove the line in that clock; ``transactions`` one dict per
    address phase seen; ``rules``, after :func:`run_bench` with ``checked``, the names of
    the protocol-checker rules the bus broke.
    """

    def __init__(self, harness, script):
        self.h = harness
        self.s = script
        self.trace = []
        self.transactions = []
        self.writes = []     # (dword address, value, C/BE#) of each write data phase

    def _read_word(self, dword_addr, xfer=None):
        if xfer is not None and xfer.get("function") is not None:
            return xfer["function"].read(dword_addr & 0x3F)
        return self.s.memory.get(dword_addr, _default_word(dword_addr))

    def _store(self, dword_addr, value, cbe, xfer=None):
        if xfer is not None and xfer.get("function") is not None:
            xfer["function"].write(dword_addr & 0x3F, value, cbe)
            self.writes.append((dword_addr, value, cbe))
            return
        old = self._read_word(dword_addr)
        mask = 0
        for byte in range(4):
            if not (cbe >> byte) & 1:
                mask |= 0xFF << (8 * byte)
        self.s.memory[dword_addr] = (old & ~mask) | (value & mask)
        self.writes.append((dword_addr, value, cbe))

    async def process(self, ctx):
        h = self.h
        wide = h.width == 64
        out = {name: 0 for name in h.t}
        oe = {name: 0 for name in h.t}
        xfer = None            # the transaction being served
        release = False        # drive s/t/s lines deasserted one clock, then float
        while True:
            # Read the clock's lines a little after its rising edge: other testbenches
            # (GNT#, INTA#) change their lines right at the edge, and the bus they make
            # is what the initiator samples at the end of this clock.
            await ctx.delay(_SETTLE)
            now = {name: ctx.get(sig) for name, sig in h.bus.items()}
            now["contention"] = ctx.get(h.contention)
            now["oe"] = {name: ctx.get(getattr(h.dut.bus, name).oe) for name in h.lines}
            now["t_oe"] = {name: ctx.get(h.t[name][1]) if name in h.t else 0
                           for name in h.lines}
            now["o_oe"] = {name: ctx.get(h.o[name][1]) if name in h.o else 0
                           for name in h.lines}
            self.trace.append(now)
            await ctx.tick()
            drove_ad = oe["ad"]
            par_cover = (parity(out["ad"], now["cbe"]),
                         parity(out.get("ad_hi", 0), now.get("cbe_hi", 0)) if wide else 0)
            for name in out:
                out[name] = 0
                oe[name] = 0

            # An address phase: FRAME# asserted with no transaction going on, or asserted
            # again right after one nobody claimed (a master that did not wait for the
            # idle clock).
            restart = (xfer is not None and not xfer.get("claimed") and now["frame"]
                       and not self.trace[-2]["frame"])
            if (xfer is None or restart) and now["frame"]:
                xfer = {"clock": 1, "addr": now["ad"], "cmd": now["cbe"], "dac": now["cbe"] == 0b1101,
                        "req64": now.get("req64", 0), "phases": 0, "stopping": None,
                        "ready_at": None, "start": len(self.trace) - 1}
                self.transactions.append(xfer)
            elif xfer is not None:
                xfer["clock"] += 1
                if xfer["dac"] and xfer["clock"] == 2:
                    xfer["addr"] |= now["ad"] << 32
                    xfer["cmd"] = now["cbe"]
                    xfer["dac_shift"] = 1
                self._phase(xfer, now)
                idle = not now["frame"] and not now["irdy"]
                if xfer.get("done") or (xfer.get("claimed") and idle):
                    # Over: the last data phase completed, or the initiator let the bus
                    # go idle without one (a broken initiator's).
                    xfer = None
                    release = True
                elif idle:
                    xfer = None          # not ours (master abort): the bus is idle again

            if release:
                # The last data phase was the clock just sampled: TRDY#, STOP#, DEVSEL#
                # (ACK64#) driven deasserted in the next one, released in the one after.
                for name in ("trdy", "stop", "devsel") + (("ack64",) if wide else ()):
                    oe[name] = 1
                release = False
            if xfer is not None:
                self._drive(xfer, out, oe)
            # PAR one clock after the AD we drove (reads).
            if drove_ad:
                out["par"], oe["par"] = par_cover[0] ^ int(self._bad_par), 1
                if wide and self._drove_hi:
                    out["par64"], oe["par64"] = par_cover[1], 1
            self._bad_par = False
            self._drove_hi = oe.get("ad_hi", 0)
            if xfer is not None and oe["ad"]:
                self._bad_par = xfer.get("bad_par_now", False)
            for name in h.t:
                ctx.set(h.t[name][0], out[name])
                ctx.set(h.t[name][1], oe[name])

    _bad_par = False
    _drove_hi = 0

    def _is_read(self, xfer):
        return not xfer["cmd"] & 1

    def _phase(self, xfer, now):
        """Account for the clock just sampled (``now``) of transaction ``xfer``."""
        s = self.s
        if not xfer.get("claimed") or not now["irdy"]:
            return
        if not (now["trdy"] or now["stop"]):
            return
        if now["trdy"]:
            width64 = xfer.get("ack") and xfer["req64"]
            base = (xfer["addr"] >> 2) + xfer["data_dwords"]
            if not self._is_read(xfer):
                self._store(base, now["ad"], now["cbe"], xfer)
                if width64:
                    self._store(base + 1, now["ad_hi"], now["cbe_hi"], xfer)
            xfer["data_dwords"] += 2 if width64 else 1
            xfer["phases"] += 1
            xfer["ready_at"] = xfer["clock"] + 1 + s.wait
        if not now["frame"]:
            xfer["done"] = True

    def _drive(self, xfer, out, oe):
        """Outputs for the next clock (``xfer['clock'] + 1``)."""
        s = self.s
        nxt = xfer["clock"] + 1
        shift = xfer.get("dac_shift", 0)
        if s.devsel_clock is None or nxt < s.devsel_clock + shift:
            return
        if xfer["cmd"] in (0b1010, 0b1011) and "function" not in xfer:
            # Type 0 configuration: claimed only by a function whose IDSEL (AD[16+slot]) is set.
            xfer["function"] = None
            for slot, function in s.config.items():
                if (xfer["addr"] >> (16 + slot)) & 1 and xfer["addr"] & 3 == 0:
                    xfer["function"] = function
            if xfer["function"] is None:
                xfer["unclaimed"] = True
        if xfer.get("unclaimed"):
            return
        if not xfer.get("claimed"):
            xfer["claimed"] = True
            xfer["data_dwords"] = 0
            xfer["ack"] = s.ack64 and xfer["req64"]
            first = max(s.devsel_clock + shift, (3 + shift) if self._is_read(xfer) else 2 + shift)
            xfer["ready_at"] = first + s.initial_wait
            xfer["index"] = len(self.transactions) - 1
        wide = self.h.width == 64
        out["devsel"], oe["devsel"] = 1, 1
        oe["trdy"] = oe["stop"] = 1
        if s.stop_unclaimed:
            out["devsel"], out["stop"] = 0, 1
            if wide:
                oe["ack64"] = 1
            return
        if wide:
            out["ack64"], oe["ack64"] = int(xfer["ack"]), 1
        if xfer["stopping"] is None and nxt >= xfer["ready_at"]:
            phase = xfer["phases"]
            if xfer["index"] < s.retries:
                xfer["stopping"] = "retry"
            elif s.abort_at is not None and phase == s.abort_at:
                xfer["stopping"] = "abort"
            elif s.disconnect_after is not None and s.disconnect_with_data \
                    and phase == s.disconnect_after - 1:
                xfer["stopping"] = "with_data"
            elif s.disconnect_after is not None and not s.disconnect_with_data \
                    and phase == s.disconnect_after:
                xfer["stopping"] = "without_data"
            if xfer["stopping"] == "with_data":
                xfer["stop_phase"] = phase
        stopping = xfer["stopping"]
        if stopping in ("retry", "without_data"):
            out["stop"] = 1
        elif stopping == "abort":
            out["stop"], out["devsel"] = 1, 0
            if wide:
                out["ack64"] = 0
        elif stopping == "with_data":
            out["stop"] = 1
            out["trdy"] = int(xfer["phases"] == xfer["stop_phase"])
        else:
            out["trdy"] = int(nxt >= xfer["ready_at"])
        if self._is_read(xfer) and nxt >= 3 + shift and stopping != "abort":
            base = (xfer["addr"] >> 2) + xfer["data_dwords"]
            out["ad"], oe["ad"] = self._read_word(base, xfer), 1
            if wide and xfer["ack"]:
                out["ad_hi"], oe["ad_hi"] = self._read_word(base + 1), 1
            xfer["bad_par_now"] = out["trdy"] and xfer["phases"] == self.s.bad_parity_phase


def run_bench(bench, script=None, *, width=32, gnt=None, responder=False, checked=False):
    """Run ``bench(ctx, driver, target, harness)`` against a scripted target.

    ``responder=True`` adds an :class:`InterruptResponder` on the initiator's ``prio``
    port, its INTA# input being ``harness.inta``.

    ``gnt``, when given, is ``async gnt(ctx, harness)`` run beside (e.g. to remove GNT#, or
    to play another master on ``harness.o``).

    ``checked=True`` adds the protocol checker; ``target.rules`` then names the rules it
    saw broken by the end of ``bench``.
    """
    def build():
        harness = Harness(width, responder=responder, checked=checked)
        return harness, harness
    # The benches of one harness configuration share its simulator, reset between them.
    simulation = reusable_sim.shared(("initiator_bfm", width, responder, checked), build,
                                     {"sync": _PERIOD}, background_slots=2)
    harness = simulation.handles
    target = ScriptedTarget(harness, script or TargetScript())
    background = [target.process]
    if gnt is not None:
        async def arbiter(ctx):
            await gnt(ctx, harness)
        background.append(arbiter)

    async def main(ctx):
        driver = InitiatorDriver(PysimControl(ctx, harness.dut.ctl), width=width)
        await bench(ctx, driver, target, harness)
        if harness.checker is not None:
            flags = ctx.get(harness.checker.flags)
            target.rules = {rule.name for rule in RULES if flags >> rule.id & 1}

    simulation.run(main, background)
    return target


def waves(trace, start, count, names):
    """``{line: "0110..."}`` of ``count`` clocks from ``start`` (inside level, bit 0)."""
    return {name: "".join(str(trace[i][name] & 1) for i in range(start, start + count))
            for name in names}


def enables(trace, start, count, names, who="oe"):
    """``{line: "0110..."}``: whether the initiator (``who="oe"``), the scripted target
    (``"t_oe"``) or the other master (``"o_oe"``) drove each line in ``count`` clocks from
    ``start``."""
    return {name: "".join(str(trace[i][who][name]) for i in range(start, start + count))
            for name in names}


#: Sustained tri-state lines (PCI LB 3.0 §2.1) the initiator or the scripted target drives.
_STS = ("frame", "irdy", "trdy", "stop", "devsel", "perr", "req64", "ack64")
#: Shared lines either side may drive, with the parity line that covers them.
_SHARED = ("ad", "ad_hi", "cbe", "cbe_hi", "par", "par64") + _STS
_PARITY_OF = {"par": "ad", "par64": "ad_hi"}


def driver_problems(trace, *, par_follows_ad=True):
    """What the initiator and the scripted target did wrong with their drivers in
    ``trace``, clock by clock (empty: nothing), by the rules the bus resolver checks:

    - a sustained tri-state line released in the clock after its driver asserted it;
    - a shared line driven by one side in the clock right after the other drove it (no
      turnaround clock);
    - (``par_follows_ad``) the initiator's PAR (PAR64) not driven exactly in the clocks
      after those in which it drove AD (AD[63:32]).
    """
    problems = []
    sides = ("oe", "t_oe", "o_oe")
    for i in range(1, len(trace)):
        before, now = trace[i - 1], trace[i]
        for name in _SHARED:
            if name not in now["oe"]:
                continue
            for side in sides:
                for other in sides:
                    if other != side and now[side][name] and before[other][name]:
                        problems.append(f"clock {i}: {name} driven by {side} right after "
                                        f"{other}")
                if name in _STS and before[side][name] and before[name] and not now[side][name]:
                    problems.append(f"clock {i}: {name} released by {side} while asserted")
        if par_follows_ad:
            for par, ad in _PARITY_OF.items():
                if par in now["oe"] and now["oe"][par] != before["oe"][ad]:
                    problems.append(f"clock {i}: initiator's {par} enable {now['oe'][par]}, "
                                    f"its {ad} enable the clock before {before['oe'][ad]}")
    return problems
