# SPDX-License-Identifier: BSD-2-Clause
"""The master's bookkeeping: the previous edge's registered events and the copy of its own
pins, the descriptor being worked on, the transaction's registers, the counters'
comparisons registered a clock ahead, the write words, what a transaction starting now
carries, and the state the decision updates.

Each step is built into the initiator's module ``m``, takes the component ``ini`` for
its ports (:class:`~pcispy.core.initiator.component.Initiator`) and the nets of the steps
before it, and returns the nets it makes.

Timing (docs/architecture.md, "I/O timing"): the live handshake lines reach only the
output flip-flops and one- to four-bit registers. Every wider register whose next value
depended on them keeps the value from before the previous edge and the registered event
(:class:`Edge`), and shows the updated value combinationally: the same values clock for
clock, without a live line entering an adder.
"""

from typing import Callable, NamedTuple

from amaranth import Cat, Mux, Signal, Value

from pcispy.pci.bus import Command, Termination
from pcispy.core.initiator.interface import (MASTER_ABORT_CLOCK, _Phase, is_memory_command)

__all__ = ["Edge", "previous_edge", "HeldDescriptor", "descriptor", "TransactionRegisters",
           "transaction", "Comparisons", "comparisons", "write_words", "StartValues",
           "start_values", "DecidedState", "decided_state"]


class Edge(NamedTuple):
    """The registered events of the previous edge: DWORDs the data phase moved
    (``moved_q``), DWORDs the descriptor advanced (``advanced_q``), a transaction started
    (``start_q``), DWORDs of the write stream consumed (``take_q``); and the copy of what
    the master drives on the pins now, its own outputs a clock later (``pin_frame``,
    ``pin_irdy``, ``pin_ad``, ``pin_ad_hi``). All are state the decision sets."""
    moved_q: Signal
    advanced_q: Signal
    start_q: Signal
    take_q: Signal
    pin_frame: Signal
    pin_irdy: Signal
    pin_ad: Signal
    pin_ad_hi: Signal


def previous_edge():
    """The :class:`Edge` registers."""
    moved_q = Signal(2)      # DWORDs the data phase at the previous edge moved
    advanced_q = Signal(2)   # DWORDs the descriptor advanced at the previous edge
    start_q = Signal()       # a transaction started at the previous edge
    take_q = Signal(2)       # DWORDs of the write stream consumed at the previous edge

    # --- what is on the pins now (our own outputs, one clock later) -----------------
    pin_frame = Signal()
    pin_irdy = Signal()
    pin_ad = Signal(32)
    pin_ad_hi = Signal(32)
    return Edge(moved_q, advanced_q, start_q, take_q, pin_frame, pin_irdy, pin_ad,
                pin_ad_hi)


class HeldDescriptor(NamedTuple):
    """The descriptor being worked on. ``held``: one is held in the registers (``cmd``,
    ``addr``: the byte address of the next data phase to move, ``dwords_left``);
    ``aborted_q``: the previous one ended in an abort at the previous edge (the next is
    not taken yet); ``offered``: one is offered now and may be taken; ``take``: it is
    taken now; ``addr_next``, ``left_next``: the address and DWORDs left after this edge,
    before the decision's advance. The effective descriptor (``e_*``): the held one, or
    the one offered now."""
    held: Signal
    cmd: Signal
    addr: Signal
    dwords_left: Signal
    aborted_q: Signal
    offered: Signal
    take: Value
    addr_next: Value
    left_next: Value
    e_cmd: Signal
    e_addr: Signal
    e_left: Signal
    e_wide: Signal
    e_more: Signal


