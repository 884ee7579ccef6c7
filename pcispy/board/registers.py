# SPDX-License-Identifier: BSD-2-Clause
"""The register map of BAR0: one declaration used by the gateware, the host and the docs.

Every register and field is declared here once (name, offset, width, access, reset, doc).
From :data:`REGISTER_MAP` come the CSR decoder of the board, the host driver's accessors
(``board.read("dma.status")``), ``pcispy regs --header`` (a C header) and
docs/registers.md. Nothing else in the project may hold a copy of an offset.

Registers are 32 bits wide, at 4-byte aligned offsets inside BAR0. Each block owns a
contiguous range starting at ``base`` (a multiple of 0x40), so blocks can grow without
moving others. Wider quantities (64-bit counters and
addresses) are pairs of registers ``name_lo``/``name_hi``; reading ``_lo`` latches ``_hi``
where the field doc says so (atomic 64-bit reads).
"""

from dataclasses import dataclass, field as dc_field, replace
import enum

from pcispy.board.clock_meter import (COUNT_BITS as _CLOCK_COUNT_BITS,
                          DEFAULT_GATE_LOG2 as _DEFAULT_GATE_LOG2)
from pcispy.pci.bus import DECODE_SPEEDS, DevselSpeed as _DevselSpeed
from pcispy.spy.format import FORMAT_VERSION as _TRACE_FORMAT_VERSION

__all__ = ["Access", "Field", "Register", "reg32", "Block", "RegisterMap", "REGISTER_MAP",
           "IDENTITY_MAGIC", "BAR0_SIZE", "TRACE_MEMORY", "decode_resets"]

#: Size of BAR0 in bytes.
BAR0_SIZE = 4096

#: Value of ``id.magic``: ASCII "PCIS" (0x50434953), how tools recognise a pcispy board.
IDENTITY_MAGIC = 0x5043_4953

#: Values of ``id.config.trace_memory``: where the spy's trace memory is.
TRACE_MEMORY = {"none": 0, "bram": 1, "sram": 2}


class Access(enum.Enum):
    """How software may access a field."""
    RW  = "rw"   # read/write
    RO  = "ro"   # read-only (hardware sets it)
    W1C = "w1c"  # read; writing 1 clears (sticky status / error bits)
    WO  = "wo"   # write-only strobe: reads as 0, a write of 1 triggers an action
    RC  = "rc"   # read-only, cleared (or popped) by the read


@dataclass(frozen=True)
class Field:
    """A field of a register: bits ``[lsb, lsb + width)``."""
    name: str
    lsb: int
    width: int
    access: Access
    reset: int = 0
    doc: str = ""
    #: Optional mapping of value -> name, for decoding in ``pcispy regs``.
    values: dict = dc_field(default_factory=dict)

    def __post_init__(self):
        if not (0 <= self.lsb and self.lsb + self.width <= 32 and self.width > 0):
            raise ValueError(f"field {self.name}: bits {self.lsb}+{self.width} outside 32")
        if not 0 <= self.reset < (1 << self.width):
            raise ValueError(f"field {self.name}: reset {self.reset:#x} does not fit")

    @property
    def mask(self):
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True)
class Register:
    """A 32-bit register at ``offset`` bytes from its block's base."""
    name: str
    offset: int
    fields: tuple
    doc: str = ""

    def __post_init__(self):
        if self.offset % 4:
            raise ValueError(f"register {self.name}: offset {self.offset:#x} not aligned")
        used = 0
        for f in self.fields:
            if used & f.mask:
                raise ValueError(f"register {self.name}: field {f.name} overlaps another")
            used |= f.mask

    @property
    def reset(self):
        value = 0
        for f in self.fields:
            value |= f.reset << f.lsb
        return value

    def field(self, name):
        """The :class:`Field` called ``name``."""
        return _named(self.fields, name, f"register {self.name} has no field {name!r}")

    def decode(self, value):
        """``{field name: value}`` of a register value."""
        return {f.name: (value >> f.lsb) & ((1 << f.width) - 1) for f in self.fields}


def _named(items, name, missing):
    """The item of ``items`` whose ``name`` is ``name``; KeyError(``missing``) if none."""
    for item in items:
        if item.name == name:
            return item
    raise KeyError(missing)


def reg32(name, offset, access, doc, reset=0):
    """A register holding one 32-bit field of the same name."""
    return Register(name, offset, (Field(name, 0, 32, access, reset, doc),), doc)


