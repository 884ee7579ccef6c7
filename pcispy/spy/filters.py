# SPDX-License-Identifier: BSD-2-Clause
"""Transaction filters: value/mask comparators on the address and a command set each.

Each comparator *hits* a transaction when it is enabled, the command's bit is set in its
``commands`` set, and the address agrees with ``address`` on every bit set in ``mask``.
The address space (memory, I/O, configuration) is selected through the command set:
:data:`MEMORY_COMMANDS`, :data:`IO_COMMANDS`, :data:`CONFIG_COMMANDS`.

Comparators combine in two groups:

- *include* comparators (``exclude`` = 0) combine with ``combine`` = ANY (one must hit) or
  ALL (every one must hit); with no include comparator enabled, every transaction passes;
- *exclude* comparators (``exclude`` = 1) veto: a transaction any of them hits is dropped.

The result selects what the spy stores (summary mode) and counts (:mod:`.counters`), and
can trigger a capture.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.bus import Command
from pcispy.spy.registers import FilterCombine

__all__ = ["FilterCombine", "Comparator", "FilterSet",
           "MEMORY_COMMANDS", "IO_COMMANDS", "CONFIG_COMMANDS", "ALL_COMMANDS",
           "command_set"]


def command_set(*commands):
    """The ``commands`` bit set of the given :class:`Command` members."""
    value = 0
    for command in commands:
        value |= 1 << Command(command).value
    return value


MEMORY_COMMANDS = command_set(*(c for c in Command if c.is_memory))
IO_COMMANDS = command_set(*(c for c in Command if c.is_io))
CONFIG_COMMANDS = command_set(*(c for c in Command if c.is_config))
ALL_COMMANDS = 0xFFFF


class Comparator(data.StructLayout):
    """The settings of one comparator."""
    def __init__(self):
        super().__init__({
            "enable":   1,
            "exclude":  1,
            "commands": 16,   # bit n: command code n passes
            "address":  64,
            "mask":     64,   # 1: compare this address bit
        })


class FilterSet(wiring.Component):
    """``count`` comparators and their combination (combinational).

    Ports:
        address (In, 64), command (In, Command): the transaction.
        comparators (In, ArrayLayout(Comparator, count)): the settings.
        combine (In, FilterCombine): how include comparators combine.
        hits (Out, count): which comparators hit.
        match (Out, 1): the transaction passes the filter.

    Parameters:
        count: number of comparators (1..8).
    """
    def __init__(self, count=4):
        if not 1 <= count <= 8:
            raise ValueError(f"filter comparators must be 1..8, not {count}")
        self.count = count
        super().__init__({
            "address":     In(64),
            "command":     In(Command),
            "comparators": In(data.ArrayLayout(Comparator(), count)),
            "combine":     In(FilterCombine),
            "hits":        Out(count),
            "match":       Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        include = Signal(self.count)
        exclude = Signal(self.count)
        for i in range(self.count):
            c = self.comparators[i]
            command_ok = (c.commands >> self.command.as_value())[0]
            address_ok = ((self.address ^ c.address) & c.mask) == 0
            m.d.comb += [
                self.hits[i].eq(c.enable & command_ok & address_ok),
                include[i].eq(c.enable & ~c.exclude),
                exclude[i].eq(c.enable & c.exclude),
            ]
        any_included = (self.hits & include).any()
        all_included = (~self.hits & include) == 0
        passes = Signal()
        with m.If(include == 0):
            m.d.comb += passes.eq(1)
        with m.Elif(self.combine == FilterCombine.ALL):
            m.d.comb += passes.eq(all_included)
        with m.Else():
            m.d.comb += passes.eq(any_included)
        m.d.comb += self.match.eq(passes & ~(self.hits & exclude).any())
        return m
