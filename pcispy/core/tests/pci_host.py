# SPDX-License-Identifier: BSD-2-Clause
"""A small scripted PCI initiator for the board's unit tests (Amaranth Python simulator).

Written from the bus rules (PCI LB 3.0 chapter 3), not from the board's gateware, and not
a copy of the simulated host bridge: it drives the board's *pins* (its ``io.SimulationPort``s)
through :class:`PinBus`, which resolves the board's drive against the script's (pull-ups,
open drain, active-low) and remembers contention. :class:`ScriptedInitiator` runs one
transaction at a time, clock by clock, and returns what happened on the bus in every clock
(``clock 1`` is the address phase), so tests assert exact clocks.
"""

from dataclasses import dataclass, field

from amaranth import Cat, Module, Signal
from amaranth.lib import io

from pcispy.pci.bus import (ACTIVE_LOW, OPEN_DRAIN, Command, Termination, bus_lines,
                            parity)
from pcispy.core.pads import INPUT_ONLY_LINES
from pcispy.tests import reusable_sim

__all__ = ["PinBus", "ScriptedInitiator", "Result", "build_bench", "enumerate_board",
           "simulate", "simulate_shared", "BAR_ADDRESSES", "BackendDriver"]

#: The bus clock of the Python simulator's benches (33 MHz).
PCI_CLOCK_PERIOD = 30e-9


class PinBus:
    """The board's pins and the script's drivers, resolved; inside-level for the script.

    ``drive[line]``/``enable[line]`` are the script's value and enable; ``line(name)`` is
    the resolved inside-level value; ``contention`` latches when both drove a t/s line.
    """
    def __init__(self, m, ports, width):
        self.width = width
        self.drive, self.enable, self.value = {}, {}, {}
        self.contention = Signal()
        #: The board enabled an output on RST#, GNT# or IDSEL (it must never).
        self.input_only_driven = Signal()
        clash = Signal()
        clashes = []
        input_enables = []
        for name, bits in bus_lines(width).items():
            port = ports[name]
            tb_o, tb_oe = Signal(bits, name=f"tb_{name}"), Signal(name=f"tb_{name}_oe")
            resolved = Signal(bits, name=f"bus_{name}")
            self.drive[name], self.enable[name], self.value[name] = tb_o, tb_oe, resolved
            low = name in ACTIVE_LOW
            if port.direction == io.Direction.Input:       # a passive build's pin
                board_oe, board_v = 0, 0
            elif name in INPUT_ONLY_LINES:
                board_oe, board_v = 0, 0
                input_enables.append(port.oe.any())
            else:
                board_oe = port.oe[0]
                board_v = ~port.o if low else port.o
            pull = 0 if low else (1 << bits) - 1
            if name in OPEN_DRAIN:
                m.d.comb += resolved.eq((board_v & board_oe) | (tb_o & tb_oe))
            else:
                with m.If(board_oe):
                    m.d.comb += resolved.eq(board_v)
                with m.Elif(tb_oe):
                    m.d.comb += resolved.eq(tb_o)
                with m.Else():
                    m.d.comb += resolved.eq(pull)
                if name not in INPUT_ONLY_LINES:
                    clashes.append(board_oe & tb_oe)
            m.d.comb += port.i.eq(~resolved if low else resolved)
        m.d.comb += clash.eq(sum(clashes) != 0)
        with m.If(clash):
            m.d.pci += self.contention.eq(1)
        with m.If(Cat(*input_enables).any()):
            m.d.pci += self.input_only_driven.eq(1)


@dataclass
class Result:
    """What one transaction did on the bus."""
    clocks: list = field(default_factory=list)   # per clock: dict of resolved lines
    data: list = field(default_factory=list)     # words moved (reads: as received)
    moved: int = 0
    termination: Termination = Termination.COMPLETION
    read_parity_errors: int = 0                  # board's PAR wrong on read data

    def first(self, line):
        """Clock number (address phase = 1) at which ``line`` was first asserted, or None."""
        for k, c in enumerate(self.clocks, start=1):
            if c[line]:
                return k
        return None

    def data_clocks(self):
        """Clock numbers at which a data phase completed (IRDY# and TRDY#)."""
        return [k for k, c in enumerate(self.clocks, start=1) if c["irdy"] and c["trdy"]]


