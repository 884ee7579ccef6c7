# SPDX-License-Identifier: BSD-2-Clause
"""Hand placement of the live handshake logic, between synthesis and nextpnr (ECP5).

Why: a live PCI line (TRDY#, STOP#, FRAME# ... read in the clock it arrives) has 7 ns
from its pin to a flip-flop at 33 MHz, but nextpnr does not time a path that starts at
an input pin (it has no input-delay constraint), so its placer puts that logic next to
the rest of the decision, across the die from the pins (docs/timing.md). This step reads
the synthesised netlist, finds every cell between a live pin and the first register
(LUT4s, the wide-function multiplexers PFUMX/L6MUX21, and the fabric flip-flops at the
end) and gives each a ``BEL`` attribute on the slices nearest the pins; nextpnr keeps
them there and places everything else around them.

Cells that reach only the AD output and tristate registers are left to the placer where
the AD pins are spread over the die (the ULX3S header: a cell feeding pins on three edges
belongs between them), and placed like the rest, each pulled toward the AD pins it
feeds, where the board's pin-out puts AD on the handshake pins' edge (``data_paths``, the
reference card; the data paths of :func:`.timing.check`).

The netlist is yosys' JSON for ECP5 (``synth_ecp5``). The slice rules followed, as
nextpnr packs and checks them:

- a PFUMX and its two LUTs fill one slice: BLUT in ``K0`` (which also holds the
  multiplexer), ALUT in ``K1``;
- an L6MUX21 and its two PFUMX fill a slice pair (A+B or C+D): the PFUMX of input ``D1``
  in the first slice (its ``K1`` also holds the L6MUX21), that of ``D0`` in the second;
- the two flip-flops of a slice share clock, set/reset, clock enable and their modes;
  every flip-flop of a tile shares the clock, the set/reset and their modes;
- nextpnr packs a flip-flop with the one LUT or multiplexer that drives its D input
  (and no other fabric flip-flop's: an output pin's register goes into its I/O cell),
  whose output then reaches it inside the slice, and routes nothing else to it: such a
  flip-flop goes with that cell, into the FF of the LUT's own half, FF1 of a PFUMX's
  slice, FF1 of an L6MUX21 pair's second slice (found by experiment: the other places
  fail to route or are refused), and is left to nextpnr when nextpnr places the cell;
- a multiplexer's select takes its slice's ``M`` input, the way into a flip-flop from
  outside the slice: the other flip-flops go into slices without one.

Structures outside these (an L6MUX21 fed by another, a multiplexer fed by something
other than a LUT4) are left to the placer and counted in the result.
"""

import json
import re
import subprocess
from collections import defaultdict
from pathlib import Path

from pcispy.platform.timing import POINT_TO_POINT_INPUTS

__all__ = ["DATA_LINES", "FABRIC", "PCI_PORT", "SAMPLE_TILES_FROM_PIN", "pci_port", "top_module",
           "live_logic", "live_depths", "assign_bels", "pin_tiles", "floorplan"]

#: ``{device: (columns, rows)}``: the logic tiles (PLC: four slices) the floorplan may
#: use. Measured from placed builds of this design (every tile nextpnr put a slice in);
#: rows 10, 22, 34, 46 and 58 hold block RAM.
FABRIC = {
    "LFE5U-85F": (range(2, 125), [y for y in range(2, 69) if y not in (10, 22, 34, 46, 58)]),
}
FABRIC["LFE5UM5G-85F"] = FABRIC["LFE5U-85F"]

#: The top-level port of PCI line LINE in a netlist of the board (``pci_0__LINE__io``, as
#: the platform names the resource): group 1 is the line.
PCI_PORT = re.compile(r"pci_0__(\w+?)__io")


def pci_port(line):
    """The top-level port name of PCI line ``line``."""
    return f"pci_0__{line}__io"


