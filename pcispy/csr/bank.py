# SPDX-License-Identifier: BSD-2-Clause
"""The BAR0 register bank, generated from the register map (pcispy/board/registers.py).

:class:`CSRBank` turns every register of a :class:`~pcispy.board.registers.RegisterMap` into
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
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.csr.map import Access
from pcispy.pci.backend import BackendSignature

__all__ = ["RegisterSignature", "BlockSignature", "CSRBank"]

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


class CSRBank(wiring.Component):
    """The registers of BAR0, in clock domain ``pci``.

    Ports:
        access (In, BackendSignature(10, 32)): from the target (``addr`` = DWORD number in
            BAR0); always ready; read data one clock after the request. Reads of
            addresses holding no register return 0; writes there are ignored.
        <block> (Out): one member per block of the map, holding one
            :class:`RegisterSignature` member per register (``bank.<block>.<register>``).

    Parameters:
        register_map: a :class:`~pcispy.board.registers.RegisterMap`.
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
        mask = Signal(32)
        m.d.comb += mask.eq(Cat(*(b.replicate(8) for b in acc.w_be)))
        read = acc.valid & ~acc.write
        write = acc.valid & acc.write
        m.d.pci += acc.r_valid.eq(read)
        read_data = Signal(32)
        written = acc.w_data & mask
        values = {}

        for name, address, reg in self.register_map:
            port = self.register(name)
            selected = acc.addr == address // 4
            value = Signal(32, name=f"{name.replace('.', '_')}_value")
            pieces, bit = [], 0
            for f in sorted(reg.fields, key=lambda f: f.lsb):
                pieces.append(Const(0, f.lsb - bit))
                pieces.append(Const(0, f.width) if f.access == Access.WO
                              else getattr(port, f.name))
                bit = f.lsb + f.width
            pieces.append(Const(0, 32 - bit))
            m.d.comb += value.eq(Cat(*pieces))
            values[address // 4] = value
            # Bytes not enabled keep the register's contents.
            merged = (value & ~mask) | written
            accept = Signal(name=f"{name.replace('.', '_')}_accept")
            m.d.comb += [
                port.r_stb.eq(read & selected),
                port.w_stb.eq(write & selected),
                port.w_data.eq(merged),
                accept.eq(write & selected & ~port.refuse),
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
                    clear = Signal(f.width, name=f"{name.replace('.', '_')}_{f.name}_clear")
                    with m.If(accept):
                        m.d.comb += clear.eq(written[bits])
                    m.d.pci += signal.eq((signal & ~clear) | getattr(port, f"{f.name}_set"))

        with m.Switch(acc.addr):
            for index, value in values.items():
                with m.Case(index):
                    m.d.comb += read_data.eq(value)
        with m.If(read):
            m.d.pci += acc.r_data.eq(read_data)
        return m
