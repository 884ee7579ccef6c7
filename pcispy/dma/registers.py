# SPDX-License-Identifier: BSD-2-Clause
"""The ``dma`` register block: the DMA engine's settings, commands and results, and the
data patterns it knows (:class:`Pattern`, data: the engine and the host read it here)."""

import enum

from pcispy.csr.map import Access, Block, Field, Legal, Register, reg32
from pcispy.pci.codes import COMMAND_MNEMONICS as _MNEMONICS

__all__ = ["DMA", "BURST", "LENGTH", "Pattern"]

# DMA exerciser (pcispy/dma/engine.py): the bus master's programmable traffic. The
# settings are checked at start: an impossible combination sets status.err_* and the
# engine does not start. Settings cannot change while the engine runs (writes refused,
# status.err_busy).
#
# A setting with a narrower range than its bits declares it here (Field.legal), once: the
# engine's refusal, the host's check and ``pcispy dma``'s option all follow from it.



class Pattern(enum.IntEnum):
    """The DMA data patterns (pcispy/dma/patterns.py says what each sends)."""
    COUNTER   = 0
    LFSR      = 1
    CONSTANT  = 2
    TIMESTAMP = 3

    @property
    def verifiable(self):
        """Whether read data can be checked against the pattern (not a timestamp)."""
        return self is not Pattern.TIMESTAMP


#: Data phases per transaction the engine can be asked for, or unlimited (the host's 0).
BURST = Legal(1, 4096, unlimited="unlimited")
#: Bytes per pass: at least one (and a multiple of the width, which the engine checks).
LENGTH = Legal(1)

