# SPDX-License-Identifier: BSD-2-Clause
"""The target's decision and the live IRDY# and FRAME# that choose it.

:func:`decide` builds what to drive next clock and the one-bit next state for given
values of IRDY# and FRAME# (constants, folded by synthesis) and for a newly claimed or
the running transaction; :class:`LiveChoice` holds the eight cofactors and lets the live
lines choose among them: now, in front of the output flip-flops (DEVSEL#, TRDY#, STOP#,
ACK64#, AD and its enable, the PAR corruption), and a clock later for the state
(:func:`choose_state`), so that the live lines end at the output flip-flops and at two
registers of their own (:mod:`pcispy.core.live`).
"""

from typing import NamedTuple

from amaranth import Cat, Const, Mux, Signal, Value

from pcispy.core.live import LiveLines
from pcispy.core.target.transaction import Move
from pcispy.core.target.window import INITIAL_STALL_LIMIT, SUBSEQUENT_STALL_LIMIT

__all__ = ["Decision", "decide", "LiveChoice", "Presented", "present_handshake",
           "choose_state"]


class Decision(NamedTuple):
    """One cofactor's decision: the next word is ``load``ed onto AD (``ad``, its parity
    corrupted: ``corrupt``) and is then the phase's (``next_valid``); DEVSEL#, TRDY#,
    STOP# next clock (``devsel_n``, ``trdy_n``, ``stop_n``, owned: ``own``) and ACK64#
    (``xfer64``); AD driven (``drive_ad``) and its word as presented
    (``ad_presented``, 0 on lanes not driven); the next state (``next_active``,
    ``next_backoff``), the transaction ends at this edge (``end_txn``), a target abort
    is signalled (``abort_now``)."""
    load: Value
    next_valid: Value
    devsel_n: Signal
    trdy_n: Signal
    stop_n: Signal
    next_active: Signal
    next_backoff: Signal
    abort_now: Signal
    end_txn: Value
    own: Value
    drive_ad: Value
    ad: Value
    corrupt: Value
    xfer64: Value
    ad_presented: Value


