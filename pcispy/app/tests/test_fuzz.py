# SPDX-License-Identifier: BSD-2-Clause
"""Fuzz the command line in-process: damaged and random trace files through ``decode``
(every format, to standard output and to files), and random argument combinations for
every command (board commands with a transport that is not there, so nothing starts a
simulator). Every case must end with exit status 0 or 2, no traceback, and an error that
is one readable line ``pcispy: error: ...`` or an argparse usage message.

Each seed decodes :data:`TRACE_FILES` trace files (damaged, random or intact; besides them
about one case in ten is a path that is no readable file) and runs :data:`ARGUMENT_CASES`
argument cases; CI runs seeds 1..4 (1000 trace files and 600 argument sets, 8 s here),
``PCISPY_SEEDS=N`` runs seeds 1..N. A failure names the seed, the case number and the
command line.
"""

import contextlib
import io
import json
import os
import struct

import numpy as np
import pytest

from pcispy.pci.bus import Termination
from pcispy.spy.format import (
                               OverrunEvent, RawRecord, SummaryRecord, TriggerEvent, ViolationEvent, WrapEvent,
                               record_fields,
                               )
from pcispy.app import cli
from pcispy.trace.decode import synthetic_trace
from pcispy.trace.export import FORMATS
from pcispy.trace.file import HEADER_BYTES, _enum_fields, pack_records, trace_bytes

pytestmark = pytest.mark.fuzz

#: The fixed seeds CI runs; more with PCISPY_SEEDS=N.
SEEDS = list(range(1, 1 + int(os.environ.get("PCISPY_SEEDS", "4"))))
#: Trace files decoded per seed (the paths that are no readable file come on top), and
#: argument cases per seed.
TRACE_FILES = 250
ARGUMENT_CASES = 150
#: A PCI address no machine has, and a serial port that is not there.
ABSENT_BDF = "0000:ff:1f.7"


class ReachedSimulator(BaseException):
    """A fuzz case started the simulator (a BaseException: the CLI must not swallow it)."""


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """Work in ``tmp_path`` with an empty sysfs tree and without any simulator."""
    sysfs = tmp_path / "sysfs"
    sysfs.mkdir()
    monkeypatch.setenv("PCISPY_SYSFS_ROOT", str(sysfs))
    monkeypatch.setenv("PCISPY_DEV_ROOT", str(tmp_path / "dev"))
    monkeypatch.chdir(tmp_path)

    def refuse(*args, **kwargs):
        raise ReachedSimulator("a fuzz case reached the simulator")
    import pcispy.sim.launcher
    import pcispy.sim.session
    import pcispy.sim.model
    import pcispy.sim.verilate
    # Every way into a simulator: a fresh one, a session's (started or attached), a model
    # found in the cache or built.
    for module, name in ((pcispy.sim.launcher, "run_feature"), (pcispy.sim.session, "run_feature"),
                         (pcispy.sim.session, "start"), (pcispy.sim.model, "build_system"),
                         (pcispy.sim.verilate, "build_model"),
                         (pcispy.sim.verilate, "cached_model")):
        monkeypatch.setattr(module, name, refuse)
    # Note each run that gets as far as a transport (it then fails: no device is there).
    import pcispy.host.transports.sysfs
    import pcispy.host.transports.uart
    for module in (pcispy.host.transports.sysfs, pcispy.host.transports.uart):
        monkeypatch.setattr(module, "run", _noting_reached(module.run))
    REACHED.clear()
    return tmp_path


#: Transports reached by the case that runs (see :func:`_noting_reached`).
REACHED = []


def _noting_reached(run):
    def noting(feature, *args, **kwargs):
        REACHED.append(feature.__name__)
        return run(feature, *args, **kwargs)
    return noting


def run_cli(argv):
    """``(status, stdout, stderr)`` of ``pcispy argv`` run in this process."""
    REACHED.clear()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(list(argv), out=out)
        except SystemExit as exit_:         # argparse: usage errors and --help
            status = exit_.code
        except ReachedSimulator:
            pytest.fail(f"the fuzz case reached the simulator: pcispy {' '.join(argv)}")
    return status, out.getvalue(), err.getvalue()


