# SPDX-License-Identifier: BSD-2-Clause
"""The ``pcispy`` command's entry point: Ctrl-C is a quiet ``pcispy: interrupted`` (status
130) from the first instant, even while the CLI's modules are still being imported, which
takes a moment; from then on :func:`pcispy.app.cli.main` handles it."""

import signal
import sys

__all__ = ["main"]


def _interrupted(signum, frame):
    print("pcispy: interrupted", file=sys.stderr)
    raise SystemExit(130)


def main():
    """Run ``pcispy`` with the command line of this process; return its exit status."""
    signal.signal(signal.SIGINT, _interrupted)
    # Waits: Ctrl-C is to be handled before these modules load, which takes a moment.
    from pcispy.app.cli import main as cli_main
    signal.signal(signal.SIGINT, signal.default_int_handler)
    status = cli_main()
    # The command is done: a Ctrl-C from here to the exit changes nothing.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return status


if __name__ == "__main__":
    sys.exit(main())
