# SPDX-License-Identifier: BSD-2-Clause
"""The central arbiter of the simulated bus: REQ#/GNT# for up to four masters.

Written from the PCI arbitration rules: arbitration is hidden (it may move GNT# while
another master's transaction is under way); a master that sees its GNT# with the bus idle
may start; when nobody requests, GNT# is parked on one master so that it can start
without waiting, and that master drives AD, C/BE# and PAR meanwhile. Fairness is
round-robin: once the current owner has started a transaction and someone else is
requesting, the grant moves on to the next requester in turn, and the owner finishes what
its latency timer allows.

GNT# is a registered output, as any real arbiter's: every decision is taken at a clock
edge from REQ#, FRAME# and IRDY# as sampled there, and GNT# changes at that edge, so it
shows in the clock after the one whose lines caused it. (FRAME# settles late in a clock and
GNT# has its own setup time at the masters: no arbiter answers within the clock.) Moving
GNT# from one master to another happens in one step only when the sampled FRAME# was
asserted, because the bus is then certainly busy in the next clock too (FRAME# is released
only together with IRDY# asserted); otherwise the arbiter deasserts GNT# for one clock first
(PCI LB 3.0 §3.4.1, §3.4.3: the parked agent must float AD and PAR before another master
can drive them).

Parking: on the last owner (as chipsets commonly do; the default), or on one chosen master
(:attr:`ArbiterReg.PARK_POLICY`), any master included.

To exercise latency timers the arbiter can take GNT# away from an owner a programmable
number of clocks after its FRAME# was asserted, even when no one else requests. To
provoke the checker's "more than one GNT#" rule it can, on request, grant two masters, and
to provoke its "GNT# switched on an idle bus" rule it can leave out the clock with no GNT#
between two grants. As a stress knob it can also answer within the clock as the old
combinational model did (:attr:`ArbiterReg.SAME_CLOCK`): GNT# dropped in the same clock as
an idle bus is seen, which no real arbiter does.
"""

from amaranth import Module, Signal, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.sim.control import (ControlRegisters, ControlSignature, ControlRegister, register_reads,
                                register_writes)

__all__ = ["Arbiter", "ArbiterDriver", "ArbiterReg", "REGISTERS", "ParkPolicy"]


class ParkPolicy:
    """Values of :attr:`ArbiterReg.PARK_POLICY`."""
    LAST = 0    # GNT# stays on the last owner when nobody requests
    FIXED = 1   # GNT# returns to the master in ArbiterReg.PARK when nobody requests


#: The control-port registers of :class:`Arbiter`.
REGISTERS = ControlRegisters("ArbiterReg", [
    ControlRegister("PARK", 0,
                    doc="the fixed park master (0..masters-1), used with ParkPolicy.FIXED"),
    ControlRegister("REMOVE_AFTER", 1,
                    doc="remove GNT# this many clocks after the owner's FRAME# (0 = never)"),
    ControlRegister("DOUBLE_GRANT", 2, doc="bit 0: grant the next master as well (breaks the "
                    "one-GNT# rule)"),
    ControlRegister("GRANTS", 3, doc="read: number of grant changes since reset"),
    ControlRegister("REMOVALS", 4, doc="read: number of forced removals since reset"),
    ControlRegister("NO_IDLE_GAP", 5, doc="bit 0: move GNT# on an idle bus with no clock between "
                    "the grants (breaks the idle-bus grant rule)"),
    ControlRegister("PARK_POLICY", 6, doc="ParkPolicy: park on the last owner (reset) or on PARK"),
    ControlRegister("SAME_CLOCK", 7, doc="bit 0: stress knob, GNT# from this clock's FRAME#/IRDY# "
                    "(no real arbiter can; off after reset)"),
])

#: Control-port register indices of :class:`Arbiter`.
ArbiterReg = REGISTERS.enum()


