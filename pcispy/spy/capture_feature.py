# SPDX-License-Identifier: BSD-2-Clause
"""Bus capture with the spy, and the ``pcispy capture`` command.

:func:`capture` programs the ``spy`` register block (filters, trigger, pre-trigger depth,
record count, ring mode), arms, waits while the capture fills (polling ``spy.status`` and
``spy.count`` every ``poll`` seconds of bus time), then reads the valid records out of
BAR1 and returns them with the trace metadata of pcispy/trace/file.py; the CLI writes them as a
``.pcitrace`` file. A stop by the user (Ctrl-C on hardware) or the end of ``duration``
stops the capture and keeps what it holds.

How long it waits: on hardware, until the capture stops by itself (its count reached, the
memory full), the end of ``duration``, or Ctrl-C, as an analyzer waits for its trigger
(the CLI shows the count live meanwhile). In simulation nobody can press Ctrl-C and no
traffic comes but the scenario's (``--sim=rtc``): without ``duration`` the wait ends after
``limit`` seconds of simulated bus time (:data:`SIM_WAIT_LIMIT`, ``--sim-limit``), and the
result says so (``limit_reached``). The CLI then writes what the capture holds when its
trigger fired and it holds records; otherwise (nothing matched the filters, or the trigger
never fired) it writes no file and ends with one line saying so, exit status 2.

The capture's settings, as the command line gives them, are read and checked by
:mod:`pcispy.spy.capture_settings_feature`.

Traffic the tool itself makes while it waits (its status polls of BAR0) is on the bus but
is no part of what the user watches, as an analyzer's own control traffic is not:
:func:`start_capture` leaves it out of a summary capture (and of a raw one with
``--select``) with an exclude comparator on BAR0 when one is free (``own=True``, the
CLI's ``--own``, keeps it; over the side channel there is none). The CLI's
``--violations`` default is ``none`` for a summary capture, whose violation events would
take a record each (a bridge that breaks a rule in every transaction doubles the trace),
and ``all`` for a raw one (a raw record carries the clock's violation itself) or a
violation trigger. The summary line says what was left out.

The command line imports this module whatever the command; numpy, the trace file and the
spy's gateware declarations (record layouts, filter command sets) load where a capture
uses them.
"""

import base64
import os
import sys

from pcispy.spy.registers import (MAX_SEGMENTS, SPY_FILTERS, TRIGGER_PULSE_NS, CaptureMode,
                                  FilterCombine, RecorderState)
from pcispy.host.board import Board
from pcispy.host.command import (CliCommand, int_range, positive_seconds, refuse_overwrite,
                                 run_feature, writable_path)
from pcispy.host.errors import PcispyError, RefusedSetting, UsageError
from pcispy.spy.capture_settings_feature import (ADDRESS_BITS, EDGES, TRIGGER_OUTPUTS, FilterSpec,
                                               check_settings, parse_segments)
from pcispy.spy.readout_feature import (CAPTURE_STATUS, SEGMENT_FIELDS, SPY_MASTERS, TRACE_BAR,
                                capture_status, resume_command as resume_line,
                                segment_entry, stream_capture_to_file, trace_metadata)
from pcispy.board.registers import BAR0_SIZE

__all__ = ["capture", "start_capture", "wait_capture", "finish_capture", "CaptureCommand",
           "SIM_WAIT_LIMIT", "raw_start_timestamp", "read_trace_memory", "program_filters",
           "readout_rate"]

#: 32-bit words read from BAR1 per transport block read.
_READ_WORDS = 2048
#: Seconds of simulated bus time a capture without ``duration`` waits at most in simulation
#: (3.3 million clocks at 33 MHz: about a hundred clock ticks of the rtc scenario).
SIM_WAIT_LIMIT = 0.1


async def program_filters(board, filters, combine="any"):
    """Write every comparator: ``filters`` (FilterSpec dicts) first, the rest disabled."""
    if len(filters) > SPY_FILTERS:
        raise PcispyError(f"{len(filters)} filters given; the spy has {SPY_FILTERS} "
                          "comparators")
    # the filters' gateware module declares the command sets (the module's docstring)
    from pcispy.spy.filters import ALL_COMMANDS
    for index in range(SPY_FILTERS):
        spec = filters[index] if index < len(filters) else \
            FilterSpec(enable=0, exclude=0, commands=ALL_COMMANDS, address=0, mask=0)
        name = f"spy.filter{index}"
        await board.write(f"{name}_address_lo", spec["address"] & 0xFFFF_FFFF)
        await board.write(f"{name}_address_hi", spec["address"] >> 32)
        await board.write(f"{name}_mask_lo", spec["mask"] & 0xFFFF_FFFF)
        await board.write(f"{name}_mask_hi", spec["mask"] >> 32)
        await board.write(f"{name}_control", enable=spec["enable"], exclude=spec["exclude"],
                          commands=spec["commands"])
    return FilterCombine[combine.upper()]