def decide(m, transaction, prefetch, word, moves, irdy, frame, v, *, wide, fast_decode):
    """The :class:`Decision` were IRDY# and FRAME# on the pins now ``irdy`` and ``frame``
    (Python ints), for the transaction ``v`` (a :class:`~.transaction.View`) with its
    ``moves`` (``{mv: Move}``), the running ``transaction``, the read ``prefetch`` and
    the next read ``word``."""
    t, p = transaction, prefetch
    active, backoff, devsel_p, trdy_p, stop_p = (t.active, t.backoff, t.devsel_p, t.trdy_p,
                                                 t.stop_p)
    cur_valid = p.cur_valid
    claiming = Const(int(v.claimed), 1)
    irdy, frame = Const(irdy, 1), Const(frame, 1)
    moved = irdy & trdy_p
    mv = Move(*(Mux(moved, now, not_now) for now, not_now in zip(moves[1], moves[0])))
    final = moved & ~frame
    # No word is loaded in the claim's clock: its first read request leaves now and
    # every answer of an earlier transaction is discarded.
    load = ~claiming & v.active & v.read & p.read_avail & (moved | ~cur_valid) & ~final
    next_valid = load | (cur_valid & ~moved)
    ready = mv.wcount_zero & ~mv.in_abort & Mux(v.read, next_valid, mv.write_room)
    # Latency rules for the plain windows (the exerciser breaks them only on
    # purpose): clocks since the claim or the last data phase.
    late = (~v.exerciser & ~(claiming | moved)
            & (t.stall >= Mux(t.phases == 0, INITIAL_STALL_LIMIT, SUBSEQUENT_STALL_LIMIT)))
    suffix = f"_{int(v.claimed)}{irdy.value}{frame.value}"
    devsel_n, trdy_n, stop_n, next_active, next_backoff, abort_now = (
        Signal(name=n + suffix) for n in ("devsel_n", "trdy_n", "stop_n",
                                          "next_active", "next_backoff", "abort_now"))
    release = final | (~frame & ~irdy)
    with m.If(backoff):
        # Hold STOP# (and DEVSEL#, unless aborting) until FRAME# is deasserted.
        with m.If(frame):
            m.d.comb += [devsel_n.eq(devsel_p), stop_n.eq(1), next_backoff.eq(1)]
    with m.Elif(v.active):
        with m.If(release):
            # Last phase moved, or the initiator gave up (master abort): release.
            pass
        with m.Elif(trdy_p & ~moved):
            # TRDY# is asserted until its data phase completes: hold everything.
            m.d.comb += [devsel_n.eq(1), trdy_n.eq(1), stop_n.eq(stop_p),
                         next_active.eq(1)]
        with m.Elif(moved & stop_p):
            # Disconnect with data done; FRAME# still asserted: wait for it.
            m.d.comb += [devsel_n.eq(1), stop_n.eq(1), next_backoff.eq(1)]
        with m.Elif(v.devsel_wait != 0):
            m.d.comb += next_active.eq(1)
        with m.Elif(v.retry | mv.without_data):
            m.d.comb += [devsel_n.eq(1), stop_n.eq(1), next_backoff.eq(1)]
        with m.Elif(mv.in_abort & devsel_p):
            m.d.comb += [stop_n.eq(1), next_backoff.eq(1), abort_now.eq(1)]
        with m.Elif(late & ~ready):
            # The backend is too slow for the latency rules: retry (no data yet) or
            # disconnect without data, rather than hold the bus.
            m.d.comb += [devsel_n.eq(1), stop_n.eq(1), next_backoff.eq(1)]
        with m.Else():
            m.d.comb += [devsel_n.eq(1), trdy_n.eq(ready),
                         stop_n.eq(ready & frame & mv.with_data),
                         next_active.eq(1)]
    end_txn = (active | backoff) & ~next_active & ~next_backoff
    # The lines are owned (driven) in exactly the branches above that assert one of
    # them. Written from the branch conditions rather than as DEVSEL# | TRDY# |
    # STOP#: the same value, but the enables (AD's above all, 32 or 64 pads away)
    # then wait for neither the ready nor the disconnect and abort arithmetic of
    # the claim's address, which only choose between the asserting branches.
    own = Mux(backoff, frame,
              v.active & ~release
              & ((trdy_p & ~moved) | (moved & stop_p) | (v.devsel_wait == 0)))
    # AD is driven while the lines are owned in a read, never in the turnaround
    # clock after the address phase (fast decode claims then). A claim never meets
    # a backoff (STOP# is held only while FRAME# is asserted, and a claim follows a
    # clock with FRAME# deasserted).
    if v.claimed:
        drive_ad = Const(0) if fast_decode else own & v.read
    else:
        drive_ad = own & v.read & (v.active | backoff)
    ad = Mux(load, word.head_word, p.ad_cur)
    corrupt = Mux(load, word.new_corrupt, p.cur_corrupt)
    xfer64 = v.xfer64 & devsel_n
    # The word as presented to the pads: 0 on lanes not driven (the pads OR the
    # cores' AD words without their enables: ``merge_bus_drivers``).
    lanes = drive_ad.replicate(32)
    if wide:
        lanes = Cat(lanes, (drive_ad & xfer64).replicate(32))
    return Decision(
        load=load, next_valid=next_valid, devsel_n=devsel_n, trdy_n=trdy_n, stop_n=stop_n,
        next_active=next_active, next_backoff=next_backoff, abort_now=abort_now,
        end_txn=end_txn, own=own, drive_ad=drive_ad, ad=ad, corrupt=corrupt,
        xfer64=xfer64, ad_presented=ad & lanes)


class LiveChoice:
    """The decision's eight cofactors (``cases[claimed, irdy, frame]``, each a
    :class:`Decision`) and the live IRDY# and FRAME# that choose among them
    (``lines``, a :class:`~pcispy.core.live.LiveLines`, FRAME# choosing last).

    Within each cofactor the claim chooses between the decisions for the running and a
    newly claimed transaction (from registers, or decoded in the address phase), so that
    the live lines only pick among four kept nets at the output registers, in a slice of
    hand-placed cells per bit (IRDY# into two LUT4s, FRAME# their PFUMX). With fast
    decode the claim reads the live FRAME# (the address phase is the clock it is first
    asserted): within the cofactor for FRAME# = f it is that value (``claim_with``, the
    claim as a function of FRAME# now).
    """
    def __init__(self, m, cells, live, claim_with, cases):
        self.claim_with = claim_with
        self.cases = cases
        self.lines = LiveLines(m, cells, {"frame": live.frame, "irdy": live.irdy})

    def decision(self, name, claimable=True):
        """The decision's ``name`` as a function of a cofactor's ``values``, the claim
        chosen (``claimable``; else the running transaction's, for a value the claim's
        clock does not need)."""
        lines, cases = self.lines, self.cases

        def value(values):
            i, f = lines.value(values, "irdy"), lines.value(values, "frame")
            running = getattr(cases[False, i, f], name)
            if not claimable:
                return running
            return Mux(self.claim_with(Const(f, 1)), getattr(cases[True, i, f], name),
                       running)
        return value

    def cofactor(self, name):
        """The decision's ``name`` (the claim chosen) as a function of a cofactor's
        ``values``: the kept net the live choice takes it from."""
        return lambda values: self.lines.kept(name, values, self.decision(name))

    def live_pick(self, name, claimable=True, gate=None):
        """The decision's ``name`` for IRDY# and FRAME# as they are on the pins now; 0
        where ``gate`` (a register) is 0."""
        return self.lines.choose_now(name if claimable else f"{name}_running",
                                     self.decision(name, claimable), gate=gate)


