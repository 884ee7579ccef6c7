# SPDX-License-Identifier: BSD-2-Clause
"""No command destroys its own input or a capture, and an interrupted command leaves no
half-written file without a way to finish it: ``decode -o`` the trace itself (or any
trace), ``capture -o`` an existing file without ``--force``, a plot over a trace are
refused before any work; an interrupted ``report`` leaves no empty folder; an interrupted
capture's partial readout is kept with the command that completes it where a board still
holds the capture, and removed where none does (a ``--fresh`` board). Refusals name the
way out (``target``'s, ``--seed``, ``sim read``)."""

import asyncio
import os

import pytest

from pcispy.app.tests._cli import run_cli
from pcispy.exerciser import target_feature
from pcispy.spy import capture_feature
from pcispy.trace.decode import synthetic_summary_trace
from pcispy.trace.file import trace_bytes

pytestmark = pytest.mark.host


@pytest.fixture
def trace_file(tmp_path):
    trace = synthetic_summary_trace(50)
    path = tmp_path / "rtc.pcitrace"
    path.write_bytes(trace_bytes(trace.data, trace.metadata))
    return path


@pytest.fixture
def no_board(monkeypatch):
    """Any command that reaches a board (or starts a simulator) fails the test."""
    def reached(*args, **kwargs):
        raise AssertionError("a board was reached before the refusal")
    for module in (capture_feature, target_feature):
        monkeypatch.setattr(module, "run_feature", reached)
    monkeypatch.setattr("pcispy.app.report_feature.run_feature", reached)
    monkeypatch.setattr("pcispy.dma.sweep_feature.run_feature", reached)


def test_decode_never_writes_over_its_input_or_another_trace(trace_file, tmp_path, no_board):
    before = trace_file.read_bytes()
    other = tmp_path / "other.pcitrace"
    other.write_bytes(before)
    for target in (trace_file, other, tmp_path / "link.pcitrace"):
        if target.name == "link.pcitrace":
            os.symlink(trace_file, target)
        status, out, err = run_cli("decode", str(trace_file), "--format", "csv", "-o",
                                   str(target))
        assert status == 2 and out == "" and err.startswith("usage: pcispy decode"), err
        assert "holds a pcispy capture (a trace file): pcispy writes no export or plot " \
               "over a capture" in err.splitlines()[-1]
    assert trace_file.read_bytes() == before and other.read_bytes() == before
    # A plot over a capture is refused as well; an export over an old export is fine.
    status, _, err = run_cli("sweep", "--plot", str(trace_file))
    assert status == 2 and "holds a pcispy capture" in err
    csv = tmp_path / "rtc.csv"
    csv.write_text("old\n")
    assert run_cli("decode", str(trace_file), "--format", "csv", "-o", str(csv))[0] == 0
    assert csv.read_text().startswith("trans,")


def test_capture_over_an_existing_file_needs_force(trace_file, tmp_path, no_board):
    before = trace_file.read_bytes()
    for existing, kind in ((trace_file, "a pcispy capture"), (tmp_path / "notes", "a file")):
        existing.write_bytes(before) if kind != "a file" else existing.write_text("x")
        status, out, err = run_cli("capture", "-o", str(existing))
        assert status == 2 and out == "", err
        assert err.splitlines()[-1] == f"pcispy capture: error: {existing} exists ({kind}); " \
                                       "give another name, or --force to replace it"
    assert trace_file.read_bytes() == before


def test_capture_with_force_replaces_the_file(trace_file, monkeypatch):
    """With ``--force`` the capture runs and its file takes the name (the stand-in feature
    writes what the simulator's would: the streamed file, beside the output)."""
    trace = synthetic_summary_trace(7)

    def capture(args, arguments):
        with open(arguments["output"], "wb") as f:
            f.write(trace_bytes(trace.data, trace.metadata))
        return {"records_count": 7, "interrupted": False, "timed_out": False,
                "limit_reached": False, "output": arguments["output"],
                "status": {"state": "done", "triggered": True, "lost": 0, "overruns": 0},
                "metadata": dict(trace.metadata, capture={"violations": "none",
                                                          "own_left_out": True})}
    monkeypatch.setattr(capture_feature, "_run_with_progress", capture)
    status, out, err = run_cli("capture", "--force", "-o", str(trace_file))
    assert status == 0, err
    assert out == f"{trace_file}: 7 summary records (done; triggered, 0 lost in 0 overruns); " \
                  "left out: the tool's own register accesses (--own keeps them), protocol " \
                  "violations (--violations all stores them; `pcispy check` counts them)\n"
    assert trace_file.read_bytes() == trace_bytes(trace.data, trace.metadata)
    assert not os.path.exists(f"{trace_file}.part")


