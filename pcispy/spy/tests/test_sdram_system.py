# SPDX-License-Identifier: BSD-2-Clause
"""The spy's SDRAM trace memory in the simulated system (benches in bench_sdram.py): a
capture longer than the SDRAM's FIFO goes through the SDRAM model and decodes record for
record equal to the same traffic captured in block RAM; raw captures faster than the SDRAM
report their losses; ring mode wraps the SDRAM; a capture fills it and stops; the trigger
input pin triggers with pre-trigger records and marks; segmented captures re-arm."""

import json

import pytest

from pcispy.sim.launcher import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = [pytest.mark.spy, pytest.mark.heavy]

BENCH = "pcispy.spy.tests.bench_sdram"
CAPTURES = "pcispy.spy.tests.bench_trigger_segments"
SDRAM = SystemConfig(width=32, trace_memory="sdram")


@pytest.mark.runs_long
def test_sdram_trace_memory_captures_what_block_ram_does(tmp_path):
    # The same seeded capture on the board with block RAM and on the board with an SDRAM
    # of 4 banks x 16 rows x 512 columns (4096 slots, as deep as the block RAM).
    outcome = {}
    for config in (SystemConfig(width=32), SDRAM):
        path = tmp_path / f"{config.trace_memory}.json"
        run_bench(BENCH, "capture_through_trace_memory", config, result=str(path))
        outcome[config.trace_memory] = json.loads(path.read_text())
    bram, sdram = outcome["bram"], outcome["sdram"]
    assert bram["slots"] == sdram["slots"] == 4096
    assert bram["capacity"] == sdram["capacity"] == 2048
    for name in ("lost", "overruns", "count"):
        assert bram["status"][name] == sdram["status"][name], (name, bram["status"],
                                                               sdram["status"])
    # Longer than the SDRAM's FIFO (summaries take two slots), all of it through the SDRAM.
    assert bram["status"]["lost"] == 0 and 2 * bram["summaries"] > SDRAM.sdram_fifo_depth
    assert sdram["records"] == bram["records"]
    assert sdram["sdram"]["violations"] == [] and sdram["sdram"]["refreshes"] > 2


def test_raw_overrun_and_ring_through_sdram():
    # One simulator process for both benches.
    run_bench(BENCH, ["raw_overrun_through_sdram", "ring_through_sdram"], SDRAM)


def test_full_through_sdram():
    # The memory fills and the capture stops itself (pcispy/sim/tests/
    # bench_trigger_segments.py): 2,052 spaced writes, about 200,000 bus clocks.
    run_bench(CAPTURES, "full_through_sdram", SDRAM)


def test_trigger_pins_and_segments_through_sdram():
    # An external trigger with pre-trigger records and markers, segmented captures
    # (summary, raw); one simulator process for the three.
    run_bench(CAPTURES, ["external_trigger_pre_and_markers_through_sdram",
                         "segments_through_sdram", "raw_segments_through_sdram"], SDRAM)
