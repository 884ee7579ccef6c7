# SPDX-License-Identifier: BSD-2-Clause
"""The board as a PCI target in the Verilator system, 32 and 64-bit (benches in
bench_target.py): enumeration and config space, every exerciser knob cycle-exact,
aborts and parity on both sides, PIO integrity on every host profile, the target and pio
features; and a board built with slow decode, as the bitstreams are."""

import pytest

from pcispy.sim.launcher import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.target

BENCH = "pcispy.exerciser.tests.bench_target"


#: The benches of each width, in one simulator process: each resets the system and
#: starts it afresh, and a simulator's start (about 3 s of CPU) costs more than most of
#: them take (a failure names its bench).
BENCHES = ["enumeration_and_config", "response_knobs", "noncompliant_response",
           "aborts_and_parity", "pio_integrity", "features"]


@pytest.mark.parametrize("width", [32, 64])
def test_target_in_system(width):
    run_bench(BENCH, BENCHES, SystemConfig(width=width))


@pytest.mark.heavy
@pytest.mark.runs_long
def test_slow_decode_board_in_system():
    run_bench(BENCH, "slow_decode", SystemConfig(width=32, decode="slow"))


def test_cli_target_refusal_and_pio_json(capsys):
    """A refused value ends in one ``pcispy: error:`` line naming the reason (exit 2);
    ``pio --json`` prints one object with the figures the issue names."""
    import json
    from pcispy.app.cli import main
    assert main(["target", "--devsel", "subtractive", "--initial-wait", "13"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pcispy: error: ") and \
        "initial latency over 16 clocks" in err, err
    assert main(["--json", "pio", "--size", "4K", "--burst", "16"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["bytes"] == 4096 and result["errors"] == 0
    assert result["write"]["transactions"] == 64 and result["read"]["transactions"] == 64
    assert {"write_mbps", "read_mbps", "read_first_data_clocks"} <= set(result)
