# SPDX-License-Identifier: BSD-2-Clause
"""The experiment suite behind ``make demo`` and ``pcispy report``, and the report it writes.

Pamette §3.2: "an automated program which can test all the characteristics of a system
by generating all kinds of traffic and modifying parameters". The experiments are
features (``async def f(transport, **arguments) -> dict``, JSON in and out), so they run
on a board in a slot and inside the simulator alike:

- :func:`characterise`: DMA write and read with every command x burst x idle of a
  :class:`Sizes`, PIO write and read with every PIO burst, for each bus width; the best
  figure of each kind (Pamette Figure 2's columns) with the settings that reached it; the
  spy's first-data latency histogram over the DMA traffic;
- :func:`rtc_log`: the spy's summary capture of I/O 0x70/0x71 (the PC real-time clock,
  Pamette Figure 3) for a stretch of bus time;
- :func:`interrupt_latency`: ``pcispy irq`` (Pamette §5);
- the other seed papers' experiments (pcispy/app/papers/: Enblom's bridge, NIKHEF's
  block sweep, DART's register and interrupt timing), :data:`~pcispy.app.papers.PAPERS`;
- :func:`suite`: all of them on one machine (``pcispy report``);
- :func:`characterise_profiles`: :func:`characterise` on several simulated host bridges
  in one simulator run (``make demo``; simulation only).

A report is a dict: ``{"title", "machine", "machines": {name: characterisation},
"rtc", "irq", "enblom", "nikhef", "dart", "errors"}`` (missing experiments are absent). :func:`write_report` turns it
into ``report.md``, a self-contained ``report.html`` (plots embedded) and the PNGs, all
from one list of blocks (:func:`report_blocks`).
"""

import base64
import datetime
import html
import os
from dataclasses import asdict, dataclass

from pcispy.app.papers import PAPERS
from pcispy.host.errors import PcispyError
from pcispy.board.identity_feature import info
from pcispy.dma.sweep_feature import sweep
from pcispy.exerciser.pio_feature import pio
from pcispy.host.board import Board
from pcispy.host.plots import plot_latency_histograms, plot_throughput_by_command
from pcispy.irq.irq_feature import irq_latency, plot_histograms
from pcispy.sim.bfm.profiles import profile_by_name
from pcispy.spy.capture_feature import capture, program_filters
from pcispy.spy.capture_settings_feature import parse_filter
from pcispy.trace.decode import summarise
from pcispy.trace.export import TABLE_COLUMNS, summary_rows
from pcispy.spy.stats_feature import read_histograms
from pcispy.trace.file import parse_trace, trace_bytes

__all__ = ["PAPER", "PAPER_FIGURE2", "PROFILE_MACHINES", "FIGURES", "Sizes", "SIZES",
           "sizes_of", "characterise", "rtc_summary", "characterise_profiles", "rtc_log",
           "interrupt_latency", "paper", "suite", "figure2_rows", "settings_rows", "rtc_table",
           "irq_rows", "report_blocks", "write_markdown", "write_html", "write_plots",
           "write_report", "PLOTS", "RTC_FILTER", "format_figure"]

#: Where the paper's numbers come from.
PAPER = ("L. Moll and M. Shand, \"Systems Performance Measurement on PCI Pamette\", "
         "FCCM'97")

#: Pamette Figure 2, "Maximum sustained bandwidth on selected systems", in MB/s: per
#: platform, its CPU & host bridge and ``(32-bit, 64-bit or None)`` per column.
PAPER_FIGURE2 = {
    "AlphaServer 4100 5/300": ("21164/300 w/ custom bridge",
                               (130, 260), (120, 240), (83, 122), (47, 58)),
    "AlphaStation 500/400": ("21164/400 w/ 21171", (90, 95), (126, 200), (88, 132), (47, 58)),
    "AlphaStation 500/333": ("21164/333 w/ 21171", (82, 88), (130, 200), (96, 151), (54, 69)),
    "AlphaStation 200 4/166": ("21064/166 w/ 21071", (107, None), (68, None), (81, None),
                               (24, None)),
    "HP Vectra XU 6/200": ("Pentium Pro 200 w/ 80450KX", (129, None), (110, None), (19, None),
                           (7, None)),
    "Digital Celebris GL 6200": ("Pentium Pro 200 w/ 80440FX", (130, None), (125, None),
                                 (29, None), (10, None)),
    "Digital Celebris GL 5133": ("Pentium 133 w/ 80430FX", (124, None), (130, None),
                                 (65, None), (15, None)),
    "Digital Proris XL Server 590": ("Pentium 90 w/ 80430NX", (68, None), (52, None),
                                     (54, None), (13, None)),
}

