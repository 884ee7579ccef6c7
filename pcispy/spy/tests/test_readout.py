# SPDX-License-Identifier: BSD-2-Clause
"""Streaming readout (pcispy/spy/readout_feature.py): records read out of BAR1 a block at a time
into the file, a stopped readout leaves a partial file that says so, decode refuses it (or
decodes the part with --partial), ``pcispy readout --resume`` continues it on the board that
still holds the capture and refuses one that does not, leaving the file as it is.

Most tests read from :class:`FakeBoard`, a transport over a record memory and the spy's
status registers (addresses from the register map), so that a stop can be placed at any
block; the last reads a capture of the simulated system, stopped and resumed."""

import asyncio
import base64
import os

import numpy as np
import pytest

from pcispy.app import cli
from pcispy.app.tests._cli import run_cli
from pcispy.board.registers import REGISTER_MAP
from pcispy.host.errors import PcispyError, TransportError
from pcispy.host.transports.base import Transport
from pcispy.spy.capture_feature import raw_start_timestamp
from pcispy.trace.decode import _synthetic_clocks, raw_records
from pcispy.spy.readout_feature import (ReadoutStopped, capture_status, resume_readout,
                                stream_capture_to_file)
from pcispy.trace.file import PartialReadout, read_trace, trace_bytes

pytestmark = pytest.mark.spy

CAPACITY = 600
#: The board's clock counter when the capture was armed, and at its trigger.
ARM_TIME, TRIGGER_TIME = 5_000, 5_321


class FakeBoard(Transport):
    """A board whose capture has stopped: the spy's status registers and ``irq.now`` as
    the register map places them, BAR1 the trace memory ``memory`` ((capacity, 16)
    uint8). ``fail_after``: block reads that succeed before one raises TransportError."""
    kind = "fake"

    def __init__(self, memory, *, start, count, trigger_time=TRIGGER_TIME, fail_after=None,
                 ended=()):
        self.memory = memory
        self.fail_after = fail_after
        self.reads = 0
        # ``ended``: the segments before the current one, (start, count, trigger time).
        self.ended = list(ended)
        named = {"spy.capacity": len(memory), "spy.start": start, "spy.count": count,
                 "spy.trigger_index": 0, "spy.lost": 0, "spy.overruns": 0,
                 "spy.status": 3 | 1 << 2,          # state DONE, done
                 "spy.trigger_time_lo": trigger_time & 0xFFFF_FFFF,
                 "spy.trigger_time_hi": trigger_time >> 32,
                 "spy.segments": len(self.ended) << 8}
        self.address = {name: address for name, address, _ in REGISTER_MAP}
        self.registers = {address: named.get(name, 0) for name, address, _ in REGISTER_MAP}

    async def read32(self, bar, offset):
        assert bar == 0
        return self.registers[offset]

    async def write32(self, bar, offset, value):
        if offset == self.address["spy.segment_select"]:
            start, count, trigger_time = self.ended[value]
            for name, number in (("start", start), ("count", count), ("trigger_index", 0),
                                 ("trigger_time_lo", trigger_time & 0xFFFF_FFFF),
                                 ("trigger_time_hi", trigger_time >> 32)):
                self.registers[self.address[f"spy.segment_{name}"]] = number

    async def config_read(self, offset):
        raise AssertionError("no configuration space")

    async def config_write(self, offset, value):
        raise AssertionError("no configuration space")

    async def read_block(self, bar, offset, count):
        assert bar == 1 and offset % 4 == 0
        if self.fail_after is not None and self.reads >= self.fail_after:
            raise TransportError("the side channel timed out")
        self.reads += 1
        flat = self.memory.reshape(-1)
        return flat[offset:offset + 4 * count].view("<u4").tolist()

    async def sleep(self, seconds):
        pass

    async def wait_irq(self, timeout_s):
        raise AssertionError("a readout waits for no interrupt")

    async def dma_buffer(self, size):
        raise AssertionError("a readout needs no DMA buffer")


def _memory(seed):
    """A raw capture's memory: random transactions, the trigger mark on record 250."""
    rng = np.random.default_rng(seed)
    clocks = [{}]
    while len(clocks) < CAPACITY:
        clocks += _synthetic_clocks(rng)
    clocks = clocks[:CAPACITY]
    clocks[250]["trigger"] = 1
    return raw_records(clocks, deltas=rng.integers(1, 4, CAPACITY))


