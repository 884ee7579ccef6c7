# SPDX-License-Identifier: BSD-2-Clause
"""Capture settings as the CLI gives them: filter, trigger and violation specs become the
exact register values, and settings the spy cannot honour are refused in one line before
any board is touched."""

import pytest

from pcispy.gateware.spy.checker import RULES
from pcispy.gateware.spy.filters import IO_COMMANDS
from pcispy.gateware.spy.format import TriggerSource
from pcispy.host.errors import PcispyError
from pcispy.host.features.capture import (check_settings, parse_filter, parse_trigger,
                                          parse_violations)

pytestmark = pytest.mark.spy

EVERY_RULE = (1 << len(RULES)) - 1
FIRST, SECOND = RULES[0].name, RULES[5].name


def _settings(**overrides):
    settings = dict(mode="summary", filters=(), combine="any", trigger="now", pre=0, count=0,
                    latency_timer=0)
    settings.update(overrides)
    return check_settings(**settings)


def test_filter_spec_io_port_pair():
    spec = parse_filter("io:0x70/0xfffe")
    assert spec["enable"] == 1 and spec["exclude"] == 0
    assert spec["commands"] == IO_COMMANDS == (1 << 0b0010) | (1 << 0b0011)  # IOR, IOW
    assert spec["address"] == 0x70 and spec["mask"] == 0xFFFE


def test_violations_all_none_and_named():
    assert parse_violations("all") == EVERY_RULE
    assert parse_violations("NONE") == 0
    assert parse_violations(f"{FIRST},{SECOND}") == (1 << RULES[0].id) | (1 << RULES[5].id)


def test_recorded_violations_and_trigger_rules_share_one_mask():
    # Recorded rules limit what a violation trigger can fire on, and the trigger's named
    # rules limit what is recorded: the board holds one mask for both.
    assert _settings()[1:] == (TriggerSource.IMMEDIATE, EVERY_RULE)
    assert _settings(violations="none")[2] == 0
    assert _settings(trigger=f"violation:{FIRST}")[1:] == (TriggerSource.VIOLATION,
                                                           1 << RULES[0].id)
    assert _settings(trigger="violation", violations=SECOND)[2] == 1 << RULES[5].id
    assert parse_trigger("register") == (TriggerSource.REGISTER, EVERY_RULE)


@pytest.mark.parametrize("overrides, message", [
    ({"violations": "no_such_rule"}, "no checker rule 'no_such_rule'"),
    ({"trigger": "violation", "violations": "none"}, "no rule is left to trigger on"),
    ({"trigger": f"violation:{FIRST}", "violations": SECOND}, "no rule is left"),
    ({"trigger": f"filter:{FIRST}"}, "only 'violation' takes rule names"),
    ({"trigger": "sometimes"}, "give one of now, filter, register, violation"),
    ({"filters": ["io"] * 5}, "5 filters given"),
    ({"pre": -1}, "pre -1"),
    ({"latency_timer": 256}, "latency_timer 256"),
    ({"mode": "both"}, "mode 'both'"),
])
def test_refused_settings(overrides, message):
    with pytest.raises(PcispyError, match=message):
        _settings(**overrides)
