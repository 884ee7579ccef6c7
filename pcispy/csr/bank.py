# SPDX-License-Identifier: BSD-2-Clause
"""The BAR0 register bank, generated from the register map (pcispy/board/registers.py).

:class:`CSRBank` turns every register of a :class:`~pcispy.csr.map.RegisterMap` into
hardware and gives each one a port, reached by its qualified name::

    bank = CSRBank(REGISTER_MAP)
    bank.target.response.devsel_speed   # Out: the stored RW field
    bank.irq.status.pending             # In: an RO field the irq unit drives
    bank.register("irq.status")         # the same register port, by name

Per field, by access kind (directions as seen from the bank):

- RW: ``Out(width)`` holding the stored value (reset from the map);
- RO: ``In(width)``, the value the hardware presents (reads return it; undriven, it
  holds the map's reset value, so constants need no wiring);
- W1C: ``Out(width)`` sticky bits and ``In(width)`` ``<field>_set`` to set them;
  writing 1 clears (a set in the same clock wins);
- WO: ``Out(width)``: for one clock after an accepted write, the written bits;
- RC: ``In(width)`` like RO; the register's ``r_stb`` tells the block it was read.

And per register: ``w_stb`` (Out, 1) a write is offered to the register in this clock,
``w_data`` (Out, 32) its value (bytes not enabled hold the current contents), ``refuse``
(In, 1) the block refuses that write (combinationally, in the same clock): RW fields keep
their old values and WO fields do not pulse. ``r_stb`` (Out, 1) the register is read in
this clock (its value is sampled at this edge). A block that refuses a write sets one of
its own status bits to say why (the register map declares them).

Every block of the map is a :class:`CSRBlock` of its own, which registers the requests
addressed to it and its read word: the bank's logic is then local to each block (a
decode and a multiplexer over its own registers, placed beside the gateware they serve),
and only a block's registered word crosses the chip to the bank's final OR. The price is
latency: a register sees a request's strobes one clock after the bank took it, and the
read data follows :data:`READ_LATENCY` clocks after the request.
"""

import functools
import operator

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.csr.map import Access
from pcispy.pci.backend import BackendSignature

__all__ = ["RegisterSignature", "BlockSignature", "RequestSignature", "CSRBlock", "CSRBank",
           "READ_LATENCY"]

#: Clocks from a read request taken by the bank to its ``r_valid``: the block's request
#: register, then its registered read word.
READ_LATENCY = 2

_RESERVED = ("w_stb", "w_data", "refuse", "r_stb")


class RegisterSignature(wiring.Signature):
    """The port of one register of the map, from the bank's side (see the module doc)."""
    def __init__(self, register):
        self.register = register
        members = {}
        for f in register.fields:
            if f.name in _RESERVED or f.name.endswith("_set"):
                raise ValueError(f"register {register.name}: field name {f.name!r} clashes "
                                 "with a register port member")
            if f.access == Access.RW:
                members[f.name] = Out(f.width, init=f.reset)
            elif f.access in (Access.RO, Access.RC):
                members[f.name] = In(f.width, init=f.reset)
            elif f.access == Access.W1C:
                members[f.name] = Out(f.width, init=f.reset)
                members[f"{f.name}_set"] = In(f.width)
            elif f.access == Access.WO:
                members[f.name] = Out(f.width)
        members.update({"w_stb": Out(1), "w_data": Out(32), "refuse": In(1), "r_stb": Out(1)})
        super().__init__(members)


class BlockSignature(wiring.Signature):
    """The ports of every register of one block, from the bank's side.

    A block's gateware takes ``In(BlockSignature(block))`` and is wired with
    ``wiring.connect(m, bank.<block>, unit.<member>)``.
    """
    def __init__(self, block):
        self.block = block
        super().__init__({reg.name: Out(RegisterSignature(reg)) for reg in block.registers})


class RequestSignature(wiring.Signature):
    """A register access offered to one block, from the bank's side.

    Members:
        valid (Out, 1): an access to this block in this clock.
        addr (Out, addr_bits): the register's DWORD address in the map.
        write (Out, 1), w_data (Out, 32), w_be (Out, 4): a write, its data and byte
            enables.
        r_data (In, 32), r_valid (In, 1): the read word, :data:`READ_LATENCY` clocks after
            the request; 0 while ``r_valid`` is low.
    """
    def __init__(self, addr_bits):
        super().__init__({"valid": Out(1), "addr": Out(addr_bits), "write": Out(1),
                          "w_data": Out(32), "w_be": Out(4),
                          "r_data": In(32), "r_valid": In(1)})


