# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy sim start|stop|status``: the simulated-board sessions
(:mod:`pcispy.sim.session`)."""

import argparse
import time

from pcispy.host.command import Command, positive_seconds
from pcispy.host.errors import PcispyError, UsageError

__all__ = ["SimCommand", "known_profile"]


def known_profile(name):
    """An argparse ``type`` for ``--sim=PROFILE``: a host-bridge profile or a scenario,
    refused by name as the command line is parsed (before a simulator starts)."""
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


class SimCommand(Command):
    name = "sim"
    help = ("simulated boards that stay up between commands (sessions): start one, show "
            "them, stop them")
    examples = ("pcispy sim start --profile alphastation200 --bus-width 64",
                "pcispy sim status",
                "pcispy sim stop",
                "pcispy --session scratch sim start",
                "pcispy --fresh pio")

    def add_arguments(self, parser):
        from pcispy.sim.session import DEFAULT_IDLE_TIMEOUT_S
        parser.description = (
            "A --sim command runs on the simulated board of its session: one per profile, "
            "bus width and seed (or --session NAME), started by the first command that needs "
            "it. The board keeps its registers, memories, trace and bus time between "
            "commands, like a board in a slot, until `pcispy sim stop` or until it has had no "
            "command for its idle timeout. --session NAME starts a second board of the same "
            "kind; --fresh (or PCISPY_FRESH_SIM=1) runs a command on a board of its own.")
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
        start.add_argument("--seed", type=int, default=argparse.SUPPRESS,
                           help="seed of every randomised behaviour (default: 1)")
        start.add_argument("--idle-timeout", type=positive_seconds, metavar="SECONDS",
                           default=DEFAULT_IDLE_TIMEOUT_S,
                           help="end the session after this long without a command "
                                f"(default: {DEFAULT_IDLE_TIMEOUT_S} s)")
        stop = actions.add_parser("stop", help="stop sessions (default: every one)")
        stop.add_argument("names", nargs="*", metavar="NAME",
                          help="the sessions to stop (default: every one)")
        actions.add_parser("status", help="the sessions, their boards and bus time")
        for action in actions.choices.values():
            action.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                                help="print one JSON object on stdout instead of tables")

    def run(self, args, out):
        if args.sysfs is not None or args.uart is not None:
            raise UsageError("sim manages simulated boards; it takes no --sysfs or --uart")
        return getattr(self, f"_{args.action}")(args, out)

    def _start(self, args, out):
        from pcispy.app.cli import session_spec
        from pcispy.sim import session
        if args.fresh:
            raise UsageError("--fresh asks for no session; sim start starts one")
        spec = session_spec(args)
        started, new = session.start(spec, idle_timeout_s=args.idle_timeout,
                                     verbose=args.verbose)
        row = session.status(started)
        if not args.json:
            out.write(f"session {started.name}: {started.spec.describe()}; "
                      + (f"started, ends after {_duration(row['idle_timeout_s'])} without a "
                         "command (`pcispy sim stop` ends it now)\n" if new else
                         f"already running ({row['commands']} commands so far)\n"))
        return {"started": new, "session": row}

    def _stop(self, args, out):
        from pcispy.sim import session
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
        from pcispy.sim import session
        rows = [session.status(s) for s in session.running()]
        if not args.json:
            if not rows:
                out.write("no simulated board is running (a --sim command or `pcispy sim "
                          "start` starts one)\n")
            for row in rows:
                spec = row["spec"] or {}
                out.write(f"{row['name']}: {row['state']}, profile {spec.get('profile')}, "
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