class Presented(NamedTuple):
    """DEVSEL#, TRDY#, STOP# for the next clock and their enable (``own``), as the live
    lines chose them."""
    devsel_n: Signal
    trdy_n: Signal
    stop_n: Signal
    own: Signal


def present_handshake(m, choice):
    """The :class:`Presented` handshake of the :class:`LiveChoice` ``choice``."""
    devsel_n, trdy_n, stop_n, own = (Signal(name=n) for n in
                                     ("devsel_n", "trdy_n", "stop_n", "own"))
    live_pick = choice.live_pick
    m.d.comb += [devsel_n.eq(live_pick("devsel_n")), trdy_n.eq(live_pick("trdy_n")),
                 stop_n.eq(live_pick("stop_n")), own.eq(live_pick("own"))]
    return Presented(devsel_n, trdy_n, stop_n, own)


def choose_state(m, target, choice, presented, claim, transaction, effective, moves,
                 prefetch, word, posted):
    """One-bit state and registered events, chosen a clock late: each is registered
    once per value of IRDY# and FRAME# (the claim already chosen: it comes from
    registers), the two lines are registered beside them, and the registered lines
    choose (:meth:`~pcispy.core.live.LiveLines.choose_later`). The same value clock for
    clock as registering the live choice, while the live lines end at their own two
    flip-flops. Then the retimed registers' updates and the handshake lines. Returns
    ACK64# for the next clock on a 64-bit bus (else None)."""
    t, e, p, bus = transaction, effective, prefetch, target.bus
    lines, cofactor = choice.lines, choice.cofactor
    chosen_later = lines.choose_later
    trdy_p, new_corrupt = t.trdy_p, word.new_corrupt

    def irdy(values):
        return Const(lines.value(values, "irdy"))

    signaled_target_abort = Signal()
    m.d.comb += [
        t.active.eq(chosen_later("active", cofactor("next_active"))),
        t.backoff.eq(chosen_later("backoff", cofactor("next_backoff"))),
        t.devsel_p.eq(chosen_later("devsel_p", cofactor("devsel_n"))),
        t.trdy_p.eq(chosen_later("trdy_p", cofactor("trdy_n"))),
        t.stop_p.eq(chosen_later("stop_p", cofactor("stop_n"))),
        t.moved_q.eq(chosen_later("moved", lambda values: irdy(values) & trdy_p)),
        p.load_q.eq(chosen_later("load", cofactor("load"))),
        p.end_q.eq(chosen_later("end_txn", cofactor("end_txn"))),
        p.cur_valid.eq(chosen_later("cur_valid", lambda values: (
            cofactor("next_valid")(values) & cofactor("next_active")(values)))),
        signaled_target_abort.eq(chosen_later("abort", cofactor("abort_now"))),
        word.corrupt_taken_q.eq(chosen_later("corrupt_taken", lambda values: (
            cofactor("load")(values) & new_corrupt))),
        # A write phase moved at the previous edge.
        posted.moved.eq(chosen_later("wr_moved", lambda values: (
            irdy(values) & trdy_p & ~e.params.read & e.active))),
    ]
    m.d.comb += [target.signaled_target_abort.eq(signaled_target_abort),
                 target.corrupt_taken.eq(word.corrupt_taken_q)]

    # Retimed registers. Outside a transaction they are not read (the claim's values
    # replace them through the e_* view), so they follow the arithmetic every clock.
    m.d.pci += t.devsel_wait.eq(Mux(e.devsel_wait != 0, e.devsel_wait - 1, 0))
    for name, field in (("wait", "wait_next"), ("phases", "next_phases"),
                        ("group", "group_next"), ("addr", "next_addr"),
                        ("stall", "stall_next")):
        t.retimed[name].update(getattr(moves[False][1], field),
                               Mux(claim.claim, getattr(moves[True][0], field),
                                   getattr(moves[False][0], field)))

    own = presented.own
    m.d.comb += [
        bus.devsel.o.eq(presented.devsel_n), bus.devsel.oe.eq(own),
        bus.trdy.o.eq(presented.trdy_n), bus.trdy.oe.eq(own),
        bus.stop.o.eq(presented.stop_n), bus.stop.oe.eq(own),
        target.busy.eq(t.active | t.backoff | posted.wfifo.nonempty | posted.moved
                       | (p.outstanding != 0)),
    ]
    if target.width == 64:
        xfer64_n = choice.live_pick("xfer64")
        m.d.comb += [bus.ack64.o.eq(xfer64_n), bus.ack64.oe.eq(own)]
        return xfer64_n
    return None
