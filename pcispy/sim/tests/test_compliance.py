# SPDX-License-Identifier: BSD-2-Clause
"""The randomised compliance regression (benches in bench_compliance.py): every agent at
once over fixed seeds, one simulator process per system (bus width and the board's
decode speed). ``PCISPY_SEEDS=N`` runs N seeds per system instead of the CI set; make
bench (pcispy/app/bench.py) runs it for its fuzz figures."""

import os

import pytest

from pcispy.sim.launcher import FIGURES_ENV, run_bench
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.fuzz

BENCH = "pcispy.sim.tests.bench_compliance"
#: The fixed seeds CI runs per (bus width, board decode speed): the simulated systems'
#: medium decode and the bitstreams' slow decode (docs/timing.md), on both widths (the
#: ULX3S's bitstream is 32-bit, the ECP5-EVN's 64-bit). 40 per system keeps make test
#: within its budget; PCISPY_SEEDS=N runs more.
CI_SEEDS = {(32, "medium"): list(range(1, 41)),
            (64, "medium"): list(range(1001, 1041)),
            (32, "slow"): list(range(2001, 2041)),
            (64, "slow"): list(range(3001, 3041))}


def seeds(fixed):
    """The seeds to run: ``fixed``, or PCISPY_SEEDS of them from its first on."""
    count = os.environ.get("PCISPY_SEEDS")
    if count:
        return [fixed[0] + i for i in range(int(count))]
    return fixed


@pytest.mark.runs_long
@pytest.mark.parametrize("system", list(CI_SEEDS), ids=lambda system: "%d-%s" % system)
def test_compliance(system):
    width, decode = system
    # make bench's fuzz figures: the counts of each system, into the folder it names.
    figures = os.environ.get(FIGURES_ENV)
    result = {"result": os.path.join(figures, f"{width}-{decode}.json")} if figures else {}
    run_bench(BENCH, "compliance_seeds", SystemConfig(width=width, decode=decode),
              seed_list=seeds(CI_SEEDS[system]), **result)


#: The fixed seeds of the system with the board behind the PCI-to-PCI bridge (32-bit,
#: medium decode; the bridge's own benches build its model).
BRIDGE_SEEDS = list(range(4001, 4021))


@pytest.mark.runs_long
def test_compliance_behind_the_bridge():
    run_bench(BENCH, "compliance_seeds", SystemConfig(bridge=True),
              seed_list=seeds(BRIDGE_SEEDS))
