# SPDX-License-Identifier: BSD-2-Clause
"""The spy's running counters and histograms and the protocol checker's flags, and the
``pcispy stats`` command.

:func:`stats` reads every counter of the ``spy`` block (the names and widths of
:data:`~pcispy.spy.registers.COUNTER_WIDTHS`, which the gateware's
:class:`~pcispy.spy.counters.CounterValues` holds too) and both
hardware histograms (first-data latency, linear bins; clocks between transactions, log2
bins), all of one clock: ``spy.control.snapshot`` holds them while they are read
(:func:`read_snapshot`). Then the counter set of every filter comparator
(:class:`~pcispy.spy.counters.FilterCounter`, through ``spy.fcount_select``) and the
``check`` block's sticky flags with the count of every rule that fired. ``samples`` > 1
reads it all again every ``interval`` seconds of bus time (``--watch``; on hardware the
CLI reads once per interval of wall time until Ctrl-C).

The figures are the bus's without this tool: the board's spy leaves the accesses to the
board's own registers (BAR0 transactions its target claims: every read and write made
here, over PCI) out of every counter and histogram and counts them apart
(``own_transactions``, ``own_clocks``; ``spy.counting.own`` = 1 counts them with the
rest). Over the UART side channel the tool's accesses are not on the bus at all.

:func:`filter_counters_from_summaries` computes the per-filter counters in software from
summary records (a summary capture's, or the software decoder's with
:func:`comparator_hits`): what the hardware counts, for checking it. Those two load numpy
and the bus vocabulary (Amaranth) when they run: the command line does without.
"""

import time

from pcispy.spy.registers import (COUNTER_WIDTHS, FILTER_COUNTER_WIDTHS, HISTOGRAM_BINS,
                                  SPY_FILTERS, FilterCounter)
from pcispy.check.check_feature import read_checker
from pcispy.host.board import Board
from pcispy.host.command import CliCommand, positive_seconds, run_feature
from pcispy.host.errors import PcispyError, UsageError

__all__ = ["stats", "since_previous", "INTERVAL_COUNTERS", "read_snapshot", "read_counters",
           "read_filter_counter", "read_filter_counters",
           "read_histograms", "histogram_edges", "comparator_hits",
           "filter_counters_from_summaries", "format_stats",
           "StatsCommand", "HISTOGRAMS", "FILTER_COUNTERS"]

#: The per-filter counters, by name, in select order.
FILTER_COUNTERS = tuple(counter.name.lower() for counter in FilterCounter)

#: The hardware histograms, by ``spy.hist_select.histogram`` value.
HISTOGRAMS = ("latency", "gap")


def histogram_edges(name):
    """``[(low, high)]`` clocks of every bin of histogram ``name`` (high None: open)."""
    if name == "latency":
        return [(n, n if n < HISTOGRAM_BINS - 1 else None) for n in range(HISTOGRAM_BINS)]
    return [(0, 0)] + [(1 << (k - 1), (1 << k) - 1) for k in range(1, HISTOGRAM_BINS)]


async def read_snapshot(board, *, histograms=True):
    """``(counters, histograms)``: ``{counter: value}`` of every spy counter (``hits`` a
    list per comparator) and :func:`read_histograms` (None without ``histograms``), all of
    one clock: the registers are held (``spy.control.snapshot``) while they are read, and
    the bus counts on meanwhile."""
    # Left held if a read fails: the next snapshot takes new values all the same.
    await board.write("spy.control", snapshot=1)
    values = {}
    for name, width in COUNTER_WIDTHS.items():
        if name == "hits":
            values["hits"] = [await board.read(f"spy.hits{i}") for i in range(SPY_FILTERS)]
        elif width > 32:
            values[name] = await board.read64(f"spy.{name}")
        else:
            values[name] = await board.read(f"spy.{name}")
    bins = await read_histograms(board) if histograms else None
    await board.write("spy.control", release=1)
    return _latency_summary(values), bins


async def read_counters(board):
    """The counters of :func:`read_snapshot`, without the histograms."""
    return (await read_snapshot(board, histograms=False))[0]


def _latency_summary(values):
    """Add ``latency_mean``; ``latency_min`` None when no transaction was answered (the
    hardware reads all ones then)."""
    answered = values["transactions"] - values["master_aborts"]
    values["latency_mean"] = (round(values["latency_sum"] / answered, 3)
                              if answered > 0 else None)
    if answered <= 0:
        values["latency_min"] = None
    return values


