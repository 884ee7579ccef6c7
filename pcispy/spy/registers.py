# SPDX-License-Identifier: BSD-2-Clause
"""The ``spy`` register block: the bus spy, and the constants and codes its gateware shares
with the host (data, no gateware: the counters, the filters, the trigger and the record
formats read them here).

The codes are plain integer enums, which the gateware uses as shapes as they are (Amaranth
takes an enum of integers as a shape as wide as its largest value; the register field that
holds one declares its width).
"""

import enum

from pcispy.csr.map import Access, Block, Field, Legal, Register, reg32

__all__ = ["SPY", "SPY_FILTERS", "SEGMENTS_LEGAL", "SPY_MASTERS", "FORMAT_VERSION",
           "TIMESTAMP_BITS", "CaptureMode", "TriggerSource", "FilterCombine", "RecorderState",
           "MAX_SEGMENTS_LOG2", "MAX_SEGMENTS", "SEGMENTS_LOG2_BITS", "TRIGGER_PULSE_NS",
           "COUNTER_WIDTHS", "COUNTER_INIT", "FilterCounter", "FILTER_COUNTER_WIDTHS",
           "FILTER_COUNTER_BITS", "FILTER_COUNTER_INIT", "HISTOGRAM_BINS"]


# The trace records (pcispy/spy/format.py).

#: Version of the record formats of pcispy/spy/format.py (``id.version.format``, and the
#: ``.pcitrace`` header's); bump on any change of a layout there.
#: 2: TriggerSource EXTERNAL (the event's ``source`` is 3 bits), RecordKind MARKER, the raw
#: record's ``marker`` bit.
FORMAT_VERSION = 2
#: Width of the spy's free-running timestamp (49 days at 66 MHz before it wraps).
TIMESTAMP_BITS = 48


class TriggerSource(enum.IntEnum):
    """What starts the post-trigger part of a capture."""
    IMMEDIATE = 0  # at arm
    FILTER    = 1  # the first transaction the filters select
    REGISTER  = 2  # a write to the trigger register (Pamette: "prefix the code with a write")
    VIOLATION = 3  # a protocol violation among the enabled rules
    EXTERNAL  = 4  # the chosen edge on the trigger input pin


class CaptureMode(enum.IntEnum):
    """What a capture stores."""
    RAW     = 0  # one record per clock (idle clocks optionally skipped)
    SUMMARY = 1  # one record per transaction selected by the filters


# The filters (pcispy/spy/filters.py) and the trigger (pcispy/spy/trigger.py).

class FilterCombine(enum.IntEnum):
    """How the include comparators combine."""
    ANY = 0
    ALL = 1


class RecorderState(enum.IntEnum):
    """Where a capture is."""
    IDLE      = 0  # never armed
    PRE       = 1  # armed, waiting for the trigger
    POST      = 2  # triggered
    DONE      = 3  # stopped (full, count reached, or stop)


#: REQ#/GNT# pairs the board's spy records (pcispy/board/top.py builds it with this).
SPY_MASTERS = 1
#: Segments of a segmented capture: ``2**segments_log2``, segments_log2 up to this.
MAX_SEGMENTS_LOG2 = 6
#: The most segments a capture can be split into.
MAX_SEGMENTS = 1 << MAX_SEGMENTS_LOG2
#: Width of the ``segments_log2`` setting (values above MAX_SEGMENTS_LOG2 are refused).
SEGMENTS_LOG2_BITS = 3
#: Width of the trigger output's pulse: long enough for a scope's or a counter's trigger
#: input (most need a few ns to tens of ns) and to see by eye on a slow time base.
TRIGGER_PULSE_NS = 1000


# The counters (pcispy/spy/counters.py).

#: Every counter of the spy and its width, in register order; ``hits`` is one counter per
#: filter comparator.
COUNTER_WIDTHS = {
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
    "hits":           32,
    "own_transactions": 32,
    "own_clocks":     48,
}
#: What the counters hold after reset or clear (the others 0): the latency minimum starts
#: above every latency (0xFFFF: no transaction answered yet).
COUNTER_INIT = {"latency_min": 0xFFFF}
#: Bins of each of the two histograms (``spy.hist_select.bin`` selects one).
HISTOGRAM_BINS = 64


