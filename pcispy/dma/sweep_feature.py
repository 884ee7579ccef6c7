# SPDX-License-Identifier: BSD-2-Clause
"""The DMA characterisation of a host (Pamette Figure 2, Shand 1992 Figure 13) and the
``pcispy sweep`` command: one DMA per (command, burst, idle), the best MB/s of each
command with the settings that reached it, and a throughput-against-burst-length PNG."""


import argparse
from pcispy.host.board import Board
from pcispy.host.command import CliCommand, output_path, run_feature
from pcispy.host.errors import PcispyError
from pcispy.dma.dma_feature import (COMMANDS, add_dma_arguments, arguments_of, dma,
                                    setting_type)
from pcispy.host.plots import plot_throughput_vs_burst

__all__ = ["sweep", "best_per_command", "SweepCommand"]

#: What each row of the sweep keeps of a run.
_ROW_FIELDS = ("cmd", "width", "burst", "idle", "bytes", "clocks", "mbps", "transactions",
               "retries", "disconnects", "aborts", "latency_mean", "mismatches", "error")


def best_per_command(rows):
    """``{cmd: row}``: the fastest error-free run of each command (ties: shorter burst)."""
    best = {}
    for row in rows:
        if row["error"] or row["mismatches"]:
            continue
        held = best.get(row["cmd"])
        if held is None or row["mbps"] > held["mbps"]:
            best[row["cmd"]] = row
    return best


async def sweep(transport, *, cmds=("MW", "MRM"), bursts=(1, 4, 16, 64, 256), idles=(0,),
                **dma_arguments):
    """Run :func:`~pcispy.dma.dma_feature.dma` for every command x burst x idle (other
    arguments as there); reads are verified. Returns the rows and the best per command."""
    await Board(transport).identify(drives_bus="pcispy sweep")
    rows = []
    for cmd in cmds:
        for idle in idles:
            for burst in bursts:
                result = await dma(transport, cmd=cmd, burst=burst, idle=idle,
                                   verify=cmd in ("MR", "MRL", "MRM", "IOR"), **dma_arguments)
                rows.append({name: result[name] for name in _ROW_FIELDS})
    peak = result["clock_hz"] * result["width"] / 8 / 1e6
    return {"rows": rows, "best": best_per_command(rows), "peak_mbps": round(peak, 2)}


def _int_list(text):
    try:
        values = [int(part, 0) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers")
    return values


def _setting_list(argument):
    """An argparse ``type``: comma-separated values of the ``dma`` argument ``argument``
    (:data:`~pcispy.dma.dma_feature.SETTINGS`), each one the board takes."""
    one = setting_type(argument)

    def values(text):
        return [one(str(value)) for value in _int_list(text)]
    return values


def _cmd_list(text):
    cmds = [part.strip().upper() for part in text.split(",") if part.strip()]
    unknown = [c for c in cmds if c not in COMMANDS]
    if unknown or not cmds:
        raise argparse.ArgumentTypeError(f"unknown command(s) {', '.join(unknown) or text!r}; "
                                         f"choose from {', '.join(COMMANDS)}")
    return cmds


class SweepCommand(CliCommand):
    name = "sweep"
    help = "characterise DMA: every command x burst x idle; best MB/s per command; PNG plot"
    examples = (
        "pcispy sweep --cmds MW,MRM --bursts 1,4,16,64,256,0 --len 64K --plot sweep.png",
        "pcispy --sim=alphastation200 sweep --cmds MW,MR,MRL,MRM --json",
        "pcispy --bus-width 64 sweep --width 64 --cmds MW --idles 0,4",
    )

    def add_arguments(self, parser):
        parser.add_argument("--cmds", type=_cmd_list, default=["MW", "MRM"],
                            help="commands, comma-separated (default MW,MRM)")
        parser.add_argument("--bursts", type=_setting_list("burst"),
                            default=[1, 4, 16, 64, 256],
                            help="burst lengths in data phases, 0 = unlimited "
                                 "(default 1,4,16,64,256)")
        parser.add_argument("--idles", type=_setting_list("idle"), default=[0],
                            help="idle clocks between bursts (default 0)")
        parser.add_argument("--plot", metavar="FILE.png", type=output_path,
                            help="write throughput against burst length as a PNG")
        add_dma_arguments(parser)

    def run(self, args, out):
        arguments = arguments_of(args, cmds=args.cmds, bursts=args.bursts, idles=args.idles)
        result = run_feature(args, sweep, **arguments)
        if args.plot:
            try:
                plot_throughput_vs_burst(result["rows"], args.plot,
                                         peak_mbps=result["peak_mbps"])
            except OSError as error:
                raise PcispyError(f"cannot write {args.plot}: {error.strerror}") from None
            result["plot"] = args.plot
        if not args.json:
            out.write(f"{'cmd':4s} {'width':>5s} {'burst':>6s} {'idle':>4s} {'MB/s':>8s} "
                      f"{'clocks':>8s} {'txns':>6s} {'retry':>5s} {'disc':>5s} error\n")
            for row in result["rows"]:
                out.write(f"{row['cmd']:4s} {row['width']:5d} {row['burst'] or 'unlim':>6} "
                          f"{row['idle']:4d} {row['mbps']:8.1f} {row['clocks']:8d} "
                          f"{row['transactions']:6d} {row['retries']:5d} "
                          f"{row['disconnects']:5d} {row['error'] or ''}\n")
            out.write(f"best of each command (bus peak {result['peak_mbps']} MB/s):\n")
            for cmd, row in result["best"].items():
                out.write(f"  {cmd:4s} {row['mbps']:8.1f} MB/s  burst "
                          f"{row['burst'] or 'unlimited'}, idle {row['idle']}\n")
        return result