async def read_filter_counter(board, comparator, counter):
    """The spy's per-filter counter ``counter`` (a
    :class:`~pcispy.spy.counters.FilterCounter` or its lower-case name, e.g.
    ``"bytes"``) of filter comparator ``comparator``: select it in
    ``spy.fcount_select``, then read ``spy.fcount_lo`` (and ``spy.fcount_hi`` for the
    counters wider than 32 bits)."""
    if isinstance(counter, str):
        try:
            counter = FilterCounter[counter.upper()]
        except KeyError:
            raise ValueError(f"no per-filter counter {counter!r}") from None
    counter = FilterCounter(counter)
    await board.write("spy.fcount_select", filter=comparator, counter=counter.value)
    value = await board.read("spy.fcount_lo")
    if counter.width > 32:
        value |= (await board.fields("spy.fcount_hi"))["fcount"] << 32
    return value



async def read_filter_counters(board):
    """``[{"comparator", "enabled", counter: value, ..., "latency_mean"}]``, one per filter
    comparator: the transactions it hits (whether or not the others select them)."""
    sets = []
    for comparator in range(SPY_FILTERS):
        control = await board.fields(f"spy.filter{comparator}_control")
        values = {"comparator": comparator, "enabled": bool(control["enable"])}
        for name in FILTER_COUNTERS:
            values[name] = await read_filter_counter(board, comparator, name)
        sets.append(_latency_summary(values))
    return sets


def comparator_hits(summaries, filters):
    """The ``filters`` field the spy would give each of ``summaries`` (e.g. the software
    decoder's, from a raw trace): bit ``i`` set where comparator ``filters[i]`` (a
    FilterSpec: ``enable``, ``commands``, ``address``, ``mask``) hits it, by the rule of
    pcispy/spy/filters.py (include or exclude alike)."""
    # numpy loads where summaries are counted (the module's docstring)
    import numpy as np
    hits = np.zeros(len(summaries), dtype=np.int64)
    address = summaries["address"].astype(np.uint64)
    command = summaries["command"].astype(np.int64)
    for index, spec in enumerate(filters):
        if not spec["enable"]:
            continue
        command_ok = (spec["commands"] >> command & 1).astype(bool)
        address_ok = (address ^ np.uint64(spec["address"])) & np.uint64(spec["mask"]) == 0
        hits |= (command_ok & address_ok).astype(np.int64) << index
    return hits


def filter_counters_from_summaries(summaries, comparators=SPY_FILTERS, transaction_bytes=None):
    """The per-filter counters the hardware keeps, computed from summary records
    (``summaries``: a structured array with the fields of the summary record, e.g.
    ``Trace.summaries``): for each comparator ``i``, over the records whose ``filters``
    has bit ``i``. ``bytes`` needs the bytes of each record's completed data phases
    (``transaction_bytes``, a summary does not hold them); None without. Returns the
    list :func:`read_filter_counters` returns, without ``enabled``."""
    # numpy and the bus vocabulary load where summaries are counted (the module's docstring)
    import numpy as np
    from pcispy.pci.bus import Termination
    sets = []
    for comparator in range(comparators):
        hit = (summaries["filters"].astype(np.int64) >> comparator & 1).astype(bool)
        mine = summaries[hit]
        term = mine["termination"].astype(np.int64)
        answered = mine[term != Termination.MASTER_ABORT.value]
        latencies = answered["latency"].astype(np.int64)

        def total(name, records=mine):
            limit = (1 << FILTER_COUNTER_WIDTHS[FilterCounter[name.upper()]]) - 1
            return min(int(records[name].astype(np.int64).sum()), limit)

        def ended(*kinds):
            return int(np.isin(term, [kind.value for kind in kinds]).sum())

        values = {
            "comparator": comparator,
            "transactions": len(mine),
            "data_phases": total("data_phases"),
            "bytes": (int(np.asarray(transaction_bytes)[hit].astype(np.int64).sum())
                      if transaction_bytes is not None else None),
            "busy_clocks": int(mine["duration"].astype(np.int64).sum()),
            "initiator_wait": total("initiator_wait"),
            "target_wait": total("target_wait"),
            "retries": ended(Termination.RETRY),
            "disconnects": ended(Termination.DISCONNECT_DATA, Termination.DISCONNECT_NODATA),
            "target_aborts": ended(Termination.TARGET_ABORT),
            "master_aborts": ended(Termination.MASTER_ABORT),
            "latency_sum": int(latencies.sum()),
            "latency_min": int(latencies.min()) if len(latencies) else 0xFFFF,
            "latency_max": int(latencies.max()) if len(latencies) else 0,
        }
        sets.append(_latency_summary(values))
    return sets


async def read_histograms(board):
    """``{histogram name: [count per bin]}``: as of the snapshot's clock while
    ``spy.control.snapshot`` holds (:func:`read_snapshot`), else read bin by bin while
    the bus goes on."""
    histograms = {}
    for select, name in enumerate(HISTOGRAMS):
        bins = []
        for index in range(HISTOGRAM_BINS):
            await board.write("spy.hist_select", histogram=select, bin=index)
            bins.append(await board.read("spy.hist_data"))
        histograms[name] = bins
    return histograms


