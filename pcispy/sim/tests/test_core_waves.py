# SPDX-License-Identifier: BSD-2-Clause
"""Waves of a core's standard checks (``pcispy sim-test --waves``): the file holds the
resolved bus and every agent's output enables, on the cycle count the violation table
uses; FST falls back to VCD, saying why, where Verilator's FST writer cannot be built."""

import re
from pathlib import Path

import pytest

from pcispy.sim.coretest import run_core_checks, waves_target
from pcispy.sim.system import SystemConfig, driver_names
from pcispy.sim.verilate import fst_missing
from pcispy.sim.tests.core_examples import faulty_example

pytestmark = pytest.mark.core



def _variables(vcd):
    """``{(scope path, name): width}`` of a VCD file's header."""
    scopes, found = [], {}
    for line in vcd.split(b"$enddefinitions")[0].decode().splitlines():
        words = line.split()
        if words[:1] == ["$scope"]:
            scopes.append(words[2])
        elif words[:1] == ["$upscope"]:
            scopes.pop()
        elif words[:1] == ["$var"]:
            found[(".".join(scopes), words[4])] = int(words[2])
    return found


@pytest.mark.heavy
@pytest.mark.runs_long
def test_waves_hold_the_bus_and_each_agents_enables(tmp_path):
    # The faulty example, whose waves a user would open: the model its fault test
    # (test_core_coretest.py) builds.
    core = faulty_example()
    waves = tmp_path / "checks.vcd"
    rows = run_core_checks(core, waves="vcd", waves_file=waves, writes=False)
    assert {row["check"]: row["result"] for row in rows}["memory_read"] == "fail", rows
    variables = _variables(waves.read_bytes())
    resolver = {name: width for (scope, name), width in variables.items()
                if re.fullmatch(r"(TOP\.)?pcisystem\.resolver", scope)}
    agents = len(driver_names(SystemConfig(core=core)))
    # One enable bit per agent for each shared line, and the resolved line itself.
    assert resolver["ad_oe"] == resolver["trdy_oe"] == resolver["frame_oe"] == agents, resolver
    assert resolver["ad"] == 32 and resolver["trdy"] == 1, resolver
    assert resolver["cycle"] == 32, resolver


def test_fst_falls_back_to_vcd_where_it_cannot_be_built(tmp_path):
    fmt, path, note = waves_target("fst", tmp_path / "run.fst")
    if fst_missing():
        assert (fmt, path, note) == ("vcd", tmp_path / "run.vcd",
                                     f"{fst_missing()}; recording VCD instead")
        assert "liblz4-dev" in note
    else:
        assert (fmt, path, note) == ("fst", tmp_path / "run.fst", None)
    assert waves_target("vcd", None, "my_core")[:2] == ("vcd", Path("my_core.vcd").resolve())
