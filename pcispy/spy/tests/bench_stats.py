# SPDX-License-Identifier: BSD-2-Clause
"""cocotb bench: the board's counters and histograms in the simulated system measure the
bus and not the tool reading them, against the transactions the host bridge model says it
made. Run by pcispy/spy/tests/test_stats_system.py.

The host bridge reports the transactions (address phases, retried ones included) of every
command it runs; :class:`Tally` adds them up, apart for the board's BAR0 (the tool's own
register accesses). A snapshot's own boundary (whether the write that takes it is in it or
in the next) is the same at every snapshot, so the growth of ``own_transactions`` between
two snapshots is the tool's BAR0 transactions between their writes, exactly.
"""

import cocotb

from pcispy.host.board import Board
from pcispy.sim.api import SimSystem
from pcispy.sim.transport import SimTransport
from pcispy.spy.counters import latency_bin
from pcispy.spy.stats_feature import read_histograms, read_snapshot, stats

#: Where the bench opens the test device's memory window (nothing else answers there).
TEST_MEM = 0x9000_0000


class Tally:
    """``system.host`` with a count of the transactions of every memory and I/O command,
    ``own`` those to the board's BAR0 (``bar0``: its enumeration record), ``others`` the
    rest; other attributes pass through."""

    def __init__(self, driver, bar0):
        self.driver = driver
        self.bar0 = bar0
        self.own = self.others = 0

    def __getattr__(self, name):
        attribute = getattr(self.driver, name)
        if name not in ("mem_read", "mem_write", "io_read", "io_write"):
            return attribute

        async def counted(addr, *args, **kwargs):
            result = await attribute(addr, *args, **kwargs)
            base, size = self.bar0["address"], self.bar0["size"]
            if name.startswith("mem") and base <= addr < base + size:
                self.own += result.transactions
            else:
                self.others += result.transactions
            return result
        return counted


async def _setup(dut):
    system = await SimSystem(dut).start()
    bars = await system.enumerate_board()
    await system.test_target.set_windows(mem=(TEST_MEM, 0x4000))
    tally = system.host = Tally(system.host, bars[0])
    return system, SimTransport(system, bars), tally


async def _traffic(system, board, count, start=0):
    """``count`` single-word writes to the test device, each followed by two reads of
    the board's registers (the tool polling)."""
    for i in range(count):
        await system.host.mem_write(TEST_MEM + 4 * (start + i), (i + 1).to_bytes(4, "little"))
        await board.read("spy.status")
        await board.read("id.magic")


async def _snapshot(board, tally):
    """:func:`read_snapshot`: ``(own tally before its snapshot's write, counters,
    histograms)``."""
    own = tally.own
    counters, histograms = await read_snapshot(board)
    return own, counters, histograms


@cocotb.test()
async def tool_reads_are_left_out_and_histograms_held_with_the_counters(dut):
    system, transport, tally = await _setup(dut)
    board = Board(transport)

    # The tool alone on the bus: stats sees no transaction, every reading of its own.
    result = await stats(transport, clear=True, samples=3, interval=1e-5)
    for snapshot in result["snapshots"]:
        counters = snapshot["counters"]
        assert counters["transactions"] == counters["busy_clocks"] == 0, counters
        assert sum(snapshot["histograms"]["latency"]) == 0, snapshot["histograms"]
        assert not snapshot["own_counted"]
    own = [s["counters"]["own_transactions"] for s in result["snapshots"]]
    assert 0 < own[0] < own[1] < own[2], own
    assert own[2] - own[1] == own[1] - own[0], own        # the same reads every time

    # Known traffic amid the tool's polling.
    await board.write("spy.control", clear=1)
    while (await board.fields("spy.status"))["clearing"]:
        pass
    others_at_clear = tally.others
    first_own, first, _ = await _snapshot(board, tally)
    await _traffic(system, board, 25)
    taken_own, counters, histograms = await _snapshot(board, tally)
    made = tally.others - others_at_clear
    assert made == 25, made           # one transaction per write: no retry, no disconnect
    assert counters["transactions"] == made and counters["master_aborts"] == 0, counters
    assert counters["own_transactions"] - first["own_transactions"] == taken_own - first_own
    assert sum(histograms["latency"]) == made and sum(histograms["gap"]) == made - 1
    assert histograms["latency"][latency_bin(counters["latency_max"])] > 0
    assert counters["busy_clocks"] > 0 and counters["own_clocks"] > counters["busy_clocks"]

    # While a snapshot is held the bus goes on: the counters and histograms read the same;
    # the next snapshot has every transaction of the meantime.
    await board.write("spy.control", snapshot=1)
    held = await board.read("spy.transactions")
    held_histograms = await read_histograms(board)
    assert sum(held_histograms["latency"]) == held == made
    await _traffic(system, board, 10, start=25)
    assert await board.read("spy.transactions") == held
    assert await read_histograms(board) == held_histograms
    later_own, later, later_histograms = await _snapshot(board, tally)
    assert later["transactions"] == made + 10
    assert sum(later_histograms["latency"]) == made + 10
    assert later["own_transactions"] - counters["own_transactions"] == later_own - taken_own

    # spy.counting.own: the tool's accesses are counted with the rest.
    await board.write("spy.counting", own=1)
    mark_own, mark, _ = await _snapshot(board, tally)
    mark_others = tally.others
    await _traffic(system, board, 5, start=35)
    end_own, end, end_histograms = await _snapshot(board, tally)
    await board.write("spy.counting", own=0)
    assert end["own_transactions"] == mark["own_transactions"]
    assert end["transactions"] - mark["transactions"] == \
        (tally.others - mark_others) + (end_own - mark_own)
    assert sum(end_histograms["latency"]) == end["transactions"] - end["master_aborts"]
    await system.assert_clean()
