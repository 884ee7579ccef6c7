# SPDX-License-Identifier: BSD-2-Clause
"""The ``sim`` transport: the host tool's view of a board in the simulated system.

Register and window accesses become PIO by the host bridge (the behavioural initiator) at
the addresses enumeration assigned to the board's BARs; DMA buffers are carved from the
host bridge's memory and read back through its backdoor. Nothing here knows a register:
the board driver (pcispy.host.board) and the features run unchanged on top of it.
"""

import asyncio

import cocotb
from cocotb.triggers import First, select

from pcispy.pci.bus import Command
from pcispy.host.errors import TransportError
from pcispy.host.transports.base import BlockTiming, DmaBuffer, Transport
from pcispy.sim.system import BOARD_SLOT

__all__ = ["SimTransport", "SimDmaBuffer", "IO_DMA_BASE", "BLOCK_CHUNK"]

#: Bytes one host-bridge command of a block transfer moves at most (the behavioural
#: initiator stages data in its buffer, 16 Ki words deep; a chunk fits at either width).
BLOCK_CHUNK = 32 * 1024

#: I/O address where the simulated host memory answers the board's I/O DMA (clear of the
#: I/O BARs firmware assigns from 0x1000 and of the legacy devices below 0x400).
IO_DMA_BASE = 0x0100_0000


#: Bytes of host memory one backdoor access moves at most: a buffer of megabytes is read or
#: written in parts, so that a command whose client went away ends between two.
BACKDOOR_CHUNK = 16 * 1024


