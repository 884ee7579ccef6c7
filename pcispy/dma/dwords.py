# SPDX-License-Identifier: BSD-2-Clause
"""The DWORDs of the DMA data patterns as the host computes them, to fill or check host
memory: :func:`pattern_dwords`, the Python reference of the gateware's
:class:`~pcispy.dma.patterns.PatternGenerator` (pcispy/dma/patterns.py defines each
pattern). Plain Python (no Amaranth): the host loads it without the gateware.
"""

from pcispy.dma.registers import Pattern
from pcispy.pci.lfsr import lfsr_step

__all__ = ["pattern_dwords"]


def pattern_dwords(pattern, seed, count, start=0):
    """DWORDs ``start .. start + count - 1`` of ``pattern`` with ``seed``, as a list."""
    pattern = Pattern(pattern)
    seed &= 0xFFFF_FFFF
    if pattern is Pattern.COUNTER:
        return [(seed + n) & 0xFFFF_FFFF for n in range(start, start + count)]
    if pattern is Pattern.CONSTANT:
        return [seed] * count
    if pattern is Pattern.LFSR:
        if seed == 0:
            raise ValueError("the LFSR pattern needs a non-zero seed")
        state = seed
        for _ in range(start):
            state = lfsr_step(state)
        out = []
        for _ in range(count):
            out.append(state)
            state = lfsr_step(state)
        return out
    raise ValueError("the timestamp pattern depends on bus timing and cannot be computed")
