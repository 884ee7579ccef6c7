# SPDX-License-Identifier: BSD-2-Clause
"""The interrupt-latency unit: what the board wires to its ``irq`` register block and INTA#.

It composes the cycle counter, the interrupt generator, the pending/acknowledge logic, the
checkpoint FIFO, the event counters and the latency histogram (Pamette §5, Shand RR-19 §3).

Life of one interrupt, in clocks of the counter ``now``:

1. the generator fires; from the next clock the interrupt is *pending*: ``inta`` and
   ``interrupt_status`` rise and ``raise_ts`` holds that clock's ``now``;
2. the handler may write checkpoints (``marker_write``), each stamped with ``now``;
3. the handler writes ``irq.ack``: in that clock ``pending`` drops (from the next clock),
   ``ack_ts`` takes ``now``, and ``ack_ts - raise_ts`` is counted in the histogram.

A fire that finds the previous interrupt still pending is *missed*: counted, but it does
not move ``raise_ts`` (the handler still owes the older interrupt). ``raised`` counts every
fire, so ``raised == acked + missed + pending`` (modulo 2**32) between clears.
"""

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from pcispy.irq.registers import IRQ, IRQ_MARKERS
from pcispy.irq.timer import CycleCounter, AtomicRead64
from pcispy.irq.generator import InterruptGenerator
from pcispy.irq.markers import MarkerFIFO
from pcispy.irq.histogram import LatencyHistogram, DEFAULT_BINS

__all__ = ["register_layout", "InterruptUnit"]


def register_layout(name):
    """The ``data`` layout (fields at their bits) of register ``name`` of the ``irq`` block."""
    reg = IRQ.register(name)
    return data.FlexibleLayout(32, {
        f.name: data.Field(unsigned(f.width), f.lsb) for f in reg.fields})


