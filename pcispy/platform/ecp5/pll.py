# SPDX-License-Identifier: BSD-2-Clause
"""A clock domain from an ECP5 PLL (``EHXPLLL``), its dividers computed here.

The PLL multiplies its input ``CLKI`` by ``CLKFB_DIV / CLKI_DIV`` (the phase detector
compares ``CLKI / CLKI_DIV`` with the fed-back output over ``CLKFB_DIV``); with the
feedback taken from ``CLKOP`` the output is ``f_in * CLKFB_DIV / CLKI_DIV`` and the VCO
runs ``CLKOP_DIV`` times faster than it. The ranges the dividers must keep to
(:data:`LIMITS_MHZ`, :data:`DIVIDER_MAX`) are the ECP5 family data sheet's sysCLOCK PLL
figures as Project Trellis' ``ecppll`` applies them; :func:`pll_dividers` searches them
and refuses a frequency they cannot make, before anything is built.
"""

from dataclasses import dataclass

from amaranth.hdl import ClockSignal, Const, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["LIMITS_MHZ", "DIVIDER_MAX", "PLLDividers", "PLLError", "pll_dividers",
           "ECP5PLL"]

#: ``{what: (lowest, highest)}`` in MHz: the input clock, the phase detector's input
#: (``CLKI / CLKI_DIV``), the VCO, the output.
LIMITS_MHZ = {"input": (8.0, 400.0), "pfd": (3.125, 400.0), "vco": (400.0, 800.0),
              "output": (3.125, 400.0)}
#: The largest value of each divider (the smallest is 1).
DIVIDER_MAX = {"clki": 128, "clkfb": 80, "clkop": 128}


class PLLError(ValueError):
    """A frequency the PLL cannot make (the message says which limit stops it)."""


@dataclass(frozen=True)
class PLLDividers:
    """The dividers of one PLL setting and what they give (MHz)."""
    clki: int
    clkfb: int
    clkop: int
    input_mhz: float

    @property
    def pfd_mhz(self):
        """The phase detector's input frequency."""
        return self.input_mhz / self.clki

    @property
    def output_mhz(self):
        """CLKOP's frequency."""
        return self.input_mhz * self.clkfb / self.clki

    @property
    def vco_mhz(self):
        """The VCO's frequency."""
        return self.output_mhz * self.clkop


def _inside(what, mhz):
    low, high = LIMITS_MHZ[what]
    return low <= mhz <= high


def pll_dividers(input_mhz, output_mhz, tolerance_mhz=0.0):
    """The :class:`PLLDividers` making ``output_mhz`` from ``input_mhz`` within
    ``tolerance_mhz`` (default: exactly, to a millionth of a MHz), the closest if several
    do, then the one with the fastest VCO (the least jitter) and the fastest phase
    detector. Raises :class:`PLLError` with the reason when none does."""
    for what, mhz in (("input", input_mhz), ("output", output_mhz)):
        if not _inside(what, mhz):
            low, high = LIMITS_MHZ[what]
            raise PLLError(f"ECP5 PLL: {what} clock {mhz:g} MHz is outside "
                           f"{low:g}..{high:g} MHz")
    best = None
    for clki in range(1, DIVIDER_MAX["clki"] + 1):
        if not _inside("pfd", input_mhz / clki):
            continue
        for clkfb in range(1, DIVIDER_MAX["clkfb"] + 1):
            out = input_mhz * clkfb / clki
            error = abs(out - output_mhz)
            if error > tolerance_mhz + 1e-6:
                continue
            # The fastest VCO in range for this output: the largest CLKOP divider.
            clkop = min(DIVIDER_MAX["clkop"], int(LIMITS_MHZ["vco"][1] // out))
            if clkop < 1 or not _inside("vco", out * clkop):
                continue
            candidate = PLLDividers(clki, clkfb, clkop, input_mhz)
            key = (round(error, 9), -candidate.vco_mhz, -candidate.pfd_mhz)
            if best is None or key < best[0]:
                best = (key, candidate)
    if best is None:
        raise PLLError(f"ECP5 PLL: no dividers make {output_mhz:g} MHz from {input_mhz:g} MHz "
                       f"(within {tolerance_mhz:g} MHz) with the phase detector in "
                       f"{LIMITS_MHZ['pfd'][0]:g}..{LIMITS_MHZ['pfd'][1]:g} MHz and the VCO "
                       f"in {LIMITS_MHZ['vco'][0]:g}..{LIMITS_MHZ['vco'][1]:g} MHz")
    return best[1]


class ECP5PLL(wiring.Component):
    """The clock of domain ``domain`` from an ``EHXPLLL`` (feedback from ``CLKOP``), the
    domain held in reset until the PLL has locked (and while ``reset`` is asserted): its reset is
    asserted at once and released on its own clock (:class:`ResetSynchronizer`), so no
    flip-flop of the domain runs on a clock still settling.

    Ports: clk_in (In, 1): the reference clock (e.g. ``ClockSignal("sync")`` from the
    board's oscillator). reset (In, 1): also holds the domain in reset (any domain).
    locked (Out, 1): the PLL's LOCK output (asynchronous to every domain).

    Parameters: input_mhz, output_mhz (checked by :func:`pll_dividers`, which raises
    :class:`PLLError` before anything is built); domain: the name of the clock domain
    whose clock and reset it drives (the caller defines the domain, in a module that
    contains every user of it).

    Place and route times the domain against ``output_mhz`` with no constraint of its
    own: nextpnr derives it from the input clock's constraint and the dividers ("Derived
    frequency constraint of 110.0 MHz" in its log; a constraint on the output net would
    name a net that synthesis renames).
    """
    def __init__(self, input_mhz, output_mhz, domain):
        self.dividers = pll_dividers(input_mhz, output_mhz)
        self.domain = domain
        super().__init__({"clk_in": In(1), "reset": In(1), "locked": Out(1)})

    def elaborate(self, platform):
        m = Module()
        d = self.dividers
        clk_out = Signal(name=f"{self.domain}_pll_clk")
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{d.input_mhz:g}",
            a_FREQUENCY_PIN_CLKOP=f"{d.output_mhz:g}",
            # The loop filter settings Lattice's tools and ecppll give every setting.
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1",
            a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA",
            p_CLKI_DIV=d.clki, p_CLKFB_DIV=d.clkfb, p_FEEDBK_PATH="CLKOP",
            p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=d.clkop,
            # The coarse phase: half the divider, the same as every other setting of
            # the output (the feedback path aligns CLKOP with CLKI whatever it is).
            p_CLKOP_CPHASE=(d.clkop - 1) // 2, p_CLKOP_FPHASE=0,
            i_CLKI=self.clk_in, i_CLKFB=clk_out, o_CLKOP=clk_out, o_LOCK=self.locked,
            i_RST=Const(0), i_STDBY=Const(0), i_PHASESEL0=Const(0), i_PHASESEL1=Const(0),
            i_PHASEDIR=Const(1), i_PHASESTEP=Const(1), i_PHASELOADREG=Const(1),
            i_PLLWAKESYNC=Const(0), i_ENCLKOP=Const(0))
        m.d.comb += ClockSignal(self.domain).eq(clk_out)
        m.submodules.reset_sync = ResetSynchronizer(~self.locked | self.reset,
                                                    domain=self.domain)
        return m