def _run(board):
    """What start_capture hands on (the parts the readout uses)."""
    return {"board": _Board(board), "mode": 0,
            "identity": {"clock_hz": 33_333_333, "clock_mhz": 33, "config.bus_width": 0},
            "settings": {"latency_timer": 0, "trigger": "now"}, "arm_time": ARM_TIME}


def _Board(transport):
    from pcispy.host.board import Board
    return Board(transport)


def _expected(memory, start, count):
    """The records in capture order, and the metadata finish_capture would write."""
    order = [(start + i) % len(memory) for i in range(count)]
    data = memory[order]
    start_timestamp = raw_start_timestamp(data.tobytes(), 16, TRIGGER_TIME, 32, 1)
    return data, start_timestamp


def _capture(board, path, **options):
    return asyncio.run(stream_capture_to_file(_run(board), str(path), **options))


def test_a_readout_in_blocks_writes_the_capture_in_order(tmp_path):
    memory = _memory(1)
    seen = []
    board = FakeBoard(memory, start=400, count=550)        # wraps at the capacity
    result = _capture(board, tmp_path / "t.pcitrace", block_bytes=16 * 64,
                      progress=lambda read, total: seen.append((read, total)))
    # Blocks of 64 records, one cut short at the end of the memory (index 600).
    assert [read for read, _ in seen] == [0, 64, 128, 192, 200, 264, 328, 392, 456, 520, 550]
    assert {total for _, total in seen} == {550} and board.reads == 10
    trace = read_trace(tmp_path / "t.pcitrace")
    data, start_timestamp = _expected(memory, 400, 550)
    assert trace.data.tobytes() == data.tobytes()
    assert trace.metadata["start_timestamp"] == start_timestamp
    assert trace.metadata["capture"]["time_base"] == "trigger"
    assert trace.metadata["readout"] == {"complete": True, "records_total": 550, "start": 400,
                                         "capacity": CAPACITY,
                                         "trigger_timestamp": TRIGGER_TIME}
    assert result["records_count"] == 550 and result["output"] == str(tmp_path / "t.pcitrace")


@pytest.mark.parametrize("fail_after", [0, 1, 3, 7])
def test_a_stopped_readout_leaves_a_partial_file_that_resumes(tmp_path, fail_after):
    memory = _memory(fail_after + 2)
    path = tmp_path / "deep.pcitrace"
    board = FakeBoard(memory, start=100, count=590, fail_after=fail_after)
    with pytest.raises(ReadoutStopped) as stopped:
        _capture(board, path, block_bytes=16 * 64, resume_command="RESUME")
    read = 64 * fail_after
    assert str(stopped.value) == (f"readout stopped (the side channel timed out) after {read} "
                                  f"of 590 records; {path} holds them: continue with RESUME")
    with pytest.raises(PartialReadout, match=f"partial readout: {read} of 590 records; "
                                             f"resume with `pcispy readout --resume {path}`"):
        read_trace(path)
    part = read_trace(path, partial=True)
    data, start_timestamp = _expected(memory, 100, 590)
    assert part.partial == (read, 590) and part.data.tobytes() == data[:read].tobytes()
    # The start time is in the file as soon as the trigger record (record 150) is.
    assert part.metadata["capture"]["time_base"] == ("trigger" if read > 150 else "arm")
    # A torn last record (the readout stopped while writing it) is left out, then cut off.
    with open(path, "ab") as file:
        file.write(bytes(7))
    assert len(read_trace(path, partial=True)) == read
    board.fail_after = None
    result = asyncio.run(resume_readout(board, path=str(path), block_bytes=16 * 100))
    assert result["records_before"] == read and result["records_count"] == 590
    trace = read_trace(path)
    assert trace.data.tobytes() == data.tobytes()
    assert trace.metadata["start_timestamp"] == start_timestamp
    assert trace.metadata["readout"]["complete"] is True


def test_resume_refuses_another_capture_and_leaves_the_file(tmp_path):
    memory = _memory(9)
    path = tmp_path / "deep.pcitrace"
    with pytest.raises(ReadoutStopped):
        _capture(FakeBoard(memory, start=0, count=500, fail_after=2), path,
                 block_bytes=16 * 64)
    before = path.read_bytes()
    other = FakeBoard(memory, start=0, count=500, trigger_time=TRIGGER_TIME + 1)
    with pytest.raises(PcispyError, match=f"cannot resume {path}: the board no longer holds "
                                          f"that capture \\(trigger_timestamp {TRIGGER_TIME} "
                                          f"in the file, {TRIGGER_TIME + 1} on the board\\); "
                                          "the file is left as it is"):
        asyncio.run(resume_readout(other, path=str(path)))
    other = FakeBoard(memory, start=3, count=499)
    with pytest.raises(PcispyError, match="start 0 in the file, 3 on the board; "
                                          "records_total 500 in the file, 499 on the board"):
        asyncio.run(resume_readout(other, path=str(path)))
    assert path.read_bytes() == before
    # A complete file has nothing to resume.
    asyncio.run(resume_readout(FakeBoard(memory, start=0, count=500), path=str(path)))
    with pytest.raises(PcispyError, match="the readout is complete \\(500 records\\)"):
        asyncio.run(resume_readout(FakeBoard(memory, start=0, count=500), path=str(path)))