class InterruptUnit(wiring.Component):
    """Cycle counter, interrupt generator, acknowledge, checkpoints, counters, histogram.

    Register ports are named after the ``irq`` registers (pcispy/irq/registers.py) and are meant
    to be wired one to one to the CSR bank: ``In`` for RW values and WO pulses, ``Out``
    for RO values, and ``*_read`` strobes for the registers whose read has an effect
    (the bank pulses them in the clock it samples the register; see
    :class:`~.timer.AtomicRead64`).

    Ports:
        mode (In, 2): ``irq.ctrl.mode``.
        delay, period, min_gap, max_gap, seed (In, 32): the RW registers of those names.
        arm, stop, clear (In, 1): ``irq.command`` pulses.
        ack (In, 1): ``irq.ack`` pulse: acknowledge the pending interrupt.
        status (Out, layout of ``irq.status``).
        now_lo, now_hi (Out, 32), now_lo_read (In, 1): the cycle counter.
        raise_ts_lo, raise_ts_hi (Out, 32), raise_ts_lo_read (In, 1): last raise.
        ack_ts_lo, ack_ts_hi (Out, 32), ack_ts_lo_read (In, 1): last effective ack.
        raised, acked, missed, overruns (Out, 32): event counters (zeroed by ``clear``).
        marker_ts_lo, marker_ts_hi (Out, 32), marker_ts_lo_read (In, 1): checkpoint pop.
        marker_id (Out, layout of ``irq.marker_id``): id and validity of the popped entry.
        hist_index (In, 8), hist_count (Out, 32): histogram bin read.
        marker_write (In, 1), marker_write_id (In, 3): a checkpoint write (any write to
            register ``irq.marker_<id>``), driven by the BAR0 backend.
        timestamp (Out, 64): the cycle counter, for other blocks.
        inta (Out, 1): request INTA# (active-high inside; pads make it open-drain low).
        interrupt_disable (In, 1): the config space's Command bit 10: masks ``inta``.
        interrupt_status (Out, 1): for the config space's Status bit 3: the interrupt is
            pending, whether or not it is masked.

    Parameters:
        marker_depth: checkpoint FIFO entries.
        nbins: histogram bins (see :mod:`.histogram`).
        clock_only: build the cycle counter (``now``, ``timestamp``) alone, for a board
            that cannot pull INTA# and whose checkpoints no handler writes over the bus (a
            passive build): the generator, the acknowledge, the checkpoint FIFO, the
            counters and the histogram are left out, and their ports read 0.
    """
    def __init__(self, *, marker_depth=64, nbins=DEFAULT_BINS, clock_only=False):
        self.marker_depth = marker_depth
        self.nbins = nbins
        self.clock_only = clock_only
        id_bits = (IRQ_MARKERS - 1).bit_length()
        super().__init__({
            "mode": In(2),
            "delay": In(32), "period": In(32), "min_gap": In(32), "max_gap": In(32),
            "seed": In(32),
            "arm": In(1), "stop": In(1), "clear": In(1), "ack": In(1),
            "status": Out(register_layout("status")),
            "now_lo": Out(32), "now_hi": Out(32), "now_lo_read": In(1),
            "raise_ts_lo": Out(32), "raise_ts_hi": Out(32), "raise_ts_lo_read": In(1),
            "ack_ts_lo": Out(32), "ack_ts_hi": Out(32), "ack_ts_lo_read": In(1),
            "raised": Out(32), "acked": Out(32), "missed": Out(32), "overruns": Out(32),
            "marker_ts_lo": Out(32), "marker_ts_hi": Out(32), "marker_ts_lo_read": In(1),
            "marker_id": Out(register_layout("marker_id")),
            "hist_index": In(8), "hist_count": Out(32),
            "marker_write": In(1), "marker_write_id": In(id_bits),
            "timestamp": Out(64),
            "inta": Out(1), "interrupt_disable": In(1), "interrupt_status": Out(1),
        })

    def _read64(self, m, name, value):
        """Present the 64-bit ``value`` as ports ``<name>_lo``/``<name>_hi``, reading
        ``_lo`` (``<name>_lo_read``) latching ``_hi`` (:class:`~.timer.AtomicRead64`)."""
        m.submodules[f"{name}_reader"] = reader = AtomicRead64()
        m.d.comb += [reader.value.eq(value),
                     reader.read_lo.eq(getattr(self, f"{name}_lo_read")),
                     getattr(self, f"{name}_lo").eq(reader.lo),
                     getattr(self, f"{name}_hi").eq(reader.hi)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.counter = counter = CycleCounter()
        now = counter.now
        m.d.comb += self.timestamp.eq(now)
        self._read64(m, "now", now)
        if self.clock_only:
            return m

        m.submodules.generator = generator = InterruptGenerator()
        m.submodules.markers = markers = MarkerFIFO(depth=self.marker_depth,
                                                    id_bits=len(self.marker_write_id))
        m.submodules.histogram = histogram = LatencyHistogram(self.nbins)

        m.d.comb += [
            generator.mode.eq(self.mode),
            generator.delay.eq(self.delay),
            generator.period.eq(self.period),
            generator.min_gap.eq(self.min_gap),
            generator.max_gap.eq(self.max_gap),
            generator.seed.eq(self.seed),
            generator.arm.eq(self.arm),
            generator.stop.eq(self.stop | self.clear),
            generator.busy.eq(histogram.busy),
        ]

        # Pending interrupt, acknowledge and their timestamps.
        pending = Signal()
        raise_ts = Signal(64)
        ack_ts = Signal(64)
        ack_taken = Signal()
        m.d.comb += ack_taken.eq(self.ack & pending & ~self.clear)
        with m.If(self.clear):
            m.d.sync += pending.eq(0)
        with m.Elif(generator.fire & (~pending | ack_taken)):
            # A new interrupt; its first pending clock is the next one.
            m.d.sync += [pending.eq(1), raise_ts.eq(now + 1)]
        with m.Elif(ack_taken):
            m.d.sync += pending.eq(0)
        with m.If(ack_taken):
            m.d.sync += ack_ts.eq(now)
        m.d.comb += [
            histogram.sample.eq(ack_taken),
            histogram.latency.eq(now - raise_ts),
            histogram.clear.eq(self.clear),
            histogram.index.eq(self.hist_index),
            self.hist_count.eq(histogram.count),
        ]

        m.d.comb += [
            self.inta.eq(pending & ~self.interrupt_disable),
            self.interrupt_status.eq(pending),
        ]

        # Event counters.
        events = [
            (self.raised, generator.fire),
            (self.acked, ack_taken),
            (self.missed, generator.fire & pending & ~ack_taken),
        ]
        for counter_out, event in events:
            with m.If(self.clear):
                m.d.sync += counter_out.eq(0)
            with m.Elif(event):
                m.d.sync += counter_out.eq(counter_out + 1)

        # Checkpoints.
        m.d.comb += [
            markers.write.eq(self.marker_write),
            markers.write_id.eq(self.marker_write_id),
            markers.timestamp.eq(now),
            markers.pop.eq(self.marker_ts_lo_read),
            markers.clear.eq(self.clear),
            self.marker_ts_lo.eq(markers.head_ts_lo),
            self.marker_ts_hi.eq(markers.ts_hi),
            self.marker_id.id.eq(markers.id),
            self.marker_id.valid.eq(markers.valid),
            self.overruns.eq(markers.overruns),
        ]

        self._read64(m, "raise_ts", raise_ts)
        self._read64(m, "ack_ts", ack_ts)

        m.d.comb += [
            self.status.pending.eq(pending),
            self.status.running.eq(generator.running),
            self.status.busy.eq(histogram.busy),
            self.status.err_mode.eq(generator.refused.mode),
            self.status.err_delay.eq(generator.refused.delay),
            self.status.err_gap.eq(generator.refused.gap),
            self.status.err_seed.eq(generator.refused.seed),
            self.status.err_busy.eq(generator.refused.busy),
            self.status.marker_level.eq(markers.level),
        ]
        return m
