# SPDX-License-Identifier: BSD-2-Clause
"""Unit tests of the bus resolver (its driver rules clock by clock) and the arbiter (its
registered GNT#, the idle gap, parking), in the Amaranth Python simulator.

In a testbench the inputs set before ``ctx.tick()`` are the lines of the current clock;
combinational outputs (the resolved lines, ``violation``) are read in that clock, and the
tick is the clock edge that samples them.
"""

import pytest
from amaranth.sim import Simulator

from pcispy.pci.rules import DRIVER_RULES, DRIVER_RULES_BY_NAME
from pcispy.sim.bfm.arbiter import Arbiter, ArbiterDriver, ArbiterReg
from pcispy.sim.bfm.resolver import AGENT_NONE, LOG_DEPTH, BusResolver, shared_lines
from pcispy.sim.control import PysimControl

pytestmark = pytest.mark.bfm

LINES = list(shared_lines(32))


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(30e-9)
    sim.add_testbench(bench)
    sim.run()


def _bit(name):
    return 1 << DRIVER_RULES_BY_NAME[name].id


class _Drivers:
    """Sets each agent's drive of each line for the current clock of a resolver bench."""

    def __init__(self, ctx, dut):
        self.ctx, self.dut = ctx, dut
        self.now = {}

    def drive(self, line, agent, value=0):
        self.now[(line, agent)] = value
        self._apply(line)

    def release(self, line, agent):
        self.now.pop((line, agent), None)
        self._apply(line)

    def release_all(self):
        lines = {line for line, _ in self.now}
        self.now.clear()
        for line in lines:
            self._apply(line)

    def _apply(self, line):
        bits = self.dut.lines[line]
        o = oe = 0
        for (name, agent), value in self.now.items():
            if name == line:
                oe |= 1 << agent
                o |= value << (agent * bits)
        self.ctx.set(getattr(self.dut, f"{line}_o"), o)
        self.ctx.set(getattr(self.dut, f"{line}_oe"), oe)


def _log(ctx, dut):
    entries = []
    for index in range(ctx.get(dut.log_entries)):
        ctx.set(dut.log_index, index)
        entries.append((ctx.get(dut.log_cycle), DRIVER_RULES[ctx.get(dut.log_rule)].name,
                        LINES[ctx.get(dut.log_line)], ctx.get(dut.log_agent_a),
                        ctx.get(dut.log_agent_b)))
    return entries


def _count(ctx, dut, name):
    rule = DRIVER_RULES_BY_NAME[name].id
    return ctx.get(dut.counts) >> (32 * rule) & 0xFFFF_FFFF


def test_resolver_pull_ups_single_driver_and_wired_and():
    dut = BusResolver(agents=3, width=32)

    async def bench(ctx):
        # Nobody drives: active-low lines deasserted, AD pulled up to all ones.
        assert ctx.get(dut.frame) == 0 and ctx.get(dut.devsel) == 0
        assert ctx.get(dut.ad) == 0xFFFF_FFFF and ctx.get(dut.cbe) == 0xF
        # Agent 1 drives AD and FRAME#.
        ctx.set(dut.ad_o, 0x1234_5678 << 32)
        ctx.set(dut.ad_oe, 0b010)
        ctx.set(dut.frame_o, 0b010)
        ctx.set(dut.frame_oe, 0b010)
        assert ctx.get(dut.ad) == 0x1234_5678 and ctx.get(dut.frame) == 1
        # Open drain: INTA# asserted by agent 2 while agent 0 drives it deasserted.
        ctx.set(dut.inta_o, 0b100)
        ctx.set(dut.inta_oe, 0b101)
        assert ctx.get(dut.inta) == 1
        await ctx.tick().repeat(3)
        assert ctx.get(dut.contention) == 0          # open drain never contends
        # Agents 0 and 2 both drive TRDY#: contention on that line, first cycle latched.
        ctx.set(dut.trdy_oe, 0b101)
        await ctx.tick()
        ctx.set(dut.trdy_oe, 0b001)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.contention) == 1 << LINES.index("trdy")
        assert ctx.get(dut.first_line) == LINES.index("trdy")
        assert ctx.get(dut.first_cycle) == 3
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        assert ctx.get(dut.contention) == 0

    _run(dut, bench)


