# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy capture`` in simulation ends: without --duration the simulated bus time bounds
the wait (--sim-limit), and a capture that matched nothing, or whose trigger never fired,
ends in one line, exit 2, no file; one that holds records is written. Ctrl-C (on hardware)
stops the capture and keeps what it holds. The CLI's decision on fabricated results (no
simulator), then real simulator runs (ideal: nothing touches the RTC; rtc: its clock ticks
come; Ctrl-C during the wait)."""

import base64

import numpy as np
import pytest

from pcispy.pci.bus import Command
from pcispy.spy.format import CaptureMode, RecordKind, SummaryRecord, TriggerEvent
from pcispy.app import cli
from pcispy.spy import capture_feature as capture_feature
from pcispy.spy.capture_feature import SIM_WAIT_LIMIT
from pcispy.spy.readout_feature import trace_metadata
from pcispy.trace.file import pack_records, read_trace, write_trace

from pcispy.app.tests._cli import run_cli

pytestmark = pytest.mark.spy



def _result(records, *, triggered=True, limit=0.002):
    """What the capture feature returns when the simulation's limit ended the wait."""
    data = np.concatenate(records) if records else np.zeros((0, 32), dtype=np.uint8)
    status = {"capacity": 2048, "start": 0, "count": len(data), "trigger_index": 0,
              "lost": 0, "overruns": 0, "state": "done", "triggered": triggered,
              "trigger_timestamp": 100 if triggered else 0}
    metadata = trace_metadata(mode=CaptureMode.SUMMARY, width=32, masters=3, clock_mhz=33,
                              settings={"own_left_out": True}, status=status,
                              start_timestamp=90,
                              latency_timer=0)
    return {"metadata": metadata, "records": base64.b64encode(data.tobytes()).decode(),
            "records_count": len(data), "status": status, "interrupted": False,
            "timed_out": True, "limit_reached": True, "limit": limit}


TRIGGER = pack_records(TriggerEvent(), {"timestamp": 100}, size_bits=256)
SUMMARY = pack_records(SummaryRecord(), {"timestamp": 200, "address": 0x70,
                                         "command": Command.IO_WRITE.value})


@pytest.fixture
def fabricated(monkeypatch):
    """Make the capture feature return the result the test sets (and note its arguments)."""
    calls = {}

    def run_feature(args, feature, **arguments):
        # As the feature does: the records go into the file it is given, not the result.
        calls["arguments"] = arguments
        result = dict(calls["result"])
        write_trace(arguments["output"], base64.b64decode(result.pop("records")),
                    result["metadata"])
        return dict(result, output=arguments["output"])
    monkeypatch.setattr(capture_feature, "run_feature", run_feature)
    return calls


@pytest.mark.parametrize("records, triggered, says", [
    ([TRIGGER], True, "pcispy: error: nothing matched the filters within 0.002 s of "
                      "simulated bus time (66000 clocks): the capture holds no records; no "
                      "file written (--sim-limit SECONDS waits longer; --sim=rtc has traffic "
                      "of its own)\n"),
    ([SUMMARY], False, "pcispy: error: the trigger (filter) did not fire within 0.002 s of "
                       "simulated bus time (66000 clocks); the capture held 1 pre-trigger "
                       "records; no file written (--sim-limit SECONDS waits longer; "
                       "--sim=rtc has traffic of its own)\n"),
])
def test_nothing_useful_within_the_limit_is_one_line_and_no_file(
        tmp_path, fabricated, records, triggered, says):
    fabricated["result"] = _result(records, triggered=triggered)
    path = tmp_path / "x.pcitrace"
    status, out, err = run_cli("--sim", "capture", "--trigger", "filter", "--filter", "io",
                               "--sim-limit", "0.002", "-o", str(path))
    assert (status, out, err) == (2, "", says)
    assert fabricated["arguments"]["limit"] == 0.002
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_a_refused_capture_leaves_an_existing_file_as_it_was(tmp_path, fabricated):
    fabricated["result"] = _result([TRIGGER])
    path = tmp_path / "x.pcitrace"
    path.write_bytes(b"an earlier capture")
    status, _, _ = run_cli("--sim", "capture", "--sim-limit", "0.002", "-o", str(path))
    assert status == 2
    assert path.read_bytes() == b"an earlier capture"
    assert list(tmp_path.iterdir()) == [path]


def test_records_within_the_limit_are_written(tmp_path, fabricated):
    fabricated["result"] = _result([TRIGGER, SUMMARY])
    path = tmp_path / "x.pcitrace"
    status, out, err = run_cli("--sim", "capture", "--sim-limit", "0.002", "-o", str(path))
    assert (status, err) == (0, "")
    assert out == (f"{path}: 2 summary records (stopped after 0.002 s of simulated bus time "
                   "(--sim-limit); triggered, 0 lost in 0 overruns); left out: the tool's "
                   "own register accesses (--own keeps them)\n")
    assert len(read_trace(path).summaries) == 1


