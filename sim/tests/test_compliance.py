# SPDX-License-Identifier: BSD-2-Clause
"""The randomised compliance regression (benches in bench_compliance.py): every agent at
once over fixed seeds, one simulator process per bus width. ``PCISPY_SEEDS=N`` runs N
seeds per width instead of the CI set."""

import os

import pytest

from pcispy.sim.api import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.fuzz

BENCH = "pcispy.sim.tests.bench_compliance"
#: The fixed seeds CI runs, split between the widths (200 in all; the two processes run
#: side by side on make test's two workers).
CI_SEEDS = {32: list(range(1, 101)), 64: list(range(1001, 1101))}


def seeds(width):
    count = os.environ.get("PCISPY_SEEDS")
    if count:
        return [CI_SEEDS[width][0] + i for i in range(int(count))]
    return CI_SEEDS[width]


@pytest.mark.parametrize("width", [32, 64])
def test_compliance(width):
    run_bench(BENCH, "compliance_seeds", SystemConfig(width=width), seed_list=seeds(width))