DMA = Block("dma", 0x100, (
    Register("control", 0x00, (
        Field("start", 0, 1, Access.WO, 0, "check the settings and start (refusals in "
              "status.err_*); zeroes the results"),
        Field("stop", 1, 1, Access.WO, 0, "end the current transaction as soon as the "
              "protocol allows and finish (status.stopped)"),
    ), "DMA commands"),
    Register("mode", 0x04, (
        Field("cmd", 0, 4, Access.RW, _MNEMONICS.index("MW"), "bus command",
              dict(enumerate(_MNEMONICS))),
        Field("width64", 4, 1, Access.RW, 0, "64-bit data phases (REQ64#; 64-bit board, "
              "memory commands)"),
        Field("pattern", 8, 2, Access.RW, 0, "write data pattern / read reference "
              "(pcispy/dma/patterns.py)", {p.value: p.name.lower() for p in Pattern}),
        Field("verify", 10, 1, Access.RW, 0, "compare read data with the pattern "
              "(mismatches)"),
        Field("continuous", 11, 1, Access.RW, 0, "repeat passes until stopped"),
    ), "command, width, pattern"),
    reg32("addr_lo", 0x08, Access.RW, "start byte address, low word (aligned to the width)"),
    reg32("addr_hi", 0x0C, Access.RW, "start byte address, high word (non-zero: Dual "
          "Address Cycles, memory commands only)"),
    reg32("length", 0x10, Access.RW, "bytes per pass (a multiple of the width)", 4096,
          legal=LENGTH),
    Register("burst", 0x14, (
        Field("phases", 0, 13, Access.RW, 256, f"data phases per transaction, {BURST}",
              legal=BURST),
        Field("unlimited", 16, 1, Access.RW, 0, "one transaction for the whole pass (ends "
              "only when the target or the latency timer ends it)"),
    ), "burst length"),
    Register("idle", 0x18, (
        Field("clocks", 0, 16, Access.RW, 0, "extra idle clocks after each burst, beyond "
              "the one the protocol needs"),
    ), "gap between bursts"),
    reg32("seed", 0x1C, Access.RW, "pattern seed (counter start, LFSR state (non-zero), "
          "constant)", 1),
    Register("passes", 0x20, (
        Field("count", 0, 16, Access.RW, 1, "passes over the buffer (0 counts as 1), "
              "unless mode.continuous"),
    ), "repeat count"),
    Register("wait", 0x24, (
        Field("irdy", 0, 3, Access.RW, 0, "IRDY# wait states before each data phase"),
    ), "initiator wait states"),
    Register("status", 0x28, (
        Field("busy", 0, 1, Access.RO, 0, "running"),
        Field("done", 1, 1, Access.W1C, 0, "a run finished (normally, stopped or aborted)"),
        Field("stopped", 2, 1, Access.W1C, 0, "the last run was stopped"),
        Field("master_abort", 3, 1, Access.W1C, 0, "the last run ended in a master abort"),
        Field("target_abort", 4, 1, Access.W1C, 0, "the last run ended in a target abort"),
        Field("err_busy", 8, 1, Access.RO, 0, "refused: start or a settings write while "
              "running"),
        Field("err_burst", 9, 1, Access.RO, 0, f"refused: burst {BURST.refused}"),
        Field("err_length", 10, 1, Access.RO, 0, f"refused: length {LENGTH.refused} or not a "
              "multiple of the width"),
        Field("err_width", 11, 1, Access.RO, 0, "refused: 64-bit on a 32-bit board or with "
              "a non-memory command"),
        Field("err_align", 12, 1, Access.RO, 0, "refused: address not aligned to the width"),
        Field("err_cmd", 13, 1, Access.RO, 0, "refused: reserved, Dual Address or Special "
              "Cycle command"),
        Field("err_mwi_line", 14, 1, Access.RO, 0, "refused: MWI without MWI enable or a "
              "valid (power of two) cache line size"),
        Field("err_mwi_align", 15, 1, Access.RO, 0, "refused: MWI address or length not "
              "whole cache lines"),
        Field("err_addr", 16, 1, Access.RO, 0, "refused: address above 4 GiB for a "
              "non-memory command"),
        Field("err_seed", 17, 1, Access.RO, 0, "refused: LFSR pattern with seed 0"),
        Field("err_verify", 18, 1, Access.RO, 0, "refused: verify with a write command or "
              "the timestamp pattern"),
        Field("err_master", 19, 1, Access.RO, 0, "refused: Bus Master not enabled in the "
              "Command register"),
    ), "state, outcome of the last run, refusals of the last start (err_*)"),
    reg32("clocks_lo", 0x30, Access.RO, "clocks from start to done, low word; reading it "
          "latches clocks_hi"),
    reg32("clocks_hi", 0x34, Access.RO, "clocks from start to done, high word (latched)"),
    reg32("bus_clocks_lo", 0x38, Access.RO, "clocks the board owned the bus (FRAME# or "
          "IRDY# asserted), low word; reading it latches bus_clocks_hi"),
    reg32("bus_clocks_hi", 0x3C, Access.RO, "bus clocks, high word (latched)"),
    reg32("bytes_lo", 0x40, Access.RO, "bytes moved, low word; reading it latches "
          "bytes_hi"),
    reg32("bytes_hi", 0x44, Access.RO, "bytes moved, high word (latched)"),
    reg32("data_phases", 0x48, Access.RO, "data phases completed"),
    reg32("transactions", 0x4C, Access.RO, "transactions (address phases), retried ones "
          "included"),
    reg32("retries", 0x50, Access.RO, "transactions ended by retry"),
    reg32("disconnects_data", 0x54, Access.RO, "disconnects with data"),
    reg32("disconnects_nodata", 0x58, Access.RO, "disconnects without data"),
    reg32("master_aborts", 0x5C, Access.RO, "master aborts"),
    reg32("target_aborts", 0x60, Access.RO, "target aborts"),
    reg32("latency_timer_ends", 0x64, Access.RO, "bursts ended by the latency timer with "
          "GNT# removed"),
    reg32("gnt_wait_min", 0x68, Access.RO, "clocks waited for GNT#/idle bus before an "
          "address phase: minimum (all ones before the first)"),
    reg32("gnt_wait_max", 0x6C, Access.RO, "GNT# wait: maximum"),
    reg32("gnt_wait_sum_lo", 0x70, Access.RO, "GNT# wait: sum over transactions, low word; "
          "reading it latches gnt_wait_sum_hi"),
    reg32("gnt_wait_sum_hi", 0x74, Access.RO, "GNT# wait sum, high word (latched)"),
    reg32("latency_min", 0x78, Access.RO, "clocks from address phase to first data phase: "
          "minimum (all ones before the first)"),
    reg32("latency_max", 0x7C, Access.RO, "first-data latency: maximum"),
    reg32("latency_sum_lo", 0x80, Access.RO, "first-data latency: sum, low word; reading "
          "it latches latency_sum_hi"),
    reg32("latency_sum_hi", 0x84, Access.RO, "first-data latency sum, high word (latched)"),
    reg32("latency_count", 0x88, Access.RO, "transactions that moved data (latency "
          "samples)"),
    reg32("mismatches", 0x8C, Access.RO, "read DWORDs that differed from the pattern"),
    reg32("first_mismatch", 0x90, Access.RO, "DWORD index (from the start of its pass) of "
          "the first mismatch (all ones: none)"),
    reg32("passes_done", 0x94, Access.RO, "passes completed"),
), "DMA exerciser: the board as bus master")