def check_outcome(argv, status, err, where, arguments_only=False):
    """What is wrong with the outcome of one case (None: it is an expected one).
    ``arguments_only``: the command fails only on its arguments before it reaches a
    transport (a board command): such a failure must end with the usage line."""
    verbose = "--verbose" in argv or "-v" in argv
    case = f"{where}: pcispy {' '.join(argv)}\n{err}"
    lines = err.splitlines()
    if status not in (0, 2):
        return f"exit {status}: {case}"
    if "Traceback" in err and not verbose:
        return f"a traceback: {case}"
    if status == 0:
        return None
    if not lines:
        return f"exit 2 without a message: {case}"
    if lines[0].startswith("usage: pcispy"):
        return None if ": error: " in lines[-1] else f"a usage without an error: {case}"
    if not lines[0].startswith("pcispy: error: "):
        return f"not a 'pcispy: error:' line: {case}"
    if arguments_only and not REACHED:
        return f"an argument error without the usage line: {case}"
    if len(lines) > 1 and not verbose:
        return f"more than one line: {case}"
    if not lines[0].isprintable() or len(lines[0]) > 400:
        return f"an unreadable line: {case}"
    return None


def report(findings):
    findings = [finding for finding in findings if finding]
    assert not findings, f"{len(findings)} findings; the first ones:\n" + \
        "\n".join(findings[:8])


# -- damaged and random trace files --------------------------------------------------------

#: JSON values a metadata key is set to.
_JSON_VALUES = [0, 1, -1, 2, 15, 16, 32, 64, 255, 256, 1 << 31, 1 << 64, 0.0, 1e-300, 1e300,
                33.3, -33.3, True, False, None, "", "raw", "summary", "RAW", [], {}, [32],
                {"a": 1}, "32", 32.0, float("nan"), float("inf"), float("-inf"), 1000, 1001,
                (1 << 48) - 1, 1 << 48, (1 << 63) - 1, 1 << 63, -(1 << 63)]
_METADATA_KEYS = ["mode", "bus_width", "masters", "clock_mhz", "record_layout",
                  "record_bits", "capture", "overruns", "lost", "start_timestamp",
                  "raw_time_offset", "latency_timer", "format_version", "extra"]


def _random_fields(layout, count, rng):
    """Random values of every field of ``layout`` (the termination and every enum field a
    value a real capture can hold: a reserved code is damage, left to :func:`_mutate`)."""
    fields = {name: rng.integers(0, 1 << min(width, 63), count, dtype=np.uint64)
              for name, _, width in record_fields(layout) if name != "kind"}
    if "termination" in fields:
        fields["termination"] %= np.uint64(len(Termination))
    for name, values in _enum_fields(layout):
        if name in fields:
            fields[name] = rng.choice([member.value for member in values], count).astype(
                np.uint64)
    return fields


def _event(rng, size_bits):
    layout = [TriggerEvent, OverrunEvent, WrapEvent, ViolationEvent][rng.integers(4)]()
    return pack_records(layout, _random_fields(layout, 1, rng), size_bits=size_bits)


def _fits(width, masters):
    try:
        RawRecord(width, masters)
    except ValueError:
        return False
    return True


def _base_trace(rng):
    """A valid trace: ``(records, metadata)`` of a raw (32 or 64-bit) or summary capture,
    sometimes with event records between, sometimes with random field values."""
    choice = rng.integers(4)
    if choice < 2:
        width = (32, 64)[choice]
        trace = synthetic_trace(int(rng.integers(1, 120)), seed=int(rng.integers(1 << 16)),
                                width=width, distinct=int(rng.integers(1, 6)))[0]
        records, metadata = trace.data.copy(), {"mode": "raw", "bus_width": width}
        if rng.random() < 0.3:
            # Any number of REQ#/GNT# pairs that fits a raw record.
            masters = int(rng.integers(1, 16))
            while not _fits(width, masters):
                masters -= 1
            layout = RawRecord(width, masters)
            records = pack_records(layout, _random_fields(layout, len(records), rng),
                                   size_bits=128)
            metadata["masters"] = masters
    elif choice == 2:
        records = pack_records(RawRecord(), _random_fields(RawRecord(), int(rng.integers(0, 40)),
                                                           rng))
        metadata = {"mode": "raw", "latency_timer": int(rng.integers(256)),
                    "start_timestamp": int(rng.integers(1 << 40))}
    else:
        count = int(rng.integers(0, 40))
        fields = _random_fields(SummaryRecord(), count, rng)
        records = pack_records(SummaryRecord(), fields, count)
        metadata = {"mode": "summary"}
    size = 128 if metadata["mode"] == "raw" else 256
    if rng.random() < 0.4 and len(records):
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(len(records) + 1))
            records = np.concatenate([records[:at], _event(rng, size), records[at:]])
    return records, metadata


