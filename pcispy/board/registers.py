# SPDX-License-Identifier: BSD-2-Clause
"""The register map of BAR0, assembled from the blocks the board's parts declare, and the
board's own block (``id``: who the board is), with the constants its gateware reads here
(the clock meter's, pcispy/board/clock_meter.py). Data: no gateware.

The idiom is :mod:`pcispy.csr.map`; each block lives beside its gateware: ``target``
(:mod:`pcispy.exerciser.registers`), ``dma`` (:mod:`pcispy.dma.registers`), ``irq``
(:mod:`pcispy.irq.registers`), ``check`` (:mod:`pcispy.check.registers`) and ``spy``
(:mod:`pcispy.spy.registers`).
"""

from pcispy.check.registers import CHECK
from pcispy.csr.map import Access, Block, Field, Register, RegisterMap, reg32
from pcispy.dma.registers import DMA
from pcispy.exerciser.registers import TARGET
from pcispy.irq.registers import IRQ
from pcispy.pci.codes import DECODE_SPEEDS, DevselSpeed as _DevselSpeed
from pcispy.spy.registers import FORMAT_VERSION as _TRACE_FORMAT_VERSION, SPY

__all__ = ["REGISTER_MAP", "IDENTITY", "IDENTITY_MAGIC", "BAR0_SIZE", "TRACE_MEMORY",
           "CLOCK_COUNT_BITS", "DEFAULT_GATE_LOG2", "DEFAULT_VENDOR_ID", "DEFAULT_DEVICE_ID",
           "parse_ids"]

#: Size of BAR0 in bytes.
BAR0_SIZE = 4096

#: The board's PCI IDs in its configuration space (pcispy/core/config.py), by which the host
#: finds its boards: pcispy's unless the build is given others (``make bitstream ARGS="--ids
#: V:D"``). pcispy has no vendor ID of its own and the PCI-SIG keeps none for open projects:
#: 0x5C15 is assigned to no company (pci.ids has no entry, so lspci shows "Device
#: 5c15:0001"), unlike 0x1209, a pid.codes USB vendor ID that is SCI Systems Inc on PCI. A
#: board for a machine others use should carry IDs its maker owns.
DEFAULT_VENDOR_ID = 0x5C15
DEFAULT_DEVICE_ID = 0x0001


def parse_ids(text):
    """``"VENDOR:DEVICE"`` (hex, e.g. ``"5c15:0001"``) -> ``(vendor ID, device ID)``; a
    ValueError naming the problem (0xFFFF is no vendor: configuration reads of an empty
    slot return it)."""
    vendor, colon, device = str(text).partition(":")
    try:
        ids = (int(vendor, 16), int(device, 16))
    except ValueError:
        ids = None
    if not colon or ids is None or not all(0 <= x <= 0xFFFF for x in ids):
        raise ValueError(f"{text!r} is not VENDOR:DEVICE in hex (e.g. 5c15:0001)")
    if ids[0] == 0xFFFF:
        raise ValueError(f"{text!r}: vendor ID ffff means 'no device' to every host")
    return ids


#: Value of ``id.magic``: ASCII "PCIS" (0x50434953), how tools recognise a pcispy board.
IDENTITY_MAGIC = 0x5043_4953

#: log2 of the clock meter's gate in microseconds on the boards (1024 us: 1 kHz resolution).
DEFAULT_GATE_LOG2 = 10
#: Width of the clock meter's count (``id.clock.pci_count``).
CLOCK_COUNT_BITS = 24

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
        Field("bus_clock", 24, 8, Access.RO, 33, "the fastest bus clock in whole MHz at "
              "which this build samples every PCI input in time: the limit of the board's "
              "pin-out, which the build was placed, routed and checked for (make timing); "
              "on a faster bus it may miss inputs"),
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
        Field("pci_count", 0, CLOCK_COUNT_BITS, Access.RO, 0, "PCI clocks counted in the "
              "last gate of 2**gate_log2 us of the board oscillator: the PCI clock in units "
              "of 2**-gate_log2 MHz (one count either way); 0: not measured (no oscillator "
              "gates the meter, as in the simulated system, or the PCI clock has not run "
              "two gates)"),
        Field("gate_log2", 24, 5, Access.RO, DEFAULT_GATE_LOG2, "log2 of the gate in "
              "microseconds"),
    ), "the PCI clock, measured against the board oscillator"),
), "who the board is")

#: Every block of BAR0, in base order. Bases are multiples of 0x40 bytes; leave room to grow.
REGISTER_MAP = RegisterMap([IDENTITY, TARGET, DMA, IRQ, CHECK, SPY], BAR0_SIZE)