class ScriptedInitiator:
    """Runs transactions against the board from an async testbench ``ctx``."""
    def __init__(self, ctx, pins):
        self.ctx = ctx
        self.pins = pins
        self.wide = pins.width == 64
        self.par_next = None      # (line, value) the script owes on PAR next clock
        self.corrupt_next = False

    def _set(self, name, value, enable=1):
        if name not in self.pins.drive:      # a 64-bit line on a 32-bit bus
            return
        self.ctx.set(self.pins.drive[name], value)
        self.ctx.set(self.pins.enable[name], enable)

    def _sample(self):
        return {name: self.ctx.get(sig) for name, sig in self.pins.value.items()}

    async def idle(self, clocks=1):
        for _ in range(clocks):
            await self._clock(ad=None, cbe=None)

    async def _clock(self, *, ad, cbe, ad_hi=None, cbe_hi=None, corrupt=False):
        """One clock: drive AD/C/BE# (None = release), PAR owed from the previous clock."""
        owed = self.par_next
        if owed is None:
            self._set("par", 0, 0)
            if self.wide:
                self._set("par64", 0, 0)
        else:
            self._set("par", owed[0])
            if self.wide:
                self._set("par64", owed[1] or 0, owed[1] is not None)
        self.par_next = None
        for name, value in (("ad", ad), ("cbe", cbe), ("ad_hi", ad_hi), ("cbe_hi", cbe_hi)):
            if name.endswith("_hi") and not self.wide:
                continue
            self._set(name, value or 0, value is not None)
        if ad is not None:
            par = parity(ad, cbe) ^ corrupt
            par64 = parity(ad_hi, cbe_hi) ^ corrupt if ad_hi is not None else None
            self.par_next = (par, par64)
        sample = self._sample()
        await self.ctx.tick("pci")
        return sample

    async def transaction(self, cmd, addr, *, count=1, data=None, be=0x0, idsel=False,
                          req64=False, corrupt_addr_par=False, corrupt_data_par=False,
                          irdy_waits=(), devsel_timeout=5, timeout=48):
        """Run one transaction of up to ``count`` data phases (``data`` for writes).

        ``be`` is C/BE# (pin level, 0 = all bytes); for 64-bit, bits 7:4 go on C/BE#[7:4].
        ``irdy_waits``: phase numbers (0-based) before which the initiator inserts one
        wait state (IRDY# deasserted, FRAME# held). ``timeout``: clocks beyond ``count``
        before giving up. ``devsel_timeout``: the clock by which DEVSEL# must be seen
        (5 per the specification: subtractive decode) before a master abort.
        Returns a :class:`Result`.
        """
        cmd = Command(cmd)
        write = not cmd.is_read
        if write:
            count = len(data)
        res = Result()
        self._set("idsel", int(idsel))
        self._set("req64", int(req64))
        self._set("frame", 1)
        self._set("irdy", 0)
        res.clocks.append(await self._clock(ad=addr & 0xFFFF_FFFF, cbe=cmd.value,
                                            ad_hi=0 if req64 else None,
                                            cbe_hi=0 if req64 else None,
                                            corrupt=corrupt_addr_par))
        self._set("idsel", 0)
        index, stop_seen, devsel_seen, waited = 0, False, False, set()
        last_board_ad = None
        for clock in range(2, count + timeout):
            last = stop_seen or index == count - 1
            wait = index in irdy_waits and index not in waited and not stop_seen
            waited.add(index)
            # FRAME# may only be deasserted with IRDY# asserted.
            self._set("frame", int(not last or wait))
            self._set("req64", int(req64 and (not last or wait)))
            self._set("irdy", int(not wait))
            if write:
                word = data[min(index, count - 1)]
                s = await self._clock(ad=word & 0xFFFF_FFFF, cbe=be & 0xF,
                                      ad_hi=(word >> 32) if req64 else None,
                                      cbe_hi=(be >> 4) & 0xF if req64 else None,
                                      corrupt=corrupt_data_par)
            else:
                s = await self._clock(ad=None, cbe=be & 0xF,
                                      cbe_hi=(be >> 4) & 0xF if req64 else None)
            res.clocks.append(s)
            # The board's PAR this clock covers the AD it drove in the previous clock.
            if last_board_ad is not None and s["par"] != last_board_ad:
                res.read_parity_errors += 1
            last_board_ad = None
            if not write and s["trdy"]:
                # PAR must be valid the clock after TRDY# on a read (not in wait states).
                last_board_ad = parity(s["ad"], s["cbe"])
            devsel_seen |= bool(s["devsel"])
            moved = s["irdy"] and s["trdy"]
            if moved:
                if write:
                    res.data.append(data[index])
                else:
                    word = s["ad"]
                    if req64 and s.get("ack64"):
                        word |= s["ad_hi"] << 32
                    res.data.append(word)
                index += 1
            if s["stop"] and not stop_seen:
                stop_seen = True
                if not devsel_seen or not s["devsel"]:
                    res.termination = Termination.TARGET_ABORT
                elif moved:
                    res.termination = Termination.DISCONNECT_DATA
                elif index == 0:
                    res.termination = Termination.RETRY
                else:
                    res.termination = Termination.DISCONNECT_NODATA
            if not devsel_seen and clock >= devsel_timeout:
                res.termination = Termination.MASTER_ABORT
                stop_seen = True
                if last:
                    break
                continue
            if last and (moved or s["stop"]):
                break
        else:
            raise TimeoutError(f"transaction {cmd.name} at {addr:#x} did not end")
        res.moved = index
        # Turnaround: FRAME# and IRDY# deasserted for a clock, then released.
        self._set("frame", 0)
        self._set("irdy", 0)
        self._set("req64", 0)
        s = await self._clock(ad=None, cbe=None)
        if last_board_ad is not None and s["par"] != last_board_ad:
            res.read_parity_errors += 1
        res.clocks.append(s)
        for name in ("frame", "irdy", "req64"):
            self._set(name, 0, 0)
        return res

    # Convenience forms.
    async def config_read(self, reg):
        r = await self.transaction(Command.CONFIG_READ, reg << 2, idsel=True)
        assert r.moved == 1, r.termination
        return r.data[0]

    async def config_write(self, reg, value, be=0x0):
        r = await self.transaction(Command.CONFIG_WRITE, reg << 2, data=[value], be=be,
                                   idsel=True)
        assert r.moved == 1, r.termination
        return r

    async def read(self, addr, count=1, cmd=Command.MEM_READ_MULTIPLE, **kw):
        return await self.transaction(cmd, addr, count=count, **kw)

    async def write(self, addr, data, cmd=Command.MEM_WRITE, **kw):
        return await self.transaction(cmd, addr, data=list(data), **kw)


