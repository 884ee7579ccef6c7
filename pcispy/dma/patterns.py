# SPDX-License-Identifier: BSD-2-Clause
"""DMA data patterns: one declaration per pattern, in gateware (here) and in Python
(:mod:`pcispy.dma.dwords`).

A pattern is a sequence of DWORDs indexed from 0 at the start of a DMA pass: DWORD ``n``
goes to (or is expected from) byte ``4 * n`` of the buffer, whatever the bus width, so a
64-bit transfer carries DWORDs ``2i`` (AD[31:0]) and ``2i + 1`` (AD[63:32]).

- ``COUNTER``: ``seed + n`` (modulo 2**32).
- ``LFSR``: the Galois LFSR of :mod:`pcispy.pci.lfsr` stepped ``n`` times from ``seed``
  (seed 0 is refused: the LFSR would stay at 0).
- ``CONSTANT``: ``seed``.
- ``TIMESTAMP``: the low 32 bits of the free-running clock counter in the clock the DWORD
  is offered to the bus (for DMA latency studies; it cannot be predicted, so it cannot be
  verified).

:class:`PatternGenerator` offers a window of the next :data:`WINDOW` DWORDs and advances by the
number the consumer took; :func:`pcispy.dma.dwords.pattern_dwords` is the Python reference
the host uses to fill or check host memory (without Amaranth).
"""

from amaranth import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from pcispy.core.initiator import WDATA_WINDOW
from pcispy.dma.registers import Pattern
from pcispy.pci.lfsr import lfsr_step

__all__ = ["Pattern", "PatternGenerator", "WINDOW"]

#: DWORDs the generator offers at once: the initiator's write-data window
#: (``pci.initiator.WDATA_WINDOW``, which says why it holds that many).
WINDOW = WDATA_WINDOW


class PatternGenerator(wiring.Component):
    """The next :data:`WINDOW` DWORDs of a pattern, advancing by what was taken.

    Ports:
        pattern (In, Pattern): which sequence.
        seed (In, 32): its seed (see the module docstring).
        restart (In, 1): go back to DWORD 0 (takes effect at the clock edge).
        take (In, 2): DWORDs consumed this clock (0..2).
        timestamp (In, 32): the free-running clock counter, for ``TIMESTAMP``.
        window (Out, ArrayLayout(32, WINDOW)): DWORDs ``n .. n + WINDOW - 1`` (``n`` =
            taken so far).
    """
    def __init__(self):
        super().__init__({
            "pattern": In(Pattern),
            "seed": In(32),
            "restart": In(1),
            "take": In(2),
            "timestamp": In(32),
            "window": Out(data.ArrayLayout(32, WINDOW)),
        })

    def elaborate(self, platform):
        m = Module()
        counter = Signal(32)
        lfsr = Signal(32)
        lfsr_states = [lfsr]
        for _ in range(WINDOW - 1):
            lfsr_states.append(lfsr_step(lfsr_states[-1]))

        with m.If(self.restart):
            m.d.pci += [counter.eq(self.seed), lfsr.eq(self.seed)]
        with m.Else():
            m.d.pci += counter.eq(counter + self.take)
            with m.Switch(self.take):
                for n in (1, 2):
                    with m.Case(n):
                        m.d.pci += lfsr.eq(lfsr_states[n])

        for i in range(WINDOW):
            with m.Switch(self.pattern):
                with m.Case(Pattern.COUNTER):
                    m.d.comb += self.window[i].eq(counter + i)
                with m.Case(Pattern.LFSR):
                    m.d.comb += self.window[i].eq(lfsr_states[i])
                with m.Case(Pattern.CONSTANT):
                    m.d.comb += self.window[i].eq(self.seed)
                with m.Case(Pattern.TIMESTAMP):
                    m.d.comb += self.window[i].eq(self.timestamp)
        return m