class Arbiter(wiring.Component):
    """Round-robin PCI arbiter with bus parking and a registered GNT#.

    Ports:
        req (In, masters): REQ# of each master, inside-level (1 = requesting).
        gnt (Out, masters): GNT# to each master, inside-level (1 = granted); registered
            (it changes only at clock edges; with the SAME_CLOCK knob it follows FRAME#
            and IRDY# of the same clock).
        frame (In, 1), irdy (In, 1): the resolved bus, to know idle and ownership.
        ctl (Out, ControlSignature): parking, forced removal, double grant, idle-gap
            skipping, the same-clock knob (ArbiterReg).

    Parameters:
        masters: number of masters (1..4).
    """
    def __init__(self, masters=3):
        if not 1 <= masters <= 4:
            raise ValueError("the arbiter serves 1 to 4 masters")
        self.masters = masters
        super().__init__({
            "req": In(masters), "gnt": Out(masters),
            "frame": In(1), "irdy": In(1),
            "ctl": Out(ControlSignature()),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.masters
        owner = Signal(range(n))       # the master GNT# is on (or goes to after a gap)
        granted = Signal(n)            # the registered GNT# (before a double grant)
        park = Signal(range(n))
        park_fixed = Signal()
        remove_after = Signal(16)
        double_grant = Signal()
        no_idle_gap = Signal()
        same_clock = Signal()
        grants = Signal(32)
        removals = Signal(32)
        frame_clocks = Signal(16)      # clocks since the owner's FRAME# was asserted
        withheld = Signal()            # GNT# taken away from the owner until the bus is idle
        started = Signal()             # the owner has started a transaction under this grant
        moved = Signal()               # the grant moved at the last edge (for SAME_CLOCK)

        # Everything below is decided at the clock edge from the lines sampled there.
        bus_idle = ~self.frame & ~self.irdy
        prev_frame = Signal()
        m.d.sync += prev_frame.eq(self.frame)
        m.d.sync += frame_clocks.eq(Mux(self.frame, frame_clocks + 1, 0))
        with m.If(self.frame & ~prev_frame):
            m.d.sync += started.eq(1)

        # Next requester after the owner, in turn; the owner itself when no one else asks.
        next_master = Signal(range(n))
        someone_else = Signal()
        m.d.comb += [next_master.eq(owner), someone_else.eq(0)]
        for step in reversed(range(1, n)):
            candidate = Signal(range(n), name=f"candidate_{step}")
            m.d.comb += candidate.eq(Mux(owner + step >= n, owner + step - n, owner + step))
            with m.If(self.req.bit_select(candidate, 1)):
                m.d.comb += [next_master.eq(candidate), someone_else.eq(1)]

        # The next state, then GNT# registered from it.
        owner_next = Signal(range(n))
        withheld_next = Signal()
        moving = Signal()
        m.d.comb += [owner_next.eq(owner), withheld_next.eq(withheld), moving.eq(0)]

        def move_to(master):
            m.d.comb += [owner_next.eq(master), withheld_next.eq(0), moving.eq(1)]
            m.d.sync += [started.eq(0), grants.eq(grants + 1)]

        owner_requests = self.req.bit_select(owner, 1)
        with m.If(someone_else & (started | ~owner_requests | withheld)):
            move_to(next_master)
        with m.Elif(park_fixed & ~self.req.any() & (owner != park) & bus_idle):
            move_to(park)
        with m.Elif((remove_after != 0) & self.frame & (frame_clocks + 1 == remove_after)
                    & ~withheld):
            m.d.comb += withheld_next.eq(1)
            m.d.sync += removals.eq(removals + 1)
        with m.Elif(withheld & (~owner_requests | bus_idle)):
            # The removal ends the owner's transaction (its latency timer decides when);
            # once the bus is idle an owner still requesting, alone, gets GNT# back (else
            # a master keeping REQ# for its next transaction would wait forever).
            m.d.comb += withheld_next.eq(0)

        # A move shows at once only when the bus is certainly busy in the next clock (the
        # sampled FRAME# asserted); otherwise the next clock carries no GNT# at all and
        # the new owner's follows a clock later (PCI 3.0 3.4.1).
        gap = moving & ~self.frame & ~no_idle_gap
        m.d.sync += [owner.eq(owner_next), withheld.eq(withheld_next), moved.eq(moving),
                     granted.eq(Mux(withheld_next | gap, 0, 1 << owner_next))]

        # The stress knob: the old same-clock answer, GNT# dropped in the clock after a
        # move as soon as this clock's FRAME#/IRDY# show an idle bus.
        combinational = Mux(withheld | (moved & bus_idle & ~no_idle_gap), 0, 1 << owner)
        second = Signal(range(n))
        m.d.comb += second.eq(Mux(owner + 1 >= n, 0, owner + 1))
        m.d.comb += self.gnt.eq(Mux(same_clock, combinational, granted)
                                | Mux(double_grant, 1 << second, 0))

        # Control port.
        registers = {
            ArbiterReg.PARK: park,
            ArbiterReg.REMOVE_AFTER: remove_after,
            ArbiterReg.DOUBLE_GRANT: double_grant,
            ArbiterReg.NO_IDLE_GAP: no_idle_gap,
            ArbiterReg.PARK_POLICY: park_fixed,
            ArbiterReg.SAME_CLOCK: same_clock,
        }
        register_writes(m, self.ctl, registers)
        readable = dict(registers)
        readable.update({ArbiterReg.GRANTS: grants, ArbiterReg.REMOVALS: removals})
        register_reads(m, self.ctl, readable)
        return m


class ArbiterDriver:
    """Python side of :class:`Arbiter`, over a control accessor (``read``/``write``)."""

    def __init__(self, ctl):
        self.ctl = ctl

    async def park_on(self, master):
        """Park GNT# on ``master`` (a number) whenever nobody requests."""
        await self.ctl.write(ArbiterReg.PARK, master)
        await self.ctl.write(ArbiterReg.PARK_POLICY, ParkPolicy.FIXED)

    async def park_on_last(self):
        """Leave GNT# on the last owner when nobody requests (the reset policy)."""
        await self.ctl.write(ArbiterReg.PARK_POLICY, ParkPolicy.LAST)

    async def remove_gnt_after(self, clocks):
        """Take GNT# away ``clocks`` clocks after an owner's FRAME# (0: never)."""
        await self.ctl.write(ArbiterReg.REMOVE_AFTER, clocks)

    async def double_grant(self, enable=True):
        await self.ctl.write(ArbiterReg.DOUBLE_GRANT, int(enable))

    async def skip_idle_gap(self, enable=True):
        """Move GNT# on an idle bus without the clock with no GNT# (a protocol error)."""
        await self.ctl.write(ArbiterReg.NO_IDLE_GAP, int(enable))

    async def same_clock(self, enable=True):
        """Stress knob: answer FRAME#/IRDY# within the clock (no real arbiter can)."""
        await self.ctl.write(ArbiterReg.SAME_CLOCK, int(enable))

    async def counters(self):
        return {"grants": await self.ctl.read(ArbiterReg.GRANTS),
                "removals": await self.ctl.read(ArbiterReg.REMOVALS)}
