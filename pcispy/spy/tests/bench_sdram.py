# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benches of the spy's SDRAM trace memory in the simulated system (the board's
SDRAM pins wired to the SDRAM model of pcispy/sim/bfm/sdram.py), driven through the host
features like every capture.

Run by ``pcispy/spy/tests/test_sdram_system.py`` (pytest), which picks the system.
"""

import json
import os
import random

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles

from pcispy.host.board import Board
from pcispy.sim.bfm.profiles import RTC
from pcispy.spy.tests.bench_spy import (NOBODY, PER_FILTER, TEST_MEM, _random_traffic,
                                        _reseed, _seed, _setup, _trace)
from pcispy.spy.capture_feature import finish_capture, start_capture, wait_capture
from pcispy.spy.format import RecordKind

#: Random operations of the comparison capture: enough summaries (two slots each) to
#: pass through the SDRAM's FIFO more than once.
OPERATIONS = 160


@cocotb.test()
async def capture_through_trace_memory(dut):
    """The seeded summary capture of bench_spy's ``capture_for_comparison`` (longer) on
    whatever trace memory the system has, written to the file PCISPY_RESULT names with the trace
    depth the board reports and the SDRAM model's evidence (test_sdram_system.py compares
    block RAM and SDRAM)."""
    system, transport = await _setup(dut)
    seed = _seed()
    board = Board(transport)
    depth = (await board.fields("id.config"))["trace_depth"]
    await _reseed(system, seed)
    run = await start_capture(transport, mode="summary", filters=PER_FILTER)
    capacity = await board.read("spy.capacity")
    await _random_traffic(system, transport, random.Random(seed), OPERATIONS)
    await system.host.mem_read(TEST_MEM + 0x3000, 4)
    await system.host.mem_read(NOBODY, 4)
    result = await finish_capture(run)
    summaries = _trace(result).summaries
    report = await system.checker_report()
    dut._log.info(f"{system.config.trace_memory}: {len(summaries)} summaries, status "
                  f"{result['status']}, SDRAM {report.get('sdram')}")
    await system.assert_clean(RTC.breaks_rules)
    with open(os.environ["PCISPY_RESULT"], "w") as file:
        json.dump({"slots": 1 << depth, "capacity": capacity, "status": result["status"],
                   "records": result["records"], "summaries": len(summaries),
                   "sdram": report.get("sdram")}, file)


@cocotb.test()
async def raw_overrun_through_sdram(dut):
    """Raw records of every clock of a long burst come eight times faster than the SDRAM
    on the bus clock takes them: the FIFOs fill, the spy writes OVERRUN events and counts
    the lost records, and what was kept reads back in order (nothing lost silently)."""
    system, transport = await _setup(dut)
    run = await start_capture(transport, mode="raw", idle_compress=False,
                              trigger="filter", filters=["MW"], count=600)
    await system.host.mem_write(TEST_MEM, bytes(range(256)) * 8)
    assert await wait_capture(run) == (False, False)
    result = await finish_capture(run)
    status = result["status"]
    trace = _trace(result)
    kinds = trace.kinds.tolist()
    dut._log.info(f"raw through SDRAM: status {status}, {len(trace)} records, "
                  f"{kinds.count(RecordKind.OVERRUN.value)} overrun events")
    assert status["lost"] > 0 and status["overruns"] > 0, status
    assert kinds.count(RecordKind.OVERRUN.value) == status["overruns"], (kinds, status)
    # The SDRAM's FIFO filled, and the board says how often (each fill cost records).
    fills = await Board(transport).read("spy.memory_fills")
    assert 1 <= fills <= status["lost"], (fills, status)
    assert status["memory_fills"] == result["metadata"]["memory_fills"] == fills
    # The raw records kept are in order, with gaps where records were lost.
    times = trace.times()[np.array(kinds) == RecordKind.RAW.value]
    assert (times[1:] > times[:-1]).all() and (times[1:] - times[:-1] > 1).any()
    assert len(trace) + status["lost"] >= 600
    await system.assert_clean()
    report = await system.checker_report()
    assert report["sdram"]["refreshes"] > 2, report["sdram"]


@cocotb.test()
async def ring_through_sdram(dut):
    """Ring mode wraps the SDRAM: a filter-triggered ring capture of single writes, more
    than the memory holds and spaced so that the SDRAM keeps up, keeps the last
    ``capacity`` summaries in order, nothing lost."""
    system, transport = await _setup(dut)
    board = Board(transport)
    run = await start_capture(transport, trigger="filter", ring=True, count=0,
                              filters=[f"MW:{TEST_MEM:#x}/0xffffc000"])
    capacity = await board.read("spy.capacity")
    writes = capacity + 6
    for index in range(writes):
        await system.host.mem_write(TEST_MEM + 4 * index, index.to_bytes(4, "little"))
        await ClockCycles(dut.pci_clk, 16)      # a summary takes 16 clocks of the SDRAM
    result = await finish_capture(run)
    status = result["status"]
    summaries = _trace(result).summaries
    dut._log.info(f"ring through SDRAM: status {status}, {len(summaries)} summaries")
    assert status["lost"] == 0 and status["count"] == capacity, status
    addresses = [int(a) - TEST_MEM for a in summaries["address"]]
    assert addresses[-1] == 4 * (writes - 1), addresses[-8:]
    assert all(b - a == 4 for a, b in zip(addresses, addresses[1:])), addresses[:8]
    await system.assert_clean()
