# SPDX-License-Identifier: BSD-2-Clause
"""The PCI-to-PCI bridge model in the two-bus system (benches in bench_bridge.py): delayed
read completion, posted writes in order and pushed ahead of reads, read completions that
pull posted writes through, disconnects, the discard timer, and enumeration through it.
The first test builds the two-bus model (a minute of one core), the others reuse it."""

import pytest

from pcispy.sim.launcher import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = [pytest.mark.bfm, pytest.mark.heavy]

BENCH = "pcispy.sim.tests.bench_bridge"
#: The two-bus system: the board behind the bridge.
BRIDGED = SystemConfig(bridge=True)


@pytest.mark.runs_long
def test_enumeration_behind_the_bridge():
    run_bench(BENCH, "enumeration_behind_the_bridge", BRIDGED)


@pytest.mark.parametrize("bench", [
    "delayed_read_completion", "posted_writes_in_order_pushed_by_a_read",
    "read_completion_pulls_upstream_writes", "disconnects",
    "board_reads_are_retried_until_the_data_arrives", "uncollected_completion_is_discarded",
    "posted_words_are_limited_to_the_buffer", "aborts_cross"])
def test_bridge(bench):
    run_bench(BENCH, bench, BRIDGED)