class FilterCounter(enum.IntEnum):
    """The counters kept per filter comparator, by their select value
    (``spy.fcount_select.counter``). Names and widths are those of the same-named combined
    counters (:data:`COUNTER_WIDTHS`)."""
    TRANSACTIONS   = 0
    DATA_PHASES    = 1
    BYTES          = 2
    BUSY_CLOCKS    = 3
    INITIATOR_WAIT = 4
    TARGET_WAIT    = 5
    RETRIES        = 6
    DISCONNECTS    = 7
    TARGET_ABORTS  = 8
    MASTER_ABORTS  = 9
    LATENCY_SUM    = 10
    LATENCY_MIN    = 11
    LATENCY_MAX    = 12

    @property
    def width(self):
        """The counter's width in bits (32, 48, or 16 for the latency bounds)."""
        return FILTER_COUNTER_WIDTHS[self]


#: Width of every per-filter counter: that of the combined counter of the same name.
FILTER_COUNTER_WIDTHS = {counter: COUNTER_WIDTHS[counter.name.lower()]
                         for counter in FilterCounter}
#: Widest per-filter counter (the width of ``fcount_value``).
FILTER_COUNTER_BITS = max(FILTER_COUNTER_WIDTHS.values())
#: What a per-filter counter reads before anything was counted (after reset or clear).
FILTER_COUNTER_INIT = {counter: COUNTER_INIT.get(counter.name.lower(), 0)
                       for counter in FilterCounter}

#: Filter comparators of the board's spy, and the spy registers' layout constants.
SPY_FILTERS = 4
_SPY_FILTER_SELECT_BITS = max(1, (SPY_FILTERS - 1).bit_length())
_SPY_FILTER_BASE, _SPY_FILTER_STRIDE = 0x080, 0x20
_SPY_COUNTER_BASE = 0x100
#: Bits of the trigger source (config.source, and the records' ``source``).
_SOURCE_BITS = 3
_SEGMENT_BITS = (MAX_SEGMENTS - 1).bit_length()
#: The segments_log2 values the spy takes (2**value segments); the arm refuses others.
SEGMENTS_LEGAL = Legal(0, MAX_SEGMENTS_LOG2)


def _enum_names(enum_class):
    return {member.value: member.name.lower() for member in enum_class}


def _spy_filter_registers(index):
    base = _SPY_FILTER_BASE + index * _SPY_FILTER_STRIDE
    name = f"filter{index}"
    return (
        Register(f"{name}_control", base, (
            Field("enable", 0, 1, Access.RW, 0, "this comparator takes part"),
            Field("exclude", 1, 1, Access.RW, 0, "0: include (combined by config.combine), "
                  "1: exclude (a hit drops the transaction)"),
            Field("commands", 16, 16, Access.RW, 0xFFFF, "bit n: command code n passes "
                  "(selects the address space: memory, I/O, configuration)"),
        ), f"comparator {index}: enable, include/exclude, command set"),
        reg32(f"{name}_address_lo", base + 0x04, Access.RW, "address value, bits 31:0"),
        reg32(f"{name}_address_hi", base + 0x08, Access.RW, "address value, bits 63:32"),
        reg32(f"{name}_mask_lo", base + 0x0C, Access.RW, "address bits compared (1), 31:0"),
        reg32(f"{name}_mask_hi", base + 0x10, Access.RW, "address bits compared (1), 63:32"),
    )


def _spy_counter_registers():
    """One register per counter of :data:`COUNTER_WIDTHS` (``_lo``/``_hi`` pairs for the
    48-bit ones; reading ``_lo`` latches ``_hi``), in its order."""
    registers = []
    offset = _SPY_COUNTER_BASE
    for name, width in COUNTER_WIDTHS.items():
        if name == "hits":
            for i in range(SPY_FILTERS):
                registers.append(reg32(f"hits{i}", offset, Access.RO,
                                       f"transactions comparator {i} hit"))
                offset += 4
        elif width > 32:
            registers.append(reg32(f"{name}_lo", offset, Access.RO,
                                   f"counter {name}, bits 31:0 (reading it latches _hi)"))
            registers.append(Register(f"{name}_hi", offset + 4, (
                Field(name, 0, width - 32, Access.RO, 0, f"counter {name}, bits "
                      f"{width - 1}:32"),), f"counter {name}, high bits"))
            offset += 8
        else:
            reset = COUNTER_INIT.get(name, 0)
            registers.append(Register(name, offset, (
                Field(name, 0, width, Access.RO, reset, f"counter {name} (saturating; "
                      "latency_min reads 0xFFFF before any transaction)"),), f"counter {name}"))
            offset += 4
    return tuple(registers)


