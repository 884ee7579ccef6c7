# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy report``: every experiment of pcispy/app/report.py on the selected machine, written
as a report (Markdown, self-contained HTML, PNG plots) into a directory.

The machine is whatever the transport options select: a board in a slot (``--sysfs``)
or the simulated system (``--sim=PROFILE``). It is Pamette §3.2's "automated program
which can test all the characteristics of a system": DMA write and read with every
command, burst length and idle gap, PIO both ways, the real-time clock's I/O traffic as
the spy sees it, and the interrupt latency, each best figure with the settings that
reached it.

The experiments and the papers (:mod:`pcispy.app.report`, :mod:`pcispy.app.papers`) load
when a report is made: they bring the slices' trace and gateware declarations and numpy,
which the command line as a whole does without.
"""

import contextlib
import os
from dataclasses import asdict

from pcispy.host.command import CliCommand, run_feature
from pcispy.host.errors import PcispyError, UsageError
from pcispy.host.plots import preload

__all__ = ["ReportCommand", "summary"]


def summary(report, written):
    """The JSON summary of a report: the files, the best figures with their settings, the
    real-time clock and interrupt figures, the experiments that failed."""
    # the papers load with a report, not with the command line (the module's docstring)
    from pcispy.app.papers import PAPERS
    machines = report.get("machines", {})
    irq = report.get("irq")
    return {
        "title": report["title"], "machine": report["machine"], "files": written,
        "best": {name: result["best"] for name, result in machines.items()},
        "rtc_transactions": len(report["rtc"]["rows"]) if "rtc" in report else None,
        "irq": {key: irq[key]["us"] for key in ("handler", "user")
                if irq and irq[key].get("samples")} if irq else None,
        "papers": {key: [dict(zip(("figure", "quantity", "pcispy", "paper"), row))
                         for row in paper.figures(report[key])]
                   for key, paper in PAPERS.items() if key in report},
        "errors": report["errors"],
    }


class ReportCommand(CliCommand):
    name = "report"
    help = ("characterise this machine (DMA and PIO bandwidth with the settings that reach "
            "it, the spy's real-time clock log, interrupt latency) into a report directory")
    examples = (
        "pcispy report -o build/report",
        "pcispy --sim=alphastation200 report --quick -o build/as200",
        "pcispy --sim=alphaserver4100 --bus-width 64 report -o build/as4100",
        "pcispy --sysfs 0000:03:00.0 --buffer 0x7f000000:16M report -o myhost",
        "pcispy --json --sim=rtc report --quick -o build/rtc",
    )

    def add_arguments(self, parser):
        parser.add_argument("-o", "--output", required=True, metavar="DIR",
                            help="directory for report.md, report.html and the PNGs "
                                 "(made if missing)")
        parser.add_argument("--quick", action="store_true",
                            help="the quick set of sizes instead of the full one: fewer "
                                 "DMA commands, burst lengths and idle gaps, shorter "
                                 "transfers and captures, fewer interrupts and samples")

    def run(self, args, out):
        # The experiments load when a report is made (the module's docstring); before the
        # folder is made, so that a Ctrl-C while they load leaves none behind.
        from pcispy.app.report import SIZES, suite, write_report
        if os.path.exists(args.output) and not os.path.isdir(args.output):
            raise UsageError(f"-o {args.output}: exists and is not a directory")
        made = not os.path.isdir(args.output)
        try:      # before the (long) run, so that a bad place fails at once
            os.makedirs(args.output, exist_ok=True)
        except OSError as error:
            raise UsageError(f"-o {args.output!r}: {error.strerror}") from None
        sizes = SIZES["quick" if args.quick else "full"]
        preload()                 # the plots' library loads while the experiments run
        try:
            report = run_feature(args, suite, sizes=asdict(sizes), seed=args.seed)
        except BaseException:
            # Nothing is written before every experiment ran: a folder made for this
            # report and left empty by a failure or Ctrl-C goes too.
            if made:
                with contextlib.suppress(OSError):
                    os.rmdir(args.output)
            raise
        report.pop("checker", None)
        written = write_report(report, args.output)
        result = summary(report, written)
        if not args.json:
            self._print(report, out)
            out.write(f"The report is in {os.path.join(args.output, 'report.html')} "
                      f"(and report.md beside it).\n")
        if report["errors"]:
            failed = "; ".join(f"{k}: {v}" for k, v in report["errors"].items())
            raise PcispyError(f"report written to {args.output}, but not every experiment "
                              f"ran ({failed})")
        return result

    @staticmethod
    def _print(report, out):
        # loaded by run() already; named here (the module's docstring)
        from pcispy.app.papers import PAPERS
        from pcispy.app.report import (FIGURES, figure2_rows, irq_rows, rtc_summary,
                                       settings_rows)
        machines = report.get("machines")
        if machines:
            rows = [["Machine", "Source"] + [h for _, h in FIGURES]] + figure2_rows(machines)
            _write_columns(rows, out, "Best sustained MB/s (64-bit in parentheses):")
            _write_columns([["Machine", "Figure", "Width", "MB/s", "Settings"]] +
                           settings_rows(machines), out, "Settings that reached them:")
        if "rtc" in report:
            out.write(f"Real-time clock (spy, {report['rtc']['filter']}): "
                      f"{rtc_summary(report['rtc'])}\n")
        if "irq" in report:
            _write_columns([["Interrupt latency", "Samples", "min us", "median us", "p98 us",
                             "max us"]] + irq_rows(report["irq"]), out, "")
        for key, paper in PAPERS.items():
            if key in report:
                _write_columns([["Figure", "Quantity", "pcispy", "paper"]]
                               + paper.figures(report[key]), out,
                               f"{paper.TITLE}, beside {paper.PAPER}:")


def _write_columns(rows, out, title):
    """Plain aligned columns (the first left-aligned)."""
    if title:
        out.write(title + "\n")
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        out.write("  " + "  ".join(cells).rstrip() + "\n")
