# SPDX-License-Identifier: BSD-2-Clause
"""DART's register latencies and interrupt overhead, as the host sees them.

J. Howard, N. McKenzie, O. Voumard, R. Casley, "Network Latency in DART and Windows NT"
(MERL TR98-03a, 1998), timed an ATM adapter's register accesses and the host's interrupt
processing with the Pentium's time stamp counter. Table 3: a direct read of an adapter
register took 0.43 µs, a direct write (with a LOCK OR to force it out) 0.32 µs, on a
300 MHz Pentium II. Figure 8: a loop that only reads the time stamp counter gives a
histogram of intervals; run again while interrupts arrive, it gains a second peak, and
the difference of the two histograms gives the time an interrupt takes from the loop:
8.5 µs (the peak begins at 8.9 µs; 0.4 µs is the loop's own measurement).

Here the board is the adapter. :func:`register_latency` reads and writes one of its
registers as the host does; :func:`interrupt_overhead` runs a timer loop that reads the
board's free-running cycle counter (``irq.now``), once as a baseline and once while the
board raises interrupts every ``period`` clocks (the ``irq`` generator's periodic mode),
and compares the two histograms of intervals. On a board in a slot the host's own
interrupt path does the work; in the simulator the host bridge's interrupt responder is
the handler, and while it runs the simulated CPU issues nothing else, as a
uniprocessor's does (``handler_us`` sets how long).
"""

import math

from pcispy.board.registers import REGISTER_MAP
from pcispy.host.board import Board
from pcispy.host.errors import PcispyError
from pcispy.irq.gaps import MODES

__all__ = ["PAPER", "TITLE", "PROFILE", "TABLE3", "TABLE3_CPU_MHZ", "FIGURE8", "MARKER",
           "register_latency", "interrupt_overhead", "timing", "run", "blocks", "figures",
           "table3_rows", "figure8_rows", "summary_rows",
           "DEFAULT_PERIOD", "HANDLER_US"]

PAPER = ('J. Howard, N. McKenzie, O. Voumard, R. Casley, "Network Latency in DART and '
         'Windows NT", MERL TR98-03a, 1998')
#: The report's heading of this experiment.
TITLE = "Register latency and interrupt overhead (the form of DART's Table 3 and Figure 8)"
#: The simulated machine the experiment runs on (pcispy/sim/bfm/profiles.py).
PROFILE = "ideal"

#: Table 3's rows a PCI exerciser can measure: (operation, µs, average and minimum
#: cycles of the 300 MHz Pentium II).
TABLE3 = (("Measurement overhead (read and store the time stamp counter)", 0.17, 47, 44),
          ("Direct read of adapter register by application", 0.43, 127, 121),
          ("Direct write of adapter register by application (with LOCK OR)", 0.32, 95, 91))
TABLE3_CPU_MHZ = 300
#: Figure 8: the baseline peak (µs), where the interrupts' peak begins, the loop's
#: measurement overhead, the overhead found, the interrupts made and the events in the
#: peak.
FIGURE8 = {"baseline_us": 0.57, "peak_start_us": 8.9, "measurement_us": 0.4,
           "overhead_us": 8.5, "interrupts": 250_000, "peak_events": 249_000}
#: The checkpoint register the write timing uses (``irq.marker_2``: marker 1 is the
#: interrupt experiment's user thread, 0 a handler's).
MARKER = 2
#: Clocks between interrupts in :func:`interrupt_overhead` (about 90 µs at 33 MHz).
DEFAULT_PERIOD = 3000
#: The simulated handler's time, from INTA# to its return: DART's 8.5 µs.
HANDLER_US = FIGURE8["overhead_us"]