def test_resolver_contention_names_both_agents():
    dut = BusResolver(agents=3, width=32)

    async def bench(ctx):
        d = _Drivers(ctx, dut)
        await ctx.tick().repeat(2)
        d.drive("devsel", 0)
        d.drive("devsel", 2)
        assert ctx.get(dut.violation) == _bit("contention")
        await ctx.tick()
        d.release_all()
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        assert ctx.get(dut.flags) == _bit("contention")
        assert _log(ctx, dut) == [(2, "contention", "devsel", 0, 2)]

    _run(dut, bench)


def test_resolver_no_turnaround():
    dut = BusResolver(agents=3, width=32)

    async def bench(ctx):
        d = _Drivers(ctx, dut)
        await ctx.tick()
        # Agent 0 drives DEVSEL# (deasserted) in clock 1, agent 2 in clock 2: no turnaround.
        d.drive("devsel", 0)
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        d.release("devsel", 0)
        d.drive("devsel", 2)
        assert ctx.get(dut.violation) == _bit("no_turnaround")
        await ctx.tick()
        # Agent 2 again: the same driver needs no turnaround.
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        # A clock with nobody driving, then agent 1: legal.
        d.release_all()
        await ctx.tick()
        d.drive("devsel", 1)
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        d.release_all()
        # Open drain: INTA# pulled by agent 0, then by agent 1 in the next clock: legal.
        d.drive("inta", 0, 1)
        await ctx.tick()
        d.release("inta", 0)
        d.drive("inta", 1, 1)
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        d.release_all()
        await ctx.tick()
        assert _log(ctx, dut) == [(2, "no_turnaround", "devsel", 0, 2)]
        assert _count(ctx, dut, "no_turnaround") == 1

    _run(dut, bench)


def test_resolver_sustained_tristate_released_asserted():
    dut = BusResolver(agents=3, width=32)

    async def bench(ctx):
        d = _Drivers(ctx, dut)
        await ctx.tick()
        # Agent 1 asserts FRAME# in clock 1, drives it deasserted in 2, releases in 3: legal.
        d.drive("frame", 1, 1)
        await ctx.tick()
        d.drive("frame", 1, 0)
        await ctx.tick()
        d.release("frame", 1)
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        # Agent 2 asserts LOCK# in clock 4 and releases it in 5: broken in 5.
        d.drive("lock", 2, 1)
        await ctx.tick()
        d.release("lock", 2)
        assert ctx.get(dut.violation) == _bit("sts_released_asserted")
        await ctx.tick()
        # Released while RST# is asserted: every output floats then, legal.
        d.drive("stop", 0, 1)
        await ctx.tick()
        d.release("stop", 0)
        ctx.set(dut.rst, 1)
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        ctx.set(dut.rst, 0)
        await ctx.tick()
        assert _log(ctx, dut) == [(5, "sts_released_asserted", "lock", 2, AGENT_NONE)]

    _run(dut, bench)


def test_resolver_par_follows_ad_driver():
    dut = BusResolver(agents=3, width=32)

    async def bench(ctx):
        d = _Drivers(ctx, dut)
        await ctx.tick()
        # Agent 0: AD in clock 1, PAR in 2 (and AD again), PAR in 3: legal.
        d.drive("ad", 0, 0x55)
        await ctx.tick()
        d.drive("par", 0)
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        d.release("ad", 0)
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        d.release("par", 0)
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        # Clock 5: agent 1 drives AD; clock 6: agent 2 drives PAR (a = 1, b = 2).
        d.drive("ad", 1)
        await ctx.tick()
        d.release("ad", 1)
        d.drive("par", 2)
        assert ctx.get(dut.violation) == _bit("par_driver_mismatch")
        await ctx.tick()
        # Clock 7: agent 2 drives PAR with nobody on AD in 6 (a = none, b = 2).
        assert ctx.get(dut.violation) == _bit("par_driver_mismatch")
        await ctx.tick()
        # Clock 8: AD by agent 0; clock 9: nobody on PAR (a = 0, b = none).
        d.release_all()
        d.drive("ad", 0)
        await ctx.tick()
        d.release_all()
        assert ctx.get(dut.violation) == _bit("par_driver_mismatch")
        await ctx.tick()
        assert _log(ctx, dut) == [(6, "par_driver_mismatch", "par", 1, 2),
                                  (7, "par_driver_mismatch", "par", AGENT_NONE, 2),
                                  (9, "par_driver_mismatch", "par", 0, AGENT_NONE)]

    _run(dut, bench)