def _header(blob, **changes):
    fields = dict(zip(("magic", "version", "size", "length"),
                      struct.unpack_from("<8sHHI", blob)))
    fields.update(changes)
    return struct.pack("<8sHHI", *fields.values()) + blob[HEADER_BYTES:]


def _json_end(blob):
    return HEADER_BYTES + struct.unpack_from("<I", blob, 12)[0]


def _with_metadata_text(blob, text):
    body = blob[_json_end(blob):]
    return _header(blob[:HEADER_BYTES] + text, length=len(text)) + body


def _mutate(rng, blob, metadata):
    """A damaged copy of ``blob`` (one mutation kind, chosen at random) and its name."""
    kind = int(rng.choice(10, p=[.1, .12, .1, .25, .07, .05, .08, .13, .05, .05]))
    if kind == 0:
        return blob[:int(rng.integers(len(blob) + 1))], "truncated"
    if kind == 1:
        damaged = bytearray(blob)
        end = len(blob) if rng.random() < 0.5 else min(len(blob), _json_end(blob) + 1)
        for _ in range(int(rng.integers(1, 9))):
            at = int(rng.integers(end))
            damaged[at] ^= 1 << int(rng.integers(8))
        return bytes(damaged), "bit flips"
    if kind == 2:
        field = ["version", "size", "length"][rng.integers(3)]
        top = 1 << (32 if field == "length" else 16)
        value = int(rng.choice([0, 1, 2, 15, 16, 31, 32, 33, 64, 128, 255, top - 1,
                                int(rng.integers(top))]))
        return _header(blob, **{field: value}), f"header {field}={value}"
    if kind == 3:
        edited = dict(metadata)
        for _ in range(int(rng.integers(1, 4))):
            key = _METADATA_KEYS[rng.integers(len(_METADATA_KEYS))]
            if rng.random() < 0.2:
                edited.pop(key, None)
            else:
                edited[key] = _JSON_VALUES[rng.integers(len(_JSON_VALUES))]
        return _with_metadata_text(blob, json.dumps(edited).encode()), f"metadata {edited}"
    if kind == 4:
        text = json.dumps(metadata).encode()
        cut = int(rng.integers(len(text) + 1))
        junk = bytes(rng.integers(0, 256, int(rng.integers(0, 6)), dtype=np.uint8))
        return _with_metadata_text(blob, text[:cut] + junk + text[cut:]), "bad JSON"
    if kind == 5:
        text = json.dumps(metadata).encode()
        if rng.random() < 0.5:
            text = json.dumps([metadata]).encode() if rng.random() < 0.5 else b'"raw"'
        else:
            text = text.replace(b'"mode"', b'"mode", "mode"') if rng.random() < 0.5 \
                else b"\xef\xbb\xbf" + text
        return _with_metadata_text(blob, text), "metadata shape"
    if kind == 6:
        size = int(rng.integers(0, 400))
        junk = bytes(rng.integers(0, 256, size, dtype=np.uint8))
        return (b"PCITRACE" + junk if rng.random() < 0.5 else junk), "random bytes"
    if kind == 7:
        end = _json_end(blob)
        body = bytearray(blob[end:])
        if not body:
            return b"", "empty file"
        record = 16 if metadata["mode"] == "raw" else 32
        for _ in range(int(rng.integers(1, 6))):
            at = int(rng.integers(len(body)))
            if rng.random() < 0.5:
                at -= at % record             # the kind nibble of a record
                body[at] = (body[at] & 0xF0) | int(rng.integers(16))
            else:
                body[at] = int(rng.integers(256))
        return blob[:end] + bytes(body), "record bytes"
    if kind == 8:
        depth = int(rng.choice([10, 1000, 100_000]))
        text = json.dumps(metadata)[:-1].encode() + b', "capture": ' + b"[" * depth + \
            b"]" * depth + b"}"
        return _with_metadata_text(blob, text), f"metadata nested {depth} deep"
    text = json.dumps(metadata).encode()
    return _with_metadata_text(blob, text + b" " * int(rng.integers(1, 3000))), \
        "metadata padded with spaces"


