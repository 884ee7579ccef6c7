# SPDX-License-Identifier: BSD-2-Clause
"""Streaming readout of a stopped capture into a ``.pcitrace`` file, with progress and
resume, and the ``pcispy readout`` command.

A capture on the ULX3S's SDRAM holds up to 2,097,152 raw records (32 MiB): over the UART
side channel at 115200 baud that is some fifty minutes of reading. So the records are not
gathered in memory: :func:`stream_capture_to_file` writes the header and metadata as soon
as the capture has stopped (everything in them is known then), then reads the records out
of BAR1 a block at a time (:func:`block_records`), appending each block to the file and
reporting ``progress(records read, records in all)``. Memory holds one block.

The file says how far the readout got: its metadata key ``readout`` (pcispy/trace/file.py)
names the capture (``start``, ``records_total``, ``capacity``, ``trigger_timestamp``) and
stays ``complete: false`` until the last record is in; the records read are the whole
records the file holds. A readout that stops (Ctrl-C, a transport error) leaves that partial
file and ends in one line naming the command that continues it:
``pcispy readout --resume FILE`` (:func:`resume_readout`) checks that the board still holds
the same stopped capture (start, record count, capacity, trigger time) and reads the rest.
``pcispy decode`` refuses a partial file, or decodes the part read with ``--partial``.

A raw capture's ``start_timestamp`` (the time its first delta counts from) depends on where
its trigger record is (:func:`~pcispy.spy.capture_feature.raw_start_timestamp`):
:class:`TriggerTime` finds it as the blocks arrive, and the metadata is rewritten in place
once it is known.

The command line imports this module whatever the command; numpy, the trace file and the
record layouts (pcispy/spy/format.py, Amaranth) load where a readout uses them.
"""

import bisect
import itertools
import os
import sys

from pcispy.host.board import Board
from pcispy.host.command import CliCommand, run_feature
from pcispy.host.errors import PcispyError, TransportError
from pcispy.spy.registers import SPY_MASTERS, CaptureMode, RecorderState

__all__ = ["BLOCK_BYTES", "UART_BLOCK_BYTES", "ReadoutStopped", "TriggerTime",
           "block_records", "capture_status", "stream_capture_to_file", "resume_readout",
           "ReadoutCommand", "TRACE_BAR", "CAPTURE_STATUS", "SEGMENT_FIELDS", "SPY_MASTERS",
           "trace_metadata", "segment_entry", "resume_command"]

#: Bytes read out of BAR1 per block (one transport block read, one append to the file).
BLOCK_BYTES = 32 << 10
#: Bytes per block over the UART side channel: at 115200 baud a 1 KiB block takes about
#: 0.1 s, so progress moves and an interruption loses little.
UART_BLOCK_BYTES = 1 << 10
#: The status registers of a stopped capture (``spy.<name>``): where its records are,
#: what it lost, and the times the trace memory's FIFO filled.
CAPTURE_STATUS = ("capacity", "start", "count", "trigger_index", "lost", "overruns",
                  "memory_fills")


#: The BAR the trace memory answers.
TRACE_BAR = 1


def trace_metadata(*, mode, width, masters, clock_mhz, settings, status, start_timestamp,
                   latency_timer):
    """The ``.pcitrace`` metadata of a capture (keys: pcispy/trace/file.py)."""
    # the record layouts load where a capture is read (the module's docstring)
    from pcispy.spy.format import RecordKind, record_bits, record_layouts
    mode = CaptureMode(mode)
    kind = RecordKind.RAW if mode is CaptureMode.RAW else RecordKind.SUMMARY
    return {
        "mode": mode.name.lower(), "bus_width": width, "masters": masters,
        "clock_mhz": clock_mhz, "record_bits": record_bits(mode),
        "record_layout": type(record_layouts(width, masters)[kind]).__name__,
        "capture": settings, "overruns": status["overruns"], "lost": status["lost"],
        "memory_fills": status.get("memory_fills", 0),
        "start_timestamp": start_timestamp,
        # Raw records are pushed one clock after the bus clock they hold.
        "raw_time_offset": 1 if mode is CaptureMode.RAW else 0,
        "latency_timer": latency_timer,
    }


#: What a segment's entry holds: the status registers of the current segment, the
#: ``segment_*`` registers of one that ended.
SEGMENT_FIELDS = ("start", "count", "trigger_index", "trigger_timestamp")


