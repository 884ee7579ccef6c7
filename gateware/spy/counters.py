# SPDX-License-Identifier: BSD-2-Clause
"""Running counters and two hardware histograms over the transactions the filters select.

Counters (all saturating, cleared by ``clear``):

- over the transactions the filter selects: ``transactions``, ``data_phases``, ``bytes``
  (enabled byte lanes of every completed data phase), ``initiator_wait``, ``target_wait``,
  ``retries``, ``disconnects`` (with and without data), ``target_aborts``,
  ``master_aborts``, and the first-data latency ``latency_sum``/``latency_min``/
  ``latency_max`` (over transactions a target answered, i.e. not master aborts);
- over the whole bus: ``busy_clocks`` (FRAME# or IRDY# asserted) and ``idle_clocks``;
- per comparator: ``hits[i]``, the transactions comparator ``i`` hit.

Histograms (32-bit bins in block RAM, read through ``hist_*``; filter-selected
transactions):

- first-data latency: linear, bin ``n`` counts latency ``n`` clocks, the last bin
  (:data:`HISTOGRAM_BINS` - 1) everything from there up. Master aborts are not counted.
- clocks between transactions: start-to-start distance to the previous selected transaction
  (Pamette's "delta cycle#"), log2 bins: bin 0 holds 0, bin ``k`` holds
  ``2**(k-1) .. 2**k - 1``.

Clearing takes :data:`HISTOGRAM_BINS` clocks for the histograms (``clearing`` is high
meanwhile; samples then are not counted).
"""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from ..logic import top_bit
from ..pci.bus import Termination
from .format import SummaryRecord, TIMESTAMP_BITS
from .summary import saturating_increment

__all__ = ["CounterValues", "Counters", "Histogram", "HISTOGRAM_BINS", "latency_bin",
           "gap_bin"]

#: Bins of each histogram.
HISTOGRAM_BINS = 64


def latency_bin(latency):
    """Python model of the latency histogram's bin (for the host and the tests)."""
    return min(latency, HISTOGRAM_BINS - 1)


def gap_bin(gap):
    """Python model of the gap histogram's bin."""
    return gap.bit_length()


class CounterValues(data.StructLayout):
    """Every counter of :class:`Counters`."""
    def __init__(self, filters=4):
        super().__init__({
            "transactions":   32,
            "data_phases":    32,
            "bytes":          48,
            "busy_clocks":    48,
            "idle_clocks":    48,
            "initiator_wait": 32,
            "target_wait":    32,
            "retries":        32,
            "disconnects":    32,
            "target_aborts":  32,
            "master_aborts":  32,
            "latency_sum":    48,
            "latency_min":    16,
            "latency_max":    16,
            "hits":           data.ArrayLayout(32, filters),
        })


def _add_saturating(m, counter, amount):
    """The statement adding ``amount`` to ``counter``, stopping at its maximum."""
    top = (1 << len(counter)) - 1
    total = Signal(len(counter) + 1)
    m.d.comb += total.eq(counter + amount)
    return counter.eq(Mux(total > top, top, total))