def test_resolver_driven_during_reset_forgives_the_first_clock():
    dut = BusResolver(agents=3, width=64)

    async def bench(ctx):
        d = _Drivers(ctx, dut)
        await ctx.tick()
        # RST# in clocks 1..4; agent 1 drives DEVSEL# deasserted in 1 and 2 (1 forgiven),
        # REQ64# in 3 (the central resource's, excepted), INTA# released (oe, o = 0) and
        # then pulled low by agent 2 in 4.
        ctx.set(dut.rst, 1)
        d.drive("devsel", 1)
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        assert ctx.get(dut.violation) == _bit("driven_during_reset")
        await ctx.tick()
        d.release_all()
        d.drive("req64", 0, 1)
        d.drive("inta", 2, 0)
        assert ctx.get(dut.violation) == 0
        await ctx.tick()
        d.release_all()
        d.drive("inta", 2, 1)
        assert ctx.get(dut.violation) == _bit("driven_during_reset")
        await ctx.tick()
        ctx.set(dut.rst, 0)
        d.release_all()
        await ctx.tick()
        assert _log(ctx, dut) == [(2, "driven_during_reset", "devsel", 1, AGENT_NONE),
                                  (4, "driven_during_reset", "inta", 2, AGENT_NONE)]

    _run(dut, bench)


def _park_bench(dut, plan, expect):
    """Park the bus on master 0 (agent 1) from clock 1 and drive per ``plan``
    (``{line: first clock driven}``); ``expect``: ``{clock: lines floating}``."""
    async def bench(ctx):
        d = _Drivers(ctx, dut)
        await ctx.tick()
        ctx.set(dut.gnt, 0b01)
        seen = {}
        for clock in range(1, 16):
            for line, first in plan.items():
                if clock == first:
                    d.drive(line, 1, 0)
            if ctx.get(dut.violation):
                assert ctx.get(dut.violation) == _bit("parked_bus_floating")
                seen[clock] = ctx.get(dut.log_entries)
            await ctx.tick()
        log = _log(ctx, dut)
        assert sorted(seen) == sorted(expect), seen
        assert [(cycle, line) for cycle, _, line, _, _ in log] == \
            [(clock, line) for clock in sorted(expect) for line in expect[clock][:1]]
        assert {(rule, a, b) for _, rule, _, a, b in log} <= {("parked_bus_floating", 1,
                                                               AGENT_NONE)}
    return bench


def test_resolver_parked_agent_drives_in_time():
    # AD and C/BE# from clock 9, PAR from 10 (a clock after AD): nothing fires.
    dut = BusResolver(agents=2, width=32, masters=(1, None))
    _run(dut, _park_bench(dut, {"ad": 9, "cbe": 9, "par": 10}, {}))


def test_resolver_parked_bus_floating_exact_clocks():
    # AD and C/BE# a clock late (10), PAR then a clock after AD (11): clock 9 fires on
    # AD, clock 10 on PAR.
    dut = BusResolver(agents=2, width=32, masters=(1, None))
    _run(dut, _park_bench(dut, {"ad": 10, "cbe": 10, "par": 11},
                          {9: ["ad"], 10: ["par"]}))


def test_resolver_parked_bus_floating_counts_from_idle_and_same_gnt():
    dut = BusResolver(agents=2, width=32, masters=(1, None))

    async def bench(ctx):
        d = _Drivers(ctx, dut)
        ctx.set(dut.gnt, 0b01)
        # Clocks 0..7 parked; FRAME# in 8 (not idle) restarts the count; from clock 9
        # (FRAME# driven deasserted, then released) parked again: its 9th clock fires.
        for _ in range(8):
            assert ctx.get(dut.violation) == 0
            await ctx.tick()
        d.drive("frame", 1, 1)
        await ctx.tick()
        d.drive("frame", 1, 0)
        for _ in range(8):
            assert ctx.get(dut.violation) == 0
            await ctx.tick()
            d.release_all()
        assert ctx.get(dut.violation) == _bit("parked_bus_floating")
        await ctx.tick()
        # GNT# moves to master 1 (no agent on the bus): a new run, nine clocks, agent none.
        ctx.set(dut.gnt, 0b10)
        for _ in range(8):
            assert ctx.get(dut.violation) == 0
            await ctx.tick()
        assert ctx.get(dut.violation) == _bit("parked_bus_floating")
        # Two GNT# or RST#: not parked.
        ctx.set(dut.gnt, 0b11)
        assert ctx.get(dut.violation) == 0
        ctx.set(dut.gnt, 0b10)
        ctx.set(dut.rst, 1)
        assert ctx.get(dut.violation) == 0
        ctx.set(dut.rst, 0)
        await ctx.tick()
        log = _log(ctx, dut)
        assert [(rule, line, a) for _, rule, line, a, _ in log] == \
            [("parked_bus_floating", "ad", 1), ("parked_bus_floating", "ad", AGENT_NONE)]

    _run(dut, bench)


