# SPDX-License-Identifier: BSD-2-Clause
"""Enumeration sets Cache Line Size and Latency Timer (pcispy/sim/bfm/firmware.py), on the
default system (pcispy's board in slot 0: the same checkout still runs it by default)."""

import pytest

from pcispy.sim.launcher import run_bench

pytestmark = pytest.mark.core


def test_enumeration_sets_line_registers():
    assert run_bench("pcispy.sim.tests.bench_core_firmware") == 1
