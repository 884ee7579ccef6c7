# SPDX-License-Identifier: BSD-2-Clause
"""The standard core checks (pcispy/sim/coretest.py, ``pcispy sim-test``) on the example
Verilog target: every check passes with both monitors clean, and the command prints one
row per check."""

import argparse
import io

import pytest

from pcispy.sim.coretest import CHECKS, assert_core_passes, format_table, run_core_checks
from pcispy.sim.coretest_command import SimTestCommand
from pcispy.sim.tests.core_examples import EXAMPLE, faulty_example

pytestmark = pytest.mark.core



#: The checks that do not apply to the example: it checks no parity (Parity Error
#: Response reads 0), has no master hook, and the profiles here run no scenario.
_SKIPPED = {"parity_reporting", "master", "under_load"}


@pytest.mark.runs_long
def test_example_passes_every_check():
    rows = assert_core_passes(EXAMPLE, profile="alphastation200", seed=2)
    assert [row["check"] for row in rows] == [name for name, _ in CHECKS]
    assert all(row["result"] == "pass" and not row["rules"] for row in rows
               if row["check"] not in _SKIPPED), rows
    assert {row["check"] for row in rows if row["result"] == "skip"} == _SKIPPED, rows
    ram = next(row for row in rows if row["check"] == "ram_bars")
    assert ram["detail"] == "BAR0 RAM (probed: 3 words kept a pattern)", ram


def test_command_prints_a_row_per_check():
    command = SimTestCommand()
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    args = parser.parse_args([str(EXAMPLE), "--no-writes"])
    args.json, args.sysfs, args.uart = False, None, None
    args.bus_width, args.seed = getattr(args, "bus_width", None), getattr(args, "seed", 1)
    out = io.StringIO()
    result = command.run(args, out)
    table = out.getvalue().splitlines()
    assert len(table) == 2 + len(CHECKS), table
    assert table[-1] == f"profile ideal, seed 1; simulator log: {result['log']}", table
    skipped = {row["check"] for row in result["checks"] if row["result"] == "skip"}
    assert skipped == _SKIPPED | {"memory_write_read", "memory_burst"}, result
    rows = {row["check"]: row for row in result["checks"]}
    assert rows["ram_bars"]["detail"] == "BAR0 not probed (writes disabled)", rows
    assert command.exit_status(result) == 0


@pytest.mark.heavy
def test_a_fault_fails_its_checks(tmp_path):
    # The example with its deliberate fault defined: TRDY#/STOP#/DEVSEL# released while
    # asserted after every last data phase. The checks that move data say so. Recorded
    # as waves: the model test_core_waves.py reads the waves of (one build for both).
    waves = tmp_path / "fault.vcd"
    checks = run_core_checks(faulty_example(), seed=2, waves="vcd", waves_file=waves)
    assert b"$enddefinitions" in waves.read_bytes()
    rows = {row["check"]: row for row in checks}
    assert SimTestCommand().exit_status({"checks": checks}) == 3
    assert rows["memory_read"]["result"] == "fail", rows
    assert "sts_released_asserted" in rows["memory_read"]["rules"], rows
    # The row's violation log names the rule, the line and slot 0 by the core's name.
    released = [entry for entry in rows["memory_read"]["log"]
                if entry["rule"] == "sts_released_asserted"]
    assert released and released[0]["agents"] == ["example_target_fault"], rows
    assert released[0]["line"] in ("trdy", "stop", "devsel"), rows
    cycles = [entry["cycle"] for entry in rows["memory_read"]["log"]]
    assert cycles == sorted(cycles) and len(cycles) <= 16, rows
    assert "violations (the first 16 of each check" in format_table(checks)
