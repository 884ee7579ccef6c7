# SPDX-License-Identifier: BSD-2-Clause
"""The PCI protocol checker: watches the resolved bus and flags every broken rule.

The checker is a passive, synthesizable monitor. It sees only line levels (a spy cannot tell
who drives a line; two drivers on one line are the simulated resolver's business), follows
each transaction clock by clock, and evaluates every rule of :data:`RULES` on every clock.
Per rule it keeps a sticky flag and a saturating counter; it remembers which rule broke
first and at which cycle, logs the first :data:`LOG_DEPTH` clocks with a violation (cycle,
every rule broken in that clock, the master of the transaction), and it pulses
:attr:`ProtocolChecker.violation` in the clock of the offending bus sample so that the spy
can trigger on it.

The rule list is data, declared in :mod:`pcispy.pci.rules`. :data:`RULES` holds
one :class:`Rule` per check (``id`` is the bit of the violation vector and the counter
index); the gateware builds one condition per rule name and refuses to elaborate if a rule
has no condition (or a condition no rule), and the host prints the same tuple (``pcispy
check --list-rules``).

Clock numbering used in the descriptions: the (last) address phase of a transaction is
clock 1, so fast DEVSEL# is clock 2, medium 3, slow 4 and subtractive 5. For a Dual Address
Cycle the numbering starts again at the second address phase. A latency of N clocks means
the response is sampled N clocks after its reference clock; a rule fires at the first clock
at which the limit is certainly exceeded.
"""

from types import SimpleNamespace

from amaranth.hdl import C, Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from pcispy.core.live import cells_for
from pcispy.core.logic import bottom_bit
from pcispy.pci.bus import BusState, Command
from pcispy.pci.rules import LATENCY_RULES, RULES, RULES_BY_NAME, Rule
from pcispy.check.registers import COUNT_WIDTH, LOG_DEPTH, NO_MASTER

__all__ = ["Rule", "RULES", "RULES_BY_NAME", "LATENCY_RULES", "COUNT_WIDTH", "LOG_DEPTH",
           "NO_MASTER", "NO_TARGET", "IDSEL_BITS", "ProtocolChecker"]


#: ``target``/``log_target`` when no agent is known to answer as the target.
NO_TARGET = 15
#: The AD lines that carry IDSEL in a type 0 configuration address phase (AD[31:11]; the
#: lower bits hold the function and register numbers).
IDSEL_BITS = range(11, 32)