#: The Figure 2 platform each simulated host-bridge profile is shaped after
#: (pcispy/sim/bfm/profiles.py documents the shaping).
PROFILE_MACHINES = {
    "alphastation200": "AlphaStation 200 4/166",
    "pentiumpro200": "HP Vectra XU 6/200",
    "celebris5133": "Digital Celebris GL 5133",
    "alphaserver4100": "AlphaServer 4100 5/300",
}

#: Figure 2's columns: (key, heading); the key orders :data:`PAPER_FIGURE2`'s tuples.
FIGURES = (("dma_write", "DMA Write"), ("dma_read", "DMA Read"), ("pio_write", "PIO Write"),
           ("pio_read", "PIO Read"))

#: The spy filter of the real-time clock log: I/O cycles to 0x70 and 0x71.
RTC_FILTER = "io:0x70/0xfffe"


@dataclass(frozen=True)
class Sizes:
    """How much each experiment does.

    Attributes:
        dma_length: bytes per DMA run.
        bursts: DMA burst lengths in data phases (0: unlimited).
        idles: idle clocks between DMA bursts.
        write_cmds, read_cmds: DMA commands (mnemonics) of the two directions.
        pio_size: bytes per PIO run; pio_bursts: the host's PIO burst lengths.
        irq_count: interrupts measured.
        rtc_seconds: bus time the real-time clock log watches.
        bridge_words, bridge_write_bytes, bridge_pio_size: Enblom's experiment (words read,
            bytes written, bytes of each PIO run; pcispy/app/papers/enblom.py).
        block_sizes, block_count: NIKHEF's (block sizes in bytes, blocks of each).
        register_count, timer_samples, timer_period: DART's (accesses timed, intervals of
            each timer loop, clocks between interrupts).
    """
    dma_length: int
    bursts: tuple
    idles: tuple
    write_cmds: tuple
    read_cmds: tuple
    pio_size: int
    pio_bursts: tuple
    irq_count: int
    rtc_seconds: float
    bridge_words: int = 6
    bridge_write_bytes: int = 64
    bridge_pio_size: int = 1024
    block_sizes: tuple = (64, 256, 1024, 2048, 4096)
    block_count: int = 4
    register_count: int = 32
    timer_samples: int = 1000
    timer_period: int = 1000


#: Named sizes: ``full`` (``pcispy report``), ``quick`` (``--quick``, ``make demo``) and
#: ``tiny`` (the tests).
SIZES = {
    "full": Sizes(dma_length=16384, bursts=(1, 4, 8, 16, 32, 64, 256, 0), idles=(0, 4),
                  write_cmds=("MW", "MWI"), read_cmds=("MR", "MRL", "MRM"),
                  pio_size=8192, pio_bursts=(1, 2, 4, 8, 16, 64), irq_count=400,
                  rtc_seconds=0.006, bridge_words=8, bridge_write_bytes=128,
                  bridge_pio_size=4096, block_sizes=(64, 256, 1024, 2048, 4096, 16384),
                  block_count=8, register_count=64, timer_samples=3000),
    "quick": Sizes(dma_length=8192, bursts=(1, 4, 16, 64, 256), idles=(0,),
                   write_cmds=("MW",), read_cmds=("MRM",),
                   pio_size=4096, pio_bursts=(1, 4, 64), irq_count=60,
                   rtc_seconds=0.0025),
    "tiny": Sizes(dma_length=1024, bursts=(4, 16), idles=(0,), write_cmds=("MW",),
                  read_cmds=("MRM",), pio_size=256, pio_bursts=(4,), irq_count=4,
                  rtc_seconds=0.0012, bridge_words=3, bridge_write_bytes=32,
                  bridge_pio_size=256, block_sizes=(64, 1024), block_count=2,
                  register_count=8, timer_samples=200),
}


