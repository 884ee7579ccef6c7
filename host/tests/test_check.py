# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy check``: the board's protocol checker read register by register (a stand-in
board whose check block holds known flags and counters), the report, the exit status (0
clean, 3 rules broken), --clear and --duration; then in the simulator: the rtc scenario's
legacy bridge breaks its rules on purpose (the board's checker names the same rules as the
simulated system's own checker), the ideal host leaves the bus clean."""

import asyncio
import json

import pytest

from pcispy.gateware.regs import REGISTER_MAP
from pcispy.gateware.spy.checker import RULES
from pcispy.host.features import check as check_feature
from pcispy.host.features.check import EXIT_VIOLATIONS, check, format_check
from pcispy.sim.bfm.profiles import RTC

from _cli import run_cli
from _standin import StandInBoard

pytestmark = pytest.mark.host

A, B = RULES[2], RULES[40]


class CheckerBoard(StandInBoard):
    """BAR0 of a board whose checker saw ``counts`` ({rule id: count}), the first being
    ``first`` at cycle 1000, now at cycle 1500; ``disabled`` rule ids."""
    def __init__(self, counts, first=None, disabled=()):
        self.counts = dict(counts)
        self.first = first
        self.index = 0
        self.now = 1500
        self.enable = ((1 << len(RULES)) - 1) & ~sum(1 << rule for rule in disabled)
        self.slept = []
        self.log = []
        self.by_offset = {address: name for name, address, _ in REGISTER_MAP}

    def _value(self, name):
        flags = sum(1 << rule for rule in self.counts)
        field = REGISTER_MAP["check.status"][1]
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
        elif name == "check.control" and value & 1:
            self.counts, self.first = {}, None

    async def sleep(self, seconds):
        self.slept.append(seconds)


def test_report_of_broken_rules():
    board = CheckerBoard({A.id: 7, B.id: 2}, first=B.id, disabled=(5,))
    result = asyncio.run(check(board))
    assert result == {"clean": False, "violations": {A.name: 7, B.name: 2},
                      "first": {"rule": B.name, "cycle": 1000, "clocks_ago": 500},
                      "cycle": 1500, "rules": len(RULES), "disabled": [RULES[5].name],
                      "cleared_before": False, "cleared_after": False, "duration": None}
    width = max(len(A.name), len(B.name))
    assert format_check(result) == (
        f"protocol checker: 2 rules broken since the last clear ({len(RULES) - 1} of "
        f"{len(RULES)} rules enabled)\n"
        f"  {A.name:{width}s} {7:10d}\n  {B.name:{width}s} {2:10d}\n"
        f"first violation: {B.name} at checker cycle 1000 (500 clocks ago)\n"
        f"disabled: {RULES[5].name}\n")
    # Nothing was written but the counter select.
    assert {entry[1] for entry in board.log if entry[0] == "write"} == {"check.count_index"}


def test_clear_after_reading_and_duration_clears_first():
    board = CheckerBoard({A.id: 1}, first=A.id)
    result = asyncio.run(check(board, clear=True))
    assert result["violations"] == {A.name: 1} and result["cleared_after"]
    assert board.log[-1] == ("write", "check.control", 1) and board.counts == {}
    board = CheckerBoard({A.id: 1}, first=A.id)
    result = asyncio.run(check(board, duration=0.25))
    assert result["clean"] and result["first"] is None and board.slept == [0.25]
    assert format_check(result) == (f"protocol checker: clean, no rule broken in the last "
                                    f"0.25 s ({len(RULES)} of {len(RULES)} rules enabled)\n")



@pytest.mark.parametrize("counts, status", [({}, 0), ({A.id: 3}, EXIT_VIOLATIONS)])
def test_exit_status_says_whether_the_bus_was_clean(monkeypatch, counts, status):
    board = CheckerBoard(counts, first=A.id)

    def run_feature(args, feature, **arguments):
        assert feature == "pcispy.host.features.check:check"
        return asyncio.run(check(board, **arguments))
    monkeypatch.setattr(check_feature, "run_feature", run_feature)
    assert run_cli("--sysfs", "0000:03:00.0", "check")[0] == status
    got, out, err = run_cli("--sysfs", "0000:03:00.0", "--json", "check")
    assert (got, err) == (status, "")
    assert json.loads(out)["clean"] is (not counts)


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
