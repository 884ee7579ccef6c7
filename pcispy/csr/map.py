# SPDX-License-Identifier: BSD-2-Clause
"""The register idiom: every register of the board is declared once, as a :class:`Field` of a
:class:`Register` of a :class:`Block`, and a :class:`RegisterMap` is a set of blocks.

Each part of the board declares its own block beside its gateware (``pcispy/dma/registers.py``
...); :mod:`pcispy.board.registers` assembles the map of BAR0. From the map come the
board's register bank (:mod:`pcispy.csr.bank`), the host driver's accessors
(``board.read("dma.status")``), ``pcispy regs --header`` (a C header) and docs/registers.md.
Nothing else in the project may hold a copy of an offset. Likewise a setting whose legal
values are fewer than its bits hold declares them on its field (:class:`Legal`): the
block's refusal, the host's check and the command-line option follow from it.

Registers are 32 bits wide, at 4-byte aligned offsets. Each block owns a contiguous range
starting at ``base`` (a multiple of 0x40), so blocks can grow without moving others. Wider
quantities (64-bit counters and addresses) are pairs of registers ``name_lo``/``name_hi``;
reading ``_lo`` latches ``_hi`` where the field doc says so (atomic 64-bit reads).
"""

from dataclasses import dataclass, field as dc_field, replace
import enum

__all__ = ["Access", "Legal", "Field", "Register", "reg32", "Block", "RegisterMap"]


class Access(enum.Enum):
    """How software may access a field."""
    RW  = "rw"   # read/write
    RO  = "ro"   # read-only (hardware sets it)
    W1C = "w1c"  # read; writing 1 clears (sticky status / error bits)
    WO  = "wo"   # write-only strobe: reads as 0, a write of 1 triggers an action
    RC  = "rc"   # read-only, cleared (or popped) by the read


@dataclass(frozen=True)
class Legal:
    """The values a setting may be programmed with: ``low..high`` (``high`` None: up to
    what the field holds). The block refuses to start with any other (it sets a status
    ``err_*`` bit), and the host's option for the setting takes only these.

    ``unlimited`` names a one-bit field of the same register that stands for "no limit"
    when set (the setting's own value then does not matter). The host's option says it
    with 0, so a setting with ``unlimited`` starts at 1.
    """
    low: int
    high: int = None
    unlimited: str = ""

    def __post_init__(self):
        if self.low < 0 or (self.high is not None and self.high < self.low) or \
                (self.low == 0 and self.high is None):
            raise ValueError(f"legal values {self}: no range to declare")
        if self.unlimited and self.low != 1:
            raise ValueError(f"legal values {self}: 0 stands for {self.unlimited}, so the "
                             "range starts at 1")

    def __str__(self):
        return f"{self.low}..{'' if self.high is None else self.high}"

    def __contains__(self, value):
        return self.low <= value and (self.high is None or value <= self.high)

    @property
    def refused(self):
        """The values outside the range, in words (``"0 or over 4096"``)."""
        below = {0: [], 1: ["0"]}.get(self.low, [f"below {self.low}"])
        return " or ".join(below + ([] if self.high is None else [f"over {self.high}"]))

    def excludes(self, value):
        """Whether ``value`` (an int, or an unsigned Amaranth value) lies outside the range:
        the block's refusal, without the ``unlimited`` flag."""
        terms = ([value < self.low] if self.low else []) + \
            ([value > self.high] if self.high is not None else [])
        return terms[0] if len(terms) == 1 else terms[0] | terms[1]


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
    #: A setting's :class:`Legal` values, when not every value of its bits is one.
    legal: Legal = None

    def __post_init__(self):
        if not (0 <= self.lsb and self.lsb + self.width <= 32 and self.width > 0):
            raise ValueError(f"field {self.name}: bits {self.lsb}+{self.width} outside 32")
        if not 0 <= self.reset < (1 << self.width):
            raise ValueError(f"field {self.name}: reset {self.reset:#x} does not fit")
        if any(not 0 <= value <= self.top for value in self.values):
            raise ValueError(f"field {self.name}: a named value does not fit {self.width} bits")
        if self.legal is not None:
            if self.access != Access.RW or max(self.legal.low, self.legal.high or 0) > self.top:
                raise ValueError(f"field {self.name}: legal values {self.legal} do not fit "
                                 "a read/write field of its width")
            if self.reset not in self.legal:
                raise ValueError(f"field {self.name}: reset {self.reset} is not legal")

    @property
    def mask(self):
        return ((1 << self.width) - 1) << self.lsb

    @property
    def top(self):
        """The largest value the field holds."""
        return (1 << self.width) - 1

    @property
    def accepted(self):
        """The ``range`` of values software may give the setting: the :class:`Legal` ones
        (with 0 for ``unlimited``), else every value the field holds."""
        if self.legal is None:
            return range(self.top + 1)
        high = self.top if self.legal.high is None else self.legal.high
        return range(0 if self.legal.unlimited else self.legal.low, high + 1)

    def encode(self, value):
        """``{field name: value}`` that program the setting to ``value`` (one of
        :attr:`accepted`; 0 sets the ``unlimited`` flag, if the field has one)."""
        if self.legal is not None and self.legal.unlimited:
            return {self.name: value, self.legal.unlimited: int(value == 0)}
        return {self.name: value}


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
        for f in self.fields:
            flag = f.legal.unlimited if f.legal else ""
            if flag and not any(g.name == flag and g.width == 1 for g in self.fields):
                raise ValueError(f"register {self.name}: field {f.name}'s {flag!r} is not a "
                                 "one-bit field of the register")

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


def reg32(name, offset, access, doc, reset=0, *, legal=None):
    """A register holding one 32-bit field of the same name."""
    return Register(name, offset, (Field(name, 0, 32, access, reset, doc, legal=legal),), doc)


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

    def register(self, name):
        """The :class:`Register` called ``name``."""
        return _named(self.registers, name, f"block {self.name} has no register {name!r}")

    def with_resets(self, resets):
        """This block with other reset values: ``resets`` maps "block.register.field" to
        the value; the entries naming this block's fields are removed from ``resets``."""
        def register(reg):
            fields = []
            for f in reg.fields:
                key = f"{self.name}.{reg.name}.{f.name}"
                fields.append(replace(f, reset=resets.pop(key)) if key in resets else f)
            return replace(reg, fields=tuple(fields))
        return replace(self, registers=tuple(register(r) for r in self.registers))


class RegisterMap:
    """All blocks of BAR0. ``map["dma.status"]`` -> ``(address, Register)``."""

    def __init__(self, blocks, size):
        self.blocks = tuple(blocks)
        #: Bytes the map spans (its BAR's size).
        self.size = size
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
        if spans and spans[-1][1] > size:
            raise ValueError(f"register block {spans[-1][2]} ends beyond the map's "
                             f"{size} bytes")

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
        blocks = [block.with_resets(resets) for block in self.blocks]
        if resets:
            raise KeyError(f"no field named {', '.join(sorted(resets))}")
        return RegisterMap(blocks, self.size)
