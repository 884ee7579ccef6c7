# SPDX-License-Identifier: BSD-2-Clause
"""The seed papers' experiments (pcispy/app/papers/) in the simulator, each on the
machine it is shaped for, one simulator run each; their tables and the demo's step on
made-up results."""

import io

import pytest
from rich.console import Console

from pcispy.app import demo
from pcispy.app.papers import dart, enblom, nikhef
from pcispy.app.report import SIZES, paper
from pcispy.sim.bfm.bridge_control import BRIDGE_PROFILES
from pcispy.sim.launcher import machine_config, run_feature

pytestmark = pytest.mark.host


def _run(key, profile, sizes="tiny"):
    return run_feature(paper, {"key": key, "sizes": sizes},
                       machine_config(profile), profile=profile)


@pytest.mark.heavy
def test_enblom_reads_retried_writes_broken_reads_slower():
    """The board behind the 21554-shaped bridge: every single-word read is retried until
    the word comes and then moves it (Figure 8); each 16-byte write reaches the board as a
    one-word write and a three-word burst (Figure 9: the flush starts with the first word
    in); reads move several times fewer bytes than writes (Figures 7 and 10); both buses
    keep every rule."""
    result = _run("enblom", enblom.PROFILE)
    words = result["reads"]["words"]
    assert len(words) == SIZES["tiny"].bridge_words
    assert result["reads"]["mismatches"] == 0 and result["reads"]["error"] is None
    for word in words:
        assert word["retries"] >= 2 and word["attempts"] == word["retries"] + 1, word
        # Retried attempts come at the board's own pace, as regular as Figure 8's.
        assert len(set(word["retry_clocks"])) == 1, word
        # The data comes once the bridge's crossings and the host memory are done.
        delays = BRIDGE_PROFILES["21554"]
        assert word["first_to_data_clocks"] > delays.request_delay + delays.completion_delay
    groups = SIZES["tiny"].bridge_write_bytes // enblom.WRITE_GROUP
    assert result["writes"]["words_per_transaction"] == [1, 3] * groups
    assert all(row["term"] == "completion" for row in result["writes"]["rows"])
    single = next(entry for entry in result["pio"] if entry["burst"] == 1)
    assert single["errors"] == 0 and single["write_mbps"] > 3 * single["read_mbps"]
    checker = result["checker"]
    assert not checker["violations"] and not checker["secondary"]["violations"], checker
    rows = enblom.figure8_rows(result)
    assert [row[4] for row in rows if row[4]].count("OK") == len(words)


def test_nikhef_bandwidth_rises_with_block_size():
    """The per-block setup costs the same at every size, so short blocks are slow and
    long ones approach the transfer's own rate; the spy sees the engine's bursts of
    AMCC_BURST words, moving data in well under half the block's clocks."""
    result = _run("nikhef", nikhef.PROFILE)
    rows = result["rows"]
    assert [row["size"] for row in rows] == list(SIZES["tiny"].block_sizes)
    assert rows[0]["mbps"] < rows[-1]["mbps"] <= rows[-1]["transfer_mbps"]
    assert all(row["setup_clocks"] > 0 for row in rows)
    view = result["view"]
    reads = [row for row in view["rows"] if row["cmd"] == "MRM"]
    assert sum(row["len"] for row in reads) == view["size"] // 4 == view["data_phases"]
    assert all(row["len"] <= nikhef.AMCC_BURST for row in reads)
    assert 0.15 < view["busy_fraction"] < 0.5, view
    assert view["retried"] == 0 and view["bursts"] == len(reads), view
    # Figure 4's figures come from the capture: the engine's bursts, the host bridge's
    # read latency (the profile's 11-15 clocks), the engine's idle clocks at least.
    assert view["burst_words"][:-1] == [nikhef.AMCC_BURST] * (len(reads) - 1)
    assert all(11 <= clocks <= 15 for clocks in view["first_data_clocks"]), view
    assert min(view["between_bursts_clocks"]) >= nikhef.AMCC_IDLE, view
    figures = {row[1]: row[2:] for row in nikhef.figures(result)}
    assert figures["words per burst (the block's last left out)"] == ["11", "10-12"]
    assert result["fit"]["setup_us"] > 0
    assert not result["checker"]["violations"]


