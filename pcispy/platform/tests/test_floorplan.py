# SPDX-License-Identifier: BSD-2-Clause
"""The floorplan of the live handshake logic (pcispy/platform/ecp5/floorplan.py), on a small design
with the ULX3S pin-out's handshake pins: yosys synthesises it, the floorplan places the
logic between the live pins and the first registers, nextpnr places and routes the rest
(a few seconds). The tests check which cells get a BEL, that nextpnr accepts every one of
them where it was put, and the routed delay from pin to flip-flop."""

import json
import re
import subprocess

import pytest

from pcispy.platform.build import _floorplan, _tool
from pcispy.platform.routed import analyse_io, parse_sdf
from pcispy.platform.ecp5.floorplan import (FABRIC, SAMPLE_TILES_FROM_PIN, _Netlist,
                                            assign_bels, floorplan, live_depths, live_logic,
                                            pin_tiles)

pytestmark = pytest.mark.board

DEVICE = ["--85k"]
PACKAGE = "CABGA381"
#: The ULX3S-85F balls of TRDY#, STOP#, FRAME# and AD[0] in the 32-bit pin-out, and
#: pins far from them for the registered inputs.
LPF = """\
LOCATE COMP "clk" SITE "D13";
LOCATE COMP "pci_0__trdy__io" SITE "G18";
LOCATE COMP "pci_0__stop__io" SITE "D18";
LOCATE COMP "pci_0__frame__io" SITE "H17";
LOCATE COMP "pci_0__ad__io" SITE "B11";
LOCATE COMP "d[0]" SITE "A2";
LOCATE COMP "d[1]" SITE "B2";
LOCATE COMP "d[2]" SITE "C2";
LOCATE COMP "d[3]" SITE "D2";
LOCATE COMP "d[4]" SITE "A3";
LOCATE COMP "d[5]" SITE "B3";
LOCATE COMP "d[6]" SITE "C3";
LOCATE COMP "d[7]" SITE "D3";
LOCATE COMP "q" SITE "A4";
FREQUENCY PORT "clk" 33 MHz;
"""

#: Eight registered words selected by the live TRDY#/STOP#/FRAME# (an L6MUX21 over two
#: PFUMX, as synthesis writes an 8:1 selection) into a fabric flip-flop; a LUT from
#: TRDY# and STOP# into a second flip-flop; and a LUT from TRDY# that feeds only AD[0]'s
#: output register and two fabric copies of it (as the pads keep the driven AD word for
#: parity; two, one with a clock enable, so that nextpnr packs neither with the LUT and
#: feeds both through M): data paths, left to the placer.
DESIGN = """\
module top(input clk, input pci_0__trdy__io, input pci_0__stop__io,
           input pci_0__frame__io, output pci_0__ad__io, input [7:0] d, output q);
  wire trdy, stop, frame, a0, a1, a2, a3, m0, m1, f, g, data, ad_q;
  IB ib_trdy (.I(pci_0__trdy__io), .O(trdy));
  IB ib_stop (.I(pci_0__stop__io), .O(stop));
  IB ib_frame (.I(pci_0__frame__io), .O(frame));
  reg [7:0] dq;
  reg sel_q, both_q, ad_copy, ad_copy2;
  always @(posedge clk) dq <= d;
  LUT4 #(.INIT(16'hCACA)) l0 (.A(dq[1]), .B(dq[0]), .C(stop), .D(1'b0), .Z(a0));
  LUT4 #(.INIT(16'hCACA)) l1 (.A(dq[3]), .B(dq[2]), .C(stop), .D(1'b0), .Z(a1));
  PFUMX mx0 (.ALUT(a1), .BLUT(a0), .C0(trdy), .Z(m0));
  LUT4 #(.INIT(16'hCACA)) l2 (.A(dq[5]), .B(dq[4]), .C(stop), .D(1'b0), .Z(a2));
  LUT4 #(.INIT(16'hCACA)) l3 (.A(dq[7]), .B(dq[6]), .C(stop), .D(1'b0), .Z(a3));
  PFUMX mx1 (.ALUT(a3), .BLUT(a2), .C0(trdy), .Z(m1));
  L6MUX21 l6 (.D1(m1), .D0(m0), .SD(frame), .Z(f));
  LUT4 #(.INIT(16'h8888)) both (.A(trdy), .B(stop), .C(1'b0), .D(1'b0), .Z(g));
  LUT4 #(.INIT(16'h8888)) word (.A(trdy), .B(dq[0]), .C(1'b0), .D(1'b0), .Z(data));
  always @(posedge clk) begin sel_q <= f; both_q <= g; ad_copy <= data; if (d[1]) ad_copy2 <= data; end
  OFS1P3DX ad_ff (.SCLK(clk), .SP(1'b1), .CD(1'b0), .D(data), .Q(ad_q));
  OB ob_ad (.I(ad_q), .O(pci_0__ad__io));
  assign q = sel_q ^ both_q ^ (ad_copy & ad_copy2);
endmodule
"""


