# SPDX-License-Identifier: BSD-2-Clause
"""A clock domain from an ECP5 PLL (``EHXPLLL``), its dividers computed here.

The PLL multiplies its input ``CLKI`` by ``CLKFB_DIV / CLKI_DIV`` (the phase detector
compares ``CLKI / CLKI_DIV`` with the fed-back output over ``CLKFB_DIV``); with the
feedback taken from ``CLKOP`` the output is ``f_in * CLKFB_DIV / CLKI_DIV`` and the VCO
runs ``CLKOP_DIV`` times faster than it. The ranges the dividers must keep to
(:data:`LIMITS_MHZ`, :data:`DIVIDER_MAX`) are the ECP5 family data sheet's sysCLOCK PLL
figures as Project Trellis' ``ecppll`` applies them; :func:`pll_dividers` searches them
and refuses a frequency they cannot make, before anything is built.

A second output, ``CLKOS``, can give the same frequency shifted in phase (the SDRAM's
clock pin, docs/sdram.md): with ``CLKOS_DIV = CLKOP_DIV`` the two outputs differ by the
difference of their phase settings, counted in VCO periods (``CPHASE``) and eighths of one
(``FPHASE``), so the shift goes in steps of ``1 / (8 * CLKOP_DIV)`` of the output's period
(:func:`pll_phase`).
"""

from dataclasses import dataclass

from amaranth.hdl import ClockSignal, Const, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["LIMITS_MHZ", "DIVIDER_MAX", "PHASE_STEPS_PER_VCO", "CPHASE_MAX", "PLLDividers",
           "PLLError", "PLLPhase", "pll_dividers", "pll_phase", "ECP5PLL"]

#: ``{what: (lowest, highest)}`` in MHz: the input clock, the phase detector's input
#: (``CLKI / CLKI_DIV``), the VCO, the output.
LIMITS_MHZ = {"input": (8.0, 400.0), "pfd": (3.125, 400.0), "vco": (400.0, 800.0),
              "output": (3.125, 400.0)}
#: The largest value of each divider (the smallest is 1).
DIVIDER_MAX = {"clki": 128, "clkfb": 80, "clkop": 128}
#: ``FPHASE`` steps in a VCO period (its values 0..7), and the largest ``CPHASE`` (a
#: 7-bit field).
PHASE_STEPS_PER_VCO = 8
CPHASE_MAX = 127


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


@dataclass(frozen=True)
class PLLPhase:
    """A secondary output's phase after ``CLKOP`` (the same divider): ``steps`` eighths of
    a VCO period, of ``8 * clkop`` in the output's period."""
    steps: int
    clkop: int

    @property
    def fraction(self):
        """The shift in output periods (0 <= fraction < 1)."""
        return self.steps / (PHASE_STEPS_PER_VCO * self.clkop)

    @property
    def degrees(self):
        """The shift in degrees of the output's period."""
        return 360 * self.fraction

    def settings(self, primary_cphase):
        """``(CPHASE, FPHASE)`` of the output, given ``CLKOP``'s ``CPHASE`` (its
        ``FPHASE`` 0): whole VCO periods on top of the primary's, and the eighths."""
        return (primary_cphase + self.steps // PHASE_STEPS_PER_VCO,
                self.steps % PHASE_STEPS_PER_VCO)


def _primary_cphase(dividers):
    # Half the divider, as Lattice's tools and ecppll set every CLKOP (the feedback path
    # aligns CLKOP with CLKI whatever it is).
    return (dividers.clkop - 1) // 2


