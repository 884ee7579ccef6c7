# SPDX-License-Identifier: BSD-2-Clause
"""The target's transaction: its registers, the transaction as the decision at this edge
sees it (the claim's values in the claim's clock), and the next clock's arithmetic for a
phase that moves at this edge or not.

Timing (docs/architecture.md, "I/O timing"): the live IRDY# and FRAME# reach the output
flip-flops and a few one-bit registers only. The decision is built once for each value
of the two lines and they select among the results last; every wider register whose next
value depends on them is a :class:`~pcispy.core.target.retimed.Retimed` (its candidates
registered, a registered one-bit event choosing), so the values are the same clock for
clock and the live lines never fan out into the datapath. The arithmetic here is plain
logic of registers, made for both values of "a phase moves"; the live IRDY# only
chooses between the two later.
"""

from typing import NamedTuple

from amaranth import Const, Mux, Signal, Value

from pcispy.core.target.retimed import Retimed
from pcispy.core.target.window import WRITE_FIFO_DEPTH, in_abort_range

__all__ = ["Parameters", "Transaction", "Effective", "View", "Move", "NextClock",
           "transaction_state", "next_clock"]


class Parameters(NamedTuple):
    """A transaction's parameters, chosen with its claim: the backend ``sel`` (0:
    configuration space), its command ``read``s, one data phase only (``single``), the
    window ``prefetch``es, is an ``exerciser`` window, the transfer is 64-bit
    (``xfer64``) to a 64-bit backend (``data64``), the exerciser ``retry``s it, and the
    window's ``last`` DWORD."""
    sel: Value
    read: Value
    single: Value
    prefetch: Value
    exerciser: Value
    xfer64: Value
    data64: Value
    retry: Value
    last: Value


class Transaction(NamedTuple):
    """The registers of the transaction claimed.

    ``active``: claimed, in data phases (DEVSEL# may still be delayed); ``backoff``: STOP#
    asserted, waiting for FRAME# to be deasserted; ``params`` (:class:`Parameters`, the
    ``t_*`` registers) and ``read_only`` (the window drops writes), as the claim chose
    them; ``devsel_wait``: clocks of DEVSEL# delay left; ``moved_q``: a data phase moved
    at the previous edge. Retimed on ``moved_q`` (``retimed``, by the names ``wait``,
    ``phases``, ``group``, ``addr``, ``stall``): ``wait`` (wait states before TRDY#),
    ``phases`` (data phases completed), ``group`` (phases since the last inserted wait),
    ``addr`` (DWORD offset of the phase on the bus, the next to move), ``stall`` (clocks
    since the claim or the last data phase). ``devsel_p``, ``trdy_p``, ``stop_p``: what
    the pads drive during this clock. ``active``, ``backoff``, ``moved_q`` and the pin
    shadows are chosen a clock late by the registered live lines
    (:func:`~pcispy.core.target.decision.choose_state`)."""
    active: Signal
    backoff: Signal
    params: Parameters
    read_only: Signal
    devsel_wait: Signal
    moved_q: Signal
    wait: Signal
    phases: Signal
    group: Signal
    addr: Signal
    stall: Signal
    retimed: dict
    devsel_p: Signal
    trdy_p: Signal
    stop_p: Signal


class Effective(NamedTuple):
    """The transaction as the decision at this edge sees it (the ``e_*`` nets): the
    claim's values in the claim's clock, else the running transaction's registers
    (``params``: :class:`Parameters`); ``step``: DWORDs a phase moves (1, or 2 for a
    64-bit transfer)."""
    active: Signal
    params: Parameters
    devsel_wait: Signal
    wait: Signal
    phases: Signal
    group: Signal
    addr: Signal
    step: Value


