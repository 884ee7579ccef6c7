# SPDX-License-Identifier: BSD-2-Clause
"""Simulated-board sessions (``pcispy sim start|stop|status``): a ``--sim`` command runs on
a board that keeps its state between commands, like a board in a slot; ``--fresh`` and
other session names get boards of their own; a simulator that died is reported once, in
one line naming its log, and replaced by the next command; an idle session ends by itself.
"""

import json
import os
import time

import pytest

from pcispy.app.tests._cli import run_cli
from pcispy.sim import session

pytestmark = pytest.mark.bfm

#: First-data clocks of the default exerciser target (medium decode, no wait states) under
#: the ideal host bridge: write, read.
DEFAULT_FIRST_DATA = (2, 3)
#: The same after ``target --initial-wait 4``: the initial wait delays TRDY# to clock 6
#: of either direction (a read's turnaround lies inside it).
WAITED_FIRST_DATA = (6, 6)


def _first_data(*options):
    status, out, err = run_cli(*options, "--json", "pio", "--size", "4K")
    assert status == 0, err
    result = json.loads(out)
    return (result["write"]["first_data_clocks"], result["read"]["first_data_clocks"]), result


def _status():
    status, out, err = run_cli("--json", "sim", "status")
    assert status == 0, err
    return {row["name"]: row for row in json.loads(out)["sessions"]}


def _simulator_pid(root, name):
    with open(os.path.join(root, name, "info.json")) as f:
        return json.load(f)["pid"]


def test_a_session_keeps_the_board_between_commands_until_stopped(sessions):
    first, before = _first_data()
    assert first == DEFAULT_FIRST_DATA
    status, out, err = run_cli("target", "--initial-wait", "4")
    assert status == 0 and "initial wait 4 clocks" in out, err
    waited, after = _first_data()
    assert waited == WAITED_FIRST_DATA
    # A fresh board for one command does not see the session's settings.
    fresh, _ = _first_data("--fresh")
    assert fresh == DEFAULT_FIRST_DATA
    row = _status()["ideal-32bit"]
    assert row["state"] == "ready" and row["commands"] == 3
    assert row["spec"] == {"profile": "ideal", "width": 32, "seed": 1, "name": "ideal-32bit",
                           "core": ""}
    # Bus time carries on from command to command: both PIO runs' clocks are in it.
    clocks = sum(result[side]["clocks"] for result in (before, after)
                 for side in ("write", "read"))
    assert row["cycle"] > clocks
    pid = _simulator_pid(sessions, "ideal-32bit")
    status, out, err = run_cli("sim", "stop")
    assert status == 0, err
    assert out.startswith("session ideal-32bit: stopped after 3 commands, ")
    for _ in range(100):
        if not session._pid_alive(pid):
            break
        time.sleep(0.05)
    assert not session._pid_alive(pid)
    assert _status() == {}
    assert not os.path.exists(os.path.join(sessions, "ideal-32bit"))


def test_a_simulator_that_died_is_reported_in_one_line_and_the_next_command_starts_afresh(
        sessions):
    status, _, err = run_cli("target", "--initial-wait", "4")
    assert status == 0, err
    os.kill(_simulator_pid(sessions, "ideal-32bit"), 9)
    status, out, err = run_cli("--json", "pio")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "session ideal-32bit" in err and "died" in err
    log = err.split("its log is ")[1].split(";")[0]
    assert os.path.isfile(log) and log.startswith(sessions)
    assert _status() == {}
    # The next command starts a fresh board: the dead one's settings are gone.
    first, _ = _first_data()
    assert first == DEFAULT_FIRST_DATA


def test_named_sessions_are_boards_of_their_own_and_end_when_idle(sessions):
    status, out, err = run_cli("--session", "brief", "sim", "start", "--idle-timeout", "2")
    assert status == 0, err
    assert out.startswith("session brief: profile ideal, 32-bit bus, seed 1; started, ends "
                          "after 2s without a command")
    # The same name cannot be another board.
    status, _, err = run_cli("--session", "brief", "--seed", "5", "info")
    assert status == 2 and "session brief simulates profile ideal, 32-bit bus, seed 1, " \
        "not profile ideal, 32-bit bus, seed 5" in err
    status, out, err = run_cli("--session", "brief", "--json", "info")
    assert status == 0 and json.loads(out)["transport"]["session"] == "brief"
    # Two seconds without a command: it ends by itself, cleanly (no log of a death).
    deadline = time.monotonic() + 60
    while "brief" in _status() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _status() == {}
    assert not any(name.endswith(".log") for name in os.listdir(sessions))


@pytest.mark.parametrize("argv, says", [
    (("--fresh", "--session", "a", "info"), "give one of them"),
    (("--uart", "/dev/null", "--session", "a", "info"), "--session applies to the simulator"),
    (("--sysfs", "0000:01:00.0", "--fresh", "info"), "--fresh applies to the simulator"),
    (("--session", "../up", "info"), "session name '../up'"),
    (("sim", "start", "--profile", "nosuch"), "unknown simulation profile 'nosuch'"),
    (("sim", "start", "--idle-timeout", "0"), "positive, finite number of seconds"),
])
def test_session_options_are_refused_as_parsed(sessions, monkeypatch, argv, says):
    monkeypatch.setattr(session, "start", None)            # never reached
    status, out, err = run_cli(*argv)
    assert status == 2 and out == "" and err.startswith("usage: pcispy")
    assert says in err.splitlines()[-1]


def test_stopping_a_session_that_does_not_run_names_the_ones_that_do(sessions):
    status, out, err = run_cli("sim", "stop", "nosuch")
    assert (status, out) == (2, "")
    assert err == "pcispy: error: no session nosuch (running: none)\n"
    status, out, err = run_cli("sim", "stop")
    assert (status, out, err) == (0, "no simulated board was running\n", "")
