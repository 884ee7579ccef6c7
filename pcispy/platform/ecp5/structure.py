# SPDX-License-Identifier: BSD-2-Clause
"""What synthesis must keep of the active 32-bit board's output logic for its timing.

The active board meets PCI's input budget only because a few cells survive synthesis
exactly as the pads and the master build them (docs/timing.md): AD's output enable is a
kept LUT per pin pair feeding that pair's tristate registers directly; each sustained
tri-state handshake line floats from one kept cell straight into its tristate register;
C/BE#'s and SERR#'s enables likewise. yosys is free to restructure anything not kept, and
a change in the gateware or in yosys can silently undo one of these, so a build checks
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

    # Each live line reaches AD's registers through at most max_data_luts cells and
    # other logic too; AD's own pins reach no logic before their registers.
    for line in _LIVE:
        depth = live_depth.get(line)
        if depth is None or not (0 < depth["data"] <= max_data_luts and depth["control"] > 0):
            problems.append(f"{line}: data path depth {depth} (1..{max_data_luts} LUTs "
                            "and control logic expected)")
    if any(line.startswith("ad") for line in live_depth):
        problems.append("an AD pin reaches logic before its register")

    problems += _ad_enable_copies(cells, drivers, loads, kept)
    for line in HANDSHAKE_FLOATS:
        problems += _floats_cell(kept(rf"board\.pads\.{line}_floats(\$\d+)?"), loads,
                                 f"{line}'s floats cell", 1)
    problems += _floats_cell(kept(r"board\.dma\.initiator\.cbe_oe_floats_b0(\$\d+)?"),
                             loads, "C/BE#'s floats cell", 4)
    problems += _floats_cell(kept(r"board\.target\.serr_floats(\$\d+)?"), loads,
                             "SERR#'s floats cell", 1)
    return problems


def _floats_cell(found, loads, what, registers):
    if len(found) != 1:
        return [f"{what}: {len(found)} kept LUT4 cells, 1 expected"]
    if loads(found[0]) != [_REGISTER_INPUT] * registers:
        return [f"{what} {found[0]} feeds {loads(found[0])}, not {registers} tristate "
                "register(s) only"]
    return []


def _ad_enable_copies(cells, drivers, loads, kept):
    """AD's output enable: one kept copy per pin pair straight into the pair's tristate
    registers (the first pair's also into the pads' "AD driven" flip-flop), each reading
    the three shared terms (the master decision's two permitted enables, the target's
    enable) and its own pair's decision cell, which ORs that pair's copy of the master's
    go, xfer and kill terms."""
    copies = kept(r"board\.pads\.ad_oe_copy_\d+")
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
        if not re.fullmatch(rf"board\.pads\.ad_take_high_{pair}(\$\d+)?", drivers[own]):
            problems.append(f"{copy} reads {drivers[own]}, not its pair's decision cell")
            continue
        group = int(pair) // 2
        terms = {re.sub(r"\$\d+$", "", drivers[bit]) for port in "ABCD"
                 for bit in cells[drivers[own]]["connections"][port]
                 if bit not in ("0", "1")}
        expected = {f"board.dma.initiator.ad_{term}_{group}" for term in ("go", "xfer", "kill")}
        if terms != expected:
            problems.append(f"{drivers[own]} ORs {sorted(terms)}, not {sorted(expected)}")
    return problems
