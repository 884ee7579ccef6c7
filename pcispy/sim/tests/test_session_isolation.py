# SPDX-License-Identifier: BSD-2-Clause
"""Sessions are per checkout and per model: two checkouts' sessions side by side never see,
use or stop each other (even under one PCISPY_SESSIONS); a session whose pcispy sources
changed since it started is refused in one line naming `pcispy sim stop`; no lock or folder
outlives a session; a simulator whose launcher is killed (-9) ends with it, and so does the
simulator of a ``--fresh`` command killed so.
"""

import json
import os
import signal
import subprocess
import time

import pytest

from pcispy.app.tests._cli import pcispy_script, run_cli, script_env
from pcispy.sim import session

pytestmark = [pytest.mark.bfm, pytest.mark.runs_long]


def _in_checkout(monkeypatch, key):
    monkeypatch.setattr(session, "checkout_key", lambda: key)
    return session.sessions_root()


def _simulator_pid(root, name):
    with open(os.path.join(root, name, "info.json")) as f:
        return json.load(f)["pid"]


def _gone(pid, within=10.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not session._pid_alive(pid):
            return True
        time.sleep(0.1)
    return False


def _status():
    status, out, err = run_cli("--json", "sim", "status")
    assert status == 0, err
    return {row["name"]: row for row in json.loads(out)["sessions"]}


def test_two_checkouts_sessions_side_by_side(sessions, monkeypatch):
    base = os.path.dirname(sessions)
    try:
        root_a = _in_checkout(monkeypatch, "checkout-a")
        status, _, err = run_cli("target", "--initial-wait", "4")
        assert status == 0, err
        pid_a = _simulator_pid(root_a, "ideal-32bit")
        # Checkout B sees nothing of A's, stops nothing of it, and gets a board of its own.
        root_b = _in_checkout(monkeypatch, "checkout-b")
        assert os.path.dirname(root_a) == os.path.dirname(root_b) == base
        assert _status() == {}
        status, out, err = run_cli("sim", "stop")
        assert (status, out) == (0, "no simulated board was running\n"), err
        assert session._pid_alive(pid_a)
        status, out, err = run_cli("--json", "target", "--show")
        assert status == 0, err
        assert json.loads(out)["initial_wait"] == 0           # not A's setting
        pid_b = _simulator_pid(root_b, "ideal-32bit")
        assert pid_b != pid_a
        # A session of other sources (pcispy edited since it started) is refused.
        spec = os.path.join(root_b, "ideal-32bit", session.SPEC_NAME)
        with open(spec) as f:
            written = json.load(f)
        with open(spec, "w") as f:
            json.dump(dict(written, sources="0123456789abcdef"), f)
        status, out, err = run_cli("info")
        assert status == 2 and err.count("\n") == 1, err
        assert "session ideal-32bit runs the simulated board of pcispy as it was at " in err
        assert "`pcispy sim stop ideal-32bit` ends it" in err
        # `sim stop` without a name stops this checkout's only, and leaves no lock.
        status, out, err = run_cli("sim", "stop")
        assert status == 0 and out.startswith("session ideal-32bit: stopped after"), err
        assert _gone(pid_b) and session._pid_alive(pid_a)
        assert os.listdir(root_b) == []
        root_a = _in_checkout(monkeypatch, "checkout-a")
        assert list(_status()) == ["ideal-32bit"]
        status, out, err = run_cli("--json", "target", "--show")
        assert status == 0 and json.loads(out)["initial_wait"] == 4, err
        # A launcher killed with -9 takes its simulator with it; the session is then
        # reported as died and cleared, its folder and lock with it.
        launcher = session.running()[0].pid
        os.kill(launcher, signal.SIGKILL)
        assert _gone(pid_a), "the simulator outlived its launcher"
        assert _status()["ideal-32bit"]["state"] == "died"
        status, out, err = run_cli("sim", "stop")
        assert status == 0 and "its simulator had died; cleared" in out, err
        assert [entry for entry in os.listdir(root_a) if not entry.endswith(".log")] == []
    finally:
        for key in ("checkout-a", "checkout-b"):
            _in_checkout(monkeypatch, key)
            for left in session.running():
                left.kill()
                left.discard()


def test_a_fresh_command_killed_leaves_no_simulator(monkeypatch, tmp_path):
    """``kill -9`` of a ``--fresh`` command while its simulator runs: the simulator ends
    too (it would otherwise run its command to the end, unseen)."""
    command = subprocess.Popen([pcispy_script(), "--fresh", "--sim=rtc", "capture",
                                "--sim-limit", "1", "-o", str(tmp_path / "never.pcitrace")],
                               env=script_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    simulator = None
    while simulator is None and time.monotonic() < deadline:
        simulator = _child_named(command.pid, "pcisystem")
        time.sleep(0.2)
    assert simulator is not None, "the command started no simulator"
    time.sleep(2)                                  # well inside its run
    command.kill()
    command.wait()
    assert _gone(simulator), "the simulator outlived its command"
    assert os.listdir(tmp_path) == []


def _child_named(parent, name):
    """The pid of a process named ``name`` whose parent is ``parent`` (None: none)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        command, rest = stat.rsplit(")", 1)
        if command.split("(", 1)[1] == name and int(rest.split()[1]) == parent:
            return int(entry)
    return None