class SimDmaBuffer(DmaBuffer):
    """A slice of the simulated host memory, reached through its backdoor. ``live`` (a
    function, or None) is called before each part of an access (:data:`BACKDOOR_CHUNK`):
    the transport's check that its client is still there."""

    def __init__(self, host_memory, bus_address, size, *, storage=None, live=None):
        super().__init__(bus_address, size)
        self.host_memory = host_memory
        #: Byte address of the buffer in the host memory's RAM (the bus address, except
        #: for I/O buffers).
        self.storage = bus_address if storage is None else storage
        self._live = live or (lambda: None)

    def _parts(self, offset, length):
        """``(start, length)`` of the parts of an access: split at multiples of
        :data:`BACKDOOR_CHUNK` of the storage address, so that no storage word (up to 8
        bytes wide) is written by two parts."""
        address, end = self.storage + offset, self.storage + offset + length
        while address < end:
            step = min(end, (address // BACKDOOR_CHUNK + 1) * BACKDOOR_CHUNK) - address
            self._live()
            yield address, step
            address += step

    async def read(self, offset, length):
        self._check(offset, length)
        return b"".join([await self.host_memory.backdoor_read(address, size)
                         for address, size in self._parts(offset, length)])

    async def write(self, offset, data):
        self._check(offset, len(data))
        data = bytes(data)
        base = self.storage + offset
        for address, size in self._parts(offset, len(data)):
            await self.host_memory.backdoor_write(address, data[address - base:
                                                                address - base + size])

    def _check(self, offset, length):
        if offset < 0 or offset + length > self.size:
            raise ValueError(f"DMA buffer access [{offset}, {offset + length}) outside "
                             f"its {self.size} bytes")


class SimTransport(Transport):
    """PIO through the simulated host bridge to the board's BARs.

    Parameters:
        system: a started :class:`pcispy.sim.api.SimSystem`.
        bars: ``{bar index: {"kind": "memory"|"io", "address": int, "size": int}}`` as
            enumeration assigned them.
        session: the name of the session the board lives in (:mod:`pcispy.sim.session`),
            None for a board started for one command.
        hangup: what says that nobody waits for the feature any more (its client pressed
            Ctrl-C): ``is_set()`` and ``wait()`` as a cocotb ``Event`` has them (an Event
            will do). Once it is set, every access and wait raises
            ``asyncio.CancelledError``, as a Ctrl-C interrupts a feature on hardware, and
            a wait ends at once. Each access runs whole, so the host bridge is left
            between commands.
    """
    kind = "sim"

    def __init__(self, system, bars, *, session=None, hangup=None):
        self.system = system
        self.bars = bars
        self.session = session
        self.hangup = hangup
        self._next_dma = system.dma_region[0]

    def _live(self):
        """Raise ``asyncio.CancelledError`` once ``hangup`` is set."""
        if self.hangup is not None and self.hangup.is_set():
            raise asyncio.CancelledError("the command's client went away")

    async def _until(self, trigger):
        """Await ``trigger`` (a cocotb trigger), or less when ``hangup`` is set meanwhile."""
        self._live()
        if self.hangup is None:
            return await trigger
        fired = await First(trigger, self.hangup.wait())
        self._live()
        return fired

    def _address(self, bar, offset, size):
        self._live()
        try:
            info = self.bars[bar]
        except KeyError:
            raise TransportError(f"the board has no BAR{bar}") from None
        if offset < 0 or offset + size > info["size"]:
            raise TransportError(f"BAR{bar} access [{offset:#x}, {offset + size:#x}) outside "
                                 f"its {info['size']:#x} bytes")
        return info["kind"], info["address"] + offset

    def _check(self, result, what):
        self._live()
        if not result.ok:
            status = result.status.name.lower()
            hint = ""
            if status == "master_abort" and self.system.config.core is None:
                # Nothing claimed an access to the board's BARs: a board in passive mode.
                hint = ("; the board does not answer (passive mode? `pcispy sim reset` "
                        "pulses RST#, which ends it)")
            raise TransportError(f"{what}: the host bridge reports {status}{hint}")
        return result

    async def read32(self, bar, offset):
        kind, address = self._address(bar, offset, 4)
        if kind == "io":
            return self._check(await self.system.host.io_read(address, 4),
                               f"I/O read at {address:#x}").value
        result = self._check(await self.system.host.mem_read(address, 4),
                             f"memory read at {address:#x}")
        return int.from_bytes(result.data, "little")

    async def write32(self, bar, offset, value):
        kind, address = self._address(bar, offset, 4)
        if kind == "io":
            self._check(await self.system.host.io_write(address, value, 4),
                        f"I/O write at {address:#x}")
        else:
            self._check(await self.system.host.mem_write(address, value.to_bytes(4, "little")),
                        f"memory write at {address:#x}")

    async def config_read(self, offset):
        self._live()
        result = self._check(await self.system.board_config().config_read(BOARD_SLOT, offset),
                             f"configuration read at {offset:#x}")
        return result.value

    async def config_write(self, offset, value):
        self._live()
        self._check(await self.system.board_config().config_write(BOARD_SLOT, offset, value),
                    f"configuration write at {offset:#x}")

    async def read_block(self, bar, offset, count):
        kind, address = self._address(bar, offset, 4 * count)
        if kind == "io":
            return await super().read_block(bar, offset, count)
        result = self._check(await self.system.host.mem_read(
            address, 4 * count, command=Command.MEM_READ_MULTIPLE),
            f"memory read of {count} words at {address:#x}")
        data = result.data
        return [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]

    async def write_block(self, bar, offset, data, *, burst=0, width=32):
        # The host bridge generates the PIO as a CPU's write buffer would: transactions of
        # at most ``burst`` data phases (1: no write aggregation).
        self._check_block(offset, len(data))
        kind, address = self._address(bar, offset, len(data))
        if kind == "io":
            return await super().write_block(bar, offset, data, burst=burst, width=width)
        timing = None
        for start in range(0, len(data), BLOCK_CHUNK):
            chunk = data[start:start + BLOCK_CHUNK]
            result = self._check(await self.system.host.mem_write(
                address + start, chunk, burst=burst, width=width),
                f"memory write of {len(chunk)} bytes at {address + start:#x}")
            timing = self._timing(result) if timing is None else timing.add(self._timing(result))
        return timing or BlockTiming(clocks=0, transactions=0, data_phases=0, retries=0,
                                     disconnects=0)

    async def read_block_timed(self, bar, offset, length, *, burst=0, width=32):
        # Reads longer than one data phase use Memory Read Multiple (a prefetching bridge).
        self._check_block(offset, length)
        kind, address = self._address(bar, offset, length)
        if kind == "io":
            return await super().read_block_timed(bar, offset, length, burst=burst, width=width)
        command = Command.MEM_READ if burst == 1 else Command.MEM_READ_MULTIPLE
        parts, timing = [], None
        for start in range(0, length, BLOCK_CHUNK):
            size = min(BLOCK_CHUNK, length - start)
            result = self._check(await self.system.host.mem_read(
                address + start, size, burst=burst, width=width, command=command),
                f"memory read of {size} bytes at {address + start:#x}")
            parts.append(result.data)
            timing = self._timing(result) if timing is None else timing.add(self._timing(result))
        return b"".join(parts), timing or BlockTiming(clocks=0, transactions=0, data_phases=0,
                                                       retries=0, disconnects=0)

    @staticmethod
    def _timing(result):
        return BlockTiming(clocks=result.clocks, first_data_clocks=result.latency,
                           transactions=result.transactions, data_phases=result.phases,
                           retries=result.retries, disconnects=result.disconnects)

    async def wait_irq(self, timeout_s):
        self._live()
        if self.hangup is None:
            return await self.system.wait_interrupt(timeout_s)
        waiting = cocotb.start_soon(self.system.wait_interrupt(timeout_s))
        try:
            await self._until(waiting)
        finally:
            waiting.cancel()             # (a task that ended is left as it is)
        return waiting.result()

    async def dma_buffer(self, size):
        self._live()
        start, end = self.system.dma_region
        address = (self._next_dma + 4095) & ~4095
        if address + size > end:
            raise TransportError(f"the simulated host memory has no room for a {size}-byte "
                                 f"DMA buffer ({end - start} bytes in all)")
        self._next_dma = address + size
        return SimDmaBuffer(self.system.host_memory, address, size, live=self._live)

    async def sleep(self, seconds):
        # The system's bus clock lets the clocks pass on one timer and one edge: a capture's
        # status polls, a stats interval or a check's duration are thousands of clocks,
        # and ClockCycles would wake Python at every one of them.
        self._live()
        passing = self.system.clocks(max(1, round(seconds * self.system.clock_mhz * 1e6)))
        if self.hangup is None:
            await passing
        else:
            await select(passing, self.hangup.wait())
            self._live()

    async def io_dma_buffer(self, size):
        # The host memory also answers I/O commands in one window, mapped onto a buffer
        # of its RAM; a new I/O buffer moves the window (one at a time).
        buffer = await self.dma_buffer(size)
        window = 1 << max(2, (size - 1).bit_length())
        await self.system.host_memory.set_windows(io=(IO_DMA_BASE, window),
                                                  io_ram_offset=buffer.bus_address)
        return SimDmaBuffer(self.system.host_memory, IO_DMA_BASE, size,
                            storage=buffer.bus_address, live=self._live)

    def describe(self):
        return {"transport": "sim", "profile": self.system.profile_name,
                "seed": self.system.seed, "clock_mhz": self.system.clock_mhz,
                "bus_width": self.system.config.width, "session": self.session,
                "bridge": (self.system.profile.bridge or "transparent"
                           if self.system.config.bridge else None),
                "bars": {str(k): v for k, v in self.bars.items()}}
