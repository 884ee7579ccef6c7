# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the live-line expansion (:mod:`pcispy.core.live`) and its cell backend."""

import itertools
from types import SimpleNamespace

import pytest
from amaranth import ClockDomain, Const, Module, Signal
from amaranth.sim import Simulator

from pcispy.core.live import LiveLines, cells_for
from pcispy.core.pads import ad_decision_groups
from pcispy.core.cells import CellModel


def test_cells_follow_the_platform():
    """No platform: the model in logic; a platform's own backend through its hook; a
    platform without the hook is refused in one line, not built with cells synthesis
    would rebuild."""
    assert type(cells_for(None)) is CellModel
    mine = CellModel()
    assert cells_for(SimpleNamespace(get_live_cells=lambda: mine)) is mine
    with pytest.raises(TypeError, match="get_live_cells"):
        cells_for(SimpleNamespace(family="ecp5"))


def test_ad_decision_groups_split_ad():
    assert ad_decision_groups() == 16
    assert ad_decision_groups(4) == 8
    with pytest.raises(ValueError):
        ad_decision_groups(3)


@pytest.mark.parametrize("count", [2, 3, 4])
def test_choices_are_the_cofactor_of_the_lines(count):
    """``choose_now`` picks the cofactor of the lines as they are now (through the
    cells up to three lines, a kept tree beyond), ``choose_later`` the one of the
    previous edge's lines, for every value of the lines."""
    m = Module()
    names = [f"line{k}" for k in range(count)]
    lines = {name: Signal(name=name) for name in names}
    live = LiveLines(m, CellModel(), lines)
    code = {values: index for index, values in enumerate(live.cofactors())}
    width = (len(code) - 1).bit_length()
    now, later = Signal(width), Signal(width)
    def cofactor(values):
        return Const(code[values], width)
    m.d.comb += [now.eq(live.choose_now("now", cofactor)),
                 later.eq(live.choose_later("later", cofactor, like=now))]
    m.domains.pci = ClockDomain("pci")
    sim = Simulator(m)
    sim.add_clock(1e-6, domain="pci")

    async def bench(ctx):
        previous = None
        for values in itertools.product((0, 1), repeat=count):
            for name, value in zip(names, values):
                ctx.set(lines[name], value)
            await ctx.delay(1e-8)
            assert ctx.get(now) == code[values]
            if previous is not None:
                assert ctx.get(later) == code[previous]
            await ctx.tick("pci")
            previous = values
    sim.add_testbench(bench)
    sim.run()
