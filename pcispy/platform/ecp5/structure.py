# SPDX-License-Identifier: BSD-2-Clause
"""What synthesis must keep of the active 32-bit board's output logic for its timing.

The active board meets PCI's input budget only because a few cells survive synthesis
exactly as the pads and the master build them (docs/timing.md): AD's output enable is a
kept LUT per pin pair feeding that pair's tristate registers directly; each sustained
tri-state handshake line floats from one kept cell straight into its tristate register;
C/BE#'s and SERR#'s enables likewise, and REQ#'s value into its output register. yosys
is free to restructure anything not kept, and a change in the gateware or in yosys can
silently undo one of these, so a build checks
the synthesised netlist (:func:`structure_problems`) and ``make timing`` and the bench
fail on what it finds.
"""

import re

from pcispy.platform.ecp5.floorplan import top_module

__all__ = ["structure_problems", "HANDSHAKE_FLOATS"]

#: Sustained tri-state handshake lines whose "floats" cell must feed only their tristate
#: register.
HANDSHAKE_FLOATS = ("frame", "irdy", "trdy", "stop", "devsel")
#: Live lines that reach AD's registers through logic (the data paths) and other logic
#: (control) in the clock they arrive.
_LIVE = ("frame", "irdy", "trdy", "stop", "devsel", "gnt")
_REGISTER_INPUT = ("TRELLIS_FF", "DI")
#: AD's output enable copies (kept LUT4s), one per pin pair.
_AD_COPIES = r"board\.pads\.ad_oe_copy_\d+"
#: ``{what: (kept LUT4's name pattern, registers it feeds)}``: the floats cells (into
#: tristate registers) and REQ#'s value cell (into its output register).
_FLOATS_CELLS = {
    **{f"{line}'s floats cell": (rf"board\.pads\.{line}_floats(\$\d+)?", 1)
       for line in HANDSHAKE_FLOATS},
    "C/BE#'s floats cell": (r"board\.dma\.initiator\.cbe_oe_floats_b0(\$\d+)?", 4),
    "SERR#'s floats cell": (r"board\.target\.serr_floats(\$\d+)?", 1),
    # REQ#'s value: GNT#'s cell holds its inverse, so no inverter stands before the
    # output register (the card's tightest path).
    "REQ#'s value cell": (r"board\.dma\.initiator\.req_o_by_gnt_b0(\$\d+)?", 1),
}


def structure_problems(netlist, live_depth, max_data_luts):
    """One line per way the synthesised ``netlist`` (yosys JSON of the active 32-bit
    board) breaks the structure its timing needs; ``live_depth`` is the build report's
    (:func:`.floorplan.live_depths` per line), ``max_data_luts`` the deepest data path
    allowed. An empty list when everything is as built."""
    problems = []
    cells = top_module(netlist)["cells"]
    drivers = {bit: name for name, cell in cells.items()
               for port, bits in cell["connections"].items()
               if cell.get("port_directions", {}).get(port) == "output" for bit in bits}

    def loads(cell_name):
        out = cells[cell_name]["connections"]["Z"][0]
        return [(cell["type"], port) for cell in cells.values()
                for port, bits in cell["connections"].items()
                if out in bits and cell.get("port_directions", {}).get(port) != "output"]

    def kept(pattern):
        return [name for name, cell in cells.items()
                if cell["type"] == "LUT4" and re.fullmatch(pattern, name)]

    # Each live line reaches AD's registers through at most max_data_luts levels and
    # other logic too; AD's own pins reach no logic before their registers.
    for line in _LIVE:
        depth = live_depth.get(line)
        if depth is None or not (0 < depth["data"] <= max_data_luts and depth["control"] > 0):
            problems.append(f"{line}: data path depth {depth} (1..{max_data_luts} levels "
                            "and control logic expected)")
    if any(line.startswith("ad") for line in live_depth):
        problems.append("an AD pin reaches logic before its register")

    problems += _ad_enable_copies(cells, drivers, loads, kept)
    for what, (pattern, registers) in _FLOATS_CELLS.items():
        problems += _floats_cell(kept(pattern), loads, what, registers)
    return problems