def sizes_of(sizes):
    """A :class:`Sizes` from a name of :data:`SIZES`, a dict of its fields (JSON), or a
    Sizes; a :class:`PcispyError` naming the problem otherwise."""
    if isinstance(sizes, Sizes):
        return sizes
    if isinstance(sizes, str):
        if sizes not in SIZES:
            raise PcispyError(f"sizes {sizes!r}: one of {', '.join(SIZES)}")
        return SIZES[sizes]
    try:
        return Sizes(**{k: tuple(v) if isinstance(v, list) else v for k, v in sizes.items()})
    except (TypeError, AttributeError) as error:
        raise PcispyError(f"sizes {sizes!r}: {error}") from None


def _best(rows, key, settings):
    """The row of ``rows`` with the highest ``key`` (ties: the first), reduced to
    ``{"mbps", settings...}``; None when no row is usable."""
    usable = [row for row in rows if not row.get("error") and not row.get("mismatches")
              and row[key]]
    if not usable:
        return None
    best = max(usable, key=lambda row: row[key])
    return {"mbps": best[key], **{name: best[name] for name in settings}}


async def _latency_histogram_start(board, transport):
    """Point the spy's counters at everything but the board's own registers (BAR0, polled
    during runs) and clear them."""
    bars = getattr(transport, "bars", {}) or {}
    bar0 = bars.get(0) or bars.get("0")
    address = bar0.get("address") if isinstance(bar0, dict) else None
    filters = [parse_filter(f"!mem:{address:#x}/0xfffff000")] if address is not None else []
    combine = await program_filters(board, filters)
    await board.write("spy.config", combine=combine.value)
    await board.write("spy.control", clear=1)
    while (await board.fields("spy.status"))["clearing"]:
        await transport.sleep(1e-6)


async def characterise(transport, *, sizes="quick", widths=None):
    """DMA and PIO bandwidth of this machine (Pamette Figure 2), each figure with the
    settings that reached it.

    ``widths``: the bus widths to measure (default: 32, and 64 on a 64-bit board). Returns
    ``{"identity", "widths", "dma": [sweep rows], "pio": [rows], "best": {figure: {width:
    {"mbps", settings}}}, "peak_mbps": {width: MB/s}, "latency_histogram": [count per
    clock of first-data latency, the last bin open], "sizes"}``.
    """
    size = sizes_of(sizes)
    board = Board(transport)
    identity = await info(transport)
    bus_width = identity["bus_width"]
    widths = [w for w in (widths or (32, 64)) if w <= bus_width]
    await _latency_histogram_start(board, transport)
    dma_rows, peaks = [], {}
    for width in widths:
        measured = await sweep(transport, cmds=size.write_cmds + size.read_cmds,
                               bursts=size.bursts, idles=size.idles, width=width,
                               length=size.dma_length)
        dma_rows += measured["rows"]
        peaks[str(width)] = measured["peak_mbps"]
    latency = (await read_histograms(board))["latency"]
    pio_rows = []
    for width in widths:
        for burst in size.pio_bursts:
            result = await pio(transport, size=size.pio_size, burst=burst, width=width)
            pio_rows.append({key: result[key] for key in
                             ("width", "burst", "bytes", "write_mbps", "read_mbps", "errors",
                              "read_first_data_clocks")})
    best = {key: {} for key, _ in FIGURES}
    for width in widths:
        mine = [row for row in dma_rows if row["width"] == width]
        best["dma_write"][str(width)] = _best(
            [r for r in mine if r["cmd"] in size.write_cmds], "mbps", ("cmd", "burst", "idle"))
        best["dma_read"][str(width)] = _best(
            [r for r in mine if r["cmd"] in size.read_cmds], "mbps", ("cmd", "burst", "idle"))
        pios = [row for row in pio_rows if row["width"] == width]
        best["pio_write"][str(width)] = _best(pios, "write_mbps", ("burst",))
        best["pio_read"][str(width)] = _best(pios, "read_mbps", ("burst",))
    return {"identity": identity, "widths": widths, "dma": dma_rows, "pio": pio_rows,
            "best": best, "peak_mbps": peaks, "latency_histogram": latency,
            "sizes": asdict(size)}


