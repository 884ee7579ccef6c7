# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy report``: the whole suite on one simulated machine through the CLI (one
simulator run, the real-time clock scenario so every experiment has traffic; the seed
papers' experiments too), its JSON summary and files; the report writers and tables on
made-up results; refusals."""

import io
import json

import pytest

from pcispy.app import report
from pcispy.app.cli import main
from pcispy.app.papers import PAPERS
from pcispy.host.errors import PcispyError

pytestmark = pytest.mark.host


def _run(*argv):
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


@pytest.mark.heavy
@pytest.mark.runs_long
def test_report_command_on_the_simulated_rtc_machine(tmp_path, monkeypatch):
    """One simulator run (one test, so that pytest-xdist runs it once): every figure of
    the report, minutes of the simulator, so it starts first (conftest.py)."""
    # --quick on the tiny sizes: the CLI hands the sizes to the simulator as data.
    monkeypatch.setitem(report.SIZES, "quick", report.SIZES["tiny"])
    status, text = _run("--sim=rtc", "--bus-width", "64", "--json", "report", "--quick",
                        "-o", str(tmp_path))
    _writes_the_report_and_a_json_summary(status, text, tmp_path)
    _markdown_has_every_section(tmp_path)


def _writes_the_report_and_a_json_summary(status, text, output):
    assert status == 0, text
    summary = json.loads(text)
    assert summary["machine"]["profile"] == "rtc"
    assert summary["machine"]["pci_clock"] == "33 MHz nominal"    # no oscillator simulated
    assert summary["errors"] == {}
    assert sorted(summary["files"]) == sorted(
        str(output / name) for name in ["report.md", "report.html"] +
        [file for file, _ in report.PLOTS.values()])
    best = summary["best"]["rtc"]
    for key, _ in report.FIGURES:
        assert set(best[key]) == {"32", "64"} and best[key]["32"]["mbps"] > 10
    assert set(best["dma_write"]["32"]) == {"mbps", "cmd", "burst", "idle"}
    assert set(best["pio_read"]["32"]) == {"mbps", "burst"}
    assert summary["rtc_transactions"] >= 4
    assert summary["irq"]["handler"]["median"] > 0
    # The seed papers' figures, each beside the paper's own.
    assert sorted(summary["papers"]) == sorted(PAPERS)
    enblom = {row["quantity"]: row for row in summary["papers"]["enblom"]}
    assert enblom["clocks per word"]["paper"] == "58"
    nikhef = {row["quantity"]: row for row in summary["papers"]["nikhef"]}
    assert nikhef["MB/s at 1 kB"]["paper"] == "~15"
    dart = {row["quantity"]: row for row in summary["papers"]["dart"]}
    assert dart["interrupt overhead, µs"]["paper"] == "8.5"


def _markdown_has_every_section(output):
    markdown = (output / "report.md").read_text()
    for heading in ("## DMA and PIO bandwidth", "## The settings that reached",
                    "## The real-time clock log", "## Interrupt latency") + tuple(
                        f"## {paper.TITLE}" for paper in PAPERS.values()):
        assert heading in markdown
    assert "| 0071 | R | 1 |" in markdown      # a read of the RTC's data port, one phase
    html = (output / "report.html").read_text()
    assert "<img" in html and 'src="data:image/png;base64,' in html
    assert html.count("<img") == html.count('src="data:image/png;base64,')


def _usage_error(capsys, *argv):
    """An argument error: exit status 2, the command's usage line, then one error line."""
    with pytest.raises(SystemExit) as stop:
        _run(*argv)
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("usage: pcispy report")
    return lines[-1]


