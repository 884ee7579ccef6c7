# SPDX-License-Identifier: BSD-2-Clause
"""The two queues of one direction of the simulated PCI-to-PCI bridge
(:mod:`pcispy.sim.bfm.bridge`): the posted-write buffer and the delayed transaction.

Written from the PCI-to-PCI Bridge Architecture Specification (rev. 1.1, chapter 5,
"Transaction Ordering", and chapter 4's delayed transactions), not from any bridge's
design:

- A **posted write** (Memory Write, Memory Write and Invalidate) is complete for its
  master as soon as the bridge has taken its data; the bridge keeps the words, in order,
  and writes them on the other bus later. The buffer keeps each posted transaction as a
  *segment* (its first DWORD address and the words of it that are here), so that the
  other side writes each one at its own addresses, in the order they arrived.
- A **delayed transaction** (every read, I/O and configuration write) is latched by the
  bridge, which answers its master with Retry; the other side runs it; when the master
  repeats the same transaction the bridge completes it from what the other side got. One
  delayed transaction per direction at a time: another master's request is retried
  until the slot is free (a bridge may always retry for lack of room).
"""

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import enum, memory, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PostedWriteBuffer", "DelayedTransaction", "DelayedState", "DelayedStatus",
           "POSTED_WORDS", "POSTED_SEGMENTS", "READ_WORDS", "COUNT_BITS"]

#: DWORDs the posted-write buffer of one direction holds (the 21554's 256 bytes).
POSTED_WORDS = 64
#: Posted transactions (segments) the buffer keeps apart at once.
POSTED_SEGMENTS = 8
#: DWORDs one delayed read may bring back (the 21554's 256-byte read buffers).
READ_WORDS = 64
#: Bits of the running counts of posted words taken and written (the ordering fences
#: compare them modulo 2**COUNT_BITS).
COUNT_BITS = 16


