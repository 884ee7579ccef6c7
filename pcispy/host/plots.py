# SPDX-License-Identifier: BSD-2-Clause
"""PNG plots of measurements (matplotlib, Agg backend: no display needed)."""

import json
import threading

__all__ = ["plot_throughput_vs_burst", "plot_throughput_by_command", "plot_latency_histograms",
           "save_figure", "pyplot", "preload", "decade_ticks", "AXES_METADATA"]

#: PNG text key under which :func:`save_figure` stores each plot's title and axis labels
#: (JSON ``[[title, xlabel, ylabel], ...]``), so a reader can tell what a PNG shows.
AXES_METADATA = "pcispy-axes"


def save_figure(figure, path, dpi=100):
    """Save ``figure`` as a PNG at ``path`` with its axes' titles and labels in the
    :data:`AXES_METADATA` text chunk, then close it. Raises OSError if it cannot write."""
    axes = [[a.get_title(), a.get_xlabel(), a.get_ylabel()] for a in figure.get_axes()]
    try:
        figure.savefig(path, dpi=dpi, format="png",
                       metadata={AXES_METADATA: json.dumps(axes)})
    finally:
        pyplot().close(figure)


#: The thread :func:`preload` started (None: none).
_preloading = None


def preload():
    """Start loading matplotlib in a thread of its own, for a command that plots once a
    long wait is over (a simulated run: the process waits on its session's socket): the
    second or so it takes to load then passes while the simulator works, not after it."""
    global _preloading
    if _preloading is None:
        _preloading = threading.Thread(target=_load, daemon=True)
        _preloading.start()


def _load():
    try:
        pyplot()
    except Exception:
        pass                            # the plot itself will say what is wrong


def pyplot():
    """matplotlib's ``pyplot`` on the Agg backend (no display needed)."""
    if _preloading is not None and _preloading is not threading.current_thread():
        _preloading.join()
    # matplotlib takes a good part of a second to load, and only a plot needs it: it loads
    # at the first plot (or in the background: preload), not with the commands that can
    # make one.
    import matplotlib
    matplotlib.use("Agg")
    # (the backend is chosen before pyplot loads; pyplot waits for the same reason)
    from matplotlib import pyplot as loaded
    return loaded


def decade_ticks(axes):
    """Ticks at 1, 2 and 5 of each decade on both log axes of ``axes``, written as plain
    numbers (0.5, 2, 10, not 10^1), and a faint grid at them."""
    # matplotlib waits for the first plot, as in pyplot().
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    for axis in (axes.xaxis, axes.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_minor_formatter(NullFormatter())
    axes.grid(True, which="major", alpha=0.3)


def plot_throughput_vs_burst(rows, path, *, title="DMA throughput against burst length",
                             peak_mbps=None):
    """One line per (command, width, idle) of ``rows`` (``pcispy sweep`` rows: ``cmd``,
    ``width``, ``idle``, ``burst`` (0 = unlimited, drawn at the right), ``mbps``); an
    optional dashed line at ``peak_mbps``. Writes ``path``; raises OSError if it cannot."""
    plt = pyplot()
    finite = [row["burst"] for row in rows if row["burst"]]
    unlimited_at = 2 * max(finite) if finite else 1
    figure, axes = plt.subplots(figsize=(7, 4.5))
    series = {}
    for row in rows:
        key = (row["cmd"], row["width"], row["idle"])
        series.setdefault(key, []).append((row["burst"] or unlimited_at, row["mbps"]))
    for (cmd, width, idle), points in sorted(series.items()):
        points.sort()
        axes.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                  label=f"{cmd} {width}-bit" + (f", idle {idle}" if idle else ""))
    if peak_mbps:
        axes.axhline(peak_mbps, linestyle="--", color="grey", label=f"bus peak {peak_mbps:.0f}")
    axes.set_xscale("log", base=2)
    axes.set_xlabel("burst length (data phases; rightmost: unlimited)" if not finite or
                    any(not row["burst"] for row in rows) else "burst length (data phases)")
    axes.set_ylabel("MB/s")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    save_figure(figure, path)


def plot_throughput_by_command(machines, path):
    """One panel per DMA command, one line per (machine, width): MB/s against burst
    length. ``machines``: ``{name: [sweep rows]}`` (``cmd``, ``width``, ``idle``,
    ``burst`` (0 = unlimited, drawn at the right), ``mbps``); of several idles the best
    MB/s at each burst is drawn. Writes ``path``; raises OSError if it cannot."""
    plt = pyplot()
    rows = [row for machine in machines.values() for row in machine]
    cmds = list(dict.fromkeys(row["cmd"] for row in rows))
    finite = [row["burst"] for row in rows if row["burst"]]
    unlimited_at = 2 * max(finite) if finite else 1
    figure, panels = plt.subplots(1, max(1, len(cmds)), figsize=(4.5 * max(1, len(cmds)),
                                                                     4.5), squeeze=False)
    for cmd, axes in zip(cmds, panels[0]):
        for name, machine in machines.items():
            series = {}
            for row in machine:
                if row["cmd"] != cmd or row["error"] or row["mismatches"]:
                    continue
                at = row["burst"] or unlimited_at
                points = series.setdefault(row["width"], {})
                points[at] = max(points.get(at, 0), row["mbps"])
            for width, points in sorted(series.items()):
                xs = sorted(points)
                axes.plot(xs, [points[x] for x in xs], marker="o",
                          label=f"{name}" + (" 64-bit" if width == 64 else ""))
        axes.set_xscale("log", base=2)
        axes.set_xlabel("burst length (data phases)" +
                        ("; rightmost: unlimited" if len(finite) < len(rows) else ""))
        axes.set_ylabel("MB/s")
        axes.set_title(f"DMA {cmd}")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize="small")
    figure.tight_layout()
    save_figure(figure, path)


def plot_latency_histograms(machines, path):
    """First-data latency histograms, one step line per machine. ``machines``: ``{name:
    [count of latency n clocks, per n; the last bin holds everything from there up]}``.
    Writes ``path``; raises OSError if it cannot."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for name, counts in machines.items():
        if sum(counts):
            axes.step(range(len(counts)), counts, where="mid", label=name)
    axes.set_yscale("symlog", linthresh=1)
    axes.set_xlabel("first-data latency (clocks from the address phase; last bin: and more)")
    axes.set_ylabel("transactions")
    axes.set_title("first-data latency of DMA transactions")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    save_figure(figure, path)