def _partial_readout(path, records=7, total=20):
    trace = synthetic_summary_trace(records)
    metadata = dict(trace.metadata, readout={"complete": False, "records_total": total,
                                             "start": 0, "capacity": 2048,
                                             "trigger_timestamp": 5})
    path.write_bytes(trace_bytes(trace.data, metadata))


@pytest.mark.parametrize("fresh", [True, False])
def test_an_interrupted_capture_keeps_only_what_can_be_finished(tmp_path, monkeypatch, fresh):
    output = tmp_path / "deep.pcitrace"

    def interrupted(args, arguments):
        _partial_readout(tmp_path / "deep.pcitrace.part")
        raise KeyboardInterrupt
    monkeypatch.setattr(capture_feature, "_run_with_progress", interrupted)
    status, out, err = run_cli(*(["--fresh"] if fresh else ["--session", "deep"]),
                               "capture", "-o", str(output))
    assert status == 130 and out == "", err
    assert not os.path.exists(f"{output}.part")
    if fresh:
        assert not output.exists()
        assert err == "pcispy: no file written (the simulated board was this command's " \
                      "only: nothing can read the rest)\npcispy: interrupted\n"
    else:
        assert output.exists()
        assert err == f"pcispy: {output} holds 7 of 20 records: continue with `pcispy " \
                      f"--session deep readout --resume {output}`\npcispy: interrupted\n"
    # Interrupted before the readout began: no file at all.
    def early(args, arguments):
        (tmp_path / "early.pcitrace.part").write_bytes(b"")
        raise KeyboardInterrupt
    monkeypatch.setattr(capture_feature, "_run_with_progress", early)
    status, _, err = run_cli("capture", "-o", str(tmp_path / "early.pcitrace"))
    assert status == 130 and not (tmp_path / "early.pcitrace").exists()
    assert not (tmp_path / "early.pcitrace.part").exists()


def test_an_interrupted_report_leaves_no_empty_folder(tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr("pcispy.app.report_feature.run_feature", interrupted)
    status, _, err = run_cli("report", "--quick", "-o", str(tmp_path / "new"))
    assert status == 130 and err == "pcispy: interrupted\n"
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    assert run_cli("report", "--quick", "-o", str(kept))[0] == 130
    assert kept.is_dir()                         # a folder the user had is left alone


class _Board:
    """The fields of the target's registers a refusal is read from."""
    def __init__(self, decode, status):
        self.registers = {"id.config": {"decode": decode}, "target.status": status}
        self.cleared = None

    async def fields(self, name):
        return dict(self.registers[name])

    async def write(self, name, **fields):
        self.cleared = fields


def test_refusals_name_the_way_out():
    from pcispy.pci.bus import DevselSpeed
    status = {name: 0 for name in target_feature._REFUSALS}

    def reasons(decode, field):
        board = _Board(decode.value, dict(status, **{field: 1}))
        return asyncio.run(target_feature._refusals(board))
    latency = reasons(DevselSpeed.MEDIUM, "bad_latency")
    assert len(latency) == 1 and "--allow-noncompliant accepts it" in latency[0]
    assert reasons(DevselSpeed.SLOW, "bad_devsel") == [
        "DEVSEL# faster than the build decodes (this build decodes slow: give --devsel slow "
        "or subtractive)"]
    assert "--devsel medium or slow or subtractive" in \
        reasons(DevselSpeed.MEDIUM, "bad_devsel")[0]
    assert "--allow-noncompliant" in reasons(DevselSpeed.MEDIUM, "bad_retry")[0]
    for argv, says in ((("--seed", "-1", "info"), "argument --seed: -1 is outside "
                                                  "0..4294967295"),
                       (("sim", "read", "0", "0x3"), "'0x3' is not a multiple of 4"),
                       (("sim", "write", "0", "6", "1"), "'6' is not a multiple of 4")):
        code, out, err = run_cli(*argv)
        assert code == 2 and out == "" and says in err.splitlines()[-1], err


def test_the_host_knows_a_trace_file_by_the_trace_format_s_magic():
    from pcispy.host.command import TRACE_MAGIC
    from pcispy.trace.file import MAGIC
    assert TRACE_MAGIC == MAGIC


def test_sim_help_names_the_sessions_folder_and_the_reset():
    status, out, _ = run_cli("sim", "--help")
    text = " ".join(out.split())
    assert status == 0 and "$PCISPY_SESSIONS" in text, out
    assert "belong to this checkout of pcispy" in text and "reset" in text, out
