# SPDX-License-Identifier: BSD-2-Clause
"""The board's DMA master in the Verilator system, driven by the ``pcispy dma`` feature
(benches in bench_dma.py; several benches share one simulator process)."""

import pytest

from pcispy.sim.launcher import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.dma

BENCH = "pcispy.dma.tests.bench_dma"


def test_dma_32_exact_clocks_terminations_every_command_and_profile():
    run_bench(BENCH, ["exact_clock_counts", "terminations", "every_command_width_profile"],
              SystemConfig(width=32))


def test_dma_64_every_command_and_profile_ack64_missing():
    run_bench(BENCH, ["every_command_width_profile", "ack64_missing"], SystemConfig(width=64))


@pytest.mark.fuzz
@pytest.mark.parametrize("width", [32, 64])
def test_dma_randomised_profiles(width):
    # The seeds are the fixed list bench_dma.SEEDS; a failure names its seed.
    run_bench(BENCH, "randomised_profiles", SystemConfig(width=width))