def descriptor(m, ini, advanced_q):
    """The :class:`HeldDescriptor`: held in registers, or the one offered now (a new
    descriptor can start in the very clock it arrives). Its address and DWORDs left
    advance by the registered event of the previous edge (``advanced_q``)."""
    held = Signal()                 # a descriptor is held in the registers below
    cmd = Signal(Command)
    want_wide = Signal()
    more = Signal()
    addr_before = Signal(64)
    left_before = Signal(32)
    addr = Signal(64)               # byte address of the next data phase to move
    dwords_left = Signal(32)
    m.d.comb += [addr.eq(addr_before + (advanced_q << 2)),
                 dwords_left.eq(left_before - advanced_q)]
    # A descriptor that ended in an abort at the previous edge: the engine learns of it
    # from the (registered) events one clock later, so the next one is not taken yet.
    aborted_q = Signal()
    offered = Signal()
    m.d.comb += offered.eq(ini.desc.valid & ~aborted_q)
    # Effective descriptor: the held one, or the one offered now (so a new descriptor
    # can start in the very clock it arrives: no wasted clock between transfers).
    e_cmd = Signal(Command)
    e_addr = Signal(64)
    e_left = Signal(32)
    e_wide = Signal()
    e_more = Signal()
    payload = ini.desc.payload
    m.d.comb += [
        e_cmd.eq(Mux(held, cmd, payload.cmd)),
        e_addr.eq(Mux(held, addr, payload.addr)),
        e_left.eq(Mux(held, dwords_left, payload.dwords)),
        e_wide.eq(Mux(held, want_wide, payload.wide)),
        e_more.eq(Mux(held, more, payload.more)),
        ini.desc.ready.eq(~held & ~aborted_q),
    ]
    take = offered & ~held
    addr_next = Mux(take, payload.addr, addr)
    left_next = Mux(take, payload.dwords, dwords_left)
    m.d.pci += [addr_before.eq(addr_next), left_before.eq(left_next)]
    with m.If(take):
        # (``held`` is set with the decision, which may drop the descriptor again in the
        # same clock: one with nothing to move is finished at once.)
        m.d.pci += [cmd.eq(payload.cmd), want_wide.eq(payload.wide),
                    more.eq(payload.more)]
    return HeldDescriptor(
        held=held, cmd=cmd, addr=addr, dwords_left=dwords_left, aborted_q=aborted_q,
        offered=offered, take=take, addr_next=addr_next, left_next=left_next, e_cmd=e_cmd,
        e_addr=e_addr, e_left=e_left, e_wide=e_wide, e_more=e_more)


class TransactionRegisters(NamedTuple):
    """The transaction on the bus: the registers the decision updates (``phase``,
    ``txn_*``, ``narrow``, ``devsel_seen``, ``moved``, ``ending``, ``ending_open``,
    ``term``, ``wait_left``, ``req_off``, ``stopping``), the counters retimed on the
    previous edge's events (``txn_left``, ``since_addr``, ``gnt_wait`` and their
    ``*_before``/``*_start`` registers), and what follows from the registers
    (``line_mask``, ``in_data``, ``final_phase``, ``special``, ``is_mwi``)."""
    phase: Signal
    txn_cmd: Signal
    txn_write: Signal
    txn_wide: Signal
    narrow: Signal
    devsel_seen: Signal
    moved: Signal
    ending: Signal
    ending_open: Signal
    term: Signal
    wait_left: Signal
    req_off: Signal
    stopping: Signal
    txn_dac: Signal
    txn_left: Signal
    since_addr: Signal
    gnt_wait: Signal
    txn_left_before: Signal
    txn_left_start: Signal
    since_before: Signal
    gnt_wait_before: Signal
    line_mask: Signal
    in_data: Value
    final_phase: Value
    special: Value
    is_mwi: Value


