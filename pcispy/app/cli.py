# SPDX-License-Identifier: BSD-2-Clause
"""The ``pcispy`` command line.

Global options pick the transport and the output: ``--sim[=PROFILE]`` (the simulated
system, the default when no other transport is given: the board of a session that lasts
between commands, ``--session NAME`` picks another, ``--fresh`` a board for this command
only; :mod:`pcispy.sim.session`), ``--sysfs BDF``, ``--uart DEV``;
``--seed N`` for every randomised behaviour; ``--json`` prints one JSON object on stdout;
``--verbose`` shows details (and the traceback of an unexpected failure). A transport's
settings need that transport (``--baud`` and ``--uart-timeout`` with ``--uart``,
``--buffer`` with ``--sysfs``, ``--bus-width`` with the simulator): given without it, they
would do nothing, and the command line is refused. Files a command writes are checked as
they are parsed (:func:`~pcispy.host.command.output_path`), before any work starts.

Each command is a small class, kept beside its slice's features (:data:`COMMANDS` lists them
in order): its arguments, and either a *local* action (needs no board: ``check
--list-rules``, ``regs --header``, ``decode``) or a *feature*: an ``async def
feature(transport, **arguments) -> dict`` that runs against a board. With ``--sim`` the
feature runs inside the simulator's Python (cocotb) against the cached Verilator model, and
its result comes back here to be printed (docs/architecture.md, "How the pieces talk").

Expected failures end with one line ``pcispy: error: ...`` and exit status 2 (``--verbose``
adds the exception chain and where it was raised); invalid arguments end with the command's
usage line and exit status 2, whether argparse or the command finds them (:class:`UsageError`);
Ctrl-C ends with ``pcispy: interrupted`` and status 130; a closed output pipe ends quietly.
A command whose answer is a verdict says it with its status
(:meth:`~pcispy.host.command.CliCommand.exit_status`: ``check`` exits 3 when the bus broke
protocol rules).
Any other exception is a bug: one line saying so and where to report it, status 1, the
traceback only with ``--verbose``. ``--json`` and ``--verbose`` may also follow the command.
"""

import argparse
import functools
import json
import os
import sys
import traceback

from pcispy.app.report_feature import ReportCommand
from pcispy.board.identity_feature import (ConfigCommand, InfoCommand, ListCommand,
                                           PassiveCommand, RegsCommand)
from pcispy.check.check_feature import CheckCommand
from pcispy.dma.dma_feature import DmaCommand
from pcispy.dma.sweep_feature import SweepCommand
from pcispy.exerciser.pio_feature import PioCommand
from pcispy.exerciser.target_feature import TargetCommand
from pcispy.host.command import int_range, positive_seconds
from pcispy.host.errors import EXIT_BUG, EXIT_ERROR, PcispyError, UsageError
from pcispy.host.transports.sysfs import normalise_bdf, parse_buffer
from pcispy.irq.irq_feature import IrqCommand
from pcispy.sim import session
from pcispy.sim.coretest_command import SimTestCommand
from pcispy.sim.session import session_name
from pcispy.sim.session_command import SimCommand, known_profile, session_spec
from pcispy.spy.capture_feature import CaptureCommand
from pcispy.spy.readout_feature import ReadoutCommand
from pcispy.spy.stats_feature import StatsCommand
from pcispy.trace.command import DecodeCommand

__all__ = ["main", "build_parser", "commands", "COMMANDS", "bare_sim_is_ideal",
           "BUG_REPORTS"]

#: The largest seed (``--seed``): the simulated agents' random generators take 32 bits.
SEED_MAX = (1 << 32) - 1

#: Where users report a bug (named by the last-resort error handler).
BUG_REPORTS = "the pcispy issue tracker"


def _transport_option(parse):
    """An argparse ``type`` from a transport's parser, whose :class:`PcispyError` becomes
    argparse's usage error."""
    def parsed(text):
        try:
            return parse(text)
        except PcispyError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    parsed.__name__ = parse.__name__
    return parsed


#: Every command, in the order --help lists them: each slice keeps its commands beside its
#: features (pcispy/board/identity_feature.py, pcispy/dma/dma_feature.py, ...).
COMMANDS = (InfoCommand, RegsCommand, ConfigCommand, PassiveCommand, DecodeCommand, CheckCommand,
            DmaCommand, SweepCommand, IrqCommand, ListCommand, TargetCommand, PioCommand,
            CaptureCommand, ReadoutCommand, StatsCommand, ReportCommand, SimCommand,
            SimTestCommand)


