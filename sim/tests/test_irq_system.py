# SPDX-License-Identifier: BSD-2-Clause
"""Interrupt latency end to end in the simulated system (benches in bench_irq.py), and
``pcispy irq`` through the command line."""

import json

import pytest

from pcispy.host.cli import main
from pcispy.sim.api import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.irq

BENCH = "pcispy.sim.tests.bench_irq"


def test_irq_benches():
    # One simulator run for every bench (the model is shared with every system test).
    run_bench(BENCH, None, SystemConfig(width=32), seed=3)
