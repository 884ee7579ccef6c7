# SPDX-License-Identifier: BSD-2-Clause
"""The simulated system's optimisations change nothing at the pins: the model every test
uses and the reference build of the same sources with its optimisations off
(``SystemConfig(optimised=False)``: no clock gating of the agents or the resolver's
evidence) run one fixed workload, and every agent's pins (each line's output enable and,
while enabled, its output; REQ#/GNT#, RST#) hold the same in every clock: the system's
pin signature (:meth:`~pcispy.sim.api.SimSystem.pin_signature`) and its clock count
agree at every checkpoint.

The workload is a seed of the compliance regression (bench_compliance.py): every agent at
once, the board's target, DMA engine and spy included. The two builds come from the same
sources, so the comparison holds whatever the board does (its register timing changes
both alike).
"""

import json
import os

import cocotb
import pytest

from pcispy.sim.launcher import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = [pytest.mark.bfm, pytest.mark.runs_long, pytest.mark.heavy]

RESULT_ENV = "PCISPY_PIN_TRACE_RESULT"
#: The compliance seeds of the workload (bench_compliance.make_plan).
SEEDS = (5, 12)


@cocotb.test()
async def pin_trace(dut):
    """The signature and the clock count after reset, enumeration and each seed."""
    from pcispy.sim.api import SimSystem
    from pcispy.sim.tests.bench_compliance import run_seed, set_up
    system = await SimSystem(dut).start()
    checkpoints = []

    async def checkpoint(name):
        checkpoints.append({"after": name, "cycle": await system.cycle(),
                            "pins": await system.pin_signature()})

    await checkpoint("reset")
    bars, backdoor, command = await set_up(system)
    await checkpoint("enumeration")
    for seed in SEEDS:
        await run_seed(system, bars, backdoor, seed, command)
        await checkpoint(f"compliance seed {seed}")
    with open(os.environ[RESULT_ENV], "w") as out:
        json.dump(checkpoints, out)


def _trace(config, path):
    run_bench("pcispy.sim.tests.test_pin_trace", "pin_trace", config, seed=1,
              pin_trace_result=str(path))
    return json.loads(path.read_text())


def test_the_optimised_model_drives_every_pin_as_the_reference_build(tmp_path):
    optimised = _trace(SystemConfig(width=32), tmp_path / "optimised.json")
    reference = _trace(SystemConfig(width=32, optimised=False), tmp_path / "reference.json")
    assert [c["after"] for c in optimised] == ["reset", "enumeration"] + [
        f"compliance seed {seed}" for seed in SEEDS]
    for fast, slow in zip(optimised, reference):
        assert fast == slow, f"the builds part by {fast['after']}: {fast} vs {slow}"
    # The signature moves: a run that drove nothing would agree trivially.
    assert len({c["pins"] for c in optimised}) == len(optimised)
