# SPDX-License-Identifier: BSD-2-Clause
"""What every transport offers the board driver: 32-bit register access to the board's
BARs, bulk reads, waiting for the board's interrupt, and DMA-able host memory.

Driver and feature code is plain ``async def`` that awaits only these methods, so the same
code runs under asyncio on hardware and under cocotb in simulation (DESIGN.md, "Host").
"""

from abc import ABC, abstractmethod

__all__ = ["Transport", "DmaBuffer"]


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

    @abstractmethod
    async def wait_irq(self, timeout_s):
        """Wait for the board's interrupt; return False on timeout."""

    @abstractmethod
    async def dma_buffer(self, size):
        """A :class:`DmaBuffer` of at least ``size`` bytes the board may DMA into."""

    async def sleep(self, seconds):
        """Let ``seconds`` pass on the board's side (simulated time in simulation), e.g.
        while a DMA runs, instead of polling the bus with register reads."""
        import asyncio
        await asyncio.sleep(seconds)

    async def io_dma_buffer(self, size):
        """A :class:`DmaBuffer` the board reaches with I/O commands (``bus_address`` is an
        I/O address). Only the simulated host answers I/O as a target; others refuse."""
        from pcispy.host.errors import TransportError
        raise TransportError(f"the {self.kind} transport has no host I/O space the board "
                             "can master into (I/O DMA works in simulation only)")

    def describe(self):
        """A dict describing the transport (for ``pcispy info`` and reports)."""
        return {"transport": self.kind}
