# SPDX-License-Identifier: BSD-2-Clause
"""The register map of BAR0, assembled from the blocks the board's parts declare, and the
board's own block (``id``: who the board is).

The idiom is :mod:`pcispy.csr.map`; each block lives beside its gateware: ``target``
(:mod:`pcispy.exerciser.registers`), ``dma`` (:mod:`pcispy.dma.registers`), ``irq``
(:mod:`pcispy.irq.registers`), ``check`` and ``spy`` (:mod:`pcispy.spy.registers`).
"""

from pcispy.board.clock_meter import (COUNT_BITS as _CLOCK_COUNT_BITS,
                                      DEFAULT_GATE_LOG2 as _DEFAULT_GATE_LOG2)
from pcispy.csr.map import Access, Block, Field, Register, RegisterMap, reg32
from pcispy.dma.registers import DMA
from pcispy.exerciser.registers import TARGET
from pcispy.irq.registers import IRQ
from pcispy.pci.bus import DECODE_SPEEDS, DevselSpeed as _DevselSpeed
from pcispy.spy.format import FORMAT_VERSION as _TRACE_FORMAT_VERSION
from pcispy.spy.registers import CHECK, SPY

__all__ = ["REGISTER_MAP", "IDENTITY", "IDENTITY_MAGIC", "BAR0_SIZE", "TRACE_MEMORY"]

#: Size of BAR0 in bytes.
BAR0_SIZE = 4096

#: Value of ``id.magic``: ASCII "PCIS" (0x50434953), how tools recognise a pcispy board.
IDENTITY_MAGIC = 0x5043_4953

#: Values of ``id.config.trace_memory``: where the spy's trace memory is.
TRACE_MEMORY = {"none": 0, "bram": 1, "sram": 2, "sdram": 3}

IDENTITY = Block("id", 0x000, (
    reg32("magic", 0x00, Access.RO, "ASCII 'PCIS': this is a pcispy board", IDENTITY_MAGIC),
    Register("version", 0x04, (
        Field("minor", 0, 8, Access.RO, 1, "gateware minor version"),
        Field("major", 8, 8, Access.RO, 0, "gateware major version"),
        Field("format", 16, 8, Access.RO, _TRACE_FORMAT_VERSION, "trace record format version"),
    ), "gateware and trace-format versions"),
    Register("config", 0x08, (
        Field("bus_width", 0, 1, Access.RO, 0, "0: 32-bit bus, 1: 64-bit bus",
              {0: "32", 1: "64"}),
        Field("passive", 1, 1, Access.RO, 0, "built without PCI output drivers"),
        Field("trace_memory", 2, 2, Access.RO, 0, "the spy's trace memory: none (built "
              "without the spy), block RAM, or an external asynchronous SRAM",
              {value: name for name, value in TRACE_MEMORY.items()}),
        Field("decode", 4, 2, Access.RO, _DevselSpeed.MEDIUM.value, "the target's address "
              "decode: the fastest DEVSEL# it answers with (built slow: "
              "target.response.devsel_speed resets to slow)",
              {s.value: s.name.lower() for s in DECODE_SPEEDS}),
        Field("clock_mhz", 8, 8, Access.RO, 33, "nominal PCI clock in MHz"),
        Field("trace_depth", 16, 5, Access.RO, 0, "log2 of the trace memory's depth in "
              "16-byte slots (BAR1 is 16 << trace_depth bytes; spy.capacity gives the "
              "records of the armed mode); 0 without the spy"),
    ), "build-time configuration of this board"),
    Register("mode", 0x0C, (
        Field("passive", 0, 1, Access.RW, 0, "passive mode: once set, the board claims no "
              "new transaction, starts no bus-master transaction and pulls no INTx#; from "
              "the first clock in which it drives no PCI line and its target is idle, "
              "every PCI output is disabled; the spy and the checker go on. Written over "
              "the bus, the board then answers nothing until RST# or the side channel "
              "clears it"),
        Field("passive_on", 1, 1, Access.RO, 0, "passive mode is in force"),
    ), "operating mode"),
    Register("clock", 0x10, (
        Field("pci_count", 0, _CLOCK_COUNT_BITS, Access.RO, 0, "PCI clocks counted in the "
              "last gate of 2**gate_log2 us of the board oscillator: the PCI clock in units "
              "of 2**-gate_log2 MHz (one count either way); 0: not measured (no oscillator "
              "gates the meter, as in the simulated system, or the PCI clock has not run "
              "two gates)"),
        Field("gate_log2", 24, 5, Access.RO, _DEFAULT_GATE_LOG2, "log2 of the gate in "
              "microseconds"),
    ), "the PCI clock, measured against the board oscillator"),
), "who the board is")

#: Every block of BAR0, in base order. Bases are multiples of 0x40 bytes; leave room to grow.
REGISTER_MAP = RegisterMap([IDENTITY, TARGET, DMA, IRQ, CHECK, SPY], BAR0_SIZE)
