# SPDX-License-Identifier: BSD-2-Clause
"""ECP5 I/O-cell flip-flops for the pins a core also reads unregistered.

``io.FFBuffer`` puts a line's input, output and output-enable flip-flops into the pin's
I/O cell, but it hides the unregistered pin value. The handshake lines need both (the
pads' ``live`` paths), so :class:`IOCellFlops` instantiates the ECP5 primitives itself:
the pin buffer (``BB``/``IB``), an output register (``OFS1P3DX``) and a tristate register
(``OFS1P3BX``: preset, so RST# floats the pin at once) that nextpnr packs into the I/O
cell (``DATAMUX_OREG = IOLDO``, ``TRIMUX_TSREG = IOLTO``). Nothing but the register sits
between a register and its pin, so the active-low lines are inverted before them.

The input is different: the ECP5 I/O cell passes either its input register or the pin
to the fabric, not both (nextpnr refuses to pack an ``IFS1P3DX`` whose pin has other
loads). A live line's sampled value is therefore a fabric flip-flop fed straight from
the pin (one wire: the build report lists it among the input paths).

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
        i (Out, width): the pin value sampled at the previous edge (fabric register).
        live (Out, width): the pin value now (unregistered).
        o (In, width): the value the pin shows during the next clock (bidirectional only).
        oe (In, 1): drive the pin during the next clock (bidirectional only).

    Parameters:
        direction: ``"i"`` or ``"io"``.
        port: a platform port (``platform.request(..., dir="-")`` subsignal).
        domain: the clock domain of every register; its reset clears the sampled value
            (inside-level 0) and floats the pin at once.
    """
    def __init__(self, direction, port, *, domain="pci"):
        self.direction = io.Direction(direction)
        self.port = port
        self.domain = domain
        width = len(port)
        members = {"i": Out(width), "live": Out(width)}
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
        m.d.comb += self.live.eq(raw ^ mask)
        m.d[self.domain] += self.i.eq(self.live)
        return m
