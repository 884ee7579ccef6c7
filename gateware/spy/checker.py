# SPDX-License-Identifier: BSD-2-Clause
"""The PCI protocol checker: watches the resolved bus and flags every broken rule.

The checker is a passive, synthesizable monitor. It sees only line levels (a spy cannot tell
who drives a line; two drivers on one line are the simulated resolver's business), follows
each transaction clock by clock, and evaluates every rule of :data:`RULES` on every clock.
Per rule it keeps a sticky flag and a saturating counter; it remembers which rule broke
first and at which cycle, and it pulses :attr:`ProtocolChecker.violation` in the clock of
the offending bus sample so that the spy can trigger on it.

The rule list is data. :data:`RULES` holds one :class:`Rule` per check (``id`` is the bit
of the violation vector and the counter index); the gateware builds one condition per rule
name and refuses to elaborate if a rule has no condition (or a condition no rule), and the
host prints the same tuple (``pcispy check --list-rules``).

Clock numbering used in the descriptions: the (last) address phase of a transaction is
clock 1, so fast DEVSEL# is clock 2, medium 3, slow 4 and subtractive 5. For a Dual Address
Cycle the numbering starts again at the second address phase. A latency of N clocks means
the response is sampled N clocks after its reference clock; a rule fires at the first clock
at which the limit is certainly exceeded.
"""

from typing import NamedTuple

from amaranth.hdl import C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from ..logic import bottom_bit
from ..pci.bus import BusState, Command

__all__ = ["Rule", "RULES", "RULES_BY_NAME", "LATENCY_RULES", "COUNT_WIDTH",
           "ProtocolChecker"]


class Rule(NamedTuple):
    """One protocol rule: ``id`` (bit and counter index), short ``name``, one-sentence
    ``description`` of the violation, ``reference`` (PCI Local Bus Specification 3.0 section
    and the matching section of ../shared/pci-notes.md)."""
    id: int
    name: str
    description: str
    reference: str


_SPEC = "PCI LB 3.0"

