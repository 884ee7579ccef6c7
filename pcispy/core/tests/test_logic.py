# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the shallow shared logic (pcispy/core/logic.py)."""

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from pcispy.core.logic import bottom_bit, top_bit

__all__ = []


def _lowest(x):
    return (x & -x).bit_length() - 1 if x else 0


@pytest.mark.board
@pytest.mark.parametrize("lowest", [False, True])
@pytest.mark.parametrize("width", [1, 5, 46, 48, 64])
def test_top_and_bottom_bit(width, lowest):
    seed = width
    rng = random.Random(seed)
    m = Module()
    value = Signal(width)
    found, index = (bottom_bit if lowest else top_bit)(value)
    found_s, index_s = Signal(), Signal(len(index))
    m.d.comb += [found_s.eq(found), index_s.eq(index)]
    values = [0, 1, (1 << width) - 1, 1 << (width - 1)] + [
        rng.getrandbits(rng.randint(1, width)) for _ in range(200)]

    async def bench(ctx):
        for x in values:
            ctx.set(value, x)
            assert ctx.get(found_s) == (x != 0), f"seed {seed}: {x:#x}"
            expected = _lowest(x) if lowest else max(x.bit_length() - 1, 0)
            assert ctx.get(index_s) == expected, f"seed {seed}: {x:#x}"

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


def _mux_depth(node):
    """Nesting depth of muxes (``SwitchValue``s) in an Amaranth expression."""
    if hasattr(node, "cases"):                      # a Mux
        children, own = [node.test, *(value for _, value in node.cases)], 1
    else:
        children, own = (getattr(node, "operands", None) or getattr(node, "parts", None)
                         or ([node.value] if hasattr(node, "start") else [])), 0
    return own + max((_mux_depth(child) for child in children), default=0)


@pytest.mark.board
@pytest.mark.parametrize("width,depth", [(64, 6), (48, 6), (8, 3)])
def test_top_bit_depth_is_logarithmic(width, depth):
    # The "last assignment wins" chain it replaces was ``width`` muxes deep.
    assert _mux_depth(top_bit(Signal(width))[1]) == depth
    assert _mux_depth(bottom_bit(Signal(width))[1]) == depth
