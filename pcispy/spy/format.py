# SPDX-License-Identifier: BSD-2-Clause
"""The one declaration of every trace record the spy writes, for the gateware and the host.

Trace memory is organised in *slots* of :data:`SLOT_BITS` (128) bits. A capture writes records
of one fixed size, chosen by its mode:

- raw mode: every record is one slot (:data:`RAW_RECORD_BITS`);
- summary mode: every record is two slots (:data:`SUMMARY_RECORD_BITS`); event records are
  zero-padded to that size.

Every record starts with a 4-bit :class:`RecordKind` tag at bit 0, so a reader finds the kind
of any record without knowing anything else. The host derives its numpy dtype from
:func:`record_fields`; nothing else may hold a copy of an offset.

Timestamps are clocks of the PCI clock (the spy's free-running 48-bit counter). Raw records
carry a *delta*: the clocks since the previous record of the trace (any kind; event records
carry absolute 48-bit timestamps). With idle compression, idle clocks are not stored and the
next record's delta covers them; when a delta would exceed :data:`MAX_DELTA`, a
:attr:`RecordKind.WRAP` event carrying the absolute time is written instead, and deltas
restart from it.
"""

from amaranth.lib import data, enum

from pcispy.pci.bus import BusState, Command, Termination, DevselSpeed
# The version of these formats and the codes the registers share with them are declared
# with the registers (FORMAT_VERSION: bump it on any change of a layout here).
from pcispy.spy.registers import FORMAT_VERSION, TIMESTAMP_BITS, CaptureMode, TriggerSource

__all__ = [
    "FORMAT_VERSION", "SLOT_BITS", "RAW_RECORD_BITS", "SUMMARY_RECORD_BITS",
    "TIMESTAMP_BITS", "DELTA_BITS", "MAX_DELTA", "MAX_RULES",
    "RecordKind", "TriggerSource", "CaptureMode",
    "RawRecord", "SummaryRecord",
    "TriggerEvent", "OverrunEvent", "WrapEvent", "ViolationEvent", "MarkerEvent",
    "record_layouts", "record_fields", "record_bits",
]

#: Width of one trace-memory slot.
SLOT_BITS = 128
#: Size of a raw record and of every record of a raw capture.
RAW_RECORD_BITS = 128
#: Size of a summary record and of every record of a summary capture.
SUMMARY_RECORD_BITS = 256

#: Width of a raw record's delta timestamp.
DELTA_BITS = 16
#: Largest delta a raw record can carry.
MAX_DELTA = (1 << DELTA_BITS) - 1
#: Width of the protocol-violation vector an event can carry (rule = bit index).
MAX_RULES = 64


class RecordKind(enum.Enum, shape=4):
    """The tag in bits 3:0 of every record. 0 is never written: erased memory reads as EMPTY."""
    EMPTY     = 0
    RAW       = 1
    SUMMARY   = 2
    TRIGGER   = 3
    OVERRUN   = 4
    WRAP      = 5
    VIOLATION = 6
    MARKER    = 7


def _padded(fields, bits, kind_name):
    used = sum(data.Shape.cast(shape).width if not isinstance(shape, data.Layout) else shape.size
               for shape in fields.values())
    if used > bits:
        raise ValueError(f"{kind_name} record needs {used} bits, more than {bits}")
    if used < bits:
        fields["reserved"] = bits - used
    return fields


class RawRecord(data.StructLayout):
    """One clock of the bus (raw mode), :data:`RAW_RECORD_BITS` wide.

    Fields: ``kind`` (RAW), ``delta`` (clocks since the previous record), ``trigger`` (this
    clock is the trigger), ``violation`` (a protocol rule fired this clock), ``rule`` (the
    lowest rule index that fired), ``many_rules`` (more than one fired), ``bus`` (every line,
    :class:`~pcispy.pci.bus.BusState`, inside-level), ``marker`` (with markers on: the
    trigger input's chosen edge was seen this clock; a clock not stored gets a MARKER
    event instead).
    """
    def __init__(self, width=32, masters=1):
        self.width = width
        self.masters = masters
        super().__init__(_padded({
            "kind":       RecordKind,
            "delta":      DELTA_BITS,
            "trigger":    1,
            "violation":  1,
            "rule":       6,
            "many_rules": 1,
            "bus":        BusState(width, masters),
            "marker":     1,
        }, RAW_RECORD_BITS, "raw"))