def transaction(m, ini, edge):
    """The :class:`TransactionRegisters`, the counters retimed on the :class:`Edge`."""
    phase = Signal(_Phase)
    txn_cmd = Signal(Command)       # command of this transaction (MWI may become MW)
    txn_write = Signal()
    txn_wide = Signal()             # REQ64# asserted with this transaction's FRAME#
    narrow = Signal()               # REQ64# asked but the target answered without ACK64#
    devsel_seen = Signal()
    moved = Signal()                # data moved in this transaction
    ending = Signal()               # the phase on the pins is a forced last one (STOP#, abort)
    # The forced last phase is the one STOP# came in (IRDY# was deasserted then): the
    # target holds TRDY# until IRDY#, so if it asserted TRDY# with STOP#, a word moves.
    ending_open = Signal()
    term = Signal(Termination)      # why this transaction is ending
    wait_left = Signal(3)           # IRDY# wait states still to insert
    req_off = Signal(2)             # REQ# must stay deasserted this many more clocks
    stopping = Signal()             # a stop was requested; finish and drop the descriptor
    txn_dac = Signal()              # this transaction began with a Dual Address Cycle
    txn_left = Signal(32)           # DWORDs this transaction may still move
    since_addr = Signal(16)         # clocks since the (last) address phase, saturating
    gnt_wait = Signal(16)
    txn_left_before = Signal(32)
    txn_left_start = Signal(32)
    since_before = Signal(16)
    gnt_wait_before = Signal(16)
    start_q = edge.start_q
    m.d.comb += [
        txn_left.eq(Mux(start_q, txn_left_start, txn_left_before - edge.moved_q)),
        since_addr.eq(Mux(start_q, 0, since_before)),
        gnt_wait.eq(Mux(start_q, 0, gnt_wait_before)),
    ]

    # The DWORD index of the address inside a cache line (line size is a power of two).
    line_mask = Signal(8)
    m.d.comb += line_mask.eq(ini.cache_line - 1)
    in_data = phase == _Phase.DATA
    final_phase = in_data & ~edge.pin_frame     # FRAME# already deasserted: last phase
    special = txn_cmd == Command.SPECIAL_CYCLE
    is_mwi = txn_cmd == Command.MEM_WRITE_INVALIDATE
    return TransactionRegisters(
        phase=phase, txn_cmd=txn_cmd, txn_write=txn_write, txn_wide=txn_wide,
        narrow=narrow, devsel_seen=devsel_seen, moved=moved, ending=ending,
        ending_open=ending_open, term=term, wait_left=wait_left, req_off=req_off,
        stopping=stopping, txn_dac=txn_dac, txn_left=txn_left, since_addr=since_addr,
        gnt_wait=gnt_wait, txn_left_before=txn_left_before, txn_left_start=txn_left_start,
        since_before=since_before, gnt_wait_before=gnt_wait_before, line_mask=line_mask,
        in_data=in_data, final_phase=final_phase, special=special, is_mwi=is_mwi)


class Comparisons(NamedTuple):
    """The counters' comparisons, registered a clock ahead. Bit ``j`` of a ``*_is``
    vector: the counter equals ``j`` (``txn_left_is``: DWORDs the transaction may still
    move, 0..4; ``dwords_left_is``: the descriptor's, 0..2; ``left_next_is``: after this
    edge, before its advance). ``txn_left_within(low, high)``: ``low <= txn_left <=
    high``. ``nothing_left``: the effective descriptor has no DWORD left. ``go_held``,
    ``go_free`` (state the decision sets) and ``startable``: a transaction may start now
    (with GNT#). ``at_line_end[k, n]``: ``k`` DWORDs moving now and a next phase of ``n``
    end a cache line. ``lt_expired``: the Latency Timer has expired. ``devsel_overdue``:
    no DEVSEL# by now is a master abort. ``since_next``: ``since_addr`` after this edge."""
    txn_left_is: Signal
    txn_left_before_is: Signal
    txn_left_start_is: Signal
    dwords_left_is: Signal
    left_next_is: Signal
    txn_left_within: Callable
    nothing_left: Value
    go_held: Signal
    go_free: Signal
    startable: Value
    at_line_end: dict
    lt_expired: Value
    devsel_overdue: Value
    since_next: Signal