@dataclass(frozen=True)
class Block:
    """The registers of one part of the board, from ``base`` (bytes into BAR0)."""
    name: str
    base: int
    registers: tuple
    doc: str = ""

    def __post_init__(self):
        offsets = [r.offset for r in self.registers]
        if len(set(offsets)) != len(offsets):
            raise ValueError(f"block {self.name}: two registers share an offset")

    @property
    def size(self):
        return max((r.offset for r in self.registers), default=-4) + 4


class RegisterMap:
    """All blocks of BAR0. ``map["dma.status"]`` -> ``(address, Register)``."""

    def __init__(self, blocks):
        self.blocks = tuple(blocks)
        self._by_name = {}
        spans = []
        for block in self.blocks:
            spans.append((block.base, block.base + block.size, block.name))
            for reg in block.registers:
                self._by_name[f"{block.name}.{reg.name}"] = (block.base + reg.offset, reg)
        spans.sort()
        for (a0, a1, n0), (b0, b1, n1) in zip(spans, spans[1:]):
            if b0 < a1:
                raise ValueError(f"register blocks {n0} and {n1} overlap")
        if spans and spans[-1][1] > BAR0_SIZE:
            raise ValueError(f"register block {spans[-1][2]} ends beyond BAR0")

    def __getitem__(self, name):
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no register named {name!r}") from None

    def __iter__(self):
        """``(qualified name, address, Register)`` in address order."""
        for name, (address, reg) in sorted(self._by_name.items(), key=lambda kv: kv[1][0]):
            yield name, address, reg

    def names(self):
        return [name for name, _, _ in self]

    def block(self, name):
        """The :class:`Block` called ``name``."""
        return _named(self.blocks, name, f"no register block named {name!r}")

    def with_resets(self, resets):
        """This map with other reset values: ``resets`` maps "block.register.field" to
        the value (a build whose hardware cannot honour a map's reset value, such as a
        slow-decode target's DEVSEL# speed, resets to one it can)."""
        resets = dict(resets)

        def register(block, reg):
            fields = []
            for f in reg.fields:
                key = f"{block.name}.{reg.name}.{f.name}"
                fields.append(replace(f, reset=resets.pop(key)) if key in resets else f)
            return replace(reg, fields=tuple(fields))
        blocks = [replace(b, registers=tuple(register(b, r) for r in b.registers))
                  for b in self.blocks]
        if resets:
            raise KeyError(f"no field named {', '.join(sorted(resets))}")
        return RegisterMap(blocks)


# --- The blocks ---------------------------------------------------------------------
# Each part of the board declares its block below, in base order. Bases are multiples of
# 0x40 bytes; leave room to grow.

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
          "(bin edges: pcispy.irq.histogram.bin_edges)"),
) + tuple(
    reg32(f"marker_{n}", 0x60 + 4 * n, Access.WO, f"checkpoint: any write pushes (cycle, "
          f"id {n}) into the marker FIFO") for n in range(IRQ_MARKERS)
), "interrupt latency: cycle counter, interrupt generator, checkpoints, histogram")

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

# DMA exerciser (pcispy/dma/engine.py): the bus master's programmable traffic. The
# settings are checked at start: an impossible combination sets status.err_* and the
# engine does not start. Settings cannot change while the engine runs (writes refused,
# status.err_busy).
from pcispy.pci.bus import Command as _Command, COMMAND_MNEMONICS as _MNEMONICS  # noqa: E402
from pcispy.dma.patterns import Pattern as _Pattern  # noqa: E402

#: Longest burst the DMA engine can be asked for, in data phases (besides "unlimited").
DMA_MAX_BURST = 4096

