# SPDX-License-Identifier: BSD-2-Clause
"""The board as a PCI target in the Verilator system, 32 and 64-bit (benches in
bench_target.py): enumeration and config space, every exerciser knob cycle-exact,
aborts and parity on both sides, PIO integrity on every host profile, the target and pio
features."""

import pytest

from pcispy.sim.api import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.target

BENCH = "pcispy.sim.tests.bench_target"


@pytest.mark.parametrize("width", [32, 64])
@pytest.mark.parametrize("bench", ["enumeration_and_config", "response_knobs",
                                   "noncompliant_response", "aborts_and_parity",
                                   "pio_integrity", "features"])
def test_target_in_system(bench, width):
    run_bench(BENCH, bench, SystemConfig(width=width))