SPY = Block("spy", 0x400, (
    Register("control", 0x00, (
        Field("arm", 0, 1, Access.WO, 0, "arm a capture with the current settings (refused "
              "with status.pre_error when pre >= capacity)"),
        Field("stop", 1, 1, Access.WO, 0, "stop the capture now"),
        Field("trigger", 2, 1, Access.WO, 0, "the trigger register: fires a capture armed "
              "with config.source = register"),
        Field("clear", 3, 1, Access.WO, 0, "zero the counters and histograms"),
        Field("snapshot", 4, 1, Access.WO, 0, "hold the counter registers (transactions "
              "... own_clocks) and what hist_data shows at this clock's values until "
              "release, so that reading them one by one gives one instant's; counting goes "
              "on, nothing lost (again while held: a new snapshot)"),
        Field("release", 5, 1, Access.WO, 0, "the counter registers and hist_data follow "
              "the counters and histograms again"),
    ), "spy commands"),
    Register("config", 0x04, (
        Field("mode", 0, 1, Access.RW, 0, "what is stored: raw clocks or transaction "
              "summaries (taken at arm)", _enum_names(CaptureMode)),
        Field("source", 1, _SOURCE_BITS, Access.RW, 0, "trigger source (taken at arm)",
              _enum_names(TriggerSource)),
        Field("ring", 7, 1, Access.RW, 0, "after the trigger, overwrite the oldest records "
              "until stop or post instead of stopping when full (not with segments)"),
        Field("idle_compress", 4, 1, Access.RW, 0, "raw mode: leave out idle clocks"),
        Field("raw_select", 6, 1, Access.RW, 0, "raw mode: store only the clocks of "
              "transactions the filters select (and those with a violation or the trigger)"),
        Field("combine", 5, 1, Access.RW, 0, "how include comparators combine",
              _enum_names(FilterCombine)),
        Field("latency_timer", 8, 8, Access.RW, 0, "the masters' Latency Timer in clocks, "
              "to classify latency-timer terminations (0: never)"),
    ), "capture settings"),
    reg32("pre", 0x08, Access.RW, "pre-trigger records kept at the trigger (< status "
          "capacity; stopped before it, the memory keeps all of them)"),
    reg32("post", 0x0C, Access.RW, "stop after this many post-trigger records (0: when full, "
          "or never in ring mode)"),
    reg32("violation_mask_lo", 0x10, Access.RW, "checker rules 0-31 the spy records and "
          "triggers on (bit n: rule n)"),
    reg32("violation_mask_hi", 0x14, Access.RW, "checker rules 32-63"),
    Register("status", 0x18, (
        Field("state", 0, 2, Access.RO, 0, "capture state", _enum_names(RecorderState)),
        Field("done", 2, 1, Access.RO, 0, "stopped and every record written: the trace "
              "can be read"),
        Field("pre_error", 3, 1, Access.RO, 0, "the last arm was refused: pre >= the records "
              "of a segment (capacity >> segments.log2)"),
        Field("clearing", 4, 1, Access.RO, 0, "histograms or per-filter counters are "
              "being zeroed"),
        Field("held", 5, 1, Access.RO, 0, "the counter registers show a snapshot "
              "(control.snapshot), not the running counters"),
        Field("segment_error", 6, 1, Access.RO, 0, "the last arm was refused: "
              f"segments.log2 over {MAX_SEGMENTS_LOG2}, segments of no record, or "
              "segments with config.ring"),
    ), "spy status"),
    reg32("capacity", 0x1C, Access.RO, "records the trace memory holds in the armed mode "
          "(raw: 1 slot of 16 bytes each, summary: 2 slots)"),
    reg32("start", 0x20, Access.RO, "index of the oldest valid record of the current "
          "segment; record i is at BAR1 byte offset 16 * slots * i"),
    reg32("count", 0x24, Access.RO, "valid records of the current segment, from start, "
          "wrapping inside the segment (at capacity with one segment)"),
    reg32("trigger_index", 0x28, Access.RO, "index of the current segment's trigger record"),
    reg32("trigger_time_lo", 0x2C, Access.RO, "timestamp of the trigger, bits 31:0 (reading "
          "it latches _hi)"),
    Register("trigger_time_hi", 0x30, (
        Field("trigger_time", 0, TIMESTAMP_BITS - 32, Access.RO, 0, "timestamp of the "
              "trigger, high bits"),), "trigger timestamp, high bits"),
    reg32("lost", 0x34, Access.RO, "records dropped since arm (each reported by an OVERRUN "
          "record in the trace)"),
    reg32("overruns", 0x38, Access.RO, "OVERRUN records written since arm"),
    Register("hist_select", 0x3C, (
        Field("histogram", 0, 1, Access.RW, 0, "0: first-data latency (linear bins), 1: "
              "clocks between transactions (log2 bins)", {0: "latency", 1: "gap"}),
        Field("bin", 8, 6, Access.RW, 0, "bin shown by hist_data"),
    ), "histogram bin select"),
    reg32("hist_data", 0x40, Access.RO, "count in the selected histogram bin (of the "
          "snapshot's clock while control.snapshot holds)"),
    Register("fcount_select", 0x44, (
        Field("filter", 0, _SPY_FILTER_SELECT_BITS, Access.RW, 0, "comparator whose "
              "counter fcount_lo/_hi show: the transactions that comparator hits, whatever "
              "the others and config.combine say"),
        Field("counter", 8, 4, Access.RW, 0, "which counter (busy_clocks: the clocks of "
              "those transactions; bytes: added when each ends; the rest as the combined "
              "counters; values 13-15 read 0)", _enum_names(FilterCounter)),
    ), "per-filter counter select"),
    reg32("fcount_lo", 0x48, Access.RO, "the selected per-filter counter, bits 31:0 (valid "
          "from the third clock after fcount_select is written; reading it latches _hi). "
          "A transaction is counted within 70 clocks of its end; status.clearing is set "
          "while a clear is still zeroing them"),
    Register("fcount_hi", 0x4C, (
        Field("fcount", 0, FILTER_COUNTER_BITS - 32, Access.RO, 0, "the selected "
              "per-filter counter, bits 47:32 (as of the last fcount_lo read)"),
    ), "selected per-filter counter, high bits"),
    Register("counting", 0x50, (
        Field("own", 0, 1, Access.RW, 0, "1: count the board's own register accesses (the "
              "BAR0 transactions its target claims: the host tool's reads and writes) like "
              "any other transaction; 0: leave them out of every counter, histogram and "
              "per-filter counter and count them in own_transactions, their clocks in "
              "own_clocks instead of busy_clocks (taken at each address phase)"),
    ), "what the counters count"),
    reg32("memory_fills", 0x54, Access.RO, "times the trace memory's write FIFO filled since "
          "reset: with an SDRAM trace memory, the bus outran the SDRAM (the records it "
          "could not take are counted in lost, each gap an OVERRUN record); 0 with block "
          "RAM or SRAM"),
    Register("trigger_io", 0x58, (
        Field("falling", 0, 1, Access.RW, 0, "the trigger input's falling edges count (the "
              "external trigger, markers); 0: rising edges", {0: "rising", 1: "falling"}),
        Field("markers", 1, 1, Access.RW, 0, "store each counted edge of the trigger input "
              "while a capture runs: a MARKER record (summary mode), the raw record's "
              "marker bit or a MARKER record (raw mode) (taken at arm)"),
        Field("out_level", 2, 1, Access.RW, 0, "trigger output: 0: a pulse of "
              f"{TRIGGER_PULSE_NS} ns at each trigger; 1: high from the trigger until its "
              "segment or the capture ends", {0: "pulse", 1: "level"}),
        Field("level", 8, 1, Access.RO, 0, "the trigger input's level now (synchronised): "
              "to check the wiring"),
    ), "trigger input and output pins"),
    Register("segments", 0x5C, (
        Field("log2", 0, SEGMENTS_LOG2_BITS, Access.RW, 0, "split the trace memory into "
              "2**log2 equal segments, each re-armed after the previous one fills (taken at "
              "arm; 0: one segment, the plain capture)", legal=SEGMENTS_LEGAL),
        Field("current", 8, _SEGMENT_BITS, Access.RO, 0, "the segment being recorded (or "
              "the last one, once stopped); segments before it ended and have their "
              "segment_* entry"),
    ), "segmented capture"),
    Register("segment_select", 0x60, (
        Field("segment", 0, _SEGMENT_BITS, Access.RW, 0, "segment whose entry segment_start "
              "... segment_trigger_time_hi show (from the third clock after this write)"),
    ), "segment table entry select"),
    reg32("segment_start", 0x64, Access.RO, "the selected segment's start (as start, when "
          "it ended)"),
    reg32("segment_count", 0x68, Access.RO, "the selected segment's count"),
    reg32("segment_trigger_index", 0x6C, Access.RO, "the selected segment's trigger_index"),
    reg32("segment_trigger_time_lo", 0x70, Access.RO, "the selected segment's trigger "
          "timestamp, bits 31:0 (0: it did not trigger; reading it latches _hi)"),
    Register("segment_trigger_time_hi", 0x74, (
        Field("segment_trigger_time", 0, TIMESTAMP_BITS - 32, Access.RO, 0, "the selected "
              "segment's trigger timestamp, high bits"),), "segment trigger timestamp, high "
              "bits"),
) + sum((_spy_filter_registers(i) for i in range(SPY_FILTERS)), ()) +
    _spy_counter_registers(),
    "bus spy: capture control, trigger, filters, counters (combined and per filter), "
    "histograms (trace in BAR1)")
