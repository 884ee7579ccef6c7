# SPDX-License-Identifier: BSD-2-Clause
"""The command framework every CLI command is written in: :class:`CliCommand`, the argument
types the commands share, and :func:`run_feature`, which runs a feature on the board the
global options select.

Each slice keeps its commands beside its features (``pcispy/spy/capture_feature.py`` has
``capture`` and ``CaptureCommand``); :mod:`pcispy.app.cli` lists them and parses the
global options.
"""

import argparse
import os

from pcispy.host.errors import PcispyError, UsageError
from pcispy.host.transports import sysfs, uart

#: How a trace file begins (:data:`pcispy.trace.file.MAGIC`, which declares it; the host
#: room stands below the trace room, and a test holds the two equal).
TRACE_MAGIC = b"PCITRACE"

__all__ = ["TRACE_MAGIC", "CliCommand", "int_range", "output_path", "writable_path", "holds_trace",
           "refuse_overwrite", "parse_size", "positive_seconds", "run_feature"]


class CliCommand:
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


def parse_size(text):
    """``"4096"``, ``"64K"``, ``"1M"`` (K = 1024, M = 1048576), ``"0x1000"`` -> bytes."""
    text = str(text).strip()
    scale = {"k": 1 << 10, "m": 1 << 20}.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale != 1 else text
    try:
        value = int(digits, 0) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size (a number of bytes, with K or M for KiB or MiB)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a size cannot be negative")
    return value


def writable_path(path):
    """An argparse ``type`` for a file to write: refuses, as the command line is parsed and
    so before any work starts, a path that cannot be written (empty, a directory, in a
    directory that is missing or not writable, an existing file that is not writable),
    naming the path."""
    reason = _unwritable(path)
    if reason:
        raise argparse.ArgumentTypeError(f"cannot write {path!r}: {reason}")
    return path


def output_path(path):
    """An argparse ``type`` for a file a command derives from other data (an export, a
    plot, a log): :func:`writable_path`, and never an existing capture (a ``.pcitrace``
    file, found by its magic, whatever its name): a capture cannot be made again, so no
    export or plot may replace it, the trace being decoded least of all."""
    writable_path(path)
    if holds_trace(path):
        raise argparse.ArgumentTypeError(
            f"{path!r} holds a pcispy capture (a trace file): pcispy writes no export or "
            "plot over a capture; give another file name")
    return path


def holds_trace(path):
    """Whether ``path`` is an existing file that begins as a ``.pcitrace`` file does."""
    try:
        with open(path, "rb") as file:
            return file.read(len(TRACE_MAGIC)) == TRACE_MAGIC
    except OSError:
        return False


def refuse_overwrite(path, *, force=False, option="--force"):
    """Refuse (a :class:`UsageError`) to write ``path`` when a file is there already,
    unless ``force``: what a command records (a capture) cannot be made again, and
    neither can the file it would replace."""
    if os.path.lexists(path) and not force:
        kind = "a pcispy capture" if holds_trace(path) else "a file"
        raise UsageError(f"{path} exists ({kind}); give another name, or {option} to "
                         "replace it")


def _unwritable(path):
    """Why ``path`` cannot be written as a file (None: it can, as far as can be told
    without writing it)."""
    if not path:
        return "give a file name"
    if os.path.isdir(path):
        return "it is a directory; give a file name in it"
    parent = os.path.dirname(path) or os.curdir
    if not os.path.exists(parent):
        return f"there is no directory {parent}"
    if not os.path.isdir(parent):
        return f"{parent} is not a directory"
    if os.path.exists(path):
        return None if os.access(path, os.W_OK) else "no permission to write it"
    return None if os.access(parent, os.W_OK | os.X_OK) else \
        f"no permission to create files in {parent}"


def run_feature(args, feature, **arguments):
    """Run ``feature`` (an ``async def feature(transport, **arguments)``) against the
    transport the options select: ``--sysfs``, ``--uart``, else the simulated system, which
    the CLI supplies as ``args.simulate(feature, arguments)`` (so this layer never imports
    the simulator)."""
    # `is not None`: an empty --uart "" names no device; it must not fall through to the
    # simulator (--sysfs is checked by argparse).
    if args.sysfs is not None:
        return sysfs.run(feature, arguments, args.sysfs, buffer=args.buffer)
    if args.uart is not None:
        return uart.run(feature, arguments, args.uart, baud=args.baud,
                           latency_s=args.uart_timeout)
    return args.simulate(feature, arguments)
