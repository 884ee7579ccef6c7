# SPDX-License-Identifier: BSD-2-Clause
"""Formal harness of the PCI master: the real pads and the DMA engine (with its bus master
and its register block), facing a legal target, a legal arbiter and another master.

The board's master is the :class:`~pcispy.core.initiator.Initiator` inside the
:class:`~pcispy.dma.engine.DMAEngine`, behind the real
:class:`~pcispy.core.pads.PCIPads`, joined as in pcispy/board/top.py, so the
assertions are about the pins. The engine's ``dma`` register block is a
:class:`~pcispy.csr.bank.CSRBank` holding only that block; the host reads and writes
any register at any clock (the engine refuses what it must). A run is started only with
small settings (:data:`MAX_LENGTH`, :data:`MAX_BURST`, :data:`MAX_PASSES`,
:data:`MAX_IDLE`) so that covers stay short; the proofs hold for every state such runs
reach, whatever the bus does.

The rest of the bus follows the rules of the PCI Local Bus Specification 3.0 (stated as
``Assume``):

- the arbiter's GNT# is free: given and removed at any clock;
- another master starts a transaction (FRAME# alone, from an idle bus) only when our
  GNT# was deasserted in the two clocks before (an arbiter taking the bus from a parked
  agent leaves a clock without GNT#, §3.4.3), drops FRAME# only with IRDY# and never
  drives while a transaction of ours is on the bus;
- the target of our transactions asserts DEVSEL# first in clock 2..5 (counting the
  address phase as clock 1) or never (master abort), then holds it to the end, dropping
  it only with STOP# asserted (target abort, which needs DEVSEL# asserted before);
  TRDY# only with DEVSEL# and not in a read's turnaround clock; TRDY# and STOP#, once
  asserted, held (with DEVSEL#) until the data phase completes; STOP# held until FRAME#
  drops; no TRDY# after a phase ended with STOP#; nothing in address phases, after the
  last data phase, or outside transactions. A STOP# without TRDY# before any data moved
  is a retry by definition, so "retry only on the first data phase" needs no assumption
  of its own. Wait states are unbounded: no rule here needs the target's latency limits;
- ACK64# is absent (32-bit board); AD, PAR and PERR# from the other agents are free.

The properties (Assert, one name of :data:`pcispy.formal.JOBS` each) are the
rules our master keeps. The harness follows the transaction on the pins only: address
phases, data phases and terminations come from FRAME#, IRDY#, TRDY#, STOP#, DEVSEL#, AD
and C/BE#; the expected address/data stream and counters come from the run's settings as
the host programmed them. The lemmas (``lemma_*``) relate the blocks' registers to that
record; they are proved like the properties and keep k-induction away from states no run
reaches.
"""

from types import SimpleNamespace

from amaranth import Cat, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from pcispy.csr.bank import CSRBank
from pcispy.dma.engine import DMAEngine
from pcispy.dma.patterns import Pattern
from pcispy.pci.lfsr import lfsr_step
from pcispy.pci.bus import ACTIVE_LOW, Command, Termination, bus_lines
from pcispy.core.initiator import Descriptor
from pcispy.core.initiator.interface import _Phase
from pcispy.core.pads import LIVE_LINES, PCIPads, simulation_ports
from pcispy.board.registers import BAR0_SIZE
from pcispy.csr.map import RegisterMap
from pcispy.dma.registers import DMA
from pcispy.board.top import merge_bus_drivers
from pcispy.formal.harness import Harness, elaborate, internal_signals

__all__ = ["InitiatorHarness", "MAX_LENGTH", "MAX_BURST", "MAX_PASSES", "MAX_IDLE"]

#: Runs are started with at most this many bytes per pass, data phases per burst,
#: passes and idle clocks between bursts.
MAX_LENGTH = 32
MAX_BURST = 4
MAX_PASSES = 2
MAX_IDLE = 2
# The harness's clock counters stop here: above any Latency Timer (8 bits).
_COUNT_MAX = 256
# The master aborts when no DEVSEL# is sampled by clock 5 (4 clocks after the address
# phase).
_DEVSEL_LAST = 4
# The master asserts IRDY# within 8 clocks of the address phase and of each data phase.
_IRDY_LIMIT = 8
# Lines our master never drives (REQ# is point to point; PERR# has a rule of its own).
_NEVER_OURS = ("devsel", "trdy", "stop", "idsel", "lock", "gnt", "rst", "serr",
               "inta", "intb", "intc", "intd")
# The counters of the engine that count terminations, by the termination.
_TERMINATION_COUNTERS = {
    Termination.RETRY: "retries", Termination.DISCONNECT_DATA: "disconnects_data",
    Termination.DISCONNECT_NODATA: "disconnects_nodata",
    Termination.MASTER_ABORT: "master_aborts", Termination.TARGET_ABORT: "target_aborts"}