def test_report_refuses_a_file_as_directory(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    assert _usage_error(capsys, "report", "-o", str(target)) == (
        f"pcispy report: error: -o {target}: exists and is not a directory")


def test_report_refuses_a_directory_it_cannot_make(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert _usage_error(capsys, "report", "-o", str(blocker / "sub")) == (
        f"pcispy report: error: -o {str(blocker / 'sub')!r}: Not a directory")


def test_report_needs_an_output_directory(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["report"], out=io.StringIO())
    assert stop.value.code == 2
    assert "usage: pcispy report" in capsys.readouterr().err


def _machine(dma_write, burst):
    """A made-up characterisation: one DMA write row per burst, one best."""
    entry = {"mbps": dma_write, "cmd": "MW", "burst": burst, "idle": 0}
    rows = [{"cmd": "MW", "width": 32, "idle": 0, "burst": b, "mbps": mbps,
             "error": None, "mismatches": 0}
            for b, mbps in ((1, dma_write / 4), (4, dma_write / 2), (burst, dma_write))]
    return {"identity": {"transport": {"transport": "sim"}},
            "best": {"dma_write": {"32": entry}, "dma_read": {"32": None},
                     "pio_write": {}, "pio_read": {}},
            "dma": rows, "latency_histogram": [0, 5, 3] + [0] * 61}


def test_figure2_rows_put_the_papers_figures_under_the_profile():
    rows = report.figure2_rows({"alphaserver4100": _machine(250.0, 64),
                                "ideal": _machine(132.2, 256)})
    assert rows == [
        ["alphaserver4100", "pcispy, simulated", "250", "-", "-", "-"],
        ["AlphaServer 4100 5/300", "paper, Figure 2", "130 (260)", "120 (240)", "83 (122)",
         "47 (58)"],
        ["ideal", "pcispy, simulated", "132", "-", "-", "-"],
    ]
    assert report.settings_rows({"ideal": _machine(132.2, 0)}) == [
        ["ideal", "DMA Write", "32-bit", "132.2", "cmd MW, burst unlimited, idle 0"]]


def test_every_profile_machine_is_a_figure2_row():
    from pcispy.sim.bfm.profiles import PROFILES
    for profile, machine in report.PROFILE_MACHINES.items():
        assert profile in PROFILES and machine in report.PAPER_FIGURE2


def test_write_report_without_a_simulator(tmp_path):
    from PIL import Image
    from pcispy.host.plots import AXES_METADATA
    made = {"title": "made up", "machine": {"transport": "sim", "profile": "ideal"},
            "machines": {"ideal": _machine(132.2, 256)}, "errors": {"irq": "no uio"}}
    written = report.write_report(made, tmp_path / "out")
    assert [p.rsplit("/", 1)[1] for p in written] == [
        "report.md", "report.html", "throughput_vs_burst.png", "first_data_latency.png"]
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "| irq | no uio |" in markdown and "# made up" in markdown
    with Image.open(tmp_path / "out" / "throughput_vs_burst.png") as image:
        assert json.loads(image.info[AXES_METADATA]) == [
            ["DMA MW", "burst length (data phases)", "MB/s"]]


def test_write_report_into_an_unwritable_place_is_one_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(PcispyError, match="cannot write the report into"):
        report.write_report({"title": "t", "machine": {}}, blocker / "sub")


@pytest.mark.parametrize("sizes, message", [
    ("huge", "one of full, quick, tiny"),
    ({"dma_length": 4}, "missing"),
])
def test_sizes_are_checked(sizes, message):
    with pytest.raises(PcispyError, match=message):
        report.sizes_of(sizes)


@pytest.mark.parametrize("machine, says", [
    ({"transport": "sim", "profile": "alphastation200", "seed": 1, "clock_mhz": 33,
      "bus_width": 64, "session": None, "bars": {}, "pci_clock": "33 MHz nominal"},
     "The simulated PCI system with the alphastation200 host bridge, a 64-bit bus, seed 1; "
     "PCI clock 33 MHz nominal."),
    ({"transport": "sysfs", "bdf": "0000:03:00.0", "driver": "uio_pci_generic", "bars": {},
      "dma_buffer": None, "pci_clock": "33.334 MHz measured"},
     "The board at PCI address 0000:03:00.0 of this machine (Linux sysfs, driver "
     "uio_pci_generic); PCI clock 33.334 MHz measured."),
    ({"transport": "uart", "device": "/dev/ttyUSB0", "baud": 3000000, "resent": 0,
      "broken_answers": 0, "board": {}},
     "The board behind the side channel /dev/ttyUSB0 (3000000 baud)."),
])
def test_the_report_header_names_the_machine_in_a_sentence(machine, says):
    blocks = report.report_blocks({"title": "t", "machine": machine})
    assert blocks[1][1].split(". ", 1)[1] == says
    assert "{" not in blocks[1][1] and "None" not in blocks[1][1]


def test_an_interrupt_section_without_samples_says_why():
    irq = {"count": 5, "missed": 5, "min_gap": 100, "max_gap": 400, "serviced_by": "host",
           "handler": {"samples": 0}, "user": {"samples": 0}}
    blocks = report.report_blocks({"title": "t", "machine": {}, "irq": irq})
    assert blocks[-1] == ("p", "No interrupt was serviced, so there is no distribution: "
                               "every raise found the previous interrupt still pending.")


def test_the_interrupt_histogram_ticks_are_plain_numbers(tmp_path, monkeypatch):
    from pcispy.irq import irq_feature
    shown = {}

    def keep(figure, path):
        figure.canvas.draw()
        shown["x"] = [t.get_text() for t in figure.axes[0].get_xticklabels() if t.get_text()]
        shown["y"] = [t.get_text() for t in figure.axes[0].get_yticklabels() if t.get_text()]
    monkeypatch.setattr(irq_feature, "save_figure", keep)
    bins = [(33, 66, 3), (66, 132, 40), (132, 330, 7)]
    irq_feature.plot_histograms({"clock_mhz": 33, "count": 50, "missed": 0,
                                 "handler": {"histogram": bins}, "user": {}},
                                tmp_path / "irq.png")
    assert shown["x"] and shown["y"]
    assert all(label.replace(".", "").isdigit() for label in shown["x"] + shown["y"]), shown
    assert {"1", "2", "5"} <= set(shown["x"]) and {"5", "10", "20"} <= set(shown["y"])
