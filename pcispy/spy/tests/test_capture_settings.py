# SPDX-License-Identifier: BSD-2-Clause
"""Capture settings as the CLI gives them: filter, trigger and violation specs become the
exact register values, and settings the spy cannot honour are refused in one line before
any board is touched."""

import pytest

from pcispy.check.checker import RULES
from pcispy.spy.filters import IO_COMMANDS
from pcispy.spy.format import TriggerSource
from pcispy.host.errors import UsageError
from pcispy.spy.capture_settings_feature import (check_settings, parse_filter, parse_trigger,
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
    ({"violations": "no_such_rule"}, "--violations 'no_such_rule': no checker rule "
                                     "'no_such_rule'"),
    ({"trigger": "violation", "violations": "none"}, "--trigger 'violation' with --violations "
                                                     "'none': no rule is left to trigger on"),
    ({"trigger": f"violation:{FIRST}", "violations": SECOND}, "no rule is left"),
    ({"trigger": f"filter:{FIRST}"}, f"--trigger 'filter:{FIRST}': only 'violation' takes "
                                     "rule names"),
    ({"trigger": "sometimes"}, "--trigger 'sometimes': give one of now, filter, register, "
                               "violation"),
    ({"filters": ["io"] * 5}, "5 --filter options given; the spy has 4 comparators"),
    ({"filters": ["io:0x70/zz"]}, "--filter 'io:0x70/zz': '0x70/zz' is not VALUE or "
                                  "VALUE/MASK"),
    ({"pre": -1}, "--pre -1: give 0..4294967295"),
    ({"count": 1 << 32}, "--count 4294967296: give 0..4294967295"),
    ({"latency_timer": 256}, "--latency-timer 256: give 0..255"),
    ({"mode": "both"}, "--mode 'both': give 'raw' or 'summary'"),
    ({"combine": "some"}, "--combine 'some': give 'any' or 'all'"),
    ({"duration": 0.0}, "--duration 0.0: give a positive number of seconds"),
    ({"ring": True}, "a --ring capture triggered 'now' never stops by itself: give --count "
                     "or --duration"),
])
def test_refused_settings(overrides, message):
    # Argument errors: the CLI ends them with the command's usage line.
    with pytest.raises(UsageError) as error:
        _settings(**overrides)
    assert message in str(error.value)


@pytest.mark.parametrize("overrides, message", [
    ({"idle_compress": False}, "--no-idle-compress applies to --mode raw only; a summary "
                               "capture stores one record per selected transaction"),
    ({"raw_select": True}, "--select applies to --mode raw only; a summary capture stores "
                           "one record per selected transaction"),
])
def test_raw_settings_of_a_summary_capture_are_refused(overrides, message):
    # They would do nothing: a summary capture has no clocks to compress or select.
    with pytest.raises(UsageError) as error:
        _settings(**overrides)
    assert str(error.value) == message
    _settings(mode="raw", **overrides)


def test_ring_capture_stops_by_count_duration_or_trigger():
    for overrides in ({"count": 10}, {"duration": 0.001}, {"trigger": "register"}):
        _settings(ring=True, **overrides)


class _Terminal:
    """Standard error as a terminal (the progress display shows only there)."""
    def isatty(self):
        return True

    def write(self, text):
        return len(text)

    def flush(self):
        pass


class _Bar:
    """rich's Progress, recording what it is told."""
    shown = []

    def __init__(self, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def add_task(self, description, total=None):
        self.shown.append((description, None, None))
        return 0

    def update(self, task, completed=None, total=None, description=None):
        self.shown.append((description, completed, total))


@pytest.mark.parametrize("transport, label", [
    (["--uart", "/dev/ttyUSB7"], "capturing on the board over /dev/ttyUSB7 (Ctrl-C stops)"),
    (["--sysfs", "0000:03:00.0"], "capturing on the board at 0000:03:00.0 (Ctrl-C stops)"),
])
def test_progress_on_hardware_shows_the_live_count(monkeypatch, transport, label):
    import sys
    import rich.progress
    from pcispy.app import cli
    from pcispy.spy import capture_feature as capture
    _Bar.shown = []
    monkeypatch.setattr(rich.progress, "Progress", _Bar)
    monkeypatch.setattr(sys, "stderr", _Terminal())

    def feature(args, name, **arguments):
        arguments["progress"](5, 2048, "post")       # as wait_capture reports
        raise UsageError("stop here")
    monkeypatch.setattr(capture, "run_feature", feature)
    args = cli.build_parser().parse_args(transport + ["capture", "-o", "x.pcitrace"])
    with pytest.raises(UsageError):
        capture._run_with_progress(args, {"duration": None})
    assert _Bar.shown == [(label, None, None), (f"{label} (post)", 5, 2048)]


def test_progress_in_the_simulator_names_the_bound_of_its_wait():
    from pcispy.app import cli
    from pcispy.spy.capture_feature import SIM_WAIT_LIMIT, _progress_label
    args = cli.build_parser().parse_args(["--sim=rtc", "capture", "-o", "x.pcitrace"])
    assert _progress_label(args, {"duration": None}) == (
        f"capturing in the simulator (at most {SIM_WAIT_LIMIT} s of bus time)", False)
    assert _progress_label(args, {"duration": None, "limit": 0.5}) == (
        "capturing in the simulator (at most 0.5 s of bus time)", False)
    assert _progress_label(args, {"duration": 0.25}) == (
        "capturing in the simulator (0.25 s of bus time)", False)