def comparisons(m, ini, edge, held, txn, sizes):
    """The :class:`Comparisons` of the :class:`HeldDescriptor` ``held`` and the
    :class:`TransactionRegisters` ``txn``, one per value the previous edge's event
    (:class:`Edge`) may take; ``sizes``: the DWORDs a data phase may move."""
    # Timing: a comparison behind a counter's adder is two carry chains deep, and in
    # front of the cofactors it would lie on the path of every output. What a counter
    # held before the previous edge's event (a register of two bits at most) is known a
    # clock early, from registers: the comparisons are registered then, one for each
    # value that event may take, and the event only chooses among them. Bit ``j`` of a
    # ``*_is`` vector: the counter equals ``j``. (The Latency Timer and Cache Line Size
    # registers are therefore read a clock ahead as well.)
    start_q, advanced_q = edge.start_q, edge.advanced_q
    txn_left_is = Signal(5)                 # the burst's end is decided among 0..4
    txn_left_before_is = Signal(len(txn_left_is) + 3, init=1)    # (- moved_q, 0..3)
    txn_left_start_is = Signal(len(txn_left_is), init=1)
    m.d.comb += txn_left_is.eq(Mux(start_q, txn_left_start_is,
                                   txn_left_before_is >> edge.moved_q))
    dwords_left_is = Signal(3)              # the descriptor's end: 0..2
    left_before_is = Signal(len(dwords_left_is) + 3, init=1)     # (- advanced_q)
    m.d.comb += dwords_left_is.eq(left_before_is >> advanced_q)
    left_next_is = Signal(len(left_before_is))
    m.d.comb += left_next_is.eq(Cat(held.left_next == j
                                    for j in range(len(left_before_is))))
    m.d.pci += left_before_is.eq(left_next_is)
    # (e_left == 0)
    nothing_left = Mux(held.held, dwords_left_is[0], ini.desc.payload.dwords == 0)
    # Whether a transaction may start now (with GNT#), a clock ahead: idle and not
    # stopping, and a held descriptor with something left (``go_held``), or none held
    # and no abort at the previous edge (``go_free``: then the offer decides, as it
    # stands with the master free). State of their own (set by the decision from the
    # next state), so that the start reads two registers and the offer: the master's
    # start is the head of AD's decision (docs/timing.md).
    go_held = Signal()
    go_free = Signal(init=1)
    startable = go_held | (go_free & ini.offer_when_free)
    # MWI ends only at a cache-line boundary: bit s, the DWORD address (before the
    # event's advance) plus s starts a line. s = advanced + this phase + the next one.
    line_start_before = Signal(8)
    m.d.pci += line_start_before.eq(Cat(((held.addr_next[2:10] + s)[:8] & txn.line_mask) == 0
                                        for s in range(len(line_start_before))))
    at_line_end = {(k, n): (line_start_before >> advanced_q)[k + n]
                   for k in sizes for n in sizes[1:]}
    # The Latency Timer counts from FRAME# asserted: for a DAC, from its first address
    # phase (one clock more than since_addr). Bit i: since_addr + i >= Latency Timer.
    since_next = Signal(16)
    lt_reached_before = Signal(2)
    lt_reached_start = Signal(2)            # (since_addr is 0 after a start)
    m.d.pci += [
        lt_reached_before.eq(Cat(since_next + i >= ini.latency_timer for i in (0, 1))),
        lt_reached_start.eq(Cat(i >= ini.latency_timer for i in (0, 1))),
    ]
    lt_expired = Mux(start_q, lt_reached_start, lt_reached_before).bit_select(
        txn.txn_dac & (txn.phase != _Phase.DAC), 1)
    # No DEVSEL# by then: master abort (never right after a start).
    devsel_due_before = Signal()
    m.d.pci += devsel_due_before.eq(since_next >= MASTER_ABORT_CLOCK)
    devsel_overdue = ~start_q & devsel_due_before

    def txn_left_within(low, high):
        """``low <= txn_left <= high`` (within 0..4)."""
        return txn_left_is[low:high + 1].any()
    return Comparisons(
        txn_left_is=txn_left_is, txn_left_before_is=txn_left_before_is,
        txn_left_start_is=txn_left_start_is, dwords_left_is=dwords_left_is,
        left_next_is=left_next_is, txn_left_within=txn_left_within,
        nothing_left=nothing_left, go_held=go_held, go_free=go_free, startable=startable,
        at_line_end=at_line_end, lt_expired=lt_expired, devsel_overdue=devsel_overdue,
        since_next=since_next)


