# SPDX-License-Identifier: BSD-2-Clause
"""The simulated agents' control registers as data: each agent declares its registers once,
as a :class:`ControlRegisters` list of :class:`ControlRegister` (an index, maybe several
consecutive words) with their :class:`ControlField` s.

From that declaration come the register indices (an ``IntEnum``,
:meth:`ControlRegisters.enum`), the Python driver's packing (:meth:`ControlRegister.pack`,
:meth:`ControlRegister.unpack`) and, for the gateware, the Amaranth layout of a register's
value (:attr:`ControlRegister.layout`) and its words (:meth:`ControlRegister.slices`, which
:func:`pcispy.sim.control.register_reads` shows). The port the registers are reached
through, and its timing, is :mod:`pcispy.sim.control`.

Data only: the system's configuration (pcispy/sim/system.py), which the command line loads
to reach a running session, declares the system's registers with it without loading
Amaranth.
"""

import enum
from dataclasses import dataclass

__all__ = ["CONTROL_ADDR_BITS", "ControlField", "ControlRegister", "ControlRegisters"]

#: Register address bits per agent (1024 registers of 32 bits).
CONTROL_ADDR_BITS = 10


@dataclass(frozen=True)
class ControlField:
    """A field of a control register: ``width`` bits from bit ``lsb`` (bits of a register
    spanning several words are numbered across them: bit 32 is bit 0 of the second)."""
    name: str
    lsb: int
    width: int
    doc: str = ""
    #: The value after reset.
    reset: int = 0

    def __post_init__(self):
        if not 0 <= self.reset < (1 << self.width):
            raise ValueError(f"field {self.name}: reset {self.reset:#x} does not fit")

    @property
    def mask(self):
        return ((1 << self.width) - 1) << self.lsb

    def get(self, word):
        """The field's value in ``word``: an Amaranth value (a slice) or a Python int."""
        if isinstance(word, int):
            return (word >> self.lsb) & ((1 << self.width) - 1)
        return word[self.lsb:self.lsb + self.width]

    def insert(self, word, value):
        """``word`` (an int) with this field set to ``value`` (truncated to the field)."""
        return (word & ~self.mask) | ((value << self.lsb) & self.mask)


@dataclass(frozen=True)
class ControlRegister:
    """A control register at register index ``index``, ``words`` consecutive 32-bit words
    long (a record written or read word by word), with its fields (none: one value)."""
    name: str
    index: int
    fields: tuple = ()
    words: int = 1
    doc: str = ""

    def __post_init__(self):
        used = 0
        for f in self.fields:
            if f.lsb < 0 or f.width <= 0 or f.lsb + f.width > self.bits:
                raise ValueError(f"register {self.name}: field {f.name} outside its bits")
            if used & f.mask:
                raise ValueError(f"register {self.name}: field {f.name} overlaps another")
            used |= f.mask

    @property
    def bits(self):
        return 32 * self.words

    @property
    def reset(self):
        """The register's value after reset (its fields' resets)."""
        return sum(f.reset << f.lsb for f in self.fields)

    @property
    def layout(self):
        """The Amaranth layout of the register's value: its fields at their bits, as wide
        as its highest field (the bits above read as 0)."""
        # only the gateware asks for a layout: Amaranth loads here (the module's docstring)
        from amaranth.lib import data
        size = max((f.lsb + f.width for f in self.fields), default=self.bits)
        return data.FlexibleLayout(size, {f.name: data.Field(f.width, f.lsb)
                                          for f in self.fields})

    def field(self, name):
        """The :class:`ControlField` called ``name``."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"register {self.name} has no field {name!r}")

    def pack(self, **values):
        """The register value with the named fields set (the others 0); ValueError for an
        unknown field or a value that does not fit."""
        word = 0
        for name, value in values.items():
            try:
                f = self.field(name)
            except KeyError as error:
                raise ValueError(error.args[0]) from None
            value = int(value)
            if value < 0 or value >> f.width:
                raise ValueError(f"{name}={value} does not fit in {f.width} bits")
            word |= value << f.lsb
        return word

    def unpack(self, value):
        """``{field name: value}`` of a register value."""
        return {f.name: f.get(value) for f in self.fields}

    def slices(self, value):
        """``{register index: 32-bit slice}`` of an Amaranth ``value`` of this register,
        word by word (what :func:`register_reads` shows, or a write loads)."""
        value = value.as_value() if hasattr(value, "as_value") else value
        return {self.index + k: value[32 * k:32 * k + 32] for k in range(self.words)}


class ControlRegisters:
    """An agent's registers, declared once: ``ControlRegisters("Reg", [ControlRegister(...),
    ...])``. ``registers["NAME"]`` is a :class:`ControlRegister`; :meth:`enum` the indices."""

    def __init__(self, name, registers):
        self.name = name
        self.registers = tuple(registers)
        self._by_name = {}
        taken = {}
        for reg in self.registers:
            if reg.name in self._by_name:
                raise ValueError(f"{name}: two registers called {reg.name}")
            self._by_name[reg.name] = reg
            for index in range(reg.index, reg.index + reg.words):
                if index in taken:
                    raise ValueError(f"{name}: {reg.name} and {taken[index]} share index {index}")
                if not 0 <= index < (1 << CONTROL_ADDR_BITS):
                    raise ValueError(f"{name}: {reg.name} outside the control port")
                taken[index] = reg.name

    def __getitem__(self, name):
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"{self.name} has no register {name!r}") from None

    def __iter__(self):
        return iter(self.registers)

    def enum(self):
        """The register indices as an ``IntEnum`` named after the list (``Reg.CONFIG``)."""
        return enum.IntEnum(self.name, [(reg.name, reg.index) for reg in self.registers])

    def field(self, name):
        """``(ControlRegister, ControlField)`` of the field called ``name`` (field names are unique
        across the registers of an agent that looks them up this way)."""
        found = [(reg, f) for reg in self.registers for f in reg.fields if f.name == name]
        if len(found) != 1:
            raise KeyError(f"{self.name}: no single field called {name!r}")
        return found[0]