async def stats(transport, *, clear=False, samples=1, interval=0.001, histograms=True,
                per_filter=True):
    """Read the counters, the per-filter counters, histograms and checker flags ``samples``
    times, ``interval`` seconds (bus time) apart; ``clear`` zeroes the spy's counters and
    histograms and the checker's flags first. Returns ``{"clock_mhz": the board's PCI clock
    (measured, else nominal), "snapshots": [{"time", "counters", "own_counted", "filters",
    "histograms", "checker"}]}`` (``time``: the board's cycle counter; ``counters`` and
    ``histograms`` of one clock, :func:`read_snapshot`; ``own_counted``: the board's own
    register accesses are counted with the rest, ``spy.counting.own``; ``filters``:
    :func:`read_filter_counters`, left out without ``per_filter``, ``histograms`` without
    ``histograms``)."""
    if samples < 1:
        raise PcispyError(f"samples {samples}: give at least 1")
    if interval <= 0:
        raise PcispyError(f"interval {interval}: give a positive number of seconds")
    board = Board(transport)
    identity = await board.identify()
    if clear:
        await board.write("spy.control", clear=1)
        await board.write("check.control", clear=1)
        while (await board.fields("spy.status"))["clearing"]:
            await transport.sleep(1e-6)
    snapshots = []
    for sample in range(samples):
        if sample:
            await transport.sleep(interval)
        time_now = await board.read64("irq.now")
        counters, bins = await read_snapshot(board, histograms=histograms)
        snapshot = {"time": time_now, "counters": counters,
                    "own_counted": bool((await board.fields("spy.counting"))["own"]),
                    "checker": await read_checker(board)}
        if per_filter:
            snapshot["filters"] = await read_filter_counters(board)
        if histograms:
            snapshot["histograms"] = bins
        snapshots.append(snapshot)
    return {"clock_mhz": identity["clock_mhz"], "snapshots": snapshots}


#: Counters :func:`since_previous` gives the growth of between two readings.
INTERVAL_COUNTERS = ("transactions", "data_phases", "bytes", "busy_clocks",
                     "initiator_wait", "target_wait", "retries", "disconnects",
                     "target_aborts", "master_aborts", "own_transactions", "own_clocks")


def _clocks(counters):
    """The clocks the spy counted: busy, idle and those of the own transactions left out."""
    return counters["busy_clocks"] + counters["idle_clocks"] + counters["own_clocks"]


def since_previous(previous, current, clock_mhz):
    """What the bus did between two snapshots: ``{"clocks", counter: growth for each of
    :data:`INTERVAL_COUNTERS`, "mbytes_per_s", "busy_percent", "target_wait_per_phase",
    "initiator_wait_per_phase"}`` (MB: 10**6 bytes, at ``clock_mhz``: the board's
    measured clock, else the nominal one; the waits None without a data phase), or None
    when no clock passed or a counter went back (cleared in between). The clocks are
    busy_clocks + idle_clocks + own_clocks: counters of the same clock as the others."""
    before, after = previous["counters"], current["counters"]
    clocks = _clocks(after) - _clocks(before)
    grown = {name: after[name] - before[name] for name in INTERVAL_COUNTERS}
    if clocks <= 0 or min(grown.values()) < 0:
        return None
    phases = grown["data_phases"]
    return {"clocks": clocks, **grown,
            "mbytes_per_s": round(grown["bytes"] * clock_mhz / clocks, 3),
            "busy_percent": round(100 * grown["busy_clocks"] / clocks, 2),
            **{f"{side}_wait_per_phase": round(grown[f"{side}_wait"] / phases, 3)
               if phases else None for side in ("target", "initiator")}}


def _interval_lines(since):
    def per_phase(value):
        return "-" if value is None else f"{value:.3f}"
    return [f"  {'since previous':15s} {since['clocks']} clocks: {since['transactions']} "
            f"transactions, {since['bytes']} bytes, {since['mbytes_per_s']:.3f} MB/s, "
            f"bus busy {since['busy_percent']:.2f} %",
            f"  {'':15s} wait clocks per data phase: target "
            f"{per_phase(since['target_wait_per_phase'])}, initiator "
            f"{per_phase(since['initiator_wait_per_phase'])}; {since['retries']} retries, "
            f"{since['disconnects']} disconnects"]


