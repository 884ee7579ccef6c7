# SPDX-License-Identifier: BSD-2-Clause
"""Running counters and two hardware histograms over the transactions the filters select.

Counters (all saturating, cleared by ``clear``):

- over the transactions the filter selects: ``transactions``, ``data_phases``, ``bytes``
  (enabled byte lanes of every completed data phase), ``initiator_wait``, ``target_wait``,
  ``retries``, ``disconnects`` (with and without data), ``target_aborts``,
  ``master_aborts``, and the first-data latency ``latency_sum``/``latency_min``/
  ``latency_max`` (over transactions a target answered, i.e. not master aborts);
- over the whole bus: ``busy_clocks`` (FRAME# or IRDY# asserted) and ``idle_clocks``;
- the board's own register accesses, when left out of all the others (``skip``):
  ``own_transactions`` and ``own_clocks`` (their clocks, not in ``busy_clocks``);
- per comparator: ``hits[i]``, the transactions comparator ``i`` hit;
- per comparator, a whole set (:class:`FilterCounters`, :class:`FilterCounter`): the
  counters above over the transactions comparator ``i`` hits, with ``busy_clocks`` the
  clocks of those transactions (idle clocks stay a whole-bus counter). They live in block
  RAM and are read one at a time through ``fcount_select``/``fcount_value``.

Histograms (32-bit bins in block RAM, read through ``hist_*``; filter-selected
transactions):

- first-data latency: linear, bin ``n`` counts latency ``n`` clocks, the last bin
  (:data:`HISTOGRAM_BINS` - 1) everything from there up. Master aborts are not counted.
- clocks between transactions: start-to-start distance to the previous selected transaction
  (Pamette's "delta cycle#"), log2 bins: bin 0 holds 0, bin ``k`` holds
  ``2**(k-1) .. 2**k - 1``.

A snapshot holds what the histograms show at one clock, copy-on-write, while they count
on (:class:`Histogram`); the counters' snapshot is their registers'
(:class:`~pcispy.spy.spy.SpyUnit`).

Clearing takes :data:`HISTOGRAM_BINS` + 1 clocks for the histograms (``clearing`` is high
meanwhile; samples then are not counted) and one round of :class:`FilterCounters` for the
per-filter counters (``clearing`` is high meanwhile; transactions then are counted).
"""

from amaranth.hdl import Const, Module, Signal, Mux, Value
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from pcispy.core.logic import top_bit
from pcispy.pci.bus import Termination
from pcispy.spy.format import SummaryRecord, TIMESTAMP_BITS
from pcispy.spy.registers import (COUNTER_INIT, COUNTER_WIDTHS, FILTER_COUNTER_BITS,
                                  FILTER_COUNTER_INIT, FILTER_COUNTER_WIDTHS, HISTOGRAM_BINS,
                                  FilterCounter)
from pcispy.spy.summary import saturating_increment

__all__ = ["CounterValues", "COUNTER_INIT", "Counters", "Histogram", "HISTOGRAM_BINS",
           "latency_bin", "gap_bin", "FilterCounter", "FilterCountSelect", "FilterCounters",
           "FILTER_COUNTER_WIDTHS", "FILTER_COUNTER_BITS", "FILTER_COUNTER_INIT",
           "TRANSACTION_BYTES_BITS"]


def latency_bin(latency):
    """Python model of the latency histogram's bin (for the host and the tests)."""
    return min(latency, HISTOGRAM_BINS - 1)


def gap_bin(gap):
    """Python model of the gap histogram's bin."""
    return gap.bit_length()


class CounterValues(data.StructLayout):
    """Every counter of :class:`Counters` (:data:`~pcispy.spy.registers.COUNTER_WIDTHS`),
    ``hits`` one per filter comparator."""
    def __init__(self, filters=4):
        super().__init__({name: data.ArrayLayout(width, filters) if name == "hits" else width
                          for name, width in COUNTER_WIDTHS.items()})


def _add_saturating(m, counter, amount):
    """The statement adding ``amount`` to ``counter``, stopping at its maximum."""
    top = (1 << len(counter)) - 1
    total = Signal(len(counter) + 1)
    m.d.comb += total.eq(counter + amount)
    return counter.eq(Mux(total > top, top, total))


