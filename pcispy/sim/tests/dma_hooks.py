# SPDX-License-Identifier: BSD-2-Clause
"""A master hook routine for the DMA example core (examples/verilog_dma/), as a user
would write one: named in a core description as ``"dma_hooks.py:there_and_back"`` (or
given as a :class:`~pcispy.sim.core_description.MasterHook` from Python), run by
``pcispy sim-test``'s ``master`` check with a :class:`~pcispy.sim.coretest.MasterRun`."""

__all__ = ["there_and_back", "DMA_ADDR", "DMA_LEN", "DMA_RAM", "DMA_CTRL", "DMA_STATUS"]

#: The core's DMA registers in BAR0 (examples/verilog_dma/pci_dma.v).
DMA_ADDR, DMA_LEN, DMA_RAM, DMA_CTRL, DMA_STATUS = 0x100, 0x104, 0x108, 0x10C, 0x110
_START, _TO_BUS, _DONE = 1, 2, 1


async def _dma(run, ram_offset, to_bus):
    """One DMA of the whole buffer between it and the RAM from ``ram_offset``; waits for
    done and requires no error."""
    await run.write(0, DMA_STATUS, 0x1F)
    await run.write(0, DMA_ADDR, run.buffer)
    await run.write(0, DMA_LEN, run.buffer_bytes)
    await run.write(0, DMA_RAM, ram_offset)
    await run.write(0, DMA_CTRL, _START | (_TO_BUS if to_bus else 0))
    while not (status := await run.read(0, DMA_STATUS)) & _DONE:
        await run.wait(64)
    assert status == _DONE, f"DMA status {status:#x} ({'to' if to_bus else 'from'} the bus)"


async def there_and_back(run):
    """The RAM's first ``buffer_bytes`` to the host buffer (Memory Write bursts), then the
    buffer back into the RAM behind them (Memory Read Multiple bursts): both halves must
    then hold the same bytes."""
    await _dma(run, 0, to_bus=True)
    await _dma(run, run.buffer_bytes, to_bus=False)
    ram = run.bars[1]
    back = await run.system.host.mem_read(ram, 2 * run.buffer_bytes, burst=16)
    assert back.ok, back
    first, second = back.data[:run.buffer_bytes], back.data[run.buffer_bytes:]
    assert first == second, "the RAM's copy differs from what it wrote"
    return {"round_trip_bytes": run.buffer_bytes}
