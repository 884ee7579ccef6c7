# SPDX-License-Identifier: BSD-2-Clause
"""How Python reaches the simulated bus agents without running on every PCI clock.

Every agent of the simulated system has one *control port*: a bank of 32-bit registers that
the cocotb side reads and writes one access per clock, plus an ``event`` line the agent
raises when it has something to report (a command finished, an interrupt arrived). Python
writes a command into an agent's registers, pokes a "go" register, and then sleeps until
``event`` rises: no Python runs while the bus moves data.

The system top-level multiplexes the control ports of all agents onto one set of top-level
ports (``ctl_sel`` picks the agent), see :mod:`pcispy.sim.system`.

Timing of one access (the agent's view, all in its clock domain):

- write: ``addr``, ``w_data`` and ``w_en`` are valid for one clock; the agent takes them at
  that clock edge.
- read: ``addr`` is presented; ``r_data`` must hold the register's value from the next clock
  on (agents may register the read mux). ``r_en`` pulses in the clock ``addr`` is presented,
  for registers with side effects on read (e.g. popping a response FIFO).

The register idiom of every agent: its registers are declared once, as a
:class:`ControlRegisters` list of :class:`ControlRegister` (an index, maybe several consecutive
words) with their :class:`ControlField` s. From that declaration come the register indices (an
``IntEnum``, :meth:`ControlRegisters.enum`), the Amaranth layout of a register's value
(:attr:`ControlRegister.layout`), the read mux (:func:`register_reads` with
:meth:`ControlRegister.slices`), and the Python driver's packing (:meth:`ControlRegister.pack`,
:meth:`ControlRegister.unpack`). The idea is the board's (:mod:`pcispy.csr.map`); the agents'
registers are their own.
"""

import enum
from dataclasses import dataclass

from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ControlSignature", "CONTROL_ADDR_BITS", "PysimControl", "register_reads",
           "register_writes", "written", "ControlField", "ControlRegister", "ControlRegisters"]

#: Register address bits per agent (1024 registers of 32 bits).
CONTROL_ADDR_BITS = 10


class ControlSignature(wiring.Signature):
    """An agent's control port, from the agent's side: declare it ``ctl:
    Out(ControlSignature())`` (``In`` would flip every member).

    Members:
        addr (In, 10): register index.
        w_data (In, 32): value to write.
        w_en (In, 1): write ``w_data`` to ``addr`` at this clock.
        r_en (In, 1): ``addr`` is being read (for read side effects).
        r_data (Out, 32): value of the register at ``addr``, one clock later.
        event (Out, 1): the agent has something to report; level, cleared through a register.
    """
    def __init__(self):
        super().__init__({
            "addr":   In(CONTROL_ADDR_BITS),
            "w_data": In(32),
            "w_en":   In(1),
            "r_en":   In(1),
            "r_data": Out(32),
            "event":  Out(1),
        })


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


def written(ctl, index):
    """High in the clock the control port writes register ``index``."""
    return ctl.w_en & (ctl.addr == index)


def register_writes(m, ctl, writable):
    """Plain read/write registers: a control write to ``index`` loads ``writable[index]``
    (a signal, or a slice of one) with ``w_data`` (truncated to its width)."""
    with m.If(ctl.w_en):
        with m.Switch(ctl.addr):
            for index, target in writable.items():
                with m.Case(index):
                    m.d.sync += target.eq(ctl.w_data)


def register_reads(m, ctl, readable, r_data=None):
    """An agent's read mux: ``ctl.r_data`` takes the value of ``readable[ctl.addr]`` at the
    clock edge (so it holds from the next clock on, as the access timing above allows), 0
    for an address not in ``readable`` (``{register index: value}``). An agent that puts
    something in front of the mux gives the signal to load as ``r_data``."""
    r_data = ctl.r_data if r_data is None else r_data
    with m.Switch(ctl.addr):
        for address, value in readable.items():
            with m.Case(address):
                m.d.sync += r_data.eq(value)
        with m.Default():
            m.d.sync += r_data.eq(0)


class PysimControl:
    """Drive an agent's control port from an Amaranth Python-simulator testbench.

    The same driver code (``async`` methods calling :meth:`write`, :meth:`read`,
    :meth:`wait_event`) then runs in unit tests under :class:`amaranth.sim.Simulator` and
    in the Verilator system under cocotb (:class:`pcispy.sim.api.CocotbControl`).

    ``ctx`` is the testbench context, ``port`` the agent's ``ctl`` port (flipped view).
    """
    def __init__(self, ctx, port):
        self.ctx = ctx
        self.port = port

    async def write(self, addr, value):
        self.ctx.set(self.port.addr, addr)
        self.ctx.set(self.port.w_data, value & 0xFFFF_FFFF)
        self.ctx.set(self.port.w_en, 1)
        await self.ctx.tick()
        self.ctx.set(self.port.w_en, 0)

    async def read(self, addr):
        self.ctx.set(self.port.addr, addr)
        self.ctx.set(self.port.r_en, 1)
        await self.ctx.tick()
        self.ctx.set(self.port.r_en, 0)
        return self.ctx.get(self.port.r_data)

    async def wait_event(self, timeout=1_000_000):
        """Wait until ``event`` is high; raise TimeoutError after ``timeout`` clocks."""
        for _ in range(timeout):
            if self.ctx.get(self.port.event):
                return
            await self.ctx.tick()
        raise TimeoutError(f"no event from the agent within {timeout} clocks")

    async def clocks(self, count):
        """Let ``count`` clocks pass."""
        await self.ctx.tick().repeat(count)