class Histogram(wiring.Component):
    """A histogram in RAM: add 1 to bin ``bin`` when ``sample``; read bins with ``r_addr``.

    Ports:
        sample (In, 1): count one in ``bin``. At most one sample every other clock.
        bin (In, 6): the bin.
        clear (In, 1): start zeroing every bin; ``clearing`` is high until done.
        clearing (Out, 1).
        r_addr (In, 6): bin to read; r_data (Out, 32): its count, one clock later.
    """
    def __init__(self):
        super().__init__({
            "sample": In(1), "bin": In(6), "clear": In(1), "clearing": Out(1),
            "r_addr": In(6), "r_data": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.bins = bins = memory.Memory(shape=32, depth=HISTOGRAM_BINS, init=[])
        update_read = bins.read_port()
        host_read = bins.read_port()
        write = bins.write_port()
        m.d.comb += [host_read.addr.eq(self.r_addr), self.r_data.eq(host_read.data)]

        # Read-modify-write: read in the sample's clock, write one clock later.
        pending = Signal()
        pending_bin = Signal(6)
        sweep = Signal(7, init=HISTOGRAM_BINS)   # == HISTOGRAM_BINS when not clearing
        clearing = Signal()
        m.d.comb += [clearing.eq(sweep != HISTOGRAM_BINS), self.clearing.eq(clearing)]
        m.d.comb += update_read.addr.eq(self.bin)
        m.d.sync += [pending.eq(self.sample & ~clearing & ~self.clear),
                     pending_bin.eq(self.bin)]
        with m.If(clearing):
            m.d.comb += [write.addr.eq(sweep), write.data.eq(0), write.en.eq(1)]
            m.d.sync += sweep.eq(sweep + 1)
        with m.Elif(pending):
            top = update_read.data == 0xFFFF_FFFF
            m.d.comb += [write.addr.eq(pending_bin),
                         write.data.eq(Mux(top, update_read.data, update_read.data + 1)),
                         write.en.eq(1)]
        with m.If(self.clear):
            m.d.sync += [sweep.eq(0), pending.eq(0)]
        return m


class Counters(wiring.Component):
    """The counters and histograms of the spy.

    Ports:
        summary_valid (In, 1), summary (In, SummaryRecord): a finished transaction.
        match (In, 1): the filter selected ``summary``; hits (In, filters): comparators hit.
        address_valid (In, 1), address_match (In, 1): the filter verdict at the address
            phase, so the bytes of the data phases that follow are counted.
        transfer (In, 1), transfer_bytes (In, 4): a completed data phase and its bytes.
        busy (In, 1): FRAME# or IRDY# asserted this clock.
        clear (In, 1): zero everything.
        values (Out, CounterValues(filters)): the counters.
        clearing (Out, 1): the histograms are being zeroed.
        hist_select (In, 1): 0 latency histogram, 1 gap histogram.
        hist_addr (In, 6), hist_data (Out, 32): read a bin, valid one clock later.

    Parameters:
        filters: number of filter comparators.
    """
    def __init__(self, filters=4):
        self.filters = filters
        super().__init__({
            "summary_valid": In(1), "summary": In(SummaryRecord()),
            "match": In(1), "hits": In(filters),
            "address_valid": In(1), "address_match": In(1),
            "transfer": In(1), "transfer_bytes": In(4),
            "busy": In(1), "clear": In(1),
            "values": Out(CounterValues(filters), init={"latency_min": 0xFFFF}),
            "clearing": Out(1),
            "hist_select": In(1), "hist_addr": In(6), "hist_data": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        v = self.values
        s = self.summary
        m.submodules.latency_hist = latency_hist = Histogram()
        m.submodules.gap_hist = gap_hist = Histogram()

        selected = Signal()
        m.d.comb += selected.eq(self.summary_valid & self.match)

        # Bytes: the filter verdict of the address phase covers the data phases after it.
        counting_bytes = Signal()
        with m.If(self.address_valid):
            m.d.sync += counting_bytes.eq(self.address_match)
        bytes_now = Signal()
        m.d.comb += bytes_now.eq(self.transfer & Mux(self.address_valid, self.address_match,
                                                     counting_bytes))

        answered = Signal()
        m.d.comb += answered.eq(s.termination != Termination.MASTER_ABORT)
        last_start = Signal(TIMESTAMP_BITS)
        have_last = Signal()
        gap = Signal(TIMESTAMP_BITS)
        m.d.comb += gap.eq(s.timestamp - last_start)
        gap_index = Signal(6)                     # gap.bit_length(), in log2(48) mux levels
        gap_any, gap_top = top_bit(gap)
        m.d.comb += gap_index.eq(Mux(gap_any, gap_top + 1, 0))

        def count(counter, enable):
            return saturating_increment(counter, enable)

        add_bytes = _add_saturating(m, v.bytes, self.transfer_bytes)
        add_phases = _add_saturating(m, v.data_phases, s.data_phases)
        add_iwait = _add_saturating(m, v.initiator_wait, s.initiator_wait)
        add_twait = _add_saturating(m, v.target_wait, s.target_wait)
        add_latency = _add_saturating(m, v.latency_sum, s.latency)
        m.d.sync += [count(v.busy_clocks, self.busy), count(v.idle_clocks, ~self.busy)]
        with m.If(bytes_now):
            m.d.sync += add_bytes
        with m.If(selected):
            m.d.sync += [
                add_phases, add_iwait, add_twait,
                count(v.transactions, 1),
                count(v.retries, s.termination == Termination.RETRY),
                count(v.disconnects, (s.termination == Termination.DISCONNECT_DATA) |
                      (s.termination == Termination.DISCONNECT_NODATA)),
                count(v.target_aborts, s.termination == Termination.TARGET_ABORT),
                count(v.master_aborts, s.termination == Termination.MASTER_ABORT),
                last_start.eq(s.timestamp), have_last.eq(1),
            ]
            with m.If(answered):
                m.d.sync += add_latency
                with m.If(s.latency < v.latency_min):
                    m.d.sync += v.latency_min.eq(s.latency)
                with m.If(s.latency > v.latency_max):
                    m.d.sync += v.latency_max.eq(s.latency)
        with m.If(self.summary_valid):
            for i in range(self.filters):
                m.d.sync += count(v.hits[i], self.hits[i])

        m.d.comb += [
            latency_hist.sample.eq(selected & answered),
            latency_hist.bin.eq(Mux(s.latency >= HISTOGRAM_BINS - 1, HISTOGRAM_BINS - 1,
                                    s.latency)),
            gap_hist.sample.eq(selected & have_last),
            gap_hist.bin.eq(gap_index),
            latency_hist.clear.eq(self.clear), gap_hist.clear.eq(self.clear),
            self.clearing.eq(latency_hist.clearing | gap_hist.clearing),
            latency_hist.r_addr.eq(self.hist_addr), gap_hist.r_addr.eq(self.hist_addr),
        ]
        hist_select = Signal()
        m.d.sync += hist_select.eq(self.hist_select)
        m.d.comb += self.hist_data.eq(Mux(hist_select, gap_hist.r_data, latency_hist.r_data))

        with m.If(self.clear):
            m.d.sync += [v.eq(0), v.latency_min.eq(0xFFFF), have_last.eq(0),
                         counting_bytes.eq(0)]
        return m
