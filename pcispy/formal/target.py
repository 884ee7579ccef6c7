# SPDX-License-Identifier: BSD-2-Clause
"""Formal harness of the PCI target: the real pads, target, exerciser response and its
registers, facing a legal initiator.

The board's target (:class:`~pcispy.core.target.PCITarget`, with the board's own
windows: BAR0 plain registers, BAR1 the read-only trace window, BAR2 the exerciser memory
window, BAR3 the exerciser I/O window) sits behind the real :class:`~pcispy.core.pads.PCIPads`, so
the assertions are about the pins. The :class:`~pcispy.exerciser.response.
ExerciserResponse` and its register block (:class:`~pcispy.csr.bank.CSRBank` holding
only the ``target`` block) sit behind it as on the board; any register write may arrive
while the bus and the target are idle (the host programs the response between
transactions). BAR1's backend takes requests at will and answers each read
:data:`BAR1_LATENCY` clocks later (the target must retry or disconnect in time when it
stalls); the others answer like the board's configuration space, register
bank and scratch RAM (always ready, read data one clock later).

The initiator on the other side is free except for the rules of the PCI Local Bus
Specification 3.0 (stated as ``Assume``): FRAME# starts only from an idle bus, is deasserted only with IRDY#
and stays deasserted; IRDY# is asserted only after the address phase and then held, and
FRAME# with it, until its data phase completes (TRDY#), the target stops it (STOP#) or the
master aborts (no DEVSEL# by clock 5); IRDY# is deasserted after the last phase; FRAME# is
deasserted as soon as STOP# is seen. AD, C/BE#, PAR, IDSEL are arbitrary. No other target
answers (a transaction nobody claims ends in master abort).

The lemmas (``lemma_*``, proved with the properties, not counted as PCI rules) relate the
target's registers (read through :func:`~pcispy.formal.harness.internal_signals`:
the target itself is untouched), its backends' answers due and the response's registers
to what the harness recorded on the pins, so that k-induction starts only from states the
board reaches.
"""

from types import SimpleNamespace

from amaranth import Cat, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from pcispy.csr.bank import CSRBank
from pcispy.exerciser.response import ExerciserResponse
from pcispy.pci.bus import ACTIVE_LOW, DevselSpeed, bus_lines
from pcispy.core.pads import PCIPads, simulation_ports
from pcispy.core.target import READ_FIFO_DEPTH, WRITE_FIFO_DEPTH, PCITarget
from pcispy.board.registers import BAR0_SIZE
from pcispy.csr.map import RegisterMap
from pcispy.exerciser.registers import (TARGET, TARGET_MAX_INITIAL_LATENCY,
                                        TARGET_MAX_SUBSEQUENT_LATENCY, decode_resets)
from pcispy.board.top import PCIBoard, connect_response
from pcispy.formal.harness import Harness, elaborate, internal_signals

__all__ = ["TargetHarness", "SlowDecodeTargetHarness", "target_windows"]

#: BAR2 size in the harness (bytes): small, so the address arithmetic stays small.
EXERCISER_SIZE = 64
#: The initiator's master abort: no DEVSEL# sampled by clock 5 (clocks since the address
#: phase = 4), FRAME# may be deasserted from the next clock on.
_DEVSEL_LAST = 4
#: Where the BARs are programmed (fixed: the decode compares the same way for any base).
BAR_BASES = {0: 0x0001_0000, 1: 0x0003_0000, 2: 0x0002_0000, 3: 0x0000_0100}
#: Read latency of the BAR1 backend (the spy's trace memory), clocks after the request.
BAR1_LATENCY = 5
# Width of the harness's clock counters (saturating); above every limit checked.
_COUNT_MAX = 31


def target_windows():
    """The board's windows (pcispy/board/top.py), with a small exerciser window and a small
    BAR1 (the read-only window whose backend, the spy's trace memory, may stall)."""
    board = PCIBoard(32, exerciser_size=EXERCISER_SIZE, spy_addr_bits=1)
    board._MustUse__silence = True    # only its window list is wanted
    return board.windows


