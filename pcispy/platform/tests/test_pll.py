# SPDX-License-Identifier: BSD-2-Clause
"""The ECP5 PLL (pcispy/platform/ecp5/pll.py): its divider arithmetic and refusals, the
passive ULX3S build's SDRAM clock domain made from it, and the build's check of that
domain's frequency (pcispy/platform/build.py)."""

import re

import pytest

from pcispy.platform.top import BoardTop, sdram_clocking
from pcispy.platform.boards import board_platform
from pcispy.platform.boards.ulx3s import BOARDS, SDRAM_CLOCK_MHZ, add_pci
from pcispy.platform.timing import check, margins
from pcispy.platform.ecp5.pll import LIMITS_MHZ, PLLError, pll_dividers, pll_phase

pytestmark = pytest.mark.board


@pytest.mark.parametrize("output, dividers", [
    # (CLKI_DIV, CLKFB_DIV, CLKOP_DIV): output = 25 * CLKFB / CLKI, VCO = output * CLKOP.
    (125, (1, 5, 6)),       # VCO 750 MHz
    (110, (5, 22, 7)),      # VCO 770 MHz: the passive ULX3S's SDRAM clock
    (100, (1, 4, 8)),       # VCO 800 MHz, the top of the range
    (120, (5, 24, 6)),      # phase detector at 5 MHz
    (25, (1, 1, 32)),
])
def test_dividers_of_the_ulx3s_oscillator(output, dividers):
    d = pll_dividers(25, output)
    assert (d.clki, d.clkfb, d.clkop) == dividers
    assert d.output_mhz == output
    assert LIMITS_MHZ["vco"][0] <= d.vco_mhz <= LIMITS_MHZ["vco"][1]
    assert LIMITS_MHZ["pfd"][0] <= d.pfd_mhz


def test_the_fastest_vco_is_chosen():
    # 50 MHz: CLKOP_DIV 16 puts the VCO at 800 MHz (8 would give 400, also legal).
    d = pll_dividers(25, 50)
    assert (d.clki, d.clkfb, d.clkop, d.vco_mhz) == (1, 2, 16, 800)


def test_a_tolerance_takes_the_closest():
    # 133.3 MHz is not a ratio of 25 MHz within reach; 133.33 (25 * 16 / 3) is.
    with pytest.raises(PLLError, match=r"no dividers make 133.3 MHz from 25 MHz"):
        pll_dividers(25, 133.3)
    d = pll_dividers(25, 133.3, tolerance_mhz=0.1)
    assert (d.clki, d.clkfb) == (3, 16) and round(d.output_mhz, 3) == 133.333