def test_capture_status_names_the_stopped_capture():
    board = FakeBoard(_memory(1), start=7, count=9)
    status = asyncio.run(capture_status(_Board(board)))
    assert status == {"capacity": CAPACITY, "start": 7, "count": 9, "trigger_index": 0,
                      "lost": 0, "overruns": 0, "memory_fills": 0, "state": "done", "done": True,
                      "trigger_timestamp": TRIGGER_TIME, "triggered": True, "segment": 0}


def test_a_segmented_capture_reads_segment_after_segment_and_resumes(tmp_path):
    # Four segments of 150 records; three ended, the current one (index 3) holds 100 from
    # record 500 on. Each wraps inside its own segment.
    memory = _memory(5)
    ended = [(100, 150, 1_000), (170, 120, 2_000), (300, 40, 3_000)]
    layout = [(100, 150), (170, 120), (300, 40), (500, 100)]
    order = [base + (start - base + i) % 150 for start, count in layout
             for base in [start - start % 150] for i in range(count)]
    run = dict(_run(None), segments=4)
    path = tmp_path / "seg.pcitrace"

    def board(**options):
        fake = FakeBoard(memory, start=500, count=100, ended=ended, **options)
        run["board"] = _Board(fake)
        return fake
    board(fail_after=4)
    # Blocks of 60 records: 50 + 60 + 40 (the first segment, wrapping), then 60.
    with pytest.raises(ReadoutStopped, match="after 210 of 410 records"):
        asyncio.run(stream_capture_to_file(run, str(path), block_bytes=16 * 60))
    part = read_trace(path, partial=True)
    assert part.data.tobytes() == memory[order[:210]].tobytes()
    assert part.metadata["readout"]["segments"] == [list(e) for e in ended] + \
        [[500, 100, TRIGGER_TIME]]
    table = part.metadata["segments"]
    assert [(e["first_record"], e["records"]) for e in table] == \
        [(0, 150), (150, 120), (270, 40), (310, 100)]
    # Another segment table on the board: refused.
    with pytest.raises(PcispyError, match="segments .* in the file, .* on the board"):
        asyncio.run(resume_readout(FakeBoard(memory, start=500, count=100, ended=ended[:2]),
                                   path=str(path)))
    asyncio.run(resume_readout(FakeBoard(memory, start=500, count=100, ended=ended),
                               path=str(path)))
    trace = read_trace(path)
    assert trace.data.tobytes() == memory[order].tobytes()
    # Record 250 of the memory holds the trigger mark: in the second segment (170..289),
    # record 80 of it; that segment's time counts back from its trigger time.
    table = trace.metadata["segments"]
    assert [e["time_base"] for e in table] == ["arm", "trigger", "none", "none"]
    data = memory[order[150:270]].tobytes()
    assert table[1]["start_timestamp"] == raw_start_timestamp(data, 16, 2_000, 32, 1)


@pytest.fixture
def fake_simulator(monkeypatch):
    """The CLI's simulated board replaced by the FakeBoard ``fake_simulator.board``."""
    class Holder:
        board = None

    def simulate(args, feature, arguments):
        return asyncio.run(feature(Holder.board, **arguments))
    monkeypatch.setattr(cli, "_simulate", simulate)
    return Holder


