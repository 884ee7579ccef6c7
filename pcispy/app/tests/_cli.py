# SPDX-License-Identifier: BSD-2-Clause
"""The CLI run in the test's own process, for the host tests, or as the venv's ``pcispy``
script in a process of its own (:func:`pcispy_script`, :func:`script_env`)."""

import contextlib
import io
import os
import re
import sys
from pathlib import Path

from pcispy.app import cli

__all__ = ["run_cli", "without_build_progress", "pcispy_script", "script_env"]

#: The checkout whose tests these are.
CHECKOUT = Path(__file__).resolve().parents[3]

#: The lines pcispy.sim.build_progress writes while a command prepares a simulated model.
_PROGRESS = re.compile(r"^pcispy: (model \S+: step \d+ of \d+, |building the simulated "
                       r"system's model |the simulated system \S+ is ready after ).*\n?",
                       re.MULTILINE)


def without_build_progress(text):
    """``text`` (a command's stderr) without the model build's progress lines: whichever
    test starts a kind of simulated board first prepares its model, and says so."""
    return _PROGRESS.sub("", text)


def run_cli(*argv):
    """``(status, stdout, stderr)`` of ``pcispy argv`` in this process, stderr without
    the model build's progress lines (:func:`without_build_progress`)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(list(argv), out=out)
        except SystemExit as exit_:
            status = exit_.code
    return status, out.getvalue(), without_build_progress(err.getvalue())


def pcispy_script():
    """The venv's ``pcispy`` script, the command a user types."""
    return str(Path(sys.executable).with_name("pcispy"))


def script_env():
    """The environment for :func:`pcispy_script` run as a process of its own: this one's,
    with this checkout first on PYTHONPATH. The script imports pcispy from where the venv
    installed it (an editable install names one checkout): several checkouts sharing a
    venv would otherwise run another checkout's code, in that one's sessions, with models
    built in that one's build folder."""
    path = [str(CHECKOUT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))