#: What :func:`_mutate` and :func:`_trace_file` call a file that must decode.
_VALID = ("intact", "metadata padded with spaces", "metadata nested 10 deep")
#: What :func:`_trace_file` calls a path that is no readable trace file.
_NOT_FILES = ("a directory", "missing", "below a file", "a symlink loop",
              "unreadable (empty when read as root)")


def _trace_file(rng, directory, number):
    """A path to decode (a damaged or intact trace file, or a path that cannot be read)
    and what it is."""
    path = directory / f"case{number}.pcitrace"
    special = rng.random()
    if special < 0.03:
        path.mkdir()
        return path, "a directory"
    if special < 0.05:
        return directory / "no-such-file.pcitrace", "missing"
    if special < 0.07:
        (directory / "plain").write_text("x")
        return directory / "plain" / "below-a-file.pcitrace", "below a file"
    if special < 0.09:
        loop = directory / f"loop{number}"
        loop.symlink_to(loop)
        return loop, "a symlink loop"
    if special < 0.10:
        path.write_bytes(b"")
        path.chmod(0)
        return path, "unreadable (empty when read as root)"
    records, metadata = _base_trace(rng)
    blob = trace_bytes(records, metadata)
    if rng.random() < 0.85:
        blob, what = _mutate(rng, blob, metadata)
    else:
        what = "intact"
    path.write_bytes(blob)
    return path, what


def _output_option(rng, directory, number):
    """``-o`` options (or none) and whether they name a file that can be written."""
    choice = rng.random()
    if choice < 0.5:
        return [], True
    if choice < 0.85:
        return ["-o", str(directory / f"out{number}")], True
    if choice < 0.9:
        return ["-o", str(directory)], False                 # a directory
    if choice < 0.95:
        return ["-o", str(directory / "no-such-dir" / "out")], False
    return ["-o", ""], False


def _decode_argv(rng, directory, number):
    """A ``decode`` command line, what its file is, and whether it must succeed."""
    path, what = _trace_file(rng, directory, number)
    argv = []
    if rng.random() < 0.15:
        argv.append("--json")
    if rng.random() < 0.1:
        argv.append("--verbose")
    argv += ["decode", str(path)]
    fmt = "table"
    if rng.random() < 0.85:
        fmt = str(rng.choice(FORMATS))
        argv += ["--format", fmt]
    output, writable = _output_option(rng, directory, number)
    argv += output
    timer_ok = True
    if rng.random() < 0.2:
        timer = int(rng.choice([0, 1, 16, 255, 256, -1, 1 << 40]))
        argv += ["--latency-timer", str(timer)]
        timer_ok = 0 <= timer <= 255
    # A VCD needs a raw trace whose times never go back: not promised for random records.
    must_succeed = what in _VALID and writable and timer_ok and fmt != "vcd"
    return argv, what, must_succeed


@pytest.mark.parametrize("seed", SEEDS)
def test_damaged_and_random_traces_decode_cleanly(sandbox, seed):
    rng = np.random.default_rng(seed)
    directory = sandbox / "traces"
    directory.mkdir()
    findings = []
    files = number = 0
    while files < TRACE_FILES:
        number += 1
        argv, what, must_succeed = _decode_argv(rng, directory, number)
        files += what not in _NOT_FILES
        status, out, err = run_cli(argv)
        where = f"seed {seed} trace case {number} ({what})"
        findings.append(check_outcome(argv, status, err, where))
        if must_succeed and status != 0:
            findings.append(f"a valid file failed: {where}: pcispy {' '.join(argv)}\n{err}")
        if status and out:
            findings.append(f"output despite the error: {where}: pcispy {' '.join(argv)}")
        if status and (directory / f"out{number}").exists():
            findings.append(f"a partial output file left: {where}: pcispy {' '.join(argv)}")
    report(findings)


# -- random arguments ----------------------------------------------------------------------