def test_resolver_log_keeps_the_first_entries_one_per_rule_per_clock():
    dut = BusResolver(agents=3, width=32)

    async def bench(ctx):
        d = _Drivers(ctx, dut)
        # Clock 0: agents 0 and 1 both drive AD: contention; clock 1: agent 2 drives AD
        # after them (no turnaround) and nobody PAR (par mismatch): two entries.
        d.drive("ad", 0)
        d.drive("ad", 1)
        await ctx.tick()
        d.release_all()
        d.drive("ad", 2)
        assert ctx.get(dut.violation) == _bit("no_turnaround") | _bit("par_driver_mismatch")
        await ctx.tick()
        d.release_all()
        await ctx.tick()
        assert _log(ctx, dut) == [(0, "contention", "ad", 0, 1),
                                  (1, "no_turnaround", "ad", 0, 2),
                                  (1, "par_driver_mismatch", "par", 0, AGENT_NONE),
                                  (2, "par_driver_mismatch", "par", 2, AGENT_NONE)]
        # Twenty clocks of contention: the log stops at LOG_DEPTH, the count does not.
        d.drive("stop", 0)
        d.drive("stop", 1)
        await ctx.tick().repeat(20)
        assert ctx.get(dut.log_entries) == LOG_DEPTH
        assert _count(ctx, dut, "contention") == 21
        assert _log(ctx, dut)[-1][:3] == (14, "contention", "stop")
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        d.release_all()
        await ctx.tick()
        assert ctx.get(dut.log_entries) == 0 and ctx.get(dut.flags) == 0
        assert ctx.get(dut.counts) == 0

    _run(dut, bench)


# --- the arbiter -----------------------------------------------------------------------

def test_arbiter_parks_rotates_and_removes_gnt():
    dut = Arbiter(masters=3)

    async def bench(ctx):
        ctl = PysimControl(ctx, dut.ctl)
        arbiter = ArbiterDriver(ctl)
        await arbiter.park_on(1)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.gnt) == 0b010              # parked on master 1
        # Master 0 and 2 request; grant goes round-robin from the owner (1): 2 first,
        # after one clock with no GNT# at all (the bus is idle).
        ctx.set(dut.req, 0b101)
        assert ctx.get(dut.gnt) == 0b010              # nothing within the clock
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b100
        # Master 2 starts a transaction: the grant moves on to master 0 (hidden
        # arbitration, at once: the sampled FRAME# was asserted).
        ctx.set(dut.frame, 1)
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b100
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b001
        # Master 0 alone requests; with forced removal 4 clocks into its FRAME#.
        ctx.set(dut.req, 0b001)
        ctx.set(dut.frame, 0)
        await arbiter.remove_gnt_after(4)
        ctx.set(dut.frame, 1)
        for clock in range(1, 6):
            await ctx.tick()
            assert ctx.get(dut.gnt) == (0b001 if clock < 4 else 0), clock
        # Its transaction over, master 0 (still requesting, alone) gets GNT# back.
        ctx.set(dut.frame, 0)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.gnt) == 0b001
        ctx.set(dut.req, 0)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.gnt) == 0b010              # back to the park master
        assert (await arbiter.counters())["removals"] == 1
        await arbiter.double_grant(True)
        await ctx.tick()
        assert bin(ctx.get(dut.gnt)).count("1") == 2

    _run(dut, bench)