def transaction_state(m, claim, n_sel):
    """``(Transaction, Effective)`` of ``claim`` (the
    :class:`~pcispy.core.target.decode.Claim`) over ``n_sel`` backends."""
    active = Signal()        # claimed, in data phases (DEVSEL# may still be delayed)
    backoff = Signal()       # STOP# asserted, waiting for FRAME# to be deasserted
    t_sel = Signal(range(n_sel))
    t_read = Signal()
    t_single = Signal()
    t_prefetch = Signal()
    t_exerciser = Signal()
    t_xfer64 = Signal()
    t_data64 = Signal()
    t_last = Signal(30)
    t_retry = Signal()
    devsel_wait = Signal(2)
    moved_q = Signal()       # a data phase moved at the previous edge
    wait_cnt = Signal(9)
    phases = Signal(16)      # data phases completed
    group = Signal(8)        # phases since the last inserted wait
    addr = Signal(30)        # dword offset of the phase on the bus (next to move)
    stall = Signal(5)        # clocks since the claim or the last data phase
    retimed = {name: Retimed(m, moved_q, value) for name, value in (
        ("wait", wait_cnt), ("phases", phases), ("group", group), ("addr", addr),
        ("stall", stall))}

    # Pin shadows: what the pads drive during this clock.
    devsel_p, trdy_p, stop_p = Signal(), Signal(), Signal()

    t_params = Parameters(t_sel, t_read, t_single, t_prefetch, t_exerciser, t_xfer64,
                          t_data64, t_retry, t_last)

    e_active = Signal()
    e_sel = Signal(range(n_sel))
    e_read, e_single, e_prefetch, e_exerciser, e_xfer64, e_data64, e_retry = (
        Signal(name=n) for n in ("e_read", "e_single", "e_prefetch", "e_exerciser",
                                 "e_xfer64", "e_data64", "e_retry"))
    e_last = Signal(30)
    e_params = Parameters(e_sel, e_read, e_single, e_prefetch, e_exerciser, e_xfer64,
                          e_data64, e_retry, e_last)
    e_devsel_wait = Signal(2)
    e_wait = Signal(9)
    e_phases = Signal(16)
    e_group = Signal(8)
    e_addr = Signal(30)
    with m.If(claim.claim):
        m.d.comb += [
            e_active.eq(1),
            *(e.eq(c) for e, c in zip(e_params, claim.params)),
            e_devsel_wait.eq(claim.devsel_delay),
            e_wait.eq(Mux(claim.params.exerciser, claim.exerciser_wait, 0)),
            e_phases.eq(0), e_group.eq(0), e_addr.eq(claim.offset),
        ]
    with m.Else():
        m.d.comb += [
            e_active.eq(active),
            *(e.eq(t) for e, t in zip(e_params, t_params)),
            e_devsel_wait.eq(devsel_wait),
            e_wait.eq(wait_cnt), e_phases.eq(phases), e_group.eq(group), e_addr.eq(addr),
        ]
    t_read_only = Signal()
    with m.If(claim.claim):
        m.d.pci += t_read_only.eq(claim.read_only)
        m.d.pci += [t.eq(c) for t, c in zip(t_params, claim.params)]

    step = Mux(e_xfer64, 2, 1)
    transaction = Transaction(
        active=active, backoff=backoff, params=t_params, read_only=t_read_only,
        devsel_wait=devsel_wait, moved_q=moved_q, wait=wait_cnt, phases=phases,
        group=group, addr=addr, stall=stall, retimed=retimed, devsel_p=devsel_p,
        trdy_p=trdy_p, stop_p=stop_p)
    effective = Effective(
        active=e_active, params=e_params, devsel_wait=e_devsel_wait, wait=e_wait,
        phases=e_phases, group=e_group, addr=e_addr, step=step)
    return transaction, effective


class View(NamedTuple):
    """The transaction as the decision sees it: a new one ``claimed`` in this clock (its
    parameters from the address decode) or the one running (registers). ``wait``: wait
    states before TRDY#; ``group``, ``addr``, ``phases``: as in :class:`Transaction`;
    ``at_end`` and ``abort_range`` of the first phase (a claimed view only: the running
    one works them out per :class:`Move`)."""
    claimed: bool
    active: Value
    read: Value
    single: Value
    exerciser: Value
    xfer64: Value
    retry: Value
    devsel_wait: Value
    wait: Value
    group: Value
    addr: Value
    phases: Value
    last: Value
    at_end: Value = None
    abort_range: Value = None


class Move(NamedTuple):
    """Everything the decision needs that depends on whether a phase moves at this edge
    but not on FRAME#: the DWORD offset (``next_addr``) and phase count (``next_phases``)
    after the edge; the exerciser's wait group is full (``group_full``), the wait states
    then due (``wcount``, ``wcount_zero``); room for posted writes (``write_room``); the
    next phase is in the abort range (``in_abort``), ends with data (``with_data``) or
    without (``without_data``); and the retimed registers' next values (``wait_next``,
    ``group_next``, ``stall_next``)."""
    next_addr: Value
    next_phases: Value
    group_full: Value
    wcount: Value
    wcount_zero: Value
    write_room: Value
    in_abort: Value
    with_data: Value
    without_data: Value
    wait_next: Value
    group_next: Value
    stall_next: Value


