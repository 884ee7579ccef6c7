# SPDX-License-Identifier: BSD-2-Clause
"""The target's data path: the read prefetch (the FIFO of words read ahead, the requests
outstanding, the word on AD), the posted writes, the backend requests, the read data on
AD with its parity's corruption, and the write data with its parity check.

Each step is built into the target's module ``m``; ``target`` is the component
(:class:`~pcispy.core.target.component.PCITarget`) for its ports. Writes are posted
through a small FIFO and drained before any read request; reads of windows that allow it
are prefetched into a small FIFO, so bursts run without wait states in both directions
when the backend keeps up.
"""

from typing import NamedTuple

from amaranth import Cat, Const, Mux, Signal, Value
from amaranth.lib import data

from pcispy.core.target.retimed import RegisterFIFO, Retimed, RetimedFIFO
from pcispy.core.target.window import READ_FIFO_DEPTH, WRITE_FIFO_DEPTH

__all__ = ["Prefetch", "PostedWrites", "ReadWord", "Requests", "read_prefetch",
           "posted_writes", "read_word", "read_data_out", "backend_requests",
           "write_data_and_parity"]


class Prefetch(NamedTuple):
    """The read prefetch.

    ``data_bits``: the word (32 or 64); ``end_q``: the transaction ended at the previous
    edge; ``load_q``: AD was loaded with the next word at the previous edge; ``rfifo``:
    the words read ahead (popped as a word is loaded onto AD, flushed at a transaction's
    end); ``outstanding``: read requests not answered yet; ``discard``: answers still
    due to an ended transaction (retimed on ``end_q``: ``discard_r``); ``req_addr``,
    ``req_count``: DWORD offset and number of the next read request; the word on AD
    (``ad_cur``, ``cur_corrupt``: its parity corrupted, ``cur_valid``: it is the current
    phase's) and the offset of the next one (``load_addr``), retimed on ``load_q``
    (``loaded``, by those names); ``r_valid``, ``r_data``: the backends' answer now;
    ``read_avail``: a word is there to load."""
    data_bits: int
    end_q: Signal
    load_q: Signal
    rfifo: RetimedFIFO
    outstanding: Signal
    discard: Signal
    discard_r: Retimed
    req_addr: Signal
    req_count: Signal
    load_addr: Signal
    cur_valid: Signal
    cur_corrupt: Signal
    ad_cur: Signal
    loaded: dict
    r_valid: Signal
    r_data: Signal
    read_avail: Value


def read_prefetch(m, backends, wide):
    """The :class:`Prefetch` in front of ``backends`` (a ``wide`` bus: 64-bit words)."""
    data_bits = 64 if wide else 32
    end_q = Signal()             # the transaction ended at the previous edge
    load_q = Signal()            # AD was loaded with the next word at the previous edge
    # (A word leaves the FIFO as it is loaded onto AD; a transaction's end flushes it.)
    rfifo = RetimedFIFO(m, "rfifo", data_bits, READ_FIFO_DEPTH,
                        pop_q=load_q, flush_q=end_q)
    outstanding = Signal(range(READ_FIFO_DEPTH + 1))
    discard = Signal(range(READ_FIFO_DEPTH + 1))
    discard_r = Retimed(m, end_q, discard)
    req_addr = Signal(30)        # dword offset of the next read request
    req_count = Signal(16)       # read requests issued in this transaction
    load_addr = Signal(30)       # dword offset of the next word loaded onto AD
    cur_valid = Signal()         # the AD output holds the word of the current phase
    cur_corrupt = Signal()
    ad_cur = Signal(data_bits)   # the word on AD now
    loaded = {name: Retimed(m, load_q, value) for name, value in (
        ("load_addr", load_addr), ("cur_corrupt", cur_corrupt), ("ad_cur", ad_cur))}
    # Read responses: only the selected backend has requests outstanding.
    r_valid = Signal()
    r_data = Signal(data_bits)
    for backend in backends:
        with m.If(backend.r_valid):
            m.d.comb += [r_valid.eq(1), r_data.eq(backend.r_data)]
    read_avail = rfifo.nonempty | (r_valid & (discard == 0))
    return Prefetch(
        data_bits=data_bits, end_q=end_q, load_q=load_q, rfifo=rfifo,
        outstanding=outstanding, discard=discard, discard_r=discard_r, req_addr=req_addr,
        req_count=req_count, load_addr=load_addr, cur_valid=cur_valid,
        cur_corrupt=cur_corrupt, ad_cur=ad_cur, loaded=loaded, r_valid=r_valid,
        r_data=r_data, read_avail=read_avail)


