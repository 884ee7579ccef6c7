# SPDX-License-Identifier: BSD-2-Clause
"""The board's spy in the simulated system (benches in bench_spy.py): hardware summaries
against the software decoder, the per-filter counters against the summaries, the SRAM
trace memory against block RAM, filters, triggers, pre-trigger, ring mode, losses,
counters, and the rtc scenario's Pamette Figure 3."""

import json

import pytest

from pcispy.sim.launcher import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.spy

BENCH = "pcispy.spy.tests.bench_spy"
#: The fixed seeds CI runs.
SEEDS = [1, 2]


@pytest.mark.parametrize("seed", SEEDS)
def test_summaries_equal_decoded_raw(seed):
    run_bench(BENCH, "summaries_equal_decoded_raw", SystemConfig(width=32), seed=seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_filter_counters_equal_summaries(seed):
    run_bench(BENCH, "filter_counters_equal_summaries", SystemConfig(width=32), seed=seed)


@pytest.mark.heavy
@pytest.mark.runs_long
def test_sram_trace_memory_captures_what_block_ram_does(tmp_path):
    # The same seeded capture on the board with block RAM and on the board with a 1 MiB
    # asynchronous SRAM (2**18 x 32 bits): the registers tell each memory and depth, and
    # the records are the same, byte for byte.
    outcome = {}
    for memory in ("bram", "sram"):
        path = tmp_path / f"{memory}.json"
        run_bench(BENCH, "capture_for_comparison",
                  SystemConfig(width=32, trace_memory=memory), result=str(path))
        outcome[memory] = json.loads(path.read_text())
    bram, sram = outcome["bram"], outcome["sram"]
    assert bram["memory"] == {"memory": "bram", "slots": 4096}
    assert sram["memory"] == {"memory": "sram", "slots": 1 << 16}
    # Summary records take two slots.
    assert (bram["capacity"], sram["capacity"]) == (2048, 1 << 15)
    for name in ("lost", "overruns", "count"):
        assert bram["status"][name] == sram["status"][name], (name, bram["status"],
                                                               sram["status"])
    assert bram["status"]["lost"] == 0 and bram["summaries"] > 60
    assert sram["records"] == bram["records"]


def test_filters_triggers_pre_ring_and_rtc_figure3():
    # One simulator process for both benches.
    run_bench(BENCH, ["filters_triggers_pre_ring", "rtc_figure3"], SystemConfig(width=32))