#: How far (tiles, along either axis) a flip-flop that samples a live pin with no logic
#: between is placed from the pin's tile. PCI gives an input 0 ns of hold, and the
#: flip-flop's clock comes through the global network while the pin's wire is direct:
#: on the nearest logic tile (2 from the pin) the routed wire took 0.40-0.77 ns, and a
#: clock arrival of 0.25 ns plus the flip-flop's hold time of 0.30 ns needs 0.55 (the
#: reference card, seed 2). Further in, the wire is longer at every placement, and a
#: sample's setup path stays short.
SAMPLE_TILES_FROM_PIN = 4

#: Bus lines whose output registers hold a data word (the AD lines): the handshake
#: decides in the same clock whether the word advances or is released, and the pins are
#: wherever the board's connector put them (:func:`.timing.check`). Their paths are left
#: to the placer here unless :func:`floorplan` is told otherwise (``data_paths``).
DATA_LINES = ("ad", "ad_hi")

_COMB = {"LUT4", "PFUMX", "L6MUX21"}
_OUTPUTS = {"Z", "Q", "O", "F", "OFX"}
#: Flip-flop parameters every flip-flop of a tile, or of a slice, shares (with the clock and
#: set/reset nets; a slice also shares the clock-enable net).
_TILE_PARAMS = ("CLKMUX", "LSRMUX", "SRMODE")
_SLICE_PARAMS = _TILE_PARAMS + ("CEMUX", "GSR")


#: The data inputs of the wide-function multiplexers (their other input is the select).
_MUX_DATA = {"PFUMX": ("ALUT", "BLUT"), "L6MUX21": ("D0", "D1")}


def top_module(netlist):
    """The top module of a yosys or nextpnr JSON netlist."""
    return next(m for m in netlist["modules"].values() if m["attributes"].get("top"))


class _Netlist:
    """The top module of a yosys JSON netlist, with its nets' drivers and users."""
    def __init__(self, netlist):
        self.top = top_module(netlist)
        self.cells = self.top["cells"]
        self.driver = {}                    # net bit -> (cell, port)
        self.users = defaultdict(list)      # net bit -> [(cell, port)]
        for name, cell in self.cells.items():
            directions = cell.get("port_directions", {})
            for port, bits in cell["connections"].items():
                output = directions.get(port, "output" if port in _OUTPUTS else "input")
                for bit in bits:
                    if isinstance(bit, int):
                        if output == "output":
                            self.driver[bit] = (name, port)
                        else:
                            self.users[bit].append((name, port))

    def net(self, cell, port):
        bits = self.cells[cell]["connections"].get(port, [])
        return bits[0] if bits and isinstance(bits[0], int) else None

    def mux_fed(self, cell, kinds=tuple(_MUX_DATA)):
        """The multiplexer (of a type in ``kinds``) whose data input ``cell``'s output
        drives, or None."""
        for user, port in self.users[self.net(cell, "Z")]:
            kind = self.cells[user]["type"]
            if kind in kinds and port in _MUX_DATA[kind]:
                return user
        return None

    def driven_by(self, cell, port, kind):
        """The cell of type ``kind`` driving ``cell``'s input ``port``, or None."""
        source = self.driver.get(self.net(cell, port))
        if source and self.cells[source[0]]["type"] == kind:
            return source[0]
        return None


def _ports(netlist):
    """``{net bit: pin name}`` of the top's ports, as the constraints file names them:
    ``"port"``, or ``"port[i]"`` for a bit of a wider port."""
    return {bit: name if len(info["bits"]) == 1 else f"{name}[{index}]"
            for name, info in netlist.top["ports"].items()
            for index, bit in enumerate(info["bits"]) if isinstance(bit, int)}