class Histogram(wiring.Component):
    """A histogram in RAM: add 1 to bin ``bin`` when ``sample``; read bins with ``r_addr``,
    live or as of a snapshot.

    Updates are read-modify-writes (read in the clock after the sample's, written in the
    next), and so is the clear: it walks the bins one a clock, writing zeros.

    The snapshot (``snapshot``, until ``release``) is copy-on-write, so that a host reading
    the bins one by one, slower than the bus, gets every bin as it was at one clock while
    counting goes on, nothing lost or delayed: the first write to a bin after the snapshot
    (a sample's, or the clear's zero) copies the bin's old value into a second RAM and
    marks the bin; ``r_data`` shows the copy of a marked bin and the live bin of any other,
    which no write has touched since. ``release`` (or a new snapshot) unmarks every bin.
    A sample in the snapshot's clock is after it, as for the counters
    (:class:`~pcispy.spy.spy.SpyUnit`).

    Ports:
        sample (In, 1): count one in ``bin``. At most one sample every other clock.
        bin (In, 6): the bin.
        clear (In, 1): start zeroing every bin; ``clearing`` is high from the next clock
            until done (:data:`HISTOGRAM_BINS` + 1 clocks: samples then are not counted).
        clearing (Out, 1).
        snapshot (In, 1): ``r_data`` shows the bins with the samples before this clock
            counted (for addresses presented two clocks after it or later), until ``release``.
        release (In, 1): ``r_data`` shows the live bins again.
        r_addr (In, 6): bin to read; r_data (Out, 32): its count, two clocks later.
    """
    def __init__(self):
        super().__init__({
            "sample": In(1), "bin": In(6), "clear": In(1), "clearing": Out(1),
            "snapshot": In(1), "release": In(1),
            "r_addr": In(6), "r_data": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.bins = bins = memory.Memory(shape=32, depth=HISTOGRAM_BINS, init=[])
        m.submodules.held_bins = held_bins = memory.Memory(shape=32, depth=HISTOGRAM_BINS,
                                                           init=[])
        update_read = bins.read_port()
        host_read = bins.read_port()
        write = bins.write_port()
        copy = held_bins.write_port()
        held_read = held_bins.read_port()

        # Every input but the host's read waits a clock in a register: the bin of a sample
        # (the log2 of a 48-bit difference, for the gap histogram) and the RAM's address
        # are too long a path for one clock of a 66 MHz bus. The strobes wait with the
        # samples, so a snapshot still divides them where it did.
        sample, bin_, clear = Signal(), Signal(6), Signal()
        snapshot, release = Signal(), Signal()
        m.d.sync += [sample.eq(self.sample), bin_.eq(self.bin), clear.eq(self.clear),
                     snapshot.eq(self.snapshot), release.eq(self.release)]

        # The snapshot, held as spy.control holds the counters: the writes of the samples
        # of its clock and after, until release, copy before they write.
        held = Signal()
        freezing = Signal()
        with m.If(snapshot):
            m.d.sync += held.eq(1)
        with m.Elif(release):
            m.d.sync += held.eq(0)
        m.d.comb += freezing.eq(snapshot | (held & ~release))

        # Read: a sample's bin, or the clear's next bin. Write, one clock later: +1
        # (saturating) or 0, and the copy of the old value where due.
        sweep = Signal(range(HISTOGRAM_BINS + 1), init=HISTOGRAM_BINS)   # at the top: idle
        sweeping = Signal()
        clearing = Signal()
        pending, pending_zero, pending_frozen = Signal(), Signal(), Signal()
        pending_bin = Signal(6)
        address = Signal(6)
        m.d.comb += [sweeping.eq(sweep != HISTOGRAM_BINS),
                     clearing.eq(sweeping | pending_zero), self.clearing.eq(clearing),
                     address.eq(Mux(sweeping, sweep, bin_)),
                     update_read.addr.eq(address)]
        m.d.sync += [pending.eq((sweeping | sample & ~clearing) & ~clear),
                     pending_zero.eq(sweeping & ~clear), pending_bin.eq(address),
                     pending_frozen.eq(freezing)]
        with m.If(sweeping):
            m.d.sync += sweep.eq(sweep + 1)
        with m.If(clear):
            m.d.sync += sweep.eq(0)
        old = update_read.data
        top = old == 0xFFFF_FFFF
        m.d.comb += [write.addr.eq(pending_bin), write.en.eq(pending),
                     write.data.eq(Mux(pending_zero, 0, Mux(top, old, old + 1)))]

        copied = Signal(HISTOGRAM_BINS)     # bins whose snapshot value is in held_bins
        first = Signal()
        m.d.comb += [first.eq(pending & pending_frozen & ~copied.bit_select(pending_bin, 1)),
                     copy.addr.eq(pending_bin), copy.data.eq(old), copy.en.eq(first)]
        # A write of a sample before a (new) snapshot or of the clock of a release
        # copies nothing that stays marked: the bins it updates are of the new snapshot
        # or of none.
        with m.If(snapshot | release):
            m.d.sync += copied.eq(0)
        with m.Elif(first):
            m.d.sync += copied.bit_select(pending_bin, 1).eq(1)

        # The mark is registered in the clock the RAMs read: the pair always agrees (a
        # bin marked in that clock still reads its old value from the live RAM).
        show_copy = Signal()
        m.d.sync += show_copy.eq(copied.bit_select(self.r_addr, 1))
        # r_data is registered too: the RAMs' outputs are slow, and the register bank's
        # read multiplexer follows.
        m.d.comb += [host_read.addr.eq(self.r_addr), held_read.addr.eq(self.r_addr)]
        m.d.sync += self.r_data.eq(Mux(show_copy, held_read.data, host_read.data))
        return m


#: Bytes of one transaction, as the per-filter ``bytes`` counters add them, saturate here
#: (the summary's data_phases field saturates first: 65535 phases are 262140 or 524280 bytes).
TRANSACTION_BYTES_BITS = 20


class FilterCountSelect(data.StructLayout):
    """Which per-filter counter ``fcount_value`` shows."""
    def __init__(self, filters=4):
        super().__init__({"counter": FilterCounter,
                          "filter": max(1, (filters - 1).bit_length())})


class FilterCounters(wiring.Component):
    """A counter set per filter comparator, in block RAM.

    Filter ``i`` counts the transactions comparator ``i`` hits (``hits[i]`` of the
    summary), whatever the others and the combination say: the counters of
    :class:`FilterCounter`, with the combined counters' meanings, except that its
    ``busy_clocks`` counts the clocks of those transactions (the sum of their summaries'
    ``duration``) and its ``bytes`` the bytes of their completed data phases (added when
    the transaction ends). Counters saturate at their width; ``clear`` zeroes them.

    How, and why so: the board is short of LUTs and of timing, so every counter is
    updated from registers through one small adder, and the totals live in block RAM.
    A finished transaction's increments are registered per filter (zero where its
    comparator did not hit); each filter adds them into a narrow *accumulator* per
    counter. A flush engine walks the block RAM, one word a clock (a round of
    ``16 << filter bits`` clocks): on its word's turn an accumulator hands over its sum
    (that clock's increment included) and restarts from zero, and the pipeline adds the
    sum into the word, saturating (or takes the minimum or maximum), and writes it back
    three clocks later. Between two turns an accumulator takes at most one round of
    increments, ``round * (2**w - 1) < 2**(w + log2(round))`` for a ``w``-bit increment,
    which is its width: it never overflows, and adding a sum with saturation gives what
    adding each increment with saturation would. The host reads the words through the
    RAM's second read port, so no wide multiplexer serves it either.

    A transaction shows in the counters at most ``round + 6`` clocks after its summary.
    ``clear`` (and reset) zero the accumulators at once and restart the engine on a
    *zero round*, which writes each word's accumulator onto zero instead of onto its old
    value: ``clearing`` is high for that round, after which every counter reads exactly
    what came after the clear (the clear's own clock counts nothing, as in
    :class:`Counters`).

    Ports:
        summary_valid (In, 1), summary (In, SummaryRecord): a finished transaction.
        hits (In, filters): the comparators that hit it.
        address_valid (In, 1): the (last) address phase of a transaction.
        transfer (In, 1), transfer_bytes (In, 4): a completed data phase and its bytes.
        clear (In, 1): zero every counter; ``clearing`` (Out, 1) until done.
        select (In, FilterCountSelect(filters)): the counter ``value`` shows.
        value (Out, 48): that counter, from the third clock after ``select`` changes.

    Parameters:
        filters: number of filter comparators (1..8).
        transaction_bytes_bits: width of one transaction's byte count (saturating),
            :data:`TRANSACTION_BYTES_BITS` unless a test wants to reach its top quickly.
    """
    def __init__(self, filters=4, *, transaction_bytes_bits=TRANSACTION_BYTES_BITS):
        if not 1 <= filters <= 8:
            raise ValueError(f"filter comparators must be 1..8, not {filters}")
        self.filters = filters
        self.transaction_bytes_bits = transaction_bytes_bits
        select = FilterCountSelect(filters)
        #: Words of the block RAM: 16 per filter (the counter in the low 4 address bits).
        self.depth = 1 << select.size
        #: Clocks ``clearing`` stays high from the clock after a clear: a round, then the
        #: last word through the pipeline.
        self.clear_clocks = self.depth + 3
        #: The block RAM (also the tests' backdoor): word ``filter * 16 + counter``.
        self.words = memory.Memory(
            shape=FILTER_COUNTER_BITS, depth=self.depth,
            init=[FILTER_COUNTER_INIT[FilterCounter(w & 15)] if (w & 15) < len(FilterCounter)
                  else 0 for w in range(self.depth)],
            # Small as it is, it belongs in block RAM: as LUT RAM it takes ~600 LUTs.
            attrs={"ram_style": "block"})
        super().__init__({
            "summary_valid": In(1), "summary": In(SummaryRecord()), "hits": In(filters),
            "address_valid": In(1), "transfer": In(1), "transfer_bytes": In(4),
            "clear": In(1), "clearing": Out(1),
            "select": In(select), "value": Out(FILTER_COUNTER_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        s = self.summary
        C = FilterCounter
        extra = self.depth.bit_length() - 1      # log2 of the round
        last_word = self.depth - 1

        # --- Bytes of the transaction in flight, from registered transfers. The
        # registered address phase comes before the registered transfers of its
        # transaction and after those of the transaction before it, so at a summary
        # `bytes_now` holds exactly the bytes of the transaction it summarises.
        transfer = Signal()
        transfer_bytes = Signal(4)
        address_valid = Signal()
        m.d.sync += [transfer.eq(self.transfer), transfer_bytes.eq(self.transfer_bytes),
                     address_valid.eq(self.address_valid)]
        txn_bytes = Signal(self.transaction_bytes_bits)
        bytes_total = Signal(len(txn_bytes) + 1)
        bytes_now = Signal(len(txn_bytes))
        m.d.comb += [
            bytes_total.eq(Mux(address_valid, 0, txn_bytes) + Mux(transfer, transfer_bytes, 0)),
            bytes_now.eq(Mux(bytes_total[-1], (1 << len(txn_bytes)) - 1, bytes_total)),
        ]
        m.d.sync += txn_bytes.eq(bytes_now)

        # --- What each counter adds for the finished transaction `s`.
        term = s.termination
        answered = term != Termination.MASTER_ABORT
        amounts = {
            C.TRANSACTIONS:   Const(1, 1),
            C.DATA_PHASES:    s.data_phases,
            C.BYTES:          bytes_now,
            C.BUSY_CLOCKS:    s.duration,
            C.INITIATOR_WAIT: s.initiator_wait,
            C.TARGET_WAIT:    s.target_wait,
            C.RETRIES:        term == Termination.RETRY,
            C.DISCONNECTS:    (term == Termination.DISCONNECT_DATA) |
                              (term == Termination.DISCONNECT_NODATA),
            C.TARGET_ABORTS:  term == Termination.TARGET_ABORT,
            C.MASTER_ABORTS:  term == Termination.MASTER_ABORT,
            C.LATENCY_SUM:    Mux(answered, s.latency, 0),
        }

        # --- The flush pointer: word `pointer` = counter pointer[:4] of filter pointer[4:],
        # and the same position one-hot (`turn`, a ring of flip-flops: no decoder).
        pointer = Signal(range(self.depth))
        turn = Signal(self.depth, init=1)
        zeroing = Signal(init=1)          # this round writes onto zero (after reset, clear)
        m.d.sync += [pointer.eq(pointer + 1), turn.eq(turn.rotate_left(1))]
        with m.If(pointer == last_word):
            m.d.sync += zeroing.eq(0)
        with m.If(self.clear):
            m.d.sync += [pointer.eq(0), turn.eq(1), zeroing.eq(1)]

        # --- Per filter and counter: the registered increment (zero unless the filter's
        # comparator hit the summary: a synchronous reset of the register, no gate per
        # bit) and the accumulator adding it. On its turn the accumulator's sum (this
        # clock's increment included) moves into its `out` register and the accumulator
        # restarts from zero; `out` is zero on every other clock, so the taken value is
        # the OR of every `out` (an OR tree: cheaper than a ~50-way multiplexer).
        outs = []
        none_yet = 1 << 8                  # a latency minimum accumulator with nothing in
        for f in range(self.filters):
            hit = Signal(name=f"hit_{f}")
            m.d.comb += hit.eq(self.summary_valid & self.hits[f] & ~self.clear)

            def take(counter):
                return turn[f << 4 | counter.value]

            for counter, amount in amounts.items():
                name = f"{counter.name.lower()}_{f}"
                # (No reset: loaded every clock; `out` too. A register with a reset of its
                # own cannot fold its gate into the flip-flop's synchronous reset.)
                increment = Signal(len(Value.cast(amount)), name=f"inc_{name}",
                                   reset_less=True)
                acc = Signal(len(increment) + extra, name=f"acc_{name}")
                total = Signal(len(acc), name=f"sum_{name}")
                out = Signal(len(acc), name=f"out_{name}", reset_less=True)
                m.d.sync += [increment.eq(Mux(hit, amount, 0)),
                             acc.eq(Mux(take(counter) | self.clear, 0, total)),
                             out.eq(Mux(take(counter), total, 0))]
                m.d.comb += total.eq(acc + increment)
                outs.append(out)

            sample = Signal(name=f"inc_latency_valid_{f}")
            latency = Signal(8, name=f"inc_latency_{f}")
            m.d.sync += [sample.eq(hit & answered), latency.eq(s.latency)]
            low = Signal(9, init=none_yet, name=f"acc_latency_min_{f}")
            high = Signal(8, name=f"acc_latency_max_{f}")
            new_low = Mux(sample & (latency < low), latency, low)
            new_high = Mux(sample & (latency > high), latency, high)
            low_out = Signal(9, name=f"out_latency_min_{f}", reset_less=True)
            high_out = Signal(8, name=f"out_latency_max_{f}", reset_less=True)
            m.d.sync += [
                low.eq(Mux(take(C.LATENCY_MIN) | self.clear, none_yet, new_low)),
                high.eq(Mux(take(C.LATENCY_MAX) | self.clear, 0, new_high)),
                low_out.eq(Mux(take(C.LATENCY_MIN), new_low, 0)),
                high_out.eq(Mux(take(C.LATENCY_MAX), new_high, 0)),
            ]
            outs += [low_out, high_out]

        # --- The flush pipeline. Clock A: the pointer reads its word, the accumulator
        # moves into `out`. B: the old value (zero in a zero round) and the OR of the
        # `out`s are registered. C: added (saturating), or the minimum or maximum taken.
        # D: written back. `clear` drops what is in flight: the zero round rewrites it all.
        m.submodules.words = words = self.words
        flush_read = words.read_port()
        host_read = words.read_port()
        write = words.write_port()
        # The host's value is registered: the block RAM's output is slow, and the
        # register bank's read multiplexer follows.
        m.d.comb += [host_read.addr.eq(self.select), flush_read.addr.eq(pointer)]
        m.d.sync += self.value.eq(host_read.data)

        word_shape = range(self.depth)
        a_valid, a_zero, a_word = Signal(), Signal(), Signal(word_shape)
        m.d.sync += [a_valid.eq((pointer[:4] < len(C)) & ~self.clear), a_zero.eq(zeroing),
                     a_word.eq(pointer)]
        b_valid, b_zero, b_kind = Signal(), Signal(), Signal(C)
        b_word = Signal(word_shape)
        b_old = Signal(FILTER_COUNTER_BITS)   # zero in a zero round
        b_delta = Signal(FILTER_COUNTER_BITS)
        taken = 0
        for out in outs:
            taken = taken | out
        m.d.sync += [b_valid.eq(a_valid & ~self.clear), b_zero.eq(a_zero), b_word.eq(a_word),
                     b_kind.eq(a_word[:4]), b_old.eq(Mux(a_zero, 0, flush_read.data)),
                     b_delta.eq(taken)]
        c_valid, c_zero, c_word = Signal(), Signal(), Signal(word_shape)
        c_value = Signal(FILTER_COUNTER_BITS)
        total = Signal(FILTER_COUNTER_BITS + 1)
        m.d.comb += total.eq(b_old + b_delta)
        wide = (b_kind == C.BYTES) | (b_kind == C.BUSY_CLOCKS) | (b_kind == C.LATENCY_SUM)
        over = Mux(wide, total[48], total[32:].any())
        limit = Mux(wide, (1 << 48) - 1, (1 << 32) - 1)
        combined = Signal(FILTER_COUNTER_BITS)
        # The latency bounds: 16-bit words, 8-bit samples; a minimum's delta with bit 8
        # set saw nothing, and its word starts from 0xFFFF (not zero) in a zero round.
        old16, sample, nothing = b_old[:16], b_delta[:8], b_delta[8]
        with m.Switch(b_kind):
            with m.Case(C.LATENCY_MIN):
                m.d.comb += combined.eq(Mux(nothing, Mux(b_zero, 0xFFFF, old16),
                                            Mux(b_zero | (sample < old16), sample, old16)))
            with m.Case(C.LATENCY_MAX):
                m.d.comb += combined.eq(Mux(sample > old16, sample, old16))
            with m.Default():
                m.d.comb += combined.eq(Mux(over, limit, total))
        m.d.sync += [c_valid.eq(b_valid & ~self.clear), c_word.eq(b_word), c_zero.eq(b_zero),
                     c_value.eq(combined)]
        m.d.comb += [write.addr.eq(c_word), write.data.eq(c_value),
                     write.en.eq(c_valid & ~self.clear),
                     self.clearing.eq(zeroing | a_zero | b_zero | c_zero)]
        return m


class Counters(wiring.Component):
    """The counters and histograms of the spy.

    A transaction marked ``skip`` (the board's own register access, when the spy leaves
    those out) is in no counter, histogram or per-filter counter: it counts in
    ``own_transactions``, and its clocks in ``own_clocks`` instead of ``busy_clocks``, so
    that ``busy_clocks + idle_clocks + own_clocks`` are the clocks counted.

    Ports:
        summary_valid (In, 1), summary (In, SummaryRecord): a finished transaction.
        match (In, 1): the filter selected ``summary``; hits (In, filters): comparators hit.
        skip (In, 1): with ``summary_valid``: leave the transaction out (count it as own).
        address_valid (In, 1), address_match (In, 1): the filter verdict at the address
            phase, so the bytes of the data phases that follow are counted.
        transfer (In, 1), transfer_bytes (In, 4): a completed data phase and its bytes.
        busy (In, 1): FRAME# or IRDY# asserted this clock.
        skip_clock (In, 1): this clock belongs to a transaction left out (``skip``).
        clear (In, 1): zero everything.
        values (Out, CounterValues(filters)): the counters.
        clearing (Out, 1): the histograms are being zeroed.
        hist_select (In, 1): 0 latency histogram, 1 gap histogram.
        hist_addr (In, 6), hist_data (Out, 32): read a bin, valid two clocks later.
        hist_snapshot, hist_release (In, 1): hold what ``hist_data`` shows at this clock's
            counts, and let it follow the histograms again (:class:`Histogram`).
        fcount_select (In, FilterCountSelect(filters)), fcount_value (Out, 48): read a
            per-filter counter (:class:`FilterCounters`), valid three clocks later.

    Parameters:
        filters: number of filter comparators.
        own: the board can mark its own transactions (``skip``, ``skip_clock``); without,
            the own counters are constant zero (a passive build: its host's accesses do
            not reach the bus).
    """
    def __init__(self, filters=4, *, own=True):
        self.filters = filters
        self.own = own
        #: The per-filter counter sets.
        self.per_filter = FilterCounters(filters)
        super().__init__({
            "summary_valid": In(1), "summary": In(SummaryRecord()),
            "match": In(1), "hits": In(filters), "skip": In(1),
            "address_valid": In(1), "address_match": In(1),
            "transfer": In(1), "transfer_bytes": In(4),
            "busy": In(1), "skip_clock": In(1), "clear": In(1),
            "values": Out(CounterValues(filters), init=COUNTER_INIT),
            "clearing": Out(1),
            "hist_select": In(1), "hist_addr": In(6), "hist_data": Out(32),
            "hist_snapshot": In(1), "hist_release": In(1),
            "fcount_select": In(FilterCountSelect(filters)),
            "fcount_value": Out(FILTER_COUNTER_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        v = self.values
        s = self.summary
        m.submodules.latency_hist = latency_hist = Histogram()
        m.submodules.gap_hist = gap_hist = Histogram()
        m.submodules.per_filter = per_filter = self.per_filter
        # What is counted: every transaction but the own ones left out.
        summary_valid, skipped, skip_clock = Signal(), Signal(), Signal()
        if self.own:
            m.d.comb += [summary_valid.eq(self.summary_valid & ~self.skip),
                         skipped.eq(self.summary_valid & self.skip),
                         skip_clock.eq(self.skip_clock)]
        else:
            m.d.comb += summary_valid.eq(self.summary_valid)
        m.d.comb += [
            per_filter.summary_valid.eq(summary_valid), per_filter.summary.eq(s),
            per_filter.hits.eq(self.hits), per_filter.address_valid.eq(self.address_valid),
            per_filter.transfer.eq(self.transfer),
            per_filter.transfer_bytes.eq(self.transfer_bytes),
            per_filter.clear.eq(self.clear), per_filter.select.eq(self.fcount_select),
            self.fcount_value.eq(per_filter.value),
        ]

        selected = Signal()
        m.d.comb += selected.eq(summary_valid & self.match)

        # Bytes: the filter verdict of the address phase covers the data phases after it.
        counting_bytes = Signal()
        with m.If(self.address_valid):
            m.d.sync += counting_bytes.eq(self.address_match)
        bytes_now = Signal()
        m.d.comb += bytes_now.eq(self.transfer & ~skip_clock &
                                 Mux(self.address_valid, self.address_match, counting_bytes))

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
        m.d.sync += [count(v.busy_clocks, self.busy & ~skip_clock),
                     count(v.idle_clocks, ~self.busy)]
        if self.own:
            # (A transaction's clocks are all busy: FRAME# or IRDY# asserted.)
            m.d.sync += [count(v.own_clocks, skip_clock),
                         count(v.own_transactions, skipped)]
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
        with m.If(summary_valid):
            for i in range(self.filters):
                m.d.sync += count(v.hits[i], self.hits[i])

        m.d.comb += [
            latency_hist.sample.eq(selected & answered),
            latency_hist.bin.eq(Mux(s.latency >= HISTOGRAM_BINS - 1, HISTOGRAM_BINS - 1,
                                    s.latency)),
            gap_hist.sample.eq(selected & have_last),
            gap_hist.bin.eq(gap_index),
            latency_hist.clear.eq(self.clear), gap_hist.clear.eq(self.clear),
            latency_hist.snapshot.eq(self.hist_snapshot),
            gap_hist.snapshot.eq(self.hist_snapshot),
            latency_hist.release.eq(self.hist_release), gap_hist.release.eq(self.hist_release),
            self.clearing.eq(latency_hist.clearing | gap_hist.clearing | per_filter.clearing),
            latency_hist.r_addr.eq(self.hist_addr), gap_hist.r_addr.eq(self.hist_addr),
        ]
        hist_select = [Signal(name=f"hist_select_{i}") for i in range(2)]   # as r_data's clocks
        m.d.sync += [hist_select[0].eq(self.hist_select), hist_select[1].eq(hist_select[0])]
        m.d.comb += self.hist_data.eq(Mux(hist_select[1], gap_hist.r_data, latency_hist.r_data))

        with m.If(self.clear):
            m.d.sync += [v.eq(0), have_last.eq(0), counting_bytes.eq(0)]
            m.d.sync += [getattr(v, name).eq(value) for name, value in COUNTER_INIT.items()]
        return m
