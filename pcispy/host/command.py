# SPDX-License-Identifier: BSD-2-Clause
"""The command framework every CLI command is written in: :class:`Command`, the argument
types the commands share, and :func:`run_feature`, which runs a feature on the board the
global options select.

Each slice keeps its commands beside its features (``pcispy/spy/capture_feature.py`` has
``capture`` and ``CaptureCommand``); :mod:`pcispy.app.cli` lists them and parses the
global options.
"""

import argparse

from pcispy.host.errors import PcispyError

__all__ = ["Command", "int_range", "positive_seconds", "run_feature"]


class Command:
    """One subcommand. Subclasses set ``name``, ``help``, ``examples`` and implement
    ``add_arguments`` and ``run``."""
    name = ""
    help = ""
    examples = ()

    def add_arguments(self, parser):
        pass

    def run(self, args, out):
        """Do the command; return a JSON-able result (printed with ``--json``) or None."""
        raise PcispyError(f"{self.name}: not available")

    def exit_status(self, result):
        """The exit status after :meth:`run` returned ``result`` (not None): 0 unless the
        command's answer is a verdict (``check``: violations seen)."""
        return 0


def int_range(low, high, *, parse=None):
    """An argparse ``type``: a whole number (decimal or 0x hex; or what the argparse type
    ``parse`` reads) in ``low..high``."""
    def whole_number(text):
        try:
            value = int(text, 0) if parse is None else parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{high}")
        return value
    return whole_number


def positive_seconds(text):
    """An argparse ``type``: a finite positive number of seconds (not 0, NaN or inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: give a positive, finite number of seconds")
    return value


def run_feature(args, feature, **arguments):
    """Run ``feature`` (an ``async def feature(transport, **arguments)``) against the
    transport the options select: ``--sysfs``, ``--uart``, else the simulated system, which
    the CLI supplies as ``args.simulate(feature, arguments)`` (so this layer never imports
    the simulator)."""
    # `is not None`: an empty --uart "" names no device; it must not fall through to the
    # simulator (--sysfs is checked by argparse).
    if args.sysfs is not None:
        from pcispy.host.transports.sysfs import run as run_on_sysfs
        return run_on_sysfs(feature, arguments, args.sysfs, buffer=args.buffer)
    if args.uart is not None:
        from pcispy.host.transports.uart import run as run_on_uart
        return run_on_uart(feature, arguments, args.uart, baud=args.baud,
                           latency_s=args.uart_timeout)
    return args.simulate(feature, arguments)