class _LiveCone:
    """The cells a live pin reaches before a register, read from a synthesised netlist.

    ``starts``: ``{net bit: line}`` of the live pins' buffer outputs; ``comb``: the
    combinational cells (LUT4, PFUMX, L6MUX21) they reach; ``ends``: the flip-flops at
    the end, of which ``control_ends`` are not data ends (an output or tristate register
    of ``data_lines``, or a fabric copy of one: the same D input, as the pads keep the
    driven AD word for the parity of the next clock); ``io_register(flop)``: whether a
    flip-flop is an I/O cell's own.
    """
    def __init__(self, netlist, lines, data_lines=DATA_LINES):
        self.netlist = netlist
        ports = _ports(netlist)
        io_line = {}                                  # TRELLIS_IO cell -> line
        self.starts = {}
        for name, cell in netlist.cells.items():
            if cell["type"] != "TRELLIS_IO":
                continue
            match = PCI_PORT.match(ports.get(netlist.net(name, "B"), ""))
            if match:
                io_line[name] = match.group(1)
                if match.group(1) in lines and netlist.net(name, "O") is not None:
                    self.starts[netlist.net(name, "O")] = match.group(1)

        def register_line(flop):
            """The line whose I/O cell this output register feeds."""
            for user, port in netlist.users[netlist.net(flop, "Q")]:
                if user in io_line and port in ("I", "T"):
                    return io_line[user]
            return None

        # Forward from the pins through combinational cells to the first flip-flops.
        self.fanout = defaultdict(set)       # cell -> cells it feeds inside the cone
        self.comb, self.ends = set(), set()
        frontier = list(self.starts)
        seen = set()
        while frontier:
            bit = frontier.pop()
            if bit in seen:
                continue
            seen.add(bit)
            source = netlist.driver.get(bit, (None,))[0]
            for user, port in netlist.users[bit]:
                kind = netlist.cells[user]["type"]
                if kind in _COMB:
                    self.comb.add(user)
                    if source in self.comb:
                        self.fanout[source].add(user)
                    frontier.append(netlist.net(user, "Z"))
                elif kind == "TRELLIS_FF" and port in ("DI", "M", "CE"):
                    if not (self.io_register(user) and source is None):
                        self.ends.add(user)
                        if source in self.comb:
                            self.fanout[source].add(user)
        data_inputs = {netlist.net(f, "DI") for f in self.ends
                       if self.io_register(f) and register_line(f) in data_lines}
        self.control_ends = {
            f for f in self.ends
            if (not self.io_register(f) and netlist.net(f, "DI") not in data_inputs)
            or (self.io_register(f) and register_line(f) not in data_lines)}

    def io_register(self, flop):
        return bool(self.netlist.cells[flop]["attributes"].get("syn_useioff"))


def live_logic(netlist, lines, data_lines=DATA_LINES):
    """The logic a live pin reaches before a register, as this module places it.

    ``lines``: the bus lines read unregistered (port ``pci_0__LINE__io``). Returns
    ``(comb, flops, skipped)``: the combinational cells that reach a flip-flop other than
    an output register of ``data_lines``, the fabric flip-flops at the end of those
    paths (the I/O cells' own registers excluded: nextpnr puts them at their pins), and
    the cells that reach only data registers (left to the placer).
    """
    cone = _LiveCone(netlist, lines, data_lines)
    # Backward: the combinational cells that reach a control end.
    control = set()
    changed = True
    while changed:
        changed = False
        for cell in cone.comb - control:
            if cone.fanout[cell] & (control | cone.control_ends):
                control.add(cell)
                changed = True
    flops = {f for f in cone.control_ends if not cone.io_register(f)}
    return control, flops, cone.comb - control


def live_depths(netlist, lines, data_lines=DATA_LINES):
    """``{line: {"data": levels, "control": levels}}``: the most logic levels on any
    path from each live pin to a data end and to a control end (:class:`_LiveCone`), in
    a synthesised netlist; 0 where a pin reaches no such end. A level is a
    combinational cell the path enters from general routing: a LUT4, or a PFUMX or
    L6MUX21 by its select; a multiplexer's data inputs come from its own slice (pair)'s
    cells on dedicated wires, and add no level. The depth :func:`.timing.check` holds
    data paths to, known after synthesis, before place and route (which counts the
    cells of each pin's slowest path, not of its deepest).
    """
    cone = _LiveCone(netlist, lines, data_lines)
    depths = {line: {"data": 0, "control": 0} for line in lines}
    for start, line in cone.starts.items():
        # Longest path from this pin: the cone is acyclic between registers.
        depth = {}

        def reach(bit, cells):
            for user, port in netlist.users[bit]:
                if user in cone.ends and port in ("DI", "M", "CE"):
                    kind = "control" if user in cone.control_ends else "data"
                    depths[line][kind] = max(depths[line][kind], cells)
                elif user in cone.comb:
                    level = cells + (port not in _MUX_DATA.get(netlist.cells[user]["type"], ()))
                    if depth.get(user, -1) < level:
                        depth[user] = level
                        reach(netlist.net(user, "Z"), level)
        reach(start, 0)
    return depths


