# SPDX-License-Identifier: BSD-2-Clause
"""The ``irq`` register block: the interrupt-latency unit's settings and results."""

from pcispy.csr.map import Access, Block, Field, Register, reg32

__all__ = ["IRQ", "IRQ_MIN_GAP", "IRQ_MARKERS"]

# Interrupt-latency unit (pcispy/irq/). Settings in delay..seed take effect when
# `command.arm` is written; an arm the generator cannot honour is refused (the generator
# keeps running as before) and status.err_* says why, until the next accepted arm.
#: Shortest countdown the interrupt generator accepts, in clocks (delay, period, gaps).
IRQ_MIN_GAP = 4
#: Number of checkpoint (marker) registers: the marker id is the register's index.
IRQ_MARKERS = 8

IRQ = Block("irq", 0x200, (
    Register("ctrl", 0x00, (
        Field("mode", 0, 2, Access.RW, 0, "generator reload after each raise: one-shot, "
              "periodic (period), random (uniform in [min_gap, max_gap], LFSR from seed)",
              {0: "one_shot", 1: "periodic", 2: "random"}),
    ), "interrupt generator mode"),
    Register("command", 0x04, (
        Field("arm", 0, 1, Access.WO, 0, "check and take delay..seed, start the countdown "
              "(first raise `delay` clocks after this write)"),
        Field("stop", 1, 1, Access.WO, 0, "stop the countdown (a pending interrupt stays)"),
        Field("clear", 2, 1, Access.WO, 0, "stop, drop INTA#, zero the counters and the "
              "histogram (status.busy while the histogram is being cleared)"),
    ), "generator commands"),
    Register("ack", 0x08, (
        Field("ack", 0, 1, Access.WO, 0, "acknowledge: drop INTA#, latch ack_ts, count and "
              "histogram the latency (ignored when nothing is pending)"),
    ), "interrupt acknowledge, written by the interrupt handler"),
    Register("status", 0x0C, (
        Field("pending", 0, 1, Access.RO, 0, "interrupt raised and not yet acknowledged "
              "(the config space's Interrupt Status)"),
        Field("running", 1, 1, Access.RO, 0, "countdown running"),
        Field("busy", 2, 1, Access.RO, 0, "histogram clear in progress"),
        Field("err_mode", 8, 1, Access.RO, 0, "last arm refused: reserved mode"),
        Field("err_delay", 9, 1, Access.RO, 0, f"last arm refused: delay < {IRQ_MIN_GAP}"),
        Field("err_gap", 10, 1, Access.RO, 0, f"last arm refused: periodic with period < "
              f"{IRQ_MIN_GAP}, or random with min_gap < {IRQ_MIN_GAP} or min_gap > max_gap"),
        Field("err_seed", 11, 1, Access.RO, 0, "last arm refused: random with seed 0"),
        Field("err_busy", 12, 1, Access.RO, 0, "last arm refused: clear still in progress"),
        Field("marker_level", 16, 8, Access.RO, 0, "checkpoints waiting in the FIFO"),
    ), "interrupt unit status"),
    reg32("delay", 0x10, Access.RW, "clocks from arm to the first raise", 1000),
    reg32("period", 0x14, Access.RW, "periodic mode: clocks between raises", 1000),
    reg32("min_gap", 0x18, Access.RW, "random mode: shortest gap between raises", 100),
    reg32("max_gap", 0x1C, Access.RW, "random mode: longest gap between raises", 10000),
    reg32("seed", 0x20, Access.RW, "random mode: LFSR seed (non-zero)", 1),
    reg32("now_lo", 0x24, Access.RO, "free-running 64-bit cycle counter, low word; "
          "reading it latches now_hi"),
    reg32("now_hi", 0x28, Access.RO, "cycle counter high word, as of the last now_lo read"),
    reg32("raise_ts_lo", 0x2C, Access.RO, "cycle of the last raise (first clock INTA# is "
          "requested), low word; reading it latches raise_ts_hi"),
    reg32("raise_ts_hi", 0x30, Access.RO, "last raise, high word (latched)"),
    reg32("ack_ts_lo", 0x34, Access.RO, "cycle of the last effective ack write, low word; "
          "reading it latches ack_ts_hi"),
    reg32("ack_ts_hi", 0x38, Access.RO, "last ack, high word (latched)"),
    reg32("raised", 0x3C, Access.RO, "raises (countdown expiries), modulo 2**32"),
    reg32("acked", 0x40, Access.RO, "acknowledged interrupts, modulo 2**32"),
    reg32("missed", 0x44, Access.RO, "raises that found the previous one still pending"),
    reg32("overruns", 0x48, Access.RO, "checkpoints lost because the FIFO was full"),
    reg32("marker_ts_lo", 0x4C, Access.RC, "pop the oldest checkpoint: its timestamp low "
          "word; latches marker_ts_hi and marker_id"),
    reg32("marker_ts_hi", 0x50, Access.RO, "popped checkpoint, timestamp high word"),
    Register("marker_id", 0x54, (
        Field("id", 0, 3, Access.RO, 0, "popped checkpoint: marker register index"),
        Field("valid", 31, 1, Access.RO, 0, "the last pop found a checkpoint (0: FIFO was "
              "empty)"),
    ), "popped checkpoint, id"),
    Register("hist_index", 0x58, (
        Field("index", 0, 8, Access.RW, 0, "latency histogram bin shown in hist_count"),
    ), "histogram bin select"),
    reg32("hist_count", 0x5C, Access.RO, "raise-to-ack latencies counted in bin hist_index "
          "(bin edges: pcispy.irq.bins.bin_edges)"),
) + tuple(
    reg32(f"marker_{n}", 0x60 + 4 * n, Access.WO, f"checkpoint: any write pushes (cycle, "
          f"id {n}) into the marker FIFO") for n in range(IRQ_MARKERS)
), "interrupt latency: cycle counter, interrupt generator, checkpoints, histogram")
