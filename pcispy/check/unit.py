# SPDX-License-Identifier: BSD-2-Clause
"""The protocol checker as the board wires it: :class:`~.checker.ProtocolChecker` behind its
``check`` register block (pcispy/check/registers.py).

The checker itself takes plain ports, so that the simulated system can run it with its own
controls; :class:`CheckUnit` is the board's: the checker's settings, flags, counters and log
are registers of the ``check`` block.
"""

from amaranth.hdl import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.check.checker import ProtocolChecker
from pcispy.check.registers import CHECK
from pcispy.csr.bank import BlockSignature
from pcispy.pci.bus import BusState
from pcispy.pci.rules import RULES

__all__ = ["CheckUnit"]


class CheckUnit(wiring.Component):
    """A :class:`~.checker.ProtocolChecker` on the board's bus sample, programmed and read
    through the ``check`` register block (domain ``sync``).

    Ports:
        regs (In, BlockSignature(CHECK)): the ``check`` block of the CSR bank
            (``wiring.connect(m, bank.check, unit.regs)``): ``control.clear``, the rule
            enables, the sticky flags, the first violation, the checker's cycle, the
            per-rule counters (``count_index``/``count``) and the violation log
            (``log_index``/``log_cycle``/``log_rules_*``/``log_info``).
        bus (In, BusState(width)): the bus sample of this clock, inside-level.
        violation (Out, len(RULES)): the rules broken by this clock's sample (for the spy's
            trigger and records).

    Parameters:
        width: bus width, 32 or 64.
    """
    def __init__(self, width=32):
        self.width = width
        super().__init__({
            "regs": In(BlockSignature(CHECK)),
            "bus": In(BusState(width)),
            "violation": Out(len(RULES)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.checker = checker = ProtocolChecker(self.width)
        regs = self.regs
        rules = len(checker.rule_enable)
        m.d.comb += [
            checker.bus.eq(self.bus),
            self.violation.eq(checker.violation),
            checker.clear.eq(regs.control.clear),
            checker.rule_enable.eq(Cat(regs.enable_lo.enable, regs.enable_hi.enable)[:rules]),
            regs.flags_lo.flags.eq(checker.flags[:32]),
            regs.flags_hi.flags.eq(checker.flags[32:]),
            regs.status.any.eq(checker.any),
            regs.status.index_error.eq(checker.count_index_error),
            regs.status.first_rule.eq(checker.first_rule),
            regs.first_cycle.first_cycle.eq(checker.first_cycle),
            regs.cycle.cycle.eq(checker.cycle),
            checker.count_index.eq(regs.count_index.index),
            regs.count.count.eq(checker.count),
            checker.log_index.eq(regs.log_index.index),
            regs.log_cycle.log_cycle.eq(checker.log_cycle),
            regs.log_rules_lo.rules.eq(checker.log_rules[:32]),
            regs.log_rules_hi.rules.eq(checker.log_rules[32:]),
            regs.log_info.entries.eq(checker.log_entries),
            regs.log_info.master.eq(checker.log_master),
        ]
        return m
