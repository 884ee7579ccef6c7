# SPDX-License-Identifier: BSD-2-Clause
"""The spy's running counters and histograms and the protocol checker's flags, and the
``pcispy stats`` command.

:func:`stats` reads every counter of the ``spy`` block (the names and widths come from
:class:`~pcispy.gateware.spy.counters.CounterValues` through gateware/regs.py), both
hardware histograms (first-data latency, linear bins; clocks between transactions, log2
bins) and the ``check`` block's sticky flags with the count of every rule that fired.
``samples`` > 1 reads it all again every ``interval`` seconds of bus time (``--watch``).
"""

import time

from pcispy.gateware.regs import SPY_FILTERS
from pcispy.gateware.spy.checker import RULES
from pcispy.gateware.spy.counters import HISTOGRAM_BINS, CounterValues
from pcispy.host.board import Board
from pcispy.host.cli import Command as CliCommand, positive_seconds, run_feature
from pcispy.host.errors import PcispyError, UsageError

__all__ = ["stats", "read_counters", "read_histograms", "read_checker", "histogram_edges",
           "format_stats", "StatsCommand", "HISTOGRAMS"]

#: The hardware histograms, by ``spy.hist_select.histogram`` value.
HISTOGRAMS = ("latency", "gap")


def histogram_edges(name):
    """``[(low, high)]`` clocks of every bin of histogram ``name`` (high None: open)."""
    if name == "latency":
        return [(n, n if n < HISTOGRAM_BINS - 1 else None) for n in range(HISTOGRAM_BINS)]
    return [(0, 0)] + [(1 << (k - 1), (1 << k) - 1) for k in range(1, HISTOGRAM_BINS)]


async def read_counters(board):
    """``{counter: value}`` of every spy counter (``hits`` a list per comparator)."""
    values = {}
    for name, field in CounterValues(SPY_FILTERS):
        if name == "hits":
            values["hits"] = [await board.read(f"spy.hits{i}") for i in range(SPY_FILTERS)]
        elif field.width > 32:
            values[name] = await board.read64(f"spy.{name}")
        else:
            values[name] = await board.read(f"spy.{name}")
    answered = values["transactions"] - values["master_aborts"]
    values["latency_mean"] = (round(values["latency_sum"] / answered, 3)
                              if answered > 0 else None)
    if not answered:
        values["latency_min"] = None    # reads all ones before any answered transaction
    return values


async def read_histograms(board):
    """``{histogram name: [count per bin]}``."""
    histograms = {}
    for select, name in enumerate(HISTOGRAMS):
        bins = []
        for index in range(HISTOGRAM_BINS):
            await board.write("spy.hist_select", histogram=select, bin=index)
            bins.append(await board.read("spy.hist_data"))
        histograms[name] = bins
    return histograms


async def read_checker(board):
    """``{"any", "first_rule", "first_cycle", "violations": {rule name: count}}``."""
    status = await board.fields("check.status")
    flags = await board.read("check.flags_lo") | await board.read("check.flags_hi") << 32
    violations = {}
    for rule in RULES:
        if flags >> rule.id & 1:
            await board.write("check.count_index", index=rule.id)
            violations[rule.name] = await board.read("check.count")
    first = RULES[status["first_rule"]].name if status["any"] else None
    return {"any": bool(status["any"]), "first_rule": first,
            "first_cycle": await board.read("check.first_cycle") if status["any"] else None,
            "violations": violations}


async def stats(transport, *, clear=False, samples=1, interval=0.001, histograms=True):
    """Read the counters, histograms and checker flags ``samples`` times, ``interval``
    seconds (bus time) apart; ``clear`` zeroes the spy's counters and histograms and the
    checker's flags first. Returns ``{"snapshots": [{"time", "counters", "histograms",
    "checker"}]}`` (``time``: the board's cycle counter)."""
    if samples < 1:
        raise PcispyError(f"samples {samples}: give at least 1")
    if interval <= 0:
        raise PcispyError(f"interval {interval}: give a positive number of seconds")
    board = Board(transport)
    await board.identify()
    if clear:
        await board.write("spy.control", clear=1)
        await board.write("check.control", clear=1)
        while (await board.fields("spy.status"))["clearing"]:
            await transport.sleep(1e-6)
    snapshots = []
    for sample in range(samples):
        if sample:
            await transport.sleep(interval)
        snapshot = {"time": await board.read64("irq.now"),
                    "counters": await read_counters(board),
                    "checker": await read_checker(board)}
        if histograms:
            snapshot["histograms"] = await read_histograms(board)
        snapshots.append(snapshot)
    return {"snapshots": snapshots}


