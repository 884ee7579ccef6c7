# SPDX-License-Identifier: BSD-2-Clause
"""Arming, triggering and the choice of what goes into trace memory (the recorder).

A capture is armed, keeps a ring of *pre-trigger* records, triggers, then keeps *post-
trigger* records until it stops:

- trigger sources (:class:`~.format.TriggerSource`): at once, the first transaction the
  filters select (at its address phase), a write to the trigger register, a protocol
  violation among the enabled rules, the chosen edge on the trigger input pin
  (:class:`TriggerInput`);
- ``pre``: pre-trigger records kept (less than the capacity, else the arm is refused and
  ``pre_error`` says so); ``post``: stop after that many post-trigger records (0: no
  limit); without ``ring`` the capture also stops when memory is full (pre + post records
  fill the capacity); with ``ring`` it overwrites the oldest records until ``stop`` or
  ``post``;
- the trigger record is the raw record of the trigger clock (its ``trigger`` bit set) in raw
  mode, a TRIGGER event in summary mode;
- ``segments`` (``2**segments_log2``, at most :data:`MAX_SEGMENTS`; not with ``ring``): the
  memory is split into that many equal segments of ``capacity >> segments_log2`` records.
  Each holds its own ``pre`` pre-trigger records (a ring inside the segment) and its
  post-trigger records until the segment is full or ``post`` is reached; then the recorder
  re-arms by itself in the next segment (the trigger fires again from the next clock on).
  It stops when the last segment is full, or at ``stop``. Each segment that ends (full or
  stopped) leaves its ``start``, ``count``, ``trigger_index`` and ``trigger_timestamp`` in a
  :class:`SegmentTable` entry; the ``start``/``count``/``trigger_*`` outputs always show the
  current segment. One segment is the plain capture above.

Markers (``markers``): each chosen edge of the trigger input while the capture runs is
stored: in summary mode as a MARKER event with the timestamp of the clock it was seen in
(edges that come while one waits for a free slot merge into it, counted in ``edges``); in
raw mode as the ``marker`` bit of that clock's raw record, or, when that clock is not
stored (idle compression, ``raw_select``), as a MARKER event in its place.

The trigger output (:class:`TriggerOutput`) follows ``fired``: a pulse of fixed width per
trigger (each segment's trigger pulses), or a level while a trigger is being recorded.

Records are numbered in push order modulo the capacity ``C`` (memory slots / slots per
record); the writer FIFO keeps that order, so record ``i`` lands at slot ``i * slots``.
After a capture, ``count`` records from index ``start`` (wrapping) are valid.

Nothing is lost silently: when the writer FIFO is full, records are dropped and counted until
the FIFO is half empty again; then an OVERRUN event carrying the count is written (the record
of that clock, if any, is counted in it too), and ``lost`` totals every dropped record.
In raw mode, with idle compression, a WRAP event is written when the delta to the previous
record would overflow. In summary mode, protocol violations are written as VIOLATION
events (violations of consecutive clocks merge into one while it waits for a free slot).
"""

import math

from amaranth.hdl import Cat, Module, ResetInserter, Signal, Mux
from amaranth.lib import data, fifo, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pcispy.spy.format import (RawRecord, SummaryRecord, TriggerEvent, OverrunEvent, WrapEvent,
                               ViolationEvent, MarkerEvent, RecordKind, TriggerSource,
                               CaptureMode, MAX_DELTA, MAX_RULES, TIMESTAMP_BITS,
                               SUMMARY_RECORD_BITS)
from pcispy.spy.registers import (MAX_SEGMENTS, MAX_SEGMENTS_LOG2, SEGMENTS_LOG2_BITS,
                                  TRIGGER_PULSE_NS, RecorderState)
from pcispy.spy.summary import saturating_increment

__all__ = ["RecorderState", "Recorder", "TriggerInput", "TriggerOutput", "SegmentEntry",
           "SegmentTable", "PushRequest", "PushStage", "RecordPlacement", "MAX_SEGMENTS_LOG2",
           "MAX_SEGMENTS", "SEGMENTS_LOG2_BITS", "TRIGGER_PULSE_NS", "trigger_pulse_clocks"]

def trigger_pulse_clocks(clock_mhz):
    """Clocks of the trigger output's pulse at ``clock_mhz`` (at least
    :data:`TRIGGER_PULSE_NS`): 33 at 33 MHz, 66 at 66 MHz."""
    return max(1, math.ceil(TRIGGER_PULSE_NS * clock_mhz / 1000 - 1e-9))