@functools.cache
def commands():
    """An instance of every command of :data:`COMMANDS`, in order."""
    return [command() for command in COMMANDS]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="pcispy",
        description="Parallel-PCI exerciser and bus spy. Without a transport option the "
                    "simulated system is used (--sim=ideal).",
        epilog="Examples:\n  pcispy check --list-rules\n  pcispy --json regs --map\n"
               "  pcispy COMMAND --help    (each command's options and examples)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument("--sim", metavar="PROFILE", type=known_profile,
                           help="use the simulated PCI system; --sim=PROFILE picks the "
                                "host-bridge profile or scenario (plain --sim: ideal)")
    transport.add_argument("--sysfs", metavar="BDF",
                           type=_transport_option(normalise_bdf),
                           help="a board in a PCI slot of this Linux machine, e.g. 0000:03:00.0")
    transport.add_argument("--uart", metavar="DEV",
                           help="the board's UART side channel, e.g. /dev/ttyUSB0")
    # The transport settings default to None so that one given without its transport is
    # seen (and refused: _refuse_idle_options); their real defaults are _TRANSPORT_DEFAULTS.
    parser.add_argument("--baud", type=int_range(300, 12_000_000),
                        help="with --uart: the side channel's line rate (default: "
                             f"{_TRANSPORT_DEFAULTS['baud']})")
    parser.add_argument("--uart-timeout", type=positive_seconds, metavar="SECONDS",
                        help="with --uart: time an answer may take beyond its bytes' wire "
                             "time before the request is sent again (default: "
                             f"{_TRANSPORT_DEFAULTS['uart_timeout']})")
    parser.add_argument("--buffer", metavar="ADDR:SIZE",
                        type=_transport_option(parse_buffer),
                        help="with --sysfs: physical memory reserved at boot for DMA "
                             "(memmap=SIZE$ADDR), e.g. 0x7f000000:16M")
    parser.add_argument("--bus-width", type=int, choices=(32, 64),
                        help="bus width of the simulated system (default: "
                             f"{_TRANSPORT_DEFAULTS['bus_width']})")
    parser.add_argument("--seed", type=int_range(0, SEED_MAX), default=1,
                        help=f"seed of every randomised behaviour, 0..{SEED_MAX} (default: 1)")
    parser.add_argument("--session", metavar="NAME", type=_transport_option(session_name),
                        help="with the simulator: the session (a simulated board that stays "
                             "up between commands) to use or start (default: one per "
                             "profile, bus width and seed; see `pcispy sim --help`)")
    parser.add_argument("--fresh", action="store_true", default=None,
                        help="with the simulator: a fresh simulated board for this command "
                             "only, not a session's (default when PCISPY_FRESH_SIM is set)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object on stdout instead of tables")
    parser.add_argument("--verbose", "-v", action="store_true", help="show details")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands():
        epilog = "Examples:\n" + "\n".join(f"  {e}" for e in command.examples)
        p = sub.add_parser(command.name, help=command.help, description=command.help,
                           epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_arguments(p)
        # The output options also after the command (`pcispy check --list-rules --json`);
        # absent there, they keep the value given (or defaulted) before the command.
        for flags, text in ((("--json",), "print one JSON object on stdout instead of tables"),
                            (("--verbose", "-v"), "show details")):
            try:
                p.add_argument(*flags, action="store_true", default=argparse.SUPPRESS,
                               help=text)
            except argparse.ArgumentError:
                pass                     # the command has an option of that name itself
        p.set_defaults(handler=command, command_parser=p)
    return parser


#: The transport settings' values when not given: ``{dest: value}``.
_TRANSPORT_DEFAULTS = {"baud": 115200, "uart_timeout": 0.25, "bus_width": 32}
#: Each transport setting and the transport option it needs: ``(option, dest, transport
#: option, transport dest)``.
_TRANSPORT_SETTINGS = (("--baud", "baud", "--uart", "uart"),
                       ("--uart-timeout", "uart_timeout", "--uart", "uart"),
                       ("--buffer", "buffer", "--sysfs", "sysfs"))
#: The simulator's settings, refused with a board (``--bus-width`` is checked apart).
_SIMULATOR_SETTINGS = (("--session", "session"), ("--fresh", "fresh"))


def _refuse_idle_options(parser, args):
    """End with the usage line (exit 2) when a transport setting is given without its
    transport (it would do nothing: ``--baud`` with the simulator, ``--bus-width`` with a
    board); then fill in the settings' defaults."""
    for option, dest, transport, transport_dest in _TRANSPORT_SETTINGS:
        if getattr(args, dest) is not None and getattr(args, transport_dest) is None:
            parser.error(f"{option} applies to {transport} only; without {transport} it "
                         "would do nothing")
    board = "--sysfs" if args.sysfs is not None else "--uart" if args.uart is not None \
        else None
    if args.bus_width is not None and board:
        parser.error(f"--bus-width sets the simulated system's bus; with {board} the "
                     "board's own bus width applies")
    for option, dest in _SIMULATOR_SETTINGS:
        if getattr(args, dest) is not None and board:
            parser.error(f"{option} applies to the simulator only; with {board} it would "
                         "do nothing")
    if args.fresh and args.session is not None:
        parser.error("--fresh asks for a board of this command's own; --session for a "
                     "session's: give one of them")
    for dest, value in _TRANSPORT_DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, value)


