# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy stats`` on the simulated board (bench: pcispy/spy/tests/bench_stats.py): the
counters and histograms count the bus's transactions as the host bridge model made them,
the tool's own register reads apart, and the histograms are held with the counters."""

import pytest

from pcispy.sim.launcher import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.spy


def test_stats_measure_the_bus_not_the_tool():
    run_bench("pcispy.spy.tests.bench_stats", None, SystemConfig(width=32))
