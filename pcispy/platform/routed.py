# SPDX-License-Identifier: BSD-2-Clause
"""What synthesis and place and route made of a build, read from their outputs.

:func:`read_report` reads nextpnr's report, routed netlist and SDF into the report fields
(fmax, usage, I/O registers, input paths); :func:`analyse_io` follows every PCI input pin
through the routed cells (:func:`parse_sdf`'s delays) to the flip-flops it reaches;
:func:`explain_input_path` prints one such path cell by cell. The timing policy that
judges the figures is :mod:`.timing`.
"""

import json
import re
from pathlib import Path

from pcispy.platform.ecp5.floorplan import DATA_LINES, PCI_PORT, top_module
from pcispy.platform.timing import bus_clock_max_mhz, PCI_CLOCK_MHZ

__all__ = ["read_report", "read_routing", "parse_sdf", "analyse_io", "explain_input_path",
           "ExplainError", "netlist_usage", "NOT_BUS_INPUTS"]


def netlist_usage(path):
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


#: One progress row of nextpnr's router1: iterations, arcs routed with and without
#: ripping others up (running totals), the change in each since the last row, the arcs
#: left, the batch's and the total seconds.
_ROUTER1_ROW = re.compile(r"^Info:\s+(\d+) \|\s+(\d+)\s+(\d+) \|\s+(-?\d+)\s+(-?\d+) \|"
                          r"\s+(\d+)\|\s+([\d.]+)\s+([\d.]+)\|", re.MULTILINE)


def read_routing(log):
    """How nextpnr's router1 fared, from its log text ``log``: ``{"arcs": arcs to route,
    "complete": whether it finished, "iterations", "ripped_up": arcs routed by ripping
    others up (the congestion), "seconds", "remaining": arcs left at the progress rows
    (every 1000 iterations; at most 25 of them, evenly spaced, the last included)}``;
    None when the log has no routing (router2, or stopped before it)."""
    arcs = re.search(r"^Info: Routing (\d+) arcs\.", log, re.MULTILINE)
    rows = _ROUTER1_ROW.findall(log)
    if arcs is None or not rows:
        return None
    last = rows[-1]
    total = re.search(r"^Info: Router1 time ([\d.]+)s", log, re.MULTILINE)
    return {"arcs": int(arcs.group(1)),
            "complete": re.search(r"^Info: Routing complete\.", log, re.MULTILINE) is not None,
            "iterations": int(last[0]), "ripped_up": int(last[1]),
            "seconds": float(total.group(1) if total else last[7]),
            "remaining": _thinned([int(row[5]) for row in rows])}