class InitiatorHarness(Harness):
    """The board's DMA master between a legal target, arbiter and other master (32-bit).

    Ports (all free; the assumptions restrict them to legal behaviour):
        gnt (In, 1): the arbiter asserts our GNT#.
        t_devsel, t_trdy, t_stop (In, 1): the target asserts DEVSEL#, TRDY#, STOP#.
        t_ad (In, 32), t_par (In, 1), t_perr (In, 1): AD, PAR, PERR# driven by the other
            agents when the board does not drive them.
        x_frame, x_irdy (In, 1), x_cbe (In, 4): another master's FRAME#, IRDY#, C/BE#.
        bus_master, mwi_enable, parity_response (In, 1), latency_timer (In, 8),
        cache_line (In, 8): the configuration registers the engine reads (stable).
        reg_valid, reg_write (In, 1), reg_addr (In), reg_wdata (In, 32): a host access to
            the ``dma`` register block, at any clock.

    Parameters: see :class:`~pcispy.formal.harness.Harness`. Mutation
    ``live_trdy_registered`` hands the engine TRDY# through an extra flip-flop (what a
    timing fix that forgot the same-clock paths would do: docs/architecture.md, "I/O
    timing"): it sees each data phase a clock late.
    """
    MUTATIONS = ("live_trdy_registered",)

    def __init__(self, **kwargs):
        super().__init__({
            "gnt": In(1),
            "t_devsel": In(1), "t_trdy": In(1), "t_stop": In(1),
            "t_ad": In(32), "t_par": In(1), "t_perr": In(1),
            "x_frame": In(1), "x_irdy": In(1), "x_cbe": In(4),
            "bus_master": In(1), "mwi_enable": In(1), "parity_response": In(1),
            "latency_timer": In(8), "cache_line": In(8),
            "reg_valid": In(1), "reg_write": In(1),
            "reg_addr": In(BAR0_SIZE.bit_length() - 3), "reg_wdata": In(32),
        }, **kwargs)

    def elaborate(self, platform):
        m = self._module()
        ports = simulation_ports(32)
        m.submodules.pads = pads = PCIPads(32, ports)
        dma = DMAEngine(32)
        # Elaborated here, so that the lemmas can name the engine's registers.
        m.submodules.dma = self.dma_fragment = elaborate(dma, platform)
        self.register_map = RegisterMap([DMA], BAR0_SIZE)
        m.submodules.bank = bank = CSRBank(self.register_map)

        # --- the board, wired as in pcispy/board/top.py -----------------------------------
        merge_bus_drivers(m, pads.bus, [dma])
        self.check_released_zero(dma.bus)
        for name in LIVE_LINES:
            m.d.comb += getattr(dma.now, name).eq(getattr(pads.live, name))
        if self.mutation == "live_trdy_registered":
            m.d.comb += dma.now.trdy.eq(self.past(pads.live.trdy))
        m.d.comb += [dma.now.ack64.eq(0), dma.par_error.eq(pads.par_error),
                     dma.par64_error.eq(0), pads.corrupt_par.eq(0)]
        wiring.connect(m, bank.dma, dma.regs)
        self.config = {name: self.stable(getattr(self, name)) for name in
                       ("bus_master", "mwi_enable", "parity_response", "latency_timer",
                        "cache_line")}
        for name, value in self.config.items():
            m.d.comb += getattr(dma, name).eq(value)
        m.d.comb += [bank.access.valid.eq(self.reg_valid),
                     bank.access.write.eq(self.reg_write),
                     bank.access.addr.eq(self.reg_addr),
                     bank.access.w_data.eq(self.reg_wdata), bank.access.w_be.eq(0xF)]

        pins = self._pins(m, ports)
        t = self._transaction(m, pins)
        self._legal_bus(pins, t)
        run = self._run(m, pins, t, bank.dma)
        self._rules(m, ports, pins, t, run)
        self._lemmas(m, pins, t, run)
        self._covers(pins, t, run)
        return m

    # --- the bus ---------------------------------------------------------------------------
    def _pins(self, m, ports):
        """The pins: the board's drive, else the other agents', else the pull-ups."""
        other = {name: Signal(bits, name=f"other_{name}", init=(1 << bits) - 1)
                 for name, bits in bus_lines(32).items()}
        m.d.comb += [other["frame"].eq(~self.x_frame), other["irdy"].eq(~self.x_irdy),
                     other["devsel"].eq(~self.t_devsel), other["trdy"].eq(~self.t_trdy),
                     other["stop"].eq(~self.t_stop), other["ad"].eq(self.t_ad),
                     other["cbe"].eq(self.x_cbe), other["par"].eq(self.t_par),
                     other["perr"].eq(~self.t_perr), other["gnt"].eq(~self.gnt)]
        pins = SimpleNamespace(oe={}, o={})
        for name, bits in bus_lines(32).items():
            port = ports[name]
            m.d.comb += port.i.eq(other[name])
            pins.oe[name], pins.o[name] = port.oe[0], port.o
            resolved = Signal(bits, name=f"pin_{name}")
            m.d.comb += resolved.eq(Mux(port.oe[0], port.o, other[name]))
            # Inside level for the active-low lines: 1 = asserted.
            setattr(pins, name, ~resolved if name in ACTIVE_LOW else resolved)
        return pins

    def _transaction(self, m, p):
        """Our transaction as the pins show it (no look inside the board)."""
        t = SimpleNamespace()
        t.pf, t.pi, t.pt, t.ps, t.pd = (self.past(v) for v in
                                         (p.frame, p.irdy, p.trdy, p.stop, p.devsel))
        t.p_ad, t.p_cbe = self.past(p.ad), self.past(p.cbe)
        own_q = Signal()
        t.begin = Signal()      # our FRAME# rises: the (first) address phase
        t.own = Signal()        # ours: from the first address phase to the release clock
        m.d.comb += [t.begin.eq(p.oe["frame"] & p.frame & ~own_q), t.own.eq(t.begin | own_q)]
        # A clock with FRAME# or IRDY# asserted is followed by another clock of ours: a
        # further phase, or the release clock (both deasserted, driven high).
        m.d.pci += own_q.eq(t.own & (p.frame | p.irdy))
        t.own_q = own_q
        t.dac = t.begin & (p.cbe == Command.DUAL_ADDRESS)
        t.dac2 = self.past(t.dac)                  # the second address phase of a DAC
        t.addr_phase = Signal()                    # the address phase with the command
        m.d.comb += t.addr_phase.eq((t.begin & ~t.dac) | t.dac2)
        t.data_clk = Signal()                      # data phases, waits, turnaround
        m.d.comb += t.data_clk.eq(t.own & ~t.begin & ~t.dac2 & (p.frame | p.irdy))
        t.fresh = t.begin | t.addr_phase
        t.cmd = self.held(p.cbe, t.addr_phase)
        t.write = t.cmd[0]
        t.dac_q = self.held(t.dac, t.begin)
        t.since = self.clocks_since(t.addr_phase, limit=_COUNT_MAX)
        t.since_frame = self.clocks_since(t.begin, limit=_COUNT_MAX)
        t.claimed_q = self.sticky(t.data_clk & p.devsel, t.fresh)
        t.xfer = Signal()       # a data phase completes now
        t.stop_end = Signal()   # the data phase ends with STOP# now
        t.ma = Signal()         # master abort: no DEVSEL# by clock 5
        m.d.comb += [t.xfer.eq(t.data_clk & p.irdy & p.trdy),
                     t.stop_end.eq(t.data_clk & p.irdy & p.stop),
                     t.ma.eq(t.data_clk & ~t.claimed_q & ~p.devsel & (t.since >= _DEVSEL_LAST))]
        t.ended = t.xfer | t.stop_end
        t.moved_q = self.sticky(t.xfer, t.fresh)
        t.stopped_q = self.sticky(t.stop_end, t.fresh)
        t.last = t.data_clk & ~p.frame & (t.ended | t.ma)   # the last data phase ends now
        t.since_phase = self.clocks_since(t.addr_phase, restart=t.xfer, limit=_COUNT_MAX)
        # How the transaction ended, from the first phase STOP# ended.
        t.stop_kind = Signal(Termination)
        with m.If(t.claimed_q & ~p.devsel):
            m.d.comb += t.stop_kind.eq(Termination.TARGET_ABORT)
        with m.Elif(p.trdy):
            m.d.comb += t.stop_kind.eq(Termination.DISCONNECT_DATA)
        with m.Elif(t.moved_q):
            m.d.comb += t.stop_kind.eq(Termination.DISCONNECT_NODATA)
        with m.Else():
            m.d.comb += t.stop_kind.eq(Termination.RETRY)
        first_stop = t.stop_end & ~t.stopped_q
        stopped_as = self.held(t.stop_kind.as_value(), first_stop)
        t.term = Signal(Termination)
        m.d.comb += t.term.eq(Mux(t.stopped_q | first_stop, stopped_as,
                                  Mux(t.ma, Termination.MASTER_ABORT, Termination.COMPLETION)))
        t.last_term = self.held(t.term.as_value(), t.last)
        # STOP# or a master abort with FRAME# asserted: the next phase is the last.
        t.forced = t.data_clk & p.frame & (p.stop | t.ma)
        t.forced_q = self.sticky(t.forced, t.fresh)
        return t

    def _legal_bus(self, p, t):
        """The arbiter, the other master and the target of our transactions keep the rules."""
        x_busy = self.x_frame | self.x_irdy
        x_was = self.past(x_busy)
        idle_before = ~t.pf & ~t.pi
        self.assume(~t.own_q | ~x_busy)                # no other master inside ours
        self.assume(~(x_busy & ~x_was) |               # it starts with FRAME# alone, from an
                    (self.x_frame & ~self.x_irdy & idle_before & ~self.past(p.gnt) &
                     ~self.past(self.past(p.gnt)) &    # idle bus, our GNT# gone two clocks
                     ~p.oe["frame"]))
        self.assume(~(self.past(self.x_frame) & ~self.x_frame) | self.x_irdy)
        self.assume(~self.past(~self.x_frame & self.x_irdy) | ~self.x_frame)
        # The target: nothing outside data phases (its own turnaround included).
        ours = t.data_clk
        self.assume(~(self.t_devsel | self.t_trdy | self.t_stop) | ours |
                    (~t.own & x_busy & x_was))
        # DEVSEL# first in clock 2..5, else never (master abort).
        self.assume(~(ours & p.devsel & ~t.claimed_q) |
                    ((t.since >= 1) & (t.since <= _DEVSEL_LAST)))
        # DEVSEL# held; dropped only with STOP# (target abort), then not asserted again.
        self.assume(~(ours & t.pd) | p.devsel | (p.stop & ~p.trdy))
        self.assume(~(ours & t.claimed_q & ~t.pd) | ~p.devsel)
        self.assume(~(ours & p.trdy) | p.devsel)
        self.assume(~(ours & p.stop & ~p.devsel) | (t.claimed_q & ~p.trdy))
        self.assume(~(ours & p.trdy & ~t.write) | (t.since >= 2))    # read turnaround
        # TRDY#/STOP# held with DEVSEL# until the phase completes; STOP# until FRAME# drops.
        self.assume(~(ours & (t.pt | t.ps) & ~t.pi) |
                    ((p.trdy == t.pt) & (p.stop == t.ps) & (p.devsel == t.pd)))
        self.assume(~(ours & t.ps & t.pf) | (p.stop & (p.devsel == t.pd)))
        self.assume(~(ours & t.stopped_q) | ~p.trdy)

    # --- the run ---------------------------------------------------------------------------
    def _run(self, m, p, t, regs):
        """What the run should move, as programmed, and what moved on the pins."""
        run = SimpleNamespace(regs=regs)
        # A write to dma.control as the engine sees it: the bank applies it a clock after
        # taking the host's request.
        write_to = regs.control.w_stb
        written = regs.control.w_data
        run.busy = regs.status.busy
        run.small = ((regs.length.length <= MAX_LENGTH) &
                     (regs.burst.unlimited | (regs.burst.phases <= MAX_BURST)) &
                     (regs.passes.count <= MAX_PASSES) & (regs.idle.clocks <= MAX_IDLE))
        self.assume(~(write_to & written[0] & ~run.busy) | run.small)
        run.launched = run.busy & ~self.past(run.busy)        # the first clock of a run
        run.stop_asked = self.sticky(write_to & written[1] & run.busy, run.launched)
        run.start = Cat(regs.addr_lo.addr_lo, regs.addr_hi.addr_hi)
        run.length = regs.length.length
        run.pattern = regs.mode.pattern
        run.programmed = regs.mode.cmd
        seed = regs.seed.seed
        pass_moved_q = Signal(32)                   # bytes moved in this pass
        run.pass_moved = Mux(run.launched, 0, pass_moved_q)
        run.pass_over = t.xfer & (run.pass_moved + 4 == run.length)
        m.d.pci += pass_moved_q.eq(Mux(run.pass_over, 0,
                                       run.pass_moved + Mux(t.xfer, 4, 0)))
        # The pattern's next word (patterns.py: counter seed + n, LFSR stepped n times).
        counter_q = Signal(32)
        lfsr_q = Signal(32)
        run.counter = Mux(run.launched, seed, counter_q)
        run.lfsr = Mux(run.launched, seed, lfsr_q)
        write_xfer = t.xfer & t.write
        m.d.pci += [
            counter_q.eq(Mux(run.pass_over, seed, Mux(write_xfer, run.counter + 1, run.counter))),
            lfsr_q.eq(Mux(run.pass_over, seed, Mux(write_xfer, lfsr_step(run.lfsr), run.lfsr))),
        ]
        run.word = Signal(32)
        with m.Switch(run.pattern):
            with m.Case(Pattern.COUNTER):
                m.d.comb += run.word.eq(run.counter)
            with m.Case(Pattern.LFSR):
                m.d.comb += run.word.eq(run.lfsr)
            with m.Case(Pattern.CONSTANT):
                m.d.comb += run.word.eq(seed)
        run.addr = Signal(64)                       # where the next word of the pass goes
        m.d.comb += run.addr.eq(run.start + run.pass_moved)
        # This transaction's address, and the address of its data phase on the pins.
        txn_lo = self.held(p.ad, t.begin)
        txn_hi = self.held(Mux(t.dac2, p.ad, 0), t.addr_phase)
        txn_moved_q = Signal(32)
        run.txn_moved = Mux(t.fresh, 0, txn_moved_q)
        m.d.pci += txn_moved_q.eq(run.txn_moved + Mux(t.xfer, 4, 0))
        run.phase_addr = Signal(64)
        m.d.comb += run.phase_addr.eq(Cat(txn_lo, txn_hi) + run.txn_moved)

        def count(increment):
            """Counted on the pins since the run started (zero in its first clock)."""
            q = Signal(32)
            now = Mux(run.launched, 0, q)
            m.d.pci += q.eq(now + increment)
            return now

        run.moved_bytes = count(Mux(t.xfer, 4, 0))
        run.moved_phases = count(t.xfer)
        run.transactions = count(t.begin)
        run.passes = count(run.pass_over)
        run.ends = {kind: count(t.last & (t.term == kind)) for kind in _TERMINATION_COUNTERS}
        return run

    # --- the rules our master keeps ----------------------------------------------------------
    def _rules(self, m, ports, p, t, run):
        for name in ("frame", "irdy", "perr"):
            port = ports[name]
            was_oe, was_o = self.past(port.oe[0]), self.past(port.o[0])
            # s/t/s: the line is driven high (deasserted) in the clock before release.
            self.check("stst_release", ~(was_oe & ~port.oe[0]) | was_o)

        # Never two drivers: FRAME# and IRDY# only in our transaction, which starts from
        # an idle bus with GNT# sampled in the clock before; AD and C/BE# in it (AD only for
        # the address and our write data) or on the bus parked on us; nothing on the
        # target's lines.
        parked_on_us = self.past(p.gnt & ~p.frame & ~p.irdy)
        self.check("one_driver", ~t.begin | (self.past(p.gnt) & ~t.pf & ~t.pi))
        self.check("one_driver", ~(p.oe["frame"] | p.oe["irdy"]) | t.own)
        self.check("one_driver", ~p.oe["ad"] | t.begin | t.dac2 | (t.data_clk & t.write) |
                   (~t.own & parked_on_us))
        self.check("one_driver", ~p.oe["cbe"] | t.begin | t.dac2 | t.data_clk |
                   (~t.own & parked_on_us))
        # (The board's passive mode counts on it: it reads FRAME#'s, IRDY#'s and AD's
        # enables for C/BE#'s.)
        self.check("one_driver", ~p.oe["cbe"] | p.oe["frame"] | p.oe["irdy"] | p.oe["ad"])
        for name in _NEVER_OURS:
            self.check("one_driver", ~p.oe[name])

        # Turnaround: FRAME# is released in the clock after our last data phase (the next
        # master may start in the one after); IRDY# is not driven in our first address
        # phase (the last master may be driving it deasserted then). (AD and C/BE# float
        # the clock after GNT# is sampled deasserted: ``one_driver`` above.)
        self.check("turnaround", ~self.past(t.last) | ~p.oe["frame"])
        self.check("turnaround", ~t.begin | ~p.oe["irdy"])

        # Parking (§3.4.3): GNT# on an idle bus, and AD and C/BE# are driven the clock after
        # (eight clocks are allowed); PAR one clock after AD, whoever's AD it was.
        self.check("parking", ~parked_on_us | (p.oe["ad"] & p.oe["cbe"]))
        self.check("parking", ~self.past(p.oe["ad"]) | p.oe["par"])

        # IRDY#: not in an address phase; once asserted, held (with FRAME#, the byte enables
        # and a write's data) until the phase completes, is stopped, or master abort.
        self.check("irdy_held", ~(t.begin | t.dac2) | ~p.irdy)
        waiting = self.past(t.data_clk & p.irdy & ~t.ended & ~t.ma)
        self.check("irdy_held", ~waiting | (p.irdy & (p.frame == t.pf) & (p.cbe == t.p_cbe)))
        self.check("irdy_held", ~(waiting & t.write) | (p.ad == t.p_ad))

        # FRAME# deasserted only with IRDY# asserted, and not asserted again.
        self.check("frame_needs_irdy", ~(t.data_clk & t.pf & ~p.frame) | p.irdy)
        self.check("frame_needs_irdy", ~(t.own_q & ~t.pf) | ~p.frame)

        # After STOP# (or a master abort) with FRAME# asserted: FRAME# deasserted at once,
        # with IRDY#; after the last data phase: both deasserted.
        self.check("frame_after_stop", ~self.past(t.forced) | (~p.frame & p.irdy))
        self.check("frame_after_stop", ~self.past(t.last) | (~p.frame & ~p.irdy))

        # IRDY# within 8 clocks of the address phase and of each data phase.
        self.check("irdy_latency", ~(t.data_clk & ~p.irdy & (t.since_phase >= _IRDY_LIMIT)))

        # PAR: driven one clock after each AD value we drove, even over AD and C/BE#.
        p_ad_oe = self.past(p.oe["ad"])
        self.check("parity_next_clock", p.oe["par"] == p_ad_oe)
        self.check("parity_next_clock", ~p_ad_oe | (p.par == Cat(t.p_ad, t.p_cbe).xor()))

        # Latency Timer: expired (counted from FRAME#) with GNT# deasserted: the next data
        # phase FRAME# may change in, with IRDY# asserted, is the last (for MWI: the next
        # one that ends a cache line).
        t.lt_due = self.past(t.own & p.frame & ~p.gnt &
                             (t.since_frame >= self.config["latency_timer"]))
        t.frame_free = ~t.pi | self.past(t.ended)
        line_mask = self.config["cache_line"] - 1
        line_end = ((run.phase_addr[2:10] + 1) & line_mask) == 0
        mwi = t.cmd == Command.MEM_WRITE_INVALIDATE
        self.check("latency_timer_exit", ~(t.data_clk & p.irdy & t.lt_due & t.frame_free &
                                           (~mwi | line_end)) | ~p.frame)

        # PERR#: two clocks after a read data phase whose PAR was wrong, when enabled.
        p_read_xfer = self.past(t.xfer & ~t.write)
        bad_par = p_read_xfer & (p.par != Cat(t.p_ad, t.p_cbe).xor())
        t.our_perr = p.oe["perr"] & ~p.o["perr"][0]
        self.check("perr_two_clocks",
                   t.our_perr == self.past(bad_par & self.config["parity_response"]))

        # The address/data stream: each transaction starts where the data stopped, each
        # completed phase is the next word of the pass at the next address (a retried or
        # disconnected transaction neither loses nor repeats one), every byte enabled.
        self.check("stream", ~t.begin | run.busy)
        self.check("stream", ~t.begin | ((p.ad == run.addr[:32]) &
                                         (t.dac == (run.addr[32:] != 0))))
        self.check("stream", ~t.dac2 | (p.ad == run.addr[32:]))
        self.check("stream", ~t.addr_phase | self._as_programmed(p.cbe, run))
        self.check("stream", ~t.xfer | ((run.phase_addr == run.addr) & (p.cbe == 0)))
        self.check("stream", ~(t.xfer & t.write & (run.pattern != Pattern.TIMESTAMP)) |
                   (p.ad == run.word))

        # The engine's counters equal what happened on the pins.
        regs = run.regs

        def counted(count):
            """What the engine shows of a count on the pins: the initiator's events reach it
            registered, so it counts a clock after the pins (and 0 in a run's first clock)."""
            return Mux(run.launched, 0, self.past(count))
        self.check("dma_counts", regs.bytes_lo.bytes_lo == counted(run.moved_bytes))
        self.check("dma_counts", regs.data_phases.data_phases == counted(run.moved_phases))
        # (it counts a transaction from the event of the clock it decided to start in: in
        # the clock the address phase is on the pins)
        self.check("dma_counts", regs.transactions.transactions == run.transactions)
        self.check("dma_counts", regs.passes_done.passes_done == counted(run.passes))
        for kind, name in _TERMINATION_COUNTERS.items():
            self.check("dma_counts",
                       getattr(getattr(regs, name), name) == counted(run.ends[kind]))

    @staticmethod
    def _as_programmed(cmd, run):
        """``cmd`` is the programmed command (MWI becomes MW for partial cache lines)."""
        return ((cmd == run.programmed) |
                ((run.programmed == Command.MEM_WRITE_INVALIDATE) & (cmd == Command.MEM_WRITE)))

    # --- lemmas ----------------------------------------------------------------------------
    def _lemmas(self, m, p, t, run):
        """Relations between the engine's, the master's and the writer's registers and what
        the harness recorded: true in every state a run reaches, they rule out the
        unreachable states k-induction would otherwise start from."""
        ini = internal_signals(self.dma_fragment, "initiator")
        eng = internal_signals(self.dma_fragment)
        writer = internal_signals(self.dma_fragment, "writer")
        regs, running = run.regs, eng["running"]
        data_clk = t.data_clk

        # What the master believes is on the pins, and where it is in the transaction.
        self.check("lemma_pins", ~ini["txn_wide"])     # a 32-bit board
        self.check("lemma_pins", ini["pin_frame"] == (p.oe["frame"] & p.frame))
        self.check("lemma_pins", ini["pin_irdy"] == (p.oe["irdy"] & p.irdy))
        self.check("lemma_pins", ~p.oe["ad"] | (ini["pin_ad"] == p.ad))
        phase = Signal(_Phase)
        m.d.comb += phase.eq(Mux(t.dac, _Phase.DAC, Mux(t.addr_phase, _Phase.ADDR,
                                 Mux(data_clk, _Phase.DATA, _Phase.IDLE))))
        self.check("lemma_txn", ini["phase"] == phase.as_value())
        first_forced = t.forced & ~t.forced_q
        forced_as = self.held(Mux(p.stop, t.stop_kind.as_value(), Termination.MASTER_ABORT),
                              first_forced)
        open_q = self.held(~p.irdy, first_forced)
        self.check("lemma_txn", ~data_clk | (
            (ini["txn_write"] == t.write) & (ini["txn_cmd"] == t.cmd) &
            (ini["devsel_seen"] == t.claimed_q) & (ini["moved"] == t.moved_q) &
            (ini["ending"] == t.forced_q) & (~t.forced_q | (ini["ending_open"] == open_q)) &
            (~t.forced_q | (ini["term"] == forced_as)) & (ini["txn_dac"] == t.dac_q)))
        # After STOP# or a master abort with FRAME# asserted, the one phase left is the last.
        self.check("lemma_txn", ~(data_clk & t.forced_q) |
                   (~p.frame & p.irdy & (p.stop | t.ma) & (t.term.as_value() == forced_as)))
        self.check("lemma_txn", ~(data_clk & t.stopped_q) | t.forced_q)
        self.check("lemma_txn", ~(data_clk & ~t.forced_q) |
                   (ini["term"] == Termination.COMPLETION) |
                   (ini["term"] == Termination.LATENCY_TIMER))
        self.check("lemma_txn", ~(data_clk & ~t.forced_q &
                                  (ini["term"] == Termination.LATENCY_TIMER)) | ~p.frame)
        self.check("lemma_txn", ~(data_clk | t.addr_phase) |
                   Mux(t.since < _COUNT_MAX, ini["since_addr"] == t.since,
                       ini["since_addr"] >= _COUNT_MAX))
        self.check("lemma_txn", ~(data_clk | t.addr_phase) | (t.since_frame == Mux(
            t.dac_q & (t.since < _COUNT_MAX), t.since + 1, t.since)))
        self.check("lemma_txn", ~(data_clk & ~p.irdy) |
                   (t.since_phase + ini["wait_left"] <= _IRDY_LIMIT - 1))

        # The run: what the engine handed to the master and what moved.
        length, start, pass_moved = run.length, run.start, run.pass_moved
        issued = Signal(32)                        # bytes of this pass handed to the master
        m.d.comb += issued.eq(((length >> 2) - eng["left"]) << 2)
        line = self.config["cache_line"]
        line_bytes = Signal(10)
        m.d.comb += line_bytes.eq(line << 2)
        self.check("lemma_run", ~running | (
            run.small & (length != 0) & (length[:2] == 0) & (start[:2] == 0) &
            (regs.burst.unlimited | (regs.burst.phases != 0)) &
            ~run.programmed.matches(Command.RESERVED_4, Command.RESERVED_5,
                                    Command.RESERVED_8, Command.RESERVED_9,
                                    Command.DUAL_ADDRESS, Command.SPECIAL_CYCLE)))
        self.check("lemma_run",
                   ~(running & (run.programmed == Command.MEM_WRITE_INVALIDATE)) |
                   ((line != 0) & ((line & (line - 1)) == 0) &
                    (((start[:10] | length[:10]) & (line_bytes - 1)) == 0)))
        self.check("lemma_run", ~running | (
            (eng["left"] <= (length >> 2)) & (eng["last_issued"] == (eng["left"] == 0)) &
            (eng["next_addr"] == (start + issued)[:64]) & (pass_moved[:2] == 0) &
            (pass_moved < length)))
        # The engine keeps each offer's burst beside what it is the burst of (32-bit:
        # a burst is ``phases`` DWORDs).
        def burst_of(dwords):
            fits = regs.burst.unlimited | (dwords <= regs.burst.phases)
            return fits, Mux(fits, dwords, regs.burst.phases)
        for prefix, dwords in (("left", eng["left"]), ("fresh", length >> 2)):
            fits, chunk = burst_of(dwords)
            self.check("lemma_run", ~running | ((eng[f"{prefix}_fits"] == fits) &
                                                (eng[f"{prefix}_chunk"] == chunk)))
        self.check("lemma_run", running | (~ini["held"] & (ini["phase"] == _Phase.IDLE)))
        self.check("lemma_run", (ini["phase"] == _Phase.IDLE) | ini["held"])
        self.check("lemma_run", ini["busy"] == (ini["held"] | (ini["phase"] != _Phase.IDLE)))
        idle = ini["phase"] == _Phase.IDLE
        self.check("lemma_run", ini["go_held"] == (idle & ini["held"] & ~ini["stopping"] &
                                                   ~ini["dwords_left_is"][0]))
        self.check("lemma_run", ini["go_free"] == (idle & ~ini["held"] & ~ini["stopping"] &
                                                   ~ini["aborted_q"]))
        # The engine's offer with the master free is its offer whenever the master is free.
        self.check("lemma_run", ini["busy"] | (ini["offer_when_free"] == (
            ini["desc__valid"] & (Descriptor(ini["desc__payload"]).dwords != 0))))
        self.check("lemma_run", ~ini["held"] | (
            (ini["addr"] == run.addr) & (ini["dwords_left"] != 0) &
            (pass_moved + (ini["dwords_left"] << 2) == issued) &
            (ini["cmd"] == run.programmed)))
        # (A pass's end, or an abort, reaches the engine's bookkeeping a clock after the
        # burst ends: in that clock the whole pass is issued and the next has moved nothing,
        # or the run is about to finish.)
        self.check("lemma_run", ~(running & ~ini["held"] & ~eng["stop_pending"] &
                                  ~ini["aborted_q"]) |
                   Mux(eng["pass_end"], (pass_moved == 0) & (issued == length),
                       pass_moved == issued))
        self.check("lemma_run", running | ~eng["stop_pending"])
        self.check("lemma_run", ~(eng["stop_pending"] & ini["held"]) | ini["stopping"])
        self.check("lemma_run", ~ini["stopping"] | eng["stop_pending"])
        self.check("lemma_run", ~data_clk | self._as_programmed(t.cmd, run))
        # FRAME# stays asserted with IRDY# only before the transaction's last phase.
        self.check("lemma_run", ~(data_clk & p.frame & p.irdy) | (ini["txn_left"] >= 2))
        self.check("lemma_run", ~data_clk | (run.txn_moved <= pass_moved))
        self.check("lemma_run", ~data_clk | ((ini["addr"] == run.phase_addr) &
                                             (ini["txn_left"] <= ini["dwords_left"]) &
                                             (t.forced_q | (ini["txn_left"] != 0))))
        # A write's AD carries the word of the phase on the pins, waiting or not.
        self.check("lemma_run", ~(data_clk & t.write & (run.pattern != Pattern.TIMESTAMP)) |
                   (p.ad == run.word))
        self.check("lemma_run", run.moved_bytes == (run.moved_phases << 2)[:32])
        # The writer advances a clock after a word moves (by the initiator's take_q), and
        # restarts a clock after a pass's last word (with the engine's pass_end).
        take_q = ini["take_q"]
        lfsr_taken = Mux(take_q == 0, writer["lfsr"],
                         Mux(take_q == 1, lfsr_step(writer["lfsr"]),
                             lfsr_step(lfsr_step(writer["lfsr"]))))
        self.check("lemma_run", eng["pass_end"] | (
            ((writer["counter"] + take_q)[:32] == run.counter) & (lfsr_taken == run.lfsr)))

    # --- reachability ----------------------------------------------------------------------
    def _covers(self, p, t, run):
        # (one statement per line: the runner names a failed statement by its line)
        ended = {kind: t.last & (t.term == kind) for kind in Termination}
        self.cover("completion", ended[Termination.COMPLETION] & t.moved_q)
        self.cover("retry", ended[Termination.RETRY])
        self.cover("disconnect_data", ended[Termination.DISCONNECT_DATA])
        self.cover("disconnect_nodata", ended[Termination.DISCONNECT_NODATA])
        self.cover("target_abort", ended[Termination.TARGET_ABORT])
        self.cover("master_abort", ended[Termination.MASTER_ABORT])
        # The latency timer ends an unlimited burst before the pass is over, no stop asked.
        self.cover("latency_timer", t.data_clk & p.irdy & t.pf & ~p.frame & t.lt_due &
                   t.frame_free & ~self.past(p.stop | t.ma) & run.regs.burst.unlimited &
                   (run.pass_moved + 4 < run.length) & ~run.stop_asked)
        self.cover("retry_repeated", t.begin & (t.last_term == Termination.RETRY))
        self.cover("disconnect_resumed", t.begin & (run.pass_moved != 0) &
                   ((t.last_term == Termination.DISCONNECT_DATA) |
                    (t.last_term == Termination.DISCONNECT_NODATA)))
        self.cover("dual_address", t.dac2)
        self.cover("mwi", t.addr_phase & (t.cmd == Command.MEM_WRITE_INVALIDATE))
        self.cover("irdy_wait_max", t.data_clk & ~p.irdy & (t.since_phase == _IRDY_LIMIT - 1))
        self.cover("second_pass", t.begin & (run.passes == 1))
        self.cover("read_parity_error", t.our_perr)
