# SPDX-License-Identifier: BSD-2-Clause
"""The PCI pads: one-clock I/O flip-flops, polarity, s/t/s release, open drain, parity."""

import gc

import pytest
from amaranth.sim import Simulator

from pcispy.pci.bus import parity
from pcispy.core.pads import PCIPads, simulation_ports

pytestmark = pytest.mark.target


def run(bench, width=32, **kwargs):
    ports = simulation_ports(width)
    dut = PCIPads(width, ports, **kwargs)
    sim = Simulator(dut)
    sim.add_clock(30e-9, domain="pci")

    async def testbench(ctx):
        # Undriven pins float high (pull-ups).
        for name, port in ports.items():
            ctx.set(port.i, (1 << len(port.i)) - 1)
        await ctx.tick("pci")
        await bench(ctx, dut, ports)
    sim.add_testbench(testbench)
    sim.run()


def test_outputs_leave_one_clock_later_inverted():
    async def bench(ctx, dut, ports):
        ctx.set(dut.bus.trdy.o, 1)
        ctx.set(dut.bus.trdy.oe, 1)
        ctx.set(dut.bus.ad.o, 0x1234_5678)
        ctx.set(dut.bus.ad.oe, 1)
        assert ctx.get(ports["trdy"].oe) == 0 and ctx.get(ports["ad"].oe) == 0
        await ctx.tick("pci")
        assert ctx.get(ports["trdy"].oe) == 1 and ctx.get(ports["trdy"].o) == 0  # low = asserted
        assert ctx.get(ports["ad"].oe) == 0xFFFF_FFFF and ctx.get(ports["ad"].o) == 0x1234_5678
    run(bench)


def test_sustained_tristate_release_drives_high_for_one_clock():
    async def bench(ctx, dut, ports):
        ctx.set(dut.bus.devsel.o, 1)
        ctx.set(dut.bus.devsel.oe, 1)
        await ctx.tick("pci")
        ctx.set(dut.bus.devsel.o, 0)
        ctx.set(dut.bus.devsel.oe, 0)
        await ctx.tick("pci")
        # Released: deasserted (pin high) and still driven for this clock...
        assert ctx.get(ports["devsel"].oe) == 1 and ctx.get(ports["devsel"].o) == 1
        await ctx.tick("pci")
        # ...then floating.
        assert ctx.get(ports["devsel"].oe) == 0
        # AD is plain tri-state: it floats at once.
        ctx.set(dut.bus.ad.oe, 1)
        await ctx.tick("pci")
        ctx.set(dut.bus.ad.oe, 0)
        await ctx.tick("pci")
        assert ctx.get(ports["ad"].oe) == 0
    run(bench)


def test_withheld_sustained_tristate_line_is_driven_deasserted_not_asserted():
    """A handshake line's value is not gated by its enable (the cores present it 0 where
    they do not own it), but it is by ``drive_allowed``: a line owned when passive mode
    withholds the pins gets its clock of deasserted drive, whatever the core presents."""
    async def bench(ctx, dut, ports):
        ctx.set(dut.bus.stop.o, 1)
        ctx.set(dut.bus.stop.oe, 1)
        await ctx.tick("pci")
        assert ctx.get(ports["stop"].oe) == 1 and ctx.get(ports["stop"].o) == 0
        ctx.set(dut.drive_allowed, 0)
        await ctx.tick("pci")
        assert ctx.get(ports["stop"].oe) == 1 and ctx.get(ports["stop"].o) == 1
        await ctx.tick("pci")
        assert ctx.get(ports["stop"].oe) == 0
    run(bench)


def test_core_gated_lines_are_left_to_their_core():
    """``drive_allowed`` low withholds the pins the pads gate (REQ#) but not C/BE#, whose
    master gates its own enable (``CORE_GATED_LINES``)."""
    async def bench(ctx, dut, ports):
        ctx.set(dut.bus.cbe.o, 0b0110)
        ctx.set(dut.bus.cbe.oe, 1)
        ctx.set(dut.bus.req.o, 1)
        ctx.set(dut.bus.req.oe, 1)
        ctx.set(dut.drive_allowed, 0)
        await ctx.tick("pci")
        assert ctx.get(ports["cbe"].oe) == 0b1111 and ctx.get(ports["req"].oe) == 0
        ctx.set(dut.bus.cbe.oe, 0)
        await ctx.tick("pci")
        assert ctx.get(ports["cbe"].oe) == 0
    run(bench)


