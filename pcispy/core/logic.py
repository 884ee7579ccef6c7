# SPDX-License-Identifier: BSD-2-Clause
"""Shallow combinational building blocks shared by blocks that must meet the PCI clock.

:func:`top_bit` finds the highest set bit of a vector in log2(width) mux levels. Written
as "for every bit: if set, index = bit" (the last assignment wins) the same function
becomes a chain of ``width`` 2:1 muxes, which was the slowest path of the whole board
(64 levels in the interrupt latency histogram, 48 in the spy's gap histogram).
:func:`bottom_bit` is the same for the lowest set bit (the first of the checker rules).
"""

from amaranth.hdl import Cat, Const, Mux

__all__ = ["top_bit", "bottom_bit"]


def top_bit(value, *, lowest=False):
    """``(any, index)`` of ``value``: whether any bit is set, and the index of the highest
    set bit (the lowest with ``lowest``; 0 when none); ``index`` is
    ``ceil(log2(len(value)))`` bits wide."""
    return _find_bit(_padded(value), lowest)


def bottom_bit(value):
    """``(any, index)`` of ``value``: whether any bit is set, and the index of the lowest
    set bit (0 when none); ``index`` is ``ceil(log2(len(value)))`` bits wide."""
    return top_bit(value, lowest=True)


def _padded(value):
    width = 1 << (len(value) - 1).bit_length()
    return Cat(value, Const(0, width - len(value))) if width > len(value) else value


def _find_bit(value, lowest):
    if len(value) == 1:
        return value[0], Const(0, 0)
    half = len(value) // 2
    low_any, low_index = _find_bit(value[:half], lowest)
    high_any, high_index = _find_bit(value[half:], lowest)
    # The high half's index gains a top bit of 1, the low half's a top bit of 0.
    if lowest:
        index = Mux(low_any | ~high_any, Cat(low_index, 0), Cat(high_index, 1))
    else:
        index = Mux(high_any, Cat(high_index, 1), Cat(low_index, 0))
    return low_any | high_any, index
