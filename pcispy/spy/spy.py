# SPDX-License-Identifier: BSD-2-Clause
"""The bus spy: raw capture, summaries, filters, counters, histograms, trigger and trace
memory, composed into one component the board wires to its pads, its CSR bank and BAR1.

Data flow, per clock::

    bus -> Summariser -> address/command -> FilterSet -> match (latched per transaction)
        |            \\-> summary (+ filter hits) -> Counters, Recorder (summary mode)
        \\-> RawCapture -> Recorder (raw mode) -> PushStage -> TraceWriter (FIFO) -> trace memory
    violation (from the protocol checker) & violation_mask -> RawCapture, Recorder
    trigger_in pin -> TriggerInput (synchroniser, edge) -> Recorder (trigger, markers)
    Recorder -> TriggerOutput -> trigger_out pin; Recorder -> SegmentTable (segment ends)

Raw records come out one clock after their bus clock (so the filter verdict of a dual
address cycle covers its first phase): the last clock a capture stores is the one before
its ``stop``.

:class:`Spy` takes its settings as plain ports (:class:`SpyConfig`, the comparator array,
strobes) and gives its status as :class:`SpyStatus` and :class:`~.counters.CounterValues`;
:class:`SpyUnit`, what the board wires, puts the spy behind the ``spy`` register block
(pcispy/spy/registers.py).
"""

from amaranth.hdl import Module, Signal, Mux, Cat
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out, connect

from pcispy.csr.bank import BlockSignature
from pcispy.pci.bus import BusState
from pcispy.spy.capture import RawCapture
from pcispy.spy.counters import (Counters, CounterValues, COUNTER_INIT, FilterCountSelect,
                                 FILTER_COUNTER_BITS)
from pcispy.spy.filters import FilterSet, FilterCombine, Comparator
from pcispy.spy.format import CaptureMode, TriggerSource, TIMESTAMP_BITS, MAX_RULES
from pcispy.spy.summary import Summariser
from pcispy.spy.trigger import (Recorder, RecorderState, PushStage, RecordPlacement, SegmentEntry,
                                SegmentTable, TriggerInput, TriggerOutput, MAX_SEGMENTS,
                                SEGMENTS_LOG2_BITS, trigger_pulse_clocks)
from pcispy.pci.backend import BackendSignature
from pcispy.spy.tracemem import (BRAMTraceMemory, SRAMTraceMemory, SRAMSignature, TraceWriter,
                                 TraceBackend)
from pcispy.spy.registers import SPY, SPY_FILTERS, SPY_MASTERS
from pcispy.spy.sdram import SDRAMSignature, SDRAMTiming, SDRAMTraceMemory

__all__ = ["SpyConfig", "SpyStatus", "Spy", "SpyUnit"]


class SpyConfig(data.StructLayout):
    """The spy's settings (the ``spy.config``-like registers of pcispy/spy/registers.py)."""
    def __init__(self):
        super().__init__({
            "mode":           CaptureMode,
            "source":         TriggerSource,
            "ring":           1,
            "idle_compress":  1,
            "raw_select":     1,   # raw mode: store only transactions the filters select
            "combine":        FilterCombine,
            "latency_timer":  8,
            "pre":            32,
            "post":           32,
            "violation_mask": MAX_RULES,
            "count_own":      1,   # count the board's own register accesses as any other
            "falling":        1,   # the trigger input's falling edges count (else rising)
            "markers":        1,   # store the trigger input's edges as markers
            "out_level":      1,   # trigger output: a level while recording (else a pulse)
            "segments_log2":  SEGMENTS_LOG2_BITS,
        })


class SpyStatus(data.StructLayout):
    """What the spy reports."""
    def __init__(self):
        super().__init__({
            "state":             RecorderState,
            "done":              1,   # stopped and every record written
            "pre_error":         1,   # the last arm was refused: pre >= capacity
            "clearing":          1,   # histograms or per-filter counters being zeroed
            "capacity":          32,  # records the memory holds in the armed mode
            "start":             32,  # index of the oldest valid record
            "count":             32,  # valid records
            "trigger_index":     32,
            "trigger_timestamp": TIMESTAMP_BITS,
            "lost":              32,
            "overruns":          32,
            "segment_error":     1,   # the last arm was refused for its segments
            "segment":           range(MAX_SEGMENTS),  # the segment being recorded
            "trigger_in":        1,   # the trigger input's synchronised level
        })