def pll_phase(dividers, fraction):
    """The :class:`PLLPhase` nearest to ``fraction`` of an output period (0 <= fraction
    < 1) for the output of ``dividers``: within half a step (``1 / (16 * CLKOP_DIV)`` of
    a period). Raises :class:`PLLError` for a fraction outside [0, 1) or a ``CPHASE``
    beyond its field."""
    if not 0 <= fraction < 1:
        raise PLLError(f"ECP5 PLL: a phase of {fraction:g} periods is outside 0..1")
    per_period = PHASE_STEPS_PER_VCO * dividers.clkop
    phase = PLLPhase(round(fraction * per_period) % per_period, dividers.clkop)
    cphase, fphase = phase.settings(_primary_cphase(dividers))
    if cphase > CPHASE_MAX:
        raise PLLError(f"ECP5 PLL: CPHASE {cphase} is beyond {CPHASE_MAX}")
    error = min(abs(phase.fraction - fraction), 1 - abs(phase.fraction - fraction))
    assert error <= 0.5 / per_period + 1e-12, (fraction, phase)
    return phase


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
    flip-flop of the domain runs on a clock still settling. With ``phase_domain``, also
    that domain's clock from ``CLKOS``: the same frequency, ``phase`` of a period later
    (as :func:`pll_phase` rounds it: :attr:`phase`); that domain has no reset of its own.

    Ports: clk_in (In, 1): the reference clock (e.g. ``ClockSignal("sync")`` from the
    board's oscillator). reset (In, 1): also holds the domain in reset (any domain).
    locked (Out, 1): the PLL's LOCK output (asynchronous to every domain).

    Parameters: input_mhz, output_mhz (checked by :func:`pll_dividers`, which raises
    :class:`PLLError` before anything is built); domain: the name of the clock domain
    whose clock and reset it drives (the caller defines the domain, in a module that
    contains every user of it); phase_domain (None: CLKOS unused), phase (in periods,
    0 <= phase < 1).

    Place and route times the domain against ``output_mhz`` with no constraint of its
    own: nextpnr derives it from the input clock's constraint and the dividers ("Derived
    frequency constraint of 110.0 MHz" in its log; a constraint on the output net would
    name a net that synthesis renames).
    """
    def __init__(self, input_mhz, output_mhz, domain, phase_domain=None, phase=0.0):
        self.dividers = pll_dividers(input_mhz, output_mhz)
        self.domain = domain
        self.phase_domain = phase_domain
        #: The :class:`PLLPhase` of ``phase_domain``'s clock (None without one).
        self.phase = pll_phase(self.dividers, phase) if phase_domain else None
        super().__init__({"clk_in": In(1), "reset": In(1), "locked": Out(1)})

    def elaborate(self, platform):
        m = Module()
        d = self.dividers
        clk_out = Signal(name=f"{self.domain}_pll_clk")
        primary_cphase = _primary_cphase(d)
        secondary = {}
        if self.phase_domain:
            clk_shifted = Signal(name=f"{self.phase_domain}_pll_clk")
            cphase, fphase = self.phase.settings(primary_cphase)
            secondary = dict(
                a_FREQUENCY_PIN_CLKOS=f"{d.output_mhz:g}", p_OUTDIVIDER_MUXB="DIVB",
                p_CLKOS_ENABLE="ENABLED", p_CLKOS_DIV=d.clkop, p_CLKOS_CPHASE=cphase,
                p_CLKOS_FPHASE=fphase, o_CLKOS=clk_shifted, i_ENCLKOS=Const(0))
            m.d.comb += ClockSignal(self.phase_domain).eq(clk_shifted)
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
            p_CLKOP_CPHASE=primary_cphase, p_CLKOP_FPHASE=0,
            i_CLKI=self.clk_in, i_CLKFB=clk_out, o_CLKOP=clk_out, o_LOCK=self.locked,
            i_RST=Const(0), i_STDBY=Const(0), i_PHASESEL0=Const(0), i_PHASESEL1=Const(0),
            i_PHASEDIR=Const(1), i_PHASESTEP=Const(1), i_PHASELOADREG=Const(1),
            i_PLLWAKESYNC=Const(0), i_ENCLKOP=Const(0), **secondary)
        m.d.comb += ClockSignal(self.domain).eq(clk_out)
        m.submodules.reset_sync = ResetSynchronizer(~self.locked | self.reset,
                                                    domain=self.domain)
        return m