async def characterise_profiles(transport, *, profiles, sizes="quick"):
    """:func:`characterise` on each simulated host-bridge profile in turn (the simulated
    system only: the profile is applied to its host memory between runs). 64-bit figures
    only for profiles that answer REQ64# on a 64-bit system. Returns ``{profile: result}``
    plus ``checker``: the protocol checker's report over all of them."""
    system = getattr(transport, "system", None)
    if system is None:
        raise PcispyError("characterising several host-bridge profiles needs the simulated "
                          "system (--sim)")
    results = {}
    for name in profiles:
        try:
            profile = profile_by_name(name)
        except ValueError as error:
            raise PcispyError(str(error)) from None
        await system.apply_profile(name)
        widths = (32, 64) if profile.ack64 else (32,)
        results[name] = await characterise(transport, sizes=sizes, widths=widths)
    return {"machines": results, "checker": await system.checker_report()}


async def rtc_log(transport, *, seconds=0.0025):
    """The spy's log of I/O cycles to the real-time clock (0x70/0x71, Pamette Figure 3)
    during ``seconds`` of bus time: ``{"rows": [export.summary_rows row], "seconds",
    "filter", "status"}``. On a machine whose OS leaves the clock alone the log is empty."""
    result = await capture(transport, mode="summary", filters=[RTC_FILTER],
                           duration=seconds)
    trace = parse_trace(trace_bytes(base64.b64decode(result["records"]),
                                    result["metadata"]))
    return {"rows": summary_rows(summarise(trace)), "seconds": seconds,
            "filter": RTC_FILTER, "status": result["status"]}


async def interrupt_latency(transport, *, count=100, seed=1):
    """``pcispy irq --count COUNT`` without the per-interrupt list."""
    result = await irq_latency(transport, count=count, seed=seed)
    result.pop("interrupts")
    return result


async def paper(transport, *, key, sizes="quick", seed=1):
    """The experiment of the seed paper ``key`` (:data:`~pcispy.app.papers.PAPERS`) with
    ``sizes``, as :func:`suite` runs it."""
    if key not in PAPERS:
        raise PcispyError(f"no experiment {key!r}; known: {', '.join(PAPERS)}")
    return await PAPERS[key].run(transport, sizes_of(sizes), seed)


async def suite(transport, *, sizes="full", seed=1):
    """Every experiment on this machine: the report dict (see the module docstring). An
    experiment that fails with an expected error is named in ``errors``; the rest still
    run."""
    size = sizes_of(sizes)
    describe = getattr(transport, "describe", None)
    machine = describe() if describe else {"transport": type(transport).__name__}
    name = machine.get("profile") or machine.get("bdf") or machine.get("transport", "board")
    # Every figure below is counted in bus clocks: say which clock they were turned into
    # MB/s and microseconds with.
    identity = await Board(transport).identify()
    machine["pci_clock"] = f"{identity['clock_mhz']} MHz " + (
        "nominal" if identity["clock_measured_mhz"] is None else "measured")
    report = {"title": f"pcispy report: {name}", "machine": machine, "errors": {}}
    experiments = [("machines", lambda: characterise(transport, sizes=size)),
                   ("rtc", lambda: rtc_log(transport, seconds=size.rtc_seconds)),
                   ("irq", lambda: interrupt_latency(transport, count=size.irq_count,
                                                     seed=seed))]
    experiments += [(key, lambda paper=paper: paper.run(transport, size, seed))
                    for key, paper in PAPERS.items()]
    for key, run in experiments:
        try:
            result = await run()
        except PcispyError as error:
            report["errors"][key] = str(error)
            continue
        report[key] = {name: result} if key == "machines" else result
    return report


# --- tables --------------------------------------------------------------------------