class NextClock(NamedTuple):
    """``views[claimed]``: the :class:`View` of a newly claimed (True) or the running
    (False) transaction. ``moves[claimed][mv]``: the :class:`Move` for that view with a
    phase moving (1) or not (0); a moving phase is always the running transaction's (no
    phase moves in the claim's clock: TRDY# was deasserted since the previous
    transaction's last phase)."""
    views: dict
    moves: dict


def next_clock(claim, transaction, knobs, wfifo, wr_moved):
    """The :class:`NextClock` arithmetic of the ``claim``, the running ``transaction``,
    the exerciser's ``knobs`` and the posted writes (``wfifo``, ``wr_moved``: a write
    phase moved at the previous edge)."""
    t = transaction

    def after(address, xfer64, mv):
        """The dword offset after this edge (30 bits, as ``next_addr``)."""
        return (address + Mux(xfer64, 2, 1))[:30] if mv else address

    def phases_after(count, mv):
        return (count + 1)[:16] if mv else count

    # The transaction as the decision sees it: a new one claimed in this clock (its
    # parameters from the address decode), or the one running (registers). The decision
    # is built for each and the claim picks one last, so the decode of the address
    # phase (a wire across the die away from some AD pins) reaches the outputs through
    # that one mux instead of the whole decision.
    def view(claimed):
        if claimed:
            c = claim.params
            return View(
                claimed=True, active=Const(1), read=c.read, single=c.single,
                exerciser=c.exerciser, xfer64=c.xfer64, retry=c.retry,
                devsel_wait=claim.devsel_delay,
                wait=Mux(c.exerciser, claim.exerciser_wait, 0), group=Const(0, 8),
                addr=claim.offset, phases=Const(0, 16), last=c.last,
                at_end=claim.at_end, abort_range=claim.abort_range)
        r = t.params
        return View(
            claimed=False, active=t.active, read=r.read, single=r.single,
            exerciser=r.exerciser, xfer64=r.xfer64, retry=r.retry,
            devsel_wait=t.devsel_wait, wait=t.wait, group=t.group, addr=t.addr,
            phases=t.phases, last=r.last)
    views = {claimed: view(claimed) for claimed in (False, True)}

    def by_move(mv, v):
        """The :class:`Move` of view ``v`` with a phase moving (``mv``, a Python bool)."""
        next_addr = after(v.addr, v.xfer64, mv)
        next_phases = phases_after(v.phases, mv)
        group_full = (v.exerciser & (knobs.wait_every != 0) & (knobs.wait_clocks != 0)
                      & (v.group + 1 == knobs.wait_every)) if mv else Const(0)
        wcount = Mux(group_full, knobs.wait_clocks, v.wait)
        wcount_zero = wcount == 0
        # Room for posted writes: the one being pushed, the one moving, the next one.
        write_room = (wfifo.level + wr_moved + 1 + int(mv)) <= WRITE_FIFO_DEPTH

        if v.claimed:       # (mv is False: no phase moves in the claim's clock)
            in_range, at_end = v.abort_range, v.at_end
        else:
            in_range = in_abort_range(knobs, after(v.addr, v.xfer64, mv))
            at_end = after(v.addr, v.xfer64, mv) + Mux(v.xfer64, 2, 1) > v.last
        in_abort = v.exerciser & knobs.abort_enable & in_range
        disc_n = v.exerciser & (knobs.disconnect_after != 0)
        first_phase = phases_after(v.phases, mv) == 0
        disconnect_next = phases_after(v.phases, mv) + 1 == knobs.disconnect_after
        disconnect_now = phases_after(v.phases, mv) == knobs.disconnect_after
        with_data = (v.single & first_phase) | at_end \
            | (disc_n & knobs.disconnect_data & disconnect_next)
        without_data = disc_n & ~knobs.disconnect_data & disconnect_now
        # Next values of the retimed registers (a phase moved: trdy_p was set).
        if mv:
            wait_next = Mux(wcount != 0, wcount - 1, 0)
            group_next = Mux(group_full, 0, v.group + 1)
            stall_next = 1
        else:
            wait_next = Mux(t.trdy_p, wcount, Mux(wcount != 0, wcount - 1, 0))
            group_next = v.group
            stall_next = 1 if v.claimed else Mux(t.stall == 31, 31, t.stall + 1)
        return Move(next_addr, next_phases, group_full, wcount, wcount_zero, write_room,
                    in_abort, with_data, without_data, wait_next, group_next, stall_next)
    # moves[claimed][mv]; a moving phase is the running transaction's.
    moves = {claimed: {0: by_move(False, views[claimed]), 1: by_move(True, views[False])}
             for claimed in (False, True)}
    return NextClock(views, moves)