def test_cli_decode_and_resume_of_a_partial_file(tmp_path, fake_simulator):
    memory = _memory(4)
    path = tmp_path / "deep.pcitrace"
    with pytest.raises(ReadoutStopped):
        _capture(FakeBoard(memory, start=0, count=500, fail_after=3), path,
                 block_bytes=16 * 64)
    status, out, err = run_cli("decode", str(path), "--format", "csv")
    assert status == 2 and out == ""
    assert err == (f"pcispy: error: {path}: partial readout: 192 of 500 records; resume with "
                   f"`pcispy readout --resume {path}` (with the transport of the board that "
                   "holds the capture), or decode the part read with --partial\n")
    status, out, err = run_cli("decode", str(path), "--format", "csv", "--partial")
    assert status == 0 and out.startswith("trans,time,addr,")
    assert err == f"pcispy: warning: {path} is a partial readout: 192 of 500 records decoded\n"
    before = path.read_bytes()
    fake_simulator.board = FakeBoard(memory, start=0, count=500, trigger_time=1)
    status, out, err = run_cli("readout", "--resume", str(path))
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"pcispy: error: cannot resume {path}: the board no longer holds")
    assert path.read_bytes() == before
    fake_simulator.board = FakeBoard(memory, start=0, count=500)
    status, out, err = run_cli("readout", "--resume", str(path))
    assert (status, err) == (0, "")
    assert out == f"{path}: 500 records, complete (308 read now)\n"
    assert read_trace(path).data.tobytes() == _expected(memory, 0, 500)[0].tobytes()
    status, out, err = run_cli("readout", "--resume", str(tmp_path / "none.pcitrace"))
    assert status == 2 and "no such file" in err


async def _stopped_and_resumed(transport, *, path, stop_at):
    """A feature (run in the simulator): a raw capture of every clock that fills the trace
    memory, its readout stopped (Ctrl-C) once ``stop_at`` records are in the file, then
    resumed; and the same capture as finish_capture reads it (in memory), to compare."""
    from pcispy.spy.capture_feature import finish_capture, start_capture, wait_capture
    run = await start_capture(transport, mode="raw", idle_compress=False, violations="none")
    await wait_capture(run, duration=0.0002)
    await run["board"].write("spy.control", stop=1)
    status = await capture_status(run["board"])

    def progress(read, total):
        if read >= stop_at:
            raise KeyboardInterrupt
    try:
        await stream_capture_to_file(run, path, status=status, progress=progress,
                                     timed_out=True)
        stopped = None
    except ReadoutStopped as error:
        stopped = str(error)
    part = os.path.getsize(path)
    resumed = await resume_readout(transport, path=path)
    reference = await finish_capture(run, timed_out=True)
    return {"stopped": stopped, "part": part, "resumed": resumed, "reference": reference}


def test_simulated_capture_stopped_and_resumed(tmp_path):
    from pcispy.sim.launcher import run_feature
    path = str(tmp_path / "sim.pcitrace")
    result = run_feature(_stopped_and_resumed, {"path": path, "stop_at": 1000})
    reference = result["reference"]
    count = reference["records_count"]
    assert count == reference["status"]["capacity"] == 4096     # the memory filled
    assert result["stopped"] == (f"readout stopped (interrupted) after 2048 of {count} "
                                 f"records; {path} holds them: continue with pcispy readout "
                                 f"--resume {path} (with the same transport options)")
    assert result["resumed"]["records_before"] == 2048
    trace = read_trace(path)
    assert trace.data.tobytes() == base64.b64decode(reference["records"])
    metadata = dict(trace.metadata)
    assert metadata.pop("readout") == {
        "complete": True, "records_total": count, "start": reference["status"]["start"],
        "capacity": count, "trigger_timestamp": reference["status"]["trigger_timestamp"]}
    assert metadata == read_trace_metadata(reference)


def read_trace_metadata(result):
    """The metadata of the file finish_capture's result makes (defaults filled in)."""
    from pcispy.trace.file import parse_trace
    return parse_trace(trace_bytes(base64.b64decode(result["records"]),
                                   result["metadata"])).metadata


def test_every_segments_time_base_is_written_back(tmp_path):
    # 64 segments of 9 records (576 of the 600), each holding 2 records from an even index,
    # the first with the trigger mark: every segment's start time (15 digits) is found and
    # written back.
    memory = raw_records([{"trigger": 1}, {}] * 300, deltas=1)
    times = [(1 << 47) - 1000 * index for index in range(64)]
    starts = [9 * index + index % 2 for index in range(64)]
    ended = [(starts[index], 2, times[index]) for index in range(63)]
    run = dict(_run(None), segments=64)
    run["board"] = _Board(FakeBoard(memory, start=starts[63], count=2,
                                    trigger_time=times[63], ended=ended))
    asyncio.run(stream_capture_to_file(run, str(tmp_path / "many.pcitrace")))
    table = read_trace(tmp_path / "many.pcitrace").metadata["segments"]
    assert [(entry["time_base"], entry["start_timestamp"]) for entry in table] == \
        [("trigger", time) for time in times]
