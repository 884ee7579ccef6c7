# SPDX-License-Identifier: BSD-2-Clause
"""The ``target`` register block: the programmed response of the exerciser windows."""

from pcispy.csr.map import Access, Block, Field, Register, reg32
from pcispy.pci.codes import DevselSpeed as _DevselSpeed

__all__ = ["TARGET", "TARGET_MAX_INITIAL_LATENCY", "TARGET_MAX_SUBSEQUENT_LATENCY", "decode_resets"]

# Exerciser target (pcispy/exerciser/response.py): the programmed response of the BAR2
# (memory) and BAR3 (I/O) windows. A write the hardware cannot honour is refused: the
# register keeps its value and a status.bad_* bit says why.

#: Longest target initial latency the specification allows, in clocks from FRAME#.
TARGET_MAX_INITIAL_LATENCY = 16
#: Longest target subsequent latency (data phase to data phase), in clocks.
TARGET_MAX_SUBSEQUENT_LATENCY = 8



def decode_resets(decode):
    """The reset values (for :meth:`RegisterMap.with_resets`) of a board whose target
    decodes at ``decode`` (:class:`DevselSpeed`, id.config.decode): a slow decoder
    cannot answer the map's medium DEVSEL#, so its exerciser resets to slow."""
    if decode.value > _DevselSpeed.MEDIUM.value:
        return {"target.response.devsel_speed": decode.value}
    return {}


TARGET = Block("target", 0x080, (
    Register("response", 0x00, (
        Field("devsel_speed", 0, 2, Access.RW, _DevselSpeed.MEDIUM.value,
              "DEVSEL# timing of the windows (faster than id.config.decode: refused; a "
              "slow-decode build resets to slow)",
              {s.value: s.name.lower() for s in _DevselSpeed}),
        Field("initial_wait", 8, 8, Access.RW, 0,
              "extra clocks before the first TRDY# (initial latency is 2 + DEVSEL# delay "
              "+ this, and at least 3 for reads; at most 16 unless allow_noncompliant)"),
        Field("allow_noncompliant", 31, 1, Access.RW, 0,
              "accept latencies beyond the specification's 16/8 clocks and retry-forever"),
    ), "DEVSEL# speed and initial wait states"),
    Register("wait", 0x04, (
        Field("every", 0, 8, Access.RW, 0, "insert wait states after every N data phases"),
        Field("clocks", 8, 4, Access.RW, 0,
              "TRDY# deasserted this many clocks (0: no wait states; at most 7 unless "
              "allow_noncompliant; needs every != 0)"),
    ), "subsequent wait-state pattern"),
    Register("disconnect", 0x08, (
        Field("after", 0, 8, Access.RW, 0, "STOP# after N data phases (0: never)"),
        Field("with_data", 8, 1, Access.RW, 1,
              "1: STOP# with TRDY# on phase N; 0: STOP# without TRDY# after phase N"),
    ), "disconnect after N data phases"),
    Register("retry", 0x0C, (
        Field("first", 0, 8, Access.RW, 0, "retry the next K attempts (counted from this write)"),
        Field("every", 8, 8, Access.RW, 0,
              "then retry every Nth attempt (0: never; 1 needs allow_noncompliant)"),
    ), "retry pattern"),
    reg32("abort_first", 0x10, Access.RW, "target abort range: first byte offset in the window"),
    reg32("abort_last", 0x14, Access.RW, "target abort range: last byte offset (inclusive)"),
    Register("control", 0x18, (
        Field("abort_enable", 0, 1, Access.RW, 0,
              "target abort on phases addressing [abort_first, abort_last] (refused when "
              "first > last)"),
        Field("ack64", 1, 1, Access.RW, 1,
              "answer REQ64# with ACK64# in the 64-bit half of the memory window"),
        Field("corrupt_par", 2, 1, Access.RW, 0, "invert PAR of every read data word"),
        Field("corrupt_next", 3, 1, Access.WO, 0, "invert PAR of the next read data word"),
    ), "abort, 64-bit and parity-corruption switches"),
    Register("status", 0x1C, (
        Field("bad_devsel", 0, 1, Access.W1C, 0, "refused: DEVSEL# faster than the build decodes"),
        Field("bad_latency", 1, 1, Access.W1C, 0, "refused: initial latency over 16 clocks"),
        Field("bad_wait", 2, 1, Access.W1C, 0,
              "refused: wait clocks with period 0, or subsequent latency over 8 clocks"),
        Field("bad_retry", 3, 1, Access.W1C, 0, "refused: retry every attempt"),
        Field("bad_abort", 4, 1, Access.W1C, 0, "refused: abort range with first > last"),
        Field("parity_error", 8, 1, Access.W1C, 0, "a parity error was detected on the bus "
              "(address or write data addressed to the board)"),
    ), "refusals and errors (write 1 to clear)"),
    reg32("attempts", 0x20, Access.RO, "transactions claimed in the exerciser windows"),
    reg32("retried", 0x24, Access.RO, "of which retried by the exerciser"),
    reg32("aborted", 0x28, Access.RO, "target aborts signaled"),
    reg32("corrupted", 0x2C, Access.RO, "read data words sent with inverted PAR"),
), "exerciser target: programmed response of BAR2/BAR3")
