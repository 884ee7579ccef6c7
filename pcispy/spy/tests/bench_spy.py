# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benches of the board's spy in the simulated system, driven through the host
features (``pcispy capture``/``stats`` code) over the sim transport.

Run by ``pcispy/spy/tests/test_spy_system.py`` (pytest), which picks the system and seed.
"""

import base64
import json
import os
import random

import cocotb
import numpy as np

from pcispy.pci.bus import Command, Termination
from pcispy.spy.format import RecordKind
from pcispy.trace.decode import summarise
from pcispy.host.board import Board
from pcispy.spy.capture_feature import (capture, finish_capture, program_filters, start_capture,
                                        wait_capture)
from pcispy.spy.capture_settings_feature import parse_filter
from pcispy.spy.stats_feature import (comparator_hits, filter_counters_from_summaries,
                                      read_filter_counters, stats)
from pcispy.trace.file import parse_trace, trace_bytes
from pcispy.sim.api import SimSystem
from pcispy.sim.bfm.legacy_ports import RTC_PORT
from pcispy.sim.bfm.profiles import PROFILES, RTC, DisconnectMode, RetryMode
from pcispy.sim.scenarios import RTC_TICK_CLOCKS
from pcispy.sim.transport import SimTransport

#: Where the benches open the test device's windows.
TEST_MEM = 0x9000_0000
TEST_MEM_SIZE = 0x4000
TEST_IO = 0x2000
#: An address no agent claims (master abort).
NOBODY = 0xF000_0000
#: Summary fields compared between hardware and software decoder (timestamps rebased).
COMPARED = ("address", "command", "first_be", "first_data", "data_phases", "latency",
            "initiator_wait", "target_wait", "duration", "termination", "devsel", "is64",
            "dac", "parity_error", "master")


async def _setup(dut):
    system = await SimSystem(dut).start()
    bars = await system.enumerate_board()
    if system.config.test_device:
        await system.test_target.set_windows(mem=(TEST_MEM, TEST_MEM_SIZE),
                                             io=(TEST_IO, 0x100))
    return system, SimTransport(system, bars)


def _trace(result):
    return parse_trace(trace_bytes(base64.b64decode(result["records"]), result["metadata"]))


def _not_board_regs(summaries, bars):
    """Summaries other than the bench's own register accesses to the board's BAR0."""
    bar0 = bars[0]
    inside = ((summaries["address"] >= bar0["address"]) &
              (summaries["address"] < bar0["address"] + bar0["size"]))
    return summaries[~inside]


def _exclude_bar0(bars):
    return f"!mem:{bars[0]['address']:#x}/{~(bars[0]['size'] - 1) & 0xFFFF_FFFF:#x}"


async def _reseed(system, seed):
    """Bring every random behaviour back to the same state (the same traffic replays
    clock for clock)."""
    target_profile = PROFILES["ideal"].but(
        retry=RetryMode.FIRST, retry_count=2, retry_probability=64,
        disconnect=DisconnectMode.WITH_DATA, disconnect_every=5,
        abort_range=(TEST_MEM + 0x3000, 0x100))
    await system.test_target.apply_profile(target_profile, seed=seed)
    await system.legacy.apply_profile(RTC, seed=seed)
    await system.host_memory.apply_profile(system.profile, seed=seed)


async def _random_traffic(system, transport, rng, operations):
    """Seeded traffic from every agent: host PIO (memory, I/O, the legacy RTC, the board's
    exerciser window, master aborts), the test device mastering host memory."""
    host, device = system.host, system.test_initiator
    for _ in range(operations):
        choice = rng.randrange(8)
        offset = 4 * rng.randrange(0x300)
        size = 4 * rng.randrange(1, 12)
        if choice == 0:
            await host.mem_write(TEST_MEM + offset, rng.randbytes(size), burst=rng.choice((0, 2)))
        elif choice == 1:
            await host.mem_read(TEST_MEM + rng.choice((offset, 0x3000)), size,
                                command=rng.choice((Command.MEM_READ, Command.MEM_READ_LINE,
                                                    Command.MEM_READ_MULTIPLE)))
        elif choice == 2:
            await host.io_write(TEST_IO + rng.randrange(0, 0x100, 4), rng.getrandbits(32), 4)
            await host.io_read(TEST_IO + rng.randrange(0, 0x100, 4), 4)
        elif choice == 3:
            await host.io_write(RTC_PORT, rng.randrange(0x0E), 1)
            await host.io_read(RTC_PORT + 1, 1)
        elif choice == 4:
            await device.mem_write(0x2000 + offset, rng.randbytes(size), burst=rng.choice((0, 3)))
        elif choice == 5:
            await device.mem_read(0x2000 + offset, size)
        elif choice == 6:
            await transport.write_block(2, offset, rng.randbytes(size), burst=rng.choice((0, 1)))
        else:
            await host.mem_read(NOBODY, 4)


def _seed():
    return int(os.environ.get("PCISPY_SEED", "1"))


@cocotb.test()
async def summaries_equal_decoded_raw(dut):
    """The same seeded traffic, captured once raw and once as hardware summaries: the
    summaries equal the software decoder's, record for record (times rebased)."""
    system, transport = await _setup(dut)
    seed = _seed()
    captured = {}
    for mode in ("raw", "summary"):
        await _reseed(system, seed)
        # Arm, make the traffic, stop: no status polls while it runs.
        run = await start_capture(transport, mode=mode, filters=[_exclude_bar0(transport.bars)]
                                  if mode == "summary" else ())
        await _random_traffic(system, transport, random.Random(seed), 40)
        # Every ending below must be in the trace whatever the seed: the random reads
        # reach the abort range only by chance (seed 2's never do), so read it once here.
        await system.host.mem_read(TEST_MEM + 0x3000, 4)
        result = await finish_capture(run)
        assert result["status"]["lost"] == 0, result["status"]
        captured[mode] = _not_board_regs(summarise(_trace(result)), transport.bars)
    hardware, software = captured["summary"], captured["raw"]
    assert len(hardware) > 60, len(hardware)
    assert len(hardware) == len(software), (seed, len(hardware), len(software))
    for name in COMPARED:
        assert (hardware[name] == software[name]).all(), \
            (seed, name, hardware[name].tolist(), software[name].tolist())
    rebased = lambda s: s["timestamp"].astype(int) - int(s["timestamp"][0])
    assert (rebased(hardware) == rebased(software)).all(), seed
    endings = {Termination(int(t)) for t in hardware["termination"]}
    assert {Termination.COMPLETION, Termination.RETRY, Termination.DISCONNECT_DATA,
            Termination.TARGET_ABORT, Termination.MASTER_ABORT} <= endings, (seed, endings)
    await system.assert_clean(RTC.breaks_rules)


