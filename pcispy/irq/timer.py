# SPDX-License-Identifier: BSD-2-Clause
"""The free-running cycle counter and atomic 64-bit reads over 32-bit registers.

Shand's timer (PRL RR-19 §2.1): a counter of bus clocks that never stops and never
reloads, so any two readings, by any agent, subtract to an exact interval. Other blocks of
the board may share it through :attr:`CycleCounter.now`.

A 64-bit value read as two 32-bit words can tear: between reading the low and the high
word the low word may carry into the high one. :class:`AtomicRead64` removes the race the
usual way: reading the low word latches the high word of the *same* clock, and the high
register returns that latched word.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["CycleCounter", "AtomicRead64"]


class CycleCounter(wiring.Component):
    """A free-running counter of clocks, zero after reset.

    Ports:
        now (Out, width): clocks since reset, modulo ``2**width``.

    Parameters:
        width: counter width in bits (default 64: 17 000 years at 33 MHz).
        init: value after reset (default 0; tests start near a carry with it).
    """
    def __init__(self, width=64, init=0):
        super().__init__({"now": Out(width, init=init)})

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.now.eq(self.now + 1)
        return m


class AtomicRead64(wiring.Component):
    """Presents a 64-bit value as a low and a high 32-bit register; reading low latches high.

    Contract with the register bank: the bank samples :attr:`lo` in the same clock in which
    it pulses :attr:`read_lo` (the clock the read address is presented).

    Ports:
        value (In, 64): the live value.
        read_lo (In, 1): the low register is being read in this clock.
        lo (Out, 32): ``value[0:32]``, live.
        hi (Out, 32): ``value[32:64]`` as it was in the last clock ``read_lo`` was high.
    """
    def __init__(self):
        super().__init__({
            "value": In(64), "read_lo": In(1),
            "lo": Out(32), "hi": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.lo.eq(self.value[:32])
        with m.If(self.read_lo):
            m.d.sync += self.hi.eq(self.value[32:])
        return m