def structure_cut(netlist):
    """The part of a synthesised ``netlist`` :func:`structure_problems` reads (a yosys
    JSON netlist of one top module): the kept cells it checks, every load of theirs, the
    cells driving them and, through multiplexers, the cells driving those (the master's
    decision). The default board's cut is the test data of its structure check."""
    cells = top_module(netlist)["cells"]
    drivers = {bit: name for name, cell in cells.items()
               for port, bits in cell["connections"].items()
               if cell["port_directions"].get(port) == "output" for bit in bits}
    patterns = [_AD_COPIES, *(pattern for pattern, _ in _FLOATS_CELLS.values())]
    seeds = {name for name, cell in cells.items() if cell["type"] == "LUT4"
             and any(re.fullmatch(pattern, name) for pattern in patterns)}
    outputs = {bit for name in seeds for bit in cells[name]["connections"]["Z"]}
    cut = set(seeds)
    cut |= {name for name, cell in cells.items()
            if any(bit in outputs for port, bits in cell["connections"].items()
                   if cell["port_directions"].get(port) == "input" for bit in bits)}
    todo = list(seeds)
    while todo:
        cell = cells[todo.pop()]
        for port, bits in cell["connections"].items():
            if cell["port_directions"].get(port) != "input":
                continue
            for driver in filter(None, map(drivers.get, bits)):
                if driver not in cut:
                    cut.add(driver)
                    if cells[driver]["type"] in ("PFUMX", "L6MUX21"):
                        todo.append(driver)
    return {"modules": {"top": {"attributes": {"top": "1".zfill(32)}, "ports": {}, "cells": {
        name: {key: cells[name][key] for key in ("connections", "port_directions", "type")}
        for name in sorted(cut)}}}}


if __name__ == "__main__":
    import json
    import sys
    if len(sys.argv) != 3:
        sys.exit("usage: python -m pcispy.platform.ecp5.structure SYNTHESISED.json CUT.json")
    with open(sys.argv[1]) as source:
        cut = structure_cut(json.load(source))
    with open(sys.argv[2], "w") as out:
        json.dump(cut, out, indent=0, sort_keys=True)
        out.write("\n")


def _floats_cell(found, loads, what, registers):
    if len(found) != 1:
        return [f"{what}: {len(found)} kept LUT4 cells, 1 expected"]
    if loads(found[0]) != [_REGISTER_INPUT] * registers:
        return [f"{what} {found[0]} feeds {loads(found[0])}, not {registers} "
                "register(s) only"]
    return []


def _ad_enable_copies(cells, drivers, loads, kept):
    """AD's output enable: one kept copy per pin pair straight into the pair's tristate
    registers (the first pair's also into the pads' "AD driven" flip-flop), each reading
    the three shared terms (the master decision's two permitted enables, the target's
    enable) and its own pair's copy of the master's decision: one slice pair, the
    ``L6MUX21`` of the group's two ``PFUMX``, each of two of the group's tables."""
    copies = kept(_AD_COPIES)
    if len(copies) != 16:
        return [f"AD output enable: {len(copies)} kept copies, 16 (one per pin pair) "
                "expected"]
    problems = []
    for copy in copies:
        registers = 3 if copy.endswith("_copy_0") else 2
        if loads(copy) != [_REGISTER_INPUT] * registers:
            problems.append(f"{copy} feeds {loads(copy)}, not its pair's "
                            f"{registers} registers only")
    inputs = {copy: {bit for port in "ABCD" for bit in cells[copy]["connections"][port]
                     if bit not in ("0", "1")}
              for copy in copies}
    shared = set.intersection(*inputs.values())
    if len(shared) != 3 or any(len(bits) != 4 for bits in inputs.values()):
        return problems + [f"AD output enable copies share {len(shared)} inputs (3 "
                           "expected) or do not read 4 nets each"]
    for copy, bits in inputs.items():
        pair = copy.rsplit("_", 1)[1]
        (own,) = bits - shared
        decision = f"board.dma.initiator.ad_take_high_{int(pair) // 2}"
        problem = _decision_problem(cells, drivers, own, decision)
        if problem:
            problems.append(f"{copy} reads {drivers[own]}: {problem}")
    return problems


def _decision_problem(cells, drivers, net, name):
    """What is wrong with the cells driving ``net`` as the master's decision ``name`` (an
    ``L6MUX21`` of two ``PFUMX`` of two ``LUT4`` each, the tables ``NAME_lutK``), or
    None."""
    root = drivers[net]
    if re.sub(r"\$\d+$", "", root) != name or cells[root]["type"] != "L6MUX21":
        return f"not the L6MUX21 {name}"
    tables = set()
    for port in ("D0", "D1"):
        mux = drivers[cells[root]["connections"][port][0]]
        if cells[mux]["type"] != "PFUMX":
            return f"its {port} is {mux}, not a PFUMX"
        tables |= {re.sub(r"\$\d+$", "", drivers[cells[mux]["connections"][lut][0]])
                   for lut in ("ALUT", "BLUT")}
    expected = {f"{name}_lut{k}" for k in range(4)}
    if tables != expected:
        return f"its tables are {sorted(tables)}, not {sorted(expected)}"
    return None
