# SPDX-License-Identifier: BSD-2-Clause
"""One clock count in the simulated system: the protocol checker's log, the resolver's log
and ``SimSystem.cycle()`` read the same counter, which runs from the model's start and
does not restart at a mid-run RST#.

The bench breaks a rule both monitors see in the same clock: a saboteur channel asserts
FRAME# in the third clock of a RST# pulse (``signals_during_reset`` on the pins,
``driven_during_reset`` for the resolver). It reads ``cycle()`` just before the pulse;
from that read to the violation the control port and the pulse take a fixed number of
clocks (:data:`READ_TO_VIOLATION`), so the three must agree exactly.
"""

import json
import os

import cocotb
import pytest

from pcispy.sim.launcher import run_bench

pytestmark = pytest.mark.bfm

#: Clocks from the clock a ``cycle()`` read is presented in (t: CYCLE_LO's value) to the
#: violation: CYCLE_HI is read in t+2 (each control access takes a falling edge to present
#: and one to collect), ``pulse_reset`` raises RST# at the next falling edge, in t+4 (the
#: clock edge ending t+4 samples it asserted), and the channel, told to wait 2 clocks
#: after the first clock with RST#, drives from its registered output in t+4+2+1.
READ_TO_VIOLATION = 7
RESULT_ENV = "PCISPY_CLOCK_RESULT"


@cocotb.test()
async def one_count(dut):
    """The violation's cycle as each monitor logs it, and ``cycle()`` around it."""
    from pcispy.sim.api import SimSystem
    from pcispy.sim.bfm.saboteur import Trigger
    system = await SimSystem(dut).start()
    await system.clear_checker()
    await system.saboteur.channel(0, "frame", 1, clocks=1, delay=2, trigger=Trigger.RESET)
    await system.saboteur.arm(0)
    before = await system.cycle()
    await system.pulse_reset(clocks=8)
    after = await system.cycle()
    report = await system.checker_report()
    await system.saboteur.quiet()
    with open(os.environ[RESULT_ENV], "w") as out:
        json.dump({"before": before, "after": after, "checker": report["log"],
                   "resolver": report["driver_log"]}, out)


def test_checker_resolver_and_cycle_share_one_count(tmp_path):
    result = tmp_path / "clock.json"
    run_bench("pcispy.sim.tests.test_clock_count", "one_count", seed=1,
              **{"clock_result": str(result)})
    seen = json.loads(result.read_text())
    (checker,) = seen["checker"]
    (resolver,) = seen["resolver"]
    assert checker["rules"] == ["signals_during_reset"], seen
    assert (resolver["rule"], resolver["line"], resolver["agent_a"]) == \
        ("driven_during_reset", "frame", "saboteur_a"), seen
    # The same clock in both logs, and on the count cycle() reads, which RST# left running.
    assert checker["cycle"] == resolver["cycle"] == seen["before"] + READ_TO_VIOLATION, seen
    assert seen["after"] > checker["cycle"] + 8, seen
