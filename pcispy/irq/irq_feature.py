# SPDX-License-Identifier: BSD-2-Clause
"""Interrupt latency from the host's side: ``pcispy irq`` (Pamette §5, Figures 4 and 5).

The board raises INTA# at pseudo-random instants (the ``irq`` generator in ``random``
mode, gaps uniform in ``[min_gap, max_gap]``), someone services each interrupt, and the
board timestamps the acknowledge and the checkpoints with its cycle counter. This feature
turns those timestamps into two distributions:

- *handler*: raise -> acknowledge (``irq.ack`` written);
- *user*: raise -> the user thread's checkpoint (``irq.marker_<USER_MARKER>``), the last
  one written for that interrupt.

Who services the interrupts: on hardware this code does (wait for the interrupt, write
the acknowledge, write the checkpoint); when the transport offers an
``interrupt_service`` (the simulated host's interrupt responder), that service does it in
RTL and this code only waits until each interrupt has been serviced.

Raise times are not read per interrupt (the next raise may already have moved
``irq.raise_ts``): the generator's gaps follow from the seed
(:func:`pcispy.irq.gaps.random_gaps`), so one anchor fixes every raise. The
anchor is the first interrupt, whose raise time is read while it is still pending; that
read delays its acknowledge, so interrupt 0 is serviced but not counted. Each later
acknowledge ``A_j`` acknowledges the first raise after ``A_(j-1)``; the raises in between
found the interrupt pending and were missed.
"""

import argparse
import math

from pcispy.irq.gaps import MODES, random_gaps, lfsr_draw
from pcispy.irq.bins import bin_of, bin_low, bin_high, DEFAULT_BINS
from pcispy.board.registers import REGISTER_MAP
from pcispy.irq.registers import IRQ_MIN_GAP
from pcispy.host.board import Board
from pcispy.host.command import CliCommand, output_path, run_feature
from pcispy.host.errors import PcispyError, RefusedSetting
from pcispy.host.plots import decade_ticks, preload, pyplot, save_figure

__all__ = ["irq_latency", "distribution", "histogram", "attribute_raises",
           "plot_histograms", "IrqCommand", "USER_MARKER", "DEFAULT_MIN_GAP",
           "DEFAULT_MAX_GAP"]

#: The checkpoint register the user thread writes (``irq.marker_1``); marker 0 is left
#: for handlers that also mark their own exit.
USER_MARKER = 1
#: Default gaps between raises, in clocks (30 µs .. 300 µs at 33 MHz): longer than a
#: typical handler, so that few interrupts are missed.
DEFAULT_MIN_GAP = 1000
DEFAULT_MAX_GAP = 10000
#: Checkpoints popped from the board's FIFO after each interrupt (this code writes one
#: per interrupt; a handler may write more, then the FIFO is drained at the end).
MARKERS_PER_INTERRUPT = 2

_ERRORS = {
    "err_mode": "reserved generator mode",
    "err_delay": f"delay below {IRQ_MIN_GAP} clocks",
    "err_gap": f"min gap below {IRQ_MIN_GAP} clocks or above the max gap",
    "err_seed": "seed 0 (the LFSR would never move)",
    "err_busy": "the histogram was still being cleared",
}


def _field_value(register, field, value=1):
    """A whole-register value with one field set (for writes made by someone else)."""
    return value << REGISTER_MAP[register][1].field(field).lsb


