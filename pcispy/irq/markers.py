# SPDX-License-Identifier: BSD-2-Clause
"""The checkpoint (marker) FIFO: software timestamps its own progress with one posted write.

Shand (PRL RR-19 §3.2) instruments the path to an interrupt handler without perturbing
it: a write to a region of the board's address space pushes (timer, a few address bits)
into a FIFO. A posted write costs a couple of processor cycles and one free register, so
it can mark ISR entry and exit, deferred work and the wake-up of the user thread. The
host drains the FIFO later, entry by entry.
"""

from amaranth.hdl import Module, ResetInserter
from amaranth.lib import data, fifo, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["MarkerFIFO"]


class MarkerFIFO(wiring.Component):
    """Timestamped checkpoints, popped by the host; lost ones are counted.

    Popping follows the ``_lo``/``_hi`` rule of the register map: the bank samples
    :attr:`head_ts_lo` in the clock it pulses :attr:`pop`; the same clock latches the
    popped entry's high word, id and validity into :attr:`ts_hi`, :attr:`id` and
    :attr:`valid`.

    Ports:
        write (In, 1): a checkpoint write arrived in this clock.
        write_id (In, id_bits): its marker id (from the address written).
        timestamp (In, 64): the cycle counter; the entry records its value in the clock
            of ``write``.
        pop (In, 1): the host reads the oldest entry in this clock.
        head_ts_lo (Out, 32): low timestamp word of the oldest entry (0 when empty).
        ts_hi (Out, 32): high timestamp word of the last popped entry.
        id (Out, id_bits): id of the last popped entry.
        valid (Out, 1): the last pop found an entry (0: the FIFO was empty).
        level (Out, range(depth + 1)): entries waiting.
        overruns (Out, 32): checkpoints lost because the FIFO was full (modulo 2**32).
        clear (In, 1): empty the FIFO and zero ``overruns``.

    Parameters:
        depth: entries held (at most 255, the width of ``irq.status.marker_level``).
        id_bits: width of a marker id.
    """
    def __init__(self, *, depth=64, id_bits=3):
        if not 2 <= depth <= 255:
            raise ValueError(f"marker FIFO depth must be 2..255, not {depth}")
        self.depth = depth
        self.entry = data.StructLayout({"timestamp": 64, "id": id_bits})
        super().__init__({
            "write": In(1), "write_id": In(id_bits), "timestamp": In(64),
            "pop": In(1),
            "head_ts_lo": Out(32), "ts_hi": Out(32), "id": Out(id_bits), "valid": Out(1),
            "level": Out(range(depth + 1)), "overruns": Out(32),
            "clear": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        queue = fifo.SyncFIFOBuffered(width=self.entry.size, depth=self.depth)
        m.submodules.queue = ResetInserter(self.clear)(queue)

        pushed = data.View(self.entry, queue.w_data)
        head = data.View(self.entry, queue.r_data)
        m.d.comb += [
            pushed.timestamp.eq(self.timestamp),
            pushed.id.eq(self.write_id),
            queue.w_en.eq(self.write & ~self.clear),
            queue.r_en.eq(self.pop & ~self.clear),
            self.head_ts_lo.eq(head.timestamp[:32] & queue.r_rdy.replicate(32)),
            self.level.eq(queue.level),
        ]
        with m.If(self.pop):
            m.d.sync += [
                self.ts_hi.eq(head.timestamp[32:] & queue.r_rdy.replicate(32)),
                self.id.eq(head.id & queue.r_rdy.replicate(len(self.id))),
                self.valid.eq(queue.r_rdy),
            ]
        with m.If(self.clear):
            m.d.sync += self.overruns.eq(0)
        with m.Elif(self.write & ~queue.w_rdy):
            m.d.sync += self.overruns.eq(self.overruns + 1)
        return m