# (name, description of the violation, reference). The order fixes the ids: append only.
_RULE_TEXT = (
    # -- initiator signalling ------------------------------------------------------------
    ("frame_without_irdy",
     "FRAME# was deasserted while IRDY# was deasserted (the last data phase must be "
     "signalled with IRDY# asserted).",
     f"{_SPEC} §3.2.1, §3.3.3.1; notes: A transaction, clock by clock"),
    ("irdy_without_frame",
     "IRDY# was asserted on an idle bus without FRAME# (or was not released the clock after "
     "the last data phase).",
     f"{_SPEC} §3.2.1, §3.3.1; notes: A transaction, clock by clock"),
    ("irdy_in_address_phase",
     "IRDY# was asserted during an address phase.",
     f"{_SPEC} §3.3.1, §3.4.2; notes: A transaction, clock by clock"),
    ("frame_reasserted",
     "FRAME# was asserted again after the initiator had signalled the final data phase, "
     "before that phase completed.",
     f"{_SPEC} §3.2.1, §3.3.3.1; notes: A transaction, clock by clock"),
    ("frame_dropped_in_wait",
     "FRAME# was deasserted while IRDY# waited for the target (the initiator may not change "
     "FRAME# until the data phase completes; master abort aside).",
     f"{_SPEC} §3.2.1; notes: A transaction, clock by clock"),
    ("irdy_withdrawn",
     "IRDY# was deasserted before its data phase completed on a claimed transaction.",
     f"{_SPEC} §3.2.1; notes: A transaction, clock by clock"),
    ("master_abort_early",
     "The initiator ended an unclaimed transaction (released IRDY#) before DEVSEL# was "
     "sampled deasserted on clock 5.",
     f"{_SPEC} §3.3.3.1; notes: Decode and DEVSEL#"),
    # -- target signalling ---------------------------------------------------------------
    ("devsel_while_idle",
     "DEVSEL# was asserted while no transaction was in progress (or in an address phase).",
     f"{_SPEC} §3.2.1, §3.6.1; notes: Decode and DEVSEL#"),
    ("devsel_late",
     "DEVSEL# was first asserted after clock 5, later than subtractive decode.",
     f"{_SPEC} §3.6.1; notes: Decode and DEVSEL#"),
    ("devsel_dropped",
     "DEVSEL# was deasserted before the transaction ended without STOP# asserted (only a "
     "target abort may release DEVSEL# early).",
     f"{_SPEC} §3.3.3.2.1; notes: How a target ends a transaction"),
    ("devsel_on_special_cycle",
     "DEVSEL# was asserted on a Special Cycle, which no target may claim.",
     f"{_SPEC} §3.6.2; notes: Command codes"),
    ("trdy_without_devsel",
     "TRDY# was asserted while DEVSEL# was deasserted.",
     f"{_SPEC} §3.3.3.2.1; notes: Decode and DEVSEL#"),
    ("stop_without_claim",
     "STOP# was asserted while DEVSEL# was deasserted and no target had claimed the "
     "transaction (a target abort needs an earlier DEVSEL#).",
     f"{_SPEC} §3.3.3.2.1; notes: Decode and DEVSEL#"),
    ("stop_released_early",
     "STOP# was released after a data phase completed while FRAME# was still asserted (the "
     "target must hold STOP# until the final data phase).",
     f"{_SPEC} §3.3.3.2.1; notes: How a target ends a transaction"),
    ("stop_withdrawn",
     "STOP# was deasserted before its data phase completed (before IRDY# was asserted).",
     f"{_SPEC} §3.2.1, §3.3.3.2.1; notes: How a target ends a transaction"),
    ("trdy_withdrawn",
     "TRDY# was deasserted before its data phase completed (before IRDY# was asserted).",
     f"{_SPEC} §3.2.1; notes: A transaction, clock by clock"),
    ("target_response_changed",
     "The target asserted TRDY# or STOP#, or released DEVSEL#, while a data phase it had "
     "already answered waited for IRDY#.",
     f"{_SPEC} §3.2.1; notes: How a target ends a transaction"),
    ("trdy_in_read_turnaround",
     "TRDY# was asserted in the turnaround clock right after the address phase of a read.",
     f"{_SPEC} §3.3.1, §3.2.4; notes: A transaction, clock by clock"),
    ("data_after_stop",
     "Data moved (IRDY# and TRDY#) after a data phase had already completed with STOP#.",
     f"{_SPEC} §3.3.3.2.1; notes: How a target ends a transaction"),
    # -- latency -------------------------------------------------------------------------
    ("initiator_latency",
     "IRDY# was not asserted within 8 clocks of the address phase or of the previous data "
     "phase.",
     f"{_SPEC} §3.5.2; notes: Latency rules"),
    ("target_initial_latency",
     "The claiming target did not assert TRDY# or STOP# within 16 clocks of the address "
     "phase (host bridges are allowed 32; mask this rule for them).",
     f"{_SPEC} §3.5.1.1; notes: Latency rules"),
    ("target_initial_latency_bridge",
     "The claiming target did not assert TRDY# or STOP# within 32 clocks of the address "
     "phase, beyond even the host-bridge allowance.",
     f"{_SPEC} §3.5.1.1; notes: Latency rules"),
    ("target_subsequent_latency",
     "The target did not assert TRDY# or STOP# within 8 clocks of the previous data phase.",
     f"{_SPEC} §3.5.1.2; notes: Latency rules"),
    # -- commands and addresses ----------------------------------------------------------
    ("reserved_command",
     "An address phase carried a reserved command code (0100, 0101, 1000 or 1001).",
     f"{_SPEC} §3.1.1; notes: Command codes"),
    ("dac_after_dac",
     "The second address phase of a Dual Address Cycle carried the DAC command again.",
     f"{_SPEC} §3.9; notes: 64-bit extension"),
    ("config_reserved_type",
     "A configuration command had AD[1:0] = 10 or 11 in its address phase (only type 0 "
     "and type 1 exist).",
     f"{_SPEC} §3.2.2.3; notes: Configuration space"),
    ("io_byte_enables_mismatch",
     "An I/O transaction enabled a byte below the one AD[1:0] addresses, or not that byte "
     "(with some byte enabled).",
     f"{_SPEC} §3.2.2.1; notes: Command codes"),
    ("mwi_byte_enables",
     "A Memory Write and Invalidate data phase had a byte enable deasserted.",
     f"{_SPEC} §3.1.1; notes: Command codes"),
    ("reserved_burst_order_continued",
     "A memory burst with the reserved burst order (AD[1:0] = x1) moved a second data word "
     "instead of disconnecting after the first.",
     f"{_SPEC} §3.2.2.2; notes: Command codes"),
    # -- stability during waits ----------------------------------------------------------
    ("byte_enables_changed_in_wait",
     "C/BE# changed while IRDY# was asserted and the data phase had not completed.",
     f"{_SPEC} §3.2.2, §3.3.1; notes: A transaction, clock by clock"),
    ("write_data_changed_in_wait",
     "Write data on AD changed while IRDY# was asserted and the data phase had not "
     "completed.",
     f"{_SPEC} §3.3.2; notes: A transaction, clock by clock"),
    ("read_data_changed_in_wait",
     "Read data on AD changed while TRDY# was asserted and the data phase had not "
     "completed.",
     f"{_SPEC} §3.3.1; notes: A transaction, clock by clock"),
    # -- parity and error reporting ------------------------------------------------------
    ("address_parity",
     "PAR one clock after an address phase did not give even parity over AD[31:0] and "
     "C/BE#[3:0].",
     f"{_SPEC} §3.7.1, §3.7.3; notes: Parity"),
    ("write_data_parity",
     "PAR one clock after a write data transfer did not give even parity over AD[31:0] and "
     "C/BE#[3:0].",
     f"{_SPEC} §3.7.1; notes: Parity"),
    ("read_data_parity",
     "PAR one clock after a read data transfer did not give even parity over AD[31:0] and "
     "C/BE#[3:0].",
     f"{_SPEC} §3.7.1; notes: Parity"),
    ("data_parity64",
     "PAR64 one clock after a 64-bit data transfer did not give even parity over AD[63:32] "
     "and C/BE#[7:4].",
     f"{_SPEC} §3.8, §3.7.1; notes: Parity"),
    ("perr_timing",
     "PERR# was asserted although no data moved two clocks earlier.",
     f"{_SPEC} §3.7.4.1; notes: Parity"),
    ("perr_without_parity_error",
     "PERR# was asserted two clocks after a data transfer whose parity was correct.",
     f"{_SPEC} §3.7.4.1; notes: Parity"),
    # -- arbitration (when every master's GNT# is visible) -------------------------------
    ("frame_without_gnt",
     "A transaction started although no GNT# was asserted in the clock before its address "
     "phase.",
     f"{_SPEC} §3.4.1; notes: A transaction, clock by clock"),
    ("multiple_gnt",
     "More than one GNT# was asserted in the same clock.",
     f"{_SPEC} §3.4.1; notes: Signals"),
    ("gnt_switch_while_idle",
     "On an idle bus the arbiter moved GNT# from one master to another without a clock "
     "with no GNT# between them.",
     f"{_SPEC} §3.4.1; notes: Signals"),
    # -- 64-bit extension ----------------------------------------------------------------
    ("req64_frame_mismatch",
     "REQ64# did not follow FRAME# (it must be asserted with the address phase and "
     "released with FRAME#, and never asserted on its own outside reset).",
     f"{_SPEC} §3.8; notes: 64-bit extension"),
    ("req64_non_memory",
     "REQ64# was asserted on a command other than a memory command.",
     f"{_SPEC} §3.8; notes: 64-bit extension"),
    ("ack64_without_req64",
     "ACK64# was asserted on a transaction whose initiator had not asserted REQ64#.",
     f"{_SPEC} §3.8; notes: 64-bit extension"),
    ("ack64_devsel_mismatch",
     "ACK64# was not in step with DEVSEL# (asserted without it, or changed while DEVSEL# "
     "held).",
     f"{_SPEC} §3.8; notes: 64-bit extension"),
    # -- reset ---------------------------------------------------------------------------
    ("signals_during_reset",
     "FRAME#, IRDY#, TRDY#, STOP#, DEVSEL#, LOCK#, PERR#, SERR# or ACK64# was asserted "
     "while RST# was asserted.",
     f"{_SPEC} §4.3.2, §2.2.1; notes: Signals"),
)

