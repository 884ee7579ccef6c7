# SPDX-License-Identifier: BSD-2-Clause
"""The randomised compliance regression (benches in bench_compliance.py): every agent at
once over fixed seeds, one simulator process per system (bus width and the board's
decode speed). make test runs the first :data:`TEST_SEEDS` of each medium-decode system's
fixed seeds, make test-heavy those of the slow-decode systems and the bridge's;
``PCISPY_SEEDS=N`` runs N of them instead: ``make test-long`` and make bench (its fuzz
figures, pcispy/app/bench.py) run forty a system: every fixed seed of the four, and
twenty more than the bridge's fixed twenty."""

import os

import pytest

from pcispy.sim.launcher import FIGURES_ENV, run_bench
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.fuzz

BENCH = "pcispy.sim.tests.bench_compliance"
#: The fixed seeds per (bus width, board decode speed): the simulated systems' medium
#: decode and the bitstreams' slow decode (docs/timing.md), on both widths (the ULX3S's
#: bitstream is 32-bit, the ECP5-EVN's 64-bit).
FIXED_SEEDS = {(32, "medium"): list(range(1, 41)),
            (64, "medium"): list(range(1001, 1041)),
            (32, "slow"): list(range(2001, 2041)),
            (64, "slow"): list(range(3001, 3041))}


#: How many of a system's fixed seeds make test runs: every system keeps its model's
#: build and a regression over each width and decode speed, within make test's budget
#: (about 1.5 s of one core a seed).
TEST_SEEDS = 10


def seeds(fixed):
    """The seeds to run: the first :data:`TEST_SEEDS` of ``fixed``, or PCISPY_SEEDS of
    them from its first on."""
    count = int(os.environ.get("PCISPY_SEEDS") or TEST_SEEDS)
    return [fixed[0] + i for i in range(count)]


#: The systems whose models only make test-heavy builds: the slow decode of the
#: bitstreams (the 32-bit one also runs bench_target's slow_decode there).
HEAVY_SYSTEMS = {(32, "slow"), (64, "slow")}


@pytest.mark.runs_long
@pytest.mark.parametrize("system", [
    pytest.param(system, marks=[pytest.mark.heavy] if system in HEAVY_SYSTEMS else [])
    for system in FIXED_SEEDS], ids=lambda system: "%d-%s" % system)
def test_compliance(system):
    width, decode = system
    # make bench's fuzz figures: the counts of each system, into the folder it names.
    figures = os.environ.get(FIGURES_ENV)
    result = {"result": os.path.join(figures, f"{width}-{decode}.json")} if figures else {}
    run_bench(BENCH, "compliance_seeds", SystemConfig(width=width, decode=decode),
              seed_list=seeds(FIXED_SEEDS[system]), **result)


#: The fixed seeds of the system with the board behind the PCI-to-PCI bridge (32-bit,
#: medium decode; the bridge's own benches build its model).
BRIDGE_SEEDS = list(range(4001, 4021))


@pytest.mark.runs_long
@pytest.mark.heavy
def test_compliance_behind_the_bridge():
    run_bench(BENCH, "compliance_seeds", SystemConfig(bridge=True),
              seed_list=seeds(BRIDGE_SEEDS))