class Spy(wiring.Component):
    """The whole bus spy.

    Ports:
        bus (In, BusState(width, masters)): the sampled bus (inside-level, one per clock).
        timestamp (In, 48): free-running PCI clock counter.
        violation (In, rules): this clock's protocol-checker pulses (rule = bit index).
        config (In, SpyConfig): settings; ``mode``/``source``/``ring``/``pre``/``post`` are
            taken at ``arm``.
        comparators (In, ArrayLayout(Comparator, filters)): filter comparators.
        arm, stop, trigger, clear (In, 1): strobes: arm a capture, stop it, the trigger
            register was written, zero the counters and histograms.
        snapshot, release (In, 1): strobes: ``hist_data`` shows the histograms as they are
            at this clock until release (the counters' snapshot is :class:`SpyUnit`'s),
            and follows them again.
        own_claim (In, 1): with ``own``: the board's target claimed the transaction whose
            (first) address phase is on ``bus`` now, a BAR0 access: the host's own
            register access. Unless ``config.count_own``, such transactions are left out
            of every counter and histogram and counted in ``own_transactions`` and
            ``own_clocks`` (:class:`~.counters.Counters`). Captures keep them.
        status (Out, SpyStatus), counters (Out, CounterValues(filters)).
        hist_select (In, 1), hist_addr (In, 6), hist_data (Out, 32): histogram bins (0:
            first-data latency, 1: gap), data two clocks after the address.
        fcount_select (In, FilterCountSelect(filters)), fcount_value (Out, 48): the
            per-filter counters (:class:`~.counters.FilterCounters`), the value three
            clocks after the select.
        trace (In, BackendSignature(addr_bits + 3 - width // 32, width)): the BAR1 backend
            bus of the target: reads of the trace memory (slot ``s`` is at byte offset
            ``16 * s``); writes are dropped.
        sram (Out, SRAMSignature): only with ``memory="sram"``: the SRAM pins.
        sdram (Out, SDRAMSignature): only with ``memory="sdram"``: the SDRAM pins.
        memory_fills (Out, 32): times the trace memory's FIFO filled (an SDRAM's: the bus
            outran it; 0 for the other memories, which take a slot every clock).
        trigger_in (In, 1): the trigger input pin (asynchronous; :class:`~.trigger.
            TriggerInput`). trigger_out (Out, 1): the trigger output pin, from a flip-flop
            (:class:`~.trigger.TriggerOutput`).
        segment_select (In, range(MAX_SEGMENTS)), segment_entry (Out, SegmentEntry): the
            :class:`~.trigger.SegmentTable` entry of a segment that ended, two clocks after
            the select.

    Parameters:
        width: 32 or 64. masters: REQ#/GNT# pairs visible. rules: violation vector width.
        filters: comparators (1..8). memory: "bram", "sram" or "sdram". addr_bits: log2 of
        the trace memory depth in 128-bit slots (with an SDRAM: its timing's
        ``slot_bits``). sram_data_bits: SRAM width. sdram_timing: the SDRAM's
        :class:`~pcispy.spy.sdram.SDRAMTiming`; sdram_fifo_depth: slots buffered in front of
        it (:class:`~pcispy.spy.sdram.SDRAMTraceMemory`); sdram_domain: the SDRAM
        controller's own clock domain (None: the spy's). fifo_depth: records
        buffered in front of the memory. own: ``own_claim`` is wired (False: a board
        without a target, whose own counters read 0). trigger_pulse_clocks: the trigger
        output's pulse width (default: :data:`~.trigger.TRIGGER_PULSE_NS` at 33 MHz).
    """
    #: Clocks from an input (the bus sample, a strobe, the trigger input's edge) to the
    #: spy's reaction to it in its status, counters and trigger output: the summariser's
    #: and the filters' results are registered before the rest takes them.
    LAG = 1

    def __init__(self, width=32, *, masters=SPY_MASTERS, rules=1, filters=4, memory="bram",
                 addr_bits=10, sram_data_bits=32, sdram_timing=None, sdram_fifo_depth=256,
                 sdram_domain=None,
                 fifo_depth=16, own=True, trigger_pulse_clocks=trigger_pulse_clocks(33)):
        if memory not in ("bram", "sram", "sdram"):
            raise ValueError(f"trace memory must be 'bram', 'sram' or 'sdram', not {memory!r}")
        if memory == "sdram":
            sdram_timing = sdram_timing or SDRAMTiming()
            addr_bits = sdram_timing.slot_bits
        self.width = width
        self.masters = masters
        self.rules = rules
        self.filters = filters
        self.memory = memory
        self.addr_bits = addr_bits
        self.fifo_depth = fifo_depth
        self.own = own
        self.trigger_pulse_clocks = trigger_pulse_clocks
        if memory == "sram":
            self._trace = SRAMTraceMemory(addr_bits, sram_data_bits)
        elif memory == "sdram":
            self._trace = SDRAMTraceMemory(sdram_timing, fifo_depth=sdram_fifo_depth,
                                           domain=sdram_domain)
        else:
            self._trace = BRAMTraceMemory(addr_bits)
        ports = {
            "bus":          In(BusState(width, masters)),
            "timestamp":    In(TIMESTAMP_BITS),
            "violation":    In(rules),
            "config":       In(SpyConfig()),
            "comparators":  In(data.ArrayLayout(Comparator(), filters)),
            "arm":          In(1), "stop": In(1), "trigger": In(1), "clear": In(1),
            "snapshot":     In(1), "release": In(1), "own_claim": In(1),
            "status":       Out(SpyStatus()),
            "counters":     Out(CounterValues(filters)),
            "hist_select":  In(1), "hist_addr": In(6), "hist_data": Out(32),
            "fcount_select": In(FilterCountSelect(filters)),
            "fcount_value": Out(FILTER_COUNTER_BITS),
            "trace":        In(BackendSignature(addr_bits + 3 - width // 32, width)),
            "memory_fills": Out(32),
            "trigger_in":   In(1), "trigger_out": Out(1),
            "segment_select": In(range(MAX_SEGMENTS)), "segment_entry": Out(SegmentEntry()),
        }
        if memory == "sram":
            ports["sram"] = Out(SRAMSignature(self._trace.sram_addr_bits, sram_data_bits))
        if memory == "sdram":
            ports["sdram"] = Out(SDRAMSignature())
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        m.submodules.summariser = summ = Summariser(self.width, self.masters)
        m.submodules.filters = filt = FilterSet(self.filters)
        m.submodules.capture = cap = RawCapture(self.width, self.masters, self.rules)
        m.submodules.counters = cnt = Counters(self.filters, own=self.own)
        m.submodules.recorder = rec = Recorder(self.width, self.masters, self.addr_bits)
        m.submodules.stage = stage = PushStage(self.addr_bits, self.fifo_depth)
        m.submodules.writer = wr = TraceWriter(self.addr_bits, self.fifo_depth)
        m.submodules.trace = trace = self._trace
        m.submodules.backend = backend = TraceBackend(self.addr_bits, self.width)
        m.submodules.trigger_input = trig_in = TriggerInput()
        m.submodules.trigger_output = trig_out = TriggerOutput(self.trigger_pulse_clocks)
        m.submodules.segments = segments = SegmentTable()
        m.submodules.placement = place = RecordPlacement(self.addr_bits, self.fifo_depth)
        wiring.connect(m, wiring.flipped(self.trace), backend.bus)

        m.d.comb += [
            summ.bus.eq(self.bus), summ.timestamp.eq(self.timestamp),
            summ.latency_timer.eq(cfg.latency_timer),
            filt.address.eq(summ.address), filt.command.eq(summ.command),
            filt.comparators.eq(self.comparators), filt.combine.eq(cfg.combine),
        ]

        # The summariser and the filters take the bus sample as it comes; everything else
        # takes their results, and every other input timed to the bus, a clock later, all
        # of one bus clock together. So the summary and the filters' verdict, and then
        # the counters and the recorder's choice of a record, each have a clock of their
        # own (a 66 MHz bus leaves 15 ns). Records and counts are the same; the status
        # follows the bus and the strobes a clock later. The snapshot and its release are
        # not delayed: the counters (SpyUnit) and the histograms are frozen in one clock.
        def later(value, name):
            delayed = Signal(value.shape(), name=name)
            m.d.sync += delayed.eq(value)
            return delayed

        bus = later(self.bus, "bus_later")
        timestamp = later(self.timestamp, "timestamp_later")
        violation = later(self.violation & cfg.violation_mask, "violation_later")
        own_claim = later(self.own_claim, "own_claim_later")
        arm, stop, trigger, clear = (later(getattr(self, name), f"{name}_later")
                                     for name in ("arm", "stop", "trigger", "clear"))
        external = later(trig_in.edge, "external_later")
        summary_valid, address_valid, address_pending, in_transaction, transfer, busy = (
            later(getattr(summ, name), f"{name}_later")
            for name in ("summary_valid", "address_valid", "address_pending",
                         "in_transaction", "transfer", "busy"))
        transfer_bytes = later(summ.transfer_bytes, "transfer_bytes_later")
        filter_match = later(filt.match, "filter_match_later")
        filter_hits = later(filt.hits, "filter_hits_later")

        # The filter verdict is known at the (last) address phase; keep it for the summary.
        match = Signal()
        hits = Signal(self.filters)
        with m.If(address_valid):
            m.d.sync += [match.eq(filter_match), hits.eq(filter_hits)]
        summary = later(summ.summary, "summary")
        summary_shown = Signal.like(summ.summary)
        m.d.comb += [summary_shown.eq(summary), summary_shown.filters.eq(hits)]

        # The board's own register accesses: own_claim comes in the clock of the address
        # phase; the verdict is kept for the transaction's clocks and its summary, which
        # may come in the next transaction's address phase (fast back-to-back).
        address_phase = Signal()
        skip_now = Signal()         # this clock's transaction is left out of the counters
        skipped = Signal()          # the verdict of the transaction in flight
        m.d.comb += [address_phase.eq(address_valid | address_pending),
                     skip_now.eq(Mux(address_phase, own_claim & ~cfg.count_own, skipped))]
        with m.If(address_phase):
            m.d.sync += skipped.eq(skip_now)

        m.d.comb += [
            cap.bus.eq(bus), cap.idle_compress.eq(cfg.idle_compress),
            cap.violation.eq(violation), cap.trigger.eq(rec.fire),
            cap.select.eq(cfg.raw_select),
            cap.in_transaction.eq(in_transaction),
            cap.address_pending.eq(address_pending),
            cap.verdict.eq(Mux(address_valid, filter_match, match)),

            cnt.summary_valid.eq(summary_valid), cnt.summary.eq(summary_shown),
            cnt.match.eq(match), cnt.hits.eq(hits), cnt.skip.eq(skipped),
            cnt.address_valid.eq(address_valid), cnt.address_match.eq(filter_match),
            cnt.transfer.eq(transfer), cnt.transfer_bytes.eq(transfer_bytes),
            cnt.busy.eq(busy), cnt.skip_clock.eq(in_transaction & skip_now),
            cnt.clear.eq(clear),
            cnt.hist_select.eq(self.hist_select), cnt.hist_addr.eq(self.hist_addr),
            cnt.hist_snapshot.eq(self.snapshot), cnt.hist_release.eq(self.release),
            self.hist_data.eq(cnt.hist_data), self.counters.eq(cnt.values),
            cnt.fcount_select.eq(self.fcount_select), self.fcount_value.eq(cnt.fcount_value),

            rec.mode.eq(cfg.mode), rec.source.eq(cfg.source), rec.ring.eq(cfg.ring),
            rec.pre.eq(cfg.pre), rec.post.eq(cfg.post),
            rec.markers.eq(cfg.markers), rec.falling.eq(cfg.falling),
            rec.segments_log2.eq(cfg.segments_log2),
            trig_in.pin.eq(self.trigger_in), trig_in.falling.eq(cfg.falling),
            rec.external.eq(external),
            trig_out.fire.eq(rec.fired), trig_out.hold.eq(rec.recording),
            trig_out.level.eq(cfg.out_level), self.trigger_out.eq(trig_out.pin),
            segments.write.eq(rec.segment_end), segments.index.eq(rec.segment),
            segments.entry.start.eq(rec.start), segments.entry.count.eq(rec.count),
            segments.entry.trigger_index.eq(rec.trigger_index),
            segments.entry.trigger_timestamp.eq(rec.trigger_timestamp),
            segments.select.eq(self.segment_select), self.segment_entry.eq(segments.shown),
            rec.arm.eq(arm), rec.stop.eq(stop), rec.trigger.eq(trigger),
            rec.timestamp.eq(timestamp),
            rec.filter_trigger.eq(address_valid & filter_match),
            rec.violation.eq(violation),
            rec.raw_valid.eq(cap.valid), rec.raw_record.eq(cap.record),
            rec.summary_valid.eq(summary_valid), rec.summary_record.eq(summary_shown),
            rec.summary_match.eq(match),

            stage.request.restart.eq(rec.restart), stage.request.wide.eq(rec.wide),
            stage.request.push.eq(rec.push), stage.request.data.eq(rec.push_data),
            stage.request.index.eq(rec.push_index),
            rec.can_push.eq(stage.can_push), rec.drained.eq(stage.drained),
            stage.fifo_pop.eq(wr.pop),
        ]
        staged = stage.staged
        m.d.comb += [
            wr.restart.eq(staged.restart), wr.wide.eq(staged.wide),
            wr.push.eq(staged.push), wr.push_data.eq(staged.data),
        ]
        mem = trace.mem
        m.d.comb += [
            place.restart.eq(staged.restart), place.wide.eq(staged.wide),
            place.push.eq(staged.push), place.index.eq(staged.index),
            place.pointer.eq(wr.mem.w_addr),
            place.w_en.eq(wr.mem.w_en), place.w_ready.eq(mem.w_ready),
            mem.w_addr.eq(place.w_addr), mem.w_data.eq(wr.mem.w_data),
            mem.w_en.eq(wr.mem.w_en), wr.mem.w_ready.eq(mem.w_ready),
            mem.r_addr.eq(backend.mem.r_addr), mem.r_en.eq(backend.mem.r_en),
            backend.mem.r_data.eq(mem.r_data), backend.mem.r_valid.eq(mem.r_valid),
        ]
        if self.memory == "sram":
            connect(m, wiring.flipped(self.sram), trace.sram)
        if self.memory == "sdram":
            connect(m, wiring.flipped(self.sdram), trace.sdram)
            m.d.comb += self.memory_fills.eq(trace.fills)

        st = self.status
        m.d.comb += [
            st.state.eq(rec.state),
            st.done.eq((rec.state == RecorderState.DONE) & stage.empty & wr.idle),
            st.pre_error.eq(rec.pre_error), st.clearing.eq(cnt.clearing),
            st.capacity.eq(rec.capacity), st.start.eq(rec.start), st.count.eq(rec.count),
            st.trigger_index.eq(rec.trigger_index),
            st.trigger_timestamp.eq(rec.trigger_timestamp),
            st.lost.eq(rec.lost), st.overruns.eq(rec.overruns),
            st.segment_error.eq(rec.segment_error), st.segment.eq(rec.segment),
            st.trigger_in.eq(trig_in.level),
        ]
        return m


class SpyUnit(wiring.Component):
    """The bus spy as the board wires it: a :class:`Spy` (with :data:`~.registers.SPY_FILTERS`
    comparators) behind the ``spy`` register block (pcispy/spy/registers.py).

    Reading a ``_lo`` register of a wide counter (and ``trigger_time_lo``) latches its high
    bits, so ``_lo`` then ``_hi`` reads one consistent value. The counter registers and
    ``hist_data`` show the running counters and histograms, or from ``control.snapshot``
    until ``control.release`` their values of the snapshot's clock: a host reads them one
    register at a time, over a UART many thousand clocks apart, and a latency mean or a
    throughput computed from two counters, or a histogram set beside the transactions
    counted, is only right when all are of one clock.

    Ports:
        regs (In, BlockSignature(SPY)): the ``spy`` block of the CSR bank
            (``wiring.connect(m, bank.spy, unit.regs)``).
        bus, timestamp, violation, own_claim, status, trace, trigger_in, trigger_out, and
            ``sram`` or ``sdram`` with such a memory: the :class:`Spy`'s ports of those
            names.

    Parameters:
        width, and :class:`Spy`'s keyword parameters but ``filters``.
    """
    #: The :class:`Spy`'s ports the unit has too; the registers stand for the others.
    PORTS = ("bus", "timestamp", "violation", "own_claim", "status", "trace", "sram", "sdram",
             "trigger_in", "trigger_out")

    def __init__(self, width=32, **params):
        self.spy = Spy(width, filters=SPY_FILTERS, **params)
        members = self.spy.signature.members
        super().__init__({"regs": In(BlockSignature(SPY)),
                          **{name: members[name] for name in self.PORTS if name in members}})

    def elaborate(self, platform):
        m = Module()
        m.submodules.spy = self.spy
        for name, member in self.signature.members.items():
            if name == "regs":
                continue
            outer, inner = getattr(self, name), getattr(self.spy, name)
            if not member.is_port:
                connect(m, wiring.flipped(outer), inner)
            elif member.flow == In:
                m.d.comb += inner.eq(outer)
            else:
                m.d.comb += outer.eq(inner)

        regs, spy = self.regs, self.spy
        control, config, status = regs.control, regs.config, spy.status
        cfg = spy.config
        held = Signal(name="counters_held")
        frozen = Signal(CounterValues(spy.filters), init=COUNTER_INIT, name="counters_frozen")
        with m.If(control.snapshot):
            m.d.sync += [held.eq(1), frozen.eq(spy.counters)]
        with m.Elif(control.release):
            m.d.sync += held.eq(0)
        # In the snapshot's clock a read sees the running counters, the values being frozen
        # (held or not): a read that follows the write at once is of the snapshot's clock.
        shown = Signal(CounterValues(spy.filters), name="counters_shown")
        m.d.comb += shown.eq(Mux(held & ~control.snapshot, frozen, spy.counters))
        m.d.comb += [
            spy.arm.eq(control.arm), spy.stop.eq(control.stop),
            spy.trigger.eq(control.trigger), spy.clear.eq(control.clear),
            spy.snapshot.eq(control.snapshot), spy.release.eq(control.release),
            cfg.count_own.eq(regs.counting.own),
            cfg.mode.eq(config.mode), cfg.source.eq(config.source), cfg.ring.eq(config.ring),
            cfg.idle_compress.eq(config.idle_compress), cfg.raw_select.eq(config.raw_select),
            cfg.combine.eq(config.combine), cfg.latency_timer.eq(config.latency_timer),
            cfg.pre.eq(regs.pre.pre), cfg.post.eq(regs.post.post),
            cfg.violation_mask.eq(Cat(regs.violation_mask_lo.violation_mask_lo,
                                      regs.violation_mask_hi.violation_mask_hi)),
            regs.status.state.eq(status.state), regs.status.done.eq(status.done),
            regs.status.pre_error.eq(status.pre_error), regs.status.clearing.eq(status.clearing),
            regs.status.held.eq(held), regs.status.segment_error.eq(status.segment_error),
            cfg.falling.eq(regs.trigger_io.falling), cfg.markers.eq(regs.trigger_io.markers),
            cfg.out_level.eq(regs.trigger_io.out_level),
            regs.trigger_io.level.eq(status.trigger_in),
            cfg.segments_log2.eq(regs.segments.log2), regs.segments.current.eq(status.segment),
            spy.segment_select.eq(regs.segment_select.segment),
            spy.hist_select.eq(regs.hist_select.histogram), spy.hist_addr.eq(regs.hist_select.bin),
            regs.hist_data.hist_data.eq(spy.hist_data),
            spy.fcount_select.filter.eq(regs.fcount_select.filter),
            spy.fcount_select.counter.eq(regs.fcount_select.counter),
        ]

        def whole(name):   # the field of a one-field register (reg32) of the block
            return getattr(getattr(regs, name), name)

        for name in ("capacity", "start", "count", "trigger_index", "lost", "overruns"):
            m.d.comb += whole(name).eq(getattr(status, name))
        m.d.comb += whole("memory_fills").eq(spy.memory_fills)
        entry = spy.segment_entry
        for name in ("start", "count", "trigger_index"):
            m.d.comb += whole(f"segment_{name}").eq(getattr(entry, name))

        for i in range(spy.filters):
            c = spy.comparators[i]
            ctl = getattr(regs, f"filter{i}_control")
            m.d.comb += [
                c.enable.eq(ctl.enable), c.exclude.eq(ctl.exclude), c.commands.eq(ctl.commands),
                c.address.eq(Cat(whole(f"filter{i}_address_lo"), whole(f"filter{i}_address_hi"))),
                c.mask.eq(Cat(whole(f"filter{i}_mask_lo"), whole(f"filter{i}_mask_hi"))),
            ]

        def wide(name, hi_field, value):
            lo, hi = getattr(regs, f"{name}_lo"), getattr(regs, f"{name}_hi")
            latched = Signal(len(value) - 32, name=f"{name}_hi_latch")
            with m.If(lo.r_stb):
                m.d.sync += latched.eq(value[32:])
            m.d.comb += [getattr(lo, f"{name}_lo").eq(value[:32]),
                         getattr(hi, hi_field).eq(latched)]

        wide("trigger_time", "trigger_time", status.trigger_timestamp)
        wide("segment_trigger_time", "segment_trigger_time", entry.trigger_timestamp)
        wide("fcount", "fcount", spy.fcount_value)
        for name, field in shown.shape():
            value = getattr(shown, name)
            if name == "hits":
                for i in range(spy.filters):
                    m.d.comb += whole(f"hits{i}").eq(value[i])
            elif field.width > 32:
                wide(name, name, value)
            else:
                m.d.comb += whole(name).eq(value)
        return m
