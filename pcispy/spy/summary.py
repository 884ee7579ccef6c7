# SPDX-License-Identifier: BSD-2-Clause
"""The transaction summariser: one :class:`~.format.SummaryRecord` per bus transaction.

It watches the sampled bus only (a spy cannot see who drives a line) and follows the PCI
rules (PCI LB 3.0 §3.3: transactions and their terminations; §3.9: the Dual Address Cycle):

- a transaction starts at the clock FRAME# is first asserted (its address phase; FRAME# is
  always deasserted for at least one clock between transactions, fast back-to-back included);
- a Dual Address Cycle adds a second address phase carrying the upper address and the
  real command;
- it owns every following clock with FRAME# or IRDY# asserted, and ends at the last one;
  the record is emitted on the clock after (when the PAR of the last data phase arrives);
- the termination is read from the first phase STOP# met with IRDY#: with TRDY# a disconnect
  with data, without TRDY# a retry (no data moved before) or a disconnect without data;
  STOP# with DEVSEL# removed after DEVSEL# was seen is a target abort; no DEVSEL# at all is a
  master abort; a master completion ended while the master's GNT# was removed and at least
  ``latency_timer`` clocks after FRAME# is a latency-timer expiry.
"""

from amaranth.hdl import Module, Signal, Mux, Cat, Const
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.bus import BusState, Command, Termination, DevselSpeed
from pcispy.spy.format import SummaryRecord, TIMESTAMP_BITS, RecordKind

__all__ = ["Summariser", "saturating_increment"]


def saturating_increment(counter, enable=1):
    """Statements adding 1 to ``counter`` when ``enable``, stopping at its maximum."""
    top = (1 << len(counter)) - 1
    return counter.eq(Mux(enable & (counter != top), counter + 1, counter))


def _even_parity(*values):
    return Cat(*values).xor()