def write_words(m, ini, take_q, sizes):
    """``{k: word}``: the write words a data phase may present (``word[k]``: the
    stream's word after ``k`` more move now), from the window ``ini.wdata`` advanced by
    ``take_q``; ``sizes``: the DWORDs a data phase may move."""
    # Write data: the stream's next word is wdata[take_q] (the engine advances its
    # window a clock after a phase moves); wdata[take_q + k] after k more move now.
    window_words = len(ini.wdata)
    word = {k: Signal(32, name=f"word_{k}") for k in range(len(sizes) + 1)}
    for k in word:
        with m.Switch(take_q):
            for q in range(len(sizes)):
                if q + k < window_words:
                    with m.Case(q):
                        m.d.comb += word[k].eq(ini.wdata[q + k])
    return word


class StartValues(NamedTuple):
    """What a transaction starting now carries: a Dual Address Cycle (``dac``), the
    command (``start_cmd``: MWI may become MW), 64-bit phases (``use_wide``)."""
    dac: Value
    start_cmd: Value
    use_wide: Signal


def start_values(m, ini, held, txn, cmp, wide_bus):
    """The :class:`StartValues` (from the registers: command, wide, DAC, the DWORDs it
    may move) of the :class:`HeldDescriptor` ``held``, and the registers of ``txn`` and
    ``cmp`` whose next value depends on no live line."""
    e_addr, e_cmd, e_left = held.e_addr, held.e_cmd, held.e_left
    dac = e_addr[32:] != 0
    use_wide = Signal()
    m.d.comb += use_wide.eq(held.e_wide & (e_addr[2] == 0) & (e_left >= 2) &
                            is_memory_command(e_cmd))
    if not wide_bus:
        m.d.comb += use_wide.eq(0)
    # MWI only for whole cache lines: otherwise write up to the next line as MW.
    mwi_partial = Signal()
    dw_in_line = Signal(8)
    m.d.comb += [
        dw_in_line.eq(e_addr[2:10] & txn.line_mask),
        mwi_partial.eq((e_cmd == Command.MEM_WRITE_INVALIDATE) &
                       ((ini.cache_line == 0) | (dw_in_line != 0) |
                        (e_left < ini.cache_line))),
    ]
    to_line_end = Signal(32)
    m.d.comb += to_line_end.eq(Mux(ini.cache_line == 0, e_left,
                                   ini.cache_line - dw_in_line))
    start_txn_left = Mux(mwi_partial & (to_line_end < e_left), to_line_end, e_left)
    m.d.pci += [
        cmp.txn_left_before_is.eq(Cat(txn.txn_left == j
                                      for j in range(len(cmp.txn_left_before_is)))),
        cmp.txn_left_start_is.eq(Cat(start_txn_left == j
                                     for j in range(len(cmp.txn_left_is)))),
    ]
    start_cmd = Mux(mwi_partial, Command.MEM_WRITE, e_cmd)

    # The registers whose next value depends on no live line.
    phase, since_addr, since_next, gnt_wait = (txn.phase, txn.since_addr, cmp.since_next,
                                               txn.gnt_wait)
    waiting = ((phase == _Phase.IDLE) & ~txn.stopping & (held.held | held.offered)
               & (e_left != 0))
    m.d.pci += [txn.txn_left_before.eq(txn.txn_left), txn.txn_left_start.eq(start_txn_left),
                txn.gnt_wait_before.eq(Mux(waiting, gnt_wait + (gnt_wait != 0xFFFF),
                                           gnt_wait))]
    m.d.pci += txn.since_before.eq(since_next)
    with m.Switch(phase):
        with m.Case(_Phase.IDLE):
            m.d.comb += since_next.eq(since_addr)
        with m.Case(_Phase.DAC):
            m.d.comb += since_next.eq(0)
        with m.Case(_Phase.ADDR):
            m.d.comb += since_next.eq(1)
        with m.Case(_Phase.DATA):
            m.d.comb += since_next.eq(since_addr + (since_addr != 0xFFFF))
    return StartValues(dac, start_cmd, use_wide)