def _clusters(netlist, comb):
    """Group the cells to place into slice-sized clusters:
    ``[("pair" | "slice" | "lut", [(slot, lut cell), ...])]`` and the cells skipped."""
    cells = netlist.cells
    taken, clusters, skipped = set(), [], set()

    def pfumx_luts(mux):
        blut = netlist.driven_by(mux, "BLUT", "LUT4")
        alut = netlist.driven_by(mux, "ALUT", "LUT4")
        return (blut, alut) if blut and alut else None

    def owner_mux(lut):
        return netlist.mux_fed(lut, ("PFUMX",))

    def owner_l6(mux):
        return netlist.mux_fed(mux, ("L6MUX21",))

    # Every cone cell belongs to the structure rooted at its L6MUX21 or PFUMX, if any.
    roots = set()
    for cell in comb:
        kind = cells[cell]["type"]
        mux = cell if kind == "PFUMX" else owner_mux(cell) if kind == "LUT4" else None
        l6 = cell if kind == "L6MUX21" else owner_l6(mux) if mux else None
        roots.add(l6 or mux or cell)
    for root in sorted(roots):
        kind = cells[root]["type"]
        if kind == "L6MUX21":
            high = netlist.driven_by(root, "D1", "PFUMX")
            low = netlist.driven_by(root, "D0", "PFUMX")
            luts = [pfumx_luts(high) if high else None, pfumx_luts(low) if low else None]
            if None in luts or owner_l6(root):
                skipped.add(root)
                continue
            (b1, a1), (b0, a0) = luts
            members = [(0, "K0", b1), (0, "K1", a1), (1, "K0", b0), (1, "K1", a0)]
            clusters.append(("pair", members))
            taken.update({root, high, low, b1, a1, b0, a0})
        elif kind == "PFUMX":
            luts = pfumx_luts(root)
            if luts is None or owner_l6(root):
                skipped.add(root)
                continue
            clusters.append(("slice", [(0, "K0", luts[0]), (0, "K1", luts[1])]))
            taken.update({root, *luts})
        else:
            clusters.append(("lut", [(0, None, root)]))
            taken.add(root)
    return clusters, skipped


def _flop_keys(netlist, flop):
    """(tile key, slice key) of a flip-flop: what it must share with its neighbours."""
    cell = netlist.cells[flop]
    params = cell["parameters"]
    defaults = {"CLKMUX": "CLK", "LSRMUX": "LSR", "SRMODE": "LSR_OVER_CE", "CEMUX": "1",
                "GSR": "DISABLED"}

    def param(name):
        return str(params.get(name, defaults[name])).strip()

    def net(port):
        return tuple(cell["connections"].get(port, []))
    tile = (net("CLK"), net("LSR")) + tuple(param(p) for p in _TILE_PARAMS)
    return tile, tile + (net("CE"),) + tuple(param(p) for p in _SLICE_PARAMS[3:])