async def read_trace_memory(transport, start, count, capacity, record_bytes):
    """``count`` records from index ``start`` (wrapping at ``capacity``) out of BAR1, as
    bytes in capture order."""
    words_per_record = record_bytes // 4
    parts = []
    index, left = start, count
    while left:
        run = min(left, capacity - index, _READ_WORDS // words_per_record)
        words = await transport.read_block(TRACE_BAR, index * record_bytes,
                                           run * words_per_record)
        parts.append(b"".join(word.to_bytes(4, "little") for word in words))
        index, left = (index + run) % capacity, left - run
    return b"".join(parts)


def raw_start_timestamp(data, record_bytes, trigger_timestamp, width, masters):
    """The ``start_timestamp`` of a raw capture whose trigger record (the raw record with its
    ``trigger`` bit) is among ``data``: the time its first delta counts from, so that the
    trigger record's time (pcispy/trace/file.py ``Trace.times``) is ``trigger_timestamp``. None
    when no trigger record precedes every time-anchoring event record."""
    # numpy and the trace format load where a trace is read (the module's docstring)
    import numpy as np
    from pcispy.spy.format import RecordKind
    from pcispy.trace.file import Trace
    trace = Trace({"mode": "raw", "bus_width": width, "masters": masters,
                   "record_bits": record_bytes * 8, "start_timestamp": 0,
                   "raw_time_offset": 1}, np.frombuffer(data, dtype=np.uint8))
    raw_at = trace.indices(RecordKind.RAW)
    marked = raw_at[trace.columns(RecordKind.RAW, ["trigger"])["trigger"] == 1]
    anchors = np.flatnonzero((trace.kinds != RecordKind.RAW.value) &
                             (trace.kinds != RecordKind.EMPTY.value))
    if not len(marked) or (len(anchors) and anchors[0] < marked[0]):
        return None
    return int(trigger_timestamp - trace.times()[marked[0]])


async def _status(board):
    fields = await board.fields("spy.status")
    return {"state": RecorderState(fields["state"]).name.lower(), "done": fields["done"],
            "count": await board.read("spy.count")}


async def _own_exclusion(board, specs, mode, raw_select, own):
    """The exclude comparator that keeps the board's own register accesses (BAR0) out of
    the capture, or None: kept (``own``), no comparator free, a raw capture of every
    clock, or no PCI access of the tool's (the side channel)."""
    transport = board.transport
    if own or len(specs) >= SPY_FILTERS or transport.kind == "uart" or \
            (mode == "raw" and not raw_select):
        return None
    base = await transport.config_read(0x10) & ~0xF
    # the filters' gateware module declares the command sets (the module's docstring)
    from pcispy.spy.filters import MEMORY_COMMANDS
    return FilterSpec(enable=1, exclude=1, commands=MEMORY_COMMANDS, address=base,
                      mask=((1 << ADDRESS_BITS) - 1) & ~(BAR0_SIZE - 1))


async def start_capture(transport, *, mode="summary", filters=(), combine="any",
                        trigger="now", pre=0, count=0, ring=False, idle_compress=True,
                        raw_select=False, latency_timer=0, violations="all", duration=None,
                        edge="rising", markers=False, trigger_out="pulse", segments=1,
                        own=True):
    """Check the settings, program the spy and arm it (parameters as :func:`capture`;
    ``duration`` is only checked here: a ring capture triggered at once needs it or
    ``count``). Returns the run's state for :func:`wait_capture` and
    :func:`finish_capture`."""
    specs, source, violation_mask = check_settings(mode=mode, filters=filters,
                                                   combine=combine, trigger=trigger, pre=pre,
                                                   count=count, latency_timer=latency_timer,
                                                   violations=violations, ring=ring,
                                                   duration=duration,
                                                   idle_compress=idle_compress,
                                                   raw_select=raw_select, edge=edge,
                                                   markers=markers, trigger_out=trigger_out,
                                                   segments=segments)
    board = Board(transport)
    identity = await board.identify()
    capture_mode = CaptureMode[mode.upper()]
    await board.write("spy.control", stop=1)
    exclusion = await _own_exclusion(board, specs, mode, raw_select, own)
    combine_value = await program_filters(board, specs + ([exclusion] if exclusion else []),
                                          combine.lower())
    await board.write("spy.config", mode=capture_mode.value, source=source.value,
                      ring=int(bool(ring)), idle_compress=int(bool(idle_compress)),
                      raw_select=int(bool(raw_select)), combine=combine_value.value,
                      latency_timer=latency_timer)
    await board.write("spy.pre", pre)
    await board.write("spy.post", count)
    await board.write("spy.violation_mask_lo", violation_mask & 0xFFFF_FFFF)
    await board.write("spy.violation_mask_hi", violation_mask >> 32)
    await board.write("spy.trigger_io", falling=EDGES[edge], markers=int(bool(markers)),
                      out_level=TRIGGER_OUTPUTS[trigger_out])
    await board.write("spy.segments", log2=parse_segments(segments))
    arm_time = await board.read64("irq.now")
    await board.write("spy.control", arm=1)
    refused = await board.fields("spy.status")
    if refused["pre_error"] or refused["segment_error"]:
        capacity = await board.read("spy.capacity")
        if refused["segment_error"]:
            raise RefusedSetting(f"--segments {segments}: the trace memory holds {capacity} "
                                 f"{mode} records, fewer than that")
        each = (f"each of the {segments} segments holds {capacity // segments}"
                if segments > 1 else f"the trace memory holds {capacity}")
        raise RefusedSetting(f"--pre {pre}: {each} {mode} records; keep fewer than that "
                             "before the trigger")
    settings = {"filters": [dict(s) for s in specs], "combine": combine.lower(),
                "trigger": trigger, "pre": pre, "count": count, "ring": bool(ring),
                "idle_compress": bool(idle_compress), "raw_select": bool(raw_select),
                "latency_timer": latency_timer, "violations": violations,
                "duration": duration, "edge": edge, "markers": bool(markers),
                "trigger_out": trigger_out, "segments": segments,
                "own_left_out": exclusion is not None}
    return {"board": board, "identity": identity, "mode": capture_mode,
            "settings": settings, "arm_time": arm_time, "segments": segments,
            "capacity": await board.read("spy.capacity")}


async def wait_capture(run, *, duration=None, poll=0.0005, progress=None):
    """Poll until the capture stops by itself, ``duration`` seconds (bus time) pass, or the
    user interrupts (Ctrl-C). Returns ``(interrupted, timed_out)``."""
    # asyncio (for its CancelledError) loads where a capture waits, not with the command line
    import asyncio
    board = run["board"]
    clock_hz = run["identity"]["clock_hz"]
    waited = 0.0
    try:
        while True:
            status = await _status(board)
            if progress is not None:
                progress(status["count"], run["capacity"], status["state"])
            if status["state"] == "done":
                return False, False
            if duration is not None and waited >= duration:
                return False, True
            step = poll if duration is None else min(poll, duration - waited)
            await board.transport.sleep(max(step, 1 / clock_hz))
            waited += step
    except (KeyboardInterrupt, asyncio.CancelledError):
        return True, False


async def finish_capture(run, *, interrupted=False, timed_out=False, output=None,
                         progress=None, resume_command=None):
    """Stop the capture (if it still runs), wait for its last records, read them out of
    BAR1. Returns the result of :func:`capture`. With ``output`` (a path) the records are
    streamed into that ``.pcitrace`` file a block at a time instead
    (pcispy/spy/readout_feature.py: ``progress(records read, records in all)``, and
    ``resume_command`` the line a stopped readout names), and the result has no
    ``records`` but ``output``."""
    board = run["board"]
    transport = board.transport
    clock_hz = run["identity"]["clock_hz"]
    await board.write("spy.control", stop=1)
    while not (await board.fields("spy.status"))["done"]:
        await transport.sleep(16 / clock_hz)
    status = {name: await board.read(f"spy.{name}") for name in CAPTURE_STATUS}
    status["state"] = RecorderState((await board.fields("spy.status"))["state"]).name.lower()
    status["trigger_timestamp"] = await board.read64("spy.trigger_time")
    status["segment"] = (await board.fields("spy.segments"))["current"]
    capture_mode = run["mode"]
    width = 64 if run["identity"]["config.bus_width"] else 32
    # the trace format loads where a capture is read (the module's docstring)
    from pcispy.spy.format import record_bits
    record_bytes = record_bits(capture_mode) // 8
    # The segments that ended before the current one are in the segment table; the
    # current (last) one is what the status registers show.
    entries = [await segment_entry(board, index) for index in range(status["segment"])]
    entries.append({name: status[name] for name in SEGMENT_FIELDS})
    if output is not None:
        # Memory holds one block; a readout that stops leaves a file that resumes.
        return await stream_capture_to_file(run, output, status=status, entries=entries,
                                            interrupted=interrupted, timed_out=timed_out,
                                            progress=progress,
                                            resume_command=resume_command)
    parts, table = await _read_segments(run, entries, status["capacity"], record_bytes,
                                        width)
    data = b"".join(parts)
    # The timestamp counts from reset, so a trigger never fires at time 0.
    status["triggered"] = any(entry["triggered"] for entry in table)
    first = table[0]
    settings = dict(run["settings"], time_base=first["time_base"],
                    trigger_timestamp=first["trigger_timestamp"],
                    trigger_index=first["trigger_index"], triggered=status["triggered"],
                    interrupted=interrupted, timed_out=timed_out)
    metadata = trace_metadata(mode=capture_mode, width=width, masters=SPY_MASTERS,
                              clock_mhz=run["identity"]["clock_mhz"],
                              settings=settings, status=status,
                              start_timestamp=first["start_timestamp"],
                              latency_timer=run["settings"]["latency_timer"])
    if run.get("segments", 1) > 1:
        metadata["segments"] = table
    return {"metadata": metadata, "records": base64.b64encode(data).decode(),
            "records_count": len(data) // record_bytes, "status": status,
            "interrupted": interrupted, "timed_out": timed_out}


async def _read_segments(run, entries, capacity, record_bytes, width):
    """Read the records of each segment of ``entries`` (``SEGMENT_FIELDS`` dicts) out of
    BAR1: ``(parts, table)``, ``parts`` each segment's records (bytes, capture order),
    ``table`` per segment its ``index``, ``first_record`` (in the joined parts),
    ``records``, ``start``, ``trigger_index``, ``trigger_timestamp``, ``triggered``,
    ``start_timestamp`` and ``time_base`` (what its first raw record's time counts from:
    ``trigger``, ``arm``, or ``none``, unknown). A segment of ``capacity / segments``
    records wraps inside itself."""
    size = capacity // run.get("segments", 1)
    transport = run["board"].transport
    parts, table = [], []
    first = 0
    for index, entry in enumerate(entries):
        start, count = entry["start"], entry["count"]
        base = start - start % size
        head = min(count, base + size - start)
        part = await read_trace_memory(transport, start, head, capacity, record_bytes)
        if count > head:
            part += await read_trace_memory(transport, base, count - head, capacity,
                                            record_bytes)
        # Raw records count time from the one before: the trigger record anchors a
        # segment's time; without it the first segment counts from the arm.
        start_timestamp, time_base = (run["arm_time"], "arm") if index == 0 else \
            (entry["trigger_timestamp"], "none")
        if run["mode"] is CaptureMode.RAW:
            anchored = raw_start_timestamp(part, record_bytes, entry["trigger_timestamp"],
                                           width, SPY_MASTERS)
            if anchored is not None:
                start_timestamp, time_base = anchored, "trigger"
        table.append({"index": index, "first_record": first, "records": count,
                      "start": start, "trigger_index": entry["trigger_index"],
                      "trigger_timestamp": entry["trigger_timestamp"],
                      "triggered": entry["trigger_timestamp"] != 0,
                      "start_timestamp": max(0, start_timestamp),
                      "time_base": time_base})
        first += count
        parts.append(part)
    return parts, table


async def capture(transport, *, mode="summary", filters=(), combine="any", trigger="now",
                  pre=0, count=0, ring=False, idle_compress=True, raw_select=False,
                  latency_timer=0, violations="all", duration=None, poll=0.0005,
                  progress=None, limit=None, edge="rising", markers=False,
                  trigger_out="pulse", segments=1, output=None, readout_progress=None,
                  resume_command=None, own=True):
    """Capture bus traffic with the spy and read it back.

    Parameters: ``mode`` ``"raw"`` or ``"summary"``; ``filters`` filter specs (strings
    for :func:`parse_filter`, or FilterSpec dicts); ``combine`` ``"any"``/``"all"``;
    ``trigger`` a trigger spec (:func:`parse_trigger`); ``pre`` pre-trigger records kept;
    ``count`` post-trigger records before it stops (0: when memory is full, or never in
    ring mode); ``ring`` overwrite the oldest records after the trigger; ``idle_compress``
    and ``raw_select`` (raw mode: leave out idle clocks; keep only clocks of the
    transactions the filters select); ``latency_timer`` the masters' Latency Timer (to
    classify endings); ``violations`` the checker rules whose violations are stored as
    events (:func:`parse_violations`); ``duration`` seconds of bus time to wait at most
    (None: until the capture stops by itself, in simulation at most ``limit`` seconds of
    bus time, default :data:`SIM_WAIT_LIMIT`); ``poll`` seconds between status polls;
    ``progress`` an optional ``callable(count, capacity, state)`` (in-process transports
    only); ``edge`` ``"rising"``/``"falling"``: the trigger input's edge that counts (for
    ``trigger="external"`` and ``markers``); ``markers`` store the trigger input's edges;
    ``trigger_out`` ``"pulse"``/``"level"``: the trigger output pin; ``segments`` split
    the memory into that many segments (:func:`parse_segments`); ``output``: stream the
    records into this ``.pcitrace`` file (:func:`finish_capture`), ``readout_progress``
    and ``resume_command`` as ``finish_capture``'s ``progress`` and ``resume_command``.

    Returns ``{"metadata": ..., "records": base64 of the records in capture order,
    "records_count", "status": {...}, "interrupted": bool, "timed_out": bool,
    "limit_reached": bool, "limit": seconds or None}`` (``timed_out``: the wait ended by
    ``duration`` or the limit; ``limit_reached``: by the simulation's limit).
    """
    run = await start_capture(transport, mode=mode, filters=filters, combine=combine,
                              trigger=trigger, pre=pre, count=count, ring=ring,
                              idle_compress=idle_compress, raw_select=raw_select,
                              latency_timer=latency_timer, violations=violations,
                              duration=duration, edge=edge, markers=markers,
                              trigger_out=trigger_out, segments=segments, own=own)
    # In simulation nothing else ends a wait: the simulated bus time bounds it.
    bound = None
    if duration is None and transport.kind == "sim":
        bound = SIM_WAIT_LIMIT if limit is None else limit
        if not 0 < bound < float("inf"):
            raise UsageError(f"--sim-limit {bound}: give a positive number of seconds")
    interrupted, timed_out = await wait_capture(
        run, duration=duration if bound is None else bound, poll=poll, progress=progress)
    result = await finish_capture(run, interrupted=interrupted, timed_out=timed_out,
                                  output=output, progress=readout_progress,
                                  resume_command=resume_command)
    return dict(result, limit_reached=timed_out and bound is not None, limit=bound)


async def readout_rate(transport, *, path, seconds=0.0005):
    """A feature (run in the simulator; ``spy.readout_mbps.bar1``): a raw capture of every
    clock (no idle compression) triggered at arm, which fills the trace memory in
    ``seconds`` of bus time, then streamed to ``path``. The bus time of the readout is the
    board's clock counter (``irq.now``) before and after it: the BAR1 reads, as the host
    bridge makes them (Memory Read Multiple bursts), and that one counter read. Returns
    ``{"bytes", "clocks", "clock_hz", "records"}``."""
    run = await start_capture(transport, mode="raw", idle_compress=False, violations="none")
    await wait_capture(run, duration=seconds)
    board = run["board"]
    clock_hz = run["identity"]["clock_hz"]
    await board.write("spy.control", stop=1)
    while not (await board.fields("spy.status"))["done"]:
        await transport.sleep(16 / clock_hz)
    status = await capture_status(board)
    begin = await board.read64("irq.now")
    result = await stream_capture_to_file(run, path, status=status)
    end = await board.read64("irq.now")
    record_bytes = result["metadata"]["record_bits"] // 8
    return {"bytes": status["count"] * record_bytes, "clocks": end - begin,
            "clock_hz": clock_hz, "records": status["count"]}


class CaptureCommand(CliCommand):
    name = "capture"
    help = "capture bus traffic with the spy (raw clocks or transaction summaries) into a " \
           ".pcitrace file"
    examples = (
        "pcispy --sim=rtc capture --filter io:0x70/0xfffe --count 40 -o rtc.pcitrace",
        "pcispy --sim=rtc capture --filter io:0x70/0xfffe --violations none --count 40 "
        "-o rtc-only.pcitrace",
        "pcispy capture --mode raw --trigger filter --filter MW:0x80000000/0xffff0000 "
        "--pre 64 --count 512 -o burst.pcitrace",
        "pcispy capture --trigger register --filter '!mem:0xf0000000/0xfffff000' -o run.pcitrace",
        "pcispy capture --trigger violation --mode raw --pre 200 --count 200 -o bad.pcitrace",
        "pcispy capture --trigger external --edge falling --markers -o scope.pcitrace",
        "pcispy capture --mode raw --trigger filter --filter MW --segments 16 --pre 4 "
        "--count 28 -o bursts.pcitrace",
        "pcispy decode rtc.pcitrace",
    )

    def add_arguments(self, parser):
        parser.add_argument("--mode", choices=("raw", "summary"), default="summary",
                            help="raw: every bus clock; summary: one record per transaction "
                                 "(default)")
        parser.add_argument("--filter", action="append", default=[], metavar="SPEC",
                            help="[!]WHAT[:VALUE[/MASK]]: WHAT is mem, io, cfg, any or "
                                 "commands joined by + (MR+MW); ! excludes; repeat for up "
                                 f"to {SPY_FILTERS} comparators")
        parser.add_argument("--combine", choices=("any", "all"), default="any",
                            help="how include filters combine (default any)")
        parser.add_argument("--trigger", default="now", metavar="SPEC",
                            help="now (default), filter, register, violation[:RULE,...], "
                                 "or external (the --edge of the trigger input pin, "
                                 "docs/wiring.md)")
        parser.add_argument("--edge", choices=tuple(EDGES), default="rising",
                            help="the trigger input's edge that counts for --trigger "
                                 "external and --markers (default rising)")
        parser.add_argument("--markers", action="store_true",
                            help="store each --edge of the trigger input as a timestamped "
                                 "marker: a MARKER record (summary), the raw record's "
                                 "marker bit (raw)")
        parser.add_argument("--trigger-out", choices=tuple(TRIGGER_OUTPUTS), default="pulse",
                            help=f"the trigger output pin: a {TRIGGER_PULSE_NS} ns pulse at "
                                 "each trigger (default), or high while a trigger is "
                                 "recorded")
        parser.add_argument("--segments", type=int, default=1, metavar="N",
                            help=f"split the memory into N segments (a power of two up to "
                                 f"{MAX_SEGMENTS}), each with its own --pre records and "
                                 "trigger, re-armed after the previous one fills; stops "
                                 "when the last is full (default 1)")
        parser.add_argument("--violations", metavar="RULES",
                            help="protocol violations stored as event records among the "
                                 "transactions: all, none, or rule names joined by commas "
                                 "(pcispy check --list-rules); default: none in summary "
                                 "mode (each takes a record; `pcispy check` counts them), "
                                 "all in raw mode and with --trigger violation")
        parser.add_argument("--own", action="store_true",
                            help="keep the board's own register accesses (the tool's "
                                 "status polls while it waits) in the capture; by default "
                                 "an exclude comparator on BAR0 leaves them out when one is "
                                 "free")
        parser.add_argument("--pre", type=int_range(0, (1 << 32) - 1), default=0,
                            metavar="N",
                            help="records kept from before the trigger (default 0)")
        parser.add_argument("--count", type=int_range(0, (1 << 32) - 1), default=0,
                            metavar="N",
                            help="stop after N records from the trigger on (default 0: when "
                                 "the memory is full)")
        parser.add_argument("--ring", action="store_true",
                            help="after the trigger, overwrite the oldest records until "
                                 "--count or a stop")
        parser.add_argument("--no-idle-compress", action="store_true",
                            help="raw mode: store idle clocks too")
        parser.add_argument("--select", action="store_true",
                            help="raw mode: store only the clocks of transactions the "
                                 "filters select")
        parser.add_argument("--latency-timer", type=int_range(0, 255), default=0,
                            metavar="CLOCKS",
                            help="the masters' Latency Timer, to classify its endings "
                                 "(default 0: none)")
        parser.add_argument("--duration", type=positive_seconds, metavar="SECONDS",
                            help="wait at most this long (bus time), then stop and keep "
                                 "what was captured")
        parser.add_argument("--sim-limit", type=positive_seconds, metavar="SECONDS",
                            help="in simulation, without --duration: the simulated bus time "
                                 f"to wait at most (default {SIM_WAIT_LIMIT}); if by then "
                                 "the trigger has not fired or nothing matched, no file is "
                                 "written and the exit status is 2 (on hardware the capture "
                                 "waits until it stops by itself or Ctrl-C)")
        # Checked as it is parsed: a path that cannot be written ends the command before
        # the capture (or the simulator) starts, not after it.
        parser.add_argument("-o", "--output", required=True, metavar="FILE",
                            type=writable_path, help="the .pcitrace file to write (not an "
                                                     "existing one, unless --force)")
        parser.add_argument("--force", action="store_true",
                            help="replace the output file if it exists (a capture cannot be "
                                 "made again: without --force an existing file is kept "
                                 "and the capture does not start)")

    def run(self, args, out):
        if args.violations is None:
            args.violations = ("all" if args.mode == "raw" or
                               args.trigger.strip().lower().startswith("violation")
                               else "none")
        arguments = dict(mode=args.mode, filters=args.filter, combine=args.combine,
                         trigger=args.trigger, pre=args.pre, count=args.count,
                         ring=args.ring, idle_compress=not args.no_idle_compress,
                         raw_select=args.select, latency_timer=args.latency_timer,
                         violations=args.violations, duration=args.duration,
                         edge=args.edge, markers=args.markers,
                         trigger_out=args.trigger_out, segments=args.segments,
                         own=args.own)
        # Bad settings end here with the usage line, before any board or simulator starts.
        check_settings(**{k: arguments[k] for k in ("mode", "filters", "combine", "trigger",
                                                    "pre", "count", "latency_timer",
                                                    "violations", "ring", "duration",
                                                    "idle_compress", "raw_select", "edge",
                                                    "markers", "trigger_out", "segments")})
        refuse_overwrite(args.output, force=args.force)
        if args.sim_limit is not None:
            if args.sysfs is not None or args.uart is not None:
                raise UsageError("--sim-limit bounds a capture in simulation; on hardware "
                                 "give --duration (or stop it with Ctrl-C)")
            arguments["limit"] = args.sim_limit
        # The feature streams the records into a file beside the output (in simulation
        # from the simulator's process: an absolute path), which takes the output's name
        # once the capture is kept: a capture refused below leaves an existing file as it
        # was, and a readout that stops leaves its partial file under the name the resume
        # command gives.
        streaming = f"{args.output}.part"
        arguments.update(output=os.path.abspath(streaming),
                         resume_command=resume_line(args, args.output))
        try:
            result = _run_with_progress(args, arguments)
        except (PcispyError, KeyboardInterrupt) as error:
            _keep_or_remove(args, streaming, interrupted=isinstance(error, KeyboardInterrupt))
            raise
        if result.get("limit_reached"):
            _refuse_empty(result, args)
        os.replace(streaming, args.output)
        result["output"] = args.output
        if not args.json:
            status = result["status"]
            how = ("interrupted" if result["interrupted"] else
                   f"stopped after {result['limit']} s of simulated bus time (--sim-limit)"
                   if result.get("limit_reached") else
                   "stopped at the end of --duration" if result["timed_out"] else status["state"])
            segments = result["metadata"].get("segments")
            parts = f" in {len(segments)} segments" if segments else ""
            out.write(f"{args.output}: {result['records_count']} {args.mode} records{parts} "
                      f"({how}; {'triggered' if status['triggered'] else 'not triggered'}"
                      f", {status['lost']} lost in {status['overruns']} overruns"
                      + (f", the trace memory's FIFO filled {status['memory_fills']} times"
                         if status.get("memory_fills") else "") + ")"
                      + _left_out(args, result["metadata"]["capture"]) + "\n")
        return result


def _left_out(args, settings):
    """What the capture left out by its defaults, and the option that keeps it: the
    summary line's end ("" when nothing was)."""
    parts, note = [], ""
    if settings.get("own_left_out"):
        parts.append("the tool's own register accesses (--own keeps them)")
    elif args.mode == "summary" and not args.own and args.uart is None:
        note = ("; the tool's own register accesses are in it (every comparator is in "
                "use)")
    if settings.get("violations") == "none":
        parts.append("protocol violations (--violations all stores them; `pcispy check` "
                     "counts them)")
    return ("; left out: " + ", ".join(parts) if parts else "") + note


def _keep_or_remove(args, streaming, *, interrupted):
    """After a capture that failed or was interrupted: the partial readout in ``streaming``
    takes the output's name when a board still holds the capture, so that `pcispy readout
    --resume` completes it (the line printed says so); otherwise (a simulated board that
    was only this command's, or a file without a readout in it) nothing is left."""
    if not os.path.exists(streaming):
        return
    # the trace file loads where a trace is read (the module's docstring)
    from pcispy.trace.file import PartialReadout, read_trace
    try:
        read_trace(streaming)
        kept = True                       # (a complete readout: keep it)
    except PartialReadout:
        kept = not args.fresh_board
    except PcispyError:
        kept = False                      # stopped before its header: nothing in it
    if not kept:
        os.unlink(streaming)
        if interrupted:
            why = ("the simulated board was this command's only: nothing can read the rest"
                   if args.fresh_board else "the readout had not begun")
            print(f"pcispy: no file written ({why})", file=sys.stderr)
        return
    os.replace(streaming, args.output)
    if interrupted:
        trace = read_trace(args.output, partial=True)
        read, total = trace.partial or (len(trace), len(trace))
        print(f"pcispy: {args.output} holds {read} of {total} records: continue with "
              f"{resume_line(args, args.output)}", file=sys.stderr)


def _observed(result):
    """Records of a capture result that show the bus: all but the trigger's own mark (a
    TRIGGER event, or the raw record of the arm clock a trigger 'now' stores), WRAP
    time bases and MARKER events (the trigger input's, not the bus's)."""
    # numpy and the trace file load where a trace is read (the module's docstring)
    import numpy as np
    from pcispy.spy.format import RecordKind
    from pcispy.trace.file import read_trace
    trace = read_trace(result["output"])
    marks = np.zeros(len(trace), dtype=bool)
    raw_at = trace.indices(RecordKind.RAW)
    marks[raw_at] = trace.columns(RecordKind.RAW, ["trigger"])["trigger"] == 1
    ignored = np.isin(trace.kinds, [RecordKind.TRIGGER.value, RecordKind.WRAP.value,
                                    RecordKind.MARKER.value])
    return int(np.count_nonzero(~marks & ~ignored))


def _refuse_empty(result, args):
    """A simulated capture the limit ended: nothing useful unless its trigger fired and it
    holds records of the bus. One line says what did not happen within that time (exit
    2)."""
    status = result["status"]
    observed = _observed(result)
    if status["triggered"] and observed:
        return
    os.unlink(result["output"])              # no file of a capture that saw nothing
    waited = (f"within {result['limit']} s of simulated bus time "
              f"({round(result['limit'] * result['metadata']['clock_mhz'] * 1e6)} clocks)")
    if not status["triggered"]:
        what = (f"the trigger ({args.trigger}) did not fire {waited}; the capture held "
                f"{observed} pre-trigger records")
    else:
        what = f"nothing matched the filters {waited}: the capture holds no records"
    raise PcispyError(f"{what}; no file written (--sim-limit SECONDS waits longer; "
                      "--sim=rtc has traffic of its own)")


def _run_with_progress(args, arguments):
    """Run the capture feature with a progress display on a terminal: on hardware (every
    in-process transport: --sysfs, --uart) the live record count and state, named after the
    board it runs on; in simulation a spinner naming the bound of its wait."""
    if not sys.stderr.isatty() or args.json:
        return run_feature(args, capture, **arguments)
    label, live = _progress_label(args, arguments)
    # rich's progress display loads only for one (a terminal)
    import rich.progress
    with rich.progress.Progress(transient=True) as bar:
        task = bar.add_task(label, total=None)
        if live:
            def progress(count, capacity, state):
                bar.update(task, completed=count, total=capacity,
                           description=f"{label} ({state})")

            def readout(read, total):
                bar.update(task, completed=read, total=total,
                           description=f"reading out {total} records into {args.output}")
            arguments = dict(arguments, progress=progress, readout_progress=readout)
        return run_feature(args, capture, **arguments)


def _progress_label(args, arguments):
    """``(label, live)``: what the progress display says, and whether the feature can report
    its count as it goes (it runs in this process on hardware, in the simulator's
    otherwise)."""
    if args.sysfs is not None:
        return f"capturing on the board at {args.sysfs} (Ctrl-C stops)", True
    if args.uart is not None:
        return f"capturing on the board over {args.uart} (Ctrl-C stops)", True
    waits = (f"{arguments['duration']} s" if arguments.get("duration") is not None else
             f"at most {arguments.get('limit') or SIM_WAIT_LIMIT} s")
    return f"capturing in the simulator ({waits} of bus time)", False