def test_open_drain_only_pulls_low():
    async def bench(ctx, dut, ports):
        ctx.set(dut.bus.serr.oe, 1)
        ctx.set(dut.bus.serr.o, 0)
        await ctx.tick("pci")
        assert ctx.get(ports["serr"].oe) == 0
        ctx.set(dut.bus.serr.o, 1)
        await ctx.tick("pci")
        assert ctx.get(ports["serr"].oe) == 1 and ctx.get(ports["serr"].o) == 0
    run(bench)


def test_inputs_registered_and_live():
    async def bench(ctx, dut, ports):
        ctx.set(ports["frame"].i, 0)                 # FRAME# asserted on the pin
        ctx.set(ports["ad"].i, 0xDEAD_BEEF)
        assert ctx.get(dut.live.frame) == 1          # unregistered: at once
        assert ctx.get(dut.bus.frame.i) == 0         # registered: after the edge
        assert ctx.get(dut.bus.ad.i) == 0xFFFF_FFFF
        await ctx.tick("pci")
        assert ctx.get(dut.bus.frame.i) == 1 and ctx.get(dut.bus.ad.i) == 0xDEAD_BEEF
        ctx.set(ports["gnt"].i, 0)
        assert ctx.get(dut.live.gnt) == 1
    run(bench)


@pytest.mark.parametrize("width", [32, 64])
def test_parity_generation_follows_driven_ad(width):
    async def bench(ctx, dut, ports):
        value, cbe = 0x0F0F_0007, 0b0110
        ctx.set(dut.bus.ad.o, value)
        ctx.set(dut.bus.ad.oe, 1)
        await ctx.tick("pci")                        # AD on the pins from here
        ctx.set(ports["cbe"].i, cbe)                 # the initiator's byte enables
        ctx.set(dut.bus.ad.oe, 0)
        await ctx.tick("pci")                        # PAR covers that clock
        assert ctx.get(ports["par"].oe) == 1
        assert ctx.get(ports["par"].o) == parity(value, cbe)
        await ctx.tick("pci")
        assert ctx.get(ports["par"].oe) == 0         # AD was not driven: PAR floats
        # Corruption inverts it.
        ctx.set(dut.bus.ad.oe, 1)
        ctx.set(dut.corrupt_par, 1)
        await ctx.tick("pci")
        ctx.set(dut.corrupt_par, 0)
        await ctx.tick("pci")
        assert ctx.get(ports["par"].o) == 1 - parity(value, cbe)
    run(bench, width)


@pytest.mark.parametrize("width", [32, 64])
def test_ad_is_driven_while_any_joined_enable_is_set(width):
    """With ``ad_drivers`` the pads OR the cores' AD enables themselves: AD (and PAR the
    clock after) is driven for each one alone, and not while passive mode withholds it."""
    halves = ["ad"] + (["ad_hi"] if width == 64 else [])

    async def bench(ctx, dut, ports):
        for half in halves:
            ctx.set(getattr(dut.bus, half).o, 0x0F0F_0007)
        for owners in (0b01, 0b10, 0b11, 0b00):
            for half in halves:
                ctx.set(getattr(dut, f"{half}_oe_by"), owners)
            await ctx.tick("pci")
            for half in halves:
                assert ctx.get(ports[half].oe) == (0xFFFF_FFFF if owners else 0), (half, owners)
            await ctx.tick("pci")
            assert ctx.get(ports["par"].oe) == (1 if owners else 0), owners
        ctx.set(dut.drive_allowed, 0)
        for half in halves:
            ctx.set(getattr(dut, f"{half}_oe_by"), 0b11)
        await ctx.tick("pci")
        for half in halves:
            assert ctx.get(ports[half].oe) == 0, half
        await ctx.tick("pci")
        assert ctx.get(ports["par"].oe) == 0
    run(bench, width, ad_drivers=2)


