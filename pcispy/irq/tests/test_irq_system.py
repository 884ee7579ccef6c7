# SPDX-License-Identifier: BSD-2-Clause
"""Interrupt latency end to end in the simulated system (benches in bench_irq.py), and
``pcispy irq`` through the command line."""

import json

import pytest

from pcispy.app.cli import main
from pcispy.sim.launcher import run_bench
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.irq

BENCH = "pcispy.irq.tests.bench_irq"


def test_irq_benches():
    # One simulator run for every bench (the model is shared with every system test).
    run_bench(BENCH, None, SystemConfig(width=32), seed=3)


def test_cli_json_and_plot(tmp_path, capsys):
    import io
    out = io.StringIO()
    plot = tmp_path / "irq.png"
    status = main(["--sim", "--seed", "2", "--json", "irq", "--count", "8", "--min-gap",
                   "1000", "--max-gap", "2000", "--hist", str(plot)], out=out)
    assert status == 0, capsys.readouterr().err
    result = json.loads(out.getvalue())
    assert result["count"] == 8 and result["missed"] == 0 and result["acked"] == 9
    for key in ("handler", "user"):
        stats = result[key]
        assert stats["min"] <= stats["median"] <= stats["p98"] <= stats["max"]
        assert sum(count for _, _, count in stats["histogram"]) == 8
        low, high, _ = stats["histogram"][0]
        assert low <= stats["min"] < high
        low, high, _ = stats["histogram"][-1]
        assert low <= stats["max"] < high
        assert stats["us"]["max"] == round(stats["max"] / 33, 3)
    # The ideal profile's responder waits 100..400 clocks before its write.
    assert 100 < result["handler"]["min"] and result["handler"]["max"] < 400 + 20
    assert result["user"]["min"] > result["handler"]["min"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_refused_gaps(capsys):
    import io
    status = main(["--sim", "irq", "--count", "2", "--min-gap", "500", "--max-gap", "400"],
                  out=io.StringIO())
    err = capsys.readouterr().err
    assert status == 2
    assert err.strip().splitlines() == [
        "pcispy: error: the board refused to arm the interrupt generator: min gap below 4 "
        "clocks or above the max gap (min gap 500, max gap 400, seed 1)"]


@pytest.mark.parametrize("argument", [["--count", "0"], ["--min-gap", "-3"],
                                      ["--max-gap", "x"]])
def test_cli_bad_arguments(argument, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["irq"] + argument)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("usage: pcispy irq")