def _histogram_lines(name, bins):
    """A bar per bin that counted something (empty bins are left out: the labels say
    which clocks each bar holds)."""
    edges = histogram_edges(name)
    used = [i for i, count in enumerate(bins) if count]
    if not used:
        return [f"  {name}: empty"]
    top = max(bins)
    lines = [f"  {name} (clocks):"]
    for index in used:
        low, high = edges[index]
        label = f"{low}" if low == high else f"{low}+" if high is None else f"{low}-{high}"
        bar = "#" * max(1 if bins[index] else 0, round(40 * bins[index] / top))
        lines.append(f"    {label:>13s} {bins[index]:10d} {bar}")
    return lines


def _filter_lines(sets):
    """The per-filter counters as a table: a column per enabled comparator."""
    shown = [s for s in sets if s["enabled"]]
    if not shown:
        return ["  per filter: no comparator enabled"]

    def cell(value):
        return "-" if value is None else str(value)

    lines = ["  per filter:" + "".join(f"{'filter ' + str(s['comparator']):>14s}"
                                        for s in shown)]
    for name in FILTER_COUNTERS + ("latency_mean",):
        lines.append(f"    {name:14s}" + "".join(f"{cell(s[name]):>14s}" for s in shown))
    return lines


def format_stats(snapshot):
    """A plain-text report of one snapshot."""
    c = snapshot["counters"]
    lines = [f"at clock {snapshot['time']}:"]
    for name in ("transactions", "data_phases", "bytes", "busy_clocks", "idle_clocks",
                 "initiator_wait", "target_wait", "retries", "disconnects", "target_aborts",
                 "master_aborts"):
        lines.append(f"  {name:15s} {c[name]}")
    clocks = _clocks(c)
    if clocks:
        lines.append(f"  {'bus busy':15s} {100 * c['busy_clocks'] / clocks:.2f} %")
    if snapshot.get("own_counted"):
        lines.append(f"  {'own accesses':15s} counted with the rest (spy.counting.own)")
    else:
        share = f" ({100 * c['own_clocks'] / clocks:.2f} %)" if clocks else ""
        lines.append(f"  {'left out':15s} {c['own_transactions']} own transactions (the "
                     f"board's registers), {c['own_clocks']} clocks{share}")
    if snapshot.get("since_previous"):
        lines += _interval_lines(snapshot["since_previous"])
    lines.append(f"  {'latency':15s} min {c['latency_min']} mean {c['latency_mean']} "
                 f"max {c['latency_max']} clocks")
    lines.append(f"  {'filter hits':15s} {' '.join(str(h) for h in c['hits'])}")
    if "filters" in snapshot:
        lines += _filter_lines(snapshot["filters"])
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
    help = ("the spy's counters (combined and per filter) and histograms and the protocol "
            "checker's flags (--watch: live)")
    examples = ("pcispy stats", "pcispy --sim=rtc stats --watch --samples 3 --interval 0.002",
                "pcispy --json stats --clear --no-histograms",
                "pcispy --uart /dev/ttyUSB0 stats --watch --no-histograms")

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
        parser.add_argument("--no-filters", action="store_true",
                            help="skip the per-filter counters (about 120 register accesses)")

    def run(self, args, out):
        if args.samples is not None and args.samples < 1:
            raise UsageError(f"--samples {args.samples}: give at least 1")
        options = dict(histograms=not args.no_histograms, per_filter=not args.no_filters)
        hardware = args.sysfs is not None or args.uart is not None
        if not args.watch:
            result = run_feature(args, stats, clear=args.clear,
                                 **options)
        elif hardware and args.samples is None:
            return self._watch_live(args, out, options)     # printed as it went
        else:
            result = run_feature(args, stats, clear=args.clear,
                                 samples=args.samples or 5, interval=args.interval, **options)
        _add_rates(result["snapshots"], result["clock_mhz"])
        if not args.json:
            for snapshot in result["snapshots"]:
                out.write(format_stats(snapshot))
        return result

    def _watch_live(self, args, out, options):
        # On hardware (any transport but the simulator): one reading per interval of wall
        # time until Ctrl-C.
        snapshots = []
        clear = args.clear
        try:
            while True:
                result = run_feature(args, stats, clear=clear,
                                     **options)
                clear = False
                _add_rates(snapshots[-1:] + result["snapshots"], result["clock_mhz"])
                snapshots += result["snapshots"]
                if not args.json:
                    out.write(format_stats(result["snapshots"][0]))
                    out.flush()
                time.sleep(args.interval)
        except KeyboardInterrupt:
            pass
        return {"snapshots": snapshots}


def _add_rates(snapshots, clock_mhz):
    """Give every snapshot after the first ``since_previous`` (:func:`since_previous`)."""
    for previous, current in zip(snapshots, snapshots[1:]):
        current["since_previous"] = since_previous(previous, current, clock_mhz)