def test_a_masters_ad_decision_joins_the_other_cores_word_and_enable():
    """With ``master_ad`` the pads take the master's AD as a decision between two words:
    the pins show the word ``take_high`` (every pin group's copy alike) chooses ORed with
    the target's (``bus.ad.o``), driven while the chosen enable or the target's
    (``ad_oe_by``) is set, and PAR covers what was driven. Passive mode's ``drive_allowed`` withholds the master's enables; the
    target's comes gated by the target itself, so the pads pass it as it is."""
    async def bench(ctx, dut, ports):
        decision = dut.master_ad
        ctx.set(decision.high, 0x1111_0000)
        ctx.set(decision.low, 0x0000_2222)
        ctx.set(dut.bus.ad.o, 0x0300_0000)
        ctx.set(ports["cbe"].i, 0b1111)
        copies = len(decision.take_high)
        cases = [  # take_high, high_oe, low_oe, target's enable -> word, driven
            (1, 1, 0, 0, 0x1311_0000, 1),
            (0, 1, 0, 0, 0x0300_2222, 0),
            (0, 0, 1, 0, 0x0300_2222, 1),
            (1, 0, 1, 1, 0x1311_0000, 1),
            (1, 0, 1, 0, 0x1311_0000, 0),
        ]
        for take_high, high_oe, low_oe, target_oe, word, driven in cases:
            ctx.set(decision.take_high, -take_high & ((1 << copies) - 1))
            ctx.set(decision.high_oe, high_oe)
            ctx.set(decision.low_oe, low_oe)
            ctx.set(dut.ad_oe_by, target_oe)
            await ctx.tick("pci")
            case = (take_high, high_oe, low_oe, target_oe)
            assert ctx.get(ports["ad"].o) == word, case
            assert ctx.get(ports["ad"].oe) == (0xFFFF_FFFF if driven else 0), case
            ctx.set(dut.ad_oe_by, 0)
            ctx.set(decision.high_oe, 0)
            ctx.set(decision.low_oe, 0)
            await ctx.tick("pci")
            assert ctx.get(ports["par"].oe) == driven, case
            if driven:
                assert ctx.get(ports["par"].o) == parity(word, 0b1111), case
        ctx.set(dut.drive_allowed, 0)
        ctx.set(decision.take_high, (1 << copies) - 1)
        ctx.set(decision.high_oe, 1)
        ctx.set(decision.low_oe, 1)
        await ctx.tick("pci")
        assert ctx.get(ports["ad"].oe) == 0
        ctx.set(dut.ad_oe_by, 1)
        await ctx.tick("pci")
        assert ctx.get(ports["ad"].oe) == 0xFFFF_FFFF
    run(bench, 32, ad_drivers=1, master_ad=True)


@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_a_masters_ad_decision_needs_one_other_core_on_a_32_bit_bus():
    for width, drivers in ((32, 2), (32, 0), (64, 1)):
        with pytest.raises(ValueError, match="joins one other core's AD enable on a 32-bit"):
            PCIPads(width, simulation_ports(width), ad_drivers=drivers, master_ad=True)
    with pytest.raises(ValueError, match="no master_ad"):
        PCIPads(32, simulation_ports(32, passive=True), master_ad=True)
    gc.collect()


@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_more_ad_drivers_than_a_copy_can_join_is_a_clear_error():
    with pytest.raises(ValueError, match="at most 2 AD enables"):
        PCIPads(32, simulation_ports(32), ad_drivers=3)
    gc.collect()


def test_parity_check_against_previous_clock():
    async def bench(ctx, dut, ports):
        ctx.set(ports["ad"].i, 0x0000_0003)
        ctx.set(ports["cbe"].i, 0b0001)
        await ctx.tick("pci")
        ctx.set(ports["par"].i, 1)                   # 3 ones: even parity needs PAR = 1
        assert ctx.get(dut.par_error) == 0
        ctx.set(ports["par"].i, 0)
        assert ctx.get(dut.par_error) == 1
    run(bench)


@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_missing_port_is_a_clear_error():
    ports = simulation_ports(32)
    del ports["stop"]
    with pytest.raises(ValueError, match="stop"):
        PCIPads(32, ports)
    gc.collect()                # report the unelaborated object within this test


def test_fast_decode_offers_address_lines_unregistered():
    ports = simulation_ports(32)
    dut = PCIPads(32, ports, fast_decode=True)
    sim = Simulator(dut)
    sim.add_clock(30e-9, domain="pci")

    async def testbench(ctx):
        ctx.set(ports["ad"].i, 0x1234_5678)
        ctx.set(ports["cbe"].i, 0b0111)
        ctx.set(ports["idsel"].i, 1)
        assert ctx.get(dut.decode.ad) == 0x1234_5678 and ctx.get(dut.decode.cbe) == 0b0111
        assert ctx.get(dut.decode.idsel) == 1
        assert ctx.get(dut.bus.ad.i) == 0
        await ctx.tick("pci")
        assert ctx.get(dut.bus.ad.i) == 0x1234_5678
        # The AD output still leaves through a flip-flop.
        ctx.set(dut.bus.ad.o, 0xAAAA_5555)
        ctx.set(dut.bus.ad.oe, 1)
        assert ctx.get(ports["ad"].oe) == 0
        await ctx.tick("pci")
        assert ctx.get(ports["ad"].o) == 0xAAAA_5555 and ctx.get(ports["ad"].oe) == 0xFFFF_FFFF
    sim.add_testbench(testbench)
    sim.run()
