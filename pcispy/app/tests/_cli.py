# SPDX-License-Identifier: BSD-2-Clause
"""The CLI run in the test's own process, for the host tests."""

import contextlib
import io

from pcispy.app import cli

__all__ = ["run_cli"]


def run_cli(*argv):
    """``(status, stdout, stderr)`` of ``pcispy argv`` in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(list(argv), out=out)
        except SystemExit as exit_:
            status = exit_.code
    return status, out.getvalue(), err.getvalue()
