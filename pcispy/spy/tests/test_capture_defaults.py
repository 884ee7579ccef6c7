# SPDX-License-Identifier: BSD-2-Clause
"""What an unfiltered capture holds by default, as a bus analyzer's user expects: the
bus's transactions, not the tool's own polls of the board's registers (BAR0) nor a
violation event beside each transaction of a bridge that breaks a rule in every one; the
summary line says what was left out and the option that keeps it (``--own``,
``--violations all``)."""

import json

import pytest

from pcispy.app.tests._cli import run_cli
from pcispy.spy.format import RecordKind
from pcispy.trace.file import read_trace

pytestmark = [pytest.mark.spy, pytest.mark.bfm]

#: Transactions each capture keeps: five clock ticks of the rtc scenario, 8 I/O each.
COUNT = 40


def test_own_polls_and_violations_are_left_out_by_default_and_said(sessions, tmp_path):
    status, out, err = run_cli("--sim=rtc", "--json", "info")
    assert status == 0, err
    bar0 = json.loads(out)["transport"]["bars"]["0"]
    default, kept = tmp_path / "default.pcitrace", tmp_path / "kept.pcitrace"
    status, out, err = run_cli("--sim=rtc", "capture", "--count", str(COUNT), "-o",
                               str(default))
    assert status == 0, err
    assert out.endswith("; left out: the tool's own register accesses (--own keeps them), "
                        "protocol violations (--violations all stores them; `pcispy check` "
                        "counts them)\n"), out
    status, out, err = run_cli("--sim=rtc", "capture", "--count", str(COUNT), "--own",
                               "--violations", "all", "-o", str(kept))
    assert status == 0 and "left out" not in out, (out, err)

    def own_and_violations(path):
        trace = read_trace(path)
        summaries = trace.summaries
        own = sum(1 for address in summaries["address"]
                  if bar0["address"] <= int(address) < bar0["address"] + bar0["size"])
        return own, len(trace.indices(RecordKind.VIOLATION)), len(summaries)
    own, violations, transactions = own_and_violations(default)
    assert (own, violations) == (0, 0) and COUNT - 1 <= transactions <= COUNT
    own, violations, _ = own_and_violations(kept)
    assert own > 0 and violations > 0, (own, violations)