def distribution(samples, clock_mhz, nbins=DEFAULT_BINS):
    """``{min, median, p98, max}`` in clocks, the same in ``us``, ``samples`` and a
    ``histogram`` of ``[low, high, count]`` (the board's log bins, non-empty ones; high
    exclusive, ``None`` for the open last bin). ``median`` is the lower median and
    ``p98`` the nearest-rank 98th percentile, so both are samples."""
    if not samples:
        return {"samples": 0}
    ordered = sorted(samples)
    stats = {"min": ordered[0], "median": ordered[(len(ordered) - 1) // 2],
             "p98": ordered[math.ceil(0.98 * len(ordered)) - 1], "max": ordered[-1]}
    return {**stats, "samples": len(ordered),
            "us": {k: round(v / clock_mhz, 3) for k, v in stats.items()},
            "histogram": histogram(ordered, nbins)}


def histogram(samples, nbins=DEFAULT_BINS):
    """``[[low, high, count], ...]`` of ``samples`` over the board's bins (non-empty)."""
    counts = {}
    for sample in samples:
        index = bin_of(sample, nbins)
        counts[index] = counts.get(index, 0) + 1
    return [[bin_low(i), bin_high(i, nbins), counts[i]] for i in sorted(counts)]


def attribute_raises(first_raise, acks, seed, min_gap, max_gap):
    """``[(raise, missed), ...]``, one per acknowledge time in ``acks`` (ascending, the
    first being the anchor interrupt's): the raise it acknowledged and the raises that
    found that interrupt pending. The generator fires at ``first_raise + S_k`` (``S_k``
    the sum of the first ``k`` gaps); a fire in the clock of an acknowledge (raise time
    ``A + 1``) is a new interrupt."""
    out = []
    fires = _fires(first_raise, seed, min_gap, max_gap)
    fire = next(fires)
    previous_ack = None
    for ack in acks:
        while previous_ack is not None and fire <= previous_ack:
            fire = next(fires)
        raised = fire
        missed = 0
        fire = next(fires)
        while fire <= ack:
            missed += 1
            fire = next(fires)
        out.append((raised, missed))
        previous_ack = ack
    return out


def _fires(first_raise, seed, min_gap, max_gap, batch=256):
    time = first_raise
    state = seed
    yield time
    while True:
        # random_gaps restarts from its seed: continue from the last LFSR state by asking
        # for gaps in batches and carrying the sum forward.
        gaps = random_gaps(state, min_gap, max_gap, batch)
        for gap in gaps:
            time += gap
            yield time
        state = _lfsr_after(state, batch)


def _lfsr_after(state, draws):
    for _ in range(draws):
        state = lfsr_draw(state)
    return state


async def _pop_markers(board, most=None):
    """The checkpoints waiting in the board's FIFO (at most ``most``), oldest first:
    ``[(timestamp, id), ...]``."""
    level = (await board.fields("irq.status"))["marker_level"]
    out = []
    for _ in range(level if most is None else min(level, most)):
        lo = await board.read("irq.marker_ts_lo")
        hi = await board.read("irq.marker_ts_hi")
        marker = await board.fields("irq.marker_id")
        if marker["valid"]:
            out.append((hi << 32 | lo, marker["id"]))
    return out


async def irq_latency(transport, *, count, min_gap=DEFAULT_MIN_GAP, max_gap=DEFAULT_MAX_GAP,
                      seed=1, timeout_s=None):
    """Measure ``count`` interrupts (plus the anchor); return the distributions.

    The result has ``count``, ``missed`` (raises that found the previous interrupt
    pending, the board's counter), ``raised``, ``acked``, ``overruns`` (checkpoints lost),
    ``pending`` (an interrupt left pending at the stop), ``clock_mhz``, ``handler`` and ``user`` (see :func:`distribution`), ``interrupts``
    (per interrupt: raise, ack, user timestamps and missed raises) and
    ``board_histogram`` (the board's own raise-to-ack histogram, non-empty bins,
    including the anchor).
    """
    if count < 1:
        raise PcispyError(f"--count {count}: measure at least one interrupt")
    board = Board(transport)
    clock_mhz = (await board.identify(drives_bus="pcispy irq"))["clock_mhz"]
    if timeout_s is None:
        # A raise is due within max_gap clocks; allow as long again for the service.
        timeout_s = 2 * max_gap / (clock_mhz * 1e6) + 0.01
    service = getattr(transport, "interrupt_service", None)

    await board.write("irq.command", clear=1)
    for _ in range(4 * DEFAULT_BINS):          # the clear takes one clock per bin
        if not (await board.fields("irq.status"))["busy"]:
            break
    else:
        raise PcispyError("the board's interrupt unit stays busy after a clear")
    if service is not None:
        await service.start(ack_offset=REGISTER_MAP["irq.ack"][0],
                            ack_value=_field_value("irq.ack", "ack"),
                            checkpoint_offset=REGISTER_MAP[f"irq.marker_{USER_MARKER}"][0])
    for name, value in (("delay", min_gap), ("min_gap", min_gap), ("max_gap", max_gap),
                        ("seed", seed)):
        if not 0 <= value < 1 << 32:
            raise PcispyError(f"{name} {value} does not fit the 32-bit register irq.{name}")
        await board.write(f"irq.{name}", value)
    await board.write("irq.ctrl", mode=MODES["random"])
    await board.write("irq.command", arm=1)
    status = await board.fields("irq.status")
    refused = [text for field, text in _ERRORS.items() if status[field]]
    if refused:
        raise RefusedSetting(f"the board refused to arm the interrupt generator: "
                             f"{', '.join(refused)} (min gap {min_gap}, max gap {max_gap}, "
                             f"seed {seed})")

    try:
        acks, markers, first_raise = [], [], None
        for j in range(count + 1):
            if j == 0:
                first_raise = await _anchor(board, transport, timeout_s)
            if service is not None:
                ok = await service.serviced(timeout_s)
            else:
                ok = j == 0 or await transport.wait_irq(timeout_s)
                if ok:
                    await board.write("irq.ack", ack=1)
                    await board.write(f"irq.marker_{USER_MARKER}", 1)
            if not ok:
                raise PcispyError(f"interrupt {j} was not serviced within {timeout_s:.3f} s "
                                  f"({len(acks)} acknowledged so far)")
            ack = await board.read64("irq.ack_ts")
            acked = await board.read("irq.acked")
            if acked != j + 1:
                raise PcispyError(f"the board counts {acked} acknowledges where the host has "
                                  f"seen {j + 1}: interrupts came faster than the host could "
                                  "read their timestamps; raise --min-gap")
            acks.append(ack)
            # A few checkpoints per interrupt keep the FIFO near empty; draining many at
            # once would let the next interrupts pass before their timestamps are read.
            markers += await _pop_markers(board, MARKERS_PER_INTERRUPT)
        await board.write("irq.command", stop=1)
    finally:
        if service is not None:
            await service.stop()
    markers += await _pop_markers(board)
    counters = {name: await board.read(f"irq.{name}")
                for name in ("raised", "acked", "missed", "overruns")}
    pending = (await board.fields("irq.status"))["pending"]
    board_histogram = []
    for index in range(DEFAULT_BINS):
        await board.write("irq.hist_index", index=index)
        bin_count = await board.read("irq.hist_count")
        if bin_count:
            board_histogram.append([bin_low(index), bin_high(index), bin_count])
    await board.write("irq.command", clear=1)     # drops a last pending INTA#

    interrupts = []
    attributed = attribute_raises(first_raise, acks, seed, min_gap, max_gap)
    user_times = [t for t, marker_id in markers if marker_id == USER_MARKER]
    for j in range(1, count + 1):
        raised, missed = attributed[j]
        end = acks[j + 1] if j + 1 < len(acks) else math.inf
        mine = [t for t in user_times if acks[j] < t <= end]
        interrupts.append({"raise": raised, "ack": acks[j], "user": max(mine, default=None),
                           "missed": missed})
    handler = [i["ack"] - i["raise"] for i in interrupts]
    user = [i["user"] - i["raise"] for i in interrupts if i["user"] is not None]
    return {
        "count": count, "missed": counters["missed"], "raised": counters["raised"],
        "acked": counters["acked"], "overruns": counters["overruns"], "pending": pending,
        "min_gap": min_gap, "max_gap": max_gap, "seed": seed, "clock_mhz": clock_mhz,
        "anchor": {"raise": first_raise, "ack": acks[0]},
        "handler": distribution(handler, clock_mhz),
        "user": distribution(user, clock_mhz),
        "interrupts": interrupts,
        "board_histogram": board_histogram,
        "serviced_by": "simulated responder" if service is not None else "host",
    }


async def _anchor(board, transport, timeout_s):
    """The first interrupt's raise time, read while it is pending (so it is the raise of
    interrupt 0 and not of a later one)."""
    if not await transport.wait_irq(timeout_s):
        raise PcispyError(f"the board raised no interrupt within {timeout_s:.3f} s (is "
                          "Interrupt Disable set in its CliCommand register?)")
    first_raise = await board.read64("irq.raise_ts")
    if await board.read("irq.acked"):
        raise PcispyError("the first interrupt was acknowledged before its raise time "
                          "could be read; the interrupt service is faster than this host")
    return first_raise


def plot_histograms(result, path):
    """A log-log plot of the handler and user histograms (Pamette Figures 4 and 5)."""
    plt = pyplot()
    clock_mhz = result["clock_mhz"]
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for key, label in (("handler", "raise → handler (ack)"),
                       ("user", "raise → user thread (checkpoint)")):
        bins = result[key].get("histogram", [])
        if not bins:
            continue
        lows = [low / clock_mhz for low, _, _ in bins]
        widths = [((high if high is not None else 2 * low) - low) / clock_mhz
                  for low, high, _ in bins]
        counts = [c for _, _, c in bins]
        axes.bar(lows, counts, width=widths, align="edge", alpha=0.6, label=label)
    axes.set_xscale("log")
    axes.set_yscale("log")
    decade_ticks(axes)
    axes.set_xlabel("latency (µs)")
    axes.set_ylabel("interrupts (per bin)")
    axes.set_title(f"interrupt latency, {result['count']} interrupts, "
                   f"{result['missed']} missed")
    axes.legend()
    figure.tight_layout()
    try:
        save_figure(figure, path)
    except OSError as error:
        raise PcispyError(f"cannot write {path}: {error.strerror}") from None


def _positive(text):
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value < 1 << 32:
        raise argparse.ArgumentTypeError(f"{value} is outside 1 .. 2**32-1")
    return value


class IrqCommand(CliCommand):
    name = "irq"
    help = ("interrupt latency: raise INTA# at pseudo-random instants, service each one, "
            "report raise-to-handler and raise-to-user-thread distributions")
    examples = ("pcispy irq --count 1000",
                "pcispy irq --count 200 --min-gap 2000 --max-gap 20000 --hist irq.png",
                "pcispy --sim=alphastation200 --seed 7 --json irq --count 50")

    def add_arguments(self, parser):
        parser.add_argument("--count", type=_positive, default=100,
                            help="interrupts to measure (default: 100)")
        parser.add_argument("--min-gap", type=_positive, default=DEFAULT_MIN_GAP,
                            metavar="C", help="shortest gap between raises, in clocks "
                            f"(at least {IRQ_MIN_GAP}; default: {DEFAULT_MIN_GAP})")
        parser.add_argument("--max-gap", type=_positive, default=DEFAULT_MAX_GAP,
                            metavar="C", help="longest gap between raises, in clocks "
                            f"(default: {DEFAULT_MAX_GAP})")
        # Checked as it is parsed, so that a path that cannot be written ends the command
        # before the measurement starts.
        parser.add_argument("--hist", metavar="FILE.png", type=output_path,
                            help="write a log-log histogram plot of both latencies")

    def run(self, args, out):
        if args.hist:
            preload()             # the plot's library loads while the interrupts run
        result = run_feature(args, irq_latency, count=args.count,
                             min_gap=args.min_gap, max_gap=args.max_gap, seed=args.seed)
        if args.hist:
            plot_histograms(result, args.hist)
        if not args.json:
            out.write(f"{result['count']} interrupts measured, {result['missed']} missed, "
                      f"{result['overruns']} checkpoints lost (clock {result['clock_mhz']} "
                      "MHz)\n")
            out.write(f"{'':18s}{'min':>12s}{'median':>12s}{'p98':>12s}{'max':>12s}\n")
            for key, label in (("handler", "raise -> handler"), ("user", "raise -> user")):
                stats = result[key]
                if not stats["samples"]:
                    out.write(f"{label:18s}  (no samples)\n")
                    continue
                for unit in ("clocks", "us"):
                    values = stats if unit == "clocks" else stats["us"]
                    out.write(f"{label if unit == 'clocks' else '':18s}" +
                              "".join(f"{values[k]:>12}" for k in ("min", "median", "p98",
                                                                    "max")) + f"  {unit}\n")
            if args.hist:
                out.write(f"histogram plot: {args.hist}\n")
        return result