def build_bench(board):
    """``(top module, PinBus)`` wrapping ``board`` with the script's pins."""
    m = Module()
    m.submodules.board = board
    pins = PinBus(m, board.ports, board.width)
    return m, pins


class BackendDriver:
    """Reads and writes a backend (the target's word bus) directly, in domain ``pci``.

    ``read_latency``: clocks from a read request to its answer, which the backend must
    keep exactly; ``write_latency``: clocks after a write request before its effect is
    visible (each write waits them out)."""
    def __init__(self, ctx, port, *, read_latency=1, write_latency=0):
        self.ctx, self.port = ctx, port
        self.read_latency, self.write_latency = read_latency, write_latency

    async def write(self, reg, value, be=0xF):
        ctx, p = self.ctx, self.port
        ctx.set(p.addr, reg)
        ctx.set(p.w_data, value)
        ctx.set(p.w_be, be)
        ctx.set(p.write, 1)
        ctx.set(p.valid, 1)
        await ctx.tick("pci")
        ctx.set(p.valid, 0)
        ctx.set(p.write, 0)
        for _ in range(self.write_latency):
            await ctx.tick("pci")

    async def read(self, reg):
        """The word at ``reg``."""
        ctx, p = self.ctx, self.port
        ctx.set(p.addr, reg)
        ctx.set(p.write, 0)
        ctx.set(p.valid, 1)
        await ctx.tick("pci")
        ctx.set(p.valid, 0)
        for _ in range(self.read_latency - 1):
            assert not ctx.get(p.r_valid)
            await ctx.tick("pci")
        assert ctx.get(p.r_valid)
        return ctx.get(p.r_data)


#: Where :func:`enumerate_board` places the BARs (BAR1 absent by default).
BAR_ADDRESSES = {0: 0x1000_0000, 1: 0x3000_0000, 2: 0x2000_0000, 3: 0x0000_E000}


async def enumerate_board(host, *, command=0x0043):
    """Assign :data:`BAR_ADDRESSES`, then write the Command register (default: I/O, memory,
    parity error response)."""
    for bar, address in BAR_ADDRESSES.items():
        await host.config_write(4 + bar, address)
    await host.config_write(1, command)


def _bench_on_pins(pins, bench):
    """The testbench that runs ``await bench(host, pins, ctx)`` from an idle bus and then
    checks the bus's wiring flags."""
    async def testbench(ctx):
        host = ScriptedInitiator(ctx, pins)
        await host.idle(2)
        await bench(host, pins, ctx)
        assert not ctx.get(pins.contention), "two drivers on one bus line"
        assert not ctx.get(pins.input_only_driven), "the board drove an input-only line"
    return testbench


def simulate(board, bench, *, processes=(), vcd=None):
    """Run ``await bench(host, pins, ctx)`` against ``board`` in the Python simulator.

    ``processes``: more async functions of ``ctx`` run beside it (e.g. a backend model).
    """
    from amaranth.sim import Simulator
    m, pins = build_bench(board)
    sim = Simulator(m)
    sim.add_clock(PCI_CLOCK_PERIOD, domain="pci")
    for process in processes:
        sim.add_process(process)
    sim.add_testbench(_bench_on_pins(pins, bench))
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()


def simulate_shared(key, make_board, bench):
    """Run ``bench`` as :func:`simulate` does, on a simulator of ``make_board()`` kept
    for every bench with the same ``key`` (the board's configuration) and reset between
    them: building the whole board's simulator takes seconds, a bench far less."""
    simulation = reusable_sim.shared(("pci_host", *key), lambda: build_bench(make_board()),
                                     {"pci": PCI_CLOCK_PERIOD})
    simulation.run(_bench_on_pins(simulation.handles, bench))
