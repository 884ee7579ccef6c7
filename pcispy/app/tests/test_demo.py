# SPDX-License-Identifier: BSD-2-Clause
"""``make demo`` end to end on small sizes: every step runs in the simulator (two host
bridges instead of five), the tables carry the measured and the paper's figures, and the
report directory holds the Markdown, the self-contained HTML and valid PNGs."""

import io
import json

import pytest
from rich.console import Console

from pcispy.app import demo
from pcispy.host.plots import AXES_METADATA
from pcispy.app.report import PAPER_FIGURE2, PLOTS, SIZES
from pcispy.sim.api import CLOCK_PERIOD_NS

pytestmark = pytest.mark.host

PROFILES = ("ideal", "alphastation200")


def test_demo_steps_on_small_sizes(tmp_path):
    """One run of every step (one test, so that pytest-xdist runs it once); each check
    below looks at one step's result."""
    text = io.StringIO()
    console = Console(file=text, width=200, force_terminal=False)
    args = demo.build_parser().parse_args(["--sizes", "tiny", "--profiles",
                                           ",".join(PROFILES), "-o", str(tmp_path)])
    ran = demo.run(args, console), text.getvalue(), tmp_path
    for check in (_every_step_ran, _dma_figures_are_exact_on_the_ideal_host,
                  _figure2_table_shows_ours_beside_the_papers, _rtc_log_has_the_figure3_latencies,
                  _interrupt_step_measured_every_interrupt, _report_files_are_written_and_valid):
        check(ran)


def _every_step_ran(ran):
    context, text, output = ran
    for number, (title, _) in enumerate(demo.STEPS, 1):
        assert f"{number}. {title}" in text
    assert sorted(context["report"]["machines"]) == sorted(PROFILES)


def test_main_ends_with_the_line_naming_the_report(monkeypatch):
    text = io.StringIO()
    monkeypatch.setattr(demo, "STEPS", [])
    assert demo.main(["-o", "somewhere"], Console(file=text, width=200)) == 0
    assert text.getvalue().splitlines()[-1].endswith(
        "The report is in somewhere/report.html (and report.md beside it).")


def test_a_failing_step_ends_in_one_error_line(monkeypatch):
    from pcispy.host.errors import PcispyError

    def failing(console, context):
        raise PcispyError("no simulator today")
    text = io.StringIO()
    monkeypatch.setattr(demo, "STEPS", [("Fails", failing)])
    assert demo.main([], Console(file=text, width=200)) == 2
    assert text.getvalue().splitlines()[-1] == "pcispy: error: no simulator today"


def _dma_figures_are_exact_on_the_ideal_host(ran):
    """Ideal host, 32-bit MW: T transactions of B data phases take T x (B+2) + 3 clocks
    (address + data + idle per burst, 3 to get the bus), so burst 16 over 1 KiB is
    16 x 18 + 3 = 291 clocks; reads take T x (B+3) + 3."""
    context, _, _ = ran
    tiny = SIZES["tiny"]
    best = context["report"]["machines"]["ideal"]["best"]
    words = tiny.dma_length // 4
    burst = max(tiny.bursts)
    transactions = words // burst
    rate = 1e9 / CLOCK_PERIOD_NS[33]          # the simulated bus' clock
    write = best["dma_write"]["32"]
    assert (write["cmd"], write["burst"], write["idle"]) == ("MW", burst, 0)
    assert write["mbps"] == round(tiny.dma_length * rate / (transactions * (burst + 2) + 3)
                                  / 1e6, 3)
    read = best["dma_read"]["32"]
    assert read["mbps"] == round(tiny.dma_length * rate / (transactions * (burst + 3) + 3)
                                 / 1e6, 3)
    # The 64-bit figures exist for the ideal host (it answers ACK64#), not for the
    # AlphaStation (a 32-bit machine).
    assert best["dma_write"]["64"]["mbps"] > 1.9 * write["mbps"]
    assert "64" not in context["report"]["machines"]["alphastation200"]["best"]["dma_write"]


def _figure2_table_shows_ours_beside_the_papers(ran):
    context, text, _ = ran
    _, *paper = PAPER_FIGURE2["AlphaStation 200 4/166"]
    assert "paper, Figure 2" in text
    line = next(line for line in text.splitlines() if "AlphaStation 200 4/166" in line)
    assert [str(pair[0]) for pair in paper] == [cell for cell in line.split()
                                                if cell.isdigit()][-4:]
    # The AlphaStation profile disconnects every 16 words: it cannot beat the ideal host.
    ours = context["report"]["machines"]
    assert ours["alphastation200"]["best"]["dma_read"]["32"]["mbps"] < \
        ours["ideal"]["best"]["dma_read"]["32"]["mbps"]


def _rtc_log_has_the_figure3_latencies(ran):
    context, text, _ = ran
    rows = context["report"]["rtc"]["rows"]
    assert rows, "the rtc scenario made no cycles to 0x70/0x71"
    assert {row["addr"] for row in rows} <= {0x70, 0x71}
    reads = [row for row in rows if row["rw"] == "R"]
    writes = [row for row in rows if row["rw"] == "W" and row["len"]]
    assert reads and all(row["lat"] == 39 for row in reads), reads
    assert writes and all(31 <= row["lat"] <= 34 for row in writes), writes
    assert "Lgth" in text and "delta cycle#" in text


def _interrupt_step_measured_every_interrupt(ran):
    context, text, _ = ran
    irq = context["report"]["irq"]
    assert irq["count"] == SIZES["tiny"].irq_count
    assert irq["handler"]["samples"] == irq["count"]
    # The responder acknowledges 100..400 clocks after INTA# (plus the bus): at 33 MHz,
    # 3 µs at least, and well under 20 µs.
    assert 3 <= irq["handler"]["us"]["min"] <= irq["handler"]["us"]["max"] < 20
    assert "raise -> handler" in text


def _report_files_are_written_and_valid(ran):
    from PIL import Image
    context, _, output = ran
    for name in ("report.md", "report.html"):
        assert (output / name).stat().st_size > 1000
    labels = {}
    for key, (name, _) in PLOTS.items():
        with Image.open(output / name) as image:
            image.verify()
        with Image.open(output / name) as image:
            assert image.format == "PNG" and image.size[0] >= 600
            labels[key] = json.loads(image.info[AXES_METADATA])
    assert [axes[1:] for axes in labels["throughput"]] == \
        [["burst length (data phases)", "MB/s"]] * 2
    assert labels["latency"][0][2] == "transactions"
    assert labels["latency"][0][1].startswith("first-data latency (clocks")
    assert labels["irq"][0][1:] == ["latency (µs)", "interrupts (per bin)"]
    page = (output / "report.html").read_text()
    assert page.count("data:image/png;base64,") == len(PLOTS)
    markdown = (output / "report.md").read_text()
    assert all(f"]({name})" in markdown for name, _ in PLOTS.values())
    assert set(context["written"]) == {str(output / n) for n in
                                       ["report.md", "report.html"] +
                                       [name for name, _ in PLOTS.values()]}
