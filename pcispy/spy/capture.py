# SPDX-License-Identifier: BSD-2-Clause
"""Raw capture: one :class:`~.format.RawRecord` per bus clock, optionally idle-compressed.

With ``idle_compress`` a clock is left out when it is *quiet*: FRAME#, IRDY#, TRDY#,
STOP# and DEVSEL# deasserted, every other control line (everything but AD, C/BE# and PAR)
as in the clock before, and the clock before quiet too (so the PAR of a transaction's last
data phase, which arrives on the first idle clock, is kept). A clock with a protocol
violation or the trigger is always kept.

With ``select`` only the clocks of transactions the filters select are kept (and clocks
with a violation or the trigger). The verdict of a dual address cycle is known one clock
after its first address phase, so every record comes out one clock after its bus clock.
The record's ``delta`` is filled in by the recorder (:mod:`.trigger`), which knows when the
previous record was written.
"""

from amaranth.hdl import Module, Signal, Cat, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.core.logic import bottom_bit
from pcispy.pci.bus import BusState
from pcispy.spy.format import RawRecord, RecordKind

__all__ = ["RawCapture", "DATA_LINES"]

#: The lines that may change on an idle bus without making the clock worth storing.
DATA_LINES = frozenset({"ad", "cbe", "par", "ad_hi", "cbe_hi", "par64"})

_HANDSHAKE = ("frame", "irdy", "trdy", "stop", "devsel")


class RawCapture(wiring.Component):
    """Raw cycle records.

    Ports:
        bus (In, BusState(width, masters)): the sampled bus.
        idle_compress (In, 1): leave out quiet clocks.
        violation (In, rules): protocol rules that fired this clock (already masked).
        trigger (In, 1): this clock is the trigger.
        select (In, 1): keep only the clocks of transactions the filters select.
        in_transaction (In, 1), address_pending (In, 1): from the summariser.
        verdict (In, 1): the filters select the transaction of this clock (valid in a
            transaction, except when ``address_pending``).
        valid (Out, 1): ``record`` is to be stored; it records the previous clock.
        record (Out, RawRecord(width, masters)): the record (``delta`` left 0).

    Parameters:
        width, masters: as :class:`~pcispy.pci.bus.BusState`.
        rules: width of the violation vector (at most 64).
    """
    def __init__(self, width=32, masters=1, rules=1):
        if not 1 <= rules <= 64:
            raise ValueError(f"violation vector must be 1..64 rules wide, not {rules}")
        self.width = width
        self.masters = masters
        self.rules = rules
        super().__init__({
            "bus":           In(BusState(width, masters)),
            "idle_compress": In(1),
            "violation":     In(rules),
            "trigger":       In(1),
            "select":        In(1),
            "in_transaction": In(1),
            "address_pending": In(1),
            "verdict":       In(1),
            "valid":         Out(1),
            "record":        Out(RawRecord(width, masters)),
        })

    def elaborate(self, platform):
        m = Module()
        b = self.bus
        layout = BusState(self.width, self.masters)
        controls = Cat(*(b[name] for name, _ in layout
                         if name not in DATA_LINES and name not in _HANDSHAKE))
        previous_controls = Signal(len(controls))
        previous_quiet = Signal()
        quiet = Signal()
        m.d.comb += quiet.eq(~Cat(*(b[name] for name in _HANDSHAKE)).any() &
                             (controls == previous_controls))
        m.d.sync += [previous_controls.eq(controls), previous_quiet.eq(quiet)]

        violated = Signal()
        m.d.comb += violated.eq(self.violation.any())
        lowest = Signal(6)                      # in log2(rules) mux levels, not a chain
        m.d.comb += lowest.eq(bottom_bit(self.violation)[1])
        many = Signal()
        m.d.comb += many.eq((self.violation & (self.violation - 1)).any())

        # One clock of delay, so a dual address cycle's verdict is known for its first phase.
        rec = self.record
        keep = Signal()
        forced = Signal()
        in_transaction = Signal()
        pending = Signal()
        verdict = Signal()
        m.d.sync += [
            rec.kind.eq(RecordKind.RAW),
            rec.trigger.eq(self.trigger),
            rec.violation.eq(violated),
            rec.rule.eq(lowest),
            rec.many_rules.eq(many),
            rec.bus.eq(b),
            keep.eq(~self.idle_compress | ~quiet | ~previous_quiet),
            forced.eq(violated | self.trigger),
            in_transaction.eq(self.in_transaction),
            pending.eq(self.address_pending),
            verdict.eq(self.verdict),
        ]
        selected = Signal()
        m.d.comb += [
            selected.eq(in_transaction & Mux(pending, self.verdict, verdict)),
            self.valid.eq(forced | (keep & (~self.select | selected))),
        ]
        return m
