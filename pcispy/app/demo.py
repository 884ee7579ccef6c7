# SPDX-License-Identifier: BSD-2-Clause
"""``make demo``: what pcispy is for, in a few minutes, on the simulated bus.

Five steps, each one simulator run of the features that also run on a board
(pcispy/app/report.py): identify the board; the DMA characterisation of the ideal host and of
each host bridge shaped after a Pamette Figure 2 machine, beside the paper's figures; the
spy's log of the real-time clock (Pamette Figure 3); the interrupt-latency experiment;
the report (Markdown, HTML, PNG plots) in build/demo/. With ``--papers`` three more steps
before the report, the other seed papers' experiments (pcispy/app/papers/), each on the
simulated machine it is shaped for. The first run builds the Verilator model of the
simulated system (a few minutes; with ``--papers`` a second one, with the bridge); later
runs reuse them.
"""

import argparse
import sys
import time
from dataclasses import asdict

from rich.console import Console
from rich.table import Table

from pcispy.app import report as suite
from pcispy.app.papers import PAPERS
from pcispy.board.identity_feature import config_space, info, lspci_text
from pcispy.host.errors import PcispyError
from pcispy.sim.bfm.profiles import profile_by_name
from pcispy.sim.launcher import machine_config, run_feature
from pcispy.sim.model import build_system
from pcispy.sim.system import SystemConfig

__all__ = ["main", "run", "build_parser", "STEPS", "PAPER_STEPS", "DEMO_PROFILES", "DEMO_WIDTH", "DEFAULT_OUTPUT", "identify"]

#: One bus width for every step, so that one Verilator model serves the whole demo; 64
#: bits, so that the 64-bit machines show their 64-bit figures.
DEMO_WIDTH = 64
#: The host bridges characterised: the ideal one, then each shaped after a Figure 2 row.
DEMO_PROFILES = ("ideal",) + tuple(suite.PROFILE_MACHINES)
DEFAULT_OUTPUT = "build/demo"


async def identify(transport):
    """The board's identity (``pcispy info``) and configuration space in one run."""
    return dict(await info(transport), config=(await config_space(transport))["config"])


def _run(context, title, feature, arguments=None, profile="ideal"):
    """Run ``feature`` in the simulator with a spinner naming the step."""
    with context["console"].status(f"[bold]{title}[/] (in the simulator)"):
        return run_feature(feature, arguments or {}, SystemConfig(width=DEMO_WIDTH),
                           profile=profile, seed=context["seed"])


def _prepare(console):
    """Elaborate the simulated system and find (or build) its Verilator model, once for
    every step."""
    with console.status(f"[bold]preparing the simulated {DEMO_WIDTH}-bit system[/] (the "
                        "first run builds its model: a few minutes)"):
        build_system(SystemConfig(width=DEMO_WIDTH))


def _table(headings, rows, title=None):
    table = Table(*headings, title=title)
    for column in table.columns[1:]:
        column.justify = "right"
    for row in rows:
        table.add_row(*row)
    return table


def _step_identify(console, context):
    info = _run(context, "identifying the board", identify)
    console.print(f"pcispy board [bold]{info['vendor_id']:04x}:{info['device_id']:04x}[/], "
                  f"gateware {info['gateware_version']}, {info['bus_width']}-bit bus at "
                  f"{info['clock_mhz']} MHz, on the simulated system "
                  f"(profile {info['transport']['profile']})")
    console.print(_table(("BAR", "kind", "address", "size"),
                         [(index, bar["kind"], f"{bar['address']:#010x}", str(bar["size"]))
                          for index, bar in sorted(info["transport"]["bars"].items())]))
    console.print("Configuration space, as `lspci -xxx` prints it (`pcispy config --lspci`):")
    console.print(lspci_text(info["config"]), markup=False, highlight=False)
    context["report"]["machine"] = info["transport"]


def _step_bandwidth(console, context):
    result = _run(context, f"DMA and PIO on {len(context['profiles'])} host bridges",
                  suite.characterise_profiles,
                  {"profiles": list(context["profiles"]), "sizes": context["sizes"]})
    machines = result["machines"]
    context["report"]["machines"] = machines
    console.print(_table(["Machine", "Source"] + [h for _, h in suite.FIGURES],
                         suite.figure2_rows(machines),
                         title="Best sustained MB/s (64-bit in parentheses)"))
    console.print(f"'paper, Figure 2' rows: {suite.PAPER}, Figure 2, measured on the machine "
                  "the profile above is shaped after (the paper's numbers, not ours).")
    console.print(_table(("Machine", "Figure", "Width", "MB/s", "Settings"),
                         suite.settings_rows(machines),
                         title="The settings that reached each best figure"))
    _checker_line(console, result["checker"])


def _checker_line(console, checker):
    broken = ", ".join(f"{name} x{count}" for name, count in checker["violations"].items())
    console.print("Protocol checker: " + (f"rules broken: {broken}" if broken
                                          else "no rule broken"))
    if "secondary" in checker:
        behind = checker["secondary"]["violations"]
        console.print("Protocol checker of the board's bus behind the bridge: " + (
            ", ".join(f"{name} x{count}" for name, count in behind.items())
            if behind else "no rule broken"))