#: Every rule, in id order.
RULES = tuple(Rule(index, *text) for index, text in enumerate(_RULE_TEXT))

#: ``{name: Rule}``.
RULES_BY_NAME = {rule.name: rule for rule in RULES}

#: The latency rules, which known rule breakers (legacy bridges, host bridges) trip; users
#: commonly mask them on buses with such devices.
LATENCY_RULES = ("initiator_latency", "target_initial_latency",
                 "target_initial_latency_bridge", "target_subsequent_latency")

#: Default bits of each rule's saturating violation counter (the width check.count shows).
COUNT_WIDTH = 16

# Limits in clocks (PCI LB 3.0 §3.5).
_TARGET_INITIAL_LIMIT = 16
_BRIDGE_INITIAL_LIMIT = 32
_SUBSEQUENT_LIMIT = 8
_INITIATOR_LIMIT = 8
_SUBTRACTIVE_CLOCK = 5   # the last clock at which DEVSEL# may first be sampled asserted

_MEMORY_COMMANDS = tuple(c for c in Command if c.is_memory)
_READ_COMMANDS = tuple(c for c in Command if c.is_read)
# Data flows from the initiator: every defined command that is not a read (the Special
# Cycle's message is written), except DAC, which only announces the second address phase.
_WRITE_COMMANDS = tuple(c for c in Command
                        if not (c.is_read or c.is_reserved or c is Command.DUAL_ADDRESS))