class PostedWrites(NamedTuple):
    """The posted writes: ``wfifo`` (entries of ``layout``: backend ``sel``, DWORD
    ``addr``, ``data``, byte enables ``be``, a 64-bit phase ``x64``), and the write phase
    that moved at the previous edge: ``moved`` (``wr_moved``), its ``addr``, ``sel``,
    ``x64`` and its ``entry`` as sampled (``w_entry``)."""
    layout: data.StructLayout
    wfifo: RegisterFIFO
    moved: Signal
    addr: Signal
    sel: Signal
    x64: Signal
    entry: Signal


def posted_writes(m, data_bits, n_sel):
    """The :class:`PostedWrites` of ``data_bits`` words to ``n_sel`` backends."""
    wr_layout = data.StructLayout({"sel": range(n_sel), "addr": 30,
                                   "data": data_bits, "be": data_bits // 8, "x64": 1})
    wfifo = RegisterFIFO(m, "wfifo", wr_layout, WRITE_FIFO_DEPTH)
    wr_moved = Signal()          # a write phase moved at the previous edge
    wr_addr = Signal(30)
    wr_sel = Signal(range(n_sel))
    wr_x64 = Signal()
    w_entry = Signal(wr_layout)  # the write phase sampled at the previous edge
    return PostedWrites(layout=wr_layout, wfifo=wfifo, moved=wr_moved, addr=wr_addr,
                        sel=wr_sel, x64=wr_x64, entry=w_entry)


class ReadWord(NamedTuple):
    """The read word for the next phase (``head_word``: the FIFO head, or a word arriving
    now, in its lane), whether its parity is to be corrupted (``new_corrupt``), and
    ``corrupt_taken_q``: a corrupted word was loaded at the previous edge."""
    head_word: Signal
    new_corrupt: Value
    corrupt_taken_q: Signal


def read_word(m, knobs, prefetch, transaction, wide):
    """The :class:`ReadWord` of the ``prefetch`` for the running ``transaction``, with
    the exerciser's ``knobs``."""
    # (A word is never loaded in the claim's clock: the running transaction's values.)
    params = transaction.params
    lane_hi = prefetch.load_addr[0] & ~params.xfer64
    head = Mux(prefetch.rfifo.nonempty, prefetch.rfifo.head, prefetch.r_data)
    head_word = Signal(prefetch.data_bits)
    if wide:
        m.d.comb += head_word.eq(Cat(Mux(params.data64 & lane_hi, head[32:],
                                         head[:32]),
                                     head[32:]))
    else:
        m.d.comb += head_word.eq(head)
    corrupt_taken_q = Signal()
    # A one-shot corruption is disarmed a clock after the word that took it: skip the
    # word loaded in between.
    new_corrupt = params.exerciser & (knobs.corrupt | (knobs.corrupt_once & ~corrupt_taken_q))
    return ReadWord(head_word, new_corrupt, corrupt_taken_q)


def read_data_out(m, target, choice, claim, prefetch, word, effective, xfer64_n):
    """Read data onto AD, with its enable and its parity's corruption: ``choice`` (the
    :class:`~pcispy.core.target.decision.LiveChoice`) picks them; the word on AD is
    retimed on the ``prefetch``'s loads. ``xfer64_n``: ACK64# next (64-bit bus)."""
    bus = target.bus
    # The word (and its parity's corruption) leaves without the claim: AD's value then
    # waits for no address decode (only its enable does). In the claim's clock the
    # target drives AD for the first time and TRDY# cannot be asserted yet (no word is
    # loaded then), so the word does not count; the running transaction's decision
    # presents 0 in it (the target is idle before a claim).
    # The pads join AD's enable with the master's decision in cells with no input
    # left for the permission: the target applies it, in its slices' free input (to
    # the word as well, which is 0 wherever AD is not driven).
    drive_ad = choice.live_pick("drive_ad", gate=target.drive_allowed)
    ad_next = choice.live_pick("ad_presented", claimable=False, gate=target.drive_allowed)
    corrupt_next = choice.live_pick("corrupt", claimable=False)
    m.d.comb += [
        bus.ad.o.eq(ad_next[:32]), bus.ad.oe.eq(drive_ad),
        target.corrupt_par.eq(corrupt_next),
    ]
    if target.width == 64:
        m.d.comb += [
            bus.ad_hi.o.eq(ad_next[32:]),
            bus.ad_hi.oe.eq(drive_ad & xfer64_n),
            target.corrupt_par64.eq(corrupt_next),
        ]
    loaded = prefetch.loaded
    loaded["ad_cur"].update(word.head_word, prefetch.ad_cur)
    loaded["cur_corrupt"].update(word.new_corrupt, prefetch.cur_corrupt)
    # A load in the claim's clock advances the old offset (it cannot happen: nothing
    # was requested yet); otherwise the claim starts the offset.
    loaded["load_addr"].update(prefetch.load_addr + effective.step,
                               Mux(claim.claim, claim.offset, prefetch.load_addr))


class Requests(NamedTuple):
    """The backend request of this clock: ``taken`` (a backend took it) and
    ``w_direct`` (a write arriving at an empty buffer, going straight to its backend)."""
    taken: Value
    w_direct: Signal


def backend_requests(m, target, backends, claim, transaction, effective, prefetch,
                     posted):
    """Backend requests: posted writes drained first, then read requests; the read
    answers into the prefetch FIFO. Returns the :class:`Requests`."""
    knobs, params, e, p = target.knobs, transaction.params, effective, prefetch
    wfifo, wr_moved, w_entry = posted.wfifo, posted.moved, posted.entry
    rfifo, outstanding, discard = p.rfifo, p.outstanding, p.discard
    req_addr, req_count = p.req_addr, p.req_count
    # Read requests of the running transaction stop at its phase limit: one for a
    # single-phase one, the exerciser's disconnect point, else unlimited.
    read_phase_limit = Signal(16)
    m.d.comb += read_phase_limit.eq(Mux(params.single, 1, 0xFFFF))
    with m.If(params.exerciser & (knobs.disconnect_after != 0) & ~params.single):
        m.d.comb += read_phase_limit.eq(knobs.disconnect_after)
    # The first request leaves at the claim itself (e_*: the claim's values). At the
    # claim no request has been issued, every limit is at least 1 and the claimed
    # offset lies inside its window: a request is always left.
    e_req_addr = Mux(claim.claim, claim.offset, req_addr)
    e_req_count = Mux(claim.claim, 0, req_count)
    request_left = claim.claim | ((req_addr <= params.last) & (req_count < read_phase_limit))
    # No request while answers to an ended transaction are still due: they are told
    # apart from new answers only by their count, and two backends answering in the
    # same clock would merge into one (a word lost, the transaction hung).
    may_read = (e.active & e.params.read & ~transaction.backoff & ~e.params.retry
                & ~wfifo.nonempty & ~wr_moved
                & request_left & (discard == 0)
                & (rfifo.level + outstanding < READ_FIFO_DEPTH))
    # A write arriving at an empty buffer goes straight to the backend: a Command or
    # BAR write takes effect before the next transaction can be decoded.
    w_direct = Signal()
    m.d.comb += w_direct.eq(~wfifo.nonempty & wr_moved & ~transaction.read_only)
    w_head = Signal(posted.layout)
    m.d.comb += w_head.eq(Mux(wfifo.nonempty, wfifo.head, w_entry))
    req_valid = Signal()
    req_write = Signal()
    req_ready = Signal()
    req_dword = Signal(30)
    req_sel = Signal(range(len(backends)))
    m.d.comb += [req_write.eq(wfifo.nonempty | w_direct),
                 req_valid.eq(wfifo.nonempty | w_direct | may_read)]
    with m.If(wfifo.nonempty | w_direct):
        m.d.comb += [req_dword.eq(w_head.addr), req_sel.eq(w_head.sel)]
    with m.Else():
        m.d.comb += [req_dword.eq(e_req_addr), req_sel.eq(e.params.sel)]
    for sel, backend in enumerate(backends):
        bw = backend.w_data.shape().width
        word_addr = req_dword[1:] if bw == 64 else req_dword
        m.d.comb += [
            backend.addr.eq(word_addr), backend.write.eq(req_write),
            backend.valid.eq(req_valid & (req_sel == sel)),
        ]
        if bw == 64:
            # A 32-bit phase writes one lane; a 64-bit phase both.
            lane_be = Mux(w_head.x64, w_head.be,
                          Mux(w_head.addr[0], Cat(Const(0, 4), w_head.be[:4]),
                              Cat(w_head.be[:4], Const(0, 4))))
            m.d.comb += [backend.w_data.eq(Mux(w_head.x64, w_head.data,
                                               Cat(w_head.data[:32], w_head.data[:32]))),
                         backend.w_be.eq(lane_be)]
        else:
            m.d.comb += [backend.w_data.eq(w_head.data[:32]),
                         backend.w_be.eq(w_head.be[:4])]
        with m.If(req_sel == sel):
            m.d.comb += req_ready.eq(backend.ready)
    taken = req_valid & req_ready
    m.d.comb += wfifo.pop.eq(taken & req_write & wfifo.nonempty)
    read_taken = taken & ~req_write

    r_valid = p.r_valid
    keep = r_valid & (discard == 0)
    # Every answer kept enters the FIFO; one loaded onto AD in the same clock leaves it
    # again at once (the head's bypass), so the push never waits for the live IRDY#.
    m.d.comb += [rfifo.push.eq(keep), rfifo.w_data.eq(p.r_data)]
    m.d.pci += outstanding.eq(outstanding + read_taken - r_valid)
    # Everything in flight when a transaction ends is dropped: prefetched words nobody
    # asked for, including those still to come (the FIFO is flushed by end_q).
    p.discard_r.update(outstanding + read_taken - r_valid,
                       Mux(r_valid & (discard != 0), discard - 1, discard))

    with m.If(claim.claim):
        m.d.pci += [req_addr.eq(claim.offset), req_count.eq(0)]
    with m.If(read_taken):
        m.d.pci += [req_addr.eq(e_req_addr + e.step), req_count.eq(e_req_count + 1)]
    return Requests(taken, w_direct)


def write_data_and_parity(m, target, transaction, effective, posted, requests,
                          address_parity_bad):
    """Write data, sampled one clock after its phase and posted to the FIFO (unless the
    window drops writes), and its parity check (PERR#, Detected Parity Error, which
    ``address_parity_bad`` joins)."""
    bus, e = target.bus, effective
    wfifo, wr_moved, w_entry = posted.wfifo, posted.moved, posted.entry
    wr_addr, wr_sel, wr_x64 = posted.addr, posted.sel, posted.x64
    wide = target.width == 64
    m.d.pci += [wr_addr.eq(e.addr), wr_sel.eq(e.params.sel), wr_x64.eq(e.params.xfer64)]
    be = Cat(~bus.cbe.i, ~bus.cbe_hi.i) if wide else ~bus.cbe.i
    wdata = Cat(bus.ad.i, bus.ad_hi.i) if wide else bus.ad.i
    m.d.comb += [
        w_entry.sel.eq(wr_sel), w_entry.addr.eq(wr_addr), w_entry.data.eq(wdata),
        w_entry.be.eq(be), w_entry.x64.eq(wr_x64),
        wfifo.w_data.eq(w_entry),
        wfifo.push.eq(wr_moved & ~transaction.read_only
                      & ~(requests.w_direct & requests.taken)),
    ]

    # Data parity of our write phases: PAR of the phase is on the pins now. PERR# goes
    # out at once (its I/O flip-flop); the Status pulse leaves registered.
    write_par_bad = target.par_error | (target.par64_error & wr_x64 if wide else 0)
    write_parity_bad = Signal()
    perr_n = Signal()
    m.d.comb += [write_parity_bad.eq(wr_moved & write_par_bad),
                 perr_n.eq(write_parity_bad & target.parity_response)]
    m.d.comb += [bus.perr.o.eq(perr_n), bus.perr.oe.eq(perr_n)]
    m.d.pci += target.detected_parity.eq(address_parity_bad | write_parity_bad)
