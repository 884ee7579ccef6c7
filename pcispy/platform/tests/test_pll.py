# SPDX-License-Identifier: BSD-2-Clause
"""The ECP5 PLL (pcispy/platform/ecp5/pll.py): its divider arithmetic and refusals, the
passive ULX3S build's SDRAM clock domain made from it, and the build's check of that
domain's frequency (pcispy/platform/build.py)."""

import re

import pytest

from pcispy.board.board_top import BoardTop
from pcispy.platform.boards import board_platform
from pcispy.platform.boards.ulx3s import BOARDS, SDRAM_CLOCK_MHZ, add_pci
from pcispy.platform.build import check, margins
from pcispy.platform.ecp5.pll import LIMITS_MHZ, PLLError, pll_dividers

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


@pytest.mark.parametrize("args, message", [
    ((25, 3), "output clock 3 MHz is outside 3.125..400 MHz"),
    ((25, 401), "output clock 401 MHz is outside 3.125..400 MHz"),
    ((5, 100), "input clock 5 MHz is outside 8..400 MHz"),
])
def test_frequencies_out_of_range_are_refused(args, message):
    with pytest.raises(PLLError, match=re.escape(message)):
        pll_dividers(*args)


def test_passive_ulx3s_keeps_the_sdram_on_the_pci_clock_by_default():
    """No PLL unless asked: the SDRAM's pins in I/O cell flip-flops of the PCI clock."""
    platform = add_pci(BOARDS["ulx3s-85f"](), passive=True)
    assert platform.pci_sdram_clock_mhz is None
    rtlil = platform.build(BoardTop(passive=True), name="top", do_build=False).files["top.il"]
    assert "cell \\EHXPLLL" not in rtlil
    assert rtlil.count("cell \\ODDRX1F") == 1
    assert len(re.findall(r"cell \\IFS1P3DX", rtlil)) >= 16          # DQ


def test_sdram_clock_is_for_the_passive_ulx3s_only():
    with pytest.raises(ValueError, match="an SDRAM clock is for the passive ULX3S build"):
        board_platform("ulx3s-85f", sdram_clock_mhz=110)
    with pytest.raises(ValueError, match="an SDRAM clock is for the passive ULX3S build"):
        board_platform("ecp5-evn", passive=True, sdram_clock_mhz=110)


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
    # Every SDRAM pin in an I/O cell flip-flop on that clock; the clock pin from a DDR cell.
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
    (["ulx3s-85f", "--passive", "--sdram-clock", "100"],
     "--sdram-clock 100: at 100 MHz no clock edge samples the SDRAM's read data for a "
     "round trip of 2 to 6 ns"),
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