@pytest.fixture(scope="module")
def placed(tmp_path_factory):
    """(synthesised netlist, floorplan summary, floorplanned netlist, routed netlist,
    SDF timing) of :data:`DESIGN`."""
    work = tmp_path_factory.mktemp("floorplan")
    (work / "top.v").write_text(DESIGN)
    (work / "top.lpf").write_text(LPF)
    subprocess.run([_tool("yosys"), "-q", "-p",
                    "read_verilog -lib +/ecp5/cells_sim.v; read_verilog top.v; "
                    "synth_ecp5 -top top -json top.json"], cwd=work, check=True)
    tiles = pin_tiles(_tool("nextpnr"), DEVICE, PACKAGE, work / "top.lpf",
                      {"pci_0__trdy__io": 1, "pci_0__stop__io": 1, "pci_0__frame__io": 1},
                      work)
    summary = floorplan(work / "top.json", work / "planned.json", device="LFE5U-85F",
                        lines=["trdy", "stop", "frame", "ad"], pin_tile=tiles)
    for netlist, tag in (("planned.json", ""), ("top.json", "_free")):
        subprocess.run([_tool("nextpnr"), "--quiet", *DEVICE, "--package", PACKAGE,
                        "--json", netlist, "--lpf", "top.lpf", "--write", f"routed{tag}.json",
                        "--sdf", f"top{tag}.sdf", "--timing-allow-fail"], cwd=work,
                       check=True, capture_output=True)
    return {"tiles": tiles, "summary": summary,
            "timing_free": parse_sdf((work / "top_free.sdf").read_text()),
            "routed_free": json.loads((work / "routed_free.json").read_text()),
            "synthesised": json.loads((work / "top.json").read_text()),
            "planned": json.loads((work / "planned.json").read_text()),
            "routed": json.loads((work / "routed.json").read_text()),
            "timing": parse_sdf((work / "top.sdf").read_text())}


def _cells(netlist):
    return next(m for m in netlist["modules"].values() if m["attributes"].get("top"))["cells"]


def test_pin_tiles_as_nextpnr_binds_the_balls(placed):
    assert placed["tiles"] == {"pci_0__trdy__io": (126, 17), "pci_0__stop__io": (126, 14),
                               "pci_0__frame__io": (126, 20)}


def test_the_live_logic_and_only_it_is_found(placed):
    netlist = _Netlist(placed["synthesised"])
    comb, flops, data_only = live_logic(netlist, ["trdy", "stop", "frame", "ad"])
    cells = netlist.cells
    assert sorted(cells[c]["type"] for c in comb) == \
        ["L6MUX21", "LUT4", "LUT4", "LUT4", "LUT4", "LUT4", "PFUMX", "PFUMX"]
    assert [cells[c]["type"] for c in data_only] == ["LUT4"]
    assert {cells[c]["connections"]["Q"][0] for c in flops} == \
        {b for name in ("sel_q", "both_q")
         for b in netlist.top["netnames"][name]["bits"]}
    assert placed["summary"] == {"cells": 5, "flops": 2, "cone_cells": 8,
                                 "left_to_placer": 1}


def test_live_depths_count_the_levels_to_each_kind_of_end(placed):
    """STOP# -> LUT4 -> PFUMX -> L6MUX21 -> a flip-flop is one level (the multiplexers
    take the LUT's output on their slices' own wires), TRDY# meets the same chain at the
    PFUMX's select (one) and AD[0]'s word LUT (one, a data path), FRAME# the L6MUX21's
    select; the output-only AD pin starts nothing."""
    netlist = _Netlist(placed["synthesised"])
    assert live_depths(netlist, ["trdy", "stop", "frame", "ad"]) == {
        "trdy": {"data": 1, "control": 1}, "stop": {"data": 0, "control": 1},
        "frame": {"data": 0, "control": 1}, "ad": {"data": 0, "control": 0}}


