# SPDX-License-Identifier: BSD-2-Clause
"""The one pseudo-random sequence of pcispy: a 32-bit Galois LFSR, x^32 + x^22 + x^2 + x + 1.

Maximal length (2**32 - 1 states; 0 is a fixed point, so a seed must not be 0). The DMA's
LFSR data pattern, the interrupt generator's random gaps and the simulated system's random
waits and handler delays all step it, in gateware (Amaranth values) and in Python (ints)
alike, so a host can predict what the board produced from the seed alone. The host steps
ints without loading Amaranth.
"""

__all__ = ["LFSR_TAPS", "lfsr_step", "lfsr_advance"]

#: Feedback mask: XORed into the state after a right shift that shifts out a 1.
LFSR_TAPS = 0x8020_0003


def lfsr_step(state):
    """One step: shift right, feed back the bit shifted out (a Python int or an Amaranth
    value of 32 bits)."""
    if isinstance(state, int):
        return (state >> 1) ^ (LFSR_TAPS if state & 1 else 0)
    # Only gateware steps an Amaranth value: the host, stepping ints, never loads Amaranth.
    from amaranth.hdl import Mux
    return (state >> 1) ^ Mux(state[0], LFSR_TAPS, 0)


def lfsr_advance(state, steps):
    """``steps`` steps of :func:`lfsr_step` from ``state``."""
    for _ in range(steps):
        state = lfsr_step(state)
    return state