# Limits in clocks (PCI LB 3.0 §3.5).
_TARGET_INITIAL_LIMIT = 16
_BRIDGE_INITIAL_LIMIT = 32
_SUBSEQUENT_LIMIT = 8
_INITIATOR_LIMIT = 8
_SUBTRACTIVE_CLOCK = 5   # the last clock at which DEVSEL# may first be sampled asserted
# Bus parking (§3.4.3): the parked agent drives AD and C/BE# within 8 clocks of the first
# idle clock with its GNT#, PAR one clock later; PAR covers the clock before, so from the
# 10th clock of the run on PAR must be right.
_PARKED_DRIVE_LIMIT = 8
_PARKED_CHECK_CLOCK = _PARKED_DRIVE_LIMIT + 2
# SERR# after an address parity error (§3.7.3, §3.7.4.2): PAR shows the error one clock
# after the address phase, a reporting device asserts SERR# in the clock after that (the
# spec's parity figure); the checker waits this many clocks after PAR before calling it
# unreported, since the text gives SERR# no clock of its own.
_SERR_WINDOW = 3
# The Command register (configuration DWORD 1): Parity Error Response and SERR# Enable.
_COMMAND_REGISTER = 1
_PARITY_RESPONSE_BIT = 6
_SERR_ENABLE_BIT = 8

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
            simulated system); the arbitration rules are evaluated only then, the log
            names masters only then, and ``busy_bus_start`` then also tells a fast
            back-to-back start by another master. A board in a slot sees its own GNT#
            only and leaves this False (``parked_bus_parity`` then checks the board's own
            parking).
        count_width: bits of each rule's saturating counter.
        shared_cycle: ``cycle`` is an input, the clock count of a system that several
            monitors share (the simulated system's), instead of the checker's own counter.

    Ports:
        bus (In, :class:`BusState`): the resolved bus of this clock, inside-level.
        rule_enable (In, n_rules): bit ``id`` enables rule ``id`` (reset: all enabled). A
            disabled rule neither pulses, nor flags, nor counts.
        clear (In, 1): clears flags, counters, ``any``, the first-violation record and the
            violation log. It takes precedence over violations in the same clock.
        violation (Out, n_rules): rules broken by this clock's bus sample (combinational
            from ``bus``; the clock the spy should trigger on).
        flags (Out, n_rules): sticky per-rule flags. The flags, ``any``, the first
            violation, the counters and the log take a violation in the clock after it.
        any (Out, 1): sticky, some rule was broken since the last ``clear``.
        first_rule (Out, range(n_rules)): id of the first broken rule (the lowest id when
            several broke in that clock); valid while ``any``.
        first_cycle (Out, 32): value of ``cycle`` at the first violation; valid while ``any``.
        cycle (Out, 32): free-running clock counter (0 at the first clock after reset,
            wraps), the timebase of ``first_cycle``; with ``shared_cycle`` an input (In, 32).
        count_index (In, bits_for(n_rules - 1)): which rule's counter to read.
        count (Out, count_width): that counter, registered (valid the clock after
            ``count_index``); reads 0 when ``count_index`` names no rule.
        count_index_error (Out, 1): ``count_index`` names no rule (the read is refused).
        log_index (In, range(LOG_DEPTH)): which violation-log entry to read.
        log_entries (Out, range(LOG_DEPTH + 1)): entries stored since the last ``clear``.
            One entry is stored per clock in which an enabled rule broke (in the clock after
            it), while fewer than :data:`LOG_DEPTH` are stored; later violations are only
            flagged and counted.
            ``clear`` empties the log (and wins over a violation in the same clock).
        log_cycle (Out, 32): ``cycle`` of entry ``log_index``.
        log_rules (Out, n_rules): the violation vector of that clock (every enabled rule
            broken in it).
        log_master (Out, 3): with ``arbiter_visible``, the index of the master whose GNT#
            alone was asserted in the clock before the address phase of the transaction
            in progress in that clock (the address phase's own clock included, and the
            clock after its final data phase, whose PAR the parity rules judge);
            :data:`NO_MASTER` when there was none, or no single GNT#, or without
            ``arbiter_visible``.
            The three are registered: valid the clock after ``log_index``, as of the end
            of the clock ``log_index`` was presented in (an entry stored in that clock
            included). An index at or beyond ``log_entries`` reads cycle 0, rules 0 and
            :data:`NO_MASTER`.
        claim (In, len(devices); with ``devices``): bit k is set in a clock in which
            device k asserts DEVSEL# (where the monitor can tell who drives it: the
            simulated system; 0 elsewhere).
        target (In, 4; with ``target_visible``): the index of the agent asserting
            DEVSEL#, TRDY# or STOP# in this clock, :data:`NO_TARGET` for none.
        log_target (Out, 4; with ``target_visible``): for entry ``log_index``, the agent
            that answered as the target in that clock, or else the last one that did in
            the transaction then in progress (or just ended, as for ``log_master``);
            :data:`NO_TARGET` when none did. Registered like ``log_master``.

    Error reporting (``perr_not_reported``, ``serr_not_reported``): a device must report
    parity errors as its Command register says (Parity Error Response, SERR# Enable), so
    the checker keeps, for every function of every device of ``devices``, those two bits
    as the configuration cycles it sees leave them: each completed first data phase of a
    type 0 configuration read or write of the Command register (DWORD 1) whose address
    phase asserted the device's IDSEL line alone among AD[31:11] sets them from the bytes
    that moved (a write is what the device took, a read what it holds; RST# clears them).
    ``serr_not_reported`` needs only that. The receiver of a data phase, whose Parity Error
    Response decides whether it must assert PERR#, is known to the checker as follows: the
    target of a configuration write is the function it addressed; the target of another
    write is the device ``claim`` shows asserting DEVSEL# (of a multi-function device,
    whose functions share DEVSEL#, Parity Error Response must be set in every function the
    checker saw configured); the master of a read is the device ``master_devices`` maps its
    GNT# to (needs ``arbiter_visible``). Without ``devices`` neither rule ever fires.

    More parameters:
        devices: the IDSEL lines of the devices whose Command registers the checker keeps,
            as AD bit numbers (11..31; device k is the one whose IDSEL is AD[devices[k]]).
        master_devices: ``{master index: device index}`` for masters that are devices of
            ``devices`` (the master of a read receives its data).
        target_visible: the system tells the checker which agent answers as the target
            (``target``); the log then keeps it too.
    """

    def __init__(self, width=32, masters=1, *, arbiter_visible=False, count_width=COUNT_WIDTH,
                 shared_cycle=False, devices=(), master_devices=None, target_visible=False):
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
        self.shared_cycle = shared_cycle
        self.devices = tuple(devices)
        self.master_devices = dict(master_devices or {})
        self.target_visible = target_visible
        if not set(self.devices) <= set(IDSEL_BITS) or len(set(self.devices)) != len(devices):
            raise ValueError(f"devices must be distinct IDSEL lines among AD[31:11], not "
                             f"{devices!r}")
        if not (set(self.master_devices) <= set(range(masters)) and
                set(self.master_devices.values()) <= set(range(len(self.devices)))):
            raise ValueError(f"master_devices must map masters to devices, not "
                             f"{master_devices!r}")
        n_rules = len(RULES)
        extra = {}
        if self.devices:
            extra["claim"] = In(len(self.devices))
        if target_visible:
            extra.update(target=In(4, init=NO_TARGET), log_target=Out(4, init=NO_TARGET))
        super().__init__({
            "bus":               In(BusState(width, masters)),
            "rule_enable":       In(n_rules, init=(1 << n_rules) - 1),
            "clear":             In(1),
            "violation":         Out(n_rules),
            "flags":             Out(n_rules),
            "any":               Out(1),
            "first_rule":        Out(range(n_rules)),
            "first_cycle":       Out(32),
            "cycle":             In(32) if shared_cycle else Out(32),
            "count_index":       In(bits_for(n_rules - 1)),
            "count":             Out(count_width),
            "count_index_error": Out(1),
            "log_index":         In(range(LOG_DEPTH)),
            "log_entries":       Out(range(LOG_DEPTH + 1)),
            "log_cycle":         Out(32),
            "log_rules":         Out(n_rules),
            "log_master":        Out(3, init=NO_MASTER),
            **extra,
        })

    def elaborate(self, platform):
        m = Module()
        prev = Signal(BusState(self.width, self.masters))  # the bus one clock earlier
        m.d.sync += prev.eq(self.bus)
        txn = self._track(m, prev)
        self._follow_owner(m, prev, txn)
        self._follow_target(m, txn)
        conditions = {
            **self._protocol_conditions(prev, txn),
            **self._parity_conditions(m, prev, txn),
            **self._reporting_conditions(m, prev, txn),
            **self._arbitration_conditions(prev, txn),
            **self._wide_conditions(prev, txn),
        }
        self._evaluate(m, prev, txn, conditions)
        # The clear zeroes every counter, flag and the log in one clock: hundreds of
        # set/reset inputs, so on an FPGA it travels on a global line.
        clear = cells_for(platform).global_buffer(m, self.clear, "clear_buffer")
        noted = self._note(m, txn, clear)
        self._flags_and_counts(m, noted, clear)
        self._violation_log(m, noted, clear)
        return m

    def _track(self, m, prev):
        """Follow the transaction clock by clock: which kind of clock this is (address
        phase, data phase), its number, and what happened earlier in the transaction."""
        wide = self.width == 64
        bus = self.bus
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
        prev_final = Signal()   # previous clock: the final data phase of a transaction
                                # completed (the one clock a fast back-to-back may follow)

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
        ack64 = bus.ack64 if wide else C(0)
        req64 = bus.req64 if wide else C(0)

        tgt_wait_now = Mux(data_clk & ~answered & ~tgt_resp,
                           _saturating_increment(tgt_wait), tgt_wait)
        ini_wait_now = Mux(data_clk & ~bus.irdy & ~ini_resp,
                           _saturating_increment(ini_wait), ini_wait)

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
        m.d.sync += prev_final.eq(final & ~bus.rst)
        with m.If(last_addr):
            m.d.sync += cmd.eq(bus.cbe)
        with m.If(addr_phase):
            m.d.sync += addr_lo.eq(bus.ad[:2])

        return SimpleNamespace(
            in_txn=in_txn, addr_phase=addr_phase, addr2=addr2, data_clk=data_clk,
            is_dac=is_dac, last_addr=last_addr, t=t, cmd=cmd, addr_lo=addr_lo,
            claimed=claimed, moved=moved, stopped=stopped, first_phase=first_phase,
            req64_txn=req64_txn, stop_hold=stop_hold, pend_i=pend_i, pend_t=pend_t,
            prev_final=prev_final, complete=complete, xfer=xfer, ack64=ack64, req64=req64,
            is_read=_is_one_of(cmd, _READ_COMMANDS), is_write=_is_one_of(cmd, _WRITE_COMMANDS),
            is_memory=_is_one_of(cmd, _MEMORY_COMMANDS),
            tgt_wait_now=tgt_wait_now, ini_wait_now=ini_wait_now,
            tgt_silent=data_clk & ~answered & ~tgt_resp & bus.devsel,
            ini_silent=data_clk & ~bus.irdy & ~ini_resp)

    def _follow_owner(self, m, prev, txn):
        """Who owns the transaction (only a checker that sees every GNT# can tell): sets
        ``txn.master_now`` (the log's master) and ``txn.other_granted`` (a master other
        than the one that started the last transaction holds GNT#)."""
        bus = self.bus
        if not self.arbiter_visible:
            txn.master_now, txn.other_granted = C(NO_MASTER, 3), C(0)
            return
        txn_gnt = Signal(self.masters)  # GNT# in the clock before the (last) transaction's
                                        # address phase: who started it, if one bit is set
        txn_master = Signal(3, init=NO_MASTER)  # the same as an index, for the log
        starter = _master_index(prev.gnt, self.masters)
        with m.If(bus.rst):
            m.d.sync += [txn_gnt.eq(0), txn_master.eq(NO_MASTER)]
        with m.Elif(txn.addr_phase):
            m.d.sync += [txn_gnt.eq(prev.gnt), txn_master.eq(starter)]
        txn.master_now = Mux(txn.addr_phase, starter,
                             Mux(txn.in_txn | txn.prev_final, txn_master, NO_MASTER))
        txn.other_granted = prev.gnt.any() & txn_gnt.any() & ~(prev.gnt & txn_gnt).any()

    def _follow_target(self, m, txn):
        """Who answers as the target (only a checker told so, ``target_visible``): sets
        ``txn.target_now``, the log's target: the agent answering in this clock, else the
        last one that answered in the transaction in progress."""
        if not self.target_visible:
            txn.target_now = C(NO_TARGET, 4)
            return
        answering = self.target != NO_TARGET
        last = Signal(4, init=NO_TARGET)  # the last agent that answered in this transaction
        with m.If(self.bus.rst | txn.addr_phase):
            m.d.sync += last.eq(Mux(answering, self.target, NO_TARGET))
        with m.Elif(answering):
            m.d.sync += last.eq(self.target)
        txn.target_now = Mux(answering, self.target,
                             Mux(txn.in_txn | txn.prev_final, last, NO_TARGET))

    def _protocol_conditions(self, prev, txn):
        """The conditions of the rules about the handshake lines, the commands, the byte
        enables, the data in wait states and starting on a busy bus, by rule name."""
        wide = self.width == 64
        bus = self.bus
        addr_phase, addr2, data_clk, t = txn.addr_phase, txn.addr2, txn.data_clk, txn.t
        claimed, pend_i, pend_t, cmd = txn.claimed, txn.pend_i, txn.pend_t, txn.cmd
        is_read, is_write = txn.is_read, txn.is_write
        ma_window = ~claimed & (t > _SUBTRACTIVE_CLOCK)  # a master abort may end the cycle
        dropped_devsel = prev.devsel & ~bus.devsel

        be = ~bus.cbe  # active-high byte enables
        io_be_ok_at = [be[0],
                       be[1] & ~be[0],
                       be[2] & ~be[0:2].any(),
                       be[3] & ~be[0:3].any()]
        addr_lo = txn.addr_lo
        io_be_ok = (be == 0) | Mux(addr_lo[1], Mux(addr_lo[0], io_be_ok_at[3], io_be_ok_at[2]),
                                   Mux(addr_lo[0], io_be_ok_at[1], io_be_ok_at[0]))
        both_64 = txn.ack64 & prev.ack64 if wide else C(0)
        cbe_changed = (bus.cbe != prev.cbe) | (both_64 & (bus.cbe_hi != prev.cbe_hi)
                                               if wide else C(0))
        ad_changed = (bus.ad != prev.ad) | (both_64 & (bus.ad_hi != prev.ad_hi)
                                            if wide else C(0))
        mwi_off = (bus.cbe != 0) | ((txn.ack64 & txn.req64_txn & (bus.cbe_hi != 0))
                                    if wide else C(0))

        # --- starting on a busy bus (§3.4.1, §3.4.2) ------------------------------------
        # A master starts only on an idle bus: FRAME# and IRDY# deasserted in the clock
        # before its address phase. The one exception is a fast back-to-back transaction,
        # whose address phase follows the completed final data phase of the same master's
        # transaction at once. The tracking ends a transaction only at that completion or
        # on an idle clock, so an address phase after a clock with FRAME# or IRDY# asserted
        # is always a start on a busy bus (after IRDY# asserted without a transaction, say)
        # unless that clock was the completion, and then it is wrong only when another
        # master holds GNT#. A FRAME# that rises while a final data phase waits (IRDY#
        # asserted) is, for the tracking, a clock of the same transaction and breaks
        # frame_reasserted; when another master holds GNT# it is that master starting on
        # the busy bus, and breaks this rule as well.
        busy_bus_start = ((addr_phase & (prev.frame | prev.irdy) &
                           ~(txn.prev_final & ~txn.other_granted)) |
                          (data_clk & bus.frame & ~prev.frame & txn.other_granted))

        return {
            "frame_without_irdy":      prev.frame & ~bus.frame & ~bus.irdy,
            "irdy_without_frame":      bus.irdy & ~bus.frame & ~txn.in_txn,
            "irdy_in_address_phase":   (addr_phase | addr2) & bus.irdy,
            "frame_reasserted":        data_clk & bus.frame & ~prev.frame,
            "frame_dropped_in_wait":   pend_i & prev.frame & ~bus.frame & bus.irdy & ~ma_window,
            "irdy_withdrawn":          pend_i & ~bus.irdy & claimed,
            "master_abort_early":      pend_i & ~bus.irdy & ~claimed & (t <= _SUBTRACTIVE_CLOCK),
            "devsel_while_idle":       bus.devsel & ~txn.in_txn,
            "devsel_late":             data_clk & bus.devsel & ~claimed & (t > _SUBTRACTIVE_CLOCK),
            "devsel_dropped":          data_clk & dropped_devsel & ~bus.stop,
            "devsel_on_special_cycle": (data_clk & bus.devsel &
                                        (cmd == Command.SPECIAL_CYCLE.value)),
            "trdy_without_devsel":     bus.trdy & ~bus.devsel,
            "stop_without_claim":      bus.stop & ~bus.devsel & ~claimed,
            "stop_released_early":     txn.stop_hold & ~bus.stop,
            "stop_withdrawn":          pend_t & prev.stop & ~bus.stop,
            "trdy_withdrawn":          pend_t & prev.trdy & ~bus.trdy,
            "target_response_changed": pend_t & ((bus.trdy & ~prev.trdy) |
                                                 (bus.stop & ~prev.stop) | dropped_devsel),
            "trdy_in_read_turnaround": data_clk & is_read & (t == 2) & bus.trdy,
            "data_after_stop":         txn.xfer & txn.stopped,
            "initiator_latency":       txn.ini_silent & (txn.ini_wait_now == _INITIATOR_LIMIT),
            "target_initial_latency":  (txn.tgt_silent & txn.first_phase &
                                        (txn.tgt_wait_now == _TARGET_INITIAL_LIMIT)),
            "target_initial_latency_bridge": (txn.tgt_silent & txn.first_phase &
                                              (txn.tgt_wait_now == _BRIDGE_INITIAL_LIMIT)),
            "target_subsequent_latency": (txn.tgt_silent & ~txn.first_phase &
                                          (txn.tgt_wait_now == _SUBSEQUENT_LIMIT)),
            "reserved_command":        (addr_phase | addr2) & _is_one_of(bus.cbe,
                                                                         _RESERVED_COMMANDS),
            "dac_after_dac":           addr2 & txn.is_dac,
            "config_reserved_type":    (addr_phase & _is_one_of(bus.cbe, _CONFIG_COMMANDS) &
                                        bus.ad[1]),
            "io_byte_enables_mismatch": (data_clk & txn.first_phase & bus.irdy &
                                         _is_one_of(cmd, _IO_COMMANDS) & ~io_be_ok),
            "mwi_byte_enables":        (data_clk & bus.irdy & mwi_off &
                                        (cmd == Command.MEM_WRITE_INVALIDATE.value)),
            "reserved_burst_order_continued": (txn.xfer & txn.moved & txn.is_memory &
                                               addr_lo[0]),
            "byte_enables_changed_in_wait": pend_i & bus.irdy & cbe_changed,
            "write_data_changed_in_wait": pend_i & bus.irdy & is_write & ad_changed,
            "read_data_changed_in_wait": pend_t & prev.trdy & bus.trdy & is_read & ad_changed,
            "busy_bus_start":          busy_bus_start,
            # the phase completed with STOP# last clock and FRAME# was on then: the
            # initiator must now signal the final data phase
            "frame_held_after_stop":   txn.stop_hold & bus.frame,
            # AD[31:0] of the second address phase carries the upper 32 address bits, on
            # either bus width (a 64-bit master repeats them on AD[63:32])
            "dac_below_4g":            addr2 & (bus.ad == 0),
        }

    def _parity_conditions(self, m, prev, txn):
        """The conditions of the parity rules (PAR, PAR64, PERR#, a parked bus's PAR), by
        rule name: PAR covers the AD and C/BE# of the previous clock."""
        wide = self.width == 64
        bus = self.bus
        chk_addr = Signal()
        chk_wdata = Signal()
        chk_rdata = Signal()
        chk_64 = Signal()
        par_wrong = bus.par != (prev.ad.xor() ^ prev.cbe.xor())
        par64_wrong = (bus.par64 != (prev.ad_hi.xor() ^ prev.cbe_hi.xor())) if wide else C(0)
        m.d.sync += [
            chk_addr.eq(txn.addr_phase | txn.addr2),
            chk_wdata.eq(txn.xfer & txn.is_write),
            chk_rdata.eq(txn.xfer & txn.is_read),
            chk_64.eq(txn.xfer & txn.ack64 & txn.req64_txn),
        ]

        # --- PERR# (§3.7.4.1) ------------------------------------------------------------
        # The receiver of data reports a parity error on PERR#. Data is valid on AD in a
        # data-phase clock in which its sender is ready: IRDY# on a write, TRDY# on a read
        # (whether or not the other side is ready; neither may withdraw it before the phase
        # completes). PAR covering it is on the bus the clock after, so the earliest clock
        # for PERR# is two after the data was valid. Clock by clock, for data valid at k:
        #   k      data valid (data_valid)
        #   k + 1  PAR covers it: whether it was wrong is known (data_bad)
        #   k + 2  PERR# may be asserted for it: perr_timing asks for valid data at k,
        #          perr_without_parity_error for wrong parity at k + 1.
        # A phase that completes at k (no wait states after its data was valid) is
        # reported at k + 2, one clock. A phase still open at k (data valid, not complete:
        # the other side waits) may be reported early, at any clock from k + 2, but PERR#
        # must then stay asserted until two clocks after the phase completes, at c:
        # PERR# at q - 1 for the data of q - 3, whose phase was still open at q - 3, means
        # PERR# at q is still owed (q - 3 < c, so q <= c + 2); perr_released_early fires
        # when it is not there. Each held clock q reports the data of q - 2, which is that
        # same phase's held data, so perr_timing and perr_without_parity_error stay quiet.
        data_valid = txn.data_clk & ((txn.is_write & bus.irdy) | (txn.is_read & bus.trdy))
        data_open = data_valid & ~txn.complete       # the phase goes on after this clock
        valid_d1 = Signal()     # data was valid one clock ago
        valid64_d1 = Signal()   # ... and was 64 bits (PAR64 covers the upper half)
        valid_d2 = Signal()     # data was valid two clocks ago
        data_bad_d1 = Signal()  # the data valid two clocks ago had wrong parity
        open_d1 = Signal()
        open_d2 = Signal()
        open_d3 = Signal()      # three clocks ago the data was valid and the phase open
        data_bad = valid_d1 & (par_wrong | (valid64_d1 & par64_wrong))
        m.d.sync += [
            valid_d1.eq(data_valid),
            valid64_d1.eq(data_valid & txn.ack64 & txn.req64_txn),
            valid_d2.eq(valid_d1),
            data_bad_d1.eq(data_bad),
            open_d1.eq(data_open),
            open_d2.eq(open_d1),
            open_d3.eq(open_d2),
        ]

        return {
            "address_parity":            chk_addr & par_wrong,
            "write_data_parity":         chk_wdata & par_wrong,
            "read_data_parity":          chk_rdata & par_wrong,
            "data_parity64":             chk_64 & par64_wrong,
            "perr_timing":               bus.perr & ~valid_d2,
            "perr_without_parity_error": bus.perr & valid_d2 & ~data_bad_d1,
            "perr_released_early":       prev.perr & ~bus.perr & open_d3,
            "parked_bus_parity":         self._parked_run_done(m, prev) & par_wrong,
        }

    def _reporting_conditions(self, m, prev, txn):
        """The conditions of the rules about reporting parity errors as the Command
        register asks (the class docstring says what the checker keeps and how it knows
        a data phase's receiver), by rule name."""
        names = ("perr_not_reported", "serr_not_reported")
        if not self.devices:
            return dict.fromkeys(names, C(0))
        wide = self.width == 64
        bus = self.bus
        n = len(self.devices)
        functions = range(8)

        # --- each function's Parity Error Response and SERR# Enable ----------------------
        per = [[Signal(name=f"per_{k}_{f}") for f in functions] for k in range(n)]
        serr_enable = [[Signal(name=f"serr_enable_{k}_{f}") for f in functions]
                       for k in range(n)]
        seen = [[Signal(name=f"command_seen_{k}_{f}") for f in functions] for k in range(n)]
        config_txn = Signal()   # the transaction in progress is a configuration cycle
        config_dev = Signal(n)  # ... of type 0, to device k alone (one-hot; 0: none of ours)
        config_fn = Signal(3)   # ... to this function
        config_cmd = Signal()   # ... of the Command register
        addr_chk = Signal()     # the previous clock was an address phase: PAR covers it
        addr_bad = Signal()     # an address phase of this transaction had wrong parity
        idsel = bus.ad[IDSEL_BITS.start:IDSEL_BITS.stop]
        is_config = _is_one_of(bus.cbe, _CONFIG_COMMANDS)
        with m.If(txn.addr_phase):
            m.d.sync += [
                config_txn.eq(is_config),
                config_dev.eq(Cat(is_config & (bus.ad[:2] == 0) &
                                  (idsel == 1 << (bit - IDSEL_BITS.start))
                                  for bit in self.devices)),
                config_fn.eq(bus.ad[8:11]),
                config_cmd.eq(bus.ad[2:8] == _COMMAND_REGISTER),
            ]
        par_wrong = bus.par != (prev.ad.xor() ^ prev.cbe.xor())
        addr_error = addr_chk & par_wrong
        m.d.sync += addr_chk.eq(txn.addr_phase | txn.addr2)
        with m.If(txn.addr_phase):
            m.d.sync += addr_bad.eq(0)
        with m.Elif(addr_error):
            m.d.sync += addr_bad.eq(1)
        # A corrupted address may have reached another device than it names: nothing of
        # such a transaction is taken as configuration, nor owed a PERR#.
        trusted = ~(addr_bad | addr_error)
        update = txn.xfer & txn.first_phase & config_txn & config_cmd & trusted
        for k in range(n):
            for f in functions:
                with m.If(bus.rst):
                    m.d.sync += [per[k][f].eq(0), serr_enable[k][f].eq(0), seen[k][f].eq(0)]
                with m.Elif(update & config_dev[k] & (config_fn == f)):
                    m.d.sync += seen[k][f].eq(1)
                    with m.If(~bus.cbe[_PARITY_RESPONSE_BIT // 8]):
                        m.d.sync += per[k][f].eq(bus.ad[_PARITY_RESPONSE_BIT])
                    with m.If(~bus.cbe[_SERR_ENABLE_BIT // 8]):
                        m.d.sync += serr_enable[k][f].eq(bus.ad[_SERR_ENABLE_BIT])

        # --- PERR#: the receiver of a data phase with a parity error --------------------
        # A device's functions share DEVSEL#: a claim obliges when every function seen
        # configured has Parity Error Response set.
        device_per = Cat(Cat(*seen[k]).any() &
                         Cat(p | ~v for p, v in zip(per[k], seen[k])).all()
                         for k in range(n))
        function_per = Cat((config_dev[k] & Cat(*per[k]).bit_select(config_fn, 1))
                           for k in range(n)).any()
        target_per = Mux(config_txn, function_per, (self.claim & device_per).any())
        master_per = Cat((txn.master_now == master) & device_per[device]
                         for master, device in self.master_devices.items()).any() \
            if self.master_devices else C(0)
        receiver_per = Mux(txn.is_write, target_per, Mux(txn.is_read, master_per, 0))
        owed = txn.xfer & receiver_per & trusted   # data moved now; its PAR is next clock
        owed_d1 = Signal()
        owed64_d1 = Signal()
        bad_d2 = Signal()       # two clocks ago data moved that a receiver must report
        par64_wrong = (bus.par64 != (prev.ad_hi.xor() ^ prev.cbe_hi.xor())) if wide else C(0)
        m.d.sync += [
            owed_d1.eq(owed),
            owed64_d1.eq(owed & txn.ack64 & txn.req64_txn),
            bad_d2.eq(owed_d1 & (par_wrong | (owed64_d1 & par64_wrong))),
        ]

        # --- SERR#: an address parity error any device with both bits set must report ---
        # serr_wait counts the clocks since PAR showed the error (1: the first clock SERR#
        # may report it in), 0 when nothing is owed.
        serr_required = Cat(p & e for k in range(n)
                            for p, e in zip(per[k], serr_enable[k])).any()
        serr_wait = Signal(range(_SERR_WINDOW + 1))
        with m.If(bus.rst):
            m.d.sync += serr_wait.eq(0)
        with m.Elif(addr_error & serr_required):
            m.d.sync += serr_wait.eq(1)
        with m.Elif(serr_wait != 0):
            m.d.sync += serr_wait.eq(Mux(bus.serr | (serr_wait == _SERR_WINDOW), 0,
                                         serr_wait + 1))

        return {
            "perr_not_reported": bad_d2 & ~bus.perr,
            "serr_not_reported": (serr_wait == _SERR_WINDOW) & ~bus.serr,
        }

    def _parked_run_done(self, m, prev):
        """Bus parking (§3.4.3): 1 from the clock on which a parked bus's PAR must be right
        (the :data:`_PARKED_CHECK_CLOCK`-th idle clock with one unchanged GNT#). A floating
        bus reads all ones on AD and C/BE# (36 ones: parity 0) and 1 on PAR."""
        bus = self.bus
        # park_run: the clock number of the previous clock in a run of idle clocks with one
        # unchanged GNT# asserted (0: not in such a run), saturating at the checking clock.
        park_run = Signal(range(_PARKED_CHECK_CLOCK + 1))
        granted_idle = ~bus.frame & ~bus.irdy & bus.gnt.any() & ~bus.rst
        park_goes_on = granted_idle & (park_run != 0) & (bus.gnt == prev.gnt)
        park_run_now = Mux(park_goes_on,
                           Mux(park_run == _PARKED_CHECK_CLOCK, park_run, park_run + 1),
                           granted_idle)
        m.d.sync += park_run.eq(park_run_now)
        return park_run_now == _PARKED_CHECK_CLOCK

    def _arbitration_conditions(self, prev, txn):
        """The conditions of the arbitration rules, by rule name: evaluated only by a
        checker that sees every master's GNT# (else never broken)."""
        bus = self.bus
        if not self.arbiter_visible:
            return dict.fromkeys(("frame_without_gnt", "multiple_gnt",
                                  "gnt_switch_while_idle"), C(0))
        gnt_count = sum(bus.gnt[i] for i in range(self.masters))
        gnt_new = (bus.gnt & ~prev.gnt).any()
        gnt_gone = (prev.gnt & ~bus.gnt).any()
        return {
            "frame_without_gnt":     txn.addr_phase & ~prev.gnt.any(),
            "multiple_gnt":          gnt_count > 1,
            "gnt_switch_while_idle": ~bus.frame & ~bus.irdy & gnt_new & gnt_gone,
        }

    def _wide_conditions(self, prev, txn):
        """The conditions of the 64-bit extension's rules (REQ64#, ACK64#), by rule name:
        never broken on a 32-bit bus."""
        bus = self.bus
        if self.width != 64:
            return dict.fromkeys(("req64_frame_mismatch", "req64_non_memory",
                                  "ack64_without_req64", "ack64_devsel_mismatch"), C(0))
        return {
            "req64_frame_mismatch":  ~txn.addr_phase & (bus.req64 != (txn.in_txn & bus.frame &
                                                                      txn.req64_txn)),
            "req64_non_memory":      (txn.last_addr & bus.req64 &
                                      ~_is_one_of(bus.cbe, _MEMORY_COMMANDS)),
            "ack64_without_req64":   txn.in_txn & bus.ack64 & bus.devsel & ~txn.req64_txn,
            "ack64_devsel_mismatch": ((bus.ack64 & ~bus.devsel) |
                                      (bus.devsel & prev.devsel & (bus.ack64 != prev.ack64))),
        }

    def _evaluate(self, m, prev, txn, conditions):
        """Drive ``violation``: each enabled rule whose condition holds on a running bus
        (the reset rule: a line asserted during reset)."""
        bus = self.bus
        live = ~bus.rst & ~prev.rst  # rules other than the reset rule look at running buses
        in_reset_asserted = Cat(bus.frame, bus.irdy, bus.trdy, bus.stop, bus.devsel,
                                bus.lock, bus.perr, bus.serr, txn.ack64).any()
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

    def _note(self, m, txn, clear):
        """What the flags, the counters and the log keep of a clock with a violation, in
        registers, for the clock after it: the rules broken (none in a clear's clock), the
        cycle, ``txn.master_now`` and ``txn.target_now``. The rules of the bus sample and
        their OR, with the fanout to every flag, counter and log cell, are too long a path
        for one clock of a 66 MHz bus; ``violation`` itself stays in the sample's clock."""
        fields = {"cycle": 32, "rules": len(RULES), "master": 3}
        if self.target_visible:
            fields["target"] = 4
        noted = Signal(data.StructLayout(fields))
        m.d.sync += [noted.rules.eq(Mux(clear, 0, self.violation)),
                     noted.cycle.eq(self.cycle), noted.master.eq(txn.master_now)]
        if self.target_visible:
            m.d.sync += noted.target.eq(txn.target_now)
        return noted

    def _flags_and_counts(self, m, noted, clear):
        """The sticky flags, ``any``, the first violation and the per-rule saturating
        counters (read one at a time through ``count_index``) of the ``noted`` violations;
        ``clear`` zeroes them."""
        counts = [Signal(self.count_width, name=f"count_{rule.name}") for rule in RULES]
        first_now = Signal(range(len(RULES)))
        # The lowest id wins (rule ids are bit positions), in log2(rules) mux levels.
        m.d.comb += first_now.eq(bottom_bit(noted.rules)[1])

        if not self.shared_cycle:
            m.d.sync += self.cycle.eq(self.cycle + 1)
        with m.If(clear):
            m.d.sync += [self.flags.eq(0), self.any.eq(0), self.first_rule.eq(0),
                         self.first_cycle.eq(0)]
            m.d.sync += [count.eq(0) for count in counts]
        with m.Else():
            m.d.sync += self.flags.eq(self.flags | noted.rules)
            with m.If(noted.rules.any() & ~self.any):
                m.d.sync += [self.any.eq(1), self.first_rule.eq(first_now),
                             self.first_cycle.eq(noted.cycle)]
            for rule, count in zip(RULES, counts):
                with m.If(noted.rules[rule.id]):
                    m.d.sync += count.eq(_saturating_increment(count))

        m.d.comb += self.count_index_error.eq(self.count_index >= len(RULES))
        with m.Switch(self.count_index):
            for rule, count in zip(RULES, counts):
                with m.Case(rule.id):
                    m.d.sync += self.count.eq(count)
            with m.Default():
                m.d.sync += self.count.eq(0)

    def _violation_log(self, m, noted, clear):
        """The violation log: the first :data:`LOG_DEPTH` clocks with a violation (the
        ``noted`` cycle, rules, master and target), read through ``log_index``; ``clear``
        empties it."""
        m.submodules.log = log = Memory(shape=noted.shape(), depth=LOG_DEPTH, init=[])
        log_w = log.write_port()
        # Transparent: an entry written in the clock its index is presented reads new.
        log_r = log.read_port(transparent_for=(log_w,))
        entries = Signal(range(LOG_DEPTH + 1))
        entries_next = Signal.like(entries)
        log_valid = Signal()    # log_r holds an entry stored since the last clear
        m.d.comb += [
            log_w.addr.eq(entries),
            log_w.data.eq(noted),
            # clear wins: an entry written in its clock lies beyond the emptied log
            log_w.en.eq(noted.rules.any() & (entries < LOG_DEPTH)),
            entries_next.eq(Mux(clear, 0, Mux(log_w.en, entries + 1, entries))),
            log_r.addr.eq(self.log_index),
            self.log_entries.eq(entries),
            self.log_cycle.eq(Mux(log_valid, log_r.data.cycle, 0)),
            self.log_rules.eq(Mux(log_valid, log_r.data.rules, 0)),
            self.log_master.eq(Mux(log_valid, log_r.data.master, NO_MASTER)),
        ]
        if self.target_visible:
            m.d.comb += self.log_target.eq(Mux(log_valid, log_r.data.target, NO_TARGET))
        m.d.sync += [entries.eq(entries_next),
                     log_valid.eq(~clear & Mux(log_w.en, self.log_index <= entries,
                                               self.log_index < entries))]


def _master_index(gnt, masters):
    """The index of the one asserted bit of ``gnt`` (3 bits); :data:`NO_MASTER` when none
    or several are asserted, or when the index would not fit below it."""
    index = C(NO_MASTER, 3)
    for i in range(min(masters, NO_MASTER)):
        index = Mux(gnt == (1 << i), i, index)
    return index