class Summariser(wiring.Component):
    """Turns the sampled bus into one summary per transaction.

    Ports:
        bus (In, BusState(width, masters)): the sampled bus, one snapshot per clock.
        timestamp (In, 48): the free-running clock counter.
        latency_timer (In, 8): the initiator's Latency Timer in clocks, to tell a
            latency-timer termination from a completion; 0 never classifies one.
        address_valid (Out, 1): pulse at the last address phase of a transaction.
        address (Out, 64): the transaction's address, valid with ``address_valid`` and held
            until the next transaction.
        command (Out, Command): its command, like ``address``.
        summary_valid (Out, 1): pulse: ``summary`` holds a finished transaction.
        summary (Out, SummaryRecord): the record (``filters`` left 0 for the caller).
        busy (Out, 1): FRAME# or IRDY# asserted this clock.
        in_transaction (Out, 1): this clock belongs to a transaction (address phase to its
            last busy clock).
        address_pending (Out, 1): this clock is the first phase of a dual address cycle:
            the address is known only on the next clock.
        transfer (Out, 1): a data phase completes this clock (IRDY# and TRDY#).
        transfer_bytes (Out, 4): bytes it moves (enabled byte lanes; 8 lanes when 64-bit).

    Parameters:
        width: bus width, 32 or 64.
        masters: number of REQ#/GNT# pairs visible.
    """
    def __init__(self, width=32, masters=1):
        self.width = width
        self.masters = masters
        super().__init__({
            "bus":           In(BusState(width, masters)),
            "timestamp":     In(TIMESTAMP_BITS),
            "latency_timer": In(8),
            "address_valid": Out(1),
            "address":       Out(64),
            "command":       Out(Command),
            "summary_valid": Out(1),
            "summary":       Out(SummaryRecord()),
            "busy":          Out(1),
            "in_transaction": Out(1),
            "address_pending": Out(1),
            "transfer":      Out(1),
            "transfer_bytes": Out(4),
        })

    def elaborate(self, platform):
        m = Module()
        b = self.bus
        wide = self.width == 64

        prev_frame = Signal()
        prev_gnt = Signal(self.masters)
        m.d.sync += [prev_frame.eq(b.frame), prev_gnt.eq(b.gnt)]

        busy = Signal()
        start = Signal()
        m.d.comb += [busy.eq(b.frame | b.irdy), start.eq(b.frame & ~prev_frame),
                     self.busy.eq(busy)]

        # Registers of the transaction in flight.
        active = Signal()
        clock = Signal(16)          # index of the current clock (address phase = 0)
        dac_second = Signal()       # this clock is the DAC's second address phase
        dac = Signal()
        t_start = Signal(TIMESTAMP_BITS)
        address = Signal(64)
        command = Signal(Command)
        devsel_seen = Signal()
        devsel_clock = Signal(16)
        last_address_clock = Signal()   # 0, or 1 with DAC
        first_seen = Signal()
        latency = Signal(8)
        phases = Signal(16)
        initiator_wait = Signal(12)
        target_wait = Signal(12)
        last_clock = Signal(16)
        stop_phase_seen = Signal()
        stop_phase_data = Signal()
        stop_seen = Signal()
        target_abort = Signal()
        be_seen = Signal()
        first_be = Signal(8)
        data_seen = Signal()
        first_data = Signal(32)
        req64 = Signal()
        ack64 = Signal()
        parity_error = Signal()
        master = Signal(4)
        frame_end_clock = Signal(16)
        frame_end_gnt = Signal()
        # Parity of the previous clock's AD/C/BE#, checked against this clock's PAR.
        par_check = Signal()
        par_expect = Signal()
        par64_check = Signal()
        par64_expect = Signal()

        index = Signal(16)
        m.d.comb += index.eq(Mux(start, 0, clock))
        in_txn = Signal()           # this clock belongs to the transaction in flight
        m.d.comb += in_txn.eq(start | (active & busy))
        m.d.comb += [self.in_transaction.eq(in_txn),
                     self.address_pending.eq(start & (b.cbe == Command.DUAL_ADDRESS))]
        data_clock = Signal()       # a data-phase clock (not an address phase)
        m.d.comb += data_clock.eq(in_txn & ~start & ~dac_second)
        transfer = Signal()
        m.d.comb += transfer.eq(data_clock & b.irdy & b.trdy)
        lanes = ~b.cbe
        if wide:
            lanes = Cat(lanes, Mux(req64 & b.ack64, ~b.cbe_hi, 0))
        m.d.comb += [self.transfer.eq(transfer),
                     self.transfer_bytes.eq(sum(lanes[i] for i in range(len(lanes))))]

        # --- this clock's parity check covers the previous clock's AD
        par_bad = Signal()
        bad = par_check & (b.par != par_expect)
        if wide:
            bad |= par64_check & (b.par64 != par64_expect)
        m.d.comb += par_bad.eq(bad)
        drove_ad = Signal()
        m.d.comb += drove_ad.eq(start | dac_second | transfer)
        m.d.sync += [
            par_check.eq(drove_ad),
            par_expect.eq(_even_parity(b.ad, b.cbe)),
        ]
        if wide:
            m.d.sync += [
                par64_check.eq(transfer & b.ack64 & req64),
                par64_expect.eq(_even_parity(b.ad_hi, b.cbe_hi)),
            ]

        # --- the finished transaction (ended on the previous clock)
        finish = Signal()
        m.d.comb += finish.eq(active & ~(busy & ~start))
        rec = self.summary
        m.d.comb += [
            self.summary_valid.eq(finish),
            rec.kind.eq(RecordKind.SUMMARY),
            rec.timestamp.eq(t_start),
            rec.address.eq(address),
            rec.command.eq(command),
            rec.first_be.eq(first_be),
            rec.first_data.eq(first_data),
            rec.data_phases.eq(phases),
            rec.latency.eq(latency),
            rec.initiator_wait.eq(initiator_wait),
            rec.target_wait.eq(target_wait),
            # Saturates like the other counts: the clock index stops at 65535, and
            # 65535 + 1 would wrap the 16-bit field to 0.
            rec.duration.eq(Mux(last_clock == 0xFFFF, 0xFFFF, last_clock + 1)),
            rec.is64.eq(req64 & ack64),
            rec.dac.eq(dac),
            rec.parity_error.eq(parity_error | par_bad),
            rec.master.eq(master),
        ]
        # The record's fields are driven only by plain assignments: were one field set
        # under a condition, the Verilog output would make the whole record a `reg` and
        # give its constant fields (kind) an `always @*` block with nothing to wake it,
        # which Verilator never runs (the kind would read EMPTY on the simulated board).
        devsel = Signal(DevselSpeed)
        termination = Signal(Termination)
        m.d.comb += [rec.devsel.eq(devsel), rec.termination.eq(termination)]
        speed = Signal(16)
        m.d.comb += speed.eq(devsel_clock - last_address_clock)
        # No DEVSEL# (master abort) reports FAST (0); without this test the unsigned
        # difference of a DAC's two address clocks would wrap and read as subtractive.
        with m.If(~devsel_seen | (speed <= 1)):
            m.d.comb += devsel.eq(DevselSpeed.FAST)
        with m.Elif(speed == 2):
            m.d.comb += devsel.eq(DevselSpeed.MEDIUM)
        with m.Elif(speed == 3):
            m.d.comb += devsel.eq(DevselSpeed.SLOW)
        with m.Else():
            m.d.comb += devsel.eq(DevselSpeed.SUBTRACTIVE)
        with m.If(target_abort):
            m.d.comb += termination.eq(Termination.TARGET_ABORT)
        with m.Elif(~devsel_seen):
            m.d.comb += termination.eq(Termination.MASTER_ABORT)
        with m.Elif(stop_seen & (phases == 0)):
            m.d.comb += termination.eq(Termination.RETRY)
        with m.Elif(stop_seen & stop_phase_seen & stop_phase_data):
            m.d.comb += termination.eq(Termination.DISCONNECT_DATA)
        with m.Elif(stop_seen):
            m.d.comb += termination.eq(Termination.DISCONNECT_NODATA)
        with m.Elif((self.latency_timer != 0) & ~frame_end_gnt &
                    (frame_end_clock >= self.latency_timer)):
            m.d.comb += termination.eq(Termination.LATENCY_TIMER)
        with m.Else():
            m.d.comb += termination.eq(Termination.COMPLETION)

        # --- address and command, for the filters
        m.d.comb += [self.address.eq(address), self.command.eq(command)]
        with m.If(start):
            m.d.comb += [
                self.address_valid.eq(b.cbe != Command.DUAL_ADDRESS),
                self.address.eq(b.ad),
                self.command.eq(b.cbe),
            ]
        with m.If(dac_second):
            m.d.comb += [
                self.address_valid.eq(1),
                self.address.eq(Cat(address[:32], b.ad)),
                self.command.eq(b.cbe),
            ]

        # --- bookkeeping, clock by clock
        with m.If(finish):
            m.d.sync += active.eq(0)
        m.d.sync += dac_second.eq(0)
        with m.If(start):
            is_dac = b.cbe == Command.DUAL_ADDRESS
            m.d.sync += [
                active.eq(1),
                clock.eq(1),
                dac_second.eq(is_dac),
                dac.eq(is_dac),
                t_start.eq(self.timestamp),
                address.eq(b.ad),
                command.eq(b.cbe),
                last_address_clock.eq(is_dac),
                devsel_seen.eq(0), devsel_clock.eq(0),
                first_seen.eq(0), latency.eq(0),
                phases.eq(0), initiator_wait.eq(0), target_wait.eq(0),
                last_clock.eq(0),
                stop_phase_seen.eq(0), stop_phase_data.eq(0), stop_seen.eq(0),
                target_abort.eq(0),
                be_seen.eq(0), first_be.eq(0), data_seen.eq(0), first_data.eq(0),
                req64.eq(b.req64 if wide else 0), ack64.eq(0),
                parity_error.eq(b.perr | b.serr),
                frame_end_clock.eq(0), frame_end_gnt.eq(0),
            ]
            # GNT# is sampled by the master on the clock before it asserts FRAME#.
            master_id = Const(0, 4)
            for i in reversed(range(self.masters)):
                master_id = Mux(prev_gnt[i], i + 1, master_id)
            m.d.sync += master.eq(master_id)
        with m.Elif(in_txn):
            m.d.sync += [
                saturating_increment(clock),
                last_clock.eq(index),
            ]
            with m.If(b.perr | b.serr | par_bad):
                m.d.sync += parity_error.eq(1)
            with m.If(dac_second):
                m.d.sync += [address[32:].eq(b.ad), command.eq(b.cbe)]
            with m.If(b.devsel & ~devsel_seen):
                m.d.sync += [devsel_seen.eq(1), devsel_clock.eq(index)]
            if wide:
                with m.If(b.devsel & b.ack64):
                    m.d.sync += ack64.eq(1)
            with m.If(prev_frame & ~b.frame):
                # Unknown master: its GNT# is unknown, never call it a latency-timer end.
                own_gnt = Mux(master == 0, 1, (Cat(Const(0, 1), b.gnt) >> master)[0])
                m.d.sync += [frame_end_clock.eq(index), frame_end_gnt.eq(own_gnt)]
            with m.If(data_clock):
                with m.If(~first_seen & ((b.irdy & b.trdy) | b.stop)):
                    m.d.sync += [first_seen.eq(1),
                                 latency.eq(Mux(index > 255, 255, index))]
                with m.If(transfer):
                    m.d.sync += saturating_increment(phases)
                    with m.If(~data_seen):
                        m.d.sync += [data_seen.eq(1), first_data.eq(b.ad)]
                with m.If(~b.irdy):
                    m.d.sync += saturating_increment(initiator_wait)
                with m.If(b.irdy & ~b.trdy & ~b.stop):
                    m.d.sync += saturating_increment(target_wait)
                with m.If(b.irdy & ~be_seen):
                    m.d.sync += [be_seen.eq(1),
                                 first_be.eq(Cat(b.cbe, b.cbe_hi) if wide else b.cbe)]
                with m.If(b.stop):
                    m.d.sync += stop_seen.eq(1)
                    with m.If(devsel_seen & ~b.devsel):
                        m.d.sync += target_abort.eq(1)
                with m.If(b.stop & b.irdy & ~stop_phase_seen):
                    m.d.sync += [stop_phase_seen.eq(1), stop_phase_data.eq(b.trdy)]
        return m
