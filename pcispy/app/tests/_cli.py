# SPDX-License-Identifier: BSD-2-Clause
"""The CLI run in the test's own process, for the host tests."""

import contextlib
import io
import re

from pcispy.app import cli

__all__ = ["run_cli", "without_build_progress"]

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