def test_dart_register_latency_and_interrupt_overhead():
    """Reads and writes of a board register cost the host bridge a handful of clocks,
    each the same; the timer loop's quiet intervals are all alike, and every interrupt
    adds the simulated handler's time plus its acknowledge to one interval."""
    result = _run("dart", dart.PROFILE)
    registers = result["registers"]
    assert registers["method"] == "bus"
    for key in ("read", "write"):
        stats = registers[key]
        assert stats["samples"] == SIZES["tiny"].register_count
        assert stats["min"] == stats["max"] and 3 <= stats["min"] <= 20, stats
    interrupts = result["interrupts"]
    assert interrupts["baseline"]["min"] == interrupts["baseline"]["max"]
    extra, handler = interrupts["extra"], interrupts["handler_clocks"]
    assert extra["samples"] >= 1 and interrupts["raised"] - 1 <= extra["samples"], interrupts
    assert extra["samples"] <= interrupts["raised"]
    overhead = interrupts["overhead"]["clocks"]
    assert handler <= overhead <= handler + 30, interrupts
    assert not result["checker"]["violations"]


def _made_up_enblom():
    """An Enblom result of two reads of one word (a retry, then the word) and one 16-byte
    write group, as :func:`enblom.bridge_traffic` returns it."""
    return {"clock_mhz": 33, "gap": 30,
              "reads": {"rows": [
                  {"addr": 0, "cmd": "MR", "term": "retry", "answer": 10},
                  {"addr": 0, "cmd": "MR", "term": "completion", "answer": 15}],
                  "words": [{"address": 0, "attempts": 2, "retries": 1, "retry_clocks": [5],
                             "first_to_data_clocks": 5, "word_clocks": None}],
                  "mismatches": 0, "error": None},
              "writes": {"rows": [{"addr": 0x100, "len": 1, "answer": 20},
                                  {"addr": 0x104, "len": 3, "answer": 25}],
                         "words_per_transaction": [1, 3], "start_clocks": [5]},
              "pio": [{"burst": 1, "bytes": 256, "write_mbps": 30.0, "read_mbps": 4.0,
                       "errors": 0}]}


def test_nikhef_bursts_are_the_reads_that_moved_data():
    """Behind a bridge the engine's reads are retried until the bridge has the data: the
    retried attempts are counted apart, not as bursts of no words."""
    def row(time, length, lat, cmd="MRM"):
        return {"time": time, "cmd": cmd, "len": length, "lat": lat, "dur": lat + length + 2}
    view = nikhef.block_view([row(0, 0, 2), row(4, 0, 2), row(8, 8, 20), row(20, 1, 2, "MR"),
                              row(50, 0, 2), row(54, 3, 18)])
    assert view["bursts"] == 2 and view["retried"] == 3
    assert view["burst_words"] == [8, 3] and view["first_data_clocks"] == [20, 18]
    assert view["between_bursts_clocks"] == [54 - (8 + 30)]
    assert view["data_phases"] == 11 and view["clocks"] == 54 + 23
    assert view["busy_fraction"] == round(11 / 77, 3)


def test_paper_tables_on_a_made_up_result():
    """The tables put the paper's figures beside ours, row for row."""
    result = _made_up_enblom()
    rows = enblom.figure8_rows(result)
    assert rows[0][:6] == ["0", "", "MR", "00000000", "Retry", "179.4ns"]
    assert rows[1][1] == "151.5ns" and rows[1][4] == "OK"
    assert len(rows) == len(enblom.FIGURE8)
    writes = enblom.figure9_rows(result)
    assert [row[2] for row in writes[:4]] == [".", "Start", "B", "B"]
    assert writes[1][1] == "151.5ns" and writes[2][1] == "30.3ns"
    figures = {row[1]: row[2:] for row in enblom.figures(result)}
    assert figures["clocks from the first attempt to the data"] == ["5", "26"]


def test_demo_paper_step_prints_the_tables_and_both_checkers(monkeypatch):
    """``make demo --papers``'s step runs the paper's experiment on the machine it is
    shaped for (the bridge's, 32-bit) and prints its tables and the verdicts of both
    buses' checkers."""
    ran = []

    def run_feature(feature, arguments, config, *, profile, seed):
        ran.append((arguments, config, profile, seed))
        return {**_made_up_enblom(), "checker": {
            "violations": {}, "secondary": {"violations": {"devsel_late": 2}}}}
    monkeypatch.setattr(demo, "run_feature", run_feature)
    text = io.StringIO()
    context = {"sizes": "tiny", "seed": 5, "report": {}}
    step = dict(demo.PAPER_STEPS)[enblom.TITLE]
    step(Console(file=text, width=200, force_terminal=False), context)
    assert ran == [({"key": "enblom", "sizes": "tiny", "seed": 5},
                    machine_config(enblom.PROFILE), enblom.PROFILE, 5)]
    assert ran[0][1].bridge and ran[0][1].width == 32
    assert context["report"]["enblom"]["gap"] == 30
    printed = text.getvalue()
    assert "clocks from the first attempt to the data" in printed
    assert "956.8ns" in printed                       # the paper's Figure 8 beside ours
    assert "Protocol checker: no rule broken" in printed
    assert ("Protocol checker of the board's bus behind the bridge: devsel_late x2"
            in printed)
