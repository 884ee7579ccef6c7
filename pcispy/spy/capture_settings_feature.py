# SPDX-License-Identifier: BSD-2-Clause
"""The settings of a capture as the command line and the features give them (pcispy capture,
pcispy/spy/capture_feature.py), read and checked before anything reaches the board.

Filter specs (``--filter``, up to :data:`~pcispy.board.registers.SPY_FILTERS`)::

    [!]WHAT[:VALUE[/MASK]]

``WHAT`` is an address space (``mem``, ``io``, ``cfg``, ``any``) or commands joined with
``+`` (``IOR+IOW``, ``MW``; the mnemonics of the CSV export); ``VALUE`` the address and
``MASK`` the address bits compared (default: all of them when a value is given, none
otherwise); ``!`` makes the comparator exclude what it hits. ``io:0x70/0xfffe`` selects I/O
cycles to 0x70 and 0x71. Include comparators combine with ``--combine any|all``.

Trigger specs: ``now`` (at arm), ``filter`` (the first transaction the filters select),
``register`` (a write to the spy's trigger register, e.g. by the software under test),
``violation[:RULE,...]`` (a protocol violation; all rules, or the named ones),
``external`` (the ``--edge`` of the board's trigger input pin, docs/wiring.md).

The trigger input's edges can also be stored as timestamped markers (``--markers``): MARKER
records among the others (summary mode), or the ``marker`` bit of the raw record of that
clock (raw mode; a MARKER record when that clock is not stored). The trigger output pin
pulses for :data:`~pcispy.spy.trigger.TRIGGER_PULSE_NS` ns at each trigger
(``--trigger-out pulse``) or stays high while a trigger is recorded (``level``).

Segmented capture (``--segments N``, a power of two up to
:data:`~pcispy.spy.trigger.MAX_SEGMENTS`): the memory is split into N equal segments, each
with its own ``--pre`` records before its trigger and up to ``--count`` records from it
(or until the segment is full); the spy re-arms by itself in the next segment after each,
and stops when the last is full. The records of every segment are written one segment after
the other; the metadata's ``segments`` list says where each begins in the file
(``first_record``, ``records``) and its trigger (``trigger_timestamp``, ``triggered``) and
time base (``start_timestamp``).

Protocol violations the board's checker sees are stored as VIOLATION event records among
the transactions (``--violations``: ``all`` rules, the default, ``none``, or rule names);
they take room in the memory and count towards ``--count`` like any record. A violation
trigger fires only on rules that are also recorded.

The command sets of the address spaces are declared with the filters' gateware
(pcispy/spy/filters.py, Amaranth): they load when a filter spec is read, not with the
command line.
"""

from pcispy.pci.codes import COMMAND_MNEMONICS
from pcispy.pci.rules import RULES
from pcispy.spy.registers import MAX_SEGMENTS, SPY_FILTERS, TriggerSource
from pcispy.host.errors import UsageError

__all__ = ["ADDRESS_BITS", "TRIGGERS", "EDGES", "TRIGGER_OUTPUTS", "FilterSpec", "parse_filter",
           "parse_violations", "parse_segments", "parse_trigger", "check_settings"]


#: Width of a comparator's address and mask.
ADDRESS_BITS = 64
#: Trigger spec keywords and the source each selects.
TRIGGERS = {"now": TriggerSource.IMMEDIATE, "filter": TriggerSource.FILTER,
            "register": TriggerSource.REGISTER, "violation": TriggerSource.VIOLATION,
            "external": TriggerSource.EXTERNAL}
#: ``--edge`` choices: which edge of the trigger input counts (``spy.trigger_io.falling``).
EDGES = {"rising": 0, "falling": 1}
#: ``--trigger-out`` choices: the trigger output's behaviour (``spy.trigger_io.out_level``).
TRIGGER_OUTPUTS = {"pulse": 0, "level": 1}
#: Each command's code by its mnemonic.
_MNEMONIC = {name: code for code, name in enumerate(COMMAND_MNEMONICS)}
class FilterSpec(dict):
    """One comparator's settings: ``enable``, ``exclude``, ``commands``, ``address``,
    ``mask`` (a dict, so it travels as JSON into the simulator)."""


def parse_filter(text):
    """``[!]WHAT[:VALUE[/MASK]]`` -> :class:`FilterSpec`; a :class:`UsageError` naming the
    problem otherwise."""
    # the filters' command sets load with a filter spec (the module's docstring)
    from pcispy.spy.filters import (ALL_COMMANDS, CONFIG_COMMANDS, IO_COMMANDS,
                                    MEMORY_COMMANDS, command_set)
    spaces = {"mem": MEMORY_COMMANDS, "io": IO_COMMANDS, "cfg": CONFIG_COMMANDS,
              "any": ALL_COMMANDS}
    spec = text.strip()
    exclude = spec.startswith("!")
    spec = spec[1:] if exclude else spec
    what, _, where = spec.partition(":")
    what = what.strip()
    if what.lower() in spaces:
        commands = spaces[what.lower()]
    else:
        names = [name.strip().upper() for name in what.split("+")]
        unknown = [name for name in names if name not in _MNEMONIC]
        if not what or unknown:
            raise UsageError(f"--filter {text!r}: {', '.join(unknown) or 'nothing'} is not an "
                             f"address space ({', '.join(spaces)}) or a command "
                             f"({', '.join(sorted(_MNEMONIC))})")
        commands = command_set(*(_MNEMONIC[name] for name in names))
    address, mask = 0, 0
    if where:
        value, slash, mask_text = where.partition("/")
        try:
            address = int(value, 0)
            mask = int(mask_text, 0) if slash else (1 << ADDRESS_BITS) - 1
        except ValueError:
            raise UsageError(f"--filter {text!r}: {where!r} is not VALUE or VALUE/MASK "
                             "(numbers, e.g. 0x70/0xfffe)") from None
        for name, number in (("address", address), ("mask", mask)):
            if not 0 <= number < 1 << ADDRESS_BITS:
                raise UsageError(f"--filter {text!r}: the {name} does not fit in "
                                 f"{ADDRESS_BITS} bits")
    return FilterSpec(enable=1, exclude=int(exclude), commands=commands,
                      address=address & mask, mask=mask)


