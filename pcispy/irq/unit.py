# SPDX-License-Identifier: BSD-2-Clause
"""The interrupt-latency unit: what the board wires to its ``irq`` register block and INTA#.

It composes the cycle counter, the interrupt generator, the pending/acknowledge logic, the
checkpoint FIFO, the event counters and the latency histogram (Pamette §5, Shand RR-19 §3).

Life of one interrupt, in clocks of the counter ``now``:

1. the generator fires; from the next clock the interrupt is *pending*: ``inta`` and
   ``interrupt_status`` rise and ``raise_ts`` holds that clock's ``now``;
2. the handler may write checkpoints (``irq.marker_<k>``), each stamped with ``now``;
3. the handler writes ``irq.ack``: in that clock ``pending`` drops (from the next clock),
   ``ack_ts`` takes ``now``, and ``ack_ts - raise_ts`` is counted in the histogram.

A fire that finds the previous interrupt still pending is *missed*: counted, but it does
not move ``raise_ts`` (the handler still owes the older interrupt). ``raised`` counts every
fire, so ``raised == acked + missed + pending`` (modulo 2**32) between clears.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.csr.bank import BlockSignature
from pcispy.irq.registers import IRQ, IRQ_MARKERS
from pcispy.irq.timer import CycleCounter, AtomicRead64
from pcispy.irq.generator import InterruptGenerator
from pcispy.irq.markers import MarkerFIFO
from pcispy.irq.bins import DEFAULT_BINS
from pcispy.irq.histogram import LatencyHistogram

__all__ = ["InterruptUnit"]


class InterruptUnit(wiring.Component):
    """Cycle counter, interrupt generator, acknowledge, checkpoints, counters, histogram.

    The unit is programmed and read through its ``irq`` register block
    (pcispy/irq/registers.py): settings from the RW registers, commands from the WO pulses,
    results to the RO registers. Reading ``<name>_lo`` of a 64-bit value (``now``,
    ``raise_ts``, ``ack_ts``, ``marker_ts``) latches ``<name>_hi`` (the bank's read strobe
    comes in the clock it samples the register; see :class:`~.timer.AtomicRead64`), and
    reading ``marker_ts_lo`` pops the oldest checkpoint. A write to ``marker_<k>`` pushes
    checkpoint ``k`` (its address is the marker id).

    Ports:
        regs (In, BlockSignature(IRQ)): the ``irq`` block of the CSR bank
            (``wiring.connect(m, bank.irq, unit.regs)``).
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
            counters and the histogram are left out, and their registers read 0.
    """
    def __init__(self, *, marker_depth=64, nbins=DEFAULT_BINS, clock_only=False):
        self.marker_depth = marker_depth
        self.nbins = nbins
        self.clock_only = clock_only
        super().__init__({
            "regs": In(BlockSignature(IRQ)),
            "timestamp": Out(64),
            "inta": Out(1), "interrupt_disable": In(1), "interrupt_status": Out(1),
        })

    def _read64(self, m, name, value):
        """Present the 64-bit ``value`` in registers ``<name>_lo``/``<name>_hi``, reading
        ``_lo`` latching ``_hi`` (:class:`~.timer.AtomicRead64`)."""
        lo, hi = getattr(self.regs, f"{name}_lo"), getattr(self.regs, f"{name}_hi")
        m.submodules[f"{name}_reader"] = reader = AtomicRead64()
        m.d.comb += [reader.value.eq(value),
                     reader.read_lo.eq(lo.r_stb),
                     getattr(lo, f"{name}_lo").eq(reader.lo),
                     getattr(hi, f"{name}_hi").eq(reader.hi)]

    def elaborate(self, platform):
        m = Module()
        regs = self.regs
        m.submodules.counter = counter = CycleCounter()
        now = counter.now
        m.d.comb += self.timestamp.eq(now)
        self._read64(m, "now", now)
        if self.clock_only:
            return m

        m.submodules.generator = generator = InterruptGenerator()
        m.submodules.markers = markers = MarkerFIFO(depth=self.marker_depth,
                                                    id_bits=(IRQ_MARKERS - 1).bit_length())
        m.submodules.histogram = histogram = LatencyHistogram(self.nbins)

        arm, stop, clear = regs.command.arm, regs.command.stop, regs.command.clear
        m.d.comb += [
            generator.mode.eq(regs.ctrl.mode),
            generator.delay.eq(regs.delay.delay),
            generator.period.eq(regs.period.period),
            generator.min_gap.eq(regs.min_gap.min_gap),
            generator.max_gap.eq(regs.max_gap.max_gap),
            generator.seed.eq(regs.seed.seed),
            generator.arm.eq(arm),
            generator.stop.eq(stop | clear),
            generator.busy.eq(histogram.busy),
        ]

        # Pending interrupt, acknowledge and their timestamps.
        pending = Signal()
        raise_ts = Signal(64)
        ack_ts = Signal(64)
        ack_taken = Signal()
        m.d.comb += ack_taken.eq(regs.ack.ack & pending & ~clear)
        with m.If(clear):
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
            histogram.clear.eq(clear),
            histogram.index.eq(regs.hist_index.index),
            regs.hist_count.hist_count.eq(histogram.count),
        ]

        m.d.comb += [
            self.inta.eq(pending & ~self.interrupt_disable),
            self.interrupt_status.eq(pending),
        ]

        # Event counters.
        events = [
            (regs.raised.raised, generator.fire),
            (regs.acked.acked, ack_taken),
            (regs.missed.missed, generator.fire & pending & ~ack_taken),
        ]
        for counter_out, event in events:
            with m.If(clear):
                m.d.sync += counter_out.eq(0)
            with m.Elif(event):
                m.d.sync += counter_out.eq(counter_out + 1)

        # Checkpoints: a write to marker register k pushes checkpoint k.
        for k in range(IRQ_MARKERS):
            with m.If(getattr(regs, f"marker_{k}").w_stb):
                m.d.comb += [markers.write.eq(1), markers.write_id.eq(k)]
        m.d.comb += [
            markers.timestamp.eq(now),
            markers.pop.eq(regs.marker_ts_lo.r_stb),
            markers.clear.eq(clear),
            regs.marker_ts_lo.marker_ts_lo.eq(markers.head_ts_lo),
            regs.marker_ts_hi.marker_ts_hi.eq(markers.ts_hi),
            regs.marker_id.id.eq(markers.id),
            regs.marker_id.valid.eq(markers.valid),
            regs.overruns.overruns.eq(markers.overruns),
        ]

        self._read64(m, "raise_ts", raise_ts)
        self._read64(m, "ack_ts", ack_ts)

        status = regs.status
        m.d.comb += [
            status.pending.eq(pending),
            status.running.eq(generator.running),
            status.busy.eq(histogram.busy),
            status.err_mode.eq(generator.refused.mode),
            status.err_delay.eq(generator.refused.delay),
            status.err_gap.eq(generator.refused.gap),
            status.err_seed.eq(generator.refused.seed),
            status.err_busy.eq(generator.refused.busy),
            status.marker_level.eq(markers.level),
        ]
        return m
