# SPDX-License-Identifier: BSD-2-Clause
"""ECP5 I/O-cell flip-flops of the PCI pins.

:class:`IOCellFlops` instantiates the ECP5 primitives of a pin itself rather than through
``io.FFBuffer``: the pin buffer (``BB``/``IB``), an output register (``OFS1P3DX``) and a
tristate register (``OFS1P3BX``: preset, so RST# floats the pin at once) that nextpnr packs
into the I/O cell (``DATAMUX_OREG = IOLDO``, ``TRIMUX_TSREG = IOLTO``). Nothing but the
register sits between a register and its pin, so the active-low lines are inverted
before them.

The input, two ways:

- **registered** (the lines read a clock later): the I/O cell's input register
  (``IFS1P3DX``) behind the input delay Lattice specifies for a zero hold time against a
  primary clock (``DELAYG``, ``DEL_MODE = SCLK_ZEROHOLD``). PCI gives an input no hold time
  at the pin (Th = 0 ns: the next driver may change it as the clock edge passes), while
  the clock reaches the register through the global network, later than the data would
  without the delay.
- **live** (the handshake lines, which a core also reads in the clock they arrive): the
  ECP5 I/O cell passes either its input register or the pin to the fabric, not both
  (nextpnr refuses to pack an ``IFS1P3DX`` whose pin has other loads), so the sampled
  value is a fabric flip-flop fed straight from the pin and the live value the pin itself;
  their paths are input paths of the build report, whose hold is checked there.

Only for a real platform: the simulated pads keep their fabric flip-flops
(:class:`~pcispy.core.pads.PCIPads` chooses).
"""

from amaranth import ClockSignal, Const, Module, ResetSignal, Signal
from amaranth.hdl import Instance
from amaranth.lib import io, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["IOCellFlops"]


class IOCellFlops(wiring.Component):
    """Registered I/O of one (multi-bit) pin port, with the live pin value as well.

    Ports (inside-level: ``port.invert`` is applied here):
        i (Out, width): the pin value sampled at the previous edge (the I/O cell's input
            register when ``live`` is False, else a fabric register).
        live (Out, width): only with ``live``: the pin value now (unregistered).
        o (In, width): the value the pin shows during the next clock (bidirectional only).
        oe (In, 1): drive the pin during the next clock (bidirectional only).

    Parameters:
        direction: ``"i"`` or ``"io"``.
        port: a platform port (``platform.request(..., dir="-")`` subsignal).
        domain: the clock domain of every register; its reset floats the pin at once
            (and clears a live line's fabric sample to inside-level 0).
        live: offer the unregistered pin value (a handshake line); else the input is
            registered in the I/O cell behind the zero-hold delay.
    """
    def __init__(self, direction, port, *, domain="pci", live=True):
        self.direction = io.Direction(direction)
        self.port = port
        self.domain = domain
        self.live_value = live
        width = len(port)
        members = {"i": Out(width), **({"live": Out(width)} if live else {})}
        if self.direction is io.Direction.Bidir:
            members.update(o=In(width), oe=In(1))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        clock = ClockSignal(self.domain)
        reset = ResetSignal(self.domain)
        pins = self.port.io
        invert = self.port.invert
        raw = Signal(len(self.port), name="raw")        # pin level now
        bidir = self.direction is io.Direction.Bidir
        for bit in range(len(self.port)):
            inverted = bool(invert[bit])
            if bidir:
                data = Signal(name=f"o_q{bit}")
                tristate = Signal(name=f"t_q{bit}")
                m.submodules[f"o_ff{bit}"] = Instance(
                    "OFS1P3DX", i_SCLK=clock, i_SP=Const(1), i_CD=reset,
                    i_D=self.o[bit] ^ inverted, o_Q=data)
                m.submodules[f"t_ff{bit}"] = Instance(
                    "OFS1P3BX", i_SCLK=clock, i_SP=Const(1), i_PD=reset,
                    i_D=~self.oe, o_Q=tristate)
                m.submodules[f"buf{bit}"] = Instance(
                    "BB", i_I=data, i_T=tristate, o_O=raw[bit], io_B=pins[bit])
            else:
                m.submodules[f"buf{bit}"] = Instance("IB", i_I=pins[bit], o_O=raw[bit])
        mask = sum(int(bool(b)) << n for n, b in enumerate(invert))
        if self.live_value:
            m.d.comb += self.live.eq(raw ^ mask)
            m.d[self.domain] += self.i.eq(self.live)
            return m
        sampled = Signal(len(self.port), name="sampled")
        for bit in range(len(self.port)):
            delayed = Signal(name=f"delayed{bit}")
            m.submodules[f"delay{bit}"] = Instance(
                "DELAYG", p_DEL_MODE="SCLK_ZEROHOLD", i_A=raw[bit], o_Z=delayed)
            # The I/O cell's registers share one set/reset input: the input register
            # takes the domain's reset as the output registers do, and comes out of it
            # holding the line's idle level (inside-level 0, as the fabric sample does):
            # preset for an active-low line, clear otherwise.
            kind, idle = ("IFS1P3BX", {"i_PD": reset}) if invert[bit] else \
                ("IFS1P3DX", {"i_CD": reset})
            m.submodules[f"i_ff{bit}"] = Instance(
                kind, i_SCLK=clock, i_SP=Const(1), i_D=delayed, o_Q=sampled[bit], **idle)
        m.d.comb += self.i.eq(sampled ^ mask)
        return m