def test_the_limit_is_for_simulation_only(tmp_path):
    status, _, err = run_cli("--sysfs", "0000:ff:1f.7", "capture", "--sim-limit", "1",
                             "-o", str(tmp_path / "x.pcitrace"))
    assert status == 2
    assert err.splitlines()[-1] == ("pcispy capture: error: --sim-limit bounds a capture in "
                                    "simulation; on hardware give --duration (or stop it "
                                    "with Ctrl-C)")


# -- in the simulator ----------------------------------------------------------------------

def test_readme_rtc_filter_on_the_ideal_host_ends_after_the_limit(tmp_path):
    # Nothing touches I/O 0x70 on the ideal host: the wait ends after the limit.
    path = tmp_path / "rtc.pcitrace"
    status, out, err = run_cli("capture", "--mode", "summary", "--filter", "io:0x70/0xfffe",
                               "--sim-limit", "0.002", "-o", str(path))
    assert (status, out) == (2, "")
    assert err.startswith("pcispy: error: nothing matched the filters within 0.002 s of "
                          "simulated bus time (66000 clocks)") and err.count("\n") == 1
    assert not path.exists()


def test_rtc_scenario_clock_ticks_within_the_limit(tmp_path):
    # Two clock ticks of the rtc scenario (every ~32000 clocks) within 66000 clocks.
    path = tmp_path / "rtc.pcitrace"
    status, out, err = run_cli("--sim=rtc", "capture", "--mode", "summary", "--filter",
                               "io:0x70/0xfffe", "--violations", "none", "--sim-limit",
                               "0.002", "-o", str(path))
    assert (status, err) == (0, "")
    assert "stopped after 0.002 s of simulated bus time (--sim-limit)" in out
    summaries = read_trace(path).summaries
    assert len(summaries) >= 16          # two groups of four index writes and data reads
    assert set(int(a) for a in summaries["address"]) == {0x70, 0x71}


async def capture_until_ctrl_c(transport, *, waits_before_ctrl_c, **arguments):
    """The capture feature with Ctrl-C pressed while it waits: the KeyboardInterrupt a
    terminal's interrupt raises in the polling loop, at wait number ``waits_before_ctrl_c``
    (run by the simulator as a feature, ``test_capture_limit:capture_until_ctrl_c``)."""
    from pcispy.spy.capture_feature import capture
    sleep, waits = transport.sleep, []

    async def sleep_until_ctrl_c(seconds):
        waits.append(seconds)
        if len(waits) == waits_before_ctrl_c:
            raise KeyboardInterrupt
        await sleep(seconds)
    transport.sleep = sleep_until_ctrl_c
    return dict(await capture(transport, **arguments), waits=len(waits))


def test_ctrl_c_stops_the_capture_and_keeps_what_it_holds():
    # A register trigger that never comes, on an idle bus, raw records not compressed:
    # before its trigger the spy keeps the latest clocks in the whole memory (a ring), so
    # when Ctrl-C comes the memory is full of consecutive idle clocks, and all of it is
    # read back.
    from pcispy.trace.file import parse_trace, trace_bytes
    from pcispy.sim.launcher import run_feature
    result = run_feature(capture_until_ctrl_c,
                         {"waits_before_ctrl_c": 3, "mode": "raw", "idle_compress": False,
                          "trigger": "register", "pre": 6})
    assert result["waits"] >= 3         # Ctrl-C came at the third wait
    assert (result["interrupted"], result["timed_out"], result["limit_reached"]) == (
        True, False, False)
    status = result["status"]
    capacity = status["capacity"]
    assert (status["triggered"], status["count"], status["lost"]) == (False, capacity, 0)
    assert result["records_count"] == capacity > 6
    trace = parse_trace(trace_bytes(base64.b64decode(result["records"]), result["metadata"]))
    assert list(trace.kinds) == [RecordKind.RAW.value] * capacity
    raw = trace.columns(RecordKind.RAW, ["delta", "trigger"])
    assert list(raw["delta"][1:]) == [1] * (capacity - 1) and not raw["trigger"].any()


def test_an_interrupted_capture_is_written_and_says_so(tmp_path, fabricated):
    path = tmp_path / "cut.pcitrace"
    fabricated["result"] = dict(_result([SUMMARY], triggered=False), interrupted=True,
                                timed_out=False, limit_reached=False, limit=None)
    status, out, err = run_cli("--uart", "/dev/ttyUSB0", "capture", "--trigger", "filter",
                               "-o", str(path))
    assert (status, err) == (0, "")
    assert out == (f"{path}: 1 summary records (interrupted; not triggered, 0 lost in 0 "
                   "overruns); left out: the tool's own register accesses (--own keeps "
                   "them)\n")
    assert len(read_trace(path).summaries) == 1


def test_default_limit_is_documented():
    help_text = cli.build_parser()._subparsers._group_actions[0].choices["capture"] \
        .format_help()
    assert f"(default {SIM_WAIT_LIMIT})" in " ".join(help_text.split())