def format_figure(figures):
    """``{"32": {"mbps"...}, "64": ...}`` -> ``"132"`` or ``"132 (264)"`` (Figure 2's way
    of writing 64-bit figures); ``-`` when nothing was measured."""
    def text(entry):
        return "-" if not entry else f"{entry['mbps']:.0f}"
    narrow, wide = figures.get("32"), figures.get("64")
    return text(narrow) + (f" ({text(wide)})" if wide else "")


def _paper_text(pair):
    narrow, wide = pair
    return f"{narrow}" + (f" ({wide})" if wide is not None else "")


def figure2_rows(machines):
    """Rows of the Figure 2 table: per machine ours, then the paper's row for the
    platform its profile is shaped after. Each row: ``[machine, source, DMA Write, DMA
    Read, PIO Write, PIO Read]``."""
    rows = []
    for name, result in machines.items():
        simulated = result["identity"]["transport"].get("transport") == "sim"
        rows.append([name, "pcispy, simulated" if simulated else "pcispy, measured"] +
                    [format_figure(result["best"][key]) for key, _ in FIGURES])
        platform = PROFILE_MACHINES.get(name) if simulated else None
        if platform:
            _, *pairs = PAPER_FIGURE2[platform]
            rows.append([platform, "paper, Figure 2"] + [_paper_text(p) for p in pairs])
    return rows


def settings_rows(machines):
    """``[machine, figure, width, MB/s, settings]``: what reached each best figure."""
    rows = []
    for name, result in machines.items():
        for key, heading in FIGURES:
            for width, entry in sorted(result["best"][key].items()):
                if not entry:
                    continue
                settings = ", ".join(f"{k} {v if v or k != 'burst' else 'unlimited'}"
                                     for k, v in entry.items() if k != "mbps")
                rows.append([name, heading, f"{width}-bit", f"{entry['mbps']:.1f}", settings])
    return rows


def rtc_table(rtc):
    """``(headings, rows)`` of the real-time clock log in Figure 3's columns (and ours)."""
    columns = [(heading, key) for heading, key in TABLE_COLUMNS if key != "data"]
    rows = []
    for row in rtc["rows"]:
        cells = []
        for _, key in columns:
            value = row[key]
            cells.append(f"{value:04x}" if key == "addr" else
                         f"{value:05d}" if key == "trans" else str(value))
        rows.append(cells)
    return [heading for heading, _ in columns], rows


def rtc_summary(rtc):
    """One sentence on the real-time clock log: first-data latencies of reads and of
    completed writes, and the retried attempts."""
    rows = rtc["rows"]
    if not rows:
        return "No cycles to the real-time clock were seen."

    def span(values):
        values = sorted(set(values))
        return "-" if not values else str(values[0]) if len(values) == 1 else \
            f"{values[0]}-{values[-1]}"
    reads = [r["lat"] for r in rows if r["rw"] == "R" and r["len"]]
    writes = [r["lat"] for r in rows if r["rw"] == "W" and r["len"]]
    retried = sum(1 for r in rows if r["term"] == "retry")
    return (f"{len(rows)} transactions: reads see first data after {span(reads)} clocks, "
            f"writes after {span(writes)} (the specification allows 16); {retried} attempts "
            "were retried by the bridge (Lgth 0).")


def irq_rows(irq):
    """``[distribution, samples, min, median, p98, max]`` in µs."""
    rows = []
    for key, label in (("handler", "raise -> handler (acknowledge)"),
                       ("user", "raise -> user thread (checkpoint)")):
        part = irq[key]
        if not part.get("samples"):
            continue
        us = part["us"]
        rows.append([label, str(part["samples"])] +
                    [f"{us[stat]:.2f}" for stat in ("min", "median", "p98", "max")])
    return rows


# --- report --------------------------------------------------------------------------

#: The PNG files of a report: key -> (file name, caption).
PLOTS = {
    "throughput": ("throughput_vs_burst.png",
                   "DMA throughput against burst length, per command"),
    "latency": ("first_data_latency.png",
                "First-data latency of the DMA transactions (the spy's histogram)"),
    "irq": ("irq_latency.png", "Interrupt latency (raise to handler, raise to user thread)"),
}


