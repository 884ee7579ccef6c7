# SPDX-License-Identifier: BSD-2-Clause
"""The interrupt generator's reload modes and its random gaps, as the host predicts them.

The generator (:mod:`.generator`) draws each gap of ``random`` mode from a 32-bit
maximal-length Galois LFSR (:mod:`pcispy.pci.lfsr`), stepped 32 times per draw so that
successive draws share no bits: gap ``k`` (k = 1, 2, ...) is ``min_gap + (r_k * span >> 32)``
with ``r_k = lfsr_draw(r_(k-1))``, ``r_0 = seed`` and ``span = max_gap - min_gap + 1``.
:func:`random_gaps` is that definition; the gateware is derived from :func:`lfsr_draw` (as a
matrix over GF(2)), so the host can predict every gap from the seed.

Plain Python (no Amaranth): the host's interrupt feature and the command line load it
without the gateware.
"""

from pcispy.irq.registers import IRQ
from pcispy.pci.lfsr import lfsr_advance

__all__ = ["MODES", "lfsr_draw", "random_gaps"]

#: Mode name -> ``irq.ctrl.mode`` code, from the register map.
MODES = {name: code for code, name in IRQ.register("ctrl").field("mode").values.items()}


def lfsr_draw(state):
    """32 steps of the LFSR (:mod:`pcispy.pci.lfsr`): a fresh 32-bit pseudo-random word
    from the previous one."""
    return lfsr_advance(state, 32)


def random_gaps(seed, min_gap, max_gap, count):
    """The first ``count`` gaps (clocks between raises) of ``random`` mode."""
    span = max_gap - min_gap + 1
    gaps, state = [], seed
    for _ in range(count):
        state = lfsr_draw(state)
        gaps.append(min_gap + ((state * span) >> 32))
    return gaps
