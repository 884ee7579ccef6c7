# SPDX-License-Identifier: BSD-2-Clause
"""Formal harness of the PCI target: the real pads, target, exerciser response and its
registers, facing a legal initiator.

The board's target (:class:`~pcispy.gateware.pci.target.PCITarget`, with the board's own
windows: BAR0 plain registers, BAR1 the read-only trace window, BAR2 the exerciser memory
window, BAR3 the exerciser I/O window) sits behind the real :class:`~pcispy.gateware.pci.pads.PCIPads`, so
the assertions are about the pins. The :class:`~pcispy.gateware.exerciser.response.
ExerciserResponse` and its register block (:class:`~pcispy.gateware.csr.CSRBank` holding
only the ``target`` block) sit behind it as on the board; any register write may arrive
while the bus and the target are idle (the host programs the response between
transactions). BAR1's backend takes requests at will and answers each read
:data:`BAR1_LATENCY` clocks later (the target must retry or disconnect in time when it
stalls); the others answer like the board's configuration space, register
bank and scratch RAM (always ready, read data one clock later).

The initiator on the other side is free except for the rules of /work/shared/pci-notes.md
(stated as ``Assume``): FRAME# starts only from an idle bus, is deasserted only with IRDY#
and stays deasserted; IRDY# is asserted only after the address phase and then held, and
FRAME# with it, until its data phase completes (TRDY#), the target stops it (STOP#) or the
master aborts (no DEVSEL# by clock 5); IRDY# is deasserted after the last phase; FRAME# is
deasserted as soon as STOP# is seen. AD, C/BE#, PAR, IDSEL are arbitrary. No other target
answers (a transaction nobody claims ends in master abort).
"""

from amaranth import Cat, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..csr import CSRBank
from ..exerciser.response import ExerciserResponse
from ..pci.bus import ACTIVE_LOW, bus_lines
from ..pci.pads import PCIPads, simulation_ports
from ..pci.target import PCITarget
from ..regs import (BAR0_SIZE, TARGET, RegisterMap, TARGET_MAX_INITIAL_LATENCY,
                    TARGET_MAX_SUBSEQUENT_LATENCY)
from ..top import PCIBoard, connect_response
from .harness import Harness

__all__ = ["TargetHarness", "target_windows"]

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
    """The board's windows (gateware/top.py), with a small exerciser window and a small
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

    Parameters: see :class:`~pcispy.gateware.formal.harness.Harness`. Mutation
    ``stop_pulse`` lets STOP# reach the pads for one clock only.
    """
    MUTATIONS = ("stop_pulse",)

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

    @staticmethod
    def _ram_backend(m, port, rdata):
        """Like the scratch RAM: always ready, read data one clock after the request."""
        m.d.comb += [port.ready.eq(1), port.r_data.eq(rdata)]
        m.d.pci += port.r_valid.eq(port.valid & ~port.write)

    def elaborate(self, platform):
        m = self._module()
        ports = simulation_ports(32)
        m.submodules.pads = pads = PCIPads(32, ports)
        m.submodules.target = target = PCITarget(32, target_windows())
        m.submodules.bank = bank = CSRBank(RegisterMap([TARGET]))
        m.submodules.response = response = ExerciserResponse()

        # --- the board, wired as in gateware/top.py -----------------------------------
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
        self._slow_backend(m, target.bar1, self.bar1_ready, self.bar1_rdata)
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
        # Register writes while the bus and the target are idle.
        write = self.reg_we & ~frame & ~irdy & ~pf & ~pi & ~target.busy
        # Finding (reported): the response accepts clearing allow_noncompliant while a
        # wait-state setting only it allows is in force, and the target then keeps that
        # setting. The latency proofs take the host's side of the bargain as given: it
        # restores compliant waits before clearing the bit.
        response_addr = RegisterMap([TARGET])["target.response"][0] // 4
        self.assume(~(write & (self.reg_addr == response_addr) & ~self.reg_wdata[31] &
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
        self.check("response_in_transaction", ~(devsel | trdy | stop) | data_clk)
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
        return m