def test_arbiter_gnt_changes_only_at_the_edge_after_its_cause():
    dut = Arbiter(masters=3)

    async def bench(ctx):
        await ctx.tick().repeat(2)
        assert ctx.get(dut.gnt) == 0b001              # parked on master 0 (the last owner)
        # Master 1 requests in clock N: GNT# moves at the edge ending N: clock N+1 has
        # none (idle bus), N+2 has master 1's.
        ctx.set(dut.req, 0b010)
        assert ctx.get(dut.gnt) == 0b001
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0
        ctx.set(dut.req, 0)                          # dropped: the grant stays decided
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b010
        # Master 1 starts (FRAME# in clock M) while master 2 requests: GNT# moves at the
        # edge ending M+1, the first that sees the owner has started, in one step.
        ctx.set(dut.req, 0b110)
        await ctx.tick()
        ctx.set(dut.frame, 1)
        assert ctx.get(dut.gnt) == 0b010
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b010
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b100
        # FRAME# released with IRDY# (last data phase) in the same clock as it changes
        # nothing within the clock.
        ctx.set(dut.frame, 0)
        ctx.set(dut.irdy, 1)
        assert ctx.get(dut.gnt) == 0b100
        await ctx.tick()
        ctx.set(dut.irdy, 0)
        assert ctx.get(dut.gnt) == 0b100
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b100

    _run(dut, bench)


def test_arbiter_moves_with_a_gap_unless_frame_was_sampled():
    dut = Arbiter(masters=3)

    async def bench(ctx):
        arbiter = ArbiterDriver(PysimControl(ctx, dut.ctl))
        await arbiter.park_on(0)
        await ctx.tick()
        # Master 2 owns the bus and is in its last data phase (FRAME# deasserted, IRDY#
        # asserted): the next clock may be idle, so a move to master 1 leaves a gap.
        ctx.set(dut.req, 0b100)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.gnt) == 0b100
        ctx.set(dut.req, 0b010)
        ctx.set(dut.irdy, 1)
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0
        ctx.set(dut.irdy, 0)
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b010
        # Nobody requests any more, bus idle: back to the fixed park master, with a gap.
        ctx.set(dut.req, 0)
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b001
        assert await ctl_read(ctx, dut, ArbiterReg.GRANTS) == 3

    _run(dut, bench)


async def ctl_read(ctx, dut, register):
    return await PysimControl(ctx, dut.ctl).read(register)


@pytest.mark.parametrize("park", [None, 0, 1, 2, 3])
def test_arbiter_parking_policy(park):
    """Parking on the last owner (the reset policy), or on any fixed master."""
    dut = Arbiter(masters=4)

    async def bench(ctx):
        arbiter = ArbiterDriver(PysimControl(ctx, dut.ctl))
        if park is not None:
            await arbiter.park_on(park)
        await ctx.tick()
        # Master 2 requests, gets GNT#, runs a transaction and stops requesting.
        ctx.set(dut.req, 0b0100)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.gnt) == 0b0100
        ctx.set(dut.frame, 1)
        await ctx.tick()
        ctx.set(dut.req, 0)
        ctx.set(dut.frame, 0)
        ctx.set(dut.irdy, 1)
        await ctx.tick()
        ctx.set(dut.irdy, 0)
        await ctx.tick().repeat(4)
        assert ctx.get(dut.gnt) == 1 << (2 if park is None else park)

    _run(dut, bench)


def test_arbiter_park_policy_back_to_last():
    dut = Arbiter(masters=3)

    async def bench(ctx):
        arbiter = ArbiterDriver(PysimControl(ctx, dut.ctl))
        await arbiter.park_on(1)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.gnt) == 0b010
        await arbiter.park_on_last()
        ctx.set(dut.req, 0b100)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.gnt) == 0b100
        ctx.set(dut.req, 0)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.gnt) == 0b100              # stays on master 2, the last owner

    _run(dut, bench)


def test_arbiter_skip_idle_gap_moves_gnt_without_a_free_clock():
    dut = Arbiter(masters=3)

    async def bench(ctx):
        arbiter = ArbiterDriver(PysimControl(ctx, dut.ctl))
        await arbiter.park_on(0)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.gnt) == 0b001              # parked on master 0
        await arbiter.skip_idle_gap(True)
        ctx.set(dut.req, 0b100)
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b100              # no clock without GNT# in between
        await arbiter.skip_idle_gap(False)
        ctx.set(dut.req, 0)
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0                  # back to the park master, with a gap
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b001

    _run(dut, bench)