#: The comparators of filter_counters_equal_summaries: overlapping (the third hits what
#: the first does, and the master aborts), none hitting the board's BARs from 0x8000_0000
#: (the bench's own register accesses, counted but never stored).
PER_FILTER = [f"mem:{TEST_MEM:#x}/0xffffc000", "io", "mem:0x90000000/0x90000000",
              "mem:0x0/0xf0000000"]


def _transaction_bytes(trace, decoded):
    """Bytes each of ``decoded`` (the software decoder's summaries of the raw ``trace``)
    moved: the enabled byte lanes of its clocks with IRDY# and TRDY#, after its address
    phase(s), up to its last clock."""
    where = trace.indices(RecordKind.RAW)
    times = trace.times()[where]
    raw = trace.raw
    moved = (raw["bus.irdy"] != 0) & (raw["bus.trdy"] != 0)
    lanes = 4 - np.bitwise_count(raw["bus.cbe"].astype(np.uint8) & 0xF).astype(np.int64)
    running = np.concatenate([[0], np.cumsum(np.where(moved, lanes, 0))])
    start = decoded["timestamp"].astype(np.int64)
    first = start + 1 + decoded["dac"].astype(np.int64)
    last = start + decoded["duration"].astype(np.int64) - 1
    return (running[np.searchsorted(times, last, "right")] -
            running[np.searchsorted(times, first, "left")])


@cocotb.test()
async def filter_counters_equal_summaries(dut):
    """Seeded traffic with four overlapping comparators, captured as summaries: each
    comparator's counters equal what software computes from the summaries the capture
    stored. Bytes are not in a summary: the same traffic again, captured raw, counts the
    same in every counter, and the software decoder's summaries of it, with the bytes of
    their data phases and the comparators applied in software, give every counter."""
    system, transport = await _setup(dut)
    seed = _seed()
    board = Board(transport)
    specs = [parse_filter(text) for text in PER_FILTER]
    runs = {}
    for mode in ("summary", "raw"):
        await _reseed(system, seed)
        await stats(transport, clear=True, histograms=False, per_filter=False)
        run = await start_capture(transport, mode=mode, filters=PER_FILTER)
        await _random_traffic(system, transport, random.Random(seed), 40)
        # A target abort and a master abort whatever the seed.
        await system.host.mem_read(TEST_MEM + 0x3000, 4)
        await system.host.mem_read(NOBODY, 4)
        result = await finish_capture(run)
        assert result["status"]["lost"] == 0, result["status"]
        runs[mode] = (_trace(result), await read_filter_counters(board))
    trace, hardware = runs["summary"]
    software = filter_counters_from_summaries(trace.summaries)
    raw_trace, replayed = runs["raw"]
    decoded = summarise(raw_trace)
    decoded["filters"] = comparator_hits(decoded, specs)
    from_raw = filter_counters_from_summaries(
        decoded, transaction_bytes=_transaction_bytes(raw_trace, decoded))
    for comparator in range(len(PER_FILTER)):
        counted = hardware[comparator]
        assert counted["enabled"], counted
        counted = {k: v for k, v in counted.items() if k != "enabled"}
        assert replayed[comparator] == hardware[comparator], (seed, comparator)
        assert software[comparator] == dict(counted, bytes=None), (seed, counted,
                                                                   software[comparator])
        assert from_raw[comparator] == counted, (seed, counted, from_raw[comparator])
    # Every kind of ending was counted somewhere, and the overlap is there.
    total = {name: sum(s[name] for s in hardware) for name in
             ("retries", "disconnects", "target_aborts", "master_aborts", "bytes")}
    assert all(total.values()), (seed, total)
    assert hardware[2]["transactions"] == hardware[0]["transactions"] + \
        hardware[2]["master_aborts"] > hardware[0]["transactions"] > 0, seed
    dut._log.info(f"per filter (seed {seed}): " + "; ".join(
        f"{s['comparator']}: {s['transactions']} transactions, {s['bytes']} bytes"
        for s in hardware))
    await system.assert_clean(RTC.breaks_rules)


