# SPDX-License-Identifier: BSD-2-Clause
"""A base for stand-in boards in the host tests: BAR0 is the test's, the rest answers
nothing (configuration space reads 0, no interrupt, no DMA, sleeps return at once)."""

from pcispy.host.errors import TransportError
from pcispy.host.transports.base import Transport

__all__ = ["StandInBoard"]


class StandInBoard(Transport):
    """Subclasses give ``read32`` and ``write32`` (BAR0's registers)."""
    kind = "stand-in"

    async def sleep(self, seconds):
        pass

    async def config_read(self, offset):
        return 0

    async def config_write(self, offset, value):
        pass

    async def wait_irq(self, timeout_s):
        return False

    async def dma_buffer(self, size):
        raise TransportError("the stand-in board has no DMA")