class DecidedState(NamedTuple):
    """What the decision sets: ``state`` (``{name: register}``, every register whose
    next value it decides, the ports ``events`` and ``busy`` among them), ``driven`` (the
    bus lines it drives) and the Status pulses, registered
    (``received_master_abort``, ``received_target_abort``)."""
    state: dict
    driven: list
    received_master_abort: Signal
    received_target_abort: Signal


def decided_state(ini, edge, held, txn, cmp, wide_bus):
    """The :class:`DecidedState` of the registers of the :class:`Edge`, the
    :class:`HeldDescriptor`, the :class:`TransactionRegisters` and the
    :class:`Comparisons` (``go_held``, ``go_free``).

    Timing: a live line arrives late in its clock, so it may only *choose* among values
    computed from registers. The decision (:func:`~.decision.decide`) builds the whole
    next state and the outputs for given values of the live lines; it is built once per
    combination of them (:class:`~.choice.Cofactors`; constants, folded by synthesis),
    and the live lines choose among the outputs just in front of the pads' flip-flops
    (:func:`~.outputs.drive_outputs`) and among the registered next states in the clock
    after (:meth:`~.choice.Cofactors.register_state`). Two families keep the copies few:
    while idle only "GNT# with the bus idle" counts (two copies); in a transaction TRDY#,
    STOP#, DEVSEL#, GNT# (and ACK64#) do (16 or 32 copies)."""
    received_master_abort = Signal()   # the Status register's pulses, registered
    received_target_abort = Signal()
    state = {
        "held": held.held, "stopping": txn.stopping, "req_off": txn.req_off,
        "phase": txn.phase, "txn_cmd": txn.txn_cmd, "txn_write": txn.txn_write,
        "txn_wide": txn.txn_wide, "narrow": txn.narrow, "devsel_seen": txn.devsel_seen,
        "moved": txn.moved, "ending": txn.ending, "ending_open": txn.ending_open,
        "term": txn.term, "txn_dac": txn.txn_dac, "wait_left": txn.wait_left,
        "pin_frame": edge.pin_frame, "pin_irdy": edge.pin_irdy, "pin_ad": edge.pin_ad,
        "moved_q": edge.moved_q, "advanced_q": edge.advanced_q, "start_q": edge.start_q,
        "take_q": edge.take_q, "aborted_q": held.aborted_q,
        "events": ini.events,
        "received_master_abort": received_master_abort,
        "received_target_abort": received_target_abort,
        # ``held | phase != IDLE`` as state of its own, from the next state's (in the
        # decision): the DMA engine's offer waits on it, and the master's start on the
        # offer; formed from the phase instead, that chain would be the pci clock's
        # critical path (docs/timing-log.md).
        "busy": ini.busy, "go_held": cmp.go_held, "go_free": cmp.go_free,
    }
    if wide_bus:
        state["pin_ad_hi"] = edge.pin_ad_hi
    driven = ["frame", "irdy", "cbe", "ad", "req"]
    if wide_bus:
        driven += ["req64", "cbe_hi", "ad_hi"]
    return DecidedState(state, driven, received_master_abort, received_target_abort)
