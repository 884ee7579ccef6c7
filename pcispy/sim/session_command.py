# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy sim start|stop|status|reset|config|read|write``: the simulated-board sessions
(:mod:`pcispy.sim.session`), with pcispy's board or a core of your own in slot 0.

``sim reset`` pulses RST# on the session's bus and enumerates it again, as a machine's
reset does: what a board in a slot gets from a reboot (it ends passive mode, which the
board otherwise leaves only through its UART side channel, which the simulated system
does not have).

A session started with ``--core DESCRIPTION`` keeps that core running in slot 0 between
commands. pcispy's own commands (``info``, ``regs``, ``pio``, ``capture``...) talk to
pcispy's board and are refused there; what works on any core is what slot 0's PCI
interface offers: its configuration space (``sim config``), and target reads and writes
at its BARs as the firmware-like enumeration placed them (``sim read``, ``sim write``),
each followed by what the protocol checker and the resolver saw of that command's
traffic.
"""

import argparse
import time
from dataclasses import replace

from pcispy.host.command import CliCommand, int_range, positive_seconds
from pcispy.host.errors import PcispyError, UsageError
from pcispy.sim import session
from pcispy.sim.session import SessionSpec, DEFAULT_IDLE_TIMEOUT_S

__all__ = ["SimCommand", "known_profile", "session_spec", "SLOT0_FEATURES", "slot0_config",
           "slot0_read", "slot0_write", "reset_bus"]

#: Configuration space bytes ``sim config`` reads.
CONFIG_SPACE_BYTES = 256


async def slot0_config(transport):
    """Slot 0's configuration space (256 bytes) and its BARs as enumerated."""
    data = bytearray()
    for offset in range(0, CONFIG_SPACE_BYTES, 4):
        data += (await transport.config_read(offset)).to_bytes(4, "little")
    return {"config": list(data),
            "bars": {str(index): bar for index, bar in sorted(transport.bars.items())}}


async def slot0_read(transport, bar, offset, count=1):
    """``count`` 32-bit target reads at ``offset`` of slot 0's BAR ``bar``."""
    words = [await transport.read32(bar, offset + 4 * i) for i in range(count)]
    return {"bar": bar, "offset": offset, "words": words}


async def slot0_write(transport, bar, offset, words):
    """32-bit target writes of ``words`` from ``offset`` of slot 0's BAR ``bar``."""
    for i, word in enumerate(words):
        await transport.write32(bar, offset + 4 * i, word)
    return {"bar": bar, "offset": offset, "words": words}


async def reset_bus(transport, clocks=8):
    """RST# for ``clocks`` bus clocks, then enumeration like firmware after a reset; the
    transport (and so the session) reaches slot 0 at the BARs it was given again."""
    system = transport.system
    await system.pulse_reset(clocks)
    bars = await system.enumerate_board()
    transport.bars.clear()
    transport.bars.update(bars)
    return {"cycle": await system.cycle(), "clocks": clocks,
            "bars": {str(index): bar for index, bar in sorted(bars.items())}}


#: The features that need nothing of slot 0 but its PCI interface: the only ones a
#: session with another core in slot 0 runs (pcispy/sim/session_bench.py).
SLOT0_FEATURES = frozenset(f"{__name__}:{feature.__name__}"
                           for feature in (slot0_config, slot0_read, slot0_write, reset_bus))


