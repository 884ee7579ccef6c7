# SPDX-License-Identifier: BSD-2-Clause
"""Program the exerciser target's response, and the ``pcispy target`` command.

:func:`target` changes only the settings it is given (the others keep the values the board
holds), writes each register of the ``target`` block (pcispy/exerciser/registers.py) and reads
``target.status`` back after every write: the board refuses a value it cannot honour
(the register keeps its old value and a ``bad_*`` bit says why), and the feature then
raises :class:`~pcispy.host.errors.RefusedSetting` naming the reasons from the register
map's own field documentation. ``show`` only reads the settings and counters.
"""

import argparse

from pcispy.pci.codes import DevselSpeed
from pcispy.board.registers import REGISTER_MAP
from pcispy.exerciser.registers import decode_resets, TARGET, TARGET_MAX_INITIAL_LATENCY
from pcispy.host.board import Board
from pcispy.host.command import CliCommand, run_feature
from pcispy.host.errors import PcispyError, RefusedSetting

__all__ = ["target", "TargetCommand", "DEVSEL_SPEEDS", "CORRUPT_MODES", "parse_range",
           "format_settings"]

#: DEVSEL# speeds by name (``--devsel``).
DEVSEL_SPEEDS = {speed.name.lower(): speed for speed in DevselSpeed}
#: PAR corruption modes (``--corrupt-par``): off, every read word, the next read word.
CORRUPT_MODES = ("off", "every", "next")

_REGISTERS = {reg.name: reg for reg in TARGET.registers}
_STATUS = _REGISTERS["status"]
#: The refusal bits of ``target.status`` and what each means (from the register map).
_REFUSALS = {f.name: f.doc.removeprefix("refused: ") for f in _STATUS.fields
             if f.name.startswith("bad_")}
_COUNTERS = ("attempts", "retried", "aborted", "corrupted")


def _field_limit(register, field):
    return (1 << _REGISTERS[register].field(field).width) - 1


