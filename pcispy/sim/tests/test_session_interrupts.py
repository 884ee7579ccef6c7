# SPDX-License-Identifier: BSD-2-Clause
"""Ctrl-C stops the work it interrupts: a ``--sim`` command interrupted (SIGINT) at any
point ends at once, its session ends the command within a few thousand bus clocks and
answers the next command within 5 s of the interrupt, and no half-written file is left
without a way to finish it. Passive mode on the simulated board has a way out that exists
in the simulator (``pcispy sim reset``: RST#).
"""

import json
import os
import random
import signal
import subprocess
import time

import pytest

from pcispy.app.tests._cli import pcispy_script, run_cli, script_env
from pcispy.sim import session

pytestmark = [pytest.mark.bfm, pytest.mark.runs_long]

#: Seconds within which the session must answer again after the interrupt (issue 46).
ANSWER_WITHIN_S = 5.0
#: The long commands a user interrupts, by what they do: a capture that waits for its
#: trigger and reads out, readings every interval, the whole report, a megabyte of DMA.
LONG_COMMANDS = {
    "capture": ["capture", "-o", "{tmp}/cap.pcitrace"],
    "stats": ["stats", "--watch", "--interval", "0.002", "--samples", "50"],
    "report": ["report", "--quick", "-o", "{tmp}/report"],
    "dma": ["dma", "--len", "1M"],
}
#: Interrupts per command, at random points of its run (seeded).
POINTS = 2
SEED = 46


def _pcispy(*argv):
    """The ``pcispy`` command as a user runs it (the venv's script, with this checkout's
    code: :func:`~pcispy.app.tests._cli.script_env`)."""
    return [pcispy_script(), "--sim=rtc", *argv]


def _answer_latency(started):
    """Seconds from ``started`` until the rtc session serves a request (None: not within
    :data:`ANSWER_WITHIN_S`)."""
    target = session.Session(os.path.join(session.sessions_root(), "rtc-32bit"))
    left = ANSWER_WITHIN_S - (time.monotonic() - started)
    try:
        target.request({"op": "status"}, timeout=max(0.1, left))
    except TimeoutError:
        return None
    return time.monotonic() - started


def test_ctrl_c_stops_the_command_and_the_session_answers_at_once(sessions, tmp_path):
    status, _, err = run_cli("--sim=rtc", "info")          # the session, started once
    assert status == 0, err
    rng = random.Random(SEED)
    latencies = {}
    for name, argv in LONG_COMMANDS.items():
        for point in range(POINTS):
            delay = rng.uniform(1.0, 6.0)
            work = tmp_path / f"{name}{point}"
            work.mkdir()
            command = [a.replace("{tmp}", str(work)) for a in argv]
            process = subprocess.Popen(_pcispy(*command), env=script_env(),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       text=True)
            time.sleep(delay)
            process.send_signal(signal.SIGINT)
            interrupted = time.monotonic()
            _, err = process.communicate(timeout=30)
            took = _answer_latency(interrupted)
            where = f"{name} interrupted after {delay:.2f} s (seed {SEED})"
            print(f"{where}: exit {process.returncode}, session answered after "
                  f"{'never' if took is None else f'{took:.2f} s'}")
            assert took is not None, f"{where}: the session did not answer within " \
                f"{ANSWER_WITHIN_S} s; {err}"
            latencies[(name, point)] = took
            if process.returncode == 0:
                continue                    # it had finished before the interrupt
            assert process.returncode == 130 and "pcispy: interrupted" in err, (where, err)
            assert "Traceback" not in err, (where, err)
            # Nothing half-written is left without a way to finish it: no streaming file,
            # a kept capture names the command that completes it, no empty report folder.
            left = sorted(os.listdir(work))
            assert not any(entry.endswith(".part") for entry in left), (where, left)
            if "cap.pcitrace" in left:
                assert "readout --resume" in err, (where, err)
            assert "report" not in left or os.listdir(work / "report"), (where, left)
    print(f"latencies: {latencies}")
    # The board is the session's still, and answers like before.
    status, out, err = run_cli("--sim=rtc", "--json", "info")
    assert status == 0 and json.loads(out)["transport"]["session"] == "rtc-32bit", err


def test_passive_mode_on_the_simulated_board_ends_with_sim_reset(sessions):
    status, out, err = run_cli("passive", "on")
    assert status == 0, err
    assert out == "passive: the board answers nothing more over the PCI bus; `pcispy sim " \
                  "reset` (RST#) ends it\n"
    status, out, err = run_cli("info")
    assert status == 2 and err.count("\n") == 1, err
    assert "master_abort; the board does not answer (passive mode? `pcispy sim reset` " \
           "pulses RST#, which ends it)" in err
    status, out, err = run_cli("passive")
    assert status == 0 and "(passive mode? `pcispy sim reset` (RST#) ends it)" in out, err
    status, out, err = run_cli("sim", "reset")
    assert status == 0 and out.startswith("RST# for 8 clocks at bus clock "), err
    assert "  BAR0: memory at 0x80000000, 4096 bytes\n" in out, out
    status, out, err = run_cli("passive")
    assert (status, out) == (0, "active: the board answers as a target and may master the "
                                "bus\n"), err
    status, out, err = run_cli("--json", "info")
    assert status == 0 and json.loads(out)["transport"]["session"] == "ideal-32bit", err
