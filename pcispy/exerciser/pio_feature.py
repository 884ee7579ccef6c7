# SPDX-License-Identifier: BSD-2-Clause
"""Programmed I/O to the exerciser window, and the ``pcispy pio`` command.

:func:`pio` writes a seeded random block into BAR2 (the exerciser's scratch RAM) with the
transport's block write, reads it back with its timed block read, and compares. The
transport reports what each direction cost on the bus (:class:`BlockTiming`): in
simulation the host bridge's own counters (clocks, first-data latency, transactions,
retries, disconnects); a transport that cannot see the bus (a CPU doing the PIO) leaves
them unknown, and the feature then times each direction with the board's free-running
cycle counter (``irq.now``) instead, which costs the two register reads around it.

Throughput is bytes over the bus clocks at the board's clock (33 and 66 MHz are 30 and
15 ns clocks). What is measured follows the exerciser target's current settings (see
``pcispy target``), so a slow or quirky target shows in the figures.
"""

import random

from pcispy.host.board import Board
from pcispy.host.command import CliCommand, parse_size, run_feature
from pcispy.host.errors import PcispyError

__all__ = ["pio", "PioCommand", "EXERCISER_BAR", "MAX_BURST", "format_result"]

#: The exerciser's memory window.
EXERCISER_BAR = 2
#: Longest burst a PIO may ask of the host bridge (data phases per transaction).
MAX_BURST = 4096


def _check_arguments(size, burst, width, offset):
    if width not in (32, 64):
        raise PcispyError(f"width {width}: the bus is 32 or 64 bits wide")
    if size <= 0 or size % 4:
        raise PcispyError(f"size {size}: PIO moves whole DWORDs (a positive multiple of 4 bytes)")
    if offset < 0 or offset % 4:
        raise PcispyError(f"offset {offset}: a DWORD-aligned offset into the window is needed")
    if not 0 <= burst <= MAX_BURST:
        raise PcispyError(f"burst {burst}: give 1..{MAX_BURST} data phases, or 0 for unlimited")


async def _timed(board, transport, operation):
    """Run ``operation`` (returning ``(value, BlockTiming)``); when the transport cannot
    time it, take the clocks from the board's cycle counter around it."""
    before = await board.read64("irq.now")
    value, timing = await operation()
    if timing.clocks is None:
        timing.clocks = await board.read64("irq.now") - before
    return value, timing


def _direction(size, timing, rate):
    seconds = timing.clocks / rate if timing.clocks else 0
    return {
        "mbps": round(size / seconds / 1e6, 3) if seconds else 0.0,
        "clocks": timing.clocks, "first_data_clocks": timing.first_data_clocks,
        "transactions": timing.transactions, "data_phases": timing.data_phases,
        "retries": timing.retries, "disconnects": timing.disconnects,
    }


async def pio(transport, *, size=64 * 1024, burst=64, width=32, offset=0, seed=1):
    """Write ``size`` bytes of seeded random data at ``offset`` of BAR2 in transactions of
    at most ``burst`` data phases (0: unlimited; 1: no write aggregation), read them back
    and compare. ``width`` 64 asks for 64-bit data phases (64-bit boards; the lower half
    of the window answers them). Returns MB/s each way and the bus figures of each
    direction under ``write`` and ``read``."""
    _check_arguments(size, burst, width, offset)
    board = Board(transport)
    identity = await board.identify(drives_bus="pcispy pio")
    bus_width = 64 if identity["config.bus_width"] else 32
    if width > bus_width:
        raise PcispyError(f"width {width}: the board sits on a {bus_width}-bit bus")
    window = transport.bars.get(EXERCISER_BAR) if hasattr(transport, "bars") else None
    if window is not None:
        # On a 64-bit board the upper half of the window answers 32-bit only.
        usable = window["size"] // 2 if width == 64 else window["size"]
        if offset + size > usable:
            raise PcispyError(f"{size} bytes at offset {offset:#x} do not fit the "
                              f"{usable}-byte exerciser window" +
                              (" (its 64-bit half)" if width == 64 else ""))
    rate = identity["clock_hz"]
    data = random.Random(seed).randbytes(size)

    async def write():
        return None, await transport.write_block(EXERCISER_BAR, offset, data, burst=burst,
                                                 width=width)

    async def read():
        return await transport.read_block_timed(EXERCISER_BAR, offset, size, burst=burst,
                                                width=width)

    _, write_timing = await _timed(board, transport, write)
    back, read_timing = await _timed(board, transport, read)
    bad = [i // 4 for i in range(0, size, 4) if back[i:i + 4] != data[i:i + 4]]
    writes, reads = _direction(size, write_timing, rate), _direction(size, read_timing, rate)
    return {
        "bytes": size, "burst": burst, "width": width, "offset": offset, "seed": seed,
        "clock_mhz": identity["clock_mhz"],
        "write_mbps": writes["mbps"], "read_mbps": reads["mbps"],
        "read_first_data_clocks": reads["first_data_clocks"],
        "write_first_data_clocks": writes["first_data_clocks"],
        "errors": len(bad), "first_error": bad[0] if bad else None,
        "write": writes, "read": reads,
    }


class PioCommand(CliCommand):
    name = "pio"
    help = "host PIO writes then reads to the exerciser window (BAR2): data check, MB/s " \
           "each way, first-data latency, bus cycle counts"
    examples = (
        "pcispy pio --size 64K --burst 64",
        "pcispy pio --size 4K --burst 1 --json",
        "pcispy --bus-width 64 pio --size 16K --burst 32 --width 64",
        "pcispy --sim=pentiumpro200 pio --size 1K --burst 8",
    )

    def add_arguments(self, parser):
        parser.add_argument("--size", type=parse_size, default=64 * 1024, metavar="N",
                            help="bytes to write and read back, K/M suffixes (default 64K)")
        parser.add_argument("--burst", type=int, default=64, metavar="B",
                            help="most data phases per transaction (1: no write "
                                 "aggregation; 0: unlimited; default 64)")
        parser.add_argument("--width", type=int, choices=(32, 64), default=32,
                            help="data phase width (64 needs --bus-width 64; default 32)")
        parser.add_argument("--offset", type=parse_size, default=0, metavar="A",
                            help="byte offset in the window (default 0)")
        parser.add_argument("--data-seed", type=int, default=1, metavar="S",
                            help="seed of the random data (default 1)")

    def run(self, args, out):
        result = run_feature(args, pio, size=args.size,
                             burst=args.burst, width=args.width, offset=args.offset,
                             seed=args.data_seed)
        if not args.json:
            out.write(format_result(result))
        return result


def format_result(result):
    """A human-readable report of one PIO run."""
    def line(name, figures):
        known = lambda v: "?" if v is None else v
        return (f"  {name:5s} {figures['mbps']:8.1f} MB/s  {known(figures['clocks'])} clocks, "
                f"first data after {known(figures['first_data_clocks'])} clocks, "
                f"{known(figures['transactions'])} transactions, "
                f"{known(figures['data_phases'])} data phases, "
                f"{known(figures['retries'])} retries, "
                f"{known(figures['disconnects'])} disconnects")
    lines = [f"PIO {result['bytes']} bytes at BAR2+{result['offset']:#x}, bursts of "
             f"{result['burst'] or 'unlimited'} {result['width']}-bit data phases, "
             f"{result['clock_mhz']} MHz",
             line("write", result["write"]), line("read", result["read"]),
             "  data: " + (f"{result['errors']} mismatched DWORDs (first at DWORD "
                           f"{result['first_error']})" if result["errors"] else "verified")]
    return "\n".join(lines) + "\n"
