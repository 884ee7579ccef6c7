# SPDX-License-Identifier: BSD-2-Clause
"""The passive build (every PCI pin an input: the spy alone), and passive mode of the
active build (``id.mode.passive``): set over the bus, it takes hold once the board's own
write has ended; from then on the board drives no line at all (configuration cycles go
unanswered, a DMA run is refused, a run already waiting for the bus gets no GNT#, a
raised interrupt leaves INTA# released) while its registers stay reachable through the
side channel, which clears it."""

import pytest

from pcispy.pci.bus import Command, Termination, bus_lines
from pcispy.core.pads import simulation_ports
from pcispy.board.registers import REGISTER_MAP
from pcispy.sidechannel.protocol import Space
from pcispy.core.tests.pci_host import BAR_ADDRESSES, enumerate_board, simulate
from pcispy.board.top import PCIBoard

pytestmark = pytest.mark.board

BAR0 = BAR_ADDRESSES[0]


def _field(name, field):
    address, register = REGISTER_MAP[name]
    spec = next(f for f in register.fields if f.name == field)
    return address, spec


class _Local:
    """The side channel's port of the board, driven directly."""
    def __init__(self, ctx, port):
        self.ctx, self.port = ctx, port

    async def access(self, name, value=None):
        """Read (``value`` None) or write BAR0 register ``name``; the read's value."""
        address, _ = REGISTER_MAP[name]
        error, data = await self.request(Space.BAR0, address // 4, value)
        assert not error, f"the local request to {name} was refused"
        if value is not None:
            # The bank's block takes the write into a register first: its fields change
            # a clock after the request is acknowledged.
            await self.ctx.tick("pci")
        return data

    async def request(self, space, addr, value=None):
        """One request to DWORD ``addr`` of ``space``: ``(r_error, r_data)``."""
        ctx, port = self.ctx, self.port
        ctx.set(port.space, space)
        ctx.set(port.addr, addr)
        ctx.set(port.write, value is not None)
        ctx.set(port.w_data, value or 0)
        ctx.set(port.valid, 1)
        for _ in range(50):
            _, _, taken = await ctx.tick("pci").sample(port.ready)
            if taken:
                break
        else:
            raise AssertionError(f"the local request to {space.name}:{addr:#x} was never taken")
        ctx.set(port.valid, 0)
        for _ in range(50):
            if ctx.get(port.r_valid):
                return ctx.get(port.r_error), ctx.get(port.r_data)
            await ctx.tick("pci")
        raise AssertionError(f"no answer to the local request to {space.name}:{addr:#x}")


def _drives_nothing(ctx, board):
    return not any(ctx.get(board.ports[name].oe) for name in bus_lines(board.width))


def test_passive_build_is_a_spy_without_a_pci_function():
    """A passive build (every pin an input) has no configuration space, target or DMA
    master: configuration, memory and I/O cycles to it master-abort, and its spy and
    checker see them; the side channel reaches its registers and refuses configuration
    space (not built). Its identity says passive, and passive mode is always in force. Of
    the interrupt unit it has the cycle counter only."""
    board = PCIBoard(32, simulation_ports(32, passive=True), spy_addr_bits=6)
    assert board.passive_build
    _, config_passive = _field("id.config", "passive")
    _, passive_on = _field("id.mode", "passive_on")
    _, any_broken = _field("check.status", "any")

    async def bench(host, pins, ctx):
        local = _Local(ctx, board.local)
        await host.idle(4)
        results = [await host.transaction(Command.CONFIG_READ, 0, idsel=True),
                   await host.write(BAR0, [0x1234]),
                   await host.transaction(Command.IO_READ, BAR_ADDRESSES[3])]
        assert [r.termination for r in results] == [Termination.MASTER_ABORT] * 3
        await host.idle(4)          # the spy's counters see the last transaction end
        assert (await local.access("id.config")) >> config_passive.lsb & 1
        assert (await local.access("id.mode")) >> passive_on.lsb & 1
        assert ctx.get(board.indicators.passive)
        assert await local.access("spy.transactions") == 3
        assert await local.access("spy.master_aborts") == 3
        assert not (await local.access("check.status")) >> any_broken.lsb & 1
        assert await local.request(Space.CONFIG, 0) == (1, 0)   # no configuration space
        # A DMA run asked for over the side channel moves nothing: there is no master.
        await local.access("dma.length", 64)
        await local.access("dma.control", 1)
        # Of the interrupt unit only the cycle counter is built: an armed generator
        # raises nothing (nothing could pull INTA#), the clock runs.
        await local.access("irq.delay", 8)
        await local.access("irq.command", 1)                 # arm: one-shot
        before = await local.access("irq.now_lo")
        await host.idle(20)
        assert await local.access("spy.transactions") == 3
        assert (await local.access("irq.status"), await local.access("irq.raised")) == (0, 0)
        assert await local.access("irq.now_lo") - before > 20

    simulate(board, bench)


def test_passive_mode_silences_the_board_and_the_side_channel_clears_it():
    board = PCIBoard(32, exerciser_size=256, spy_addr_bits=6)
    mode_address, passive = _field("id.mode", "passive")
    _, passive_on = _field("id.mode", "passive_on")

    async def bench(host, pins, ctx):
        local = _Local(ctx, board.local)
        await enumerate_board(host, command=0x0147)           # + Bus Master, SERR#
        assert (await host.config_read(0)) & 0xFFFF == 0x5C15
        write = await host.write(BAR0 + mode_address, [1 << passive.lsb])
        assert write.termination == Termination.COMPLETION and write.moved == 1
        await host.idle(3)              # the posted write reaches the register, then holds
        assert ctx.get(board.indicators.passive)
        # Nothing answers any more: configuration, memory and I/O cycles master-abort, and
        # over them the board drives no line at all.
        for transaction in (host.transaction(Command.CONFIG_READ, 0, idsel=True),
                            host.read(BAR0 + mode_address, 1, cmd=Command.MEM_READ),
                            host.write(BAR_ADDRESSES[2], [5])):
            result = await transaction
            assert result.termination == Termination.MASTER_ABORT
            assert _drives_nothing(ctx, board)
        # Not SERR# either, on an address parity error (the target gates it itself).
        result = await host.write(BAR_ADDRESSES[2], [6], corrupt_addr_par=True)
        assert result.termination == Termination.MASTER_ABORT
        assert not any(clock["serr"] for clock in result.clocks)
        mode = await local.access("id.mode")
        assert mode >> passive.lsb & 1 and mode >> passive_on.lsb & 1
        # A DMA run is refused (the master never sees GNT# or Bus Master), an interrupt
        # raised now leaves INTA# released.
        await local.access("dma.length", 64)
        await local.access("dma.control", 1)
        status = await local.access("dma.status")
        _, err_master = _field("dma.status", "err_master")
        assert status >> err_master.lsb & 1
        await local.access("irq.delay", 8)
        await local.access("irq.command", 1)                 # arm: one-shot
        for _ in range(20):
            await host.idle()
            assert _drives_nothing(ctx, board)
        assert (await local.access("irq.status")) & 1        # pending, not on the pin
        # Cleared over the side channel: the board answers (and pulls INTA#) again.
        await local.access("id.mode", 0)
        await host.idle(2)
        assert not ctx.get(board.indicators.passive)
        assert (await host.config_read(0)) & 0xFFFF == 0x5C15
        assert ctx.get(board.ports["inta"].oe)

    simulate(board, bench)


def test_passive_mode_withholds_gnt_from_a_waiting_run_and_loses_nothing():
    """A DMA run waiting for the bus when passive mode is asked for gets no GNT#: with
    GNT# given (parked on the board) it starts nothing while passive, and runs once passive
    mode is cleared (to an address nobody claims: one transaction, master-aborted)."""
    board = PCIBoard(32, exerciser_size=256, spy_addr_bits=6)
    _, passive = _field("id.mode", "passive")
    status_bits = {name: _field("dma.status", name)[1].lsb
                   for name in ("busy", "done", "master_abort")}

    async def bench(host, pins, ctx):
        local = _Local(ctx, board.local)

        async def status():
            value = await local.access("dma.status")
            return {name: value >> lsb & 1 for name, lsb in status_bits.items()}

        await enumerate_board(host, command=0x0047)           # + Bus Master
        await local.access("dma.addr_lo", 0x4000_0000)        # (no BAR of the board)
        await local.access("dma.length", 16)
        await local.access("dma.control", 1)
        await host.idle(4)
        assert ctx.get(pins.value["req"]) and not ctx.get(pins.value["frame"])
        await local.access("id.mode", 1 << passive.lsb)
        host._set("gnt", 1)                                   # GNT# asserted from now on
        for _ in range(30):
            await host.idle()
            assert not ctx.get(pins.value["frame"])
        assert ctx.get(board.indicators.passive) and _drives_nothing(ctx, board)
        assert await status() == {"busy": 1, "done": 0, "master_abort": 0}
        assert await local.access("dma.transactions") == 0
        # Cleared: the run takes the bus it was given.
        await local.access("id.mode", 0)
        for _ in range(10):
            if ctx.get(pins.value["frame"]):
                break
            await host.idle()
        else:
            raise AssertionError("the run did not start once passive mode was cleared")
        await host.idle(10)
        assert await status() == {"busy": 0, "done": 1, "master_abort": 1}
        assert await local.access("dma.transactions") == 1
        host._set("gnt", 0, 0)

    simulate(board, bench)