def bare_sim_is_ideal(argv):
    """A bare ``--sim`` means the ideal profile; its value is only ever given as
    ``--sim=PROFILE``, so ``--sim info`` is the ideal profile and the info command."""
    return ["--sim=ideal" if arg == "--sim" else arg for arg in argv]


def _simulate(args, feature, arguments):
    """Run ``feature`` in the simulated system the global options describe (the transport
    :func:`~pcispy.host.command.run_feature` falls back to): on the board of the session
    they name (started if none runs), or with ``--fresh`` on a board of its own."""
    if args.fresh_board:
        # the launcher (the system's configuration and model, Amaranth and the bus models'
        # declarations) loads only when a feature runs on a fresh simulated board
        from pcispy.sim import launcher
        config = launcher.machine_config(args.sim or "ideal", width=args.bus_width)
        session.build_with_progress(config)
        return launcher.run_feature(feature, arguments, config, profile=args.sim or "ideal",
                                    seed=args.seed, verbose=args.verbose)
    return session.run_feature(feature, arguments, session_spec(args), verbose=args.verbose)


def _fresh_board(args):
    """Whether a feature runs on a simulated board started for this command only
    (``--fresh``, or :data:`~pcispy.sim.session.FRESH_ENV` without ``--session``): what
    it held is gone when the command ends."""
    if args.sysfs is not None or args.uart is not None:
        return False
    return bool(args.fresh or (args.fresh is None and args.session is None
                               and session.fresh_by_default()))


def main(argv=None, out=None):
    """Run the CLI; return the exit status (argparse's usage errors and --help raise
    SystemExit)."""
    try:
        return _main(argv, out)
    except KeyboardInterrupt:           # (also while the commands' modules load)
        print("pcispy: interrupted", file=sys.stderr)
        return 130


def _main(argv, out):
    out = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(bare_sim_is_ideal(sys.argv[1:] if argv is None else argv))
    # (parse_args exits 2 with a usage line on bad arguments, as does this)
    _refuse_idle_options(parser, args)
    args.simulate = functools.partial(_simulate, args)
    args.fresh_board = _fresh_board(args)
    try:
        result = args.handler.run(args, out)
        if args.json and result is not None:
            out.write(json.dumps(result, indent=None) + "\n")
        out.flush()                      # a closed pipe shows here, not at exit
        status = 0 if result is None else args.handler.exit_status(result)
    except UsageError as error:
        args.command_parser.error(str(error))      # usage line, one error line, exit 2
    except PcispyError as error:
        print(f"pcispy: error: {_one_line(error)}", file=sys.stderr)
        if args.verbose:
            _print_details(error)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("pcispy: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours.
        _discard_stdout()
        return 0
    except Exception as error:
        print(f"pcispy: internal error: {type(error).__name__}: {_one_line(error)}. This is "
              f"a bug in pcispy; please report it to {BUG_REPORTS} with the command line"
              + (" and the traceback below" if args.verbose else
                 " and what `--verbose` adds"), file=sys.stderr)
        if args.verbose:
            traceback.print_exception(error, file=sys.stderr)
        return EXIT_BUG
    return status


def _one_line(error):
    return " ".join(str(error).split())


def _print_details(error):
    """``--verbose`` on an expected failure: where it was raised, and what caused it (the
    chain, also where a message replaced its cause with ``from None``)."""
    frames = traceback.extract_tb(error.__traceback__)
    if frames:
        frame = frames[-1]
        print(f"pcispy: detail: {type(error).__name__} raised in {frame.name} "
              f"({frame.filename}:{frame.lineno})", file=sys.stderr)
    cause, seen = error.__cause__ or error.__context__, set()
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        print(f"pcispy: detail: caused by {type(cause).__name__}: {_one_line(cause)}",
              file=sys.stderr)
        cause = cause.__cause__ or cause.__context__


def _discard_stdout():
    """Point standard output at /dev/null, so that the interpreter's last flush at exit
    does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass                             # not a file descriptor (e.g. captured in a test)


if __name__ == "__main__":
    sys.exit(main())
