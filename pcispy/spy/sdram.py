# SPDX-License-Identifier: BSD-2-Clause
"""Trace memory in a single-data-rate SDRAM (the ULX3S's 32 MB, 16 bits wide).

:class:`SDRAMTraceMemory` has the trace memory interface of
:class:`~pcispy.spy.tracemem.TraceMemorySignature` (128-bit slots written whole, 32-bit
words read) and drives an x16 SDRAM: a slot is one burst of eight words, so a slot's
write is a single WRITE command and its read a single READ. In front of the SDRAM a block
RAM FIFO of slots absorbs the bus's bursts while the SDRAM is busy (a row change, a
refresh, a host read); when it is full ``w_ready`` falls, the spy's writer FIFO behind it
fills, and the recorder writes an overrun event and counts the lost records, as it does
for every trace memory. Nothing is lost silently; ``fills`` counts the times this FIFO
filled.

Address mapping (slot address, low bits first): the slot within the row (columns / 8),
the bank, the row. Consecutive slots fill a row with back-to-back WRITE commands (page
mode: the next WRITE goes out in the clock after the previous burst's last word, so
the data pins are busy every clock); a new row costs a PRECHARGE and an ACTIVE.

Refresh: the data sheets want 8192 REFRESHes per 64 ms (one each 7.8 us; the deadline
``refresh_interval`` is in clocks, a parameter); the controller issues one as soon as a
burst in flight ends once ``refresh_interval`` minus the longest wait for that has passed,
so continuous writes never delay it past the deadline.

Reads: the host reads slots back through the same port. A read waits until every slot
accepted before it is in the SDRAM (the FIFO drains, new writes are held off meanwhile),
so the host never reads a stale slot; the slot read is kept, and the three other words
of it are answered from there.

Clocking: by default the controller runs in ``sync`` with its port (the board renames it
to the PCI clock). Given ``domain``, the controller and the SDRAM pins run on that clock
instead (the SDRAM faster than the bus): the FIFO becomes asynchronous
(:class:`~pcispy.spy.async_fifo.RegisteredAsyncFIFO`, its read side registered) and a
read crosses by a toggle handshake. The passive ULX3S build can run it on a 110 MHz PLL
clock (domain ``sdram``, pcispy.platform.top, the SDRAM's clock pin from a second,
phase-shifted PLL output: :func:`board_clock_phase`); the simulated system on the bus
clock (docs/sdram.md).
"""

from dataclasses import dataclass
import math

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import enum, fifo, io, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from pcispy.pci.bus import TriStateSignature
from pcispy.spy.async_fifo import RegisteredAsyncFIFO
from pcispy.spy.format import SLOT_BITS
from pcispy.spy.tracemem import TraceMemorySignature

__all__ = ["SDRAMTiming", "SDRAMSignature", "board_read_delay", "board_margins",
           "board_clock_phase", "SDRAM_MAX_MHZ", "SDRAM_T_AC_NS", "SDRAM_T_OH_NS",
           "SDRAM_T_IS_NS", "SDRAM_T_IH_NS", "BOARD_ROUND_TRIP_NS", "INVERTED_CLOCK_PHASE",
           "SDRAMTraceMemory",
           "SDRAMPads", "SDRAM_PINS",
           "sdram_simulation_ports", "SDRAM_DATA_BITS", "SDRAM_ADDR_PINS"]

#: Data pins of the x16 parts.
SDRAM_DATA_BITS = 16
#: Address pins A12:0.
SDRAM_ADDR_PINS = 13
_WORDS_PER_SLOT = SLOT_BITS // SDRAM_DATA_BITS      # 8: one burst
#: The pins of an SDRAM port by name, as amaranth-boards' ``sdram`` resource has them:
#: ``cs``, ``we``, ``ras``, ``cas`` are active-low pins given as inverted ports (``PinsN``),
#: so their values are active-high; ``clk`` is optional (the simulated system's model
#: runs on the domain's clock).
SDRAM_PINS = ("clk", "clk_en", "cs", "we", "ras", "cas", "ba", "a", "dq", "dqm")