class _Tiles:
    """The free slots of the logic tiles, nearest first."""
    SLICES = "ABCD"

    def __init__(self, columns, rows):
        self.tiles = [(x, y) for x in columns for y in rows]
        self.luts = {}          # (x, y, slice, K) -> cell
        self.flops = {}         # (x, y, slice, FF) -> cell
        self.tile_key = {}      # (x, y) -> tile key of its flip-flops
        self.slice_key = {}     # (x, y, slice) -> slice key
        # Slices holding a multiplexer: its select takes the slice's M input, which a
        # flip-flop fed from outside the slice would need.
        self.muxed = set()      # (x, y, slice)

    def nearest(self, target):
        tx, ty = target
        return sorted(self.tiles, key=lambda t: (abs(t[0] - tx) + abs(t[1] - ty), t))

    def _flops_fit(self, x, y, first, paired):
        """Whether the paired flip-flops (``[(slice offset, FF index, keys, cell)]``) fit
        tile (x, y) from its slice ``first`` on."""
        tile_keys = {self.tile_key.get((x, y))} - {None}
        slice_keys = {}
        slots = [(x, y, self.SLICES[first + offset], f"FF{index}")
                 for offset, index, _, _ in paired]
        if len(set(slots)) < len(slots) or any(slot in self.flops for slot in slots):
            return False
        for offset, index, (tile_key, slice_key), _ in paired:
            where = (x, y, self.SLICES[first + offset])
            tile_keys.add(tile_key)
            slice_keys.setdefault(where, {self.slice_key.get(where)} - {None}).add(slice_key)
        return len(tile_keys) <= 1 and all(len(keys) <= 1 for keys in slice_keys.values())

    def _take_flops(self, x, y, first, paired, bels):
        for offset, index, (tile_key, slice_key), flop in paired:
            slot = (x, y, self.SLICES[first + offset], f"FF{index}")
            self.flops[slot] = flop
            self.tile_key[(x, y)] = tile_key
            self.slice_key[slot[:3]] = slice_key
            bels[flop] = f"X{x}/Y{y}/SLICE{slot[2]}.{slot[3]}"

    def place_cluster(self, shape, members, target, paired=()):
        """Place a cluster and the flip-flops its outputs pair with (``paired``:
        ``[(slice offset, K index or None for the LUT's own, keys, flip-flop)]``)."""
        for x, y in self.nearest(target):
            for first in range(4):
                if shape == "pair" and first not in (0, 2):
                    continue
                slices = [self.SLICES[first + offset] for offset, _, _ in members]
                if shape == "lut":
                    for k in (0, 1):
                        pair = [(0, k, keys, flop) for _, _, keys, flop in paired]
                        if (x, y, slices[0], f"K{k}") in self.luts or \
                                not self._flops_fit(x, y, first, pair):
                            continue
                        self.luts[(x, y, slices[0], f"K{k}")] = members[0][2]
                        bels = {members[0][2]: f"X{x}/Y{y}/SLICE{slices[0]}.K{k}"}
                        self._take_flops(x, y, first, pair, bels)
                        return bels, (x, y)
                    continue
                slots = [(x, y, s, k) for s, (_, k, _) in zip(slices, members)]
                if any(slot in self.luts for slot in slots) or \
                        not self._flops_fit(x, y, first, paired):
                    continue
                bels = {}
                for slot, (_, _, cell) in zip(slots, members):
                    self.luts[slot] = cell
                    self.muxed.add(slot[:3])
                    bels[cell] = f"X{x}/Y{y}/SLICE{slot[2]}.{slot[3]}"
                self._take_flops(x, y, first, paired, bels)
                return bels, (x, y)
        raise RuntimeError("floorplan: no free slice left in the region")

    def place_flop(self, flop, keys, target, away_from=None, tiles_away=0):
        """Place a flip-flop on the free slot nearest ``target``, at least ``tiles_away``
        tiles (along either axis) from ``away_from``."""
        tile_key, slice_key = keys
        for x, y in self.nearest(target):
            if self.tile_key.get((x, y), tile_key) != tile_key:
                continue
            if away_from and max(abs(x - away_from[0]), abs(y - away_from[1])) < tiles_away:
                continue
            for s in self.SLICES:
                if (x, y, s) in self.muxed or \
                        self.slice_key.get((x, y, s), slice_key) != slice_key:
                    continue
                for ff in ("FF0", "FF1"):
                    if (x, y, s, ff) not in self.flops:
                        self.flops[(x, y, s, ff)] = flop
                        self.tile_key[(x, y)] = tile_key
                        self.slice_key[(x, y, s)] = slice_key
                        return f"X{x}/Y{y}/SLICE{s}.{ff}", (x, y)
        raise RuntimeError("floorplan: no free flip-flop left in the region")


