# SPDX-License-Identifier: BSD-2-Clause
"""The profile's attribution of perf's samples to the design's blocks (the perf run itself
needs Linux perf and minutes: it is a tool, run by hand)."""

from pcispy.sim.profile_model import OWN, attribute, block_of, main

# A piece of generated C++ as Verilator writes it, and perf's report of samples by line.
_SOURCE = """\
void Vtop___024root___nba_sequent__TOP__0(Vtop___024root* vlSelf) {
    vlSelfRef.pcisystem__DOT__board__DOT__spy__DOT__state = vlSelfRef.pcisystem__DOT__board__DOT__spy__DOT__state___05Fnext;
    vlSelfRef.pcisystem__DOT__checker__DOT__prev = (vlSelfRef.pcisystem__DOT__board__DOT__bank__DOT__r & vlSelfRef.__Vdly__pcisystem__DOT__host__DOT__x);
    }
    vlSelfRef.pcisystem__DOT__frame = vlSelfRef.pcisystem__DOT__ad___05Fn;
"""
_REPORT = """\
# Samples: 100
#
    40.00%            40  Vtop___024root__0.cpp:2
    30.00%            30  Vtop___024root__0.cpp:3
     5.00%             5  Vtop___024root__0.cpp:4
    10.00%            10  Vtop___024root__0.cpp:5
     2.00%             2  verilated_funcs.h:1036
"""


def test_a_signal_names_its_block_by_its_path_below_the_top():
    assert block_of("pcisystem__DOT__board__DOT__spy__DOT__state", 2) == "board/spy"
    assert block_of("pcisystem__DOT__board__DOT__spy__DOT__state", 1) == "board"
    assert block_of("pcisystem__DOT__frame", 2) == "(top)"
    # Verilator's copies of a signal count for the signal's block; its escapes are undone.
    assert block_of("__Vdly__pcisystem__DOT__host___05Fmemory__DOT__x", 2) == "host_memory"
    assert block_of("__VicoTriggered", 2) is None


def test_samples_go_to_the_blocks_a_line_names(tmp_path):
    (tmp_path / "Vtop___024root__0.cpp").write_text(_SOURCE)
    samples = attribute(_REPORT, tmp_path, depth=2)
    # Line 2 names the spy only; line 3 the checker, the bank and (a delayed copy) the
    # host: its 30 samples are shared; line 4 (a brace) is the model's own; line 5 the
    # top; a header line counts under its file.
    assert samples == {"board/spy": 40, "checker": 10, "board/bank": 10, "host": 10,
                      OWN: 5, "(top)": 10, "<verilated_funcs.h>": 2}


def test_without_perf_it_says_so_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert main([]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
