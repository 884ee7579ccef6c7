# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benches that break every driver rule of the bus resolver on purpose, with the
saboteur (pcispy/sim/bfm/saboteur.py), one case per bench.

The resolver's rules (:data:`pcispy.pci.rules.DRIVER_RULES`) are about who drives
a line, which the agents under test only get wrong by accident; the saboteur gets them
wrong on command. Every case starts the system, parks the bus on the saboteur (it requests
the bus, the arbiter parks on the last owner, and it drives AD, C/BE# and PAR as a parked
agent must), so that no other agent's parking is judged meanwhile, clears both monitors,
provokes, lets the bus settle and records both monitors' report. :data:`PROVOKE` holds one
case per driver rule (named after it) and a few more around the parking rule's clock
boundaries and the reset.

The outcomes go to the JSON file named by ``PCISPY_RESULT`` (``{case: {"report": ...,
"problems": [...], "seed": ..., "width": ...}}``; ``problems`` are the provocation's own
failures). The pytest wrapper (``test_rules_system.py``) judges each case against what it
must fire: which driver rules, how often, on which line, with which agents named, and
which pin rules it unavoidably trips.
"""

import json
import os

import cocotb
from cocotb.triggers import ClockCycles, SimTimeoutError, with_timeout

from pcispy.sim.api import SimSystem
from pcispy.sim.bfm.saboteur import ParkMode, Request, Trigger
from pcispy.sim.launcher import RESULT_ENV
# Constants only (importing a bench would register its tests here too).
from pcispy.sim.tests.bench_bfm import TEST_IO, TEST_IO_SIZE, TEST_MEM, TEST_MEM_SIZE

__all__ = ["PROVOKE", "PARKED_BEFORE"]

#: Clocks to wait after a provocation (the parking rule needs ten clocks of a run).
SETTLE = 16
#: Parked clocks of the saboteur before a case starts (its run well past clock 11).
PARKED_BEFORE = 12
#: Most simulated time one case may take.
TIMEOUT_US = 200

#: ``{case name: async provoke(system)}``; a driver rule's own case has its name.
PROVOKE = {}


def _provokes(case):
    def register(function):
        if case in PROVOKE:
            raise ValueError(f"two provocations for case {case!r}")
        PROVOKE[case] = function
        return function
    return register


async def _channels(s, *settings, trigger=Trigger.NOW):
    """Program channel k with ``settings[k]`` = (line, value, clocks, delay), arm them
    together, and wait until they have run (a RESET trigger waits for the caller)."""
    for index, (line, value, clocks, delay) in enumerate(settings):
        await s.saboteur.channel(index, line, value, clocks=clocks, delay=delay,
                                 trigger=trigger)
    await s.saboteur.arm(*range(len(settings)))
    if trigger != Trigger.RESET:
        await s.saboteur.wait_done(timeout=1000)


async def _fresh_park_run(s, mode, *, delay, ad=0):
    """Give the bus to the host bridge for a few clocks and back, so the saboteur starts
    a new parked run in ``mode``: it holds REQ# (the arbiter, parking on the host now,
    leaves it the bus), lets go (GNT# moves to the host) and asks again."""
    await s.saboteur.park(ParkMode.CORRECT, request=Request.HOLD, delay=1, ad=ad)
    await s.arbiter.park_on(0)
    await s.saboteur.park(mode, request=Request.HOLD, delay=delay, ad=ad)
    await s.saboteur.request(Request.NEVER)
    await s.saboteur.request(Request.HOLD)


# --- one case per driver rule -------------------------------------------------------------

@_provokes("contention")
async def _(s):
    # Both channels drive DEVSEL# (deasserted: no pin rule sees it) in the same clock.
    await _channels(s, ("devsel", 0, 1, 0), ("devsel", 0, 1, 0))


@_provokes("no_turnaround")
async def _(s):
    # Channel A drives DEVSEL# in one clock, channel B in the next.
    await _channels(s, ("devsel", 0, 1, 0), ("devsel", 0, 1, 1))


@_provokes("sts_released_asserted")
async def _(s):
    # LOCK# asserted for one clock on an idle bus, then floated (no pin rule is about
    # LOCK# outside reset).
    await _channels(s, ("lock", 1, 1, 0))


@_provokes("parked_bus_floating")
async def _(s):
    # The parked saboteur stops driving AD, C/BE# and PAR: its run is long past clock 10.
    await s.saboteur.park(ParkMode.NOTHING)
    await ClockCycles(s.dut.pci_clk, SETTLE)


@_provokes("par_driver_mismatch")
async def _(s):
    # AD[63:32] is not parked: channel A drives it for a clock, channel B drives PAR64 in
    # the next one.
    await _channels(s, ("ad_hi", 0x1234_5678, 1, 0), ("par64", 0, 1, 1))


@_provokes("driven_during_reset")
async def _(s):
    # RST# for six clocks; channel A drives DEVSEL# (deasserted) in the second and third.
    await _channels(s, ("devsel", 0, 2, 0), trigger=Trigger.RESET)
    await s.pulse_reset(6)
    await s.saboteur.wait_done(timeout=1000)


# --- around the parking rule and the reset -------------------------------------------------

@_provokes("parked_in_time")
async def _(s):
    # A new parked run; AD and C/BE# from its clock 8, PAR from 9.
    await _fresh_park_run(s, ParkMode.CORRECT, delay=7)
    await ClockCycles(s.dut.pci_clk, 2 * SETTLE)


@_provokes("parked_at_the_limit")
async def _(s):
    # A new parked run; AD and C/BE# from its clock 9, PAR from 10: the last clocks both
    # monitors allow.
    await _fresh_park_run(s, ParkMode.CORRECT, delay=8)
    await ClockCycles(s.dut.pci_clk, 2 * SETTLE)


@_provokes("parked_one_clock_late")
async def _(s):
    # A new parked run; AD and C/BE# from its clock 10, PAR from 11: one clock late each.
    await _fresh_park_run(s, ParkMode.CORRECT, delay=9)
    await ClockCycles(s.dut.pci_clk, 2 * SETTLE)


@_provokes("parked_without_par")
async def _(s):
    # The parked saboteur drops PAR but keeps AD and C/BE#: AD = 1 has odd parity, so the
    # floating PAR (1) is even the right parity and no pin rule sees it.
    await s.saboteur.park(ParkMode.CORRECT, ad=1)
    await ClockCycles(s.dut.pci_clk, 4)
    await s.saboteur.park(ParkMode.NO_PAR, ad=1)
    await ClockCycles(s.dut.pci_clk, SETTLE)


@_provokes("parked_par_with_ad")
async def _(s):
    # A new parked run in which PAR starts in the same clock as AD (a clock early).
    await _fresh_park_run(s, ParkMode.PAR_WITH_AD, delay=2)
    await ClockCycles(s.dut.pci_clk, 2 * SETTLE)


@_provokes("pulse_reset_recovers")
async def _(s):
    # After a reset in the middle of the run the host memory answers again (its window
    # set up again) and the test device, its windows opened again, masters into it.
    await s.pulse_reset(10)
    await s.test_target.set_windows(mem=(TEST_MEM, TEST_MEM_SIZE), io=(TEST_IO, TEST_IO_SIZE))
    data = bytes(range(16))
    result = await s.test_initiator.mem_write(0x1000, data)
    assert result.ok, result
    assert await s.host_memory.backdoor_read(0x1000, 16) == data
    back = await s.host.mem_read(TEST_MEM, 4)
    assert back.ok, back


# --- the benches --------------------------------------------------------------------------

_outcomes = {}


def _record(case, outcome):
    path = os.environ.get(RESULT_ENV)
    _outcomes[case] = outcome
    if path:
        with open(path, "w") as f:
            json.dump(_outcomes, f, indent=1, sort_keys=True)


async def _park_saboteur(system):
    """Park the bus on the saboteur, driving as a parked agent must, for a while."""
    await system.saboteur.stop()
    await system.saboteur.park(ParkMode.CORRECT, request=Request.UNTIL_GRANTED)
    for _ in range(100):
        if await system.saboteur.parked_clocks() >= PARKED_BEFORE:
            return
    raise TimeoutError("the bus never parked on the saboteur")


async def _check_case(dut, case):
    system = await SimSystem(dut).start()
    outcome = {"seed": system.seed, "width": system.config.width, "report": None}
    problems = []
    try:
        await system.test_target.set_windows(mem=(TEST_MEM, TEST_MEM_SIZE),
                                             io=(TEST_IO, TEST_IO_SIZE))
        await _park_saboteur(system)
        await system.clear_checker()
        await with_timeout(PROVOKE[case](system), TIMEOUT_US, "us")
        await ClockCycles(dut.pci_clk, SETTLE)
        outcome["report"] = await system.checker_report()
    except SimTimeoutError:
        problems.append(f"the provocation did not finish within {TIMEOUT_US} us")
    except Exception as error:  # reported per case, then raised by the assert below
        problems.append(f"{type(error).__name__}: {error}")
    finally:
        await system.saboteur.quiet()
    outcome["problems"] = problems
    _record(case, outcome)
    assert not problems, f"case {case} (seed {system.seed}): {problems}; {outcome['report']}"


def _bench(case):
    async def bench(dut):
        await _check_case(dut, case)
    bench.__name__ = bench.__qualname__ = f"case_{case}"
    bench.__doc__ = f"Provoke {case} with the saboteur and record both monitors' report."
    return cocotb.test(timeout_time=4 * TIMEOUT_US, timeout_unit="us")(bench)


for _case in PROVOKE:
    globals()[f"case_{_case}"] = _bench(_case)
del _case