#: The fastest clock :meth:`SDRAMTiming.for_clock` gives figures for: the -75 grade's
#: 133 MHz at CAS latency 3 (the slowest grade the ULX3S is fitted with).
SDRAM_MAX_MHZ = 133
#: Access time from the clock edge (tAC, ns) by CAS latency, and the output hold time
#: (tOH, ns): the slowest grade's tAC and the smallest tOH of the parts.
SDRAM_T_AC_NS = {2: 6.0, 3: 5.4}
SDRAM_T_OH_NS = 2.7
#: Input setup and hold times (tIS, tIH, ns) of commands, addresses and write data.
SDRAM_T_IS_NS = 1.5
SDRAM_T_IH_NS = 0.8
#: What a board adds to the read data's way back, in ns, least and most (assumed, not
#: measured): the SDRAM clock's I/O cell to its pin, the traces there and back, the
#: data's input buffer to its I/O cell flip-flop. The clock trees into the I/O cells of
#: the clock pin and of the data pins cancel.
BOARD_ROUND_TRIP_NS = (2.0, 6.0)
#: The SDRAM clock pin's delay after the controller's clock edges, in periods, when it is
#: the controller's clock inverted (:class:`SDRAMPads`' own clock pin).
INVERTED_CLOCK_PHASE = 0.5


def _cas_latency(mhz):
    # The -75 grade: CAS latency 2 up to 100 MHz.
    return 2 if mhz <= 100 else 3


def board_margins(mhz, cas_latency, clock_phase=INVERTED_CLOCK_PHASE,
                  round_trip_ns=BOARD_ROUND_TRIP_NS):
    """``(read_delay, read_margin_ns, command_margin_ns)`` of :class:`SDRAMPads` on a board
    at ``mhz``, the SDRAM's clock pin ``clock_phase`` of a period after the controller's
    clock (0.5: the inverted clock; a PLL output's phase otherwise).

    In clocks from the edge at which the controller's register puts out a command (edge
    0): it leaves its I/O cell flip-flop at edge 1 (the clock pin's DDR cell has the same
    delay) and the SDRAM samples it at ``1 + clock_phase``: the command margin is the
    smaller of the setup (``clock_phase`` periods less tIS) and the hold (the rest of the
    period less tIH). A READ's word 0 leaves the SDRAM ``tAC`` after its edge ``CL - 1``
    later and holds until ``tOH`` after its edge ``CL``, and reaches the FPGA's input
    flip-flops ``round_trip_ns`` later: valid there from ``(CL + phase) T + tAC + most`` to
    ``(CL + 1 + phase) T + tOH + least``. The first edge E at or after the start samples
    word 0 (the read margin: the nearer end of the window from E, negative when E is past
    it); the controller takes it from the flip-flop at E + 1, which it counts as
    ``1 + CL + read_delay``."""
    period = 1000 / mhz
    low, high = round_trip_ns
    start = (cas_latency + clock_phase) * period + SDRAM_T_AC_NS[cas_latency] + high
    end = (cas_latency + 1 + clock_phase) * period + SDRAM_T_OH_NS + low
    edge = math.ceil(start / period - 1e-9)
    read = min(edge * period - start, end - edge * period)
    command = min(clock_phase * period - SDRAM_T_IS_NS,
                  (1 - clock_phase) * period - SDRAM_T_IH_NS)
    return edge - cas_latency, read, command


def board_read_delay(mhz, cas_latency, round_trip_ns=BOARD_ROUND_TRIP_NS,
                     clock_phase=INVERTED_CLOCK_PHASE):
    """``SDRAMTiming.read_delay`` for :class:`SDRAMPads` on a board at ``mhz`` with the
    SDRAM's clock pin ``clock_phase`` of a period after the controller's clock
    (:func:`board_margins`). Raises ValueError where no edge samples the read data for
    the whole ``round_trip_ns``, or the commands miss the SDRAM's setup or hold."""
    read_delay, read, command = board_margins(mhz, cas_latency, clock_phase, round_trip_ns)
    if read < 0:
        low, high = round_trip_ns
        raise ValueError(f"at {mhz:g} MHz no clock edge samples the SDRAM's read data for "
                         f"a round trip of {low:g} to {high:g} ns")
    if command < 0:
        raise ValueError(f"at {mhz:g} MHz an SDRAM clock {360 * clock_phase:.1f} degrees "
                         f"late misses the commands' setup ({SDRAM_T_IS_NS:g} ns) or hold "
                         f"({SDRAM_T_IH_NS:g} ns)")
    return read_delay