def parse_range(text):
    """``"FIRST:LAST"`` (byte offsets, decimal or 0x hex, inclusive) or ``"off"``."""
    if text.strip().lower() == "off":
        return None
    first, sep, last = text.partition(":")
    try:
        if not sep:
            raise ValueError
        first, last = int(first, 0), int(last, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not FIRST:LAST (byte offsets in the window) or 'off'") from None
    if not 0 <= first < 1 << 32 or not 0 <= last < 1 << 32:
        raise argparse.ArgumentTypeError(f"{text!r}: offsets are 32-bit")
    return first, last


#: What to do instead, for each refusal bit the way out does not depend on the board.
_WAYS_OUT = {
    "bad_latency": "--allow-noncompliant accepts it (the PCI specification allows 16 "
                   "clocks to the first data phase)",
    "bad_wait": "--allow-noncompliant accepts a later data phase over 8 clocks; a wait needs "
                "--wait-every 1 or more",
    "bad_retry": "--allow-noncompliant accepts retrying every attempt (no transaction "
                 "would complete)",
    "bad_abort": "give --abort FIRST:LAST with FIRST <= LAST",
}


async def _way_out(board, name):
    """What the user can do about refusal bit ``name``."""
    if name == "bad_devsel":
        decode = DevselSpeed((await board.fields("id.config"))["decode"])
        allowed = [speed for speed, value in DEVSEL_SPEEDS.items()
                   if value.value >= decode.value]
        return (f"this build decodes {decode.name.lower()}: give --devsel "
                f"{' or '.join(allowed)}")
    return _WAYS_OUT.get(name, "")


async def _refusals(board):
    status = await board.fields("target.status")
    reasons = []
    for name, doc in _REFUSALS.items():
        if status[name]:
            way_out = await _way_out(board, name)
            reasons.append(f"{doc} ({way_out})" if way_out else doc)
    if reasons:
        await board.write("target.status", **{name: 1 for name in _REFUSALS})
    return reasons


async def _update(board, register, changes):
    """Read-modify-write ``target.<register>`` with the field ``changes``; raise
    RefusedSetting when the board refuses the new value."""
    if not changes:
        return
    name = f"target.{register}"
    fields = await board.fields(name)
    fields.update(changes)
    await board.write(name, **fields)
    reasons = await _refusals(board)
    if reasons:
        settings = ", ".join(f"{k}={v}" for k, v in changes.items())
        raise RefusedSetting(f"the board refused target.{register} ({settings}): "
                             f"{'; '.join(reasons)}")


async def _settings(board):
    """Every setting and counter of the ``target`` block, decoded."""
    response = await board.fields("target.response")
    wait = await board.fields("target.wait")
    disconnect = await board.fields("target.disconnect")
    retry = await board.fields("target.retry")
    control = await board.fields("target.control")
    status = await board.fields("target.status")
    speed = DevselSpeed(response["devsel_speed"])
    if control["corrupt_par"]:
        corrupt = "every"
    else:
        corrupt = "off"
    abort = ([await board.read("target.abort_first"), await board.read("target.abort_last")]
             if control["abort_enable"] else None)
    return {
        "devsel": speed.name.lower(),
        "initial_wait": response["initial_wait"],
        "allow_noncompliant": bool(response["allow_noncompliant"]),
        "wait": wait["clocks"], "wait_every": wait["every"],
        "disconnect": disconnect["after"], "disconnect_with_data": bool(disconnect["with_data"]),
        "retry": retry["first"], "retry_every": retry["every"],
        "abort": abort, "ack64": bool(control["ack64"]), "corrupt_par": corrupt,
        "parity_error": bool(status["parity_error"]),
        "counters": {name: await board.read(f"target.{name}") for name in _COUNTERS},
    }


async def target(transport, *, devsel=None, initial_wait=None, wait=None, wait_every=None,
                 disconnect=None, without_data=None, retry=None, retry_every=None,
                 abort=False, ack64=None, corrupt_par=None, allow_noncompliant=None,
                 reset=False, show=False):
    """Program the exerciser target (only the settings given); return every setting.

    ``devsel`` a key of :data:`DEVSEL_SPEEDS`; ``initial_wait`` extra clocks before the
    first TRDY#; ``wait`` wait states after every ``wait_every`` data phases (``wait``
    without ``wait_every`` on a board whose period is 0 takes a period of 1);
    ``disconnect`` after N data phases (0: never), ``without_data`` for STOP# without
    TRDY#; ``retry`` the next K attempts, then every ``retry_every``-th; ``abort`` a
    ``(first, last)`` byte range (None: off; False: unchanged); ``ack64`` on/off;
    ``corrupt_par`` one of :data:`CORRUPT_MODES`; ``allow_noncompliant`` accept settings
    beyond the specification's latencies; ``reset`` first restores every setting to its
    reset value; ``show`` changes nothing.

    Raises :class:`RefusedSetting` naming the board's reasons when it refuses a value.
    """
    board = Board(transport)
    await board.identify(drives_bus="pcispy target")
    if show:
        return await _settings(board)
    if devsel is not None and devsel not in DEVSEL_SPEEDS:
        raise PcispyError(f"unknown DEVSEL# speed {devsel!r}; known: {', '.join(DEVSEL_SPEEDS)}")
    if corrupt_par is not None and corrupt_par not in CORRUPT_MODES:
        raise PcispyError(f"unknown PAR corruption {corrupt_par!r}; known: "
                          f"{', '.join(CORRUPT_MODES)}")
    for name, value, register, field in (
            ("initial wait", initial_wait, "response", "initial_wait"),
            ("wait", wait, "wait", "clocks"), ("wait every", wait_every, "wait", "every"),
            ("disconnect", disconnect, "disconnect", "after"),
            ("retry", retry, "retry", "first"), ("retry every", retry_every, "retry", "every")):
        limit = _field_limit(register, field)
        if value is not None and not 0 <= value <= limit:
            raise PcispyError(f"{name} {value}: the board takes 0..{limit}")
    await _refusals(board)        # stale refusals would be taken for ours
    if reset:
        # This board's reset values: a slow-decode build's DEVSEL# resets to slow.
        decode = DevselSpeed((await board.fields("id.config"))["decode"])
        for reg in REGISTER_MAP.with_resets(decode_resets(decode)).block("target").registers:
            if any(f.access.value == "rw" for f in reg.fields):
                await board.write(f"target.{reg.name}", reg.reset)

    # The response register carries allow_noncompliant, which the other checks use: first.
    response = {}
    if devsel is not None:
        response["devsel_speed"] = DEVSEL_SPEEDS[devsel].value
    if initial_wait is not None:
        response["initial_wait"] = initial_wait
    if allow_noncompliant is not None:
        response["allow_noncompliant"] = int(allow_noncompliant)
    await _update(board, "response", response)

    waits = {}
    if wait is not None:
        waits["clocks"] = wait
        if wait_every is None and wait and not (await board.fields("target.wait"))["every"]:
            wait_every = 1
    if wait_every is not None:
        waits["every"] = wait_every
    await _update(board, "wait", waits)

    ending = {}
    if disconnect is not None:
        ending["after"] = disconnect
    if without_data is not None:
        ending["with_data"] = int(not without_data)
    await _update(board, "disconnect", ending)

    retries = {}
    if retry is not None:
        retries["first"] = retry
    if retry_every is not None:
        retries["every"] = retry_every
    await _update(board, "retry", retries)

    control = {}
    if abort is not False:
        if abort is not None:
            first, last = abort
            await board.write("target.abort_first", first)
            await board.write("target.abort_last", last)
        control["abort_enable"] = int(abort is not None)
    if ack64 is not None:
        control["ack64"] = int(ack64)
    if corrupt_par is not None:
        control["corrupt_par"] = int(corrupt_par == "every")
        control["corrupt_next"] = int(corrupt_par == "next")
    await _update(board, "control", control)
    return await _settings(board)


def _on_off(text):
    value = text.lower()
    if value not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"{text!r}: give on or off")
    return value == "on"


