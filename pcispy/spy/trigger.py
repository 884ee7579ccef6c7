# SPDX-License-Identifier: BSD-2-Clause
"""Arming, triggering and the choice of what goes into trace memory (the recorder).

A capture is armed, keeps a ring of *pre-trigger* records, triggers, then keeps *post-
trigger* records until it stops:

- trigger sources (:class:`~.format.TriggerSource`): at once, the first transaction the
  filters select (at its address phase), a write to the trigger register, a protocol
  violation among the enabled rules;
- ``pre``: pre-trigger records kept (less than the capacity, else the arm is refused and
  ``pre_error`` says so); ``post``: stop after that many post-trigger records (0: no
  limit); without ``ring`` the capture also stops when memory is full (pre + post records
  fill the capacity); with ``ring`` it overwrites the oldest records until ``stop`` or
  ``post``;
- the trigger record is the raw record of the trigger clock (its ``trigger`` bit set) in raw
  mode, a TRIGGER event in summary mode.

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

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

from pcispy.spy.format import (RawRecord, SummaryRecord, TriggerEvent, OverrunEvent, WrapEvent,
                               ViolationEvent, RecordKind, TriggerSource, CaptureMode, MAX_DELTA,
                               MAX_RULES, TIMESTAMP_BITS, SUMMARY_RECORD_BITS)
from pcispy.spy.summary import saturating_increment

__all__ = ["RecorderState", "Recorder"]


class RecorderState(enum.Enum, shape=2):
    IDLE      = 0  # never armed
    PRE       = 1  # armed, waiting for the trigger
    POST      = 2  # triggered
    DONE      = 3  # stopped (full, count reached, or stop)


class Recorder(wiring.Component):
    """Decides, clock by clock, which record is pushed into the trace writer.

    Ports:
        mode (In, CaptureMode), source (In, TriggerSource), ring (In, 1), pre (In, 32),
            post (In, 32): the capture settings, taken at ``arm``.
        arm (In, 1), stop (In, 1), trigger (In, 1): strobes (``trigger``: the register).
        timestamp (In, 48): the free-running clock counter.
        raw_timestamp (In, 48): the time of ``raw_record`` (the raw capture is one clock
            late: it waits for the filter verdict of a dual address cycle).
        filter_trigger (In, 1): a transaction the filters select starts (address phase).
        violation (In, 64): protocol rules that fired this clock (masked by the caller).
        raw_valid (In, 1), raw_record (In, RawRecord(width, masters)): from the capture,
            one clock after the bus clock it records.
        summary_valid (In, 1), summary_record (In, SummaryRecord), summary_match (In, 1).
        fire (Out, 1): the trigger fires this clock (the raw capture marks the record of
            this clock, which arrives on the next).
        push (Out, 1), push_data (Out, 256), restart (Out, 1), wide (Out, 1): to the writer.
        can_push (In, 1), level (In, range(fifo_depth + 1)): from the writer.
        state (Out, RecorderState), pre_error (Out, 1): last arm refused (``pre`` too big).
        capacity (Out, 32), start (Out, 32), count (Out, 32): the valid records.
        trigger_index (Out, 32), trigger_timestamp (Out, 48): where and when it triggered.
        lost (Out, 32): records dropped since arm (saturating).
        overruns (Out, 32): OVERRUN events written since arm.

    Parameters:
        width, masters: the bus. addr_bits: log2 of the trace memory depth in slots.
        fifo_depth: the writer FIFO's depth.
    """
    def __init__(self, width=32, masters=1, addr_bits=10, fifo_depth=16):
        self.width = width
        self.masters = masters
        self.addr_bits = addr_bits
        self.fifo_depth = fifo_depth
        super().__init__({
            "mode": In(CaptureMode), "source": In(TriggerSource), "ring": In(1),
            "pre": In(32), "post": In(32),
            "arm": In(1), "stop": In(1), "trigger": In(1),
            "timestamp": In(TIMESTAMP_BITS), "raw_timestamp": In(TIMESTAMP_BITS),
            "filter_trigger": In(1), "violation": In(MAX_RULES),
            "raw_valid": In(1), "raw_record": In(RawRecord(width, masters)),
            "summary_valid": In(1), "summary_record": In(SummaryRecord()),
            "summary_match": In(1),
            "fire": Out(1),
            "push": Out(1), "push_data": Out(SUMMARY_RECORD_BITS), "restart": Out(1),
            "wide": Out(1),
            "can_push": In(1), "level": In(range(fifo_depth + 1)),
            "state": Out(RecorderState), "pre_error": Out(1),
            "capacity": Out(32), "start": Out(32), "count": Out(32),
            "trigger_index": Out(32), "trigger_timestamp": Out(TIMESTAMP_BITS),
            "lost": Out(32), "overruns": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        depth = 1 << self.addr_bits
        # Raw records and the events between them share the raw records' time base.
        now = Signal(TIMESTAMP_BITS)
        state = self.state

        # Settings are taken at arm, so a capture is not changed under its feet.
        mode = Signal(CaptureMode)
        source = Signal(TriggerSource)
        ring = Signal()
        pre = Signal(32)
        post = Signal(32)
        wide = Signal()
        m.d.comb += [wide.eq(mode == CaptureMode.SUMMARY), self.wide.eq(wide),
                     now.eq(Mux(wide, self.timestamp, self.raw_timestamp))]
        capacity = Signal(32)
        m.d.comb += [capacity.eq(Mux(wide, depth >> 1, depth)), self.capacity.eq(capacity)]
        index_mask = Signal(self.addr_bits)
        m.d.comb += index_mask.eq(capacity - 1)

        head = Signal(self.addr_bits)       # index of the next record pushed
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
        fire = Signal()
        m.d.comb += fire.eq((state == RecorderState.PRE) & ~trig_pending & ~self.arm & cause)
        m.d.comb += self.fire.eq(fire & ~wide)
        # Raw mode: the marked record arrives one clock after the trigger; it starts POST.
        raw_trigger = Signal()
        m.d.sync += raw_trigger.eq(fire & ~wide)

        # --- how many records are kept
        kept_pre = Signal(32)
        m.d.comb += kept_pre.eq(Mux(pushed_pre < pre, pushed_pre, pre))
        kept = Signal(33)
        m.d.comb += kept.eq(Mux(triggered, kept_pre, pushed_pre) + pushed_post)
        retained = Signal(32)
        m.d.comb += retained.eq(Mux(kept > capacity, capacity, kept))
        m.d.comb += [
            self.count.eq(retained),
            self.start.eq((head - retained) & index_mask),
        ]
        full = Signal()
        m.d.comb += full.eq((state == RecorderState.POST) & (
            (~ring & (kept_pre + pushed_post >= capacity)) |
            ((post != 0) & (pushed_post >= post))))

        # --- the records that may be pushed this clock
        since = Signal(TIMESTAMP_BITS)
        m.d.comb += since.eq(now - last_ts)
        raw = Signal(RawRecord(self.width, self.masters))
        m.d.comb += [raw.eq(self.raw_record),
                     raw.delta.eq(Mux(since > MAX_DELTA, MAX_DELTA, since))]
        main_valid = Signal()
        m.d.comb += main_valid.eq(capturing & ~full & ~self.arm &
                                  Mux(wide, self.summary_valid & self.summary_match,
                                      self.raw_valid))
        main_data = Mux(wide, self.summary_record.as_value(), raw.as_value())

        overrun = Signal(OverrunEvent())
        m.d.comb += [overrun.kind.eq(RecordKind.OVERRUN), overrun.timestamp.eq(now),
                     overrun.lost.eq(lost_run + main_valid)]
        trigger_event = Signal(TriggerEvent())
        m.d.comb += [trigger_event.kind.eq(RecordKind.TRIGGER),
                     trigger_event.timestamp.eq(trig_ts), trigger_event.source.eq(trig_source)]
        violation_event = Signal(ViolationEvent())
        m.d.comb += [violation_event.kind.eq(RecordKind.VIOLATION),
                     violation_event.timestamp.eq(viol_ts),
                     violation_event.rules.eq(viol_rules),
                     violation_event.clocks.eq(viol_clocks)]
        wrap = Signal(WrapEvent())
        m.d.comb += [wrap.kind.eq(RecordKind.WRAP), wrap.timestamp.eq(now)]

        push = self.push
        data = self.push_data
        is_trigger_push = Signal()
        pushing_violation = Signal()
        count_lost = Signal()
        can = self.can_push
        active = Signal()
        m.d.comb += active.eq(capturing & ~full & ~self.arm)
        with m.If(active):
            with m.If(dropping):
                with m.If(self.level <= self.fifo_depth // 2):
                    m.d.comb += [push.eq(1), data.eq(overrun.as_value())]
                    m.d.sync += [dropping.eq(0), lost_run.eq(0)]
                    m.d.sync += saturating_increment(self.overruns)
                m.d.comb += count_lost.eq(main_valid)
            with m.Elif(main_valid):
                with m.If(can):
                    m.d.comb += [push.eq(1), data.eq(main_data)]
                with m.Else():
                    m.d.comb += count_lost.eq(1)
                    m.d.sync += dropping.eq(1)
            with m.Elif(trig_pending & wide):
                m.d.comb += [push.eq(can), data.eq(trigger_event.as_value()),
                             is_trigger_push.eq(can)]
            with m.Elif(viol_pending):
                m.d.comb += [push.eq(can), data.eq(violation_event.as_value()),
                             pushing_violation.eq(can)]
            with m.Elif(~wide & (since >= MAX_DELTA)):
                m.d.comb += [push.eq(can), data.eq(wrap.as_value())]

        # A capture that stopped while dropping still reports its last loss in-band, if the
        # memory has room for the event.
        with m.If((state == RecorderState.DONE) & dropping & (lost_run != 0) &
                  (self.level <= self.fifo_depth // 2) &
                  (ring | (kept_pre + pushed_post < capacity))):
            m.d.comb += [push.eq(1), data.eq(overrun.as_value())]
            m.d.sync += [dropping.eq(0), lost_run.eq(0), saturating_increment(self.overruns)]

        with m.If(count_lost):
            m.d.sync += saturating_increment(self.lost)
            with m.If(~(dropping & (self.level <= self.fifo_depth // 2))):
                m.d.sync += saturating_increment(lost_run)

        # --- bookkeeping of pushes and the trigger
        post_now = Signal()
        m.d.comb += post_now.eq((state == RecorderState.POST) | raw_trigger |
                                is_trigger_push | ((state == RecorderState.DONE) & triggered))
        with m.If(push):
            m.d.sync += [head.eq((head + 1) & index_mask), last_ts.eq(now)]
            with m.If(post_now):
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

        with m.If(capturing & (full | self.stop)):
            m.d.sync += state.eq(RecorderState.DONE)

        m.d.comb += self.restart.eq(0)
        with m.If(self.arm):
            arm_capacity = Mux(self.mode == CaptureMode.SUMMARY, depth >> 1, depth)
            with m.If(self.pre >= arm_capacity):
                m.d.sync += self.pre_error.eq(1)
            with m.Else():
                m.d.comb += self.restart.eq(1)
                m.d.sync += [
                    self.pre_error.eq(0),
                    mode.eq(self.mode), source.eq(self.source), ring.eq(self.ring),
                    pre.eq(self.pre), post.eq(self.post),
                    state.eq(RecorderState.PRE), head.eq(0), pushed_pre.eq(0),
                    pushed_post.eq(0), triggered.eq(0), last_ts.eq(self.timestamp),
                    dropping.eq(0),
                    lost_run.eq(0), self.lost.eq(0), self.overruns.eq(0),
                    trig_pending.eq(0), viol_pending.eq(0),
                    self.trigger_index.eq(0), self.trigger_timestamp.eq(0),
                ]
        return m