def machine_text(machine):
    """The machine a report describes, as a sentence (a transport's ``describe()`` plus
    ``pci_clock``): what it is, the bus, the clock the figures were converted with."""
    kind = machine.get("transport")
    clock = machine.get("pci_clock")
    if kind == "sim":
        text = f"The simulated PCI system with the {machine.get('profile', 'ideal')} host bridge"
        if machine.get("bus_width"):
            text += f", a {machine['bus_width']}-bit bus"
        if machine.get("bridge"):
            text += f", the board behind a {machine['bridge']} PCI-to-PCI bridge"
        if machine.get("seed") is not None:
            text += f", seed {machine['seed']}"
        if machine.get("session"):
            text += f" (session {machine['session']})"
    elif kind == "sysfs":
        text = f"The board at PCI address {machine['bdf']} of this machine (Linux sysfs"
        text += f", driver {machine['driver']})" if machine.get("driver") else ")"
    elif kind == "uart":
        text = f"The board behind the side channel {machine['device']} ({machine['baud']} baud)"
    else:
        text = f"The board of the {kind or 'unknown'} transport"
    return text + (f"; PCI clock {clock}." if clock else ".")


def report_blocks(report, plots=()):
    """The report as a list of ``("h1"|"h2"|"p"|"table"|"image", ...)`` blocks, rendered
    by :func:`write_markdown` and :func:`write_html`. ``plots``: the :data:`PLOTS` keys
    written."""
    blocks = [("h1", report["title"]),
              ("p", f"Written by pcispy on {datetime.date.today().isoformat()}. "
                    + machine_text(report["machine"]))]
    machines = report.get("machines")
    if machines:
        blocks += [
            ("h2", "DMA and PIO bandwidth (the form of Pamette Figure 2)"),
            ("p", "Best sustained MB/s of each kind of transfer; 64-bit figures in "
                  "parentheses. Rows marked 'paper, Figure 2' are the measurements of "
                  f"{PAPER}, Figure 2, on the platform the simulated profile above them is "
                  "shaped after: they are the paper's numbers, not ours. DMA: the board "
                  "masters host memory; PIO: the host reads and writes the board's "
                  "exerciser window. In simulation PIO depends only on the burst length "
                  "the simulated host issues (its write aggregation), not on the profile."),
            ("table", ["Machine", "Source"] + [h for _, h in FIGURES],
             figure2_rows(machines)),
            ("h2", "The settings that reached each best figure"),
            ("table", ["Machine", "Figure", "Width", "MB/s", "Settings"],
             settings_rows(machines)),
        ]
        for key in ("throughput", "latency"):
            if key in plots:
                blocks.append(("image", PLOTS[key][0], PLOTS[key][1]))
    rtc = report.get("rtc")
    if rtc is not None:
        headings, rows = rtc_table(rtc)
        blocks += [("h2", "The real-time clock log (the form of Pamette Figure 3)"),
                   ("p", f"The spy's summary capture with the filter {rtc['filter']} over "
                         f"{rtc['seconds'] * 1e3:.1f} ms of bus time: {len(rows)} "
                         "transactions. Lgth is data phases (0: retried), Dur and Lat are "
                         "clocks from the address phase, delta cycle# is clocks since the "
                         "previous transaction started.")]
        blocks.append(("table", headings, rows) if rows else ("p", rtc_summary(rtc)))
        if rows:
            blocks.append(("p", rtc_summary(rtc)))
    irq = report.get("irq")
    if irq is not None:
        blocks += [("h2", "Interrupt latency (Pamette §5)"),
                   ("p", f"{irq['count']} interrupts raised at pseudo-random instants "
                         f"({irq['min_gap']}..{irq['max_gap']} clocks apart), serviced by "
                         f"the {irq['serviced_by']}; {irq['missed']} raises found the "
                         "previous interrupt still pending. Times in µs."),
                   ("table", ["Distribution", "Samples", "min", "median", "p98", "max"],
                    irq_rows(irq)) if irq_rows(irq) else
                   ("p", "No interrupt was serviced, so there is no distribution: "
                         + ("every raise found the previous interrupt still pending."
                            if irq["count"] and irq["missed"] >= irq["count"] else
                            "the board raised none that the host saw."))]
        if "irq" in plots:
            blocks.append(("image", PLOTS["irq"][0], PLOTS["irq"][1]))
    for key, paper in PAPERS.items():
        if report.get(key) is not None:
            blocks += paper.blocks(report[key])
    errors = report.get("errors") or {}
    if errors:
        blocks += [("h2", "Experiments that did not run"),
                   ("table", ["Experiment", "Reason"], [[k, v] for k, v in errors.items()])]
    return blocks