class TargetCommand(CliCommand):
    name = "target"
    help = "program the exerciser target's response (BAR2/BAR3): DEVSEL#, waits, " \
           "disconnects, retries, aborts, ACK64#, PAR corruption"
    examples = (
        "pcispy target --show",
        "pcispy target --devsel medium --wait 2 --wait-every 4 --disconnect 8 --retry 2",
        "pcispy target --devsel subtractive --initial-wait 12 --allow-noncompliant",
        "pcispy target --disconnect 4 --without-data --retry-every 3",
        "pcispy target --abort 0x100:0x1ff --corrupt-par next --json",
    )

    def add_arguments(self, parser):
        parser.add_argument("--show", action="store_true",
                            help="print the current settings and counters, change nothing")
        parser.add_argument("--reset", action="store_true",
                            help="restore every setting to its reset value first")
        parser.add_argument("--devsel", type=str.lower, choices=list(DEVSEL_SPEEDS),
                            help="DEVSEL# timing (refused when faster than the bitstream "
                                 "decodes: medium, or slow when built with --decode slow)")
        parser.add_argument("--initial-wait", type=int, metavar="N",
                            help="extra clocks before the first TRDY# (initial latency is "
                                 f"2 + DEVSEL# delay + N, at most {TARGET_MAX_INITIAL_LATENCY})")
        parser.add_argument("--wait", type=int, metavar="N",
                            help="wait states (TRDY# deasserted) inserted in a burst")
        parser.add_argument("--wait-every", type=int, metavar="M",
                            help="... after every M data phases (default 1 with --wait)")
        parser.add_argument("--disconnect", type=int, metavar="N",
                            help="STOP# after N data phases (0: never)")
        parser.add_argument("--without-data", action="store_true", default=None,
                            help="disconnect without data (STOP# without TRDY# after "
                                 "phase N) instead of with data on phase N")
        parser.add_argument("--retry", type=int, metavar="K",
                            help="retry the next K attempts")
        parser.add_argument("--retry-every", type=int, metavar="N",
                            help="then retry every Nth attempt (0: never)")
        parser.add_argument("--abort", type=parse_range, default=False, metavar="FIRST:LAST",
                            help="target abort on byte offsets FIRST..LAST of the window "
                                 "('off' to disable)")
        parser.add_argument("--ack64", type=_on_off, metavar="on|off",
                            help="answer REQ64# with ACK64# (64-bit boards)")
        parser.add_argument("--corrupt-par", type=str.lower, choices=CORRUPT_MODES,
                            help="invert PAR of read data: every word, the next word, or off")
        parser.add_argument("--allow-noncompliant", action="store_true", default=None,
                            help="accept latencies beyond the specification (16/8 clocks) "
                                 "and retry-every-attempt")

    def run(self, args, out):
        arguments = {name: getattr(args, name) for name in (
            "devsel", "initial_wait", "wait", "wait_every", "disconnect", "without_data",
            "retry", "retry_every", "abort", "ack64", "corrupt_par", "allow_noncompliant",
            "reset", "show")}
        result = run_feature(args, target, **arguments)
        if not args.json:
            out.write(format_settings(result))
        return result


def format_settings(settings):
    """The target's settings and counters as a few lines of text."""
    abort = settings["abort"]
    lines = [
        f"DEVSEL# {settings['devsel']}, initial wait {settings['initial_wait']} clocks"
        + (", non-compliant settings allowed" if settings["allow_noncompliant"] else ""),
        "wait states: " + (f"{settings['wait']} clocks after every {settings['wait_every']} "
                           "data phases" if settings["wait"] else "none"),
        "disconnect: " + (f"after {settings['disconnect']} data phases "
                          f"({'with' if settings['disconnect_with_data'] else 'without'} data)"
                          if settings["disconnect"] else "never"),
        "retry: " + (f"the next {settings['retry']} attempts, " if settings["retry"] else "")
        + (f"every {settings['retry_every']}th attempt" if settings["retry_every"]
           else "no periodic retries"),
        "target abort: " + (f"offsets {abort[0]:#x}..{abort[1]:#x}" if abort else "off"),
        f"ACK64#: {'on' if settings['ack64'] else 'off'}, PAR corruption: "
        f"{settings['corrupt_par']}" + (", a parity error was detected"
                                        if settings["parity_error"] else ""),
        "counters: " + ", ".join(f"{k} {v}" for k, v in settings["counters"].items()),
    ]
    return "\n".join(lines) + "\n"
