# SPDX-License-Identifier: BSD-2-Clause
"""The pcispy command line: options, error handling, local commands."""

import io
import json
import subprocess
import sys

import pytest

from pcispy.board.registers import REGISTER_MAP
from pcispy.app.cli import main

pytestmark = pytest.mark.host


def _run(*argv):
    out = io.StringIO()
    status = main(list(argv), out=out)
    return status, out.getvalue()


def test_regs_header_defines_every_register_at_its_address():
    status, text = _run("regs", "--header")
    assert status == 0
    for name, address, _ in REGISTER_MAP:
        macro = "PCISPY_" + name.replace(".", "_").upper()
        assert f"#define {macro} 0x{address:03x}u" in text
    assert text.rstrip().endswith("#endif /* PCISPY_REGS_H */")


def test_regs_map_json_is_one_object():
    status, text = _run("--json", "regs", "--map")
    assert status == 0
    data = json.loads(text)
    assert [r["name"] for r in data["registers"]] == REGISTER_MAP.names()


def test_bad_arguments_exit_2_with_a_usage_line():
    result = subprocess.run([sys.executable, "-m", "pcispy.app.cli", "--no-such-option"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: pcispy")
    assert "Traceback" not in result.stderr


def test_expected_failure_is_one_line_and_exit_2(capsys):
    # A device that is not there (the BDF is one no machine here has).
    status, _ = _run("--sysfs", "0000:fe:1f.7", "info")
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("pcispy: error: no PCI device 0000:fe:1f.7")


def test_check_list_rules_json_has_every_rule():
    from pcispy.pci.rules import DRIVER_RULES, RULES
    status, text = _run("--json", "check", "--list-rules")
    assert status == 0
    rules = json.loads(text)["rules"]
    assert len(rules) == len(RULES) + len(DRIVER_RULES) >= 55
    assert [r["id"] for r in rules] == (list(range(len(RULES))) +
                                        list(range(len(DRIVER_RULES))))
    assert all(r["description"] for r in rules)


def test_unknown_simulation_profile_is_refused_as_parsed_naming_the_known_ones(monkeypatch):
    import pcispy.sim.launcher
    import pcispy.sim.session
    from pcispy.app.tests._cli import run_cli
    for module in (pcispy.sim.launcher, pcispy.sim.session):
        monkeypatch.setattr(module, "run_feature", None)     # never reached
    status, _, err = run_cli("--sim=nosuch", "info")
    assert status == 2
    assert err.startswith("usage: pcispy ")
    last = err.splitlines()[-1]
    assert last.startswith("pcispy: error: argument --sim: unknown simulation profile "
                           "'nosuch'; profiles: ")
    assert "ideal" in last and "alphastation200" in last and "scenarios: rtc" in last


def test_passive_on_over_the_bus_silences_the_simulated_board():
    """``pcispy passive on`` over the simulated bus: the write is taken, then the board
    answers nothing (the identity read master-aborts), and the checker saw no rule broken
    by the board going quiet; ``passive`` alone reports an active board."""
    status, text = _run("--sim", "--json", "passive", "on")
    assert status == 0
    result = json.loads(text)
    assert (result["requested"], result["passive_on"], result["answering"]) == (True, None, False)
    assert result["checker"]["violations"] == {} and result["checker"]["contention"] == []
    status, text = _run("--sim", "passive")
    assert status == 0 and text.startswith("active: ")
