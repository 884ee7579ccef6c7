# SPDX-License-Identifier: BSD-2-Clause
"""The bus itself: combine every agent's drivers into the value each line carries.

On a real PCI bus a line that nobody drives floats and a pull-up holds it high; an
open-drain line (SERR#, INTx#) is low when anyone pulls it low; two agents driving one
tri-state line in the same clock is contention, a bug in one of them. The resolver models
exactly that, at inside level (see gateware/pci/bus.py): an undriven active-low line reads
deasserted (0), an undriven AD/C/BE#/PAR line reads all ones (pulled up).

It also keeps the evidence of contention: a sticky flag per line, the cycle of the first
clash and the line it happened on, for the system's status registers.
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.gateware.pci.bus import ACTIVE_LOW, OPEN_DRAIN, bus_lines

__all__ = ["BusResolver", "shared_lines"]

# Point-to-point lines are wired per slot by the system, not resolved here.
_POINT_TO_POINT = frozenset({"req", "gnt", "idsel", "rst"})


def shared_lines(width=32):
    """``{name: bits}`` of the lines every agent shares (what the resolver combines)."""
    return {name: bits for name, bits in bus_lines(width).items() if name not in _POINT_TO_POINT}


class BusResolver(wiring.Component):
    """Resolve the shared lines of ``agents`` PCI agents.

    Ports (for every shared line ``NAME`` of :func:`shared_lines`):
        NAME_o (In, agents x bits): each agent's output value, inside-level, agent k in
            bits ``[k*bits, (k+1)*bits)``.
        NAME_oe (In, agents): each agent's output enable.
        NAME (Out, bits): the resolved line, inside-level.
    And:
        contention (Out, one bit per shared line, in :func:`shared_lines` order): sticky,
            set when two agents drove that tri-state line in the same clock.
        first_line (Out, 8): index of the line of the first contention.
        first_cycle (Out, 32): cycle of the first contention (cycles since reset).
        clear (In, 1): clear the contention evidence.

    Parameters:
        agents: number of agents on the bus.
        width: bus width (32 or 64).
    """
    def __init__(self, agents, width=32):
        self.agents = agents
        self.width = width
        self.lines = shared_lines(width)
        members = {}
        for name, bits in self.lines.items():
            members[f"{name}_o"] = In(bits * agents)
            members[f"{name}_oe"] = In(agents)
            members[name] = Out(bits)
        members["contention"] = Out(len(self.lines))
        members["first_line"] = Out(8)
        members["first_cycle"] = Out(32)
        members["clear"] = In(1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        cycle = Signal(32)
        m.d.sync += cycle.eq(cycle + 1)

        clash_now = []
        for name, bits in self.lines.items():
            outs = getattr(self, f"{name}_o")
            enables = getattr(self, f"{name}_oe")
            driven = [outs[k * bits:(k + 1) * bits] & enables[k].replicate(bits)
                      for k in range(self.agents)]
            any_value = Const(0, bits)
            for value in driven:
                any_value = any_value | value
            if name in OPEN_DRAIN:
                # Wired-AND on the pins is wired-OR of the asserted (active-high) values.
                m.d.comb += getattr(self, name).eq(any_value)
                clash_now.append(Const(0))
                continue
            pulled_up = 0 if name in ACTIVE_LOW else (1 << bits) - 1
            with m.If(enables == 0):
                m.d.comb += getattr(self, name).eq(pulled_up)
            with m.Else():
                # With exactly one driver this is its value; with several the line is
                # undefined on a real bus: OR keeps the model deterministic.
                m.d.comb += getattr(self, name).eq(any_value)
            several = Signal(name=f"{name}_clash")
            m.d.comb += several.eq((enables & (enables - 1)) != 0)
            clash_now.append(several)

        clashes = Cat(*clash_now)
        with m.If(self.clear):
            m.d.sync += [self.contention.eq(0), self.first_line.eq(0), self.first_cycle.eq(0)]
        with m.Else():
            m.d.sync += self.contention.eq(self.contention | clashes)
            with m.If((self.contention == 0) & (clashes != 0)):
                m.d.sync += self.first_cycle.eq(cycle)
                for index in reversed(range(len(clash_now))):
                    with m.If(clash_now[index]):
                        m.d.sync += self.first_line.eq(index)
        return m