def test_slices_follow_the_multiplexer_rules(placed):
    bels = {name: cell["attributes"].get("BEL") for name, cell in _cells(placed["planned"]).items()}
    slot = {name: re.fullmatch(r"X(\d+)/Y(\d+)/SLICE([A-D])\.(K0|K1|FF0|FF1)", bel).groups()
            for name, bel in bels.items() if bel and "SLICE" in bel}
    # L6MUX21: the PFUMX of D1 (l2, l3) in the first slice of a pair, that of D0 (l0, l1)
    # in the second; each PFUMX's BLUT in K0, ALUT in K1; one tile.
    assert {n: slot[n][2:] for n in ("l0", "l1", "l2", "l3")} in (
        {"l2": ("A", "K0"), "l3": ("A", "K1"), "l0": ("B", "K0"), "l1": ("B", "K1")},
        {"l2": ("C", "K0"), "l3": ("C", "K1"), "l0": ("D", "K0"), "l1": ("D", "K1")})
    assert len({slot[n][:2] for n in ("l0", "l1", "l2", "l3")}) == 1
    assert bels.get("word") is None
    # Next to the pins (right edge, rows 14-20).
    for x, y, s, k in slot.values():
        assert int(x) >= 120 and 12 <= int(y) <= 22
    # Each flip-flop where nextpnr packs it with the one cell driving its D (else the D
    # input cannot be routed): the L6MUX21's at FF1 of the pair's second slice, the
    # LUT's in the LUT's own half.
    flop = {name.split("_TRELLIS")[0]: where for name, where in slot.items()
            if where[3].startswith("FF")}
    assert flop["sel_q"] == (*slot["l0"][:3], "FF1")
    assert flop["both_q"] == (*slot["both"][:3], "FF" + slot["both"][3][1])


def test_nextpnr_keeps_every_cell_where_it_was_put(placed):
    planned = {name: cell["attributes"]["BEL"] for name, cell in _cells(placed["planned"]).items()
               if "BEL" in cell["attributes"] and "SLICE" in cell["attributes"]["BEL"]}
    routed = {name: cell["attributes"].get("NEXTPNR_BEL")
              for name, cell in _cells(placed["routed"]).items()}
    assert planned and all(routed[name] == bel for name, bel in planned.items())


def _control_paths(placed, tag=""):
    """``{(pin, flip-flop): ns}`` of the routed paths from a live pin to a flip-flop other
    than AD[0]'s output register, as the build report reads them (setup included)."""
    paths, _ = analyse_io(placed["routed" + tag], placed["timing" + tag])
    return {(p["pin"], p["to"]): p["ns"] + p["setup_ns"] for p in paths if not p["data"]}


def test_with_data_paths_the_ad_logic_goes_between_its_pins(placed, tmp_path):
    """A pin-out with AD on the handshake pins' edge (``data_paths``, the reference
    card): the LUT that feeds only AD[0]'s output register and its copies is placed too,
    between TRDY#'s pin and AD[0]'s, not wherever the placer would put it; the control
    logic is placed as without."""
    (tmp_path / "top.json").write_text(json.dumps(placed["synthesised"]))
    (tmp_path / "top.lpf").write_text(LPF)
    tiles = pin_tiles(_tool("nextpnr"), DEVICE, PACKAGE, tmp_path / "top.lpf",
                      {"pci_0__trdy__io": 1, "pci_0__stop__io": 1, "pci_0__frame__io": 1,
                       "pci_0__ad__io": 1}, tmp_path)
    summary = floorplan(tmp_path / "top.json", tmp_path / "planned.json",
                        device="LFE5U-85F", lines=["trdy", "stop", "frame", "ad"],
                        pin_tile=tiles, data_paths=True)
    assert summary == {"cells": 6, "flops": 2, "cone_cells": 9, "left_to_placer": 0}
    cells = _cells(json.loads((tmp_path / "planned.json").read_text()))
    bel = cells["word"]["attributes"]["BEL"]
    x, y = (int(v) for v in re.match(r"X(\d+)/Y(\d+)/", bel).groups())
    (trdy_x, trdy_y), (ad_x, ad_y) = tiles["pci_0__trdy__io"], tiles["pci_0__ad__io"]
    assert (ad_x, ad_y) == (65, 0)
    # Half way, within the few tiles the block-RAM rows and the free slots move it.
    assert abs(x - (trdy_x + ad_x) / 2) <= 3 and abs(y - (trdy_y + ad_y) / 2) <= 3, (x, y)
    # AD[0]'s output register is its I/O cell's, not the LUT's slice's.
    assert not any("BEL" in c["attributes"] for n, c in cells.items() if n.startswith("ad_ff"))
    assert {n: c["attributes"].get("BEL") for n, c in cells.items() if n != "word"} == \
        {n: c["attributes"].get("BEL") for n, c in _cells(placed["planned"]).items()
         if n != "word"}


