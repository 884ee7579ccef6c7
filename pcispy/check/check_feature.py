# SPDX-License-Identifier: BSD-2-Clause
"""The board's protocol checker, and the ``pcispy check`` command.

The checker (pcispy/check/checker.py) watches every clock of the bus from power-on: one
sticky flag and one saturating counter per rule, the rule and cycle of the first violation
since the last clear, a log of the first clocks with a violation, and an enable mask (the
``check`` block of pcispy/check/registers.py). :func:`check` reads all of it: which rules
fired and how often, the first violation, the log, which rules are disabled
(:func:`read_checker` the flags, counts and first violation alone, as ``pcispy stats``
shows them). ``clear`` clears the flags, counters and log after reading; ``duration``
clears them first and lets that much bus time pass before reading, to watch
the bus for a while (in simulation the only way to see traffic: each run is a new system).

``pcispy check`` prints the report (``--json``: the dict) and says with its exit status
whether the bus was clean: 0 no enabled rule was broken, :data:`EXIT_VIOLATIONS` (3) some
were, 2 an error (as every command). ``--list-rules`` lists, without a board, the rules of
both monitors (:data:`~pcispy.pci.rules.ALL_RULES`): the checker's, seen on the
pins (on the board and in the simulated system), and those only the simulated system's
bus resolver sees, because they need to know who drives a line.
"""

from pcispy.pci.rules import ALL_RULES, CULPRITS, RULES
from pcispy.board.registers import REGISTER_MAP
from pcispy.check.registers import LOG_DEPTH, NO_MASTER
from pcispy.host.board import Board
from pcispy.host.command import CliCommand, positive_seconds, run_feature
from pcispy.host.errors import TransportError, UsageError

__all__ = ["check", "read_checker", "read_log", "format_check", "format_rules", "list_rules",
           "CheckCommand", "EXIT_VIOLATIONS"]

#: ``pcispy check``'s exit status when some enabled rule was broken (0: clean; 1 and 2 are
#: a bug and an error, as for every command).
EXIT_VIOLATIONS = 3
#: Width of the checker's cycle counter (it wraps).
_CYCLE_BITS = REGISTER_MAP["check.cycle"][1].field("cycle").width


async def _enable_mask(board):
    low = (await board.fields("check.enable_lo"))["enable"]
    high = (await board.fields("check.enable_hi"))["enable"]
    return high << 32 | low


async def read_checker(board):
    """``{"any", "first_rule", "first_cycle", "violations": {rule name: count}}``."""
    status = await board.fields("check.status")
    flags = await board.read("check.flags_lo") | await board.read("check.flags_hi") << 32
    violations = {}
    for rule in RULES:
        if flags >> rule.id & 1:
            await board.write("check.count_index", index=rule.id)
            violations[rule.name] = await board.read("check.count")
    first = RULES[status["first_rule"]].name if status["any"] else None
    return {"any": bool(status["any"]), "first_rule": first,
            "first_cycle": await board.read("check.first_cycle") if status["any"] else None,
            "violations": violations}


async def read_log(board):
    """The checker's violation log, oldest first: ``[{"cycle", "rules": [rule names broken
    in that clock], "master": index of the transaction's master, or None when the checker
    cannot tell (always on a board in a slot, which sees only its own GNT#)}]``. It holds
    the first :data:`LOG_DEPTH` clocks with a violation since the last clear."""
    entries = (await board.fields("check.log_info"))["entries"]
    log = []
    for index in range(min(entries, LOG_DEPTH)):
        await board.write("check.log_index", index=index)
        vector = (await board.read("check.log_rules_hi") << 32 |
                  await board.read("check.log_rules_lo"))
        master = (await board.fields("check.log_info"))["master"]
        log.append({"cycle": await board.read("check.log_cycle"),
                    "rules": [rule.name for rule in RULES if vector >> rule.id & 1],
                    "master": None if master == NO_MASTER else master})
    return log


async def check(transport, *, clear=False, duration=None):
    """Read the board's protocol checker; ``clear`` its flags, counters and log
    afterwards; with ``duration`` (seconds of bus time) clear them first and read after
    that time.

    Returns ``{"clean", "violations": {rule name: count}, "first": {"rule", "cycle",
    "clocks_ago"} or None, "log": :func:`read_log`, "cycle" (the checker's clock counter
    now), "rules" (how many the gateware checks), "disabled": [rule names],
    "cleared_before", "cleared_after", "duration"}``. Counts saturate at the counter's
    width.
    """
    # Read beside the stats command's counters, in the same way.
    board = Board(transport)
    await board.identify()
    status = await board.fields("check.status")
    if status["rules"] != len(RULES):
        raise TransportError(f"the board's checker has {status['rules']} rules, this pcispy "
                             f"knows {len(RULES)}: gateware and pcispy differ in version")
    if duration is not None:
        await board.write("check.control", clear=1)
        await transport.sleep(duration)
    report = await read_checker(board)
    log = await read_log(board)
    now = await board.read("check.cycle")
    enabled = await _enable_mask(board)
    if clear:
        await board.write("check.control", clear=1)
    first = None
    if report["any"]:
        first = {"rule": report["first_rule"], "cycle": report["first_cycle"],
                 "clocks_ago": (now - report["first_cycle"]) % (1 << _CYCLE_BITS)}
    return {"clean": not report["any"], "violations": report["violations"], "first": first,
            "log": log, "cycle": now, "rules": status["rules"],
            "disabled": [rule.name for rule in RULES if not enabled >> rule.id & 1],
            "cleared_before": duration is not None, "cleared_after": clear,
            "duration": duration}


