# SPDX-License-Identifier: BSD-2-Clause
"""What every transport offers the board driver: 32-bit register access to the board's
BARs, bulk reads, waiting for the board's interrupt, and DMA-able host memory.

Driver and feature code is plain ``async def`` that awaits only these methods, so the same
code runs under asyncio on hardware and under cocotb in simulation (docs/architecture.md,
"How the pieces talk").
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional

from pcispy.host.errors import TransportError

__all__ = ["Transport", "DmaBuffer", "BlockTiming"]


@dataclass
class BlockTiming:
    """What a block transfer (:meth:`Transport.write_block`, :meth:`Transport.read_block_timed`)
    cost on the bus, as far as the transport can see it; ``None`` where it cannot (a CPU
    doing PIO on hardware sees no bus clocks: the caller then times the transfer with the
    board's own cycle counter).

    Attributes:
        clocks: bus clocks from the first arbitration to the end of the last transaction.
        first_data_clocks: clocks from the first address phase to its first data phase.
        transactions: address phases (retried attempts included).
        data_phases: data phases that moved data.
        retries: attempts the target retried.
        disconnects: transactions the target ended early (with or without data).
    """
    clocks: Optional[int] = None
    first_data_clocks: Optional[int] = None
    transactions: Optional[int] = None
    data_phases: Optional[int] = None
    retries: Optional[int] = None
    disconnects: Optional[int] = None

    def add(self, other):
        """The sum of two parts of one transfer (the first part's first-data latency)."""
        def total(a, b):
            return None if a is None or b is None else a + b
        return BlockTiming(
            clocks=total(self.clocks, other.clocks),
            first_data_clocks=self.first_data_clocks,
            transactions=total(self.transactions, other.transactions),
            data_phases=total(self.data_phases, other.data_phases),
            retries=total(self.retries, other.retries),
            disconnects=total(self.disconnects, other.disconnects))


class DmaBuffer(ABC):
    """A region of host memory the board can reach by DMA.

    Attributes:
        bus_address: the address the board puts on the bus to reach byte 0.
        size: its size in bytes.
    """
    def __init__(self, bus_address, size):
        self.bus_address = bus_address
        self.size = size

    @abstractmethod
    async def read(self, offset, length):
        """The bytes ``[offset, offset + length)`` as the host sees them."""

    @abstractmethod
    async def write(self, offset, data):
        """Store ``data`` at ``offset`` (before a DMA read by the board)."""


class Transport(ABC):
    """The interface of a transport (sim, sysfs, uart, ...). Subclasses implement it."""

    #: A short name for reports ("sim", "sysfs", "uart").
    kind = "abstract"

    #: A simulated host's interrupt service (the host bridge's responder acknowledges and
    #: writes checkpoints itself), or None: on hardware the feature services interrupts.
    interrupt_service = None

    @abstractmethod
    async def read32(self, bar, offset):
        """Read the 32-bit word at byte ``offset`` of BAR ``bar``."""

    @abstractmethod
    async def write32(self, bar, offset, value):
        """Write the 32-bit word ``value`` at byte ``offset`` of BAR ``bar``."""

    @abstractmethod
    async def config_read(self, offset):
        """Read the 32-bit word at byte ``offset`` (0..252) of the board's config space."""

    @abstractmethod
    async def config_write(self, offset, value):
        """Write the 32-bit word ``value`` at byte ``offset`` (0..252) of the board's config
        space (e.g. Command bits, Cache Line Size, Latency Timer)."""

    async def read_block(self, bar, offset, count):
        """Read ``count`` consecutive 32-bit words; transports override this with bursts."""
        return [await self.read32(bar, offset + 4 * i) for i in range(count)]

    async def write_block(self, bar, offset, data, *, burst=0, width=32):
        """PIO-write ``data`` (bytes, a multiple of 4) at byte ``offset`` of memory BAR
        ``bar``; return a :class:`BlockTiming`.

        ``burst`` is the most data phases one transaction may carry (1: every store its own
        transaction, i.e. no write aggregation; 0: no limit); ``width`` 64 asks for 64-bit
        data phases. Transports that cannot shape the bus traffic (a CPU's stores) take
        them as hints. This default stores word by word and knows no bus timing.
        """
        self._check_block(offset, len(data))
        for i in range(0, len(data), 4):
            await self.write32(bar, offset + i, int.from_bytes(data[i:i + 4], "little"))
        return BlockTiming()

    async def read_block_timed(self, bar, offset, length, *, burst=0, width=32):
        """PIO-read ``length`` bytes (a multiple of 4) at byte ``offset`` of memory BAR
        ``bar``; return ``(data, BlockTiming)``. ``burst`` and ``width`` as for
        :meth:`write_block`."""
        self._check_block(offset, length)
        words = await self.read_block(bar, offset, length // 4)
        return b"".join(w.to_bytes(4, "little") for w in words), BlockTiming()

    @staticmethod
    def _check_block(offset, length):
        if offset % 4 or length % 4:
            raise ValueError(f"block transfers move whole DWORDs: offset {offset:#x}, "
                             f"length {length} bytes")

    @abstractmethod
    async def wait_irq(self, timeout_s):
        """Wait for the board's interrupt; return False on timeout."""

    @abstractmethod
    async def dma_buffer(self, size):
        """A :class:`DmaBuffer` of at least ``size`` bytes the board may DMA into."""

    async def sleep(self, seconds):
        """Let ``seconds`` pass on the board's side (simulated time in simulation), e.g.
        while a DMA runs, instead of polling the bus with register reads."""
        # asyncio loads where a feature runs on hardware, not with the command line
        import asyncio
        await asyncio.sleep(seconds)

    async def io_dma_buffer(self, size):
        """A :class:`DmaBuffer` the board reaches with I/O commands (``bus_address`` is an
        I/O address). Only the simulated host answers I/O as a target; others refuse."""
        raise TransportError(f"the {self.kind} transport has no host I/O space the board "
                             "can master into (I/O DMA works in simulation only)")

    def describe(self):
        """A dict describing the transport (for ``pcispy info`` and reports)."""
        return {"transport": self.kind}