def _stats(clocks, clock_mhz):
    """``{"samples", "min", "mean", "median", "max"}`` in clocks and in µs (``us``)."""
    if not clocks:
        return {"samples": 0}
    ordered = sorted(clocks)
    stats = {"min": ordered[0], "mean": round(sum(ordered) / len(ordered), 2),
             "median": ordered[(len(ordered) - 1) // 2], "max": ordered[-1]}
    return {"samples": len(ordered), **stats,
            "us": {k: round(v / clock_mhz, 3) for k, v in stats.items()}}


async def register_latency(transport, *, count=32):
    """Table 3's register rows on this machine: ``count`` reads of a board register
    (``irq.now_lo``) and ``count`` writes of another (``irq.marker_2``), each alone.

    Where the transport sees the bus (the simulator's host bridge), each access's clocks
    are its own, from the host bridge taking it to the bus going idle; on a board in a
    slot they are the intervals of the board's cycle counter between back-to-back
    accesses (a read's value, a write's checkpoint timestamp), which include the host's
    own time per access. Returns ``{"read", "write"}`` (:func:`_stats` of the clocks),
    ``"method"`` ("bus" or "counter") and ``clock_mhz``."""
    if count < 2:
        raise PcispyError(f"count {count}: time at least two accesses")
    board = Board(transport)
    identity = await board.identify(drives_bus="the register timing")
    mhz = identity["clock_mhz"]
    read_at = REGISTER_MAP["irq.now_lo"][0]
    write_at = REGISTER_MAP[f"irq.marker_{MARKER}"][0]
    reads, writes = [], []
    for _ in range(count):
        _, timing = await transport.read_block_timed(0, read_at, 4, burst=1)
        if timing.clocks is None:
            break
        reads.append(timing.clocks)
        timing = await transport.write_block(0, write_at, bytes(4), burst=1)
        writes.append(timing.clocks)
    method = "bus"
    if not reads or None in writes:
        method = "counter"
        values = [await board.read("irq.now_lo") for _ in range(count + 1)]
        reads = [(b - a) & 0xFFFF_FFFF for a, b in zip(values, values[1:])]
        writes = await _write_intervals(board, count)
    return {"method": method, "clock_mhz": mhz, "count": count,
            "read": _stats(reads, mhz), "write": _stats(writes, mhz)}


async def _write_intervals(board, count):
    """Clocks between ``count + 1`` back-to-back checkpoint writes, from their timestamps
    (the checkpoint FIFO emptied first)."""
    level = (await board.fields("irq.status"))["marker_level"]
    for _ in range(level):
        await board.read("irq.marker_ts_lo")
    for index in range(count + 1):
        await board.write(f"irq.marker_{MARKER}", index)
    stamps = []
    for _ in range(count + 1):
        lo = await board.read("irq.marker_ts_lo")
        hi = await board.read("irq.marker_ts_hi")
        if (await board.fields("irq.marker_id"))["valid"]:
            stamps.append(hi << 32 | lo)
    return [b - a for a, b in zip(stamps, stamps[1:])]


async def _timer_loop(board, transport, samples, acknowledge):
    """``samples`` intervals of back-to-back reads of the board's cycle counter; with
    ``acknowledge`` the loop also acknowledges a pending interrupt itself (a board in a
    slot, where nobody else would)."""
    values = []
    for _ in range(samples + 1):
        values.append(await board.read("irq.now_lo"))
        if acknowledge and await transport.wait_irq(0):
            await board.write("irq.ack", ack=1)
    return [(b - a) & 0xFFFF_FFFF for a, b in zip(values, values[1:])]


def _histogram(values):
    """``[[clocks, count], ...]`` of ``values``, ascending."""
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return [[value, counts[value]] for value in sorted(counts)]


async def interrupt_overhead(transport, *, samples=1500, period=DEFAULT_PERIOD,
                             handler_us=HANDLER_US, seed=1):
    """DART's Figure 8 on this machine: the timer loop's intervals (``samples`` of them)
    without interrupts, then with the board raising one every ``period`` clocks, and the
    difference of their histograms. ``handler_us`` is the simulated handler's time (the
    simulator only). Returns ``{"baseline", "loaded"}`` (:func:`_stats` and the histogram
    ``[[clocks, count], ...]``), ``"extra"``: the loaded run's intervals beyond the
    baseline's longest (their stats), ``"overhead"``: what each took from the loop (their
    median less the baseline's, clocks and µs), ``"raised"`` interrupts and
    ``clock_mhz``."""
    if samples < 10:
        raise PcispyError(f"samples {samples}: take at least 10")
    board = Board(transport)
    identity = await board.identify(drives_bus="the interrupt overhead experiment")
    mhz = identity["clock_mhz"]
    service = getattr(transport, "interrupt_service", None)
    await board.write("irq.command", clear=1)
    baseline = await _timer_loop(board, transport, samples, acknowledge=False)

    handler = max(2, round(handler_us * mhz))
    if service is not None:
        await service.start(ack_offset=REGISTER_MAP["irq.ack"][0],
                            ack_value=1 << REGISTER_MAP["irq.ack"][1].field("ack").lsb,
                            checkpoint_offset=None, delay_range=(handler, handler),
                            hold_cpu=True)
    for name, value in (("delay", period), ("period", period), ("seed", seed)):
        await board.write(f"irq.{name}", value)
    await board.write("irq.ctrl", mode=MODES["periodic"])
    await board.write("irq.command", arm=1)
    try:
        loaded = await _timer_loop(board, transport, samples, acknowledge=service is None)
    finally:
        await board.write("irq.command", stop=1)
        if service is not None:
            await service.stop()
    raised = await board.read("irq.raised")
    await board.write("irq.command", clear=1)

    longest = max(baseline)
    extra = [value for value in loaded if value > longest]
    base = _stats(baseline, mhz)
    more = _stats(extra, mhz)
    overhead = None
    if extra:
        clocks = more["median"] - base["median"]
        overhead = {"clocks": clocks, "us": round(clocks / mhz, 3)}
    return {"clock_mhz": mhz, "samples": samples, "period": period, "raised": raised,
            "handler_clocks": handler if service is not None else None,
            "baseline": {**base, "histogram": _histogram(baseline)},
            "loaded": {**_stats(loaded, mhz), "histogram": _histogram(loaded)},
            "extra": more, "overhead": overhead}


async def timing(transport, *, count=32, samples=1000, period=DEFAULT_PERIOD,
                 handler_us=HANDLER_US, seed=1):
    """Both DART experiments: ``{"registers": register_latency(count), "interrupts":
    interrupt_overhead(samples, period, handler_us)}``."""
    return {"registers": await register_latency(transport, count=count),
            "interrupts": await interrupt_overhead(transport, samples=samples, period=period,
                                                   handler_us=handler_us, seed=seed)}


async def run(transport, sizes, seed=1):
    """:func:`timing` with the report's ``sizes`` (:class:`~pcispy.app.report.Sizes`)."""
    return await timing(transport, count=sizes.register_count, samples=sizes.timer_samples,
                        period=sizes.timer_period, seed=seed)


# --- tables ----------------------------------------------------------------------------

def table3_rows(result):
    """``[operation, source, µs, mean, min]`` of the register accesses: pcispy's in bus
    clocks, then the paper's row in CPU cycles (``result``: :func:`register_latency`'s)."""
    rows = []
    names = {"read": TABLE3[1], "write": TABLE3[2]}
    for key, (operation, us, mean, low) in names.items():
        mine = result[key]
        if mine.get("samples"):
            rows.append([operation, f"pcispy ({result['method']}), bus clocks",
                         f"{mine['us']['mean']:.2f}", f"{mine['mean']:.1f}", str(mine["min"])])
        rows.append([operation, f"paper, Table 3 ({TABLE3_CPU_MHZ} MHz CPU cycles)",
                     f"{us:.2f}", str(mean), str(low)])
    return rows


def figure8_rows(result, width=None):
    """The histograms in bins of ``width`` clocks (default: a fortieth of the longest
    interval): ``[from µs, baseline, with interrupts, difference]`` (the difference with
    the baseline scaled to the loaded run's samples), non-empty bins."""
    mhz = result["clock_mhz"]
    longest = max(value for key in ("baseline", "loaded")
                  for value, _ in result[key]["histogram"])
    width = width or max(1, math.ceil(longest / 40))
    bins = {}
    for key in ("baseline", "loaded"):
        for value, count in result[key]["histogram"]:
            bins.setdefault(value // width, {"baseline": 0, "loaded": 0})[key] += count
    scale = result["loaded"]["samples"] / result["baseline"]["samples"]
    return [[f"{b * width / mhz:.2f}", str(c["baseline"]), str(c["loaded"]),
             f"{c['loaded'] - scale * c['baseline']:+.0f}"] for b, c in sorted(bins.items())]


def figures(result):
    """The experiment's figures beside the paper's (``result``: :func:`timing`'s):
    Table 3's register rows in µs, then :func:`summary_rows` of the interrupts."""
    registers = result["registers"]
    rows = []
    for key, (operation, us, _, _) in (("read", TABLE3[1]), ("write", TABLE3[2])):
        mine = registers[key]
        if mine.get("samples"):
            rows.append(["Table 3", f"{key} of a register, µs (mean)",
                         f"{mine['us']['mean']:.2f}", f"{us}"])
    return rows + summary_rows(result["interrupts"])


def summary_rows(result):
    """``[figure, quantity, pcispy, paper]``."""
    extra, base = result["extra"], result["baseline"]
    rows = [["Figure 8", "baseline interval, µs (median)", f"{base['us']['median']:.2f}",
             f"{FIGURE8['baseline_us']}"],
            ["Figure 8", "interrupts raised / intervals in the extra peak",
             f"{result['raised']} / {extra.get('samples', 0)}",
             f"{FIGURE8['interrupts']} / {FIGURE8['peak_events']}"]]
    if extra.get("samples"):
        rows += [["Figure 8", "extra peak begins at, µs", f"{extra['us']['min']:.2f}",
                  f"{FIGURE8['peak_start_us']}"],
                 ["Figure 8", "interrupt overhead, µs", f"{result['overhead']['us']:.2f}",
                  f"{FIGURE8['overhead_us']}"]]
    return rows


def blocks(result):
    """The report's blocks of this experiment (see :func:`pcispy.app.report.report_blocks`)."""
    registers, interrupts = result["registers"], result["interrupts"]
    method = ("each access's own clocks on the bus (the simulated host bridge's count)"
              if registers["method"] == "bus" else
              "the board's cycle counter between back-to-back accesses (the host's own "
              "time per access included)")
    handler = interrupts["handler_clocks"]
    who = (f"the simulated host's handler ({handler} clocks, DART's {HANDLER_US} µs, then "
           "its acknowledge; the simulated CPU issues nothing else meanwhile)"
           if handler is not None else "this host's interrupt path")
    return [
        ("h2", TITLE),
        ("p", f"After {PAPER}. Table 3's register rows: {registers['count']} reads of a "
              f"board register and as many writes of another, timed by {method}. Rows "
              "marked 'paper' are DART's, in cycles of its 300 MHz CPU."),
        ("table", ["Operation", "Source", "µs", "mean", "min"], table3_rows(registers)),
        ("p", f"Figure 8: a loop reads the board's cycle counter {interrupts['samples']} "
              "times, once quietly and once while the board raises an interrupt every "
              f"{interrupts['period']} clocks, serviced by {who}; the intervals beyond the "
              "quiet run's longest are what the interrupts took. Column 'paper' is DART's "
              "(its loop read the CPU's time stamp counter)."),
        ("table", ["Figure", "Quantity", "pcispy", "paper"], summary_rows(interrupts)),
        ("table", ["Interval from µs", "Quiet", "With interrupts", "Difference"],
         figure8_rows(interrupts)),
    ]