def format_check(result):
    """The report as text."""
    since = (f"in the last {result['duration']} s" if result["cleared_before"]
             else "since the last clear")
    enabled = result["rules"] - len(result["disabled"])
    lines = []
    if result["clean"]:
        lines.append(f"protocol checker: clean, no rule broken {since} ({enabled} of "
                     f"{result['rules']} rules enabled)")
    else:
        width = max(len(name) for name in result["violations"])
        lines.append(f"protocol checker: {len(result['violations'])} rules broken {since} "
                     f"({enabled} of {result['rules']} rules enabled)")
        for name, count in result["violations"].items():
            lines.append(f"  {name:{width}s} {count:10d}")
        first = result["first"]
        lines.append(f"first violation: {first['rule']} at checker cycle {first['cycle']} "
                     f"({first['clocks_ago']} clocks ago)")
        lines += _format_log(result["log"])
    if result["disabled"]:
        lines.append("disabled: " + ", ".join(result["disabled"]))
    if result["cleared_after"]:
        lines.append("flags, counters and log cleared")
    return "\n".join(lines) + "\n"


def _format_log(log):
    """The violation log as a table (no lines when it is empty)."""
    if not log:
        return []
    full = ("; full, later violations were only counted" if len(log) >= LOG_DEPTH
            else "")
    lines = [f"violation log ({len(log)} clocks with a violation, oldest first{full}):",
             f"  {'cycle':>10s}  {'master':>6s}  rules"]
    for entry in log:
        master = "-" if entry["master"] is None else str(entry["master"])
        lines.append(f"  {entry['cycle']:10d}  {master:>6s}  {', '.join(entry['rules'])}")
    return lines


def list_rules():
    """``{"rules": [{"id", "name", "seen_by", "culprit", "description", "reference"}],
    "culprits": {culprit: who it is}}`` of every rule of both monitors: ``seen_by`` "pins"
    (the protocol checker, on the board and in the simulated system; ``id`` is its bit in
    the checker's registers) or "drivers" (the simulated system's bus resolver only;
    ``id`` is the resolver's own index); ``culprit`` who breaks it (the agent a violation
    log names for it, :data:`~pcispy.pci.rules.CULPRITS`)."""
    return {"rules": [{"id": r.id, "name": r.name, "seen_by": r.seen_by,
                       "culprit": r.culprit, "description": r.description,
                       "reference": r.reference}
                      for r in ALL_RULES],
            "culprits": dict(CULPRITS)}


def format_rules(result):
    """:func:`list_rules` as text: one rule a line, with where it is seen and who breaks
    it, then what each culprit means."""
    rules = result["rules"]
    name_width = max(len(r["name"]) for r in rules)
    seen_width = max(len("seen by"), *(len(r["seen_by"]) for r in rules))
    culprit_width = max(len("culprit"), *(len(r["culprit"]) for r in rules))
    lines = [f"{'id':>3s}  {'seen by':{seen_width}s}  {'culprit':{culprit_width}s}  "
             f"{'rule':{name_width}s}  violation"]
    for r in rules:
        lines.append(f"{r['id']:3d}  {r['seen_by']:{seen_width}s}  "
                     f"{r['culprit']:{culprit_width}s}  {r['name']:{name_width}s}  "
                     f"{r['description']}")
    lines.append("seen by pins: the protocol checker (on the board and in the simulated "
                 "system); drivers: the simulated system's bus resolver only (it knows who "
                 "drives each line)")
    lines += [f"culprit {name}: {meaning}" for name, meaning in result["culprits"].items()]
    return "\n".join(lines) + "\n"


class CheckCommand(CliCommand):
    name = "check"
    help = "the protocol checker: which rules the bus broke, how often, the first violation " \
           "(exit 3 if any); --list-rules without a board"
    examples = ("pcispy check --list-rules", "pcispy check --list-rules --json",
                "pcispy --sysfs 0000:03:00.0 check --clear",
                "pcispy --sim=rtc check --duration 0.002",
                "pcispy --json check")

    def add_arguments(self, parser):
        parser.add_argument("--list-rules", action="store_true",
                            help="print every rule of the checker (on the pins) and of the "
                                 "simulated system's bus resolver (on the drivers), no board "
                                 "needed")
        parser.add_argument("--clear", action="store_true",
                            help="clear the flags, counters and log after reading them")
        parser.add_argument("--duration", type=positive_seconds, metavar="SECONDS",
                            help="clear first, watch the bus this long (bus time), then read")

    def run(self, args, out):
        if args.list_rules:
            if args.clear or args.duration is not None:
                raise UsageError("--list-rules reads no board: give it without --clear and "
                                 "--duration")
            result = list_rules()
            if not args.json:
                out.write(format_rules(result))
            return result
        result = run_feature(args, check, clear=args.clear,
                             duration=args.duration)
        if not args.json:
            out.write(format_check(result))
        return result

    def exit_status(self, result):
        # A report says whether the bus was clean; --list-rules has nothing to say.
        return EXIT_VIOLATIONS if result.get("clean") is False else 0