def _histogram_lines(name, bins):
    edges = histogram_edges(name)
    used = [i for i, count in enumerate(bins) if count]
    if not used:
        return [f"  {name}: empty"]
    top = max(bins)
    lines = [f"  {name} (clocks):"]
    for index in range(used[0], used[-1] + 1):
        low, high = edges[index]
        label = f"{low}" if low == high else f"{low}+" if high is None else f"{low}-{high}"
        bar = "#" * max(1 if bins[index] else 0, round(40 * bins[index] / top))
        lines.append(f"    {label:>13s} {bins[index]:10d} {bar}")
    return lines


def format_stats(snapshot):
    """A plain-text report of one snapshot."""
    c = snapshot["counters"]
    lines = [f"at clock {snapshot['time']}:"]
    for name in ("transactions", "data_phases", "bytes", "busy_clocks", "idle_clocks",
                 "initiator_wait", "target_wait", "retries", "disconnects", "target_aborts",
                 "master_aborts"):
        lines.append(f"  {name:15s} {c[name]}")
    busy = c["busy_clocks"] + c["idle_clocks"]
    if busy:
        lines.append(f"  {'bus busy':15s} {100 * c['busy_clocks'] / busy:.2f} %")
    lines.append(f"  {'latency':15s} min {c['latency_min']} mean {c['latency_mean']} "
                 f"max {c['latency_max']} clocks")
    lines.append(f"  {'filter hits':15s} {' '.join(str(h) for h in c['hits'])}")
    for name, bins in snapshot.get("histograms", {}).items():
        lines += _histogram_lines(name, bins)
    checker = snapshot["checker"]
    if checker["any"]:
        lines.append(f"  checker: first {checker['first_rule']} at cycle "
                     f"{checker['first_cycle']}; " +
                     ", ".join(f"{k} x{v}" for k, v in checker["violations"].items()))
    else:
        lines.append("  checker: clean")
    return "\n".join(lines) + "\n"


class StatsCommand(CliCommand):
    name = "stats"
    help = "the spy's counters and histograms and the protocol checker's flags (--watch: live)"
    examples = ("pcispy stats", "pcispy --sim=rtc stats --watch --samples 3 --interval 0.002",
                "pcispy --json stats --clear --no-histograms")

    def add_arguments(self, parser):
        parser.add_argument("--watch", action="store_true",
                            help="read again every --interval seconds (on hardware until "
                                 "Ctrl-C, in simulation --samples times)")
        parser.add_argument("--interval", type=positive_seconds, default=1.0, metavar="S",
                            help="seconds between readings with --watch (default 1; bus "
                                 "time in simulation)")
        parser.add_argument("--samples", type=int, default=None, metavar="N",
                            help="readings with --watch (default: 5 in simulation, "
                                 "unlimited on hardware)")
        parser.add_argument("--clear", action="store_true",
                            help="zero the counters, histograms and checker flags first")
        parser.add_argument("--no-histograms", action="store_true",
                            help="skip the histograms (128 register reads)")

    def run(self, args, out):
        if args.samples is not None and args.samples < 1:
            raise UsageError(f"--samples {args.samples}: give at least 1")
        options = dict(histograms=not args.no_histograms)
        if not args.watch:
            result = run_feature(args, "pcispy.host.features.stats:stats", clear=args.clear,
                                 **options)
        elif args.sysfs is not None and args.samples is None:
            return self._watch_live(args, out, options)     # printed as it went
        else:
            result = run_feature(args, "pcispy.host.features.stats:stats", clear=args.clear,
                                 samples=args.samples or 5, interval=args.interval, **options)
        if not args.json:
            for snapshot in result["snapshots"]:
                out.write(format_stats(snapshot))
        return result

    def _watch_live(self, args, out, options):
        # On hardware: one reading per interval of wall time until Ctrl-C.
        snapshots = []
        clear = args.clear
        try:
            while True:
                result = run_feature(args, "pcispy.host.features.stats:stats", clear=clear,
                                     **options)
                clear = False
                snapshots += result["snapshots"]
                if not args.json:
                    out.write(format_stats(result["snapshots"][0]))
                    out.flush()
                time.sleep(args.interval)
        except KeyboardInterrupt:
            pass
        return {"snapshots": snapshots}