@cocotb.test()
async def capture_for_comparison(dut):
    """One seeded summary capture (the comparators of PER_FILTER: no access to the board's
    own BARs, whose addresses depend on BAR1's size), with the trace memory the board
    says it has, written to the file PCISPY_RESULT names: test_spy_system.py runs it on
    the block-RAM and the SRAM system and compares."""
    system, transport = await _setup(dut)
    seed = _seed()
    board = Board(transport)
    memory = await board.trace_memory()
    await _reseed(system, seed)
    run = await start_capture(transport, mode="summary", filters=PER_FILTER)
    capacity = await board.read("spy.capacity")
    await _random_traffic(system, transport, random.Random(seed), 40)
    await system.host.mem_read(TEST_MEM + 0x3000, 4)
    await system.host.mem_read(NOBODY, 4)
    result = await finish_capture(run)
    summaries = _trace(result).summaries
    dut._log.info(f"{memory}: {len(summaries)} summaries, status {result['status']}")
    await system.assert_clean(RTC.breaks_rules)
    with open(os.environ["PCISPY_RESULT"], "w") as file:
        json.dump({"memory": memory, "capacity": capacity, "status": result["status"],
                   "records": result["records"], "summaries": len(summaries)}, file)


@cocotb.test()
async def filters_triggers_pre_ring(dut):
    """Filters select exactly what they say; register and filter triggers with pre-trigger
    records; ring mode keeps the last records; raw captures lose nothing; stats count."""
    system, transport = await _setup(dut)
    host = system.host
    board = Board(transport)

    async def writes(base, count):
        for i in range(count):
            await host.mem_write(base + 4 * i, (i + 1).to_bytes(4, "little"))

    # Filter: only I/O writes to 0x70/0x71 of a mix.
    run = await start_capture(transport, filters=["IOW:0x70/0xfffe"])
    await writes(TEST_MEM, 3)
    for index in range(3):
        await host.io_write(RTC_PORT, index, 1)
        await host.io_read(RTC_PORT + 1, 1)
    result = await finish_capture(run)
    records = _trace(result).summaries
    assert set(Command(int(c)) for c in records["command"]) == {Command.IO_WRITE}, \
        (result["status"], result["metadata"], _trace(result).kinds.tolist())
    assert sorted(set(records["address"].tolist())) == [RTC_PORT]
    completed = records[records["data_phases"] == 1]
    assert completed["first_data"].tolist() == [0, 1, 2]

    # Register trigger with pre-trigger records: 4 kept from before, then 5 after.
    run = await start_capture(transport, trigger="register", pre=4, count=5,
                              filters=[f"MW:{TEST_MEM:#x}/0xffff0000"])
    await writes(TEST_MEM, 10)
    await board.write("spy.control", trigger=1)
    await writes(TEST_MEM + 0x100, 10)
    result = await finish_capture(run)
    trace = _trace(result)
    summaries = trace.summaries
    assert [int(a) - TEST_MEM for a in summaries["address"]] == \
        [24, 28, 32, 36, 0x100, 0x104, 0x108, 0x10C], summaries["address"]
    # The TRIGGER event follows the pre-trigger records and is the first of the 5 post.
    kinds = trace.kinds.tolist()
    assert kinds.count(3) == 1 and kinds.index(3) == 4 and len(kinds) == 9, kinds
    assert result["status"]["state"] == "done"

    # Filter trigger, ring mode: the 6 records up to the stop are kept.
    run = await start_capture(transport, trigger="filter", ring=True, count=0,
                              filters=[f"MW:{TEST_MEM:#x}/0xffffc000"])
    await host.io_write(TEST_IO, 1, 4)
    capacity = await board.read("spy.capacity")
    # One host command, one single-phase write transaction per DWORD.
    await host.mem_write(TEST_MEM + 0x200, bytes(4 * (capacity + 6)), burst=1)
    result = await finish_capture(run)
    summaries = _trace(result).summaries
    assert result["status"]["count"] == capacity
    assert int(summaries["address"][-1]) == TEST_MEM + 0x200 + 4 * (capacity + 5)
    assert (summaries["address"][1:] - summaries["address"][:-1] == 4).all()

    # Raw capture of every clock (no idle compression) during a long burst: nothing lost.
    run = await start_capture(transport, mode="raw", idle_compress=False,
                              trigger="filter", filters=["MW"], count=600)
    await host.mem_write(TEST_MEM, bytes(range(256)) * 8)
    # The burst is shorter than 600 clocks: let the capture reach its count by itself.
    assert await wait_capture(run) == (False, False)
    result = await finish_capture(run)
    assert result["status"]["lost"] == 0 and result["status"]["overruns"] == 0
    trace = _trace(result)
    assert len(trace) == 600
    times = trace.times()
    assert (times[1:] - times[:-1] == 1).all()
    assert trace.metadata["capture"]["time_base"] == "trigger"

    # Counters over a known batch: the filter selects the 7 writes only (not the bench's
    # own register accesses).
    await program_filters(board, [parse_filter(f"MW:{TEST_MEM:#x}/0xffff0000")])
    await stats(transport, clear=True, histograms=False)
    await writes(TEST_MEM + 0x800, 7)
    snapshot = (await stats(transport, histograms=True))["snapshots"][0]
    counters = snapshot["counters"]
    assert (counters["transactions"], counters["data_phases"], counters["bytes"],
            counters["hits"][0], counters["retries"]) == (7, 7, 28, 7, 0), counters
    # A write to a fast-DEVSEL# zero-wait target completes on the clock after its address.
    assert counters["latency_min"] == counters["latency_max"] == 1, counters
    assert snapshot["histograms"]["latency"][1] == 7 and \
        sum(snapshot["histograms"]["latency"]) == 7, snapshot["histograms"]
    assert counters["busy_clocks"] > 0 and counters["idle_clocks"] > 0
    await system.assert_clean(RTC.breaks_rules)