def _thinned(values, most=25):
    """At most ``most`` of ``values``, evenly spaced, the last always among them."""
    step = -(-len(values) // most)
    return values[:-1][::step] + values[-1:]


def read_report(build_dir, name="pcispy", speed=PCI_CLOCK_MHZ):
    """The report fields read from nextpnr's report, routed netlist and SDF, the fastest
    bus clock among those of speed class ``speed`` (33 or 66: the build's bus)."""
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
    hold = [p["min_ns"] - p["clock_ns"] - p["hold_ns"] for p in paths if "min_ns" in p]
    return {
        "fmax_mhz": fmax,
        "bus_clock_max_mhz": bus_clock_max_mhz(fmax.get("pci", 0.0), paths, speed),
        "luts": usage["TRELLIS_COMB"]["used"] if "TRELLIS_COMB" in usage else None,
        "ffs": usage.get("TRELLIS_FF", {}).get("used"),
        "brams": usage.get("DP16KD", {}).get("used", 0),
        "outputs_registered": not unregistered,
        "unregistered_outputs": unregistered,
        "input_paths": [{k: p[k] for k in ("pin", "to", "ns", "setup_ns", "luts", "data",
                                           "min_ns", "clock_ns", "hold_ns") if k in p}
                        for p in paths],
        "input_hold_slack_ns_min": round(min(hold), 3) if hold else None,
        "input_setup_ns_max": setup_max(paths),
        "input_setup_ns_max_control": setup_max([p for p in paths if not p["data"]]),
        "data_paths": {"count": len(data), "setup_ns_max": setup_max(data),
                       "luts_max": max((p["luts"] for p in data), default=0)},
        "routing": (read_routing((build_dir / f"{name}.tim").read_text())
                    if (build_dir / f"{name}.tim").exists() else None),
    }


def _sdf_name(text):
    """An SDF identifier as nextpnr names the cell (backslash escapes removed)."""
    return re.sub(r"\\(.)", r"\1", text)


def _worst_ps(triple):
    """The max of an SDF ``(min:typ:max)`` triple, in ps."""
    return max(float(x) for x in triple.strip("()").split(":") if x)


def _best_ps(triple):
    """The min of an SDF ``(min:typ:max)`` triple, in ps."""
    return min(float(x) for x in triple.strip("()").split(":") if x)


def parse_sdf(text):
    """The delays of a routed design from nextpnr's SDF, ns: the worst case
    ``{"wires": {(cell, port): [(cell, port, ns)]}, "cells": {cell: {(in, out): ns}},
    "setup": {cell: {port: ns}}, "types": {cell: type}}``, and the best case for hold:
    ``"wires_min"``, ``"cells_min"`` (the same shapes, each delay's minimum) and
    ``"hold": {cell: {port: ns}}``."""
    wires, cells, setup, types = {}, {}, {}, {}
    wires_min, cells_min, hold = {}, {}, {}
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
            wires_min.setdefault((src_cell, src_port), []).append(
                (dst_cell, dst_port, _best_ps(m.group(3)) / 1000))
        elif m := re.match(r"\(IOPATH (\S+) (\S+) (\([^)]*\))", line):
            cells.setdefault(cell, {})[(m.group(1), m.group(2))] = _worst_ps(m.group(3)) / 1000
            cells_min.setdefault(cell, {})[(m.group(1), m.group(2))] = \
                _best_ps(m.group(3)) / 1000
        elif m := re.match(r"\(SETUPHOLD \((?:pos|neg)edge (\S+)\) \([^)]*\) (\([^)]*\))"
                           r"(?: (\([^)]*\)))?", line):
            ports = setup.setdefault(cell, {})
            ports[m.group(1)] = max(ports.get(m.group(1), 0.0), _worst_ps(m.group(2)) / 1000)
            if m.group(3):
                ports = hold.setdefault(cell, {})
                ports[m.group(1)] = max(ports.get(m.group(1), 0.0),
                                        _worst_ps(m.group(3)) / 1000)
    return {"wires": wires, "cells": cells, "setup": setup, "types": types,
            "wires_min": wires_min, "cells_min": cells_min, "hold": hold}


#: I/O-cell ports through which a pin reaches its own input register (registered at the
#: pin: not an unregistered path).
_PIN_REGISTER_PORTS = {"DI", "PADDI", "INDD"}
#: Resource subsignals that are not PCI bus inputs with a setup budget: the clock, and
#: RST#'s reset pin (asynchronous, released through a reset synchronizer).
NOT_BUS_INPUTS = {"clk", "rst_domain"}


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


def analyse_io(netlist, timing):
    """(input paths, unregistered outputs) of a routed design.

    Input paths: from each PCI input pin's I/O cell output, through combinational cells
    (their SDF IOPATH delays) and wires (INTERCONNECT delays), to every port with a setup
    check (a flip-flop, an output register of an I/O cell, a block RAM); the pin's own
    input register does not count. One entry per (pin, flip-flop), the worst delay,
    sorted worst first, each with ``setup_ns`` of its end point, ``luts``: the LUTs on
    that worst path, and ``data``: whether it ends in an output or tristate register of
    an AD pin (:data:`DATA_LINES`) or in a fabric copy of one (a flip-flop with the same
    D input). For hold, each entry also has ``min_ns``, the path's shortest delay (the
    SDF's best case), ``clock_ns``, when the clock edge reaches the end from the PCI
    clock pin (its latest), and ``hold_ns``, the end's own hold time.

    Unregistered outputs: the PCI pins that drive but do not take their data from the
    I/O cell's output register (``DATAMUX_OREG = IOLDO``) and their enable from its
    tristate register (``TRIMUX_TSREG = IOLTO``), or from a constant.
    """
    wires, cells, setup = timing["wires"], timing["cells"], timing["setup"]
    types = timing.get("types", {})
    paths = {}
    shortest = {}
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
        if line in NOT_BUS_INPUTS:
            continue
        _, ends = _walk_from_pin(io_name, wires, cells, setup, types)
        for end, (at, luts, port, _) in ends.items():
            paths[(label, end)] = (at, setup[end][port], luts)
        if "wires_min" in timing:
            _, early = _walk_from_pin(io_name, timing["wires_min"], timing["cells_min"],
                                      setup, types, earliest=True)
            for end, (at, _, port, _) in early.items():
                shortest[(label, end)] = (at, timing["hold"].get(end, {}).get(port, 0.0))
    clocks = _clock_arrivals(pins, timing)
    rows = [{"pin": pin, "to": to, "ns": round(ns, 3), "setup_ns": round(su, 3),
             "luts": luts, "data": to in data_registers,
             **({"min_ns": round(shortest[(pin, to)][0], 3),
                 "clock_ns": round(clocks.get(to, 0.0), 3),
                 "hold_ns": round(shortest[(pin, to)][1], 3)}
                if (pin, to) in shortest else {})}
            for (pin, to), (ns, su, luts) in paths.items()]
    rows.sort(key=lambda r: (-(r["ns"] + r["setup_ns"]), r["pin"], r["to"]))
    return rows, sorted(unregistered)


def _walk_from_pin(io_name, wires, cells, setup, types, *, earliest=False):
    """The combinational fan-out of one pin's I/O cell output ``O`` with the worst
    arrival at each cell output (``wires``, ``cells``, ``setup``, ``types`` as
    :func:`parse_sdf` reads them): what :func:`analyse_io` lists and
    :func:`explain_input_path` follows back. ``earliest``: the best arrival instead
    (hold; give the best-case delays, ``wires_min`` and ``cells_min``).

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

    def beats(new, old):
        return new < old if earliest else new > old
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
                if sink_cell not in ends or beats(at, ends[sink_cell][0]):
                    ends[sink_cell] = (at, luts, sink_port, (source, wire_ns))
                continue
            lut = types.get(sink_cell) == "TRELLIS_COMB"
            for (from_port, to_port), cell_ns in cells.get(sink_cell, {}).items():
                out = (sink_cell, to_port)
                if from_port == sink_port and (
                        out not in arrival or beats(at + cell_ns, arrival[out][0])):
                    arrival[out] = (at + cell_ns, luts + lut,
                                    (source, sink_port, wire_ns, cell_ns))
                    frontier.append(out)
    return arrival, ends


#: Cell types that carry a clock on to the clock network (a global buffer).
_CLOCK_BUFFERS = {"DCCA", "DCSC"}


def _clock_arrivals(pins, timing):
    """``{cell: ns}``: when the PCI clock's edge, from its pin's I/O cell, reaches each
    cell's clock input through its global buffers (the latest, the case that matters for
    hold). nextpnr's model has the wire from the pin to its buffer and gives the global
    network itself no delay (docs/timing.md, "What the delays leave out")."""
    start = next(((name, "O") for name, (line, *_) in pins.items() if line == "clk"), None)
    arrivals = {}
    frontier = [(start, 0.0)] if start else []
    while frontier:
        source, at = frontier.pop()
        for sink_cell, sink_port, wire_ns in timing["wires"].get(source, ()):
            if timing.get("types", {}).get(sink_cell) in _CLOCK_BUFFERS:
                for (_, to_port), cell_ns in timing["cells"].get(sink_cell, {}).items():
                    frontier.append(((sink_cell, to_port), at + wire_ns + cell_ns))
            else:
                arrivals[sink_cell] = max(arrivals.get(sink_cell, 0.0), at + wire_ns)
    return arrivals


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
        if line not in NOT_BUS_INPUTS and cell["parameters"].get("DIR") != "OUTPUT":
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