def _number(text):
    """An argparse ``type``: an integer in decimal or 0x hex."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def _offset(text):
    """An argparse ``type``: a byte offset of a 32-bit word (a multiple of 4)."""
    value = _number(text)
    if value % 4:
        raise argparse.ArgumentTypeError(f"{text!r} is not a multiple of 4: sim read and "
                                         "write move whole 32-bit words")
    return value


def _word(text):
    value = _number(text)
    if value > 0xFFFF_FFFF:
        raise argparse.ArgumentTypeError(f"{text!r} does not fit 32 bits")
    return value


def session_spec(args):
    """The :class:`~pcispy.sim.session.SessionSpec` the global options describe."""
    return SessionSpec(profile=args.sim or "ideal", width=args.bus_width, seed=args.seed,
                       name=args.session or "")


def known_profile(name):
    """An argparse ``type`` for ``--sim=PROFILE``: a host-bridge profile or a scenario,
    refused by name as the command line is parsed (before a simulator starts)."""
    # The bus models behind the names load only when --sim names one.
    from pcispy.sim.bfm.profiles import PROFILES
    from pcispy.sim.scenarios import SCENARIOS
    if name not in PROFILES and name not in SCENARIOS:
        raise argparse.ArgumentTypeError(
            f"unknown simulation profile {name!r}; profiles: {', '.join(sorted(PROFILES))}; "
            f"scenarios: {', '.join(sorted(SCENARIOS))}")
    return name


def _duration(seconds):
    """``"1h 2m"``, ``"5m 3s"``, ``"12s"``."""
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {seconds}s" if minutes else f"{seconds}s"


class SimCommand(CliCommand):
    name = "sim"
    help = ("simulated boards that stay up between commands (sessions): start one, show "
            "them, stop them")
    examples = ("pcispy sim start --profile alphastation200 --bus-width 64",
                "pcispy sim status",
                "pcispy sim stop",
                "pcispy --sim=rtc sim reset",
                "pcispy --session scratch sim start",
                "pcispy --fresh pio",
                "pcispy sim start --core my_core.toml",
                "pcispy sim config --core my_core.toml",
                "pcispy sim write --core my_core.toml 0 0x10 0xdeadbeef",
                "pcispy sim read --core my_core.toml 0 0x10 --count 4")

    def add_arguments(self, parser):
        parser.description = (
            "A --sim command runs on the simulated board of its session: one per profile, "
            "bus width and seed (or --session NAME), started by the first command that needs "
            "it. The board keeps its registers, memories, trace and bus time between "
            "commands, like a board in a slot, until `pcispy sim stop` or until it has had no "
            "command for its idle timeout. --session NAME starts a second board of the same "
            "kind; --fresh (or PCISPY_FRESH_SIM=1) runs a command on a board of its own. "
            "Sessions belong to this checkout of pcispy (another checkout's are neither seen "
            "nor stopped); they live in $PCISPY_SESSIONS (default: pcispy-UID in the "
            "temporary folder), a folder per checkout.")
        actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
        start = actions.add_parser(
            "start", help="start a session (the global --sim, --bus-width, --seed and "
                          "--session, or the options here, say which)")
        # SUPPRESS: given here, they set what the global options set; absent, they leave it.
        start.add_argument("--profile", dest="sim", type=known_profile,
                           default=argparse.SUPPRESS,
                           help="the host-bridge profile or scenario (default: ideal)")
        start.add_argument("--bus-width", type=int, choices=(32, 64), default=argparse.SUPPRESS,
                           help="the bus width (default: 32)")
        start.add_argument("--seed", type=int_range(0, (1 << 32) - 1),
                           default=argparse.SUPPRESS,
                           help="seed of every randomised behaviour (default: 1)")
        start.add_argument("--idle-timeout", type=positive_seconds, metavar="SECONDS",
                           default=DEFAULT_IDLE_TIMEOUT_S,
                           help="end the session after this long without a command "
                                f"(default: {DEFAULT_IDLE_TIMEOUT_S} s)")
        config = actions.add_parser(
            "config", help="slot 0's configuration space and BARs (any core)")
        read = actions.add_parser(
            "read", help="32-bit target reads at one of slot 0's BARs (any core)")
        read.add_argument("bar", type=_number, help="the BAR (0-5)")
        read.add_argument("offset", type=_offset, help="the byte offset in it (a multiple "
                                                        "of 4)")
        read.add_argument("--count", type=_number, default=1, help="words (default: 1)")
        write = actions.add_parser(
            "write", help="32-bit target writes at one of slot 0's BARs (any core)")
        write.add_argument("bar", type=_number, help="the BAR (0-5)")
        write.add_argument("offset", type=_offset, help="the byte offset in it (a multiple "
                                                         "of 4)")
        write.add_argument("words", type=_word, nargs="+", metavar="WORD",
                           help="the words to write, from offset on")
        reset = actions.add_parser(
            "reset", help="pulse RST# on the session's bus and enumerate it again, as a "
                          "reboot does (ends the board's passive mode)")
        for action in (start, config, read, write, reset):
            action.add_argument("--core", metavar="CORE_DESCRIPTION",
                                help="the session with this core in slot 0 (a .json or "
                                     "TOML description, as for sim-test) instead of "
                                     "pcispy's board")
        stop = actions.add_parser("stop", help="stop this checkout's sessions (default: every "
                                               "one of them)")
        stop.add_argument("names", nargs="*", metavar="NAME",
                          help="the sessions to stop (default: every one of this checkout)")
        actions.add_parser("status", help="the sessions, their boards and bus time")
        for action in actions.choices.values():
            action.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                                help="print one JSON object on stdout instead of tables")

    def run(self, args, out):
        if args.sysfs is not None or args.uart is not None:
            raise UsageError("sim manages simulated boards; it takes no --sysfs or --uart")
        return getattr(self, f"_{args.action}")(args, out)

    def _spec(self, args):
        """The session the options name, with ``--core``'s core in slot 0."""
        if args.fresh:
            raise UsageError(f"--fresh asks for no session; sim {args.action} works on one")
        spec = session_spec(args)
        if getattr(args, "core", None):
            spec = replace(spec, core=args.core, name=args.session or "")
            spec.description()             # a bad description: one line, before a start
        return spec

    def _start(self, args, out):
        spec = self._spec(args)
        started, new = session.start(spec, idle_timeout_s=args.idle_timeout,
                                     verbose=args.verbose)
        row = session.status(started)
        if not args.json:
            out.write(f"session {started.name}: {started.spec.describe()}; "
                      + (f"started, ends after {_duration(row['idle_timeout_s'])} without a "
                         "command (`pcispy sim stop` ends it now)\n" if new else
                         f"already running ({row['commands']} commands so far)\n"))
            if started.spec.core:
                out.write(f"  its core answers `pcispy sim config|read|write --core "
                          f"{started.spec.core}` (or --session {started.name})\n")
        return {"started": new, "session": row}

    def _slot0(self, args, feature, arguments):
        return session.run_feature(feature, arguments, self._spec(args),
                                   verbose=args.verbose)

    def _config(self, args, out):
        result = self._slot0(args, slot0_config, {})
        if not args.json:
            config = result["config"]
            for row in range(0, len(config), 16):
                out.write(f"{row:02x}: " + " ".join(f"{b:02x}" for b in config[row:row + 16])
                          + "\n")
            for index, bar in result["bars"].items():
                out.write(f"BAR{index}: {bar['kind']:6s} at {bar['address']:#010x}, "
                          f"{bar['size']} bytes\n")
            _monitors(result["checker"], out)
        return result

    def _read(self, args, out):
        result = self._slot0(args, slot0_read, {"bar": args.bar, "offset": args.offset,
                                                 "count": args.count})
        if not args.json:
            for i, word in enumerate(result["words"]):
                out.write(f"BAR{args.bar} {args.offset + 4 * i:#010x}: {word:#010x}\n")
            _monitors(result["checker"], out)
        return result

    def _reset(self, args, out):
        result = self._slot0(args, reset_bus, {})
        if not args.json:
            out.write(f"RST# for {result['clocks']} clocks at bus clock {result['cycle']:,}; "
                      "the bus enumerated again:\n")
            for index, bar in result["bars"].items():
                out.write(f"  BAR{index}: {bar['kind']:6s} at {bar['address']:#010x}, "
                          f"{bar['size']} bytes\n")
        return result

    def _write(self, args, out):
        result = self._slot0(args, slot0_write, {"bar": args.bar, "offset": args.offset,
                                                  "words": args.words})
        if not args.json:
            plural = "" if len(args.words) == 1 else "s"
            out.write(f"BAR{args.bar} {args.offset:#010x}: wrote {len(args.words)} "
                      f"word{plural}\n")
            _monitors(result["checker"], out)
        return result

    def _stop(self, args, out):
        sessions = {s.name: s for s in session.running()}
        unknown = [name for name in args.names if name not in sessions]
        if unknown:
            raise PcispyError(f"no session {', '.join(unknown)} (running: "
                              f"{', '.join(sessions) or 'none'})")
        stopped = []
        for name in args.names or sessions:
            target = sessions[name]
            died = target.state() == "died"
            reply, log = session.stop(target)
            stopped.append({"name": name, "died": died, "final": reply, "log": log})
            if not args.json:
                if died:
                    out.write(f"session {name}: its simulator had died; cleared (its log: "
                              f"{log})\n")
                elif reply:
                    plural = "" if reply["commands"] == 1 else "s"
                    out.write(f"session {name}: stopped after {reply['commands']} "
                              f"command{plural}, {reply['cycle']:,} clocks of bus time, up "
                              f"{_duration(reply['up_s'])}\n")
                else:
                    out.write(f"session {name}: did not answer; ended\n")
        if not stopped and not args.json:
            out.write("no simulated board was running\n")
        return {"stopped": stopped}

    def _status(self, args, out):
        rows = [session.status(s) for s in session.running()]
        if not args.json:
            if not rows:
                out.write("no simulated board is running (a --sim command or `pcispy sim "
                          "start` starts one)\n")
            for row in rows:
                spec = row["spec"] or {}
                core = f"core {spec['core']} in slot 0, " if spec.get("core") else ""
                out.write(f"{row['name']}: {row['state']}, {core}profile {spec.get('profile')}, "
                          f"{spec.get('width')}-bit bus, seed {spec.get('seed')}, pid "
                          f"{row['pid']}")
                if row["cycle"] is not None:
                    left = row["idle_timeout_s"] - row["idle_s"]
                    ends = time.strftime("%H:%M", time.localtime(time.time() + left))
                    out.write(f"; {row['commands']} commands, {row['cycle']:,} clocks of bus "
                              f"time, up {_duration(row['up_s'])}, idle "
                              f"{_duration(row['idle_s'])} (ends in {_duration(left)} "
                              f"without a command, at {ends})")
                out.write(f"\n  log: {row['log']}\n")
        return {"sessions": rows}


def _monitors(report, out):
    """One line per bus rule the command's traffic broke (both monitors), or none."""
    # coretest is a cocotb bench module (cocotb: the optional sim extra).
    from pcispy.sim.coretest import violation_log
    rules = sorted(report["violations"]) + sorted(report["drivers"])
    if not rules:
        out.write("bus rules: all kept (protocol checker and resolver)\n")
        return
    out.write(f"bus rules broken: {', '.join(rules)}\n")
    for entry in violation_log(report):
        agents = ", ".join(entry["agents"]) or "-"
        out.write(f"  cycle {entry['cycle']}: {entry['rule']} "
                  f"{entry['line'] or ''} ({agents})\n")