def board_clock_phase(mhz, round_trip_ns=BOARD_ROUND_TRIP_NS):
    """The SDRAM clock pin's phase after the controller's clock (in periods, a multiple of
    1/720) that gives :func:`board_margins` the largest smaller margin of the two, read
    and command, at ``mhz``: where a PLL output drives the pin, the read data's window
    can be centred on a clock edge at any frequency the SDRAM runs at."""
    cas_latency = _cas_latency(mhz)

    def worst(step):
        _, read, command = board_margins(mhz, cas_latency, step / 720, round_trip_ns)
        return min(read, command)
    return max(range(720), key=worst) / 720


@dataclass(frozen=True)
class SDRAMTiming:
    """An SDRAM's geometry and timing, in clocks of the controller. The defaults are a
    small example for unit tests; :meth:`for_clock` gives a real part's.

    Attributes: row_bits, col_bits (4 banks of 16-bit words); cas_latency (2 or 3);
    t_rcd, t_ras, t_rp, t_rc, t_wr, t_rfc, t_mrd (the data sheet's names); power_up (NOP
    clocks before initialisation), init_refreshes; refresh_interval (the refresh deadline);
    read_delay: when the controller samples read data, relative to the SDRAM sampling
    commands on the controller's own clock edges (the simulated system: word 0 is
    sampled ``1 + cas_latency`` clocks after the READ leaves the controller's register).
    On a board (:class:`SDRAMPads` with a ``clk`` port: I/O cell registers, the SDRAM on
    the inverted clock) :func:`board_read_delay` works it out from the data sheet.
    """
    row_bits: int = 13
    col_bits: int = 9
    cas_latency: int = 2
    t_rcd: int = 2
    t_ras: int = 5
    t_rp: int = 2
    t_rc: int = 7
    t_wr: int = 2
    t_rfc: int = 7
    t_mrd: int = 2
    power_up: int = 100
    init_refreshes: int = 2
    refresh_interval: int = 1000
    read_delay: int = 0

    @classmethod
    def for_clock(cls, mhz, row_bits=13, col_bits=9, board=False,
                  clock_phase=INVERTED_CLOCK_PHASE):
        """The ULX3S parts (IS42S16160 / MT48LC16M16A2, the slowest speed grade's figures
        that runs at ``mhz``, up to :data:`SDRAM_MAX_MHZ`) at ``mhz``: 20 ns tRCD and tRP,
        44 ns tRAS, 66 ns tRC and tRFC, 15 ns tWR, 2-clock tMRD, 200 us power-up, 8
        refreshes at initialisation, 7.8 us refresh interval; CAS latency 2 up to 100 MHz,
        else 3. ``board``: the read delay of :class:`SDRAMPads` on a board with the
        SDRAM's clock pin ``clock_phase`` of a period after the controller's clock
        (:func:`board_read_delay`); else 0, the simulated system's."""
        if not 0 < mhz <= SDRAM_MAX_MHZ:
            raise ValueError(f"the ULX3S's SDRAM runs at up to {SDRAM_MAX_MHZ} MHz, "
                             f"not {mhz:g}")

        def clocks(ns):
            return max(1, math.ceil(ns * mhz / 1000))
        cas_latency = _cas_latency(mhz)
        return cls(row_bits=row_bits, col_bits=col_bits, cas_latency=cas_latency,
                   t_rcd=clocks(20), t_ras=clocks(44), t_rp=clocks(20), t_rc=clocks(66),
                   t_wr=clocks(15), t_rfc=clocks(66), t_mrd=2, power_up=clocks(200_000),
                   init_refreshes=8, refresh_interval=int(7.8125 * mhz),
                   read_delay=board_read_delay(mhz, cas_latency, clock_phase=clock_phase)
                   if board else 0)

    @property
    def slot_bits(self):
        """log2 of the slots the SDRAM holds (a slot is 8 words)."""
        return self.col_bits - 3 + 2 + self.row_bits

    def model_args(self):
        """The keyword arguments of :class:`pcispy.sim.bfm.sdram.SDRAMModel` for the same
        part (the model checks the timing; it does not use the controller's waits)."""
        return dict(row_bits=self.row_bits, col_bits=self.col_bits, t_rcd=self.t_rcd,
                    t_ras=self.t_ras, t_rp=self.t_rp, t_rc=self.t_rc, t_wr=self.t_wr,
                    t_rfc=self.t_rfc, t_mrd=self.t_mrd, power_up=self.power_up,
                    init_refreshes=self.init_refreshes,
                    refresh_interval=self.refresh_interval)