@pytest.mark.parametrize("output, fraction, steps, settings, degrees", [
    # Steps of an eighth of a VCO period: 56 per period at 110 MHz (CLKOP_DIV 7, CLKOP's
    # CPHASE 3): 221 degrees is 34.38 steps, rounded to 34: CPHASE 3 + 4, FPHASE 2.
    (110, 442 / 720, 34, (7, 2), 218.57),
    (125, 0.5, 24, (5, 0), 180.0),          # CLKOP_DIV 6: 48 steps, half of them
    (100, 479 / 720, 43, (8, 3), 241.88),   # CLKOP_DIV 8: 64 steps
    (110, 0.995, 0, (3, 0), 0.0),           # 55.7 steps rounds to 56: a whole period
])
def test_phase_of_the_second_output(output, fraction, steps, settings, degrees):
    d = pll_dividers(25, output)
    phase = pll_phase(d, fraction)
    assert phase.steps == steps
    assert phase.settings((d.clkop - 1) // 2) == settings
    assert round(phase.degrees, 2) == degrees


def test_a_phase_outside_a_period_is_refused():
    d = pll_dividers(25, 110)
    for fraction in (-0.1, 1.0):
        with pytest.raises(PLLError, match=f"a phase of {fraction:g} periods is outside 0..1"):
            pll_phase(d, fraction)


def test_sdram_clocking_of_the_passive_ulx3s():
    # The SDRAM at 110 MHz: its clock pin 218.6 degrees after the controller's clock, the
    # controller takes word 0 two clocks after CL (docs/sdram.md).
    dividers, phase, timing = sdram_clocking(25, 110)
    assert (dividers.clki, dividers.clkfb, dividers.clkop) == (5, 22, 7)
    assert phase.steps == 34 and (timing.cas_latency, timing.read_delay) == (3, 2)
    # 100 MHz: no edge on the inverted clock; with the phase, read_delay 2.
    assert sdram_clocking(25, 100)[2].read_delay == 2


@pytest.mark.parametrize("args, message", [
    ((25, 3), "output clock 3 MHz is outside 3.125..400 MHz"),
    ((25, 401), "output clock 401 MHz is outside 3.125..400 MHz"),
    ((5, 100), "input clock 5 MHz is outside 8..400 MHz"),
])
def test_frequencies_out_of_range_are_refused(args, message):
    with pytest.raises(PLLError, match=re.escape(message)):
        pll_dividers(*args)


@pytest.mark.heavy
def test_passive_ulx3s_keeps_its_trace_in_the_sdram_on_the_pci_clock_by_default():
    """The passive build (the active one keeps block RAM) puts the spy's trace in the
    board's SDRAM, on amaranth-boards' ``sdram`` pins; no PLL unless asked: the SDRAM's
    pins in I/O cell flip-flops of the PCI clock."""
    platform = add_pci(BOARDS["ulx3s-85f"](), passive=True)
    assert platform.pci_trace_memory == "sdram" and platform.pci_sdram_clock_mhz is None
    assert add_pci(BOARDS["ulx3s-85f"](), passive=False).pci_trace_memory == "bram"
    plan = platform.build(BoardTop(passive=True), name="top", do_build=False)
    located = dict(re.findall(r'LOCATE COMP "(\S+)" SITE "(\w+)";', plan.files["top.lpf"]))
    # The ULX3S's SDRAM pins (amaranth-boards): the clock, CS#, and the data bits.
    assert located["sdram_0__clk__io"] == "F19"
    assert located["sdram_0__cs__io"] == "P20"
    assert sum(name.startswith("sdram_0__dq__io") for name in located) == 16
    rtlil = plan.files["top.il"]
    assert "cell \\EHXPLLL" not in rtlil
    assert rtlil.count("cell \\ODDRX1F") == 1
    assert len(re.findall(r"cell \\IFS1P3DX", rtlil)) >= 16          # DQ


def test_sdram_clock_is_for_the_passive_ulx3s_only():
    with pytest.raises(ValueError, match="an SDRAM clock is for the passive ULX3S build"):
        board_platform("ulx3s-85f", sdram_clock_mhz=110)
    with pytest.raises(ValueError, match="an SDRAM clock is for the passive ULX3S build"):
        board_platform("ecp5-evn", passive=True, sdram_clock_mhz=110)


@pytest.mark.heavy
def test_passive_ulx3s_with_an_sdram_clock_has_the_sdram_on_its_pll_clock():
    platform = add_pci(BOARDS["ulx3s-85f"](), passive=True, sdram_clock_mhz=SDRAM_CLOCK_MHZ)
    assert platform.pci_sdram_clock_mhz == SDRAM_CLOCK_MHZ == 110
    plan = platform.build(BoardTop(passive=True), name="top", do_build=False)
    # nextpnr derives the output's constraint from the oscillator's and the dividers.
    assert 'FREQUENCY PORT "clk25_0__io" 25000000.0 HZ;' in plan.files["top.lpf"]
    rtlil = plan.files["top.il"]
    pll = re.search(r"cell \\EHXPLLL .*?\n  end", rtlil, re.DOTALL).group(0)
    # 110 MHz = 25 MHz x 22 / 5, the VCO at 770 MHz.
    for parameter, value in (("CLKI_DIV", 5), ("CLKFB_DIV", 22), ("CLKOP_DIV", 7)):
        assert re.search(rf"parameter \\{parameter} {value}\b", pll), parameter
    assert 'parameter \\FEEDBK_PATH "CLKOP"' in pll
    # The SDRAM's clock pin from CLKOS, the same divider, 34/56 of a period later.
    for parameter, value in (("CLKOS_DIV", 7), ("CLKOP_CPHASE", 3), ("CLKOS_CPHASE", 7),
                             ("CLKOS_FPHASE", 2)):
        assert re.search(rf"parameter \\{parameter} {value}\b", pll), parameter
    assert 'parameter \\CLKOS_ENABLE "ENABLED"' in pll
    # Every SDRAM pin in an I/O cell flip-flop on that clock; the clock pin from a DDR cell
    # (on CLKOS).
    assert rtlil.count("cell \\ODDRX1F") == 1
    assert len(re.findall(r"cell \\IFS1P3DX", rtlil)) >= 16          # DQ


def _report(fmax, clocks):
    return {"fmax_mhz": fmax, "clocks_mhz": clocks, "outputs_registered": True,
            "input_paths": [], "data_paths": {"count": 0}}


def test_check_holds_the_sdram_domain_to_its_own_clock():
    met = _report({"pci": 44.1, "sync": 150.0, "sdram": 131.2}, {"sdram": 125})
    assert check(met, 33) == []
    assert margins(met, 33) == ("meets PCI at 33 MHz: pci clock 44.1 MHz (+33.6 %); "
                                "sdram clock 131.2 MHz of 125 (+5.0 %)")
    slow = _report({"pci": 44.1, "sdram": 118.4}, {"sdram": 125})
    assert check(slow, 33) == ["sdram clock reaches 118.4 MHz, not 125 MHz"]
    # A domain nextpnr did not report (it was never built) is missing its clock too.
    assert check(_report({"pci": 44.1}, {"sdram": 125}), 33) == [
        "sdram clock reaches None MHz, not 125 MHz"]
    # A board without a clock of its own: only PCI.
    assert check(_report({"pci": 44.1}, {}), 33) == []


@pytest.mark.parametrize("argv, message", [
    (["ulx3s-85f", "--passive", "--sdram-clock", "140"],
     "--sdram-clock 140: the ULX3S's SDRAM runs at up to 133 MHz, not 140"),
    (["ulx3s-85f", "--passive", "--sdram-clock", "66"],
     "--sdram-clock 66: ECP5 PLL: no dividers make 66 MHz from 25 MHz (within 0 MHz) with "
     "the phase detector in 3.125..400 MHz and the VCO in 400..800 MHz"),
    (["ulx3s-85f", "--sdram-clock", "110"],
     "--sdram-clock 110: an SDRAM clock is for the passive ULX3S build, the one that keeps "
     "its trace in SDRAM"),
])
def test_an_sdram_clock_the_board_cannot_honour_ends_before_the_build(argv, message, capsys,
                                                                      tmp_path):
    from pcispy.platform.build import main
    with pytest.raises(SystemExit) as stop:
        main(argv + ["--build-dir", str(tmp_path)])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"error: {message}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("pin_first", [False, True])
def test_report_holds_the_sdram_domain_to_its_slowest_net(tmp_path, pin_first):
    # nextpnr names the SDRAM's clock and its clock pin's phase-shifted copy (which
    # clocks only a DDR cell); both say "sdram": the slower is the domain's (the figures
    # of the passive ULX3S-85F built with --sdram-clock 110, seed 2).
    import json
    from pcispy.platform.routed import read_report
    from pcispy.platform.tests.test_board_build import SDF, _netlist
    nets = [("$glbnet$board.sdram_clk", 120.55), ("$glbnet$sdram_pll.sdram_pin_pll_clk", 550.36)]
    fmax = {"$glbnet$board.bank.pci_clk": {"achieved": 42.05, "constraint": 33.0}}
    fmax.update({net: {"achieved": mhz, "constraint": 110.01}
                 for net, mhz in (nets[::-1] if pin_first else nets)})
    (tmp_path / "pcispy.sdf").write_text(SDF)
    (tmp_path / "pcispy_routed.json").write_text(json.dumps(_netlist(True)))
    (tmp_path / "nextpnr_report.json").write_text(json.dumps({
        "fmax": fmax, "utilization": {"TRELLIS_COMB": {"used": 18953, "available": 83640}}}))
    assert read_report(tmp_path)["fmax_mhz"] == {"pci": 42.05, "sdram": 120.55}