def assign_bels(netlist, comb, flops, anchors, fabric, registers=None, slack_pins=frozenset()):
    """``({cell: BEL}, skipped cells)``: each cluster of ``comb`` and each flip-flop of
    ``flops`` on the free slots nearest the middle of the cells that feed it and of the
    output pins it leads to, beginning at the pins.

    ``anchors``: ``{net bit of a live pin's input: (x, y) of its tile}``. ``registers``:
    ``{I/O-cell register: (x, y) of its pin's tile}`` of the control lines (AD's are
    spread over the die and left out): the output pins a cell leads to
    (through combinational cells) pull it toward them, so that the last cell before an
    output register does not sit on the far side of the die from its pin. ``slack_pins``:
    the anchors' net bits of pins with a longer setup budget (GNT#'s 10 ns at 33 MHz
    against a bused line's 7), which do not pull a cell that another live pin feeds
    directly: the longer wire goes to the pin that can afford it. Cells are
    taken in order of their depth from the pins, so a path runs outward from its pin;
    where the order is circular (a multiplexer structure fed from both sides), the
    cluster with the fewest inputs still unplaced goes first.
    """
    clusters, skipped = _clusters(netlist, comb)
    position = dict(anchors)            # net bit -> (x, y) where it is driven
    cell_of = {}
    for index, (_, members) in enumerate(clusters):
        for _, _, lut in members:
            cell_of[lut] = index
    tiles = _Tiles(*fabric)

    def inputs(cell):
        cell_info = netlist.cells[cell]
        return [b for port, bits in cell_info["connections"].items()
                if cell_info.get("port_directions", {}).get(port, "input") == "input"
                for b in bits if isinstance(b, int)]

    def cluster_inputs(members):
        bits = []
        for _, _, lut in members:
            bits += inputs(lut)
            # The multiplexers the cluster holds read their select and inputs too.
            for user, port in netlist.users[netlist.net(lut, "Z")]:
                if netlist.cells[user]["type"] in ("PFUMX", "L6MUX21"):
                    bits += inputs(user)
        return bits

    def pair_of(cell):
        """The flip-flop nextpnr packs with ``cell`` (the one flip-flop whose D input its
        output drives), or None."""
        ffs = [user for user, port in netlist.users[netlist.net(cell, "Z")]
               if port == "DI" and netlist.cells[user]["type"] == "TRELLIS_FF"
               and not netlist.cells[user]["attributes"].get("syn_useioff")]
        return ffs[0] if len(ffs) == 1 else None

    def paired_flops(shape, members):
        """``[(slice offset, FF index, keys, flip-flop)]`` the cluster's outputs pair
        with, where nextpnr accepts them (found by experiment): a LUT's with the FF of
        its own half (None: the half it gets), a PFUMX's with FF1 of its slice (FF0
        would need the M0 its select takes), an L6MUX21's with FF1 of the pair's second
        slice."""
        found = []
        for offset, k, lut in members:
            found.append((offset, None if k is None else int(k[1]), pair_of(lut)))
        if shape == "slice":
            found.append((0, 1, pair_of(netlist.mux_fed(members[0][2]))))
        elif shape == "pair":
            high, low = netlist.mux_fed(members[0][2]), netlist.mux_fed(members[2][2])
            found += [(0, 1, pair_of(high)), (1, 1, pair_of(low)),
                      (1, 1, pair_of(netlist.mux_fed(high)))]
        return [(offset, index, _flop_keys(netlist, flop), flop)
                for offset, index, flop in found if flop is not None]

    registers = registers or {}
    pins_below = {}                     # net bit -> output pin tiles it leads to

    def output_pins(bit, seen=()):
        """The tiles of the output pins whose I/O-cell registers net ``bit`` reaches
        through combinational cells."""
        if bit not in pins_below:
            found = set()
            for user, port in netlist.users[bit]:
                if user in registers:
                    found.add(registers[user])
                elif netlist.cells[user]["type"] in _COMB and user not in seen:
                    found |= output_pins(netlist.net(user, "Z"), seen + (user,))
            pins_below[bit] = frozenset(found)
        return pins_below[bit]

    def target(members, fed_from):
        """Where a cluster goes: the middle of its placed inputs and of the output pins
        it leads to (counted as one point: the middle of the box around them, where the
        longest wire to them is shortest)."""
        below = set()
        for _, _, lut in members:
            below |= output_pins(netlist.net(lut, "Z"))
        points = list(fed_from) + ([_box_middle(below)] if below else [])
        return _mean(points) if points else anchor_mean

    def unplaced_inputs(i):
        return sum(1 for b in cluster_inputs(clusters[i][1])
                   if netlist.driver.get(b, (None,))[0] in cell_of
                   and cell_of[netlist.driver[b][0]] in pending
                   and cell_of[netlist.driver[b][0]] != i)

    # Depth from the pins: place a cluster once the clusters feeding it are placed.
    pending = list(range(len(clusters)))
    bels = {}
    if not anchors:
        return {}, skipped
    anchor_mean = _mean(list(anchors.values()))
    while pending:
        ready = [i for i in pending if not unplaced_inputs(i)]
        if not ready:           # a loop through a multiplexer's own outputs: take one
            ready = [min(pending, key=unplaced_inputs)]
        for i in ready:
            shape, members = clusters[i]
            inputs_in = cluster_inputs(members)
            tight = [b for b in inputs_in if b in anchors and b not in slack_pins]
            fed_from = [position[b] for b in inputs_in
                        if b in position and not (tight and b in slack_pins)]
            placed, where = tiles.place_cluster(shape, members, target(members, fed_from),
                                                paired_flops(shape, members))
            bels.update(placed)
            for _, _, lut in members:
                position[netlist.net(lut, "Z")] = where
                for user, port in netlist.users[netlist.net(lut, "Z")]:
                    if netlist.cells[user]["type"] in ("PFUMX", "L6MUX21"):
                        position[netlist.net(user, "Z")] = where
            pending.remove(i)
    for flop in sorted(flops):
        if flop in bels:
            continue            # placed with the cell that drives it
        driver = netlist.driver.get(netlist.net(flop, "DI"), (None,))[0]
        if driver is not None and pair_of(driver) == flop:
            # nextpnr packs a flip-flop with the LUT or multiplexer that drives only it
            # (its D comes from that cell's own output, in the same slice): with its
            # driver left to nextpnr, so is the flip-flop.
            continue
        fed_from = [position[b] for b in inputs(flop) if b in position]
        # A flip-flop sampling a pin straight: kept a few tiles from it for hold.
        pin = anchors.get(netlist.net(flop, "DI"))
        bel, _ = tiles.place_flop(flop, _flop_keys(netlist, flop),
                                  _mean(fed_from) if fed_from else anchor_mean,
                                  away_from=pin, tiles_away=SAMPLE_TILES_FROM_PIN)
        bels[flop] = bel
    return bels, skipped