#: Values an option is given (besides valid choices).
_VALUES = ["0", "1", "-1", "2", "7", "8", "16", "64", "255", "256", "4096", "65536",
           "4294967295", "4294967296", "18446744073709551616", "0x10", "0x", "1K", "64K",
           "1M", "1G", "-4K", "1.5", "nan", "inf", "-inf", "1e9", "", " ", "x", "MW", "mw",
           "MW,MRM", ",", "1,,2", "0:0", "0x100:0x1ff", "1:0", "on", "off", "io:0x70/0xfffe",
           "!mem", "mem:zz", "any:1/2/3", "violation", "violation:nope", "filter", "now",
           "register", "-", "--", "--help", "é", "a" * 300]


def _option_value(rng, action, directory):
    if action.choices and rng.random() < 0.6:
        return str(rng.choice(list(action.choices)))
    if action.metavar and "FILE" in str(action.metavar) or action.dest in ("output", "hist",
                                                                          "plot"):
        if rng.random() < 0.7:
            return str(rng.choice([str(directory / "out.file"), str(directory),
                                   str(directory / "no-such-dir" / "x.png"), ""]))
    return str(rng.choice(_VALUES))


def _command_argv(rng, parser, directory):
    """Random options of one subparser (sometimes with junk tokens)."""
    options = [action for action in parser._actions
               if action.option_strings and action.dest != "help"]
    positionals = [action for action in parser._actions if not action.option_strings]
    argv = []
    for _ in range(int(rng.integers(0, 5))):
        if not options:
            break
        action = options[rng.integers(len(options))]
        argv.append(str(rng.choice(action.option_strings)))
        if action.nargs != 0 and rng.random() < 0.95:
            argv.append(_option_value(rng, action, directory))
    for action in positionals:
        if rng.random() < 0.9:
            argv.insert(int(rng.integers(len(argv) + 1)), str(directory / "in.pcitrace"))
    if rng.random() < 0.1:
        argv.insert(int(rng.integers(len(argv) + 1)), str(rng.choice(_VALUES + ["--nope"])))
    if rng.random() < 0.03:
        argv.append("--help")
    return argv


def _global_argv(rng, directory):
    transport = rng.random()
    if transport < 0.7:
        argv = ["--sysfs", ABSENT_BDF]
    elif transport < 0.85:
        argv = ["--sysfs", str(rng.choice(["nonsense", "", "0000:00:00.0/..", "ff:1f.7"]))]
    else:
        argv = ["--uart", str(directory / "no-such-tty")]
    for option, values in (("--bus-width", ["32", "64", "48"]), ("--seed", ["7", "x", "-1"]),
                           ("--buffer", ["0x7f000000:16M", "0x123:0", "nonsense"])):
        if rng.random() < 0.1:
            argv += [option, str(rng.choice(values))]
    for flag in ("--json", "--verbose"):
        if rng.random() < 0.15:
            argv.append(flag)
    return argv


#: Commands that need no board given these options (more options may follow).
_LOCAL = {"decode": [], "check": ["--list-rules"], "regs": ["--map"], "list": []}


def _subparsers():
    parser = cli.build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return action.choices


@pytest.mark.parametrize("seed", SEEDS)
def test_random_arguments_end_cleanly(sandbox, seed):
    rng = np.random.default_rng(1000 + seed)
    directory = sandbox / "arguments"
    directory.mkdir()
    trace, _ = synthetic_trace(40, seed=seed)
    (directory / "in.pcitrace").write_bytes(trace_bytes(trace.data, trace.metadata))
    subparsers = _subparsers()
    names = sorted(subparsers)
    findings = []
    for number in range(ARGUMENT_CASES):
        name = names[number % len(names)] if number < len(names) else \
            names[rng.integers(len(names))]
        options = _command_argv(rng, subparsers[name], directory)
        if name in _LOCAL and rng.random() < 0.3:
            # Without any transport: these must not need a board (nor the simulator).
            argv = [name] + options + _LOCAL[name]
        else:
            argv = _global_argv(rng, directory) + [name] + options
        status, _, err = run_cli(argv)
        # A board command fails before its transport only on its arguments (decode,
        # list and readout also fail on the files and directories they read).
        findings.append(check_outcome(argv, status, err, f"seed {seed} argument case {number}",
                                      arguments_only=name not in ("decode", "list",
                                                                  "readout")))
    report(findings)