class SDRAMSignature(wiring.Signature):
    """Pins of an x16 SDRAM, from the controller's side, active-high (the ports of CS#,
    RAS#, CAS#, WE# are inverted).

    Members: cke, cs, ras, cas, we (Out, 1); ba (Out, 2); a (Out, 13); dqm (Out, 2);
    dq (TriStateSignature(16)).
    """
    def __init__(self):
        super().__init__({
            "cke": Out(1), "cs": Out(1), "ras": Out(1), "cas": Out(1), "we": Out(1),
            "ba": Out(2), "a": Out(SDRAM_ADDR_PINS), "dqm": Out(2),
            "dq": Out(TriStateSignature(SDRAM_DATA_BITS)),
        })


def sdram_simulation_ports():
    """``{pin: io.SimulationPort}`` for :data:`SDRAM_PINS` but ``clk``, named
    ``sdram_<pin>`` (``cs``, ``we``, ``ras``, ``cas`` inverted: their Verilog ports carry
    the active-low pin levels)."""
    widths = {"ba": 2, "a": SDRAM_ADDR_PINS, "dqm": 2}
    ports = {pin: io.SimulationPort("o", widths.get(pin, 1), name=f"sdram_{pin}",
                                    invert=pin in ("cs", "we", "ras", "cas"))
             for pin in SDRAM_PINS if pin not in ("clk", "dq")}
    ports["dq"] = io.SimulationPort("io", SDRAM_DATA_BITS, name="sdram_dq")
    return ports


class SDRAMPads(wiring.Component):
    """The I/O buffers of an SDRAM. Without a ``clk`` port (the simulated system, whose
    model runs on the domain's clock) plain buffers: the controller drives every pin from
    a flip-flop. With a ``clk`` port (a board) every pin goes through a flip-flop of its
    I/O cell, so the commands, the write data and the read data's sampling have the
    same short, fixed delay to and from the pins whatever the placement (at 110 MHz the
    read data is valid for under a clock: docs/sdram.md); each register adds a clock
    (``read_delay`` counts both). The ``clk`` port gets the domain's clock through a DDR
    output, inverted, so the SDRAM samples each command in its middle; a ``clk`` of None
    says the board drives the clock pin itself (a PLL output shifted in phase, through a
    DDR cell of its own: pcispy.platform.top), the other pins still registered.

    Ports: sdram (In, SDRAMSignature()): the controller's pins.

    Parameters: ports: ``{pin: io port}`` for :data:`SDRAM_PINS` (``clk`` optional, or
    None).
    """
    def __init__(self, ports):
        missing = set(SDRAM_PINS) - {"clk"} - set(ports)
        if missing:
            raise ValueError(f"SDRAM ports missing: {', '.join(sorted(missing))}")
        self.ports = ports
        super().__init__({"sdram": In(SDRAMSignature())})

    @property
    def registered(self):
        """Every pin has a flip-flop in its I/O cell (a board: a ``clk`` port)."""
        return "clk" in self.ports

    def elaborate(self, platform):
        m = Module()
        pins, ports = self.sdram, self.ports
        buffer_type = io.FFBuffer if self.registered else io.Buffer
        members = {"clk_en": "cke", "cs": "cs", "we": "we", "ras": "ras", "cas": "cas",
                   "ba": "ba", "a": "a", "dqm": "dqm"}
        for pin, member in members.items():
            buffer = m.submodules[pin] = buffer_type("o", ports[pin])
            m.d.comb += buffer.o.eq(getattr(pins, member)[:len(ports[pin])])
        m.submodules.dq = dq = buffer_type("io", ports["dq"])
        m.d.comb += [dq.o.eq(pins.dq.o), dq.oe.eq(pins.dq.oe), pins.dq.i.eq(dq.i)]
        if ports.get("clk") is not None:
            m.submodules.clk = clk = io.DDRBuffer("o", ports["clk"])
            m.d.comb += [clk.o[0].eq(0), clk.o[1].eq(1)]
        return m