class TargetHarness(Harness):
    """The board's target between a legal initiator and its backends (32-bit bus).

    Ports (all free; the assumptions restrict the initiator's):
        i_frame, i_irdy (In, 1): the initiator asserts FRAME#, IRDY# (inside level).
        i_ad (In, 32), i_cbe (In, 4), i_par, i_idsel, i_perr, i_serr (In): what the
            other agents put on these lines when the board does not drive them.
        bar1_ready (In, 1), cfg_rdata, bar0_rdata, bar1_rdata, bar2_rdata, bar3_rdata
            (In, 32): backend behaviour (BAR1 stalls requests at will).
        enables (In, 4): Command bits I/O, memory, parity response, SERR# (stable).
        reg_we (In, 1), reg_addr (In), reg_wdata (In, 32): a register write to the
            ``target`` block, taken while bus and target are idle.

    Parameters: see :class:`~pcispy.formal.harness.Harness`. Mutation
    ``stop_pulse`` lets STOP# reach the pads for one clock only.
    """
    MUTATIONS = ("stop_pulse",)
    #: The target's decode speed (the board's default: medium).
    DECODE = DevselSpeed.MEDIUM

    def __init__(self, **kwargs):
        super().__init__({
            "i_frame": In(1), "i_irdy": In(1), "i_ad": In(32), "i_cbe": In(4),
            "i_par": In(1), "i_idsel": In(1), "i_perr": In(1), "i_serr": In(1),
            "cfg_rdata": In(32), "bar0_rdata": In(32),
            "bar1_ready": In(1), "bar1_rdata": In(32),
            "bar2_rdata": In(32), "bar3_rdata": In(32),
            "enables": In(4),
            "reg_we": In(1), "reg_addr": In(BAR0_SIZE.bit_length() - 3), "reg_wdata": In(32),
        }, **kwargs)

    @staticmethod
    def _slow_backend(m, port, ready, rdata):
        """A backend that stalls requests at will and answers each read
        :data:`BAR1_LATENCY` clocks after taking it."""
        answers = Signal(BAR1_LATENCY)
        taken = port.valid & ready & ~port.write
        m.d.pci += answers.eq(Cat(taken, answers[:-1]))
        m.d.comb += [port.ready.eq(ready), port.r_valid.eq(answers[-1]), port.r_data.eq(rdata)]
        return answers

    @staticmethod
    def _ram_backend(m, port, rdata):
        """Like the scratch RAM: always ready, read data one clock after the request."""
        m.d.comb += [port.ready.eq(1), port.r_data.eq(rdata)]
        m.d.pci += port.r_valid.eq(port.valid & ~port.write)

    def elaborate(self, platform):
        m = self._module()
        ports = simulation_ports(32)
        m.submodules.pads = pads = PCIPads(32, ports)
        target = PCITarget(32, target_windows(), decode=self.DECODE)
        # Elaborated here, so that the lemmas can name the target's registers.
        m.submodules.target = self.target_fragment = elaborate(target, platform)
        registers = RegisterMap([TARGET], BAR0_SIZE).with_resets(decode_resets(self.DECODE))
        m.submodules.bank = bank = CSRBank(registers)
        m.submodules.response = response = ExerciserResponse(decode=self.DECODE)

        # --- the board, wired as in pcispy/board/top.py -----------------------------------
        for name in bus_lines(32):
            core, pad = getattr(target.bus, name), getattr(pads.bus, name)
            m.d.comb += [pad.o.eq(core.o), pad.oe.eq(core.oe), core.i.eq(pad.i)]
        if self.mutation == "stop_pulse":
            stop_was = self.past(target.bus.stop.o)
            m.d.comb += pads.bus.stop.o.eq(target.bus.stop.o & ~stop_was)
        wiring.connect(m, pads.live, target.live)
        m.d.comb += [target.par_error.eq(pads.par_error),
                     pads.corrupt_par.eq(target.corrupt_par)]
        connect_response(m, target, response, bank.target)
        self._ram_backend(m, target.config, self.cfg_rdata)
        self._ram_backend(m, target.bar0, self.bar0_rdata)
        bar1_answers = self._slow_backend(m, target.bar1, self.bar1_ready, self.bar1_rdata)
        self._ram_backend(m, target.bar2, self.bar2_rdata)
        self._ram_backend(m, target.bar3, self.bar3_rdata)
        for i, base in BAR_BASES.items():
            m.d.comb += target.bar_base[i].eq(base)
        enables = self.stable(self.enables)
        m.d.comb += [target.io_enable.eq(enables[0]), target.memory_enable.eq(enables[1]),
                     target.parity_response.eq(enables[2]), target.serr_enable.eq(enables[3])]

        # --- the pins: the board's drive, else the other agents', else the pull-ups -------
        other = {name: Signal(bits, name=f"other_{name}", init=(1 << bits) - 1)
                 for name, bits in bus_lines(32).items()}
        m.d.comb += [other["frame"].eq(~self.i_frame), other["irdy"].eq(~self.i_irdy),
                     other["ad"].eq(self.i_ad), other["cbe"].eq(self.i_cbe),
                     other["par"].eq(self.i_par), other["idsel"].eq(self.i_idsel),
                     other["perr"].eq(self.i_perr), other["serr"].eq(self.i_serr)]
        pin, our_oe = {}, {}
        for name, bits in bus_lines(32).items():
            port = ports[name]
            m.d.comb += port.i.eq(other[name])
            our_oe[name] = port.oe[0]
            resolved = Signal(bits, name=f"pin_{name}")
            m.d.comb += resolved.eq(Mux(port.oe[0], port.o, other[name]))
            # Inside level for the active-low lines: 1 = asserted.
            pin[name] = ~resolved if name in ACTIVE_LOW else resolved
        frame, irdy, trdy, stop, devsel = (pin[n] for n in
                                           ("frame", "irdy", "trdy", "stop", "devsel"))

        # --- monitors ---------------------------------------------------------------------
        pf, pi, pt, ps, pd = (self.past(v) for v in (frame, irdy, trdy, stop, devsel))
        addr_phase = Signal()
        m.d.comb += addr_phase.eq(frame & ~pf & ~pi)
        in_txn = Signal()
        m.d.pci += in_txn.eq(addr_phase | (in_txn & (frame | irdy)))
        data_clk = Signal()
        m.d.comb += data_clk.eq(in_txn & ~addr_phase & (frame | irdy))
        since_q = Signal(range(_COUNT_MAX + 1))
        since = Mux(addr_phase, 0, since_q)
        m.d.pci += since_q.eq(Mux(since == _COUNT_MAX, _COUNT_MAX, since + 1))
        write_q = Signal()
        m.d.pci += write_q.eq(Mux(addr_phase, pin["cbe"][0], write_q))
        read_txn = data_clk & ~write_q
        claimed_q = Signal()          # DEVSEL# asserted earlier in this transaction
        responded_q = Signal()        # TRDY# or STOP# asserted earlier
        moved_q = Signal()            # a data phase completed earlier
        xfer = data_clk & irdy & trdy
        m.d.pci += [claimed_q.eq(~addr_phase & (claimed_q | devsel)),
                    responded_q.eq(~addr_phase & (responded_q | trdy | stop)),
                    moved_q.eq(~addr_phase & (moved_q | xfer))]
        since_data_q = Signal(range(_COUNT_MAX + 1))
        since_data = Mux(addr_phase, 0, since_data_q)
        m.d.pci += since_data_q.eq(Mux(xfer, 0, Mux(since_data == _COUNT_MAX, _COUNT_MAX,
                                                       since_data + 1)))
        phases_q = Signal(9)
        m.d.pci += phases_q.eq(Mux(addr_phase, 0, phases_q + xfer))
        # Transactions to the exerciser windows, and whether the response then in force
        # allows breaking the latency rules; whether this one is retried by the knob.
        exer_q = Signal()
        retry_q = Signal()
        m.d.pci += [exer_q.eq(Mux(addr_phase, 0, exer_q | target.attempt)),
                    retry_q.eq(Mux(addr_phase, 0, retry_q | (target.attempt & response.retry)))]
        allow = bank.target.response.allow_noncompliant
        compliant = ~exer_q | ~allow
        ma_ok = ~claimed_q & ~devsel & (since >= _DEVSEL_LAST)

        # --- a legal initiator --------------------------------------------------------------
        i_frame, i_irdy = self.i_frame, self.i_irdy
        ended = irdy & (trdy | stop)
        p_ended, p_ma_ok = self.past(ended), self.past(ma_ok)
        self.assume(~(i_frame & ~pf) | ~pi)                 # a new FRAME# only from idle
        self.assume(~(i_frame & ~pf) | ~i_irdy)             # no IRDY# in the address phase
        self.assume(~(pf & ~i_frame) | i_irdy)              # FRAME# drops only with IRDY#
        self.assume(~(i_irdy & ~pi) | pf)                   # IRDY# only after an address
        # IRDY# (and FRAME#) held until the phase completes, is stopped, or master abort.
        self.assume(~(pi & ~p_ended & ~p_ma_ok) | (i_irdy & (i_frame == pf)))
        self.assume(~(pi & ~pf & (p_ended | p_ma_ok)) | ~i_irdy)   # last phase done
        self.assume(~(ps & pf) | (~i_frame & i_irdy))       # FRAME# off as STOP# is seen
        # Register writes while the bus and the target are idle, at most one every other
        # clock (a BAR0 write is a transaction of its own); the bank applies one a clock
        # after taking it, and no transaction starts in that clock.
        reg_write_q = Signal()
        write = self.reg_we & ~frame & ~irdy & ~pf & ~pi & ~target.busy & ~reg_write_q
        m.d.pci += reg_write_q.eq(write)
        self.assume(~reg_write_q | ~self.i_frame)
        # Finding (reported): the response accepts clearing allow_noncompliant while a
        # wait-state setting only it allows is in force, and the target then keeps that
        # setting. The latency proofs take the host's side of the bargain as given: it
        # restores compliant waits before clearing the bit.
        response_port = bank.target.response
        self.assume(~(response_port.w_stb & ~response_port.w_data[31] &
                      (bank.target.wait.clocks + 1 > TARGET_MAX_SUBSEQUENT_LATENCY)))
        m.d.comb += [bank.access.valid.eq(write), bank.access.write.eq(1),
                     bank.access.addr.eq(self.reg_addr), bank.access.w_data.eq(self.reg_wdata),
                     bank.access.w_be.eq(0xF)]

        # --- the rules the target keeps -------------------------------------------------------
        for name in ("devsel", "trdy", "stop", "perr"):
            port = ports[name]
            was_oe, was_o = self.past(port.oe[0]), self.past(port.o[0])
            # s/t/s: the line is driven high (deasserted) in the clock before release.
            self.check("stst_release", ~(was_oe & ~port.oe[0]) | was_o)
        ad_oe = our_oe["ad"]
        ini_ad = addr_phase | (data_clk & write_q)
        self.check("one_driver", ~(ad_oe & (ini_ad | self.past(ini_ad))))
        self.check("one_driver", ~ad_oe | read_txn)
        for name in ("frame", "irdy", "cbe", "idsel", "lock", "req", "gnt", "rst"):
            self.check("one_driver", ~our_oe[name])
        # Turnaround: a clock after an idle bus may be another master's address phase
        # (its AD, PAR a clock later, and a fast target's DEVSEL# after that): the target
        # drives none of its lines then. It drove DEVSEL#, TRDY# and STOP# deasserted in
        # the idle clock after its last data phase and released AD in it.
        idle_before = ~pf & ~pi
        for name in ("devsel", "trdy", "stop", "ad", "par"):
            self.check("turnaround", ~(idle_before & our_oe[name]))
        self.check("response_in_transaction", ~(devsel | trdy | stop) | data_clk)
        # The target writes its enable from the branch conditions of its decision (for
        # timing); it must equal "one of DEVSEL#, TRDY#, STOP# asserted".
        core = target.bus
        for name in ("devsel", "trdy", "stop"):
            self.check("enable_is_asserting", getattr(core, name).oe
                       == (core.devsel.o | core.trdy.o | core.stop.o))
        self.check_released_zero(core)
        self.check("devsel_window", ~(devsel & ~claimed_q) |
                   ((since >= 2) & (since <= _DEVSEL_LAST)))
        self.check("trdy_stop_need_devsel", ~trdy | devsel)
        self.check("trdy_stop_need_devsel", ~(stop & ~devsel) | claimed_q)
        self.check("trdy_held", ~(pt & ~pi) | (trdy & (stop == ps) & (devsel == pd)))
        self.check("trdy_held", ~(pt & ~pi & read_txn) | (pin["ad"] == self.past(pin["ad"])))
        self.check("stop_held", ~(ps & pf) | (stop & (devsel == pd)))
        self.check("initial_latency", ~(compliant & data_clk & claimed_q & ~responded_q &
                                         (since >= TARGET_MAX_INITIAL_LATENCY)) | trdy | stop)
        self.check("subsequent_latency", ~(compliant & data_clk & moved_q & ~stop &
                                            (since_data >= TARGET_MAX_SUBSEQUENT_LATENCY))
                   | trdy | stop)
        self.check("retry_first_phase", ~(retry_q & data_clk & (trdy | stop)) | (stop & ~trdy))
        self.check("retry_first_phase", ~retry_q | ~moved_q)
        knobs = response.knobs
        self.check("disconnect_count", ~(exer_q & data_clk & (knobs.disconnect_after != 0))
                   | (phases_q <= knobs.disconnect_after))
        # Parity: PAR one clock after every AD value the board drove, even over AD, C/BE#
        # (inverted only for a word the exerciser corrupts).
        p_ad_oe, p_ad, p_cbe = self.past(ad_oe), self.past(pin["ad"]), self.past(pin["cbe"])
        corrupt_on_pins = self.past(self.past(target.corrupt_par))
        self.check("parity_next_clock", our_oe["par"] == p_ad_oe)
        self.check("parity_next_clock", ~p_ad_oe |
                   (pin["par"] == (Cat(p_ad, p_cbe).xor() ^ corrupt_on_pins)))
        # PERR#: two clocks after a write data phase whose PAR was wrong, when enabled.
        p_write_xfer = self.past(xfer & write_q & ~addr_phase)
        bad_par = p_write_xfer & (pin["par"] != Cat(p_ad, p_cbe).xor())
        our_perr = our_oe["perr"] & ~ports["perr"].o[0]
        self.check("perr_two_clocks", our_perr == self.past(bad_par & enables[2]))

        # --- reachability ---------------------------------------------------------------------
        last = irdy & ~frame
        self.cover("completion", last & trdy & ~stop & moved_q)
        self.cover("master_abort", pi & ~pf & ~irdy & ~claimed_q & ~p_ended)
        self.cover("retry", data_clk & stop & ~trdy & devsel & ~moved_q & ~responded_q)
        self.cover("disconnect_data", xfer & stop & moved_q)
        self.cover("disconnect_nodata", data_clk & stop & ~trdy & devsel & moved_q & ~ps)
        self.cover("target_abort", data_clk & stop & ~devsel)
        self.cover("devsel_slow", devsel & ~claimed_q & (since == 3))
        self.cover("devsel_subtractive", devsel & ~claimed_q & (since == 4))
        self.cover("initial_wait", exer_q & trdy & ~responded_q & (since == 8))
        self.cover("wait_states", exer_q & trdy & moved_q & (since_data == 3))
        self.cover("retry_knob", retry_q & stop)
        self.cover("corrupt_parity", exer_q & (pin["par"] != Cat(p_ad, p_cbe).xor()) & p_ad_oe)
        self.cover("backend_stall_retry", ~exer_q & stop & ~trdy & ~moved_q & ~responded_q)
        self.cover("perr", our_perr)
        self.cover("noncompliant_latency", exer_q & ~responded_q & (since == 20) & allow)

        # --- lemmas: the target's registers against the record of the pins -----------------
        self._lemmas(m, SimpleNamespace(
            target=target, bank=bank, knobs=knobs, allow=allow, pin=pin, our_oe=our_oe,
            pf=pf, devsel=devsel, trdy=trdy, stop=stop, data_clk=data_clk, write_q=write_q,
            since=since, since_data=since_data, claimed_q=claimed_q, responded_q=responded_q,
            moved_q=moved_q, phases_q=phases_q, exer_q=exer_q, retry_q=retry_q,
            bar1_answers=bar1_answers))
        return m

    def _lemmas(self, m, h):
        """Relations between the target's (and its backends' and response's) registers and
        what the harness recorded on the pins: true in every state the board reaches, they
        keep k-induction away from states it does not. ``h`` holds the harness's record."""
        tgt = internal_signals(self.target_fragment)
        claimed = tgt["active"] | tgt["backoff"]
        active, read, sel = tgt["active"], tgt["t_read"], tgt["t_sel"]
        data_clk, devsel, trdy, stop = h.data_clk, h.devsel, h.trdy, h.stop
        since, moved_q = h.since, h.moved_q
        windows = [(0, None)] + [(i, w) for i, w in enumerate(target_windows()) if w]
        # Clocks from the address phase to the claim: 1 with medium decode, 2 with slow.
        claim_since = self.DECODE.value

        # The target's sampled inputs are the pins of the clock before.
        self.check("lemma_pins", (tgt["bus__frame__i"] == h.pf) &
                   (tgt["frame_q"] == self.past(h.pf)))

        # In a transaction exactly while the pins say so: claimed from the clock after
        # the address phase, DEVSEL# held from its first clock (dropped only with STOP#,
        # a target abort), data only after DEVSEL# and TRDY#.
        self.check("lemma_target", ~claimed | data_clk)
        self.check("lemma_target", ~(data_clk & (h.claimed_q | devsel)) | claimed)
        self.check("lemma_target", ~(data_clk & (moved_q | h.responded_q)) | h.claimed_q)
        self.check("lemma_target", ~(data_clk & moved_q) | h.responded_q)
        self.check("lemma_target", ~(data_clk & h.claimed_q & ~devsel) | (stop & ~trdy))
        self.check("lemma_target", ~claimed | (
            (read == ~h.write_q) & (since >= claim_since + 1) &
            (h.exer_q == tgt["t_exerciser"]) &
            (h.retry_q == tgt["t_retry"]) & (tgt["phases"][:9] == h.phases_q) &
            (moved_q == (tgt["phases"] != 0))))

        # What the target chose at the claim matches the window it selected.
        self._chosen_window(tgt, windows, "t_", claimed)
        if self.DECODE is DevselSpeed.SLOW:
            self._decoded_lemmas(tgt, h, windows)

        # Phases stay inside the window (the target disconnects at its end) and within
        # the transaction's limit (single phase, the exerciser's disconnect); the phase
        # that reaches a limit comes with STOP# when FRAME# was still asserted.
        addr, phases = tgt["addr"], tgt["phases"]
        self.check("lemma_target", ~claimed | (
            (phases <= addr) & (addr - phases <= tgt["t_last"]) &
            (addr <= tgt["t_last"] + 1) & ((addr <= tgt["t_last"]) | ~active)))
        knobs = h.knobs
        limit = Mux(tgt["t_single"], 1, Mux(tgt["t_exerciser"], knobs.disconnect_after, 0))
        self.check("lemma_target", ~claimed | (limit == 0) | (
            (phases <= limit) & ((phases != limit) | ~active)))
        last_phase = (tgt["t_single"] | (addr == tgt["t_last"]) |
                      (tgt["t_exerciser"] & knobs.disconnect_data &
                       (phases + 1 == knobs.disconnect_after)))
        self.check("lemma_target", ~(claimed & trdy & h.pf & last_phase) | stop)

        # Reads: TRDY# stands on the word already on AD; the words requested are the word
        # on AD, those in the FIFO and those due, after the words that moved; answers to
        # an ended transaction (discard) come first and are dropped.
        self.check("lemma_target", ~(claimed & read & trdy) | tgt["cur_valid"])
        # (Driven from the claim's decision, AD's first clock carries 0: no word is
        # loaded in the claim's clock.)
        first_driven = ~self.past(h.our_oe["ad"])
        self.check("lemma_target", ~(claimed & read & h.our_oe["ad"]) |
                   (h.pin["ad"] == tgt["ad_cur"]) |
                   (first_driven & (h.pin["ad"] == 0) & ~trdy))
        ahead = tgt["cur_valid"] + tgt["rfifo_level"] + tgt["outstanding"] - tgt["discard"]
        self.check("lemma_target", ~(active & read) | (
            (tgt["load_addr"] == addr + tgt["cur_valid"]) &
            (tgt["req_addr"] == (addr + ahead)[:30]) &
            (tgt["req_count"] == (phases + ahead)[:16])))
        # Every answer due is counted as outstanding; while answers to an ended
        # transaction are due they are all there is, and after that only the selected
        # backend has answers due; none is due outside a transaction but those.
        target = h.target
        due = [target.config.r_valid, target.bar0.r_valid, sum(h.bar1_answers),
               target.bar2.r_valid, target.bar3.r_valid]          # by select index
        self.check("lemma_target", tgt["outstanding"] == sum(due))
        self.check("lemma_target", (tgt["rfifo_level"] + tgt["outstanding"] <= READ_FIFO_DEPTH)
                   & (tgt["discard"] <= tgt["outstanding"]) &
                   (tgt["wfifo_level"] <= WRITE_FIFO_DEPTH))
        self.check("lemma_target", (tgt["discard"] == 0) | (tgt["outstanding"] == tgt["discard"]))
        for index, count in enumerate(due):
            self.check("lemma_target", (tgt["discard"] != 0) | (sel == index) | (count == 0))
        self.check("lemma_target", claimed | ((tgt["rfifo_level"] == 0) &
                                              (tgt["outstanding"] == tgt["discard"])))

        # Writes: TRDY# stands on room in the posted-write FIFO; posted writes go to
        # windows that take writes (every backend but BAR1's is always ready).
        posted = tgt["wfifo_level"] + tgt["wr_moved"]
        self.check("lemma_target", ~(claimed & ~read & trdy) | (posted + 1 <= WRITE_FIFO_DEPTH))
        writable = [index for index, (_, window) in enumerate(windows)
                    if window is None or not window.read_only]
        sel_bits = (len(windows) - 1).bit_length()     # an entry's first field: its select
        for i in range(WRITE_FIFO_DEPTH):
            self.check("lemma_target", tgt[f"wfifo_{i}"][:sel_bits].matches(*writable))

        # DEVSEL# timing: the programmed delay counts down from the claim.
        self.check("lemma_target", ~(active & ~devsel & ~h.claimed_q) |
                   (since + tgt["devsel_wait"] <= _DEVSEL_LAST - 1))

        # The latency rules. Plain windows: the target's clock count since the claim (one
        # after the address phase) or the last data phase is the pins'. Exerciser windows:
        # with compliant settings the programmed waits count down in time; a read waits
        # for earlier posted writes one clock each at most.
        stall = Signal(range(_COUNT_MAX + 2))
        m.d.comb += stall.eq(Mux(moved_q, h.since_data + 1, since - claim_since))
        # (The pins' count saturates at _COUNT_MAX clocks after the address phase.)
        exact = _COUNT_MAX - claim_since
        self.check("lemma_latency", ~claimed | (
            Mux(stall < exact, tgt["stall"] == stall, tgt["stall"] >= exact) &
            (tgt["t_exerciser"] | (tgt["wait_cnt"] == 0))))
        self.check("lemma_latency", ~(claimed & trdy) | (tgt["wait_cnt"] == 0))
        waiting = claimed & tgt["t_exerciser"] & ~h.allow & ~trdy
        self.check("lemma_latency", ~(waiting & moved_q) |
                   (h.since_data + tgt["wait_cnt"] <= TARGET_MAX_SUBSEQUENT_LATENCY - 2))
        self.check("lemma_latency", ~(waiting & ~moved_q) |
                   (since + tgt["wait_cnt"] <= TARGET_MAX_INITIAL_LATENCY - 1))
        self.check("lemma_latency", ~(claimed & read) | (posted == 0) |
                   (posted + since <= WRITE_FIFO_DEPTH + 1))

        # The response registers hold only what the response accepts (and what the host
        # keeps compliant when it clears allow_noncompliant, see elaborate). Not
        # retry.every = 1: clearing allow_noncompliant leaves it in force (a finding: the
        # target then retries every attempt, which breaks no rule of one transaction).
        regs = h.bank.target
        speed = regs.response.devsel_speed
        self.check("lemma_response", (speed >= self.DECODE.value) & (
            h.allow | ((speed - 1 + regs.response.initial_wait + 2 <=
                        TARGET_MAX_INITIAL_LATENCY) &
                       (regs.wait.clocks + 1 <= TARGET_MAX_SUBSEQUENT_LATENCY))) &
            ((regs.wait.clocks == 0) | (regs.wait.every != 0)))

    def _chosen_window(self, tgt, windows, prefix, held):
        """Where ``held``, the window parameters in the target's registers named
        ``prefix`` + parameter (the running transaction's ``t_``, slow decode's
        ``decoded_``) are those of the window they select."""
        def reg(name):
            return tgt[prefix + name]
        sel = reg("sel")
        self.check("lemma_target", ~reg("xfer64") & ~reg("data64"))       # 32-bit board
        self.check("lemma_target", reg("last") <= BAR0_SIZE // 4 - 1)      # the largest BAR
        self.check("lemma_target", ~held | (sel < len(windows)))
        for index, (_, window) in enumerate(windows):
            last = 63 if window is None else window.bar.size // 4 - 1
            flags = ((0, 0, 0) if window is None else
                     (window.exerciser, window.prefetch, window.read_only))
            self.check("lemma_target", ~held | (sel != index) | (
                (reg("last") == last) &
                (Cat(reg("exerciser"), reg("prefetch"), reg("read_only")) == Cat(*flags))))
        singles = [index for index, (_, window) in enumerate(windows)
                   if window is None or window.bar.kind == "io"]
        self.check("lemma_target", ~(held & sel.matches(*singles)) | reg("single"))

    def _decoded_lemmas(self, tgt, h, windows):
        """Slow decode: a decode registered for the claim is one of the address phase
        before (two clocks ago on the pins), of a transaction not yet claimed, and holds
        what the decode of that address gives."""
        hit = tgt["decoded_hit"]
        self.check("lemma_decode", ~hit | (
            h.data_clk & (h.since == 2) & ~tgt["active"] & ~tgt["backoff"] & ~h.claimed_q &
            ~h.responded_q & ~h.moved_q & (tgt["decoded_read"] == ~h.write_q)))
        self._chosen_window(tgt, windows, "decoded_", hit)
        offset, last = tgt["decoded_offset"], tgt["decoded_last"]
        byte = Cat(0, 0, offset)
        knobs = h.knobs
        in_abort_range = (byte >= knobs.abort_first) & (byte <= knobs.abort_last)
        self.check("lemma_decode", ~hit | (
            (offset <= last) & (tgt["decoded_at_end"] == (offset == last)) &
            (tgt["decoded_abort_range"] == (tgt["decoded_exerciser"] & in_abort_range))))


class SlowDecodeTargetHarness(TargetHarness):
    """:class:`TargetHarness` with the target built for slow decode (the decode
    registered, the claim a clock later: DEVSEL# on clock 4 at the earliest)."""
    DECODE = DevselSpeed.SLOW
