# SPDX-License-Identifier: BSD-2-Clause
"""The central arbiter of the simulated bus: REQ#/GNT# for up to four masters.

Written from the PCI arbitration rules: arbitration is hidden (it may move GNT# while
another master's transaction is under way); a master that sees its GNT# with the bus idle
may start; when nobody requests, GNT# is parked on one master so that it can start
without waiting. Fairness is round-robin: once the current owner has started a
transaction and someone else is requesting, the grant moves on to the next requester in
turn, and the owner finishes what its latency timer allows.

To exercise latency timers the arbiter can take GNT# away from an owner a programmable
number of clocks after its FRAME# was asserted, even when no one else requests. To
provoke the checker's "more than one GNT#" rule it can, on request, grant two masters, and
to provoke its "GNT# switched on an idle bus" rule it can leave out the clock with no GNT#
between two grants.
"""

from amaranth import Module, Signal, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.sim.control import ControlSignature

__all__ = ["Arbiter", "ArbiterDriver", "ArbiterReg"]


class ArbiterReg:
    """Control-port register indices of :class:`Arbiter`."""
    PARK = 0          # master that GNT# rests on when nobody requests (0..masters-1)
    REMOVE_AFTER = 1  # remove GNT# this many clocks after the owner's FRAME# (0 = never)
    DOUBLE_GRANT = 2  # bit 0: grant the next master as well (breaks the one-GNT# rule)
    GRANTS = 3        # read: number of grant changes since reset
    REMOVALS = 4      # read: number of forced removals since reset
    NO_IDLE_GAP = 5   # bit 0: move GNT# on an idle bus with no clock between the grants
                      # (breaks the idle-bus grant rule)


class Arbiter(wiring.Component):
    """Round-robin PCI arbiter with bus parking.

    Ports:
        req (In, masters): REQ# of each master, inside-level (1 = requesting).
        gnt (Out, masters): GNT# to each master, inside-level (1 = granted).
        frame (In, 1), irdy (In, 1): the resolved bus, to know idle and ownership.
        ctl (Out, ControlSignature): parking, forced removal, double grant, idle-gap
            skipping (ArbiterReg).

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
        owner = Signal(range(n))       # the master GNT# is on
        park = Signal(range(n))
        remove_after = Signal(16)
        double_grant = Signal()
        no_idle_gap = Signal()
        grants = Signal(32)
        removals = Signal(32)
        frame_clocks = Signal(16)      # clocks since the owner's FRAME# was asserted
        withheld = Signal()            # GNT# taken away from the owner until the bus is idle
        started = Signal()             # the owner has started a transaction under this grant
        gap = Signal()                 # the clock with no GNT# between two grants on an idle bus

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

        def move_to(master):
            m.d.sync += [owner.eq(master), started.eq(0), withheld.eq(0), gap.eq(1),
                         grants.eq(grants + 1)]

        # On an idle bus one GNT# may not be asserted in the clock another is deasserted
        # (PCI 3.0 3.4.1): in the clock a new grant would show, if the bus is idle then,
        # show no grant at all; the new owner's GNT# follows a clock later.
        m.d.sync += gap.eq(0)

        owner_requests = self.req.bit_select(owner, 1)
        with m.If(someone_else & (started | ~owner_requests | withheld)):
            move_to(next_master)
        with m.Elif(~owner_requests & ~self.req.any() & (owner != park) & bus_idle):
            move_to(park)
        with m.Elif((remove_after != 0) & self.frame & (frame_clocks + 1 == remove_after)
                    & ~withheld):
            m.d.sync += [withheld.eq(1), removals.eq(removals + 1)]
        with m.Elif(withheld & (~owner_requests | bus_idle)):
            # The removal ends the owner's transaction (its latency timer decides when);
            # once the bus is idle an owner still requesting, alone, gets GNT# back (else
            # a master keeping REQ# for its next transaction would wait forever).
            m.d.sync += withheld.eq(0)

        owner_gnt = Signal(n)
        m.d.comb += owner_gnt.eq(Mux(withheld | (gap & bus_idle & ~no_idle_gap), 0, 1 << owner))
        second = Signal(range(n))
        m.d.comb += second.eq(Mux(owner + 1 >= n, 0, owner + 1))
        m.d.comb += self.gnt.eq(owner_gnt | Mux(double_grant, 1 << second, 0))

        # Control port.
        with m.If(self.ctl.w_en):
            with m.Switch(self.ctl.addr):
                with m.Case(ArbiterReg.PARK):
                    m.d.sync += park.eq(self.ctl.w_data)
                with m.Case(ArbiterReg.REMOVE_AFTER):
                    m.d.sync += remove_after.eq(self.ctl.w_data)
                with m.Case(ArbiterReg.DOUBLE_GRANT):
                    m.d.sync += double_grant.eq(self.ctl.w_data[0])
                with m.Case(ArbiterReg.NO_IDLE_GAP):
                    m.d.sync += no_idle_gap.eq(self.ctl.w_data[0])
        with m.Switch(self.ctl.addr):
            with m.Case(ArbiterReg.PARK):
                m.d.sync += self.ctl.r_data.eq(park)
            with m.Case(ArbiterReg.REMOVE_AFTER):
                m.d.sync += self.ctl.r_data.eq(remove_after)
            with m.Case(ArbiterReg.DOUBLE_GRANT):
                m.d.sync += self.ctl.r_data.eq(double_grant)
            with m.Case(ArbiterReg.NO_IDLE_GAP):
                m.d.sync += self.ctl.r_data.eq(no_idle_gap)
            with m.Case(ArbiterReg.GRANTS):
                m.d.sync += self.ctl.r_data.eq(grants)
            with m.Case(ArbiterReg.REMOVALS):
                m.d.sync += self.ctl.r_data.eq(removals)
            with m.Default():
                m.d.sync += self.ctl.r_data.eq(0)
        return m


class ArbiterDriver:
    """Python side of :class:`Arbiter`, over a control accessor (``read``/``write``)."""

    def __init__(self, ctl):
        self.ctl = ctl

    async def park_on(self, master):
        await self.ctl.write(ArbiterReg.PARK, master)

    async def remove_gnt_after(self, clocks):
        """Take GNT# away ``clocks`` clocks after an owner's FRAME# (0: never)."""
        await self.ctl.write(ArbiterReg.REMOVE_AFTER, clocks)

    async def double_grant(self, enable=True):
        await self.ctl.write(ArbiterReg.DOUBLE_GRANT, int(enable))

    async def skip_idle_gap(self, enable=True):
        """Move GNT# on an idle bus without the clock with no GNT# (a protocol error)."""
        await self.ctl.write(ArbiterReg.NO_IDLE_GAP, int(enable))

    async def counters(self):
        return {"grants": await self.ctl.read(ArbiterReg.GRANTS),
                "removals": await self.ctl.read(ArbiterReg.REMOVALS)}