def test_a_copy_of_the_ad_register_ends_a_data_path(placed):
    """The pads keep the driven AD word in fabric flip-flops for the next clock's parity.
    Their D input is AD[0]'s (routed through M: nextpnr packs neither with the LUT), so
    the report counts them with the data paths, as the floorplan does (test above: they
    are not among the flip-flops placed)."""
    paths, _ = analyse_io(placed["routed"], placed["timing"])
    ends = {p["to"]: p["data"] for p in paths if p["pin"] == "trdy"}
    copies = [name for name in ends if "ad_copy" in name]
    assert len(copies) == 2 and all(ends[name] for name in copies), ends
    assert sum(ends.values()) == 3, ends     # AD[0]'s output register and the copies


def test_pin_to_flip_flop_fits_the_setup_budget(placed):
    """Well inside PCI's 7 ns at 33 MHz; left to the placer, the same cells go next to
    the registered words across the die and the paths take more than twice as long."""
    planned = _control_paths(placed)
    free = _control_paths(placed, "_free")
    assert len(planned) == len(free) == 5   # TRDY#, STOP#, FRAME# -> sel_q; TRDY#, STOP# -> both_q
    assert max(planned.values()) < 3.5, planned
    assert max(free.values()) > 2 * max(planned.values()), free


def test_the_build_step_floorplans_the_synthesised_netlist(placed, tmp_path):
    """``make bitstream ARGS=--floorplan``'s step: the pins bound from the board's
    constraints file, every bus line a candidate, the same cells placed."""
    (tmp_path / "pcispy.json").write_text(json.dumps(placed["synthesised"]))
    (tmp_path / "pcispy.lpf").write_text(LPF)
    summary = _floorplan(tmp_path, "pcispy", "pcispy_floorplan.json", 32, "LFE5U-85F",
                         DEVICE, PACKAGE)
    assert {k: v for k, v in summary.items() if k != "seconds"} == placed["summary"]
    planned = json.loads((tmp_path / "pcispy_floorplan.json").read_text())
    assert {n: c["attributes"].get("BEL") for n, c in _cells(planned).items()} == \
        {n: c["attributes"].get("BEL") for n, c in _cells(placed["planned"]).items()}


def test_an_unbindable_pin_is_a_clear_error(tmp_path):
    (tmp_path / "bad.lpf").write_text('LOCATE COMP "pci_0__trdy__io" SITE "ZZ99";\n')
    with pytest.raises(RuntimeError, match="could not bind the pins"):
        pin_tiles(_tool("nextpnr"), DEVICE, PACKAGE, tmp_path / "bad.lpf",
                  {"pci_0__trdy__io": 1}, tmp_path)


def test_the_fabric_description_covers_the_handshake_corner():
    columns, rows = FABRIC["LFE5U-85F"]
    assert 124 in columns and 125 not in columns
    assert {14, 17, 20} <= set(rows) and 10 not in rows and 22 not in rows


