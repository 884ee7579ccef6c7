# SPDX-License-Identifier: BSD-2-Clause
"""The board's spy in the simulated system (benches in bench_spy.py): hardware summaries
against the software decoder, the per-filter counters against the summaries, filters,
triggers, pre-trigger, ring mode, losses, counters, and the rtc scenario's Pamette
Figure 3."""

import pytest

from pcispy.sim.api import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.spy

BENCH = "pcispy.sim.tests.bench_spy"
#: The fixed seeds CI runs.
SEEDS = [1, 2]


@pytest.mark.parametrize("seed", SEEDS)
def test_summaries_equal_decoded_raw(seed):
    run_bench(BENCH, "summaries_equal_decoded_raw", SystemConfig(width=32), seed=seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_filter_counters_equal_summaries(seed):
    run_bench(BENCH, "filter_counters_equal_summaries", SystemConfig(width=32), seed=seed)


def test_filters_triggers_pre_ring_and_rtc_figure3():
    # One simulator process for both benches.
    run_bench(BENCH, ["filters_triggers_pre_ring", "rtc_figure3"], SystemConfig(width=32))