class _State(enum.Enum, shape=3):
    POWER_UP = 0        # NOPs, then PRECHARGE of every bank
    INIT_REFRESH = 1    # the initialisation's REFRESHes
    INIT_MODE = 2       # MODE: burst of 8, sequential, the CAS latency
    IDLE = 3            # choose: refresh, a read, a write
    WRITE_BURST = 4     # words 1..7 of a slot on DQ
    READ_BURST = 5      # waiting for the CAS latency, then words 0..7 from DQ


class SDRAMTraceMemory(wiring.Component):
    """Trace memory in an x16 SDRAM, with a block RAM FIFO of slots in front.

    Ports:
        mem (In, TraceMemorySignature(addr_bits)): the trace memory interface.
        sdram (Out, SDRAMSignature()): the SDRAM pins, each from a flip-flop.
        fills (Out, 32): times the FIFO filled (a write refused after it accepted one).
        level (Out): slots in the FIFO. ready (Out, 1): the SDRAM is initialised.

    Parameters:
        timing: an :class:`SDRAMTiming` (in clocks of the controller's domain).
        addr_bits: log2 of the slots used (default and most: ``timing.slot_bits``).
        fifo_depth: slots the FIFO holds (with ``domain``, a power of two).
        domain: None: the controller runs in ``sync`` with the ``mem`` port. A domain
            name: the controller and the ``sdram`` pins run in that domain (the SDRAM's
            own clock), the FIFO is asynchronous, a read crosses by a toggle handshake;
            ``mem``, ``fills``, ``level`` and ``ready`` stay in ``sync``.
    """
    def __init__(self, timing=SDRAMTiming(), addr_bits=None, fifo_depth=256, domain=None):
        if timing.cas_latency not in (2, 3):
            raise ValueError(f"CAS latency must be 2 or 3, not {timing.cas_latency}")
        if timing.t_rfc < 2:
            # The registered refresh request falls a clock after the REFRESH.
            raise ValueError(f"tRFC must be 2 clocks or more, not {timing.t_rfc}")
        if timing.read_delay < -1:
            raise ValueError(f"read delay must be -1 or more, not {timing.read_delay}")
        if domain and (fifo_depth < 2 or fifo_depth & (fifo_depth - 1)):
            # RegisteredAsyncFIFO's Gray counts wrap at a power of two.
            raise ValueError(f"the FIFO of a clock domain of its own holds a power of two "
                             f"slots, not {fifo_depth}")
        if addr_bits is None:
            addr_bits = timing.slot_bits
        if not 1 <= addr_bits <= timing.slot_bits:
            raise ValueError(f"the SDRAM holds 2**{timing.slot_bits} slots, not "
                             f"2**{addr_bits}")
        self.timing = timing
        self.addr_bits = addr_bits
        self.fifo_depth = fifo_depth
        self.domain = domain
        # Longest wait from the refresh request to the REFRESH: the request's register, a
        # read burst, then tWR or tRAS, then tRP.
        self.refresh_slack = (1 + _WORDS_PER_SLOT + timing.cas_latency + timing.read_delay
                              + 2 + max(timing.t_wr, timing.t_ras) + timing.t_rp + 2)
        if timing.refresh_interval <= self.refresh_slack + timing.t_rfc:
            raise ValueError(f"refresh interval {timing.refresh_interval} too short")
        super().__init__({
            "mem": In(TraceMemorySignature(addr_bits)),
            "sdram": Out(SDRAMSignature()),
            "fills": Out(32), "level": Out(range(fifo_depth + 1)), "ready": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        t = self.timing
        p = self.mem
        pins = self.sdram
        slot_col_bits = t.col_bits - 3

        # The controller's domain.
        ctl = self.domain or "sync"

        # The FIFO of (slot address, slot); asynchronous into a domain of its own.
        width = self.addr_bits + SLOT_BITS
        if self.domain:
            m.submodules.queue = queue = RegisteredAsyncFIFO(
                width=width, depth=self.fifo_depth, w_domain="sync", r_domain=self.domain)
            level = queue.w_level
        else:
            m.submodules.queue = queue = fifo.SyncFIFOBuffered(width=width,
                                                               depth=self.fifo_depth)
            level = queue.level
        read_pending = Signal()
        m.d.comb += [
            queue.w_data.eq(Cat(p.w_addr, p.w_data)),
            queue.w_en.eq(p.w_en & ~read_pending),
            p.w_ready.eq(queue.w_rdy & ~read_pending),
            self.level.eq(level),
        ]
        refused = Signal()
        was_refused = Signal()
        m.d.comb += refused.eq(p.w_en & ~queue.w_rdy)
        m.d.sync += was_refused.eq(refused)
        with m.If(refused & ~was_refused & (self.fills != 0xFFFF_FFFF)):
            m.d.sync += self.fills.eq(self.fills + 1)

        # Reads: one slot kept; any write accepted makes it stale.
        cache = Signal(SLOT_BITS)
        cache_slot = Signal(self.addr_bits)
        cache_valid = Signal()
        read_word = Signal(self.addr_bits + 2)
        m.d.sync += p.r_valid.eq(0)
        with m.If(p.r_en):
            with m.If(cache_valid & (p.r_addr[2:] == cache_slot)):
                m.d.sync += [p.r_valid.eq(1), p.r_data.eq(cache.word_select(p.r_addr[:2], 32))]
            with m.Else():
                m.d.sync += [read_pending.eq(1), read_word.eq(p.r_addr)]
        with m.If(p.w_en & p.w_ready):
            m.d.sync += cache_valid.eq(0)

        # The read's handshake: `read_job` asks the controller (its domain); the
        # controller's `finish` statements hand over `answer`, which the `sync` side takes
        # when `answered`.
        answer = Signal(SLOT_BITS)
        initialised = Signal()
        if self.domain:
            # Hazards: `request` and `done` are toggles through two flip-flops; `read_word`
            # and `answer` are held from before their toggle changes until the other side
            # answers, so they are stable when sampled. A read is asked only when every
            # slot written before it has left the FIFO (`w_level` counts a slot until the
            # controller took it), and the controller finishes a burst before a read.
            request = Signal()
            requested = Signal()
            with m.If(read_pending & ~requested & (level == 0)):
                m.d.sync += [request.eq(~request), requested.eq(1)]
            request_seen = Signal()
            m.submodules.request_sync = FFSynchronizer(request, request_seen,
                                                       o_domain=self.domain)
            served = Signal()
            read_job = Signal()
            m.d.comb += read_job.eq(request_seen != served)
            done = Signal()
            done_seen = Signal()
            done_taken = Signal()
            m.submodules.done_sync = FFSynchronizer(done, done_seen, o_domain="sync")
            m.submodules.ready_sync = FFSynchronizer(initialised, self.ready,
                                                     o_domain="sync")
            answered = Signal()
            m.d.comb += answered.eq(done_seen != done_taken)
            m.d.sync += done_taken.eq(done_seen)
            with m.If(answered):
                m.d.sync += [read_pending.eq(0), requested.eq(0)]

            def finish(slot):
                return [answer.eq(slot), served.eq(request_seen), done.eq(~done)]
        else:
            # One domain: the read goes once the FIFO is empty (the held slot goes first)
            # and its address has been in `read_word` a clock (`read_hit`); answered the
            # next clock.
            read_job = Signal()
            read_settled = Signal()
            m.d.sync += read_settled.eq(read_pending)
            m.d.comb += [read_job.eq(read_pending & read_settled & (queue.level == 0)),
                         self.ready.eq(initialised)]
            answered = Signal()
            m.d.sync += answered.eq(0)

            def finish(slot):
                return [answer.eq(slot), read_pending.eq(0), answered.eq(1)]
        with m.If(answered):
            m.d.sync += [p.r_valid.eq(1), p.r_data.eq(answer.word_select(read_word[:2], 32)),
                         cache.eq(answer), cache_slot.eq(read_word[2:]), cache_valid.eq(1)]

        # The slot to write next, taken from the FIFO into a register of the controller's
        # whenever that is empty: the FIFO's read side (its pointers, its block RAM's
        # enable) then hangs on one flip-flop, `held_valid`, not on the controller's choice
        # of command, and that choice reads `held` and the row comparisons from
        # flip-flops. A slot takes eight clocks to write; the register refills in two.
        held = Signal(width)
        held_valid = Signal()
        # `stale`: something the row comparisons below depend on changed in the last
        # clock (they are a clock behind); the controller waits that clock out.
        stale = Signal()
        m.d[ctl] += stale.eq(0)
        m.d.comb += queue.r_en.eq(~held_valid)
        with m.If(queue.r_rdy & ~held_valid):
            m.d[ctl] += [held.eq(queue.r_data), held_valid.eq(1), stale.eq(1)]

        # Which slot the next access is for, split into column, bank and row.
        # Writes first: a read waits for the FIFO and the held slot to drain.
        job_write = Signal()
        job_slot = Signal(self.addr_bits)
        m.d.comb += [job_write.eq(held_valid),
                     job_slot.eq(Mux(held_valid, held[:self.addr_bits], read_word[2:]))]
        full_slot = Signal(t.slot_bits)
        m.d.comb += full_slot.eq(job_slot)
        job_col = Cat(Const(0, 3), full_slot[:slot_col_bits])
        job_bank = full_slot[slot_col_bits:slot_col_bits + 2]
        job_row = full_slot[slot_col_bits + 2:]
        job = Signal()
        m.d.comb += job.eq(held_valid | read_job)

        # The pins are registered: every assignment shows in the next clock. NOP unless
        # a command is given below; the data pins are driven only by write bursts.
        m.d[ctl] += [pins.cke.eq(1), pins.cs.eq(1), pins.ras.eq(0), pins.cas.eq(0),
                     pins.we.eq(0), pins.dq.oe.eq(0), pins.dqm.eq(0)]

        def command(ras, cas, we, bank=0, address=0):
            return [pins.ras.eq(ras), pins.cas.eq(cas), pins.we.eq(we),
                    pins.ba.eq(bank), pins.a.eq(address)]

        waits = [t.power_up, t.t_rp, t.t_rfc, t.t_mrd, t.t_rcd, t.t_rc, t.t_ras]
        # `timer_zero` is `timer == 0` kept in a flip-flop (a wide zero test is too slow
        # for the choice of command above 100 MHz).
        timer = Signal(range(max(waits) + 1), init=t.power_up)
        timer_zero = Signal(init=t.power_up == 0)
        with m.If(~timer_zero):
            m.d[ctl] += [timer.eq(timer - 1), timer_zero.eq(timer == 1)]

        def wait(clocks):
            # The next command goes out `clocks` after this one.
            return [timer.eq(clocks - 1), timer_zero.eq(clocks == 1)]

        def countdown(name, clocks):
            # `done` rises `clocks` clocks after the statements returned are given (and is
            # set at reset): a counter whose zero test is a flip-flop, like `timer_zero`,
            # so the choice of command reads flip-flops, not comparators.
            left = Signal(range(clocks + 1), name=f"{name}_left")
            done = Signal(init=1, name=f"{name}_done")
            with m.If(~done):
                m.d[ctl] += [left.eq(left - 1), done.eq(left == 1)]
            return done, [left.eq(clocks - 1), done.eq(clocks == 1)]

        # From the ACTIVE of the open row: tRAS to its PRECHARGE, tRC to the next ACTIVE;
        # from the last word written: tWR to a PRECHARGE.
        ras_done, ras_start = countdown("t_ras", t.t_ras)
        rc_done, rc_start = countdown("t_rc", t.t_rc)
        wr_done, wr_start = countdown("t_wr", t.t_wr)
        since_ref = Signal(range(t.refresh_interval + 1))
        with m.If(initialised & (since_ref != t.refresh_interval)):
            m.d[ctl] += since_ref.eq(since_ref + 1)
        # Registered: it rises a clock after the count (the slack has that clock).
        refresh_due = Signal()
        m.d[ctl] += refresh_due.eq(since_ref >= t.refresh_interval - self.refresh_slack)

        row_open = Signal()
        open_bank = Signal(2)
        open_row = Signal(t.row_bits)
        can_precharge = Signal()
        m.d.comb += can_precharge.eq(ras_done & wr_done)

        # Whether the held slot's row, and the read's, is the open row: in flip-flops, a
        # clock behind (the compare and the choice of command do not fit in one clock at
        # 110 MHz). ACTIVE, PRECHARGE and a new held slot mark the next clock `stale`; a
        # read's address is set clocks before the read is asked (`read_job`).
        def same_row(slot):
            full = Signal(t.slot_bits)
            m.d.comb += full.eq(slot)
            return (row_open & (open_bank == full[slot_col_bits:slot_col_bits + 2])
                    & (open_row == full[slot_col_bits + 2:]))
        held_hit = Signal()
        read_hit = Signal()
        m.d[ctl] += [held_hit.eq(same_row(held[:self.addr_bits])),
                     read_hit.eq(same_row(read_word[2:]))]
        hit = Signal()
        m.d.comb += hit.eq(Mux(job_write, held_hit, read_hit))

        state = Signal(_State)
        init_left = Signal(range(t.init_refreshes + 1), init=t.init_refreshes)
        burst = Signal(SLOT_BITS)           # the words still to write / the words read
        count = Signal(range(_WORDS_PER_SLOT + t.cas_latency + t.read_delay + 2))
        first_word = 1 + t.cas_latency + t.read_delay   # clocks from READ to word 0

        # Precharge-all (A10) and the mode register: burst of 8, sequential, CAS latency.
        all_banks = 1 << 10
        mode = 0b011 | t.cas_latency << 4
        with m.Switch(state):
            with m.Case(_State.POWER_UP):
                with m.If(timer_zero):
                    m.d[ctl] += command(1, 0, 1, address=all_banks) + [
                        wait(t.t_rp), state.eq(_State.INIT_REFRESH)]
            with m.Case(_State.INIT_REFRESH):
                with m.If(timer_zero):
                    m.d[ctl] += command(1, 1, 0) + [wait(t.t_rfc),
                                                   init_left.eq(init_left - 1)]
                    with m.If(init_left == 1):
                        m.d[ctl] += state.eq(_State.INIT_MODE)
            with m.Case(_State.INIT_MODE):
                with m.If(timer_zero):
                    m.d[ctl] += command(1, 1, 1, address=mode) + [
                        wait(t.t_mrd), initialised.eq(1), state.eq(_State.IDLE)]
            with m.Case(_State.IDLE):
                with m.If(~timer_zero | stale):
                    pass
                with m.Elif(refresh_due):
                    with m.If(row_open):
                        with m.If(can_precharge):
                            m.d[ctl] += command(1, 0, 1, address=all_banks) + [
                                wait(t.t_rp), row_open.eq(0), stale.eq(1)]
                    with m.Else():
                        m.d[ctl] += command(1, 1, 0) + [wait(t.t_rfc), since_ref.eq(0)]
                with m.Elif(job):
                    with m.If(hit):
                        with m.If(job_write):
                            data_ = held[self.addr_bits:]
                            m.d[ctl] += held_valid.eq(0)
                            m.d[ctl] += command(0, 1, 1, job_bank, job_col) + [
                                pins.dq.o.eq(data_[:SDRAM_DATA_BITS]), pins.dq.oe.eq(1),
                                burst.eq(data_ >> SDRAM_DATA_BITS),
                                count.eq(_WORDS_PER_SLOT - 1), state.eq(_State.WRITE_BURST)]
                            if _WORDS_PER_SLOT == 1:
                                m.d[ctl] += wr_start
                        with m.Else():
                            m.d[ctl] += command(0, 1, 0, job_bank, job_col) + [
                                count.eq(1), state.eq(_State.READ_BURST)]
                    with m.Elif(row_open):
                        with m.If(can_precharge):
                            m.d[ctl] += command(1, 0, 1, address=all_banks) + [
                                wait(t.t_rp), row_open.eq(0), stale.eq(1)]
                    with m.Elif(rc_done):
                        m.d[ctl] += command(1, 0, 0, job_bank, job_row) + [
                            wait(t.t_rcd), row_open.eq(1), open_bank.eq(job_bank),
                            open_row.eq(job_row), stale.eq(1)] + ras_start + rc_start
            with m.Case(_State.WRITE_BURST):
                m.d[ctl] += [pins.dq.o.eq(burst[:SDRAM_DATA_BITS]), pins.dq.oe.eq(1),
                             burst.eq(burst >> SDRAM_DATA_BITS), count.eq(count - 1)]
                with m.If(count == 1):
                    m.d[ctl] += [state.eq(_State.IDLE)] + wr_start
            with m.Case(_State.READ_BURST):
                # Word i is sampled `first_word + i` clocks after the READ.
                m.d[ctl] += count.eq(count + 1)
                filled = Cat(burst[SDRAM_DATA_BITS:], pins.dq.i)
                with m.If(count >= first_word):
                    m.d[ctl] += burst.eq(filled)
                with m.If(count == first_word + _WORDS_PER_SLOT - 1):
                    m.d[ctl] += finish(filled) + [state.eq(_State.IDLE)]
        return m
