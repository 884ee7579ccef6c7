# SPDX-License-Identifier: BSD-2-Clause
"""A log-scaled latency histogram in block RAM.

The bins are declared in :mod:`.bins` (:func:`~.bins.bin_of`, :func:`~.bins.bin_low`,
...), without Amaranth, so that the host labels them without loading the gateware; this
histogram computes the same index in hardware from :data:`~.bins.SUB_BITS` (tests check
the two agree).
"""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from pcispy.core.logic import top_bit
from pcispy.irq.bins import BINS_PER_OCTAVE, DEFAULT_BINS, SUB_BITS

__all__ = ["LatencyHistogram"]


class LatencyHistogram(wiring.Component):
    """Counts latencies into :func:`~.bins.bin_of` bins held in block RAM.

    One sample per clock is accepted; each passes a four-stage pipeline (register, bin,
    read, write back) and shows in :attr:`count` from the fifth clock after it. The
    read-modify-write port is transparent, so back-to-back samples of one bin all count.

    Ports:
        sample (In, 1): count :attr:`latency` in this clock.
        latency (In, 64): the latency, in clocks.
        clear (In, 1): zero every bin (takes ``nbins`` clocks; samples in flight, and
            samples that arrive while :attr:`busy`, are not counted: the owner stops its
            sources first).
        busy (Out, 1): a clear is in progress.
        index (In, 8): the bin the host reads.
        count (Out, 32): the count of bin :attr:`index`, one clock after ``index``
            (0 for an index at or past ``nbins``).

    Parameters:
        nbins: number of bins, a power of two from 16 to 256.
    """
    def __init__(self, nbins=DEFAULT_BINS):
        if nbins not in (16, 32, 64, 128, 256):
            raise ValueError(f"nbins must be a power of two from 16 to 256, not {nbins}")
        self.nbins = nbins
        super().__init__({
            "sample": In(1), "latency": In(64),
            "clear": In(1), "busy": Out(1),
            "index": In(8), "count": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        abits = (self.nbins - 1).bit_length()
        m.submodules.bins = bins = memory.Memory(shape=32, depth=self.nbins, init=[])
        update_w = bins.write_port()
        update_r = bins.read_port(transparent_for=(update_w,))
        host_r = bins.read_port()

        # Stage 0: register the sample (the latency usually comes straight from a 64-bit
        # subtractor; the bin logic below is deep enough on its own).
        latency_valid = Signal()
        latency = Signal(64)
        m.d.sync += [
            latency_valid.eq(self.sample & ~self.clear & ~self.busy),
            latency.eq(self.latency),
        ]

        # Stage 1: the bin index of the sample, computed from SUB_BITS as bin_of() does.
        octave = Signal(range(64))
        m.d.comb += octave.eq(top_bit(latency)[1])   # log2(64) mux levels, not 64
        shift = Signal(range(64))
        m.d.comb += shift.eq(octave - SUB_BITS)
        mantissa = (latency >> shift)[:SUB_BITS]
        log_index = Signal(range(64 * BINS_PER_OCTAVE))
        m.d.comb += log_index.eq(BINS_PER_OCTAVE * (octave - (SUB_BITS - 1)) + mantissa)
        small = latency < BINS_PER_OCTAVE
        too_big = ~small & (log_index >= self.nbins - 1)

        bin_valid = Signal()
        bin_index = Signal(abits)
        m.d.sync += bin_valid.eq(latency_valid & ~self.clear & ~self.busy)
        m.d.sync += bin_index.eq(Mux(small, latency[:abits],
                                     Mux(too_big, self.nbins - 1, log_index[:abits])))

        # Stage 2: read the bin (transparent to the write in this clock); stage 3: write +1.
        write_valid = Signal()
        write_index = Signal(abits)
        m.d.comb += update_r.addr.eq(bin_index)
        m.d.sync += [
            write_valid.eq(bin_valid & ~self.clear & ~self.busy),
            write_index.eq(bin_index),
        ]

        clear_addr = Signal(abits)
        with m.If(self.busy):
            m.d.comb += [update_w.addr.eq(clear_addr), update_w.data.eq(0), update_w.en.eq(1)]
            m.d.sync += clear_addr.eq(clear_addr + 1)
            with m.If(clear_addr == self.nbins - 1):
                m.d.sync += self.busy.eq(0)
        with m.Else():
            m.d.comb += [
                update_w.addr.eq(write_index),
                update_w.data.eq(update_r.data + 1),
                update_w.en.eq(write_valid),
            ]
        with m.If(self.clear):
            m.d.sync += [self.busy.eq(1), clear_addr.eq(0)]

        in_range = Signal()
        m.d.comb += host_r.addr.eq(self.index[:abits])
        m.d.sync += in_range.eq(self.index < self.nbins)
        m.d.comb += self.count.eq(Mux(in_range, host_r.data, 0))
        return m
