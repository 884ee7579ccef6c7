# SPDX-License-Identifier: BSD-2-Clause
"""The example Verilog target (examples/verilog_target/) in slot 0, through the path a user
takes: its description file loaded, ``SystemConfig(core=...)``, ``run_bench``. Two host
profiles; every bench ends with both monitors clean."""


import pytest

from pcispy.sim.launcher import run_bench
from pcispy.sim.core_description import CoreDescription
from pcispy.sim.system import SystemConfig
from pcispy.sim.tests.core_examples import EXAMPLE

pytestmark = pytest.mark.core



@pytest.mark.parametrize("profile", ["ideal", "alphastation200"])
def test_example_target(profile):
    config = SystemConfig(core=CoreDescription.load(EXAMPLE))
    assert run_bench("pcispy.sim.tests.bench_core_example", config=config,
                     profile=profile, seed=3) == 3
