# SPDX-License-Identifier: BSD-2-Clause
"""The model build's progress lines (off a terminal): one per step with the estimate from
the last build of the same model, the closing line, the times kept for the next estimate;
nothing for a block that builds nothing. And the test helper that leaves them out."""

import io
import json
import types

from pcispy.app.tests._cli import without_build_progress
from pcispy.sim import build_progress


def test_each_step_is_said_with_the_estimate_and_the_times_are_kept(tmp_path, monkeypatch):
    # The reporter's own clock, set by hand between the steps.
    clock = types.SimpleNamespace(now=100.0)
    monkeypatch.setattr(build_progress, "time",
                        types.SimpleNamespace(monotonic=lambda: clock.now))
    (tmp_path / build_progress.TIMES_FILE).write_text(json.dumps(
        {"pcisys32": {"elaborating": 10.0, "verilating": 20.0, "compiling": 60.0}}))
    out = io.StringIO()
    with build_progress.reporting("pcisys32", tmp_path, out):
        build_progress.stage("elaborating")
        clock.now = 110.0
        build_progress.stage("verilating")
        clock.now = 130.0
        build_progress.stage("compiling")
        clock.now = 200.0
    lines = out.getvalue().splitlines()
    assert lines == [
        "pcispy: model pcisys32: step 1 of 3, elaborating the system to Verilog; 0 s so "
        "far, about 10 s left, 1 min 30 s if the model must be built again (pcispy's "
        "sources changed since it was last prepared)",
        f"pcispy: building the simulated system's model pcisys32 once (it is kept in "
        f"{tmp_path}; later commands start in seconds)",
        "pcispy: model pcisys32: step 2 of 3, Verilator translating it to C++; 10 s so "
        "far, about 1 min 20 s left",
        "pcispy: model pcisys32: step 3 of 3, compiling the C++; 30 s so far, about 1 min "
        "0 s left",
        "pcispy: the simulated system pcisys32 is ready after 1 min 40 s"]
    assert json.loads((tmp_path / build_progress.TIMES_FILE).read_text()) == {
        "pcisys32": {"elaborating": 10.0, "verilating": 20.0, "compiling": 70.0}}
    assert without_build_progress(out.getvalue() + "pcispy: error: x\n") == \
        "pcispy: error: x\n"


def test_a_block_that_builds_nothing_says_nothing(tmp_path):
    out = io.StringIO()
    with build_progress.reporting("pcisys32", tmp_path, out):
        pass
    assert out.getvalue() == "" and not (tmp_path / build_progress.TIMES_FILE).exists()
