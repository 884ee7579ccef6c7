# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy check``: the board's protocol checker read register by register (a stand-in
board whose check block holds known flags and counters), the report, the exit status (0
clean, 3 rules broken), --clear and --duration; then in the simulator: the rtc scenario's
legacy bridge breaks its rules on purpose (the board's checker names the same rules as the
simulated system's own checker), the ideal host leaves the bus clean."""

import asyncio
import json

import pytest

from pcispy.pci.rules import ALL_RULES, DRIVER_RULES
from pcispy.board.registers import REGISTER_MAP
from pcispy.check.checker import LOG_DEPTH, NO_MASTER, RULES
from pcispy.check import check_feature as check_feature
from pcispy.check.check_feature import EXIT_VIOLATIONS, check, format_check
from pcispy.sim.bfm.profiles import RTC

from pcispy.app.tests._cli import run_cli
from pcispy.host.tests._standin import StandInBoard

pytestmark = pytest.mark.host

A, B = RULES[2], RULES[40]


class CheckerBoard(StandInBoard):
    """BAR0 of a board whose checker saw ``counts`` ({rule id: count}), the first being
    ``first`` at cycle 1000, now at cycle 1500; ``disabled`` rule ids; ``entries`` the
    violation log, ``[(cycle, violation vector, master)]``."""
    def __init__(self, counts, first=None, disabled=(), entries=()):
        self.counts = dict(counts)
        self.first = first
        self.entries = list(entries)
        self.index = 0
        self.log_index = 0
        self.now = 1500
        self.enable = ((1 << len(RULES)) - 1) & ~sum(1 << rule for rule in disabled)
        self.slept = []
        self.log = []
        self.by_offset = {address: name for name, address, _ in REGISTER_MAP}

    def _value(self, name):
        flags = sum(1 << rule for rule in self.counts)
        field = REGISTER_MAP["check.status"][1]
        info = REGISTER_MAP["check.log_info"][1]
        cycle, vector, master = (self.entries[self.log_index]
                                 if self.log_index < len(self.entries) else (0, 0, NO_MASTER))
        return {
            "id.magic": 0x5043_4953,
            "check.status": (bool(self.counts) << field.field("any").lsb |
                             (self.first or 0) << field.field("first_rule").lsb |
                             len(RULES) << field.field("rules").lsb),
            "check.first_cycle": 1000 if self.counts else 0,
            "check.cycle": self.now,
            "check.enable_lo": self.enable & 0xFFFF_FFFF, "check.enable_hi": self.enable >> 32,
            "check.flags_lo": flags & 0xFFFF_FFFF, "check.flags_hi": flags >> 32,
            "check.count": self.counts.get(self.index, 0),
            "check.log_info": (len(self.entries) << info.field("entries").lsb |
                               master << info.field("master").lsb),
            "check.log_cycle": cycle,
            "check.log_rules_lo": vector & 0xFFFF_FFFF, "check.log_rules_hi": vector >> 32,
        }.get(name, 0)

    async def read32(self, bar, offset):
        name = self.by_offset[offset]
        self.log.append(("read", name))
        return self._value(name)

    async def write32(self, bar, offset, value):
        name = self.by_offset[offset]
        self.log.append(("write", name, value))
        if name == "check.count_index":
            self.index = value
        elif name == "check.log_index":
            self.log_index = value
        elif name == "check.control" and value & 1:
            self.counts, self.first, self.entries = {}, None, []

    async def sleep(self, seconds):
        self.slept.append(seconds)


#: A rule whose bit is in check.log_rules_hi.
C = RULES[-1]


def test_report_of_broken_rules():
    entries = [(1000, 1 << B.id, NO_MASTER), (1020, 1 << A.id | 1 << C.id, 2),
               (1031, 1 << A.id, NO_MASTER)]
    board = CheckerBoard({A.id: 7, B.id: 2, C.id: 1}, first=B.id, disabled=(5,),
                         entries=entries)
    result = asyncio.run(check(board))
    assert result == {"clean": False, "violations": {A.name: 7, B.name: 2, C.name: 1},
                      "first": {"rule": B.name, "cycle": 1000, "clocks_ago": 500},
                      "log": [{"cycle": 1000, "rules": [B.name], "master": None},
                              {"cycle": 1020, "rules": [A.name, C.name], "master": 2},
                              {"cycle": 1031, "rules": [A.name], "master": None}],
                      "cycle": 1500, "rules": len(RULES), "disabled": [RULES[5].name],
                      "cleared_before": False, "cleared_after": False, "duration": None}
    width = max(len(A.name), len(B.name), len(C.name))
    assert format_check(result) == (
        f"protocol checker: 3 rules broken since the last clear ({len(RULES) - 1} of "
        f"{len(RULES)} rules enabled)\n"
        f"  {A.name:{width}s} {7:10d}\n  {B.name:{width}s} {2:10d}\n"
        f"  {C.name:{width}s} {1:10d}\n"
        f"first violation: {B.name} at checker cycle 1000 (500 clocks ago)\n"
        f"violation log (3 clocks with a violation, oldest first):\n"
        f"       cycle  master  rules\n"
        f"        1000       -  {B.name}\n"
        f"        1020       2  {A.name}, {C.name}\n"
        f"        1031       -  {A.name}\n"
        f"disabled: {RULES[5].name}\n")
    # Nothing was written but the counter and log selects, each entry's index once.
    writes = [entry[1:] for entry in board.log if entry[0] == "write"]
    assert {name for name, _ in writes} == {"check.count_index", "check.log_index"}
    assert [value for name, value in writes if name == "check.log_index"] == [0, 1, 2]


def test_full_log_says_later_violations_were_only_counted():
    entries = [(2000 + 3 * i, 1 << A.id, NO_MASTER) for i in range(LOG_DEPTH)]
    board = CheckerBoard({A.id: 40}, first=A.id, entries=entries)
    result = asyncio.run(check(board))
    assert [entry["cycle"] for entry in result["log"]] == [cycle for cycle, _, _ in entries]
    text = format_check(result)
    assert (f"violation log ({LOG_DEPTH} clocks with a violation, oldest first; full, later "
            f"violations were only counted):\n") in text
    assert text.count(f"       -  {A.name}\n") == LOG_DEPTH


def test_clear_after_reading_and_duration_clears_first():
    board = CheckerBoard({A.id: 1}, first=A.id, entries=[(1000, 1 << A.id, NO_MASTER)])
    result = asyncio.run(check(board, clear=True))
    assert result["violations"] == {A.name: 1} and result["cleared_after"]
    assert result["log"] == [{"cycle": 1000, "rules": [A.name], "master": None}]
    assert format_check(result).endswith("flags, counters and log cleared\n")
    assert board.log[-1] == ("write", "check.control", 1) and board.counts == {}
    assert board.entries == []
    board = CheckerBoard({A.id: 1}, first=A.id, entries=[(1000, 1 << A.id, NO_MASTER)])
    result = asyncio.run(check(board, duration=0.25))
    assert result["clean"] and result["first"] is None and board.slept == [0.25]
    assert result["log"] == []
    assert format_check(result) == (f"protocol checker: clean, no rule broken in the last "
                                    f"0.25 s ({len(RULES)} of {len(RULES)} rules enabled)\n")



@pytest.mark.parametrize("counts, status", [({}, 0), ({A.id: 3}, EXIT_VIOLATIONS)])
def test_exit_status_says_whether_the_bus_was_clean(monkeypatch, counts, status):
    board = CheckerBoard(counts, first=A.id)

    def run_feature(args, feature, **arguments):
        assert feature is check_feature.check
        return asyncio.run(check(board, **arguments))
    monkeypatch.setattr(check_feature, "run_feature", run_feature)
    assert run_cli("--sysfs", "0000:03:00.0", "check")[0] == status
    got, out, err = run_cli("--sysfs", "0000:03:00.0", "--json", "check")
    assert (got, err) == (status, "")
    assert json.loads(out)["clean"] is (not counts)


def test_list_rules_names_both_monitors_and_where_each_rule_is_seen():
    status, out, err = run_cli("--json", "check", "--list-rules")
    assert (status, err) == (0, "")
    rules = json.loads(out)["rules"]
    assert len(rules) == len(RULES) + len(DRIVER_RULES) >= 55
    assert [(r["id"], r["name"], r["seen_by"]) for r in rules] == \
        [(r.id, r.name, r.seen_by) for r in ALL_RULES]
    assert [r["seen_by"] for r in rules] == ["pins"] * len(RULES) + \
        ["drivers"] * len(DRIVER_RULES)
    assert all(set(r) == {"id", "name", "seen_by", "culprit", "description", "reference"}
               and r["description"] and "§" in r["reference"] for r in rules)
    # who breaks a rule: the target for a target's rule, the initiator for a master's
    by_name = {r["name"]: r["culprit"] for r in rules}
    assert (by_name["target_initial_latency"], by_name["irdy_withdrawn"],
            by_name["perr_not_reported"], by_name["serr_not_reported"],
            by_name["contention"]) == ("target", "initiator", "receiver", "reporter", "drivers")
    culprits = json.loads(out)["culprits"]
    assert set(by_name.values()) <= set(culprits)
    status, out, err = run_cli("check", "--list-rules")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["id", "seen", "by", "culprit", "rule", "violation"]
    assert len(lines) == len(ALL_RULES) + 2 + len(culprits)
    assert lines[len(ALL_RULES) + 1].startswith("seen by pins: ")
    assert lines[-1].startswith("culprit drivers: ")
    for line, rule in zip(lines[1:], ALL_RULES):
        assert line.split()[:4] == [str(rule.id), rule.seen_by, rule.culprit, rule.name]
        assert line.endswith(rule.description)


def test_list_rules_takes_no_board_options():
    status, _, err = run_cli("check", "--list-rules", "--clear")
    assert status == 2 and err.splitlines()[-1] == (
        "pcispy check: error: --list-rules reads no board: give it without --clear and "
        "--duration")


# -- in the simulator ----------------------------------------------------------------------

def test_rtc_bridge_breaks_its_rules_and_the_ideal_host_is_clean():
    status, out, err = run_cli("--sim=rtc", "--json", "check", "--duration", "0.002")
    assert (status, err) == (EXIT_VIOLATIONS, "")
    result = json.loads(out)
    assert set(result["violations"]) == set(RTC.breaks_rules)
    assert result["first"]["rule"] in RTC.breaks_rules
    # The simulated system's own checker watched the same bus.
    assert set(result["checker"]["violations"]) == set(RTC.breaks_rules)
    status, out, err = run_cli("--sim", "check", "--duration", "0.001")
    assert (status, err) == (0, "")
    assert out.startswith("protocol checker: clean, no rule broken in the last 0.001 s")