def test_arbiter_same_clock_knob_answers_within_the_clock():
    """The stress knob gives back the combinational answer: after a move decided while
    the bus was busy, GNT# drops in the very clock the bus is seen idle."""
    dut = Arbiter(masters=3)

    async def bench(ctx):
        arbiter = ArbiterDriver(PysimControl(ctx, dut.ctl))
        await arbiter.same_clock(True)
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b001
        # Bus busy (FRAME#) while master 1 requests and master 0 starts: the move at the
        # next edge shows GNT# on master 1 at once (busy)...
        ctx.set(dut.frame, 1)
        ctx.set(dut.req, 0b010)
        await ctx.tick()
        assert ctx.get(dut.gnt) == 0b010
        # ...and within the same clock, as soon as FRAME# and IRDY# read idle, none.
        ctx.set(dut.frame, 0)
        assert ctx.get(dut.gnt) == 0
        ctx.set(dut.frame, 1)
        assert ctx.get(dut.gnt) == 0b010
        # Registered (the knob off): the same lines change nothing within the clock.
        await arbiter.same_clock(False)
        assert ctx.get(dut.gnt) == 0b010
        ctx.set(dut.frame, 0)
        assert ctx.get(dut.gnt) == 0b010
        assert await ctl_read(ctx, dut, ArbiterReg.SAME_CLOCK) == 0

    _run(dut, bench)


# --- the saboteur ----------------------------------------------------------------------

def test_saboteur_channels_and_parking_clocks():
    from pcispy.sim.bfm.saboteur import ParkMode, Request, Saboteur, SaboteurDriver, Trigger
    dut = Saboteur(width=32)

    async def bench(ctx):
        sab = SaboteurDriver(PysimControl(ctx, dut.ctl))
        # Channel A: DEVSEL# (value 1) for 2 clocks, 1 clock after the trigger; channel
        # B: LOCK# for 1 clock at once. Armed in clock 0, triggered in clock 1.
        await sab.channel(0, "devsel", 1, clocks=2, delay=1)
        await sab.channel(1, "lock", 1, clocks=1)
        await sab.arm()
        driven = []
        for clock in range(1, 7):
            driven.append((ctx.get(dut.chan_a.devsel.oe), ctx.get(dut.chan_a.devsel.o),
                           ctx.get(dut.chan_b.lock.oe)))
            await ctx.tick()
        assert driven == [(0, 0, 0), (0, 0, 1), (1, 1, 0), (1, 1, 0), (0, 0, 0), (0, 0, 0)]
        assert await sab.status() == (0, 0b11)
        # Trigger on RST#: the clock after RST# is first sampled.
        await sab.channel(0, "ad", 0x55, clocks=1, trigger=Trigger.RESET)
        await sab.arm(0)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.chan_a.ad.oe) == 0
        ctx.set(dut.bus.rst.i, 1)
        await ctx.tick()
        assert ctx.get(dut.chan_a.ad.oe) == 1 and ctx.get(dut.chan_a.ad.o) == 0x55
        ctx.set(dut.bus.rst.i, 0)
        await ctx.tick()
        assert ctx.get(dut.chan_a.ad.oe) == 0
        # Parking: REQ# until granted; GNT# with an idle bus from clock 1: AD and C/BE#
        # from clock 1 + delay, PAR a clock later with their parity; floated the clock
        # after GNT# goes, PAR a clock after that.
        await sab.park(ParkMode.CORRECT, request=Request.UNTIL_GRANTED, delay=3,
                       ad=0x1, cbe=0x0)
        await ctx.tick()
        assert ctx.get(dut.bus.req.o) == 1
        ctx.set(dut.bus.gnt.i, 1)
        seen = []
        for clock in range(1, 8):
            seen.append((ctx.get(dut.bus.ad.oe), ctx.get(dut.bus.cbe.oe),
                         ctx.get(dut.bus.par.oe), ctx.get(dut.bus.par.o)))
            await ctx.tick()
            if clock == 5:
                ctx.set(dut.bus.gnt.i, 0)
        assert ctx.get(dut.bus.req.o) == 1           # asks again once GNT# has gone
        assert seen == [(0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0), (1, 1, 0, 0),
                        (1, 1, 1, 1), (1, 1, 1, 1), (0, 0, 1, 1)]

    _run(dut, bench)
