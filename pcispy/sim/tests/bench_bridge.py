# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benches of the PCI-to-PCI bridge (pcispy/sim/bfm/bridge.py) in the two-bus system:
the board behind the bridge on the secondary bus, the host bridge, host memory, the test
device and the legacy device on the primary. The board's spy watches the secondary bus,
so each bench can see what crossed and how. Every bench ends with both buses' protocol
checkers and resolvers clean. Run by pcispy/sim/tests/test_bridge.py.
"""

import cocotb

from pcispy.board.registers import DEFAULT_VENDOR_ID
from pcispy.dma.dma_feature import dma
from pcispy.exerciser.target_feature import target
from pcispy.dma.dwords import pattern_dwords
from pcispy.dma.registers import Pattern
from pcispy.host.board import Board
from pcispy.pci.bus import Command
from pcispy.sim.api import SimSystem
from pcispy.sim.bfm.bridge_control import BRIDGE_CLASS, BRIDGE_DEVICE_ID, BRIDGE_VENDOR_ID
from pcispy.sim.bfm.bridge_driver import Type1Config
from pcispy.sim.bfm.bridge_queues import POSTED_WORDS
from pcispy.sim.bfm.initiator_control import Outcome
from pcispy.sim.compliance import ScratchBackdoor
from pcispy.sim.system import BOARD_SLOT, SECONDARY_BUS
from pcispy.sim.transport import SimTransport
from pcispy.spy.capture_feature import finish_capture, start_capture
from pcispy.trace.decode import summarise
from pcispy.spy.tests.bench_spy import _exclude_bar0, _not_board_regs, _trace

_MR, _MW, _MRM = Command.MEM_READ.value, Command.MEM_WRITE.value, \
    Command.MEM_READ_MULTIPLE.value
#: Termination codes of the summaries.
_COMPLETION, _RETRY, _DISCONNECT_DATA = 0, 2, 3


async def _setup(dut):
    system = await SimSystem(dut).start()
    bars = await system.enumerate_board()
    return system, bars, SimTransport(system, bars)


async def _secondary(transport, bars, operation):
    """Run ``operation`` (a coroutine function) while the board's spy captures the
    secondary bus; return its result and the transactions other than the capture's own
    BAR0 accesses, as ``[(address, command, data phases, termination, latency,
    timestamp)]``."""
    capture = await start_capture(transport, mode="summary", filters=[_exclude_bar0(bars)])
    result = await operation()
    captured = await finish_capture(capture)
    rows = _not_board_regs(summarise(_trace(captured)), bars)
    return result, [(int(r["address"]), int(r["command"]), int(r["data_phases"]),
                     int(r["termination"]), int(r["latency"]), int(r["timestamp"]))
                    for r in rows]


def _shape(rows):
    """Address, command, data phases and ending of each captured transaction."""
    return [row[:4] for row in rows]


@cocotb.test()
async def enumeration_behind_the_bridge(dut):
    """Firmware finds the bridge's Type 1 header in slot 0, numbers its secondary bus,
    finds the board there through Type 1 cycles, opens the windows around its BARs and
    puts the test device above them; an empty device number behind the bridge reads all
    ones (a master abort on the secondary bus, Received Master Abort set)."""
    system, bars, transport = await _setup(dut)
    host = system.host
    ids = (await host.config_read(BOARD_SLOT, 0x00)).value
    assert ids == BRIDGE_VENDOR_ID | BRIDGE_DEVICE_ID << 16, hex(ids)
    assert (await host.config_read(BOARD_SLOT, 0x08)).value >> 8 == BRIDGE_CLASS
    assert (await host.config_read(BOARD_SLOT, 0x0C)).value >> 16 & 0xFF == 1
    buses = (await host.config_read(BOARD_SLOT, 0x18)).value
    assert buses & 0xFFFFFF == SECONDARY_BUS << 8 | SECONDARY_BUS << 16
    window = (await host.config_read(BOARD_SLOT, 0x20)).value
    low, high = (window & 0xFFF0) << 16, (window & 0xFFF0_0000) | 0xFFFFF
    for index, bar in bars.items():
        if bar["kind"] == "memory":
            assert low <= bar["address"] and bar["address"] + bar["size"] - 1 <= high, bars
    board = next(f for f in system.devices if f.bus == SECONDARY_BUS)
    assert (board.slot, board.vendor) == (BOARD_SLOT, DEFAULT_VENDOR_ID)
    empty = await Type1Config(host, SECONDARY_BUS).config_read(1, 0x00)
    assert empty.status == Outcome.OK and empty.value == 0xFFFF_FFFF
    status = (await host.config_read(BOARD_SLOT, 0x04)).value >> 16
    assert status >> 13 & 1, hex(status)
    assert (await transport.config_read(0x00)) & 0xFFFF == DEFAULT_VENDOR_ID
    # I/O crosses too (a delayed write and a delayed read), inside the I/O window.
    io_window = (await host.config_read(BOARD_SLOT, 0x1C)).value
    io = bars[3]["address"]
    assert (io_window & 0xF0) << 8 <= io <= (io_window & 0xF000) | 0xFFF, (hex(io_window), io)
    assert (await host.io_write(io + 6, 0xBEEF, 2)).ok
    assert (await host.io_read(io + 4, 4)).value >> 16 == 0xBEEF
    await system.assert_clean()


@cocotb.test()
async def delayed_read_completion(dut):
    """A host read of the board is retried until the bridge has the data: the bridge
    latches it once, runs it once on the secondary bus, and completes the host's repeat;
    a completion held back ``completion_delay`` clocks holds the host back as long."""
    system, bars, transport = await _setup(dut)
    backdoor = ScratchBackdoor(dut, 32)
    backdoor.write(2, 0x40, bytes(range(0x40, 0x50)))
    address = bars[2]["address"] + 0x40

    async def read():
        await system.bridge.clear()
        result = await system.host.mem_read(address, 4)
        return result, (await system.bridge.stats())["downstream"]
    (result, stats), rows = await _secondary(transport, bars, read)
    assert result.ok and result.data == bytes(range(0x40, 0x44)), result
    assert result.retries >= 1 and result.transactions == result.retries + 1, result
    assert _shape(rows) == [(address, _MR, 1, _COMPLETION)], rows
    assert (stats["requests"], stats["completions"]) == (1, 1), stats
    assert stats["retries"] == result.retries, stats
    quick = result.clocks

    await system.bridge.set_fields(completion_delay=200)
    result = await system.host.mem_read(address + 4, 4)
    assert result.ok and result.data == bytes(range(0x44, 0x48)), result
    assert quick + 200 - 8 <= result.clocks <= quick + 200 + 8, (quick, result)
    await system.assert_clean()


@cocotb.test()
async def posted_writes_in_order_pushed_by_a_read(dut):
    """Memory writes complete at once for the host and reach the board later, in their
    order; a read behind them is run only after them, so it reads what they wrote."""
    system, bars, transport = await _setup(dut)
    backdoor = ScratchBackdoor(dut, 32)
    backdoor.write(2, 0, bytes(32))
    base = bars[2]["address"]
    await system.bridge.set_fields(post_delay=250)
    first, second = bytes(range(1, 17)), bytes(range(101, 117))

    async def traffic():
        writes = [await system.host.mem_write(base, first),
                  await system.host.mem_write(base + 0x10, second)]
        held = backdoor.read(2, 0, 32)
        read = await system.host.mem_read(base + 0x10, 4)
        return writes, held, read
    (writes, held, read), rows = await _secondary(transport, bars, traffic)
    assert all(w.ok and w.retries == 0 and w.clocks < 20 for w in writes), writes
    assert held == bytes(32), "the posted writes reached the board before their flush"
    assert read.ok and read.data == second[:4], read
    assert read.clocks >= 60, read
    assert _shape(rows) == [(base, _MW, 4, _COMPLETION), (base + 0x10, _MW, 4, _COMPLETION),
                            (base + 0x10, _MR, 1, _COMPLETION)], rows
    assert backdoor.read(2, 0, 32) == first + second
    await system.assert_clean()


@cocotb.test()
async def read_completion_pulls_upstream_writes(dut):
    """The board's DMA writes into host memory are posted upstream; a host read of the
    board that completes on the secondary bus after them is given to the host only once
    they are in host memory."""
    system, bars, transport = await _setup(dut)
    board = Board(transport)
    buffer = await transport.dma_buffer(64)
    await buffer.write(0, bytes(64))
    command = await transport.config_read(0x04)
    await transport.config_write(0x04, command & 0xFFFF | 0x4)        # bus master
    await board.write("dma.mode", cmd=_MW, pattern=Pattern.COUNTER.value)
    await board.write("dma.addr_lo", buffer.bus_address)
    await board.write("dma.addr_hi", 0)
    await board.write("dma.length", 64)
    await board.write("dma.burst", phases=16)
    await board.write("dma.seed", 0x1000)
    # From here every posted word waits 250 clocks in the bridge: the start reaches the
    # board after them, the run's 16 words wait in the upstream buffer after it.
    await system.bridge.set_fields(post_delay=250)
    await board.write("dma.control", start=1)
    await transport.sleep(320 / 33e6)
    assert (await system.bridge.state())["up_posted"] == 16
    status = await system.host.mem_read(bars[0]["address"] + 0x128, 4)   # dma.status
    landed = await buffer.read(0, 64)
    assert status.ok and status.clocks >= 100, status
    expected = b"".join(v.to_bytes(4, "little")
                        for v in pattern_dwords(Pattern.COUNTER, 0x1000, 16))
    assert landed == expected, landed.hex()
    stats = await system.bridge.stats()
    assert stats["upstream"]["posted_words"] == 16, stats
    await system.assert_clean()


@cocotb.test()
async def disconnects(dut):
    """The bridge disconnects a posted write on the last word its buffer takes and
    retries the rest until the buffer drains; it disconnects a prefetched read after the
    words it fetched; a flush that starts while its write is still arriving carries the
    words that are there (the burst is broken); with a threshold of the whole burst it
    is not."""
    system, bars, transport = await _setup(dut)
    backdoor = ScratchBackdoor(dut, 32)
    base = bars[2]["address"]
    data = bytes(range(256)) + bytes(range(64))
    await system.bridge.set_fields(post_delay=200)
    result = await system.host.mem_write(base, data)
    assert result.ok and result.disconnects >= 1 and result.retries >= 1, result
    assert result.dwords == len(data) // 4, result
    stats = (await system.bridge.stats())["downstream"]
    assert stats["posted_words"] == len(data) // 4
    await system.host.mem_read(base, 4)              # pushes the writes through
    assert backdoor.read(2, 0, len(data)) == data

    await system.bridge.set_fields(post_delay=0, prefetch_words=8)
    await system.bridge.clear()
    result = await system.host.mem_read(base, 64, command=Command.MEM_READ_MULTIPLE)
    assert result.ok and result.data == data[:64], result
    assert result.disconnects >= 1 and result.phases == 16, result
    assert (await system.bridge.stats())["downstream"]["requests"] == 2

    async def burst():
        return await system.host.mem_write(base + 0x100, bytes(range(16)), burst=4)
    _, broken = await _secondary(transport, bars, burst)
    await system.bridge.set_fields(post_threshold=4)
    _, whole = await _secondary(transport, bars, burst)
    dut._log.info(f"broken {broken} whole {whole}")
    assert [row[2] for row in broken] != [4] and sum(row[2] for row in broken) == 4, broken
    assert broken[0][2] < 4 and all(row[1] == _MW for row in broken), broken
    assert _shape(whole) == [(base + 0x100, _MW, 4, _COMPLETION)], whole
    await system.assert_clean()


@cocotb.test()
async def board_reads_are_retried_until_the_data_arrives(dut):
    """The board's DMA reads of host memory go upstream as delayed reads: the spy sees
    each of its single-word reads retried until the bridge has the word from host
    memory, then completed with it; the words are the pattern the engine verifies."""
    system, bars, transport = await _setup(dut)
    async def run():
        await system.bridge.clear()
        result = await dma(transport, cmd="MR", length=16, burst=1, verify=True)
        return result, (await system.bridge.stats())["upstream"]
    (result, stats), rows = await _secondary(transport, bars, run)
    assert result["error"] is None and result["mismatches"] == 0, result
    reads = [row for row in rows if row[1] == _MR]
    done = [row for row in reads if row[3] == _COMPLETION]
    assert [row[2] for row in done] == [1, 1, 1, 1], rows
    assert len(reads) > len(done) and all(row[3] == _RETRY for row in reads
                                          if row[3] != _COMPLETION), rows
    assert (stats["requests"], stats["completions"]) == (4, 4), stats
    await system.assert_clean()


@cocotb.test()
async def uncollected_completion_is_discarded(dut):
    """A master that gives up on its read leaves the completion in the bridge; the
    discard timer drops it, and the next request is taken."""
    system, bars, transport = await _setup(dut)
    await system.bridge.set_fields(completion_delay=250, discard_clocks=300)
    await system.host.configure(retry_limit=3)
    result = await system.host.mem_read(bars[2]["address"], 4)
    assert result.status == Outcome.RETRY_LIMIT, result
    await system.host.configure(retry_limit=1024)
    await system.bridge.set_fields(completion_delay=0)
    result = await system.host.mem_read(bars[2]["address"] + 8, 4)
    assert result.ok and result.clocks >= 200, result
    stats = (await system.bridge.stats())["downstream"]
    assert stats["discards"] == 1, stats
    await system.assert_clean()


@cocotb.test()
async def posted_words_are_limited_to_the_buffer(dut):
    """The buffer holds POSTED_WORDS words: a write of exactly that many with the flush
    held back is taken whole, the first word more is refused until it drains."""
    system, bars, transport = await _setup(dut)
    await system.bridge.set_fields(post_delay=200)
    result = await system.host.mem_write(bars[2]["address"], bytes(4 * POSTED_WORDS))
    assert result.ok and result.retries == 0 and result.disconnects == 1, result
    assert (await system.bridge.state())["down_posted"] == POSTED_WORDS
    await system.assert_clean()


@cocotb.test()
async def aborts_cross(dut):
    """A read the board answers with Target-Abort is answered so to the host, whose
    repeat finds the completion; a posted write into the abort range completes for the
    host and is dropped by the bridge; a read of the window where nobody answers
    completes with all ones (Master-Abort Mode 0)."""
    system, bars, transport = await _setup(dut)
    await target(transport, abort=(0x100, 0x1FF))
    base = bars[2]["address"]
    backdoor = ScratchBackdoor(dut, 32)
    backdoor.write(2, 0x100, bytes(range(16)))
    await system.bridge.clear()
    read = await system.host.mem_read(base + 0x104, 4)
    assert read.status == Outcome.TARGET_ABORT, read
    write = await system.host.mem_write(base + 0x108, b"\xAA" * 4)
    assert write.ok, write
    await system.host.mem_read(base, 4)          # pushes the write through
    assert backdoor.read(2, 0x100, 16) == bytes(range(16))
    stats = (await system.bridge.stats())["downstream"]
    assert stats["target_aborts"] == 2 and stats["completions"] == 2, stats
    window = (await system.host.config_read(BOARD_SLOT, 0x20)).value
    nobody = (window & 0xFFF0_0000) | 0xFFFF0        # the window's last bytes: no BAR there
    empty = await system.host.mem_read(nobody, 4)
    assert empty.ok and empty.data == b"\xFF" * 4, empty
    await system.assert_clean()