@cocotb.test()
async def rtc_figure3(dut):
    """The rtc scenario reproduces Pamette Figure 3: reads of 0x71 with first-data latency
    39, writes of 0x70 with 31-34, a run of 7 retried writes before one goes through,
    groups about 32000 clocks apart (idle compression on it is a figure of make bench:
    spy.idle_compression_ratio)."""
    from pcispy.sim.scenarios import start_scenario
    system, transport = await _setup(dut)
    start_scenario(system, "rtc", _seed())
    # Every RTC access also breaks a rule or two (the legacy profile); with violations
    # not recorded, the 80 records are the trigger event and 79 transactions: about six
    # groups.
    result = await capture(transport, filters=["io:0x70/0xfffe"], count=80,
                           violations="none", poll=0.0005)
    trace = _trace(result)
    assert len(trace) == 80 and trace.indices(RecordKind.TRIGGER).tolist() == [0]
    assert len(trace.indices(RecordKind.SUMMARY)) == 79
    summaries = summarise(trace)
    command = [Command(int(c)) for c in summaries["command"]]
    reads = summaries[[c is Command.IO_READ for c in command]]
    writes = summaries[[c is Command.IO_WRITE for c in command]]
    assert (reads["address"] == RTC_PORT + 1).all() and (writes["address"] == RTC_PORT).all()
    assert (reads["latency"] == 39).all(), reads["latency"]
    done = writes[writes["termination"] == Termination.COMPLETION.value]
    assert set(done["latency"].tolist()) <= set(range(31, 35)), done["latency"]
    retried = (writes["termination"] == Termination.RETRY.value).astype(int)
    runs, current = [], 0
    for flag, phases in zip(retried, writes["data_phases"]):
        if flag:
            assert phases == 0
            current += 1
        elif current:
            runs.append(current)
            current = 0
    assert 7 in runs and set(runs) <= {7}, (runs, writes["termination"].tolist(),
                                            writes["latency"].tolist(), reads["latency"].tolist())
    starts = summaries["timestamp"].astype(int)
    gaps = starts[1:] - starts[:-1]
    group_gaps = gaps[gaps > 5000]
    assert len(group_gaps) >= 4
    assert (abs(group_gaps - RTC_TICK_CLOCKS) < 2000).all(), group_gaps
    dut._log.info(f"rtc: {len(summaries)} transactions, retry runs {runs}")