class CSRBlock(wiring.Component):
    """The registers of one block of the map, in clock domain ``pci``.

    Ports:
        request (In, RequestSignature): the accesses addressed to this block. Taken into
            registers (held between accesses), so the strobes, the stored fields and the
            read multiplexer below work from them in the next clock.
        regs (Out, BlockSignature(block)): one member per register (see the module doc).

    Parameters:
        block: a :class:`~pcispy.csr.map.Block`.
        addr_bits: DWORD address bits of the map.
    """
    def __init__(self, block, addr_bits):
        self.block = block
        super().__init__({"request": In(RequestSignature(addr_bits)),
                          "regs": Out(BlockSignature(block))})

    def elaborate(self, platform):
        m = Module()
        req = self.request
        taken = Signal()
        addr = Signal.like(req.addr)
        write = Signal()
        w_data = Signal(32)
        w_be = Signal(4)
        m.d.pci += taken.eq(req.valid)
        with m.If(req.valid):
            m.d.pci += [addr.eq(req.addr), write.eq(req.write), w_data.eq(req.w_data),
                        w_be.eq(req.w_be)]
        mask = Signal(32)
        m.d.comb += mask.eq(Cat(*(b.replicate(8) for b in w_be)))
        read = taken & ~write
        written = w_data & mask
        values = {}

        for reg in self.block.registers:
            port = getattr(self.regs, reg.name)
            index = (self.block.base + reg.offset) // 4
            selected = taken & (addr == index)
            value = Signal(32, name=f"{reg.name}_value")
            pieces, bit = [], 0
            for f in sorted(reg.fields, key=lambda f: f.lsb):
                pieces.append(Const(0, f.lsb - bit))
                pieces.append(Const(0, f.width) if f.access == Access.WO
                              else getattr(port, f.name))
                bit = f.lsb + f.width
            pieces.append(Const(0, 32 - bit))
            m.d.comb += value.eq(Cat(*pieces))
            values[index] = value
            # Bytes not enabled keep the register's contents.
            merged = (value & ~mask) | written
            accept = Signal(name=f"{reg.name}_accept")
            m.d.comb += [
                port.r_stb.eq(selected & ~write),
                port.w_stb.eq(selected & write),
                port.w_data.eq(merged),
                accept.eq(selected & write & ~port.refuse),
            ]
            for f in reg.fields:
                bits = slice(f.lsb, f.lsb + f.width)
                signal = getattr(port, f.name)
                if f.access == Access.RW:
                    with m.If(accept):
                        m.d.pci += signal.eq(merged[bits])
                elif f.access == Access.WO:
                    m.d.pci += signal.eq(Const(0, f.width))
                    with m.If(accept):
                        m.d.pci += signal.eq(written[bits])
                elif f.access == Access.W1C:
                    clear = Signal(f.width, name=f"{reg.name}_{f.name}_clear")
                    with m.If(accept):
                        m.d.comb += clear.eq(written[bits])
                    m.d.pci += signal.eq((signal & ~clear) | getattr(port, f"{f.name}_set"))

        # The read word, registered: 0 but in the clock after a read, so the bank ORs the
        # blocks' words as they are.
        m.d.pci += [req.r_valid.eq(read), req.r_data.eq(0)]
        with m.If(read):
            with m.Switch(addr):
                for index, value in values.items():
                    with m.Case(index):
                        m.d.pci += req.r_data.eq(value)
        return m


class CSRBank(wiring.Component):
    """The registers of BAR0, in clock domain ``pci``.

    Ports:
        access (In, BackendSignature(10, 32)): from the target (``addr`` = DWORD number in
            BAR0); always ready; read data :data:`READ_LATENCY` clocks after the request.
            Reads of addresses holding no register return 0; writes there are ignored.
        <block> (Out): one member per block of the map, holding one
            :class:`RegisterSignature` member per register (``bank.<block>.<register>``).

    Parameters:
        register_map: a :class:`~pcispy.csr.map.RegisterMap`.
    """
    def __init__(self, register_map):
        self.register_map = register_map
        members = {"access": In(BackendSignature(register_map.size.bit_length() - 3, 32))}
        for block in register_map.blocks:
            if block.name in members:
                raise ValueError(f"register block name {block.name!r} is reserved")
            members[block.name] = Out(BlockSignature(block))
        super().__init__(members)

    def register(self, name):
        """The port of register ``name`` ("block.register")."""
        block, _, reg = name.partition(".")
        self.register_map[name]  # a clear KeyError for unknown names
        return getattr(getattr(self, block), reg)

    def elaborate(self, platform):
        m = Module()
        acc = self.access
        m.d.comb += acc.ready.eq(1)
        # Each block answers the DWORDs from its base up to the next block's (the first
        # from 0, the last to the end of the map): every access reaches exactly one block
        # and is answered; the holes read as 0.
        blocks = sorted(self.register_map.blocks, key=lambda block: block.base)
        starts = [0] + [block.base // 4 for block in blocks[1:]]
        ends = starts[1:] + [self.register_map.size // 4]
        words, answered = [], []
        for block, first, end in zip(blocks, starts, ends):
            unit = m.submodules[f"block_{block.name}"] = CSRBlock(block, len(acc.addr))
            wiring.connect(m, wiring.flipped(getattr(self, block.name)), unit.regs)
            inside = (acc.addr >= first) & (acc.addr < end)
            m.d.comb += [unit.request.valid.eq(acc.valid & inside),
                         unit.request.addr.eq(acc.addr),
                         unit.request.write.eq(acc.write), unit.request.w_data.eq(acc.w_data),
                         unit.request.w_be.eq(acc.w_be)]
            words.append(unit.request.r_data)
            answered.append(unit.request.r_valid)
        # All but the answering block's word are 0.
        m.d.comb += [acc.r_data.eq(functools.reduce(operator.or_, words)),
                     acc.r_valid.eq(Cat(*answered).any())]
        return m