class TriggerInput(wiring.Component):
    """The trigger input pin: synchronised (two flip-flops: the pin is asynchronous to the
    clock), then edge-detected.

    Ports:
        pin (In, 1): the pin, in any clock domain or none.
        falling (In, 1): 0: rising edges count, 1: falling edges.
        level (Out, 1): the pin's synchronised level.
        edge (Out, 1): the chosen edge was seen: high for one clock, the third clock edge
            after the pin changed before a clock edge (two synchroniser stages, then the
            comparison with the level before).
    """
    def __init__(self):
        super().__init__({"pin": In(1), "falling": In(1), "level": Out(1), "edge": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.sync = FFSynchronizer(self.pin, self.level, stages=2)
        before = Signal()
        m.d.sync += before.eq(self.level)
        m.d.comb += self.edge.eq(Mux(self.falling, before & ~self.level,
                                     ~before & self.level))
        return m


class TriggerOutput(wiring.Component):
    """The trigger output pin, from a register (no glitch between clocks).

    ``fire`` and ``hold`` wait a clock in registers of their own before the pin's logic:
    the recorder's trigger decision and the pin's flip-flop (at the pin, anywhere on the
    die) are too far apart for one clock of a 66 MHz bus. The pin rises :attr:`DELAY`
    clocks after ``fire``.

    Ports:
        fire (In, 1): the trigger fires this clock.
        level (In, 1): 0: a pulse of ``pulse_clocks`` clocks from :attr:`DELAY` clocks
            after ``fire`` (a trigger during a pulse restarts it); 1: high from then for as
            long as ``hold`` (seen as late as ``fire``).
        hold (In, 1): a trigger is being recorded (until its segment or the capture ends).
        pin (Out, 1).

    Parameters:
        pulse_clocks: the pulse width in clocks (:func:`trigger_pulse_clocks`).
    """
    #: Clocks from ``fire`` to the pin's rise.
    DELAY = 2

    def __init__(self, pulse_clocks):
        if pulse_clocks < 1:
            raise ValueError(f"the trigger pulse needs at least one clock, not {pulse_clocks}")
        self.pulse_clocks = pulse_clocks
        super().__init__({"fire": In(1), "level": In(1), "hold": In(1), "pin": Out(1)})

    def elaborate(self, platform):
        m = Module()
        fire, hold = Signal(), Signal()
        m.d.sync += [fire.eq(self.fire), hold.eq(self.hold)]
        left = Signal(range(self.pulse_clocks))     # pulse clocks left after the next
        with m.If(fire):
            m.d.sync += left.eq(self.pulse_clocks - 1)
        with m.Elif(left != 0):
            m.d.sync += left.eq(left - 1)
        m.d.sync += self.pin.eq(fire | Mux(self.level, hold, left != 0))
        return m


class SegmentEntry(data.StructLayout):
    """Where one segment of a capture is: ``count`` records from index ``start`` (wrapping
    inside the segment), its trigger record's index and the trigger's timestamp (0: it did
    not trigger)."""
    def __init__(self):
        super().__init__({"start": 32, "count": 32, "trigger_index": 32,
                          "trigger_timestamp": TIMESTAMP_BITS})


class SegmentTable(wiring.Component):
    """The :class:`SegmentEntry` of every segment that ended, for the host to read (a small
    block RAM of :data:`MAX_SEGMENTS` entries).

    Ports:
        write (In, 1), index (In, range(MAX_SEGMENTS)), entry (In, SegmentEntry): store
            ``entry`` as segment ``index``'s.
        select (In, range(MAX_SEGMENTS)), shown (Out, SegmentEntry): the entry of segment
            ``select``, two clocks after it (the block RAM's output is registered: the
            register bank's read multiplexer follows it).
    """
    def __init__(self):
        super().__init__({"write": In(1), "index": In(range(MAX_SEGMENTS)),
                          "entry": In(SegmentEntry()),
                          "select": In(range(MAX_SEGMENTS)), "shown": Out(SegmentEntry())})

    def elaborate(self, platform):
        m = Module()
        m.submodules.memory = memory = Memory(shape=SegmentEntry(), depth=MAX_SEGMENTS,
                                              init=[])
        w = memory.write_port()
        r = memory.read_port()
        m.d.comb += [w.en.eq(self.write), w.addr.eq(self.index), w.data.eq(self.entry),
                     r.addr.eq(self.select)]
        m.d.sync += self.shown.eq(r.data)
        return m


class PushRequest(data.StructLayout):
    """What the recorder gives the trace writer (and :class:`RecordPlacement`) in a clock:
    ``push`` a record (``data``, at record index ``index``), ``restart`` the writer (empty
    its FIFO, write from slot 0 again), records are ``wide`` (two slots, summary mode)."""
    def __init__(self, addr_bits):
        super().__init__({"restart": 1, "wide": 1, "push": 1, "data": SUMMARY_RECORD_BITS,
                          "index": addr_bits})


class PushStage(wiring.Component):
    """A register between the recorder's choice of a record and the writer's FIFO.

    The choice (which record, if any, this clock) follows the summary, the FIFO's level
    and the capture's counts; the FIFO's write of a 256-bit record and its pointers follow
    the choice. In one clock they are too much logic and wire for a 66 MHz bus, so the
    writer and :class:`RecordPlacement` take every request one clock late, all of it
    (``restart`` and ``wide`` too), and see the same sequence as without the stage.

    The recorder sees the records held here and in the FIFO, counted in a register of
    the stage's own: each request's push adds one, each record the writer takes from the
    FIFO takes one away (from the next clock: a record the writer takes this clock still
    counts in it), and a held ``restart`` empties it. ``can_push`` is that count below the
    depth, ``drained`` at most half the depth. The count is the FIFO's level one clock
    behind its reads, never less, so a record the recorder pushes always finds room a clock
    later; counting the writer's read of this clock would put the trace memory's ready
    signal, from wherever its pins are, into the recorder's decision.

    Ports:
        request (In, PushRequest(addr_bits)): from the recorder.
        staged (Out, PushRequest(addr_bits)): ``request`` of the previous clock, to the
            writer and the placement.
        fifo_pop (In, 1): the writer reads a record from its FIFO this clock.
        can_push (Out, 1), drained (Out, 1): to the recorder.
        empty (Out, 1): no record is held here.

    Parameters:
        addr_bits: log2 of the memory depth in slots. fifo_depth: the writer's FIFO depth.
    """
    def __init__(self, addr_bits=10, fifo_depth=16):
        self.fifo_depth = fifo_depth
        super().__init__({"request": In(PushRequest(addr_bits)),
                          "staged": Out(PushRequest(addr_bits)),
                          "fifo_pop": In(1), "can_push": Out(1), "drained": Out(1),
                          "empty": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.staged.eq(self.request)
        held = Signal(range(self.fifo_depth + 1))     # records here and in the FIFO
        taken = Signal()
        m.d.comb += taken.eq(self.fifo_pop & ~self.staged.restart)
        m.d.sync += held.eq(Mux(self.request.restart, 0,
                                held + self.request.push - taken))
        m.d.comb += [
            self.can_push.eq(held < self.fifo_depth),
            self.drained.eq(held <= self.fifo_depth // 2),
            self.empty.eq(~self.staged.push),
        ]
        return m


class RecordPlacement(wiring.Component):
    """Puts each record at the index the recorder gave it. The trace writer
    (:class:`~.tracemem.TraceWriter`) writes records in push order at consecutive slots; a
    segmented capture wraps inside a segment and jumps to the next one's base, so the
    index of every record pushed waits here, in a FIFO that takes and gives records
    exactly as the writer's does, and replaces the writer's slot address. With one
    segment the index is the push count modulo the capacity: the writer's own address.

    Ports:
        restart (In, 1), wide (In, 1), push (In, 1): as the writer's.
        index (In, addr_bits): the record index of the record pushed this clock.
        pointer (In, addr_bits), w_en (In, 1), w_ready (In, 1): the writer's slot address
            and write handshake to the memory.
        w_addr (Out, addr_bits): the slot the memory writes instead of ``pointer``.

    Parameters:
        addr_bits: log2 of the memory depth in slots. fifo_depth: the writer's FIFO depth.
    """
    def __init__(self, addr_bits=10, fifo_depth=16):
        self.addr_bits = addr_bits
        self.fifo_depth = fifo_depth
        super().__init__({"restart": In(1), "wide": In(1), "push": In(1),
                          "index": In(addr_bits), "pointer": In(addr_bits), "w_en": In(1),
                          "w_ready": In(1), "w_addr": Out(addr_bits)})

    def elaborate(self, platform):
        m = Module()
        # The same FIFO as the writer's, pushed and popped in the same clocks: its head is
        # the index of the record the writer is writing.
        queue = fifo.SyncFIFOBuffered(width=self.addr_bits, depth=self.fifo_depth)
        m.submodules.queue = ResetInserter(self.restart)(queue)
        # A wide record's slots are an even slot and the next (restart writes from slot 0).
        second = Signal()
        m.d.comb += second.eq(self.wide & self.pointer[0])
        m.d.comb += [
            queue.w_en.eq(self.push), queue.w_data.eq(self.index),
            queue.r_en.eq(self.w_en & self.w_ready & (~self.wide | second)),
            self.w_addr.eq(Mux(self.wide, Cat(second, queue.r_data), queue.r_data)),
        ]
        return m


class Recorder(wiring.Component):
    """Decides, clock by clock, which record is pushed into the trace writer.

    Ports:
        mode (In, CaptureMode), source (In, TriggerSource), ring (In, 1), pre (In, 32),
            post (In, 32), markers (In, 1), falling (In, 1), segments_log2 (In, 3): the
            capture settings, taken at ``arm`` (``falling``: which edge of the trigger
            input ``external`` is, recorded in MARKER events).
        arm (In, 1), stop (In, 1), trigger (In, 1): strobes (``trigger``: the register).
        external (In, 1): the trigger input's chosen edge was seen this clock
            (:class:`TriggerInput`).
        timestamp (In, 48): the free-running clock counter. A raw record's time is the
            ``timestamp`` of the clock before its own (the raw capture is one clock late:
            it waits for the filter verdict of a dual address cycle).
        filter_trigger (In, 1): a transaction the filters select starts (address phase).
        violation (In, 64): protocol rules that fired this clock (masked by the caller).
        raw_valid (In, 1), raw_record (In, RawRecord(width, masters)): from the capture,
            one clock after the bus clock it records.
        summary_valid (In, 1), summary_record (In, SummaryRecord), summary_match (In, 1).
        fire (Out, 1): the trigger fires this clock in raw mode (the raw capture marks the
            record of this clock, which arrives on the next).
        fired (Out, 1): the trigger fires this clock (either mode).
        recording (Out, 1): a trigger is being recorded (from the clock after ``fired``
            until its segment or the capture ends).
        push (Out, 1), push_data (Out, 256), restart (Out, 1), wide (Out, 1): to the writer.
        push_index (Out, addr_bits): the index of the record pushed (to
            :class:`RecordPlacement`).
        can_push (In, 1), drained (In, 1): from the writer (:class:`PushStage`): room for a
            record, and at most half the FIFO is full.
        state (Out, RecorderState), pre_error (Out, 1): last arm refused (``pre`` not less
            than a segment's records).
        segment_error (Out, 1): last arm refused for its segments (``segments_log2`` over
            :data:`MAX_SEGMENTS_LOG2`, segments of no record, or segments with ``ring``).
        capacity (Out, 32), start (Out, 32), count (Out, 32): the valid records (of the
            current segment).
        trigger_index (Out, 32), trigger_timestamp (Out, 48): where and when it triggered
            (the current segment; the timestamp is 0 until it does).
        segment (Out, range(MAX_SEGMENTS)): the current segment.
        segment_end (Out, 1): the current segment ends this clock (full, or stopped):
            ``start`` ... ``trigger_timestamp`` are its final values (for the
            :class:`SegmentTable`).
        lost (Out, 32): records dropped since arm (saturating).
        overruns (Out, 32): OVERRUN events written since arm.

    Parameters:
        width, masters: the bus. addr_bits: log2 of the trace memory depth in slots.
    """
    def __init__(self, width=32, masters=1, addr_bits=10):
        self.width = width
        self.masters = masters
        self.addr_bits = addr_bits
        super().__init__({
            "mode": In(CaptureMode), "source": In(TriggerSource), "ring": In(1),
            "pre": In(32), "post": In(32), "markers": In(1), "falling": In(1),
            "segments_log2": In(SEGMENTS_LOG2_BITS),
            "arm": In(1), "stop": In(1), "trigger": In(1), "external": In(1),
            "timestamp": In(TIMESTAMP_BITS),
            "filter_trigger": In(1), "violation": In(MAX_RULES),
            "raw_valid": In(1), "raw_record": In(RawRecord(width, masters)),
            "summary_valid": In(1), "summary_record": In(SummaryRecord()),
            "summary_match": In(1),
            "fire": Out(1), "fired": Out(1), "recording": Out(1),
            "push": Out(1), "push_data": Out(SUMMARY_RECORD_BITS), "restart": Out(1),
            "push_index": Out(addr_bits),
            "wide": Out(1),
            "can_push": In(1), "drained": In(1),
            "state": Out(RecorderState), "pre_error": Out(1), "segment_error": Out(1),
            "capacity": Out(32), "start": Out(32), "count": Out(32),
            "trigger_index": Out(32), "trigger_timestamp": Out(TIMESTAMP_BITS),
            "segment": Out(range(MAX_SEGMENTS)), "segment_end": Out(1),
            "lost": Out(32), "overruns": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        depth = 1 << self.addr_bits
        # Raw records and the events between them share the raw records' time base.
        now = Signal(TIMESTAMP_BITS)
        raw_timestamp = Signal(TIMESTAMP_BITS)
        m.d.sync += raw_timestamp.eq(self.timestamp)
        state = self.state

        # Settings are taken at arm, so a capture is not changed under its feet.
        mode = Signal(CaptureMode)
        source = Signal(TriggerSource)
        ring = Signal()
        pre = Signal(32)
        post = Signal(32)
        markers = Signal()
        falling = Signal()
        segments_log2 = Signal(SEGMENTS_LOG2_BITS)
        wide = Signal()
        m.d.comb += [wide.eq(mode == CaptureMode.SUMMARY), self.wide.eq(wide),
                     now.eq(Mux(wide, self.timestamp, raw_timestamp))]
        capacity = Signal(32)
        m.d.comb += [capacity.eq(Mux(wide, depth >> 1, depth)), self.capacity.eq(capacity)]
        index_mask = Signal(self.addr_bits)
        m.d.comb += index_mask.eq(capacity - 1)
        # A segment is a power-of-two run of indices: its base has the low bits clear.
        # Both are set at arm (a shift by the setting there, not in the push decisions).
        seg_capacity = Signal(32, init=depth)
        seg_mask = Signal(self.addr_bits, init=depth - 1)
        last_segment = Signal()
        m.d.comb += last_segment.eq(self.segment == (1 << segments_log2) - 1)

        head = Signal(self.addr_bits)       # index of the next record pushed
        m.d.comb += self.push_index.eq(head)
        pushed_pre = Signal(32)
        pushed_post = Signal(32)
        triggered = Signal()
        last_ts = Signal(TIMESTAMP_BITS)
        dropping = Signal()
        lost_run = Signal(32)               # dropped since the last OVERRUN event
        trig_pending = Signal()
        trig_ts = Signal(TIMESTAMP_BITS)
        trig_source = Signal(TriggerSource)
        viol_pending = Signal()
        viol_rules = Signal(MAX_RULES)
        viol_ts = Signal(TIMESTAMP_BITS)
        viol_clocks = Signal(8)
        mark_pending = Signal()             # summary mode: a MARKER event waits
        mark_ts = Signal(TIMESTAMP_BITS)
        mark_edges = Signal(8)
        raw_mark = Signal()                 # raw mode: the edge of the raw record's clock

        capturing = Signal()
        m.d.comb += capturing.eq((state == RecorderState.PRE) | (state == RecorderState.POST))

        # --- the trigger
        cause = Signal()
        with m.Switch(source):
            with m.Case(TriggerSource.IMMEDIATE):
                m.d.comb += cause.eq(1)
            with m.Case(TriggerSource.FILTER):
                m.d.comb += cause.eq(self.filter_trigger)
            with m.Case(TriggerSource.REGISTER):
                m.d.comb += cause.eq(self.trigger)
            with m.Case(TriggerSource.VIOLATION):
                m.d.comb += cause.eq(self.violation.any())
            with m.Case(TriggerSource.EXTERNAL):
                m.d.comb += cause.eq(self.external)
        fire = Signal()
        m.d.comb += fire.eq((state == RecorderState.PRE) & ~trig_pending & ~self.arm & cause)
        m.d.comb += [self.fire.eq(fire & ~wide), self.fired.eq(fire),
                     self.recording.eq((state == RecorderState.POST) | trig_pending)]
        # Raw mode: the marked record arrives one clock after the trigger; it starts POST.
        raw_trigger = Signal()
        m.d.sync += raw_trigger.eq(fire & ~wide)

        # --- how many records are kept
        # Before the trigger every record pushed is kept, up to the segment's capacity
        # (``ring_kept``); after it, the first ``pre`` of them and every later one, up to
        # the capacity too (``kept``). Both are counters that stop at the capacity, moved
        # by the pushes, rather than sums and minimums of the push counts: those were three
        # carry chains in series between the counts and the segment table, too long for a
        # 66 MHz bus. ``pre_room`` says a pre-trigger push is still among the first ``pre``.
        ring_kept = Signal(33)
        kept = Signal(33)
        pre_room = Signal()
        pre_last = Signal(32)               # pre - 1, set at arm
        segment_filled = Signal()           # kept == seg_capacity
        post_push = Signal()                # the push of this clock counts as post-trigger
        bump = Signal()                     # and adds one to kept
        m.d.comb += bump.eq(self.push & (post_push | pre_room) & ~segment_filled)
        with m.If(self.push & ~post_push):
            m.d.sync += pre_room.eq(pre_room & (pushed_pre != pre_last))
            with m.If(ring_kept != seg_capacity):
                m.d.sync += ring_kept.eq(ring_kept + 1)
        with m.If(bump):
            m.d.sync += [kept.eq(kept + 1), segment_filled.eq(kept == seg_mask)]
        retained = Signal(33)
        m.d.comb += retained.eq(Mux(triggered, kept, ring_kept))
        seg_base = Signal(self.addr_bits)
        m.d.comb += seg_base.eq(head & ~seg_mask & index_mask)
        m.d.comb += [
            self.count.eq(retained),
            self.start.eq(seg_base | ((head - retained) & seg_mask)),
        ]
        # Whether a post count is set and reached (post != 0, pushed_post >= post), kept in
        # a flip-flop set up in the clock before (the choice of this clock's record depends
        # on it); it is wrong only in the clock after an arm or a segment's re-arm, which
        # is in PRE, where unused.
        post_reached = Signal()
        m.d.sync += post_reached.eq((post != 0) & Mux(self.push & post_push,
                                                      pushed_post + 1 >= post,
                                                      pushed_post >= post))
        full = Signal()
        m.d.comb += full.eq((state == RecorderState.POST) & (
            (~ring & segment_filled) | post_reached))

        # --- the records that may be pushed this clock
        # Raw mode: the clocks since the last record pushed (its delta field, and at
        # MAX_DELTA a WRAP event). Whether they reach MAX_DELTA (or pass it) is known a
        # clock ahead: this clock's raw time is the last clock's timestamp, and the last
        # record's time is the last clock's ``now`` if it pushed, else ``last_ts``; both
        # differences are taken from registers, and the push only chooses between them.
        # The comparisons of a 48-bit difference would otherwise lie between the last
        # record and this clock's push decision.
        since = Signal(TIMESTAMP_BITS)
        m.d.comb += since.eq(now - last_ts)
        since_reaches_max = Signal()    # since >= MAX_DELTA
        since_passes_max = Signal()     # since > MAX_DELTA
        after_push = Signal(TIMESTAMP_BITS)
        after_none = Signal(TIMESTAMP_BITS)
        m.d.comb += [after_push.eq(self.timestamp - now),
                     after_none.eq(self.timestamp - last_ts)]
        m.d.sync += [
            since_reaches_max.eq(Mux(self.push, after_push >= MAX_DELTA,
                                     after_none >= MAX_DELTA)),
            since_passes_max.eq(Mux(self.push, after_push > MAX_DELTA, after_none > MAX_DELTA)),
        ]
        raw = Signal(RawRecord(self.width, self.masters))
        m.d.comb += [raw.eq(self.raw_record),
                     raw.delta.eq(Mux(since_passes_max, MAX_DELTA, since))]
        m.d.comb += raw.marker.eq(raw_mark)
        # Raw mode: the edge is kept for the record of its clock, one clock later; a clock
        # without a record gets a MARKER event in its place (the same time, the same slot).
        m.d.sync += raw_mark.eq(markers & ~wide & self.external & capturing)
        raw_marker = Signal(MarkerEvent())
        m.d.comb += [raw_marker.kind.eq(RecordKind.MARKER), raw_marker.timestamp.eq(now),
                     raw_marker.falling.eq(falling), raw_marker.edges.eq(1)]
        main_valid = Signal()
        m.d.comb += main_valid.eq(capturing & ~full & ~self.arm &
                                  Mux(wide, self.summary_valid & self.summary_match,
                                      self.raw_valid | raw_mark))
        main_data = Mux(wide, self.summary_record.as_value(),
                        Mux(self.raw_valid, raw.as_value(), raw_marker.as_value()))

        overrun = Signal(OverrunEvent())
        m.d.comb += [overrun.kind.eq(RecordKind.OVERRUN), overrun.timestamp.eq(now),
                     overrun.lost.eq(Mux(main_valid, lost_run + 1, lost_run))]
        trigger_event = Signal(TriggerEvent())
        m.d.comb += [trigger_event.kind.eq(RecordKind.TRIGGER),
                     trigger_event.timestamp.eq(trig_ts), trigger_event.source.eq(trig_source)]
        violation_event = Signal(ViolationEvent())
        m.d.comb += [violation_event.kind.eq(RecordKind.VIOLATION),
                     violation_event.timestamp.eq(viol_ts),
                     violation_event.rules.eq(viol_rules),
                     violation_event.clocks.eq(viol_clocks)]
        marker_event = Signal(MarkerEvent())
        m.d.comb += [marker_event.kind.eq(RecordKind.MARKER),
                     marker_event.timestamp.eq(mark_ts), marker_event.falling.eq(falling),
                     marker_event.edges.eq(mark_edges)]
        wrap = Signal(WrapEvent())
        m.d.comb += [wrap.kind.eq(RecordKind.WRAP), wrap.timestamp.eq(now)]

        # The record pushed, if any: the bus's own (main_data) or, in the order of the
        # choice below, an event. Which event depends on registers alone, so of the whole
        # choice only its last step, bus record or event, waits for the bus sample.
        push = self.push
        event = Signal(SUMMARY_RECORD_BITS)
        with m.If(dropping):
            m.d.comb += event.eq(overrun.as_value())
        with m.Elif(trig_pending & wide):
            m.d.comb += event.eq(trigger_event.as_value())
        with m.Elif(mark_pending):
            m.d.comb += event.eq(marker_event.as_value())
        with m.Elif(viol_pending):
            m.d.comb += event.eq(violation_event.as_value())
        with m.Else():
            m.d.comb += event.eq(wrap.as_value())
        m.d.comb += self.push_data.eq(Mux(~dropping & main_valid, main_data, event))
        is_trigger_push = Signal()
        pushing_violation = Signal()
        pushing_marker = Signal()
        count_lost = Signal()
        can = self.can_push
        active = Signal()
        m.d.comb += active.eq(capturing & ~full & ~self.arm)
        with m.If(active):
            with m.If(dropping):
                with m.If(self.drained):
                    m.d.comb += push.eq(1)
                    m.d.sync += [dropping.eq(0), lost_run.eq(0)]
                    m.d.sync += saturating_increment(self.overruns)
                m.d.comb += count_lost.eq(main_valid)
            with m.Elif(main_valid):
                with m.If(can):
                    m.d.comb += push.eq(1)
                with m.Else():
                    m.d.comb += count_lost.eq(1)
                    m.d.sync += dropping.eq(1)
            with m.Elif(trig_pending & wide):
                m.d.comb += [push.eq(can), is_trigger_push.eq(can)]
            with m.Elif(mark_pending):
                m.d.comb += [push.eq(can), pushing_marker.eq(can)]
            with m.Elif(viol_pending):
                m.d.comb += [push.eq(can), pushing_violation.eq(can)]
            with m.Elif(~wide & since_reaches_max):
                m.d.comb += push.eq(can)

        # A capture that stopped while dropping still reports its last loss in-band, if the
        # memory has room for the event.
        with m.If((state == RecorderState.DONE) & dropping & (lost_run != 0) &
                  self.drained & (ring | ~segment_filled)):
            m.d.comb += push.eq(1)
            m.d.sync += [dropping.eq(0), lost_run.eq(0), saturating_increment(self.overruns)]

        with m.If(count_lost):
            m.d.sync += saturating_increment(self.lost)
            with m.If(~(dropping & self.drained)):
                m.d.sync += saturating_increment(lost_run)

        # --- bookkeeping of pushes and the trigger
        m.d.comb += post_push.eq((state == RecorderState.POST) | raw_trigger |
                                 is_trigger_push | ((state == RecorderState.DONE) & triggered))
        with m.If(push):
            m.d.sync += [head.eq(seg_base | ((head + 1) & seg_mask)), last_ts.eq(now)]
            with m.If(post_push):
                m.d.sync += saturating_increment(pushed_post)
            with m.Else():
                m.d.sync += saturating_increment(pushed_pre)
        with m.If(fire):
            m.d.sync += [self.trigger_timestamp.eq(self.timestamp), trig_pending.eq(1),
                         trig_ts.eq(self.timestamp), trig_source.eq(source)]
        with m.If(raw_trigger & capturing):
            m.d.sync += [trig_pending.eq(0), state.eq(RecorderState.POST), triggered.eq(1),
                         self.trigger_index.eq(head)]
        with m.If(is_trigger_push):
            m.d.sync += [trig_pending.eq(0), state.eq(RecorderState.POST), triggered.eq(1),
                         self.trigger_index.eq(head)]

        # Violations wait in one event record; those of later clocks merge into it.
        violated = Signal()
        m.d.comb += violated.eq(capturing & wide & self.violation.any())
        with m.If(pushing_violation):
            m.d.sync += viol_pending.eq(0)
        with m.If(violated):
            with m.If(viol_pending & ~pushing_violation):
                m.d.sync += [viol_rules.eq(viol_rules | self.violation),
                             saturating_increment(viol_clocks)]
            with m.Else():
                m.d.sync += [viol_pending.eq(1), viol_rules.eq(self.violation),
                             viol_ts.eq(self.timestamp), viol_clocks.eq(1)]

        # Markers of summary mode wait in one event record; later edges merge into it.
        marked = Signal()
        m.d.comb += marked.eq(capturing & wide & markers & self.external)
        with m.If(pushing_marker):
            m.d.sync += mark_pending.eq(0)
        with m.If(marked):
            with m.If(mark_pending & ~pushing_marker):
                m.d.sync += saturating_increment(mark_edges)
            with m.Else():
                m.d.sync += [mark_pending.eq(1), mark_ts.eq(self.timestamp),
                             mark_edges.eq(1)]

        # The end of a segment: the last one (or a stop) ends the capture; any other
        # re-arms the recorder at the base of the next.
        m.d.comb += self.segment_end.eq(capturing & (full | self.stop))
        with m.If(capturing & (full | self.stop)):
            with m.If(self.stop | last_segment):
                m.d.sync += state.eq(RecorderState.DONE)
            with m.Else():
                m.d.sync += [
                    state.eq(RecorderState.PRE), self.segment.eq(self.segment + 1),
                    head.eq((seg_base + seg_capacity) & index_mask),
                    pushed_pre.eq(0), pushed_post.eq(0), triggered.eq(0),
                    ring_kept.eq(0), kept.eq(0), segment_filled.eq(0), pre_room.eq(pre != 0),
                    self.trigger_index.eq(0), self.trigger_timestamp.eq(0),
                ]

        m.d.comb += self.restart.eq(0)
        with m.If(self.arm):
            arm_capacity = Mux(self.mode == CaptureMode.SUMMARY, depth >> 1, depth)
            arm_segment = Signal(32)
            m.d.comb += arm_segment.eq(arm_capacity >> self.segments_log2)
            with m.If((self.segments_log2 > MAX_SEGMENTS_LOG2) | (arm_segment == 0) |
                      (self.ring & (self.segments_log2 != 0))):
                m.d.sync += [self.segment_error.eq(1), self.pre_error.eq(0)]
            with m.Elif(self.pre >= arm_segment):
                m.d.sync += [self.pre_error.eq(1), self.segment_error.eq(0)]
            with m.Else():
                m.d.comb += self.restart.eq(1)
                m.d.sync += [
                    self.pre_error.eq(0), self.segment_error.eq(0),
                    mode.eq(self.mode), source.eq(self.source), ring.eq(self.ring),
                    pre.eq(self.pre), post.eq(self.post), markers.eq(self.markers),
                    pre_last.eq(self.pre - 1), pre_room.eq(self.pre != 0),
                    ring_kept.eq(0), kept.eq(0), segment_filled.eq(0),
                    falling.eq(self.falling), segments_log2.eq(self.segments_log2),
                    seg_capacity.eq(arm_segment), seg_mask.eq(arm_segment - 1),
                    self.segment.eq(0), mark_pending.eq(0), raw_mark.eq(0),
                    state.eq(RecorderState.PRE), head.eq(0), pushed_pre.eq(0),
                    pushed_post.eq(0), triggered.eq(0), last_ts.eq(self.timestamp),
                    since_reaches_max.eq(0), since_passes_max.eq(0),
                    dropping.eq(0),
                    lost_run.eq(0), self.lost.eq(0), self.overruns.eq(0),
                    trig_pending.eq(0), viol_pending.eq(0),
                    self.trigger_index.eq(0), self.trigger_timestamp.eq(0),
                ]
        return m
