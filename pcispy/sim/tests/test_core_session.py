# SPDX-License-Identifier: BSD-2-Clause
"""A session with a core of one's own in slot 0 (``pcispy sim start --core``): the core
keeps running between commands, answers configuration reads and target reads and writes
at its BARs, each command reports what both monitors saw, and pcispy's board commands
are refused in one line."""

import json

import pytest

from pcispy.app.tests._cli import run_cli
from pcispy.host.errors import EXIT_ERROR
from pcispy.sim import session
from pcispy.sim.tests.core_examples import EXAMPLE

pytestmark = pytest.mark.core

NAME = "core-example_target-ideal-32bit"


def _cli(*argv):
    status, out, err = run_cli(*argv)
    assert status == 0, err
    return out


def test_a_core_session_keeps_the_core_between_commands(sessions):
    out = _cli("sim", "start", "--core", str(EXAMPLE))
    assert out.startswith(f"session {NAME}: core core.json in slot 0, profile ideal"), out
    config = json.loads(_cli("--json", "sim", "config", "--core", str(EXAMPLE)))
    assert config["config"][:4] == [0x09, 0x12, 0x01, 0x00]      # 1209:0001
    assert config["bars"]["0"]["kind"] == "memory" and config["bars"]["0"]["size"] == 1024
    assert config["checker"]["violations"] == {} and config["checker"]["drivers"] == {}
    out = _cli("sim", "write", "--core", str(EXAMPLE), "0", "0x10", "0xdeadbeef", "0x1234")
    assert out == "BAR0 0x00000010: wrote 2 words\n" \
                  "bus rules: all kept (protocol checker and resolver)\n", out
    # Another command, the same core: the words are still there.
    out = _cli("--session", NAME, "sim", "read", "0", "0x10", "--count", "2")
    assert out.splitlines()[:2] == ["BAR0 0x00000010: 0xdeadbeef",
                                    "BAR0 0x00000014: 0x00001234"], out
    status = {row["name"]: row for row in json.loads(_cli("--json", "sim", "status"))["sessions"]}
    assert status[NAME]["spec"]["core"] == str(EXAMPLE) and status[NAME]["commands"] == 3


def test_board_commands_are_refused_on_a_core(sessions):
    _cli("sim", "start", "--core", str(EXAMPLE))
    status, out, err = run_cli("--session", NAME, "regs")
    assert status == EXIT_ERROR and out == "", (status, out, err)
    assert err.strip() == (f"pcispy: error: session {NAME} has the core example_target in slot "
                           "0, not pcispy's board, which this command needs; for the core "
                           f"use `pcispy --session {NAME} sim config|read|write`"), err


def test_a_bad_description_is_one_line(sessions, tmp_path):
    bad = tmp_path / "core.json"
    bad.write_text('{"top": "t", "pins": {}, "sourcez": []}')
    status, out, err = run_cli("sim", "start", "--core", str(bad))
    assert status == EXIT_ERROR and "unknown key 'sourcez'" in err and len(err.splitlines()) == 1, err
    assert session.running() == []