async def segment_entry(board, index):
    """The segment table's entry of segment ``index`` (one that ended)."""
    await board.write("spy.segment_select", segment=index)
    entry = {name: await board.read(f"spy.segment_{name}")
             for name in ("start", "count", "trigger_index")}
    entry["trigger_timestamp"] = await board.read64("spy.segment_trigger_time")
    return entry


class ReadoutStopped(PcispyError):
    """A readout stopped before its last record; the file holds the records read."""


def block_records(transport, record_bytes, block_bytes=None):
    """Records read per block: ``block_bytes`` (default :data:`BLOCK_BYTES`, over the UART
    :data:`UART_BLOCK_BYTES`) of whole records, at least one."""
    if block_bytes is None:
        block_bytes = UART_BLOCK_BYTES if transport.kind == "uart" else BLOCK_BYTES
    return max(1, block_bytes // record_bytes)


async def capture_status(board):
    """The status of the board's capture: the registers of :data:`CAPTURE_STATUS`, ``segment``
    (the current one), ``state``, ``done``, ``trigger_timestamp`` and ``triggered`` (as
    ``finish_capture`` reads them)."""
    status = {name: await board.read(f"spy.{name}") for name in CAPTURE_STATUS}
    status["segment"] = (await board.fields("spy.segments"))["current"]
    fields = await board.fields("spy.status")
    status["state"] = RecorderState(fields["state"]).name.lower()
    status["done"] = bool(fields["done"])
    status["trigger_timestamp"] = await board.read64("spy.trigger_time")
    # The timestamp counts from reset, so a trigger never fires at time 0.
    status["triggered"] = status["trigger_timestamp"] != 0
    return status


class TriggerTime:
    """A raw capture's ``start_timestamp`` from its records as they arrive, block by block:
    the trigger record's time is the trigger timestamp, so the start is that less the
    deltas up to it. :attr:`value` is None until found, and stays None when a
    time-anchoring event record comes first (the capture then keeps its arm time).
    :attr:`done`: nothing more can change it."""
    def __init__(self, trigger_timestamp, width, masters):
        # the record layouts load where a capture is read (the module's docstring)
        from pcispy.spy.format import record_bits
        self.trigger_timestamp = trigger_timestamp
        self.metadata = {"mode": "raw", "bus_width": width, "masters": masters,
                         "record_bits": record_bits(CaptureMode.RAW), "start_timestamp": 0,
                         "raw_time_offset": 1}
        self.value = None
        self.done = False
        self._after = 0

    def feed(self, records):
        """Take the next block (bytes or a uint8 array of whole raw-capture records)."""
        if self.done:
            return
        # numpy and the trace file load where a capture is read (the module's docstring)
        import numpy as np
        from pcispy.spy.format import RecordKind
        from pcispy.trace.file import Trace
        data = np.frombuffer(records, dtype=np.uint8) if isinstance(records, bytes) \
            else records
        trace = Trace(self.metadata, data)
        times = trace.times(self._after)
        raw_at = trace.indices(RecordKind.RAW)
        marked = raw_at[trace.columns(RecordKind.RAW, ["trigger"])["trigger"] == 1]
        anchors = np.flatnonzero((trace.kinds != RecordKind.RAW.value) &
                                 (trace.kinds != RecordKind.EMPTY.value))
        if len(marked) and (not len(anchors) or anchors[0] > marked[0]):
            self.value = int(self.trigger_timestamp - times[marked[0]])
            self.done = True
        elif len(anchors):
            self.done = True
        else:
            self._after = trace.time_after(times)


def _with_start(metadata, segment, value):
    """``metadata`` of a raw capture whose segment ``segment`` (0: the first, or the only
    one) starts at time ``value`` (found from its trigger record)."""
    value = max(0, value)
    metadata = dict(metadata)
    if segment == 0:
        metadata.update(start_timestamp=value,
                        capture=dict(metadata["capture"], time_base="trigger"))
    if "segments" in metadata:
        table = [dict(entry) for entry in metadata["segments"]]
        table[segment].update(start_timestamp=value, time_base="trigger")
        metadata["segments"] = table
    return metadata


def _resume_hint(path, command):
    return command or f"pcispy readout --resume {path} (with the same transport options)"


class _Layout:
    """Where the records of the file are in the trace memory: the segments' ``entries``
    (``start``, ``count``, in capture order) one after the other, each wrapping inside its
    ``size`` records (the memory's capacity over the segments configured)."""
    def __init__(self, entries, size):
        self.entries = entries
        self.size = size
        self.firsts = list(itertools.accumulate([entry["count"] for entry in entries],
                                                initial=0))
        self.total = int(self.firsts[-1])

    def segment_of(self, record):
        """The segment the file's record ``record`` belongs to."""
        return bisect.bisect_right(self.firsts, record) - 1

    def run(self, record, most):
        """``(segment, memory index, records)``: the run of at most ``most`` records from
        the file's record ``record`` that are consecutive in the memory."""
        segment = self.segment_of(record)
        entry = self.entries[segment]
        offset = record - int(self.firsts[segment])
        base = entry["start"] - entry["start"] % self.size
        index = base + (entry["start"] - base + offset) % self.size
        return segment, index, min(most, entry["count"] - offset, base + self.size - index)


def _readout_metadata(entries, capacity):
    """The ``readout`` metadata naming the capture of ``entries`` (its segments)."""
    readout = {"complete": False, "records_total": sum(e["count"] for e in entries),
               "start": entries[0]["start"], "capacity": capacity,
               "trigger_timestamp": entries[0]["trigger_timestamp"]}
    if len(entries) > 1:
        readout["segments"] = [[e["start"], e["count"], e["trigger_timestamp"]]
                               for e in entries]
    return readout


async def _read_rest(transport, writer, layout, *, progress, block, trackers, hint):
    """Append the records of ``layout`` after the ``writer.records`` the file holds, a
    block at a time (``trackers``: a :class:`TriggerTime` per segment of a raw capture,
    else None); then mark the readout complete. A stop on the way raises
    :class:`ReadoutStopped` naming how far it got and ``hint``, the command that
    resumes."""
    # numpy loads where a capture is read (the module's docstring); asyncio, for its
    # CancelledError, where a readout runs, not with the command line
    import asyncio
    import numpy as np
    record_bytes = writer.record_bytes
    words = record_bytes // 4
    total = layout.total
    metadata = writer.metadata
    if progress is not None:
        progress(writer.records, total)
    try:
        while writer.records < total:
            segment, index, run = layout.run(writer.records, block)
            values = await transport.read_block(TRACE_BAR, index * record_bytes, run * words)
            data = np.asarray(values, dtype="<u4").view(np.uint8)
            writer.append(data)
            tracker = trackers[segment] if trackers else None
            if tracker is not None and not tracker.done:
                tracker.feed(data)
                if tracker.value is not None:
                    metadata = _with_start(metadata, segment, tracker.value)
                    writer.update(metadata)
            if progress is not None:
                progress(writer.records, total)
        writer.update(dict(metadata, readout=dict(metadata["readout"], complete=True)))
    except (KeyboardInterrupt, asyncio.CancelledError, TransportError, OSError) as error:
        why = "interrupted" if isinstance(error, (KeyboardInterrupt,
                                                   asyncio.CancelledError)) else str(error)
        raise ReadoutStopped(f"readout stopped ({why}) after {writer.records} of {total} "
                             f"records; {writer.path} holds them: continue with "
                             f"{hint}") from None
    finally:
        writer.close()
    return writer.metadata


def _trackers(mode, entries, width, masters):
    """A :class:`TriggerTime` per segment of a raw capture (None for a summary capture)."""
    if CaptureMode(mode) is not CaptureMode.RAW:
        return None
    return [TriggerTime(entry["trigger_timestamp"], width, masters) for entry in entries]


async def stream_capture_to_file(run, path, *, status=None, entries=None, interrupted=False,
                                 timed_out=False, progress=None, block_bytes=None,
                                 resume_command=None):
    """Read the stopped capture of ``run`` (``start_capture``'s state) out of BAR1 into the
    ``.pcitrace`` file ``path`` a block at a time (:func:`block_records`), writing the
    header and metadata first. ``status``: the capture's :func:`capture_status` (None:
    stop the capture, wait for its last records and read it here); ``entries``: the
    segments of a segmented capture in order, each ``{"start", "count",
    "trigger_index", "trigger_timestamp"}`` (None: read from the board);
    ``interrupted`` and ``timed_out`` how the wait for it ended (into the metadata's
    capture settings); ``progress``: ``callable(records read, records in all)``;
    ``resume_command``: the command line a stopped readout names to continue it.

    The metadata is that of ``finish_capture``'s result and ``readout``. Returns the
    result of ``capture`` without its records: ``{"metadata", "records_count",
    "status", "interrupted", "timed_out", "output"}``. A readout that stops raises
    :class:`ReadoutStopped`, leaving the partial file."""
    board = run["board"]
    transport = board.transport
    if status is None:
        clock_hz = run["identity"]["clock_hz"]
        await board.write("spy.control", stop=1)
        while not (await board.fields("spy.status"))["done"]:
            await transport.sleep(16 / clock_hz)
        status = await capture_status(board)
    if entries is None:
        entries = await _board_entries(board, status)
    mode = CaptureMode(run["mode"])
    width = 64 if run["identity"]["config.bus_width"] else 32
    layout = _Layout(entries, status["capacity"] // run.get("segments", 1))
    # Until a segment's trigger record is read, its records count from the arm (the
    # first) or from its trigger (a later one, not known better).
    table = []
    for index, entry in enumerate(entries):
        table.append({"index": index, "first_record": int(layout.firsts[index]),
                      "records": entry["count"], "start": entry["start"],
                      "trigger_index": entry["trigger_index"],
                      "trigger_timestamp": entry["trigger_timestamp"],
                      "triggered": entry["trigger_timestamp"] != 0,
                      "start_timestamp": max(0, run["arm_time"] if index == 0 else
                                             entry["trigger_timestamp"]),
                      "time_base": "arm" if index == 0 else "none"})
    triggered = any(entry["triggered"] for entry in table)
    settings = dict(run["settings"], time_base="arm",
                    trigger_timestamp=entries[0]["trigger_timestamp"],
                    trigger_index=entries[0]["trigger_index"], triggered=triggered,
                    interrupted=interrupted, timed_out=timed_out)
    status = dict(status, triggered=triggered)
    metadata = trace_metadata(mode=mode, width=width, masters=SPY_MASTERS,
                              clock_mhz=run["identity"]["clock_mhz"], settings=settings,
                              status=status, start_timestamp=table[0]["start_timestamp"],
                              latency_timer=run["settings"]["latency_timer"])
    if run.get("segments", 1) > 1:
        metadata["segments"] = table
    metadata["readout"] = _readout_metadata(entries, status["capacity"])
    # the trace file loads where a capture is read (the module's docstring)
    from pcispy.trace.file import TraceFileWriter
    # Room for each segment's time base, found as the records come ("trigger" in place
    # of "arm" or "none", a start time of other digits).
    writer = TraceFileWriter(path, metadata, reserve=256 + 32 * len(entries))
    metadata = await _read_rest(transport, writer, layout, progress=progress,
                                block=block_records(transport, writer.record_bytes,
                                                    block_bytes),
                                trackers=_trackers(mode, entries, width, SPY_MASTERS),
                                hint=_resume_hint(path, resume_command))
    return {"metadata": metadata, "records_count": layout.total, "status": status,
            "interrupted": interrupted, "timed_out": timed_out, "output": path}


async def _board_entries(board, status):
    """The segments the board's capture holds, in order (as ``finish_capture`` reads
    them): those that ended from the segment table, then the current one."""
    current = (await board.fields("spy.segments"))["current"]
    entries = [await segment_entry(board, index) for index in range(current)]
    entries.append({name: status[name] for name in ("start", "count", "trigger_index",
                                                    "trigger_timestamp")})
    return entries


async def resume_readout(transport, *, path, progress=None, block_bytes=None,
                         resume_command=None):
    """A feature: continue the partial readout in the file ``path`` from the board
    (``pcispy readout --resume``), after checking that the board holds the same stopped
    capture (every segment's start, record count and trigger time, and the capacity); the
    file is not touched when it does not (one error line). Returns ``{"output",
    "records_count", "records_before", "metadata"}``."""
    # the trace file loads where a capture is read (the module's docstring)
    from pcispy.trace.file import TraceFileWriter, read_trace
    try:
        trace = read_trace(path, partial=True)
    except PcispyError as error:
        raise PcispyError(f"cannot resume: {error}") from None
    readout = trace.metadata.get("readout")
    if readout is None:
        raise PcispyError(f"{path} was not written by a readout (its metadata has no "
                          "'readout'): there is nothing to resume")
    if readout["complete"]:
        raise PcispyError(f"{path}: the readout is complete ({len(trace)} records); there "
                          "is nothing to resume")
    board = Board(transport)
    status = await capture_status(board)
    if not status["done"]:
        raise PcispyError(f"cannot resume {path}: the board's capture is {status['state']}, "
                          "not stopped (was it armed again?)")
    entries = await _board_entries(board, status)
    on_board = _readout_metadata(entries, status["capacity"])
    keys = ("start", "records_total", "capacity", "trigger_timestamp", "segments")
    differ = [f"{key} {readout.get(key)} in the file, {on_board.get(key)} on the board"
              for key in keys if readout.get(key) != on_board.get(key)]
    if differ:
        raise PcispyError(f"cannot resume {path}: the board no longer holds that capture "
                          f"({'; '.join(differ)}); the file is left as it is")
    settings = trace.metadata["capture"]
    segments = settings.get("segments", 1) if isinstance(settings, dict) else 1
    layout = _Layout(entries, status["capacity"] // segments)
    trackers = _trackers(trace.mode, entries, trace.width, trace.masters)
    found = {}
    if trackers:
        # The time bases of the segments read so far, found again from their records.
        for first, chunk in trace.chunks():
            for segment in range(layout.segment_of(first),
                                 layout.segment_of(first + len(chunk) - 1) + 1):
                low = max(first, int(layout.firsts[segment])) - first
                high = min(first + len(chunk), int(layout.firsts[segment + 1])) - first
                trackers[segment].feed(chunk.data[low:high].reshape(-1))
                if trackers[segment].value is not None:
                    found[segment] = trackers[segment].value
    before = len(trace)
    del trace                               # unmap the file before it is written
    writer = TraceFileWriter.reopen(path)
    metadata = writer.metadata
    for segment, value in found.items():
        metadata = _with_start(metadata, segment, value)
    if found:
        writer.update(metadata)
    metadata = await _read_rest(transport, writer, layout, progress=progress,
                                block=block_records(transport, writer.record_bytes,
                                                    block_bytes),
                                trackers=trackers, hint=_resume_hint(path, resume_command))
    return {"output": path, "records_count": layout.total, "records_before": before,
            "metadata": metadata}


class ReadoutCommand(CliCommand):
    name = "readout"
    help = ("continue the readout of a capture into a partial .pcitrace file (--resume), "
            "from the board that still holds it")
    examples = (
        "pcispy --uart /dev/ttyUSB0 readout --resume deep.pcitrace",
        "pcispy --sysfs 0000:03:00.0 readout --resume deep.pcitrace",
    )

    def add_arguments(self, parser):
        parser.add_argument("--resume", required=True, metavar="FILE",
                            help="the partial .pcitrace file a stopped `pcispy capture -o "
                                 "FILE` (or readout) left")

    def run(self, args, out):
        path = os.path.abspath(args.resume)
        if not os.path.isfile(path):
            raise PcispyError(f"cannot resume {args.resume}: no such file")
        arguments = {"path": path, "resume_command": resume_command(args, args.resume)}
        result = _run_with_progress(args, resume_readout, arguments,
                                    f"reading out the capture into {args.resume}")
        if not args.json:
            out.write(f"{args.resume}: {result['records_count']} records, complete "
                      f"({result['records_count'] - result['records_before']} read now)\n")
        return result


def resume_command(args, path):
    """The command line that continues a readout into ``path`` on the transport of
    ``args`` (the global options)."""
    if args.sysfs is not None:
        transport = f"--sysfs {args.sysfs} "
    elif args.uart is not None:
        transport = f"--uart {args.uart} --baud {args.baud} "
    else:
        # The simulated board that holds the capture: the session these options name.
        transport = f"--sim={args.sim} " if args.sim else ""
        if args.bus_width != 32:
            transport += f"--bus-width {args.bus_width} "
        if args.seed != 1:
            transport += f"--seed {args.seed} "
        if args.session:
            transport += f"--session {args.session} "
    return f"`pcispy {transport}readout --resume {path}`"


def _run_with_progress(args, feature, arguments, label):
    """Run ``feature`` with a progress bar of the records read on a terminal when it runs
    in this process (--sysfs, --uart), a spinner when it runs in the simulator's."""
    if not sys.stderr.isatty() or args.json:
        return run_feature(args, feature, **arguments)
    live = args.sysfs is not None or args.uart is not None
    # rich's progress display loads only for one (a terminal)
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeRemainingColumn)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task(label + ("" if live else " (in the simulator)"), total=None)
        if live:
            def progress(read, total):
                bar.update(task, completed=read, total=total)
            arguments = dict(arguments, progress=progress)
        return run_feature(args, feature, **arguments)
