# SPDX-License-Identifier: BSD-2-Clause
"""PNG plots of measurements (matplotlib, Agg backend: no display needed)."""

__all__ = ["plot_throughput_vs_burst"]


def plot_throughput_vs_burst(rows, path, *, title="DMA throughput against burst length",
                             peak_mbps=None):
    """One line per (command, width, idle) of ``rows`` (``pcispy sweep`` rows: ``cmd``,
    ``width``, ``idle``, ``burst`` (0 = unlimited, drawn at the right), ``mbps``); an
    optional dashed line at ``peak_mbps``. Writes ``path``; raises OSError if it cannot."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot
    finite = [row["burst"] for row in rows if row["burst"]]
    unlimited_at = 2 * max(finite) if finite else 1
    figure, axes = pyplot.subplots(figsize=(7, 4.5))
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
    try:
        figure.savefig(path, dpi=100)
    finally:
        pyplot.close(figure)