DMA = Block("dma", 0x100, (
    Register("control", 0x00, (
        Field("start", 0, 1, Access.WO, 0, "check the settings and start (refusals in "
              "status.err_*); zeroes the results"),
        Field("stop", 1, 1, Access.WO, 0, "end the current transaction as soon as the "
              "protocol allows and finish (status.stopped)"),
    ), "DMA commands"),
    Register("mode", 0x04, (
        Field("cmd", 0, 4, Access.RW, _Command.MEM_WRITE.value, "bus command",
              {c.value: _MNEMONICS[c] for c in _Command}),
        Field("width64", 4, 1, Access.RW, 0, "64-bit data phases (REQ64#; 64-bit board, "
              "memory commands)"),
        Field("pattern", 8, 2, Access.RW, 0, "write data pattern / read reference "
              "(pcispy/dma/patterns.py)", {p.value: p.name.lower() for p in _Pattern}),
        Field("verify", 10, 1, Access.RW, 0, "compare read data with the pattern "
              "(mismatches)"),
        Field("continuous", 11, 1, Access.RW, 0, "repeat passes until stopped"),
    ), "command, width, pattern"),
    reg32("addr_lo", 0x08, Access.RW, "start byte address, low word (aligned to the width)"),
    reg32("addr_hi", 0x0C, Access.RW, "start byte address, high word (non-zero: Dual "
          "Address Cycles, memory commands only)"),
    reg32("length", 0x10, Access.RW, "bytes per pass (a multiple of the width)", 4096),
    Register("burst", 0x14, (
        Field("phases", 0, 13, Access.RW, 256, f"data phases per transaction, "
              f"1..{DMA_MAX_BURST}"),
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
        Field("err_burst", 9, 1, Access.RO, 0, f"refused: burst 0 or over {DMA_MAX_BURST}"),
        Field("err_length", 10, 1, Access.RO, 0, "refused: length 0 or not a multiple of "
              "the width"),
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

# Protocol checker (pcispy/spy/checker.py): one bit per rule of RULES in the enable and
# flag pairs (rule id n is bit n of enable_lo:enable_hi), counters read through count_index.
from pcispy.spy.checker import RULES as _CHECK_RULES  # noqa: E402  (the rule list is the one source)
from pcispy.spy.checker import COUNT_WIDTH as _CHECK_COUNT_WIDTH  # noqa: E402
from pcispy.spy.checker import LOG_DEPTH as _CHECK_LOG_DEPTH  # noqa: E402
from pcispy.spy.checker import NO_MASTER as _CHECK_NO_MASTER  # noqa: E402

_CHECK_N = len(_CHECK_RULES)
_CHECK_NAMES = {rule.id: rule.name for rule in _CHECK_RULES}
_CHECK_INDEX_BITS = max(1, (_CHECK_N - 1).bit_length())
_CHECK_LOG_INDEX_BITS = max(1, (_CHECK_LOG_DEPTH - 1).bit_length())
_CHECK_LOG_ENTRIES_BITS = _CHECK_LOG_DEPTH.bit_length()
assert 32 < _CHECK_N <= 64, "check.enable/flags are one _lo/_hi pair of registers"

CHECK = Block("check", 0x280, (
    Register("control", 0x00, (
        Field("clear", 0, 1, Access.WO, 0, "clear every flag and counter, status.any, the "
              "first-violation record and the violation log (wins over a violation in the "
              "same clock)"),
    ), "checker commands"),
    Register("status", 0x04, (
        Field("any", 0, 1, Access.RO, 0, "some enabled rule was broken since the last clear"),
        Field("index_error", 1, 1, Access.RO, 0, "count_index names no rule: the read is "
              "refused and count reads 0"),
        Field("first_rule", 8, 8, Access.RO, 0, "id of the first broken rule (lowest id if "
              "several broke in that clock); valid while any", _CHECK_NAMES),
        Field("rules", 16, 8, Access.RO, _CHECK_N, "number of rules this gateware checks"),
    ), "checker status"),
    reg32("first_cycle", 0x08, Access.RO, "value of `cycle` at the first violation; valid "
          "while status.any"),
    reg32("cycle", 0x0C, Access.RO, "the checker's free-running PCI clock counter (wraps)"),
    Register("enable_lo", 0x10, (
        Field("enable", 0, 32, Access.RW, (1 << 32) - 1, "bit n enables rule n (rules "
              "0-31); a disabled rule neither pulses, nor flags, nor counts"),
    ), "rule enables, rules 0-31"),
    Register("enable_hi", 0x14, (
        Field("enable", 0, _CHECK_N - 32, Access.RW, (1 << (_CHECK_N - 32)) - 1,
              f"bit n enables rule 32+n (rules 32-{_CHECK_N - 1})"),
    ), f"rule enables, rules 32-{_CHECK_N - 1}"),
    Register("flags_lo", 0x18, (
        Field("flags", 0, 32, Access.RO, 0, "bit n: rule n was broken since the last clear"),
    ), "sticky violation flags, rules 0-31"),
    Register("flags_hi", 0x1C, (
        Field("flags", 0, _CHECK_N - 32, Access.RO, 0, "bit n: rule 32+n was broken since "
              "the last clear"),
    ), f"sticky violation flags, rules 32-{_CHECK_N - 1}"),
    Register("count_index", 0x20, (
        Field("index", 0, _CHECK_INDEX_BITS, Access.RW, 0, "rule whose counter `count` "
              "shows", _CHECK_NAMES),
    ), "violation counter select"),
    Register("count", 0x24, (
        Field("count", 0, _CHECK_COUNT_WIDTH, Access.RO, 0, "violations of rule count_index "
              "since the last clear, saturating at all ones"),
    ), "violation counter of the selected rule"),
    Register("log_index", 0x28, (
        Field("index", 0, _CHECK_LOG_INDEX_BITS, Access.RW, 0, "violation-log entry that "
              "log_cycle, log_rules_lo/_hi and log_info.master show (from the clock after "
              "this write)"),
    ), "violation log entry select"),
    reg32("log_cycle", 0x2C, Access.RO, "`cycle` of the clock of entry log_index (0 at or "
          "beyond log_info.entries)"),
    Register("log_rules_lo", 0x30, (
        Field("rules", 0, 32, Access.RO, 0, "bit n: rule n was broken in the clock of entry "
              "log_index (rules 0-31)"),
    ), "rules broken in the clock of the selected log entry, rules 0-31"),
    Register("log_rules_hi", 0x34, (
        Field("rules", 0, _CHECK_N - 32, Access.RO, 0, "bit n: rule 32+n was broken in the "
              "clock of entry log_index"),
    ), f"rules broken in the clock of the selected log entry, rules 32-{_CHECK_N - 1}"),
    Register("log_info", 0x38, (
        Field("entries", 0, _CHECK_LOG_ENTRIES_BITS, Access.RO, 0, f"log entries stored "
              f"since the last clear: one per clock in which an enabled rule broke, the "
              f"first {_CHECK_LOG_DEPTH} (later ones are only flagged and counted)"),
        Field("master", 8, 3, Access.RO, _CHECK_NO_MASTER, "entry log_index: the master of "
              "the transaction in progress in its clock (the one whose GNT# was asserted "
              f"in the clock before the address phase); {_CHECK_NO_MASTER}: unknown (no "
              "transaction, no single GNT#, or the checker does not see every GNT#, as on "
              "a board in a slot)"),
    ), "violation log: entries stored, master of the selected entry"),
), "protocol checker: per-rule flags and counters, first violation, violation log (rules: "
   "pcispy check --list-rules)")

from pcispy.spy.format import (CaptureMode as _CaptureMode, TriggerSource as _TriggerSource,  # noqa: E402
                         TIMESTAMP_BITS as _TIMESTAMP_BITS)
from pcispy.spy.filters import FilterCombine as _FilterCombine  # noqa: E402
from pcispy.spy.counters import CounterValues as _CounterValues  # noqa: E402
from pcispy.spy.counters import COUNTER_INIT as _COUNTER_INIT  # noqa: E402
from pcispy.spy.counters import FilterCounter as _FilterCounter  # noqa: E402
from pcispy.spy.counters import FILTER_COUNTER_BITS as _FILTER_COUNTER_BITS  # noqa: E402
from pcispy.spy.trigger import RecorderState as _RecorderState  # noqa: E402

#: Filter comparators of the board's spy, and the spy registers' layout constants.
SPY_FILTERS = 4
_SPY_FILTER_SELECT_BITS = max(1, (SPY_FILTERS - 1).bit_length())
_SPY_FILTER_BASE, _SPY_FILTER_STRIDE = 0x080, 0x20
_SPY_COUNTER_BASE = 0x100


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
    """One register per counter of :class:`~.spy.counters.CounterValues` (``_lo``/``_hi``
    pairs for the 48-bit ones; reading ``_lo`` latches ``_hi``), in its field order."""
    registers = []
    offset = _SPY_COUNTER_BASE
    for name, field in _CounterValues(SPY_FILTERS):
        if name == "hits":
            for i in range(SPY_FILTERS):
                registers.append(reg32(f"hits{i}", offset, Access.RO,
                                       f"transactions comparator {i} hit"))
                offset += 4
        elif field.width > 32:
            registers.append(reg32(f"{name}_lo", offset, Access.RO,
                                   f"counter {name}, bits 31:0 (reading it latches _hi)"))
            registers.append(Register(f"{name}_hi", offset + 4, (
                Field(name, 0, field.width - 32, Access.RO, 0, f"counter {name}, bits "
                      f"{field.width - 1}:32"),), f"counter {name}, high bits"))
            offset += 8
        else:
            reset = _COUNTER_INIT.get(name, 0)
            registers.append(Register(name, offset, (
                Field(name, 0, field.width, Access.RO, reset, f"counter {name} (saturating; "
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
              "... hits) at this clock's values until release, so that reading them one by "
              "one gives one instant's; counting goes on (again while held: a new "
              "snapshot)"),
        Field("release", 5, 1, Access.WO, 0, "the counter registers follow the counters "
              "again"),
    ), "spy commands"),
    Register("config", 0x04, (
        Field("mode", 0, 1, Access.RW, 0, "what is stored: raw clocks or transaction "
              "summaries (taken at arm)", _enum_names(_CaptureMode)),
        Field("source", 1, 2, Access.RW, 0, "trigger source (taken at arm)",
              _enum_names(_TriggerSource)),
        Field("ring", 3, 1, Access.RW, 0, "after the trigger, overwrite the oldest records "
              "until stop or post instead of stopping when full"),
        Field("idle_compress", 4, 1, Access.RW, 0, "raw mode: leave out idle clocks"),
        Field("raw_select", 6, 1, Access.RW, 0, "raw mode: store only the clocks of "
              "transactions the filters select (and those with a violation or the trigger)"),
        Field("combine", 5, 1, Access.RW, 0, "how include comparators combine",
              _enum_names(_FilterCombine)),
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
        Field("state", 0, 2, Access.RO, 0, "capture state", _enum_names(_RecorderState)),
        Field("done", 2, 1, Access.RO, 0, "stopped and every record written: the trace "
              "can be read"),
        Field("pre_error", 3, 1, Access.RO, 0, "the last arm was refused: pre >= capacity"),
        Field("clearing", 4, 1, Access.RO, 0, "histograms or per-filter counters are "
              "being zeroed"),
        Field("held", 5, 1, Access.RO, 0, "the counter registers show a snapshot "
              "(control.snapshot), not the running counters"),
    ), "spy status"),
    reg32("capacity", 0x1C, Access.RO, "records the trace memory holds in the armed mode "
          "(raw: 1 slot of 16 bytes each, summary: 2 slots)"),
    reg32("start", 0x20, Access.RO, "index of the oldest valid record; record i is at BAR1 "
          "byte offset 16 * slots * i"),
    reg32("count", 0x24, Access.RO, "valid records, from start, wrapping at capacity"),
    reg32("trigger_index", 0x28, Access.RO, "index of the trigger record"),
    reg32("trigger_time_lo", 0x2C, Access.RO, "timestamp of the trigger, bits 31:0 (reading "
          "it latches _hi)"),
    Register("trigger_time_hi", 0x30, (
        Field("trigger_time", 0, _TIMESTAMP_BITS - 32, Access.RO, 0, "timestamp of the "
              "trigger, high bits"),), "trigger timestamp, high bits"),
    reg32("lost", 0x34, Access.RO, "records dropped since arm (each reported by an OVERRUN "
          "record in the trace)"),
    reg32("overruns", 0x38, Access.RO, "OVERRUN records written since arm"),
    Register("hist_select", 0x3C, (
        Field("histogram", 0, 1, Access.RW, 0, "0: first-data latency (linear bins), 1: "
              "clocks between transactions (log2 bins)", {0: "latency", 1: "gap"}),
        Field("bin", 8, 6, Access.RW, 0, "bin shown by hist_data"),
    ), "histogram bin select"),
    reg32("hist_data", 0x40, Access.RO, "count in the selected histogram bin"),
    Register("fcount_select", 0x44, (
        Field("filter", 0, _SPY_FILTER_SELECT_BITS, Access.RW, 0, "comparator whose "
              "counter fcount_lo/_hi show: the transactions that comparator hits, whatever "
              "the others and config.combine say"),
        Field("counter", 8, 4, Access.RW, 0, "which counter (busy_clocks: the clocks of "
              "those transactions; bytes: added when each ends; the rest as the combined "
              "counters; values 13-15 read 0)", _enum_names(_FilterCounter)),
    ), "per-filter counter select"),
    reg32("fcount_lo", 0x48, Access.RO, "the selected per-filter counter, bits 31:0 (valid "
          "from the second clock after fcount_select is written; reading it latches _hi). "
          "A transaction is counted within 70 clocks of its end; status.clearing is set "
          "while a clear is still zeroing them"),
    Register("fcount_hi", 0x4C, (
        Field("fcount", 0, _FILTER_COUNTER_BITS - 32, Access.RO, 0, "the selected "
              "per-filter counter, bits 47:32 (as of the last fcount_lo read)"),
    ), "selected per-filter counter, high bits"),
) + sum((_spy_filter_registers(i) for i in range(SPY_FILTERS)), ()) +
    _spy_counter_registers(),
    "bus spy: capture control, trigger, filters, counters (combined and per filter), "
    "histograms (trace in BAR1)")

REGISTER_MAP = RegisterMap([IDENTITY, TARGET, DMA, IRQ, CHECK, SPY])