def _chain_netlist():
    """A live pin's input (net 100) through LUT ``gate`` into an output pin's I/O-cell
    register ``oreg`` (the pads' last LUT before a pin's register)."""
    lut_ports = {"A": "input", "B": "input", "C": "input", "D": "input", "Z": "output"}
    cells = {
        "gate": {"type": "LUT4", "parameters": {}, "attributes": {},
                 "port_directions": lut_ports,
                 "connections": {"A": [100], "B": ["0"], "C": ["0"], "D": ["0"], "Z": [101]}},
        "oreg": {"type": "TRELLIS_FF", "parameters": {}, "attributes": {"syn_useioff": 1},
                 "port_directions": {"CLK": "input", "DI": "input", "Q": "output"},
                 "connections": {"CLK": [2], "DI": [101], "Q": [102]}},
        "pin": {"type": "TRELLIS_IO", "parameters": {"DIR": "OUTPUT"}, "attributes": {},
                "port_directions": {"I": "input", "B": "inout"},
                "connections": {"I": [102], "B": [103]}},
    }
    return _Netlist({"modules": {"top": {"attributes": {"top": 1}, "ports": {},
                                         "cells": cells, "netnames": {}}}})


def test_a_cell_goes_between_its_live_pin_and_the_output_pin_it_feeds():
    """Placed from its inputs only, the last LUT before an output register sits at the
    live pin, and the whole wire to a far output pin comes after it; pulled toward the
    output pin it feeds, it sits between the two."""
    netlist = _chain_netlist()
    live_pin, output_pin = (126, 17), (126, 61)
    alone, _ = assign_bels(netlist, {"gate"}, set(), {100: live_pin}, FABRIC["LFE5U-85F"])
    pulled, _ = assign_bels(netlist, {"gate"}, set(), {100: live_pin}, FABRIC["LFE5U-85F"],
                            registers={"oreg": output_pin})

    def tile(bel):
        x, y = re.match(r"X(\d+)/Y(\d+)/", bel).groups()
        return int(x), int(y)
    assert tile(alone["gate"]) == (124, 17)     # the nearest logic tile to the live pin
    x, y = tile(pulled["gate"])
    assert x == 124 and abs(y - 39) <= 2, pulled
    # The output register goes into its pin's I/O cell, not into the LUT's slice.
    assert set(pulled) == set(alone) == {"gate"}


def test_a_flip_flop_sampling_a_pin_keeps_its_distance_for_hold():
    """A fabric flip-flop fed straight from a live pin goes SAMPLE_TILES_FROM_PIN tiles in
    from the pin (the wire PCI's 0 ns hold needs), not on the nearest tile."""
    cells = {"sample": {"type": "TRELLIS_FF", "parameters": {}, "attributes": {},
                        "port_directions": {"CLK": "input", "DI": "input", "Q": "output"},
                        "connections": {"CLK": [2], "DI": [100], "Q": [101]}}}
    netlist = _Netlist({"modules": {"top": {"attributes": {"top": 1}, "ports": {},
                                            "cells": cells, "netnames": {}}}})
    bels, _ = assign_bels(netlist, set(), {"sample"}, {100: (126, 17)}, FABRIC["LFE5U-85F"])
    x, y = (int(v) for v in re.match(r"X(\d+)/Y(\d+)/", bels["sample"]).groups())
    assert (x, y) == (126 - SAMPLE_TILES_FROM_PIN, 17)


def test_a_pin_with_a_longer_budget_does_not_pull_the_cell():
    """A LUT of GNT# (10 ns at 33 MHz) and FRAME# (7 ns), pins 27 rows apart (as on the
    reference card): counted alike it sits half way and FRAME# pays half the distance;
    with GNT# among the slack pins it sits at FRAME#'s pin and GNT# pays it all."""
    lut_ports = {"A": "input", "B": "input", "C": "input", "D": "input", "Z": "output"}
    cells = {"choice": {"type": "LUT4", "parameters": {}, "attributes": {},
                        "port_directions": lut_ports,
                        "connections": {"A": [100], "B": [200], "C": ["0"], "D": ["0"],
                                        "Z": [101]}}}
    netlist = _Netlist({"modules": {"top": {"attributes": {"top": 1}, "ports": {},
                                            "cells": cells, "netnames": {}}}})
    anchors = {100: (126, 11), 200: (126, 38)}

    def row(slack_pins):
        bels, _ = assign_bels(netlist, {"choice"}, set(), anchors, FABRIC["LFE5U-85F"],
                              slack_pins=slack_pins)
        return int(re.match(r"X\d+/Y(\d+)/", bels["choice"]).group(1))
    assert abs(row(frozenset()) - 24) <= 1
    assert row(frozenset({100})) == 38