_RESERVED_COMMANDS = tuple(c for c in Command if c.is_reserved)
_IO_COMMANDS = tuple(c for c in Command if c.is_io)
_CONFIG_COMMANDS = tuple(c for c in Command if c.is_config)


def _is_one_of(code, commands):
    """1 when the 4-bit command ``code`` is one of ``commands``."""
    return Cat(*(code == c.value for c in commands)).any()


def _saturating_increment(counter):
    return Mux(counter == (1 << len(counter)) - 1, counter, counter + 1)


class ProtocolChecker(wiring.Component):
    """Checks every rule of :data:`RULES` on the sampled bus, every clock (domain ``sync``).

    Parameters:
        width: bus width, 32 or 64 (the 64-bit rules never fire on a 32-bit bus).
        masters: bits of ``bus.req``/``bus.gnt``.
        arbiter_visible: ``bus.gnt`` holds the GNT# of *every* master on the bus (the
            simulated system); the arbitration rules are evaluated only then. A board in a
            slot sees its own GNT# only and leaves this False.
        count_width: bits of each rule's saturating counter.

    Ports:
        bus (In, :class:`BusState`): the resolved bus of this clock, inside-level.
        rule_enable (In, n_rules): bit ``id`` enables rule ``id`` (reset: all enabled). A
            disabled rule neither pulses, nor flags, nor counts.
        clear (In, 1): clears flags, counters, ``any`` and the first-violation record. It
            takes precedence over violations in the same clock.
        violation (Out, n_rules): rules broken by this clock's bus sample (combinational
            from ``bus``; the clock the spy should trigger on).
        flags (Out, n_rules): sticky per-rule flags.
        any (Out, 1): sticky, some rule was broken since the last ``clear``.
        first_rule (Out, range(n_rules)): id of the first broken rule (the lowest id when
            several broke in that clock); valid while ``any``.
        first_cycle (Out, 32): value of ``cycle`` at the first violation; valid while ``any``.
        cycle (Out, 32): free-running clock counter (0 at the first clock after reset,
            wraps), the timebase of ``first_cycle``.
        count_index (In, bits_for(n_rules - 1)): which rule's counter to read.
        count (Out, count_width): that counter, registered (valid the clock after
            ``count_index``); reads 0 when ``count_index`` names no rule.
        count_index_error (Out, 1): ``count_index`` names no rule (the read is refused).
    """

    def __init__(self, width=32, masters=1, *, arbiter_visible=False, count_width=COUNT_WIDTH):
        if width not in (32, 64):
            raise ValueError(f"PCI bus width must be 32 or 64, not {width!r}")
        if masters < 1:
            raise ValueError(f"masters must be at least 1, not {masters!r}")
        if count_width < 1:
            raise ValueError(f"count_width must be at least 1, not {count_width!r}")
        self.width = width
        self.masters = masters
        self.arbiter_visible = arbiter_visible
        self.count_width = count_width
        n_rules = len(RULES)
        super().__init__({
            "bus":               In(BusState(width, masters)),
            "rule_enable":       In(n_rules, init=(1 << n_rules) - 1),
            "clear":             In(1),
            "violation":         Out(n_rules),
            "flags":             Out(n_rules),
            "any":               Out(1),
            "first_rule":        Out(range(n_rules)),
            "first_cycle":       Out(32),
            "cycle":             Out(32),
            "count_index":       In(bits_for(n_rules - 1)),
            "count":             Out(count_width),
            "count_index_error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        wide = self.width == 64
        bus = self.bus
        prev = Signal(BusState(self.width, self.masters))  # the bus one clock earlier
        m.d.sync += prev.eq(bus)

        # --- transaction tracking -------------------------------------------------------
        in_txn = Signal()       # a transaction started before this clock and has not ended
        dac_second = Signal()   # the previous clock was the first address phase of a DAC
        t_prev = Signal(6)      # clock number (address phase = 1) of the previous clock
        cmd = Signal(4)         # command of the transaction (of the last address phase)
        addr_lo = Signal(2)     # AD[1:0] of the first address phase
        claimed = Signal()      # DEVSEL# was asserted at an earlier clock of this transaction
        moved = Signal()        # a data word moved earlier in this transaction
        stopped = Signal()      # a data phase completed with STOP# earlier
        first_phase = Signal()  # no data phase has completed yet
        req64_txn = Signal()    # REQ64# was asserted with the address phase
        stop_hold = Signal()    # previous clock: a phase completed with STOP#, FRAME# still on
        pend_i = Signal()       # previous clock: IRDY# asserted, data phase not completed
        pend_t = Signal()       # previous clock: TRDY#/STOP# asserted, waiting for IRDY#
        tgt_resp = Signal()     # the target answered (TRDY#/STOP#) in this data phase
        tgt_wait = Signal(6)    # clocks of this data phase without an answer, so far
        ini_resp = Signal()     # IRDY# was asserted in this data phase
        ini_wait = Signal(6)    # clocks of this data phase without IRDY#, so far

        live = ~bus.rst & ~prev.rst  # rules other than the reset rule look at running buses

        addr_phase = ~in_txn & bus.frame           # first (or only) address phase
        addr2 = in_txn & dac_second                # second address phase of a DAC
        data_clk = in_txn & ~dac_second            # a clock of the data phases
        is_dac = bus.cbe == Command.DUAL_ADDRESS.value
        last_addr = (addr_phase & ~is_dac) | addr2

        t = Signal(6)           # clock number of this clock
        with m.If(last_addr):
            m.d.comb += t.eq(1)
        with m.Elif(addr_phase):
            m.d.comb += t.eq(0)
        with m.Else():
            m.d.comb += t.eq(_saturating_increment(t_prev))

        answered = bus.trdy | bus.stop
        complete = data_clk & bus.irdy & answered  # a data phase completes at this clock
        xfer = data_clk & bus.irdy & bus.trdy      # a data word moves at this clock
        final = complete & ~bus.frame
        released = in_txn & ~bus.frame & ~bus.irdy  # bus let go (master abort, or broken)
        ongoing = (addr_phase | in_txn) & ~final & ~released & ~bus.rst

        is_read = _is_one_of(cmd, _READ_COMMANDS)
        is_write = _is_one_of(cmd, _WRITE_COMMANDS)
        is_memory = _is_one_of(cmd, _MEMORY_COMMANDS)
        ack64 = bus.ack64 if wide else C(0)
        req64 = bus.req64 if wide else C(0)

        tgt_wait_now = Mux(data_clk & ~answered & ~tgt_resp,
                           _saturating_increment(tgt_wait), tgt_wait)
        ini_wait_now = Mux(data_clk & ~bus.irdy & ~ini_resp,
                           _saturating_increment(ini_wait), ini_wait)
        tgt_silent = data_clk & ~answered & ~tgt_resp & bus.devsel
        ini_silent = data_clk & ~bus.irdy & ~ini_resp

        new_phase = last_addr | addr_phase | complete
        m.d.sync += [
            in_txn.eq(ongoing),
            dac_second.eq(addr_phase & is_dac & ongoing),
            t_prev.eq(t),
            claimed.eq(ongoing & (claimed | (in_txn & bus.devsel))),
            moved.eq(ongoing & (moved | xfer)),
            stopped.eq(ongoing & (stopped | (complete & bus.stop))),
            first_phase.eq(ongoing & Mux(addr_phase, 1, first_phase & ~complete)),
            req64_txn.eq(ongoing & Mux(addr_phase, req64, req64_txn)),
            stop_hold.eq(ongoing & complete & bus.stop),
            pend_i.eq(ongoing & data_clk & bus.irdy & ~complete),
            pend_t.eq(ongoing & data_clk & answered & ~bus.irdy),
            tgt_resp.eq(~new_phase & (tgt_resp | (data_clk & answered))),
            tgt_wait.eq(Mux(new_phase, 0, tgt_wait_now)),
            ini_resp.eq(~new_phase & (ini_resp | (data_clk & bus.irdy))),
            ini_wait.eq(Mux(new_phase, 0, ini_wait_now)),
        ]
        with m.If(last_addr):
            m.d.sync += cmd.eq(bus.cbe)
        with m.If(addr_phase):
            m.d.sync += addr_lo.eq(bus.ad[:2])

        # --- parity pipeline: PAR covers the AD/C/BE# of the previous clock --------------
        chk_addr = Signal()
        chk_wdata = Signal()
        chk_rdata = Signal()
        chk_64 = Signal()
        xfer_d1 = Signal()
        xfer_d2 = Signal()
        par_bad_d1 = Signal()
        par_wrong = bus.par != (prev.ad.xor() ^ prev.cbe.xor())
        par64_wrong = (bus.par64 != (prev.ad_hi.xor() ^ prev.cbe_hi.xor())) if wide else C(0)
        par_bad = ((chk_wdata | chk_rdata) & par_wrong) | (chk_64 & par64_wrong)
        m.d.sync += [
            chk_addr.eq(addr_phase | addr2),
            chk_wdata.eq(xfer & is_write),
            chk_rdata.eq(xfer & is_read),
            chk_64.eq(xfer & ack64 & req64_txn),
            xfer_d1.eq(xfer),
            xfer_d2.eq(xfer_d1),
            par_bad_d1.eq(par_bad),
        ]

        # --- the rules ------------------------------------------------------------------
        ma_window = ~claimed & (t > _SUBTRACTIVE_CLOCK)  # a master abort may end the cycle
        dropped_devsel = prev.devsel & ~bus.devsel

        be = ~bus.cbe  # active-high byte enables
        io_be_ok_at = [be[0],
                       be[1] & ~be[0],
                       be[2] & ~be[0:2].any(),
                       be[3] & ~be[0:3].any()]
        io_be_ok = (be == 0) | Mux(addr_lo[1], Mux(addr_lo[0], io_be_ok_at[3], io_be_ok_at[2]),
                                   Mux(addr_lo[0], io_be_ok_at[1], io_be_ok_at[0]))
        both_64 = ack64 & prev.ack64 if wide else C(0)
        cbe_changed = (bus.cbe != prev.cbe) | (both_64 & (bus.cbe_hi != prev.cbe_hi)
                                               if wide else C(0))
        ad_changed = (bus.ad != prev.ad) | (both_64 & (bus.ad_hi != prev.ad_hi)
                                            if wide else C(0))
        mwi_off = (bus.cbe != 0) | ((ack64 & req64_txn & (bus.cbe_hi != 0)) if wide else C(0))

        if self.arbiter_visible:
            gnt_count = sum(bus.gnt[i] for i in range(self.masters))
            gnt_new = (bus.gnt & ~prev.gnt).any()
            gnt_gone = (prev.gnt & ~bus.gnt).any()
            frame_without_gnt = addr_phase & ~prev.gnt.any()
            multiple_gnt = gnt_count > 1
            gnt_switch_while_idle = ~bus.frame & ~bus.irdy & gnt_new & gnt_gone
        else:
            frame_without_gnt = multiple_gnt = gnt_switch_while_idle = C(0)

        if wide:
            req64_frame_mismatch = ~addr_phase & (bus.req64 != (in_txn & bus.frame & req64_txn))
            req64_non_memory = last_addr & bus.req64 & ~_is_one_of(bus.cbe, _MEMORY_COMMANDS)
            ack64_without_req64 = in_txn & bus.ack64 & bus.devsel & ~req64_txn
            ack64_devsel_mismatch = ((bus.ack64 & ~bus.devsel) |
                                     (bus.devsel & prev.devsel & (bus.ack64 != prev.ack64)))
        else:
            req64_frame_mismatch = req64_non_memory = C(0)
            ack64_without_req64 = ack64_devsel_mismatch = C(0)

        in_reset_asserted = Cat(bus.frame, bus.irdy, bus.trdy, bus.stop, bus.devsel,
                                bus.lock, bus.perr, bus.serr, ack64).any()

        conditions = {
            "frame_without_irdy":      prev.frame & ~bus.frame & ~bus.irdy,
            "irdy_without_frame":      bus.irdy & ~bus.frame & ~in_txn,
            "irdy_in_address_phase":   (addr_phase | addr2) & bus.irdy,
            "frame_reasserted":        data_clk & bus.frame & ~prev.frame,
            "frame_dropped_in_wait":   pend_i & prev.frame & ~bus.frame & bus.irdy & ~ma_window,
            "irdy_withdrawn":          pend_i & ~bus.irdy & claimed,
            "master_abort_early":      pend_i & ~bus.irdy & ~claimed & (t <= _SUBTRACTIVE_CLOCK),
            "devsel_while_idle":       bus.devsel & ~in_txn,
            "devsel_late":             data_clk & bus.devsel & ~claimed & (t > _SUBTRACTIVE_CLOCK),
            "devsel_dropped":          data_clk & dropped_devsel & ~bus.stop,
            "devsel_on_special_cycle": (data_clk & bus.devsel &
                                        (cmd == Command.SPECIAL_CYCLE.value)),
            "trdy_without_devsel":     bus.trdy & ~bus.devsel,
            "stop_without_claim":      bus.stop & ~bus.devsel & ~claimed,
            "stop_released_early":     stop_hold & ~bus.stop,
            "stop_withdrawn":          pend_t & prev.stop & ~bus.stop,
            "trdy_withdrawn":          pend_t & prev.trdy & ~bus.trdy,
            "target_response_changed": pend_t & ((bus.trdy & ~prev.trdy) |
                                                 (bus.stop & ~prev.stop) | dropped_devsel),
            "trdy_in_read_turnaround": data_clk & is_read & (t == 2) & bus.trdy,
            "data_after_stop":         xfer & stopped,
            "initiator_latency":       ini_silent & (ini_wait_now == _INITIATOR_LIMIT),
            "target_initial_latency":  (tgt_silent & first_phase &
                                        (tgt_wait_now == _TARGET_INITIAL_LIMIT)),
            "target_initial_latency_bridge": (tgt_silent & first_phase &
                                              (tgt_wait_now == _BRIDGE_INITIAL_LIMIT)),
            "target_subsequent_latency": (tgt_silent & ~first_phase &
                                          (tgt_wait_now == _SUBSEQUENT_LIMIT)),
            "reserved_command":        (addr_phase | addr2) & _is_one_of(bus.cbe,
                                                                         _RESERVED_COMMANDS),
            "dac_after_dac":           addr2 & is_dac,
            "config_reserved_type":    (addr_phase & _is_one_of(bus.cbe, _CONFIG_COMMANDS) &
                                        bus.ad[1]),
            "io_byte_enables_mismatch": (data_clk & first_phase & bus.irdy &
                                         _is_one_of(cmd, _IO_COMMANDS) & ~io_be_ok),
            "mwi_byte_enables":        (data_clk & bus.irdy & mwi_off &
                                        (cmd == Command.MEM_WRITE_INVALIDATE.value)),
            "reserved_burst_order_continued": xfer & moved & is_memory & addr_lo[0],
            "byte_enables_changed_in_wait": pend_i & bus.irdy & cbe_changed,
            "write_data_changed_in_wait": pend_i & bus.irdy & is_write & ad_changed,
            "read_data_changed_in_wait": pend_t & prev.trdy & bus.trdy & is_read & ad_changed,
            "address_parity":          chk_addr & par_wrong,
            "write_data_parity":       chk_wdata & par_wrong,
            "read_data_parity":        chk_rdata & par_wrong,
            "data_parity64":           chk_64 & par64_wrong,
            "perr_timing":             bus.perr & ~xfer_d2,
            "perr_without_parity_error": bus.perr & xfer_d2 & ~par_bad_d1,
            "frame_without_gnt":       frame_without_gnt,
            "multiple_gnt":            multiple_gnt,
            "gnt_switch_while_idle":   gnt_switch_while_idle,
            "req64_frame_mismatch":    req64_frame_mismatch,
            "req64_non_memory":        req64_non_memory,
            "ack64_without_req64":     ack64_without_req64,
            "ack64_devsel_mismatch":   ack64_devsel_mismatch,
        }
        reset_rule = "signals_during_reset"

        # The rule list is the single source: every rule needs a condition, and no
        # condition may exist without its rule.
        expected = {rule.name for rule in RULES} - {reset_rule}
        if set(conditions) != expected:
            missing = sorted(expected - set(conditions))
            extra = sorted(set(conditions) - expected)
            raise AssertionError(f"checker conditions out of step with RULES: "
                                 f"missing {missing}, unknown {extra}")

        for rule in RULES:
            if rule.name == reset_rule:
                broken = bus.rst & in_reset_asserted
            else:
                broken = live & conditions[rule.name]
            m.d.comb += self.violation[rule.id].eq(broken & self.rule_enable[rule.id])

        # --- flags, counters, first violation ------------------------------------------
        counts = [Signal(self.count_width, name=f"count_{rule.name}") for rule in RULES]
        first_now = Signal(range(len(RULES)))
        # The lowest id wins (rule ids are bit positions), in log2(rules) mux levels.
        m.d.comb += first_now.eq(bottom_bit(self.violation)[1])

        m.d.sync += self.cycle.eq(self.cycle + 1)
        with m.If(self.clear):
            m.d.sync += [self.flags.eq(0), self.any.eq(0), self.first_rule.eq(0),
                         self.first_cycle.eq(0)]
            m.d.sync += [count.eq(0) for count in counts]
        with m.Else():
            m.d.sync += self.flags.eq(self.flags | self.violation)
            with m.If(self.violation.any() & ~self.any):
                m.d.sync += [self.any.eq(1), self.first_rule.eq(first_now),
                             self.first_cycle.eq(self.cycle)]
            for rule, count in zip(RULES, counts):
                with m.If(self.violation[rule.id]):
                    m.d.sync += count.eq(_saturating_increment(count))

        m.d.comb += self.count_index_error.eq(self.count_index >= len(RULES))
        with m.Switch(self.count_index):
            for rule, count in zip(RULES, counts):
                with m.Case(rule.id):
                    m.d.sync += self.count.eq(count)
            with m.Default():
                m.d.sync += self.count.eq(0)

        return m