class PostedWriteBuffer(wiring.Component):
    """The posted writes of one direction, in order, as segments of consecutive DWORDs.

    Write side (the target half that accepts posted writes):
        w_en (In, 1): take ``w_data``/``w_be`` at this clock edge.
        w_new (In, 1): with ``w_en``: the word is the first of a new segment at DWORD
            address ``w_addr`` (the segment before, if still open, closes).
        w_addr (In, 30): DWORD address of a new segment's first word.
        w_data (In, 32), w_be (In, 4): the word and its C/BE# (pin level).
        w_close (In, 1): the open segment's transaction has ended (no more words come).
        space (Out, range(words + 1)): words free.
        seg_space (Out, 1): a new segment may be opened.

    Read side (the master half that writes them on the other bus):
        head_valid (Out, 1): the oldest segment has a word here.
        head_addr (Out, 30): DWORD address of its next word.
        head_count (Out, range(words + 1)): its words here now.
        head_closed (Out, 1): its transaction has ended (no more words come to it).
        head_data (Out, 32), head_be (Out, 4): its next word.
        pop (In, 1): that word is written: drop it (the segment's address moves on).

    Counts, for the ordering rules:
        enq (Out, COUNT_BITS), deq (Out, COUNT_BITS): words taken and popped since reset,
            modulo ``2**COUNT_BITS``.
        empty (Out, 1): no word held.

    A segment is opened only with its first word, so none is ever empty but one whose
    words were all written while its transaction was still going on: closing that one
    drops it.

    Parameters:
        words: depth in DWORDs (a power of two).
        segments: segments kept at once (a power of two).
    """

    def __init__(self, words=POSTED_WORDS, segments=POSTED_SEGMENTS):
        for name, value in (("words", words), ("segments", segments)):
            if value & (value - 1) or value < 2:
                raise ValueError(f"{name} must be a power of two, not {value}")
        self.words = words
        self.segments = segments
        super().__init__({
            "w_en": In(1), "w_new": In(1), "w_addr": In(30), "w_data": In(32), "w_be": In(4),
            "w_close": In(1), "space": Out(range(words + 1)), "seg_space": Out(1),
            "head_valid": Out(1), "head_addr": Out(30), "head_count": Out(range(words + 1)),
            "head_closed": Out(1), "head_data": Out(32), "head_be": Out(4), "pop": In(1),
            "enq": Out(COUNT_BITS), "deq": Out(COUNT_BITS), "empty": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        words, segments = self.words, self.segments
        m.submodules.store = store = memory.Memory(shape=36, depth=words, init=[])
        wr = store.write_port()
        rd = store.read_port(domain="comb")
        w_ptr = Signal(range(words))
        r_ptr = Signal(range(words))
        level = Signal(range(words + 1))
        m.d.comb += [
            wr.addr.eq(w_ptr), wr.data.eq(self.w_data | (self.w_be << 32)), wr.en.eq(self.w_en),
            rd.addr.eq(r_ptr),
            self.head_data.eq(rd.data[:32]), self.head_be.eq(rd.data[32:36]),
            self.space.eq(words - level), self.empty.eq(level == 0),
        ]
        with m.If(self.w_en):
            m.d.sync += [w_ptr.eq(w_ptr + 1), self.enq.eq(self.enq + 1)]
        with m.If(self.pop):
            m.d.sync += [r_ptr.eq(r_ptr + 1), self.deq.eq(self.deq + 1)]
        m.d.sync += level.eq(level + self.w_en - self.pop)

        # The segment table: a ring of (address, words here, closed).
        seg_addr = Array(Signal(30, name=f"seg_addr{i}") for i in range(segments))
        seg_count = Array(Signal(range(words + 1), name=f"seg_count{i}")
                          for i in range(segments))
        seg_closed = Array(Signal(name=f"seg_closed{i}") for i in range(segments))
        head = Signal(range(segments))
        tail = Signal(range(segments))       # the next free entry
        held = Signal(range(segments + 1))   # segments in the ring
        is_open = Signal()                   # the entry before ``tail`` takes words
        last = Signal(range(segments))
        m.d.comb += [
            last.eq(tail - 1),
            self.seg_space.eq(held != segments),
            self.head_valid.eq((held != 0) & (seg_count[head] != 0)),
            self.head_addr.eq(seg_addr[head]),
            self.head_count.eq(seg_count[head]),
            self.head_closed.eq(seg_closed[head] | (is_open == 0) | (head != last)),
        ]

        new = self.w_en & self.w_new
        add_to_last = self.w_en & ~self.w_new
        # The head loses its word; it goes when it is empty and its transaction is over.
        head_count_next = Signal(range(words + 1))
        head_closes = Signal()
        m.d.comb += [
            head_count_next.eq(seg_count[head] - self.pop
                               + (add_to_last & (head == last) & is_open)),
            head_closes.eq(~is_open | (head != last) | new | self.w_close),
        ]
        drop = Signal()
        m.d.comb += drop.eq((held != 0) & (head_count_next == 0) & head_closes)

        with m.If(self.pop):
            m.d.sync += seg_addr[head].eq(seg_addr[head] + 1)
        # Words counted into the last segment (which may be the head).
        with m.If(add_to_last & is_open):
            with m.If(head != last):
                m.d.sync += seg_count[last].eq(seg_count[last] + 1)
        with m.If(self.pop | (add_to_last & is_open & (head == last))):
            m.d.sync += seg_count[head].eq(head_count_next)
        with m.If(self.w_close & is_open & ~new):
            m.d.sync += [seg_closed[last].eq(1), is_open.eq(0)]
        with m.If(new):
            # A one-word transaction opens and closes its segment in the same clock.
            m.d.sync += [seg_addr[tail].eq(self.w_addr), seg_count[tail].eq(1),
                         seg_closed[tail].eq(self.w_close), tail.eq(tail + 1),
                         is_open.eq(~self.w_close)]
            with m.If(is_open):
                m.d.sync += seg_closed[last].eq(1)
        with m.If(drop):
            m.d.sync += head.eq(head + 1)
        m.d.sync += held.eq(held + new - drop)
        return m


class DelayedState(enum.Enum, shape=2):
    """Where the delayed transaction of one direction is."""
    FREE = 0      # no transaction latched
    QUEUED = 1    # latched; the other side has not run it yet
    RUNNING = 2   # the other side's master runs it
    DONE = 3      # run; the completion waits for its master to repeat the request


class DelayedStatus(enum.Enum, shape=2):
    """How the other side's run of a delayed transaction ended."""
    OK = 0
    MASTER_ABORT = 1   # reads complete with all ones, writes complete (master abort mode 0)
    TARGET_ABORT = 2   # the repeat is answered with Target-Abort


class DelayedTransaction(wiring.Component):
    """The delayed transaction of one direction: the request as its master gave it, the
    request as the other bus runs it, and the completion (status, read data).

    Request side (the target half where the master is):
        latch (In, 1): take ``l_cmd``/``l_addr``/``l_fwd_addr``/``l_be``/``l_data``/
            ``l_words`` (state FREE -> QUEUED).
        l_cmd (In, 4), l_addr (In, 32), l_be (In, 4), l_data (In, 32): the request as its
            master gave it (command, address, first data phase's C/BE#, write data).
        l_fwd_addr (In, 32): the address the other bus runs it at (a Type 1 configuration
            address becomes Type 0 there), l_fwd_cmd (In, 4): its command there.
        l_words (In, range(READ_WORDS + 1)): DWORDs to read there (1 for writes).
        release (In, 1): the completion was given, or discarded (-> FREE).
        state (Out, DelayedState), cmd, addr, be, data: the latched request.
        status (Out, DelayedStatus), words (Out, range(READ_WORDS + 1)): the completion.
        fence (Out, COUNT_BITS): posted words of the completion's direction taken before
            the request completed on the other bus (the completion waits for them).
        r_index (In, range(READ_WORDS)), r_data (Out, 32): read data, combinational.

    Run side (the master half of the other bus):
        fwd_addr (Out, 32), fwd_cmd (Out, 4), fetch (Out, range(READ_WORDS + 1)): what to
            run.
        start (In, 1): the run begins (QUEUED -> RUNNING).
        w_en (In, 1), w_index (In, range(READ_WORDS)), w_data (In, 32): a word read there.
        finish (In, 1), f_status (In, DelayedStatus), f_words (In, range(READ_WORDS + 1)):
            the run is over (RUNNING -> DONE); f_fence (In, COUNT_BITS): the fence.

    Clocks:
        age (Out, 16): clocks in the current state (saturating), for the crossing delays
            and the discard timer.
    """

    def __init__(self):
        words = range(READ_WORDS + 1)
        super().__init__({
            "latch": In(1), "l_cmd": In(4), "l_addr": In(32), "l_be": In(4), "l_data": In(32),
            "l_fwd_addr": In(32), "l_fwd_cmd": In(4), "l_words": In(words),
            "release": In(1),
            "state": Out(DelayedState), "cmd": Out(4), "addr": Out(32), "be": Out(4),
            "data": Out(32), "status": Out(DelayedStatus), "words": Out(words),
            "fence": Out(COUNT_BITS),
            "r_index": In(range(READ_WORDS)), "r_data": Out(32),
            "fwd_addr": Out(32), "fwd_cmd": Out(4), "fetch": Out(words),
            "start": In(1), "w_en": In(1), "w_index": In(range(READ_WORDS)), "w_data": In(32),
            "finish": In(1), "f_status": In(DelayedStatus), "f_words": In(words),
            "f_fence": In(COUNT_BITS),
            "age": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.buffer = buffer = memory.Memory(shape=32, depth=READ_WORDS, init=[])
        wr = buffer.write_port()
        rd = buffer.read_port(domain="comb")
        m.d.comb += [wr.addr.eq(self.w_index), wr.data.eq(self.w_data), wr.en.eq(self.w_en),
                     rd.addr.eq(self.r_index), self.r_data.eq(rd.data)]
        moves = Signal()
        with m.Switch(self.state):
            with m.Case(DelayedState.FREE):
                with m.If(self.latch):
                    m.d.comb += moves.eq(1)
                    m.d.sync += [self.state.eq(DelayedState.QUEUED), self.cmd.eq(self.l_cmd),
                                 self.addr.eq(self.l_addr), self.be.eq(self.l_be),
                                 self.data.eq(self.l_data), self.fwd_addr.eq(self.l_fwd_addr),
                                 self.fwd_cmd.eq(self.l_fwd_cmd), self.fetch.eq(self.l_words),
                                 self.status.eq(DelayedStatus.OK), self.words.eq(0)]
            with m.Case(DelayedState.QUEUED):
                with m.If(self.start):
                    m.d.comb += moves.eq(1)
                    m.d.sync += self.state.eq(DelayedState.RUNNING)
            with m.Case(DelayedState.RUNNING):
                with m.If(self.finish):
                    m.d.comb += moves.eq(1)
                    m.d.sync += [self.state.eq(DelayedState.DONE),
                                 self.status.eq(self.f_status), self.words.eq(self.f_words),
                                 self.fence.eq(self.f_fence)]
            with m.Case(DelayedState.DONE):
                with m.If(self.release):
                    m.d.comb += moves.eq(1)
                    m.d.sync += self.state.eq(DelayedState.FREE)
        m.d.sync += self.age.eq(Mux(moves, 0, Mux(self.age == 0xFFFF, self.age, self.age + 1)))
        return m
