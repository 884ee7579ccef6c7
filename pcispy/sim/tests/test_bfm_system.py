# SPDX-License-Identifier: BSD-2-Clause
"""The bus models against each other in the Verilator system (benches in bench_bfm.py)."""

import pytest

from pcispy.sim.api import run_bench
from pcispy.sim.bfm.profiles import PROFILES
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.bfm

BENCH = "pcispy.sim.tests.bench_bfm"
#: The host-bridge profiles (the rtc profile belongs to the legacy device).
HOST_PROFILES = sorted(name for name in PROFILES if name != "rtc")


def _config(width):
    # The whole system (the board sits idle in its slot): one model per width serves
    # every bench of the project.
    return SystemConfig(width=width)


@pytest.mark.parametrize("width", [32, 64])
@pytest.mark.parametrize("bench", ["memory_every_command_and_burst", "io_and_config",
                                   "every_termination"])
def test_host_bridge_against_test_device(bench, width):
    run_bench(BENCH, bench, _config(width))


@pytest.mark.parametrize("profile", HOST_PROFILES)
def test_test_device_masters_host_memory_32(profile):
    run_bench(BENCH, "test_device_masters_host_memory", _config(32), profile=profile)


@pytest.mark.parametrize("profile", ["ideal", "alphaserver4100"])
def test_test_device_masters_host_memory_64(profile):
    run_bench(BENCH, "test_device_masters_host_memory", _config(64), profile=profile)


#: The fixed seeds CI runs; more with PCISPY_SEEDS=N.
SEEDS = list(range(1, 1 + int(__import__("os").environ.get("PCISPY_SEEDS", "4"))))


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("width", [32, 64])
def test_randomised_traffic(width, seed):
    run_bench(BENCH, "randomised_traffic", _config(width), seed=seed)