def _step_rtc(console, context):
    rtc = _run(context, "capturing the real-time clock with the spy",
               suite.rtc_log, {"seconds": context["sizes"]["rtc_seconds"]},
               profile="rtc")
    context["report"]["rtc"] = rtc
    headings, rows = suite.rtc_table(rtc)
    console.print(f"An OS clock tick reads the PC real-time clock behind a PCI-to-ISA bridge "
                  f"(index to 0x70, data from 0x71); the spy's log with the filter "
                  f"{rtc['filter']}, as Pamette Figure 3:")
    console.print(_table(headings, rows))
    console.print(suite.rtc_summary(rtc))
    _checker_line(console, rtc["checker"])


def _step_irq(console, context):
    irq = _run(context, "measuring interrupt latency", suite.interrupt_latency,
               {"count": context["sizes"]["irq_count"], "seed": context["seed"]})
    context["report"]["irq"] = irq
    console.print(f"{irq['count']} interrupts at pseudo-random instants, serviced by the "
                  f"{irq['serviced_by']} ({irq['missed']} raises found one still pending):")
    console.print(_table(("Distribution", "Samples", "min µs", "median µs", "p98 µs",
                          "max µs"), suite.irq_rows(irq)))
    bins = irq["handler"].get("histogram", [])
    peak = max((count for *_, count in bins), default=0)
    for low, high, count in bins:
        span = f"{low / irq['clock_mhz']:7.2f} .. {(high or 2 * low) / irq['clock_mhz']:7.2f}"
        console.print(f"  {span} µs {count:5d} " + "#" * max(1, round(40 * count / peak)))


def _step_report(console, context):
    with console.status("[bold]writing the report"):
        written = suite.write_report(context["report"], context["output"])
    for path in written:
        console.print(f"  {path}")
    context["written"] = written


def _paper_step(key):
    """The step of the seed paper ``key``: its experiment in the simulator, on the machine
    it is shaped for, its report section printed."""
    module = PAPERS[key]

    def step(console, context):
        # A machine with a bridge is a 32-bit system of its own (a second model).
        bridged = profile_by_name(module.PROFILE).bridge is not None
        config = machine_config(module.PROFILE, **({} if bridged else {"width": DEMO_WIDTH}))
        with console.status(f"[bold]{module.TITLE}[/] (in the simulator, --sim="
                            f"{module.PROFILE})"):
            result = run_feature(suite.paper, {"key": key, "sizes": context["sizes"],
                                               "seed": context["seed"]},
                                 config, profile=module.PROFILE, seed=context["seed"])
        context["report"][key] = result
        for kind, *content in module.blocks(result):
            if kind == "table":
                console.print(_table(*content))
            elif kind == "p":
                console.print(content[0], markup=False, highlight=False)
        _checker_line(console, result["checker"])
    return step


#: (title, function) of the seed papers' steps (``--papers``), before the report.
PAPER_STEPS = [(module.TITLE, _paper_step(key)) for key, module in PAPERS.items()]

#: (title, function) of every step, in order.
STEPS = [
    ("Identify the board", _step_identify),
    ("DMA and PIO bandwidth of five host bridges (Pamette Figure 2)", _step_bandwidth),
    ("The real-time clock through the spy (Pamette Figure 3)", _step_rtc),
    ("Interrupt latency (Pamette §5)", _step_irq),
    ("The report", _step_report),
]


def build_parser():
    parser = argparse.ArgumentParser(prog="pcispy-demo", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--output", default=DEFAULT_OUTPUT,
                        help=f"where the report goes (default {DEFAULT_OUTPUT})")
    parser.add_argument("--sizes", choices=tuple(suite.SIZES), default="quick",
                        help="how much each experiment does (default quick)")
    parser.add_argument("--profiles", default=",".join(DEMO_PROFILES),
                        help="host-bridge profiles of step 2, comma-separated")
    parser.add_argument("--papers", action="store_true",
                        help="also the other seed papers' experiments (Enblom's bridge, "
                             "NIKHEF's block sweep, DART's timing); the bridge builds a "
                             "second model the first time")
    return parser


def run(args, console):
    """Run every step; return the context (``report``: the report dict, ``written``: the
    files; wall times: ``seconds`` in all, ``model_seconds`` preparing the simulated
    system, ``step_seconds`` per step). A step's expected failure raises
    :class:`PcispyError`."""
    context = {"seed": args.seed, "output": args.output,
               "sizes": asdict(suite.SIZES[args.sizes]),
               "profiles": [p for p in args.profiles.split(",") if p],
               "console": console,
               "report": {"title": "pcispy demo: the simulated PCI system", "errors": {}}}
    start = time.monotonic()
    _prepare(console)
    context["model_seconds"] = time.monotonic() - start
    context["step_seconds"] = []
    steps = STEPS[:-1] + (PAPER_STEPS if args.papers else []) + STEPS[-1:]
    for number, (title, step) in enumerate(steps, 1):
        console.rule(f"[bold]{number}. {title}")
        began = time.monotonic()
        step(console, context)
        context["step_seconds"].append(time.monotonic() - began)
        console.print(f"[dim]step {number}: {context['step_seconds'][-1]:.0f} s")
    console.rule()
    context["seconds"] = time.monotonic() - start
    return context


def main(argv=None, console=None):
    args = build_parser().parse_args(argv)
    console = console or Console()
    try:
        context = run(args, console)
    except PcispyError as error:
        console.print(f"[red]pcispy: error: {error}")
        return 2
    console.print(f"Demo finished in {context['seconds']:.0f} s. The report is in "
                  f"{context['output']}/report.html (and report.md beside it).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
