# SPDX-License-Identifier: BSD-2-Clause
"""The errors the host tool expects, and how they reach the user.

Anything that can go wrong for a user (a missing device, a damaged trace file, a refused
register setting, an interrupted run) is raised as a :class:`PcispyError` subclass with a
message that says what happened and what to do; the CLI prints it as one line and exits
with status 2. An argument value a command finds unusable after parsing is a
:class:`UsageError`: the CLI ends it like argparse does (the command's usage line, one error
line, status 2). Any other exception is a bug in pcispy: one line saying so, status
:data:`EXIT_BUG` (the traceback only with ``--verbose``).
"""

__all__ = ["PcispyError", "TransportError", "TraceFormatError", "RefusedSetting",
           "PassiveBuild", "UsageError", "EXIT_ERROR", "EXIT_BUG"]

#: Exit status for an expected failure (same as argparse's usage errors).
EXIT_ERROR = 2
#: Exit status for an unexpected exception: a bug in pcispy, not a failure we expect.
EXIT_BUG = 1


class PcispyError(Exception):
    """An expected failure, reported to the user as one line."""


class TransportError(PcispyError):
    """The board cannot be reached (no device, no permission, wrong identity, ...)."""


class TraceFormatError(PcispyError):
    """A trace file is damaged or of an unknown format; the message names the offset."""


class RefusedSetting(PcispyError):
    """The board refused a register setting (its status register says why)."""


class PassiveBuild(PcispyError):
    """The board is a passive build (no PCI output drivers, only the spy and the checker)
    and the command needs more of it; the message says what and what to load instead."""
    def __init__(self, need):
        super().__init__(f"{need}, and this board is a passive build (no PCI output "
                         "drivers: the spy and the checker only); load an active bitstream "
                         "(built without --passive) for it")


class UsageError(PcispyError):
    """An argument value the command cannot take, found after parsing (ends with the
    command's usage line, like argparse's own errors)."""