def _box_middle(points):
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return (round((min(xs) + max(xs)) / 2), round((min(ys) + max(ys)) / 2))


def _mean(points):
    return (round(sum(p[0] for p in points) / len(points)),
            round(sum(p[1] for p in points) / len(points)))


def pin_tiles(nextpnr, device_args, package, lpf, ports, work_dir):
    """``{pin name: (x, y)}``: the tile of each pin of ``ports`` (``{port: width}``) as
    nextpnr binds it from the constraints file ``lpf`` (a netlist of the bare ports,
    packed only: under a second). Pin names as :func:`_ports` gives them."""
    bits, next_bit = {}, 2
    for name, width in ports.items():
        bits[name] = list(range(next_bit, next_bit + width))
        next_bit += width
    stub = {"modules": {"pins": {
        "attributes": {"top": "00000000000000000000000000000001"},
        "ports": {name: {"direction": "inout", "bits": b} for name, b in bits.items()},
        "cells": {},
        "netnames": {name: {"bits": b} for name, b in bits.items()}}}}
    work_dir = Path(work_dir)
    (work_dir / "pins.json").write_text(json.dumps(stub))
    # The constraints file names every port of the design; keep the lines of these.
    wanted = [line for line in Path(lpf).read_text().splitlines()
              if not re.search(r'(COMP|PORT) "', line)
              or re.sub(r"\[\d+\]$", "", re.search(r'(COMP|PORT) "([^"]+)"', line).group(2))
              in ports]
    (work_dir / "pins.lpf").write_text("\n".join(wanted) + "\n")
    result = subprocess.run([nextpnr, "--quiet", *device_args, "--package", package,
                             "--json", "pins.json", "--lpf", "pins.lpf",
                             "--lpf-allow-unconstrained", "--pack-only",
                             "--write", "pins_packed.json"],
                            cwd=work_dir, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError("floorplan: nextpnr could not bind the pins: "
                           + (result.stderr or result.stdout).strip()[-500:])
    packed = json.loads((work_dir / "pins_packed.json").read_text())
    tiles = {}
    for name, cell in next(iter(packed["modules"].values()))["cells"].items():
        bel = cell["attributes"].get("BEL", "")
        match = re.match(r"X(\d+)/Y(\d+)/", bel)
        if cell["type"] == "TRELLIS_IO" and match:
            tiles[name.split("$")[0]] = (int(match.group(1)), int(match.group(2)))
    return tiles


def floorplan(netlist_path, out_path, *, device, lines, pin_tile, data_paths=False):
    """Write ``out_path``: the netlist at ``netlist_path`` with a ``BEL`` attribute on
    every cell :func:`live_logic` finds (see the module's description). ``pin_tile``:
    ``{port name: (x, y)}`` of the live lines' pins (:func:`pin_tiles`). With
    ``data_paths`` the cells that reach only AD's registers are placed too, each pulled
    toward the AD pins it leads to: for a pin-out whose AD pins share the handshake
    pins' edge (a board's ``FLOORPLAN_DATA_PATHS``), where the placer would otherwise
    leave them wherever the rest of the decision is. Returns a summary: LUT4s and
    flip-flops placed, combinational cells in the cone, and what is left to the placer
    (cells reaching only data registers unless ``data_paths``, and the multiplexer
    structures the slice rules here do not cover)."""
    data = json.loads(Path(netlist_path).read_text())
    netlist = _Netlist(data)
    comb, flops, data_cells = live_logic(netlist, lines)
    if data_paths:
        comb, data_cells = comb | data_cells, set()
    ports = _ports(netlist)
    anchors, slack_pins = {}, set()
    for name, cell in netlist.cells.items():
        port = ports.get(netlist.net(name, "B")) if cell["type"] == "TRELLIS_IO" else None
        if port in pin_tile and netlist.net(name, "O") is not None:
            anchors[netlist.net(name, "O")] = pin_tile[port]
            match = PCI_PORT.match(port)
            if match and match.group(1) in POINT_TO_POINT_INPUTS:
                slack_pins.add(netlist.net(name, "O"))
    # The I/O-cell registers of the control output pins, at their pins' tiles (AD's only
    # with ``data_paths``: spread over the die, they would pull a cell that also reaches
    # a control pin away from both ends of its control path).
    registers = {}
    for name, cell in netlist.cells.items():
        port = ports.get(netlist.net(name, "B")) if cell["type"] == "TRELLIS_IO" else None
        match = PCI_PORT.match(port or "")
        if port not in pin_tile or not match or (match.group(1) in DATA_LINES
                                                 and not data_paths):
            continue
        for io_port in ("I", "T"):
            source = netlist.driver.get(netlist.net(name, io_port), (None,))[0]
            if source and netlist.cells[source]["type"] == "TRELLIS_FF":
                registers[source] = pin_tile[port]
    bels, skipped = assign_bels(netlist, comb, flops, anchors, FABRIC[device], registers,
                                frozenset(slack_pins))
    for cell, bel in bels.items():
        netlist.cells[cell]["attributes"]["BEL"] = bel
    Path(out_path).write_text(json.dumps(data))
    return {"cells": sum(1 for c in bels if c not in flops), "flops": len(flops),
            "cone_cells": len(comb), "left_to_placer": len(data_cells) + len(skipped)}
