# SPDX-License-Identifier: BSD-2-Clause
"""The board core: it converts to Verilog with pin-level ports for 32- and 64-bit buses."""

import gc
import re

import pytest
from amaranth.back import verilog

from pcispy.pci.bus import bus_lines
from pcispy.board.top import PCIBoard

pytestmark = pytest.mark.target


def board_ports(board):
    ports = []
    for port in board.ports.values():
        ports += [port.i, port.o, port.oe]
    return ports


@pytest.mark.parametrize("width", [32, pytest.param(64, marks=pytest.mark.heavy)])
def test_board_converts_with_pin_ports(width):
    board = PCIBoard(width, scratch_verilog=True)
    text = verilog.convert(board, ports=board_ports(board), name="pcispy_board")
    header = text[text.index("module pcispy_board("):]
    header = header[:header.index(");")]
    declared = set(re.findall(r"\b(\w+__(?:o|oe|i))\b", header))
    expected = set()
    for name in bus_lines(width):
        expected |= {f"{name}__i", f"{name}__o", f"{name}__oe"}
    assert declared == expected
    assert "pcispy_ram" in text                         # the scratch RAM is the Verilog one
    assert ("ad_hi__o" in declared) == (width == 64)


@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_board_without_spy_has_no_bar1():
    board = PCIBoard(32, spy_addr_bits=0)
    assert board.bars[1] is None
    assert PCIBoard(32, spy_addr_bits=10).bars[1].size == 16 << 10
    del board
    gc.collect()                # report the unelaborated board within this test


@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_bad_width_is_refused():
    with pytest.raises(ValueError, match="32 or 64"):
        PCIBoard(48)
    gc.collect()


def test_merge_bus_drivers_ors_owners_and_single_lines():
    from amaranth import Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.wiring import Out
    from amaranth.sim import Simulator

    from pcispy.pci.bus import PCIBusSignature
    from pcispy.core.pads import PCIPads, simulation_ports
    from pcispy.board.top import merge_bus_drivers

    ports = simulation_ports(32)
    pads = PCIPads(32, ports)
    cores = [wiring.Signature({"bus": Out(PCIBusSignature(32))}).create() for _ in range(2)]
    inta = Signal()
    m = Module()
    m.submodules.pads = pads
    merge_bus_drivers(m, pads.bus, cores, lines=[("inta", inta, 1)])
    sim = Simulator(m)
    sim.add_clock(30e-9, domain="pci")

    async def testbench(ctx):
        ctx.set(cores[1].bus.ad.o, 0x5A5A)
        ctx.set(cores[1].bus.ad.oe, 1)
        ctx.set(cores[1].bus.req.oe, 1)             # REQ# deasserted by its owner
        ctx.set(cores[0].bus.req.o, 1)              # not owned: ignored (REQ# is gated)
        ctx.set(inta, 1)
        ctx.set(ports["ad"].i, 0x1234)
        await ctx.tick("pci")
        assert ctx.get(ports["ad"].o) == 0x5A5A
        assert ctx.get(ports["req"].oe) == 1 and ctx.get(ports["req"].o) == 1
        assert ctx.get(ports["inta"].oe) == 1 and ctx.get(ports["inta"].o) == 0
        assert ctx.get(cores[0].bus.ad.i) == ctx.get(cores[1].bus.ad.i) == 0x1234
    sim.add_testbench(testbench)
    sim.run()


def test_merge_bus_drivers_leaves_joined_enables_to_the_pads():
    from amaranth import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import Out
    from amaranth.sim import Simulator

    from pcispy.pci.bus import PCIBusSignature
    from pcispy.core.pads import PCIPads, simulation_ports
    from pcispy.board.top import merge_bus_drivers

    ports = simulation_ports(32)
    pads = PCIPads(32, ports, ad_drivers=2)
    cores = [wiring.Signature({"bus": Out(PCIBusSignature(32))}).create() for _ in range(2)]
    m = Module()
    m.submodules.pads = pads
    enables = merge_bus_drivers(m, pads.bus, cores, joined_by_pads={"ad": pads.ad_oe_by})
    sim = Simulator(m)
    sim.add_clock(30e-9, domain="pci")

    async def testbench(ctx):
        ctx.set(cores[1].bus.ad.o, 0x5A5A)
        ctx.set(cores[1].bus.ad.oe, 1)
        ctx.set(cores[0].bus.trdy.oe, 1)
        # AD's enables reach the pads one per core (in the order of ``cores``), not ORed
        # in front of them; other lines as before.
        assert ctx.get(pads.ad_oe_by) == 0b10 and ctx.get(pads.bus.ad.oe) == 0
        assert ctx.get(enables["ad"]) == 1 and ctx.get(pads.bus.trdy.oe) == 1
        await ctx.tick("pci")
        assert ctx.get(ports["ad"].o) == 0x5A5A and ctx.get(ports["ad"].oe) == 0xFFFF_FFFF
        # AD's words and the handshake lines are ORed without their enables (a core
        # presents 0 where it does not drive: PRESENTED_GATED, the formal jobs'
        # released_zero); other lines still gate them.
        ctx.set(cores[0].bus.ad.o, 0x0101)
        ctx.set(cores[0].bus.trdy.o, 1)             # (breaking the rule: ORed as it is)
        ctx.set(cores[0].bus.trdy.oe, 0)
        ctx.set(cores[1].bus.trdy.oe, 1)
        ctx.set(cores[0].bus.req.o, 1)              # not owned: ignored
        ctx.set(cores[1].bus.req.oe, 1)
        await ctx.tick("pci")
        assert ctx.get(ports["ad"].o) == 0x5B5B
        assert ctx.get(ports["trdy"].oe) == 1 and ctx.get(ports["trdy"].o) == 0
        assert ctx.get(ports["req"].o) == 1
    sim.add_testbench(testbench)
    sim.run()