def write_markdown(blocks, path):
    """Write ``blocks`` as Markdown."""
    lines = []
    for kind, *content in blocks:
        if kind in ("h1", "h2"):
            lines += ["#" * int(kind[1]) + " " + content[0], ""]
        elif kind == "p":
            lines += [content[0], ""]
        elif kind == "table":
            headings, rows = content
            lines.append("| " + " | ".join(headings) + " |")
            lines.append("|" + "|".join("---" for _ in headings) + "|")
            lines += ["| " + " | ".join(row) + " |" for row in rows]
            lines.append("")
        elif kind == "image":
            lines += [f"![{content[1]}]({content[0]})", ""]
    with open(path, "w") as out:
        out.write("\n".join(lines))


_STYLE = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
          "table{border-collapse:collapse;margin:1em 0}"
          "td,th{border:1px solid #bbb;padding:.2em .6em;text-align:right}"
          "td:first-child,th:first-child{text-align:left}img{max-width:100%}")


def write_html(blocks, path, directory):
    """Write ``blocks`` as one self-contained HTML page (images from ``directory``
    embedded as data URIs)."""
    parts = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">",
             f"<title>{html.escape(blocks[0][1])}</title><style>{_STYLE}</style></head><body>"]
    for kind, *content in blocks:
        if kind in ("h1", "h2"):
            parts.append(f"<{kind}>{html.escape(content[0])}</{kind}>")
        elif kind == "p":
            parts.append(f"<p>{html.escape(content[0])}</p>")
        elif kind == "table":
            headings, rows = content
            parts.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>"
                                                 for h in headings) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                      for row in rows]
            parts.append("</table>")
        elif kind == "image":
            with open(os.path.join(directory, content[0]), "rb") as image:
                data = base64.b64encode(image.read()).decode()
            parts.append(f"<figure><img alt=\"{html.escape(content[1])}\" "
                         f"src=\"data:image/png;base64,{data}\"><figcaption>"
                         f"{html.escape(content[1])}</figcaption></figure>")
    parts.append("</body></html>")
    with open(path, "w") as out:
        out.write("\n".join(parts) + "\n")


def write_plots(report, directory):
    """Write the PNGs the report has data for; return the :data:`PLOTS` keys written."""
    written = []
    machines = report.get("machines")
    if machines:
        plot_throughput_by_command(
            {name: result["dma"] for name, result in machines.items()},
            os.path.join(directory, PLOTS["throughput"][0]))
        plot_latency_histograms(
            {name: result["latency_histogram"] for name, result in machines.items()},
            os.path.join(directory, PLOTS["latency"][0]))
        written += ["throughput", "latency"]
    irq = report.get("irq")
    if irq is not None and irq["handler"].get("samples"):
        plot_histograms(irq, os.path.join(directory, PLOTS["irq"][0]))
        written.append("irq")
    return written


def write_report(report, directory):
    """Write ``report.md``, ``report.html`` and the PNGs into ``directory`` (made if
    missing). Returns the paths written. An unwritable directory is a PcispyError."""
    try:
        os.makedirs(directory, exist_ok=True)
        plots = write_plots(report, directory)
        blocks = report_blocks(report, plots)
        markdown = os.path.join(directory, "report.md")
        page = os.path.join(directory, "report.html")
        write_markdown(blocks, markdown)
        write_html(blocks, page, directory)
    except OSError as error:
        raise PcispyError(f"cannot write the report into {directory}: "
                          f"{error.strerror or error}") from None
    return [markdown, page] + [os.path.join(directory, PLOTS[key][0]) for key in plots]