class SummaryRecord(data.StructLayout):
    """One transaction (summary mode), :data:`SUMMARY_RECORD_BITS` wide.

    Counts saturate at their field's maximum. Clock counts are relative to the first
    address phase (the clock FRAME# is first asserted), counted as clock 0:

    - ``latency``: clock of the first data phase that completes (IRDY# and TRDY#) or of the
      first STOP#; 0 when neither came (master abort).
    - ``duration``: clocks from the address phase to the last clock with FRAME# or IRDY#
      asserted, inclusive.
    - ``initiator_wait``: data-phase clocks with IRDY# deasserted; ``target_wait``: clocks
      with IRDY# asserted and neither TRDY# nor STOP#.
    - ``devsel``: DEVSEL# timing relative to the last address phase (fast = 1 clock after).
    - ``master``: 0 unknown, else 1 + index of the GNT# line asserted when FRAME# rose.
    - ``filters``: which filter comparators matched (bit per comparator).
    """
    def __init__(self):
        super().__init__(_padded({
            "kind":           RecordKind,
            "timestamp":      TIMESTAMP_BITS,
            "address":        64,
            "command":        Command,
            "first_be":       8,   # C/BE#[7:0] pins on the first data phase (active low; 7:4 are 0 on a 32-bit bus)
            "first_data":     32,  # AD[31:0] of the first completed data phase
            "data_phases":    16,
            "latency":        8,
            "initiator_wait": 12,
            "target_wait":    12,
            "duration":       16,
            "termination":    Termination,
            "devsel":         DevselSpeed,
            "is64":           1,   # REQ64# and ACK64# both asserted
            "dac":            1,   # dual address cycle
            "parity_error":   1,   # PAR/PAR64 mismatch, or PERR#/SERR# during the transaction
            "master":         4,
            "filters":        8,
        }, SUMMARY_RECORD_BITS, "summary"))


def _event(extra):
    fields = {"kind": RecordKind, "timestamp": TIMESTAMP_BITS}
    fields.update(extra)
    return _padded(fields, SLOT_BITS, "event")


class TriggerEvent(data.StructLayout):
    """The trigger fired at ``timestamp``, from ``source``."""
    def __init__(self):
        super().__init__(_event({"source": TriggerSource}))


class OverrunEvent(data.StructLayout):
    """``lost`` records could not be stored before ``timestamp`` (FIFO or memory too slow)."""
    def __init__(self):
        super().__init__(_event({"lost": 32}))


class WrapEvent(data.StructLayout):
    """A time base: the next raw record's delta counts from ``timestamp``."""
    def __init__(self):
        super().__init__(_event({}))


class ViolationEvent(data.StructLayout):
    """Protocol rules fired (``rules``: bit per rule index) from ``timestamp`` on;
    ``clocks`` counts the clocks with a violation merged into this record (saturating)."""
    def __init__(self):
        super().__init__(_event({"rules": MAX_RULES, "clocks": 8}))


class MarkerEvent(data.StructLayout):
    """The trigger input's chosen edge (``falling``: which one) was seen at ``timestamp``;
    ``edges`` counts the edges merged into this record while it waited for a free slot
    (saturating; 1 unless edges come faster than records can be written)."""
    def __init__(self):
        super().__init__(_event({"falling": 1, "edges": 8}))


def record_layouts(width=32, masters=1):
    """``{RecordKind: layout}`` of every record kind written on a bus of ``width``."""
    return {
        RecordKind.RAW:       RawRecord(width, masters),
        RecordKind.SUMMARY:   SummaryRecord(),
        RecordKind.TRIGGER:   TriggerEvent(),
        RecordKind.OVERRUN:   OverrunEvent(),
        RecordKind.WRAP:      WrapEvent(),
        RecordKind.VIOLATION: ViolationEvent(),
        RecordKind.MARKER:    MarkerEvent(),
    }


def record_bits(mode):
    """Size in bits of every record of a capture in ``mode`` (:class:`CaptureMode`)."""
    return RAW_RECORD_BITS if CaptureMode(mode) is CaptureMode.RAW else SUMMARY_RECORD_BITS


def record_fields(layout, prefix="", offset=0):
    """Flatten ``layout`` into ``[(name, bit offset, width)]``; nested fields are dotted
    (``bus.frame``). ``reserved`` padding is left out. This is what the host builds its
    decoder from."""
    fields = []
    for name, field in layout:
        if name == "reserved":
            continue
        shape = field.shape
        if isinstance(shape, data.StructLayout):
            fields += record_fields(shape, f"{prefix}{name}.", offset + field.offset)
        else:
            fields.append((f"{prefix}{name}", offset + field.offset, field.width))
    return fields