def _rule_mask(names, context):
    """Comma-separated checker rule names -> a mask with bit ``rule.id`` set for each."""
    by_name = {rule.name: rule.id for rule in RULES}
    mask = 0
    for name in names.split(","):
        name = name.strip()
        if name not in by_name:
            raise UsageError(f"{context}: no checker rule {name!r} (pcispy check "
                             "--list-rules)")
        mask |= 1 << by_name[name]
    return mask


def _every_rule():
    return (1 << len(RULES)) - 1


def parse_violations(text):
    """``all``, ``none`` or ``RULE,...`` -> the mask of checker rules whose violations the
    spy records as events."""
    keyword = text.strip().lower()
    if keyword == "all":
        return _every_rule()
    if keyword == "none":
        return 0
    return _rule_mask(text, f"--violations {text!r}")


def parse_segments(segments):
    """``--segments N`` -> log2 of N (what ``spy.segments.log2`` takes); a
    :class:`UsageError` unless N is a power of two from 1 to :data:`MAX_SEGMENTS`."""
    if (not isinstance(segments, int) or not 1 <= segments <= MAX_SEGMENTS
            or segments & (segments - 1)):
        raise UsageError(f"--segments {segments}: give a power of two from 1 to "
                         f"{MAX_SEGMENTS}")
    return segments.bit_length() - 1


def parse_trigger(text):
    """``now``, ``filter``, ``register``, ``violation[:RULE,...]``, ``external`` ->
    ``(TriggerSource, violation mask)`` (mask: every rule unless named)."""
    keyword, _, rules = text.strip().partition(":")
    if keyword.lower() not in TRIGGERS:
        raise UsageError(f"--trigger {text!r}: give one of {', '.join(TRIGGERS)}")
    source = TRIGGERS[keyword.lower()]
    if not rules:
        return source, _every_rule()
    if source is not TriggerSource.VIOLATION:
        raise UsageError(f"--trigger {text!r}: only 'violation' takes rule names")
    mask = _rule_mask(rules, f"--trigger {text!r}")
    return source, mask


#: The limits of the numeric settings: (CLI option, highest value + 1).
_LIMITS = {"pre": ("--pre", 1 << 32), "count": ("--count", 1 << 32),
           "latency_timer": ("--latency-timer", 256)}
def check_settings(*, mode, filters, combine, trigger, pre, count, latency_timer,
                   violations="all", ring=False, duration=None, idle_compress=True,
                   raw_select=False, edge="rising", markers=False, trigger_out="pulse",
                   segments=1):
    """Refuse settings the spy cannot honour, or that would do nothing (a raw-mode setting
    of a summary capture): one :class:`UsageError` naming the option as the CLI spells it.
    Return the comparator settings, the trigger source and the violation mask (the rules
    recorded, and the rules a violation trigger fires on: the board has one mask for
    both)."""
    if mode not in ("raw", "summary"):
        raise UsageError(f"--mode {mode!r}: give 'raw' or 'summary'")
    if mode == "summary":
        for option, given in (("--no-idle-compress", not idle_compress),
                              ("--select", raw_select)):
            if given:
                raise UsageError(f"{option} applies to --mode raw only; a summary capture "
                                 "stores one record per selected transaction")
    specs = [parse_filter(f) if isinstance(f, str) else FilterSpec(f) for f in filters]
    if len(specs) > SPY_FILTERS:
        raise UsageError(f"{len(specs)} --filter options given; the spy has {SPY_FILTERS} "
                         "comparators")
    source, trigger_mask = parse_trigger(trigger)
    violation_mask = trigger_mask & parse_violations(violations)
    if source is TriggerSource.VIOLATION and not violation_mask:
        raise UsageError(f"--trigger {trigger!r} with --violations {violations!r}: no rule "
                         "is left to trigger on")
    if combine.lower() not in ("any", "all"):
        raise UsageError(f"--combine {combine!r}: give 'any' or 'all'")
    for name, value in (("pre", pre), ("count", count), ("latency_timer", latency_timer)):
        option, top = _LIMITS[name]
        if not 0 <= value < top:
            raise UsageError(f"{option} {value}: give 0..{top - 1}")
    if duration is not None and not 0 < duration < float("inf"):
        raise UsageError(f"--duration {duration}: give a positive number of seconds")
    if ring and source is TriggerSource.IMMEDIATE and not count and duration is None:
        raise UsageError("a --ring capture triggered 'now' never stops by itself: give "
                         "--count or --duration")
    if edge not in EDGES:
        raise UsageError(f"--edge {edge!r}: give {' or '.join(EDGES)}")
    if trigger_out not in TRIGGER_OUTPUTS:
        raise UsageError(f"--trigger-out {trigger_out!r}: give "
                         f"{' or '.join(TRIGGER_OUTPUTS)}")
    if edge != "rising" and source is not TriggerSource.EXTERNAL and not markers:
        raise UsageError(f"--edge {edge} applies to --trigger external and --markers only")
    parse_segments(segments)
    if ring and segments > 1:
        raise UsageError("--ring and --segments exclude each other: a segmented capture "
                         "stops when its last segment is full")
    return specs, source, violation_mask
