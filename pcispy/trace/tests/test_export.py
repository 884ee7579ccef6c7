# SPDX-License-Identifier: BSD-2-Clause
"""Exports: the exact CSV of a known trace, CSV and JSON round trips, the table, the VCD
parsed back with vcdvcd, ``pcispy decode`` writing each format, and records lost, the
trigger and violations shown in each (under the table, on standard error beside a CSV,
as JSON fields)."""

import io
import json

import numpy as np
import pytest
from vcdvcd import VCDVCD

from pcispy.pci.bus import Command
from pcispy.spy.format import (OverrunEvent, SummaryRecord, TriggerEvent,
                                        ViolationEvent, record_fields)
from pcispy.app.cli import main
from pcispy.trace.decode import raw_records, summarise, synthetic_trace
from pcispy.host.errors import PcispyError
from pcispy.trace.events import note_lines, trace_events
from pcispy.trace.export import (CSV_COLUMNS, read_csv, summaries_from_json, summary_rows,
                                 to_csv, to_json, write_table)
from pcispy.trace.vcd import write_vcd
from pcispy.trace.file import pack_records, parse_trace, trace_bytes, write_trace

pytestmark = pytest.mark.spy

IOW, IOR = Command.IO_WRITE.value, Command.IO_READ.value
#: An index write to the RTC at 0x70 retried once then taken, and a read of 0x71 (times 1..).
RTC_CLOCKS = (
    [{}, {}] +
    [dict(frame=1, ad=0x70, cbe=IOW), dict(frame=1, irdy=1, ad=0x0A, cbe=0xE),
     dict(frame=1, irdy=1, devsel=1, stop=1, ad=0x0A, cbe=0xE),
     dict(irdy=1, devsel=1, stop=1, ad=0x0A, cbe=0xE), {}] +
    [dict(frame=1, ad=0x70, cbe=IOW), dict(irdy=1, ad=0x0A, cbe=0xE),
     dict(irdy=1, devsel=1, trdy=1, ad=0x0A, cbe=0xE), {}, {}] +
    [dict(frame=1, ad=0x71, cbe=IOR), dict(irdy=1, cbe=0xE), dict(irdy=1, devsel=1, cbe=0xE),
     dict(irdy=1, devsel=1, trdy=1, ad=0x55, cbe=0xE), {}, {}])

RTC_CSV = """\
trans,time,addr,cmd,rw,len,dur,lat,wait,term,data,delta
1,3,0x00000070,IOW,W,0,4,2,1,retry,0x00000000,0
2,8,0x00000070,IOW,W,1,3,2,1,completion,0x0000000a,5
3,13,0x00000071,IOR,R,1,4,3,2,completion,0x00000055,5
"""


def rtc_trace(**metadata):
    return parse_trace(trace_bytes(raw_records(RTC_CLOCKS), {"mode": "raw", **metadata}))


def test_csv_of_a_known_trace_is_exact():
    text = to_csv(summarise(rtc_trace()))
    assert text.splitlines()[0] == "trans,time,addr,cmd,rw,len,dur,lat,wait,term,data,delta"
    assert text == RTC_CSV
    assert ",".join(CSV_COLUMNS) == text.splitlines()[0]


@pytest.mark.parametrize("seed", [1, 2])
def test_csv_round_trip(seed):
    summaries = summarise(synthetic_trace(3000, seed=seed)[0])
    # A 64-bit address prints in 16 digits and reads back.
    summaries["address"][3] = 0x1_2345_6780
    assert read_csv(to_csv(summaries)) == summary_rows(summaries), f"seed {seed}"


def test_csv_reader_refuses_other_files():
    with pytest.raises(PcispyError, match="header"):
        read_csv("a,b\n1,2\n")
    with pytest.raises(PcispyError, match="line 2: addr 'zz'"):
        read_csv(RTC_CSV.splitlines()[0] + "\n1,3,zz,IOW,W,0,4,2,1,retry,0x0,0\n")


def test_json_round_trip_of_every_field():
    rng = np.random.default_rng(4)
    fields = {name: rng.integers(0, 1 << min(width, 62), 40, dtype=np.uint64)
              for name, _, width in record_fields(SummaryRecord())
              if name not in ("kind", "termination")}
    fields["termination"] = rng.integers(0, 7, 40)
    summaries = parse_trace(trace_bytes(pack_records(SummaryRecord(), fields),
                                        {"mode": "summary"})).summaries
    document = json.loads(json.dumps(to_json(summaries, {"mode": "summary"})))
    assert np.array_equal(summaries_from_json(document), summaries)
    first = document["transactions"][0]
    assert first["command"] == Command(int(summaries["command"][0])).mnemonic
    assert first["trans"] == 1 and first["rw"] in "RW"
    with pytest.raises(PcispyError, match="not a pcispy JSON export"):
        summaries_from_json({"transactions": [{"command": "NOPE"}]})


def test_plain_table_has_figure_3_columns():
    out = io.StringIO()
    write_table(summarise(rtc_trace()), out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["Trans", "Addr", "R/W", "Lgth", "Dur", "Lat", "delta",
                                "cycle#", "Cmd", "Wait", "Term", "Data"]
    assert lines[1].split() == ["1", "0x00000070", "W", "0", "4", "2", "0", "IOW", "1",
                                "retry", "0x00000000"]
    assert lines[3].split() == ["3", "0x00000071", "R", "1", "4", "3", "5", "IOR", "2",
                                "completion", "0x00000055"]
    assert len(lines) == 4


def test_rich_table_on_a_terminal():
    out = io.StringIO()
    write_table(summarise(rtc_trace()), out, use_rich=True)
    text = out.getvalue()
    assert "delta cycle#" in text and "0x00000071" in text and "retry" in text
    assert "━" in text or "─" in text    # drawn by rich


def test_vcd_holds_pin_levels_at_the_record_times():
    clocks = RTC_CLOCKS[:7] + [dict(gnt=1, rst=1)]
    deltas = [1] * 7 + [1000]               # idle clocks left out before the last record
    trace = parse_trace(trace_bytes(raw_records(clocks, deltas=deltas),
                                    {"mode": "raw", "clock_mhz": 100 / 3}))
    out = io.StringIO()
    write_vcd(trace, out)
    vcd = VCDVCD(vcd_string=out.getvalue())
    clock = 30_000                          # ps at 33.3 MHz

    def at(name, time):
        return int(vcd[f"pci.{name}"][time * clock], 2)
    assert [at("frame_n", t) for t in (1, 2, 3, 4, 5, 6, 7)] == [1, 1, 0, 0, 0, 1, 1]
    assert [at("irdy_n", t) for t in (3, 4, 5, 6, 7)] == [1, 0, 0, 0, 1]
    assert [at("stop_n", t) for t in (4, 5, 6, 7)] == [1, 0, 0, 1]
    assert [at("devsel_n", t) for t in (4, 5, 6, 7)] == [1, 0, 0, 1]
    assert at("ad", 3) == 0x70 and at("cbe_n", 3) == IOW and at("cbe_n", 4) == 0xE
    assert at("par", 3) == 0                # even parity of the idle clock before: no ones
    assert at("par", 4) == 1                # of 0x70 and 0b0011: five ones
    assert at("par", 5) == 1                # of 0x0A and 0b1110: five ones
    assert at("rst_n", 7) == 1 and at("gnt_n", 7) == 1
    assert at("gnt_n", 1006) == 1 and at("gnt_n", 1007) == 0 and at("rst_n", 1007) == 0
    assert vcd["pci.gnt_n"].tv[-1][0] == 1007 * clock
    assert vcd["spy.trigger"].tv == [(clock, "0")]


def test_vcd_of_a_64bit_bus_names_its_lines():
    trace = synthetic_trace(100, seed=1, width=64)[0]
    out = io.StringIO()
    write_vcd(trace, out)
    names = set(VCDVCD(vcd_string=out.getvalue()).signals)
    assert {"pci.ad_hi", "pci.cbe_hi_n", "pci.par64", "pci.req64_n", "pci.ack64_n"} <= names


def test_decode_command_writes_every_format(tmp_path, capsys):
    path = tmp_path / "rtc.pcitrace"
    trace = rtc_trace()
    write_trace(path, trace.data, trace.metadata)
    out = io.StringIO()
    assert main(["decode", str(path), "--format", "csv"], out=out) == 0
    assert out.getvalue() == RTC_CSV
    assert main(["decode", str(path), "--format", "csv", "-o", str(tmp_path / "x.csv")]) == 0
    assert (tmp_path / "x.csv").read_text() == RTC_CSV
    out = io.StringIO()
    assert main(["decode", str(path), "--format", "json"], out=out) == 0
    document = json.loads(out.getvalue())
    assert [t["latency"] for t in document["transactions"]] == [2, 2, 3]
    out = io.StringIO()
    assert main(["--json", "decode", str(path)], out=out) == 0
    assert json.loads(out.getvalue()) == document
    assert main(["decode", str(path), "--format", "vcd", "-o", str(tmp_path / "x.vcd")]) == 0
    assert "frame_n" in (tmp_path / "x.vcd").read_text()
    out = io.StringIO()
    assert main(["decode", str(path)], out=out) == 0
    assert out.getvalue().splitlines()[0].split()[:3] == ["Trans", "Addr", "R/W"]


def test_vcd_of_a_summary_trace_is_refused(tmp_path, capsys):
    path = tmp_path / "sum.pcitrace"
    write_trace(path, pack_records(SummaryRecord(), {"timestamp": [1]}), {"mode": "summary"})
    assert main(["decode", str(path), "--format", "vcd"]) == 2
    err = capsys.readouterr().err
    assert err == "pcispy: error: VCD needs a raw capture; this trace has no raw records\n"


def _lossy_rtc_file(tmp_path):
    """The RTC trace with an OVERRUN record (3 records lost) after the first transaction and
    the board's counts in the metadata (4 lost in 2 overruns: one record was overwritten)."""
    records = raw_records(RTC_CLOCKS)
    overrun = pack_records(OverrunEvent(), {"timestamp": 7, "lost": 3}, size_bits=128)
    path = tmp_path / "lossy.pcitrace"
    write_trace(path, np.concatenate([records[:7], overrun, records[7:]]),
                {"mode": "raw", "lost": 4, "overruns": 2})
    return path


LOSS_LINE = ("4 records lost in 2 overruns (the spy's trace writer fell behind the bus) at "
             "clock 7: transactions around them are missing or left out")


def test_lost_records_are_shown_under_the_table(tmp_path, capsys):
    out = io.StringIO()
    assert main(["decode", str(_lossy_rtc_file(tmp_path))], out=out) == 0
    lines = out.getvalue().splitlines()
    # The transaction after the OVERRUN record starts the decode anew: it is left out
    # (its clock before is unknown), as the line says.
    assert [line.split()[1] for line in lines[1:-1]] == ["0x00000070", "0x00000071"]
    assert lines[-1] == LOSS_LINE
    assert capsys.readouterr().err == ""


def test_lost_records_warn_beside_a_csv(tmp_path, capsys):
    out = io.StringIO()
    assert main(["decode", str(_lossy_rtc_file(tmp_path)), "--format", "csv"], out=out) == 0
    assert out.getvalue().splitlines()[0] == ",".join(CSV_COLUMNS)      # the same header
    assert len(out.getvalue().splitlines()) == 3
    assert capsys.readouterr().err == f"pcispy: warning: {LOSS_LINE}\n"
    # No loss, no warning.
    path = tmp_path / "rtc.pcitrace"
    write_trace(path, rtc_trace().data, rtc_trace().metadata)
    assert main(["decode", str(path), "--format", "csv"], out=io.StringIO()) == 0
    assert capsys.readouterr().err == ""


def test_lost_records_and_events_are_json_fields(tmp_path):
    path = _lossy_rtc_file(tmp_path)
    out = io.StringIO()
    assert main(["decode", str(path), "--format", "json"], out=out) == 0
    document = json.loads(out.getvalue())
    assert (document["lost"], document["overruns"]) == (4, 2)
    assert document["events"] == [{"kind": "overrun", "time": 7, "lost": 3}]
    assert len(document["transactions"]) == 2
    out = io.StringIO()
    assert main(["--json", "decode", str(path)], out=out) == 0
    assert json.loads(out.getvalue()) == document


def test_trigger_and_violations_of_a_summary_trace():
    from pcispy.check.checker import RULES
    summary = pack_records(SummaryRecord(), {"timestamp": [100, 140], "command": IOW,
                                             "address": 0x70})
    trigger = pack_records(TriggerEvent(), {"timestamp": 100, "source": 1}, size_bits=256)
    violation = [pack_records(ViolationEvent(), {"timestamp": t, "clocks": 2,
                                                 "rules": (1 << RULES[0].id) |
                                                 (1 << RULES[3].id)}, size_bits=256)
                 for t in (120, 150)]
    trace = parse_trace(trace_bytes(np.concatenate([trigger, summary[:1], violation[0],
                                                    summary[1:], violation[1]]),
                                    {"mode": "summary"}))
    events = trace_events(trace)
    assert events == [
        {"kind": "trigger", "time": 100, "source": "filter"},
        {"kind": "violation", "time": 120, "rules": [RULES[0].name, RULES[3].name],
         "clocks": 2},
        {"kind": "violation", "time": 150, "rules": [RULES[0].name, RULES[3].name],
         "clocks": 2}]
    out = io.StringIO()
    write_table(summarise(trace), out, notes=note_lines(trace, events))
    assert out.getvalue().splitlines()[-2:] == [
        "trigger at clock 100 (filter)",
        f"protocol violations: {RULES[0].name} x2 from clock 120; {RULES[3].name} x2 from "
        "clock 120"]


def test_raw_trigger_and_violation_marks_are_events():
    from pcispy.check.checker import RULES
    clocks = [dict(c) for c in RTC_CLOCKS]
    clocks[0]["trigger"] = 1
    clocks[4].update(violation=1, rule=RULES[5].id, many_rules=1)
    trace = parse_trace(trace_bytes(raw_records(clocks), {"mode": "raw"}))
    assert trace_events(trace) == [
        {"kind": "trigger", "time": 1},
        {"kind": "violation", "time": 5, "rules": [RULES[5].name], "more_rules": True}]


# -- what the VCD does not know, and its clock ------------------------------------------------

#: Ps per clock at the nominal 33 MHz PCI clock (a 30 ns cycle).
CLOCK_PS = 30_000
#: A write of one word to 0x1000 whose last record shows TRDY# (times 1..3 of its trace).
WRITE_CLOCKS = [dict(frame=1, ad=0x1000, cbe=Command.MEM_WRITE.value),
                dict(irdy=1, ad=0x1234, cbe=0x0),
                dict(irdy=1, devsel=1, trdy=1, ad=0x1234, cbe=0x0)]


def _vcd(trace):
    out = io.StringIO()
    write_vcd(trace, out)
    return out.getvalue(), VCDVCD(vcd_string=out.getvalue())


def _two_writes(gap, **metadata):
    """Two :data:`WRITE_CLOCKS` transactions, the second ``gap`` clocks after the first's
    last record (times 1..3 and 3 + gap ..)."""
    deltas = [1, 1, 1, gap, 1, 1]
    return trace_bytes(raw_records(WRITE_CLOCKS * 2, deltas=deltas), {"mode": "raw",
                                                                       **metadata})


def test_vcd_of_a_select_capture_is_unknown_between_its_transactions():
    # 31 528 clocks the spy left out: TRDY# must not show asserted through them.
    trace = parse_trace(_two_writes(31_528, capture={"raw_select": True}))
    text, vcd = _vcd(trace)
    unknown_from, known_again = 4 * CLOCK_PS, (3 + 31_528) * CLOCK_PS
    assert vcd["pci.trdy_n"].tv == [(CLOCK_PS, "1"), (3 * CLOCK_PS, "0"),
                                    (unknown_from, "x"), (known_again, "1"),
                                    (known_again + 2 * CLOCK_PS, "0")]
    assert vcd["pci.ad"].tv[2:4] == [(unknown_from, "x"), (known_again, bin(0x1000)[2:])]
    for name in vcd.signals:
        assert vcd[name][unknown_from] == "x" and vcd[name][known_again - 1] == "x", name
        assert vcd[name][known_again] != "x", name
    # One time stamp for the unknown span, where every signal of the file goes x.
    block = text.split(f"\n#{unknown_from}\n")[1].split("\n#")[0].splitlines()
    assert len(block) == len(vcd.signals)
    assert all(line.startswith(("x", "bx ")) for line in block), block


def test_vcd_of_lost_records_is_unknown_and_idle_compression_is_idle():
    records = raw_records(WRITE_CLOCKS * 3, deltas=[1, 1, 1, 50, 1, 1, 1, 1, 1])
    overrun = pack_records(OverrunEvent(), {"timestamp": 40, "lost": 12}, size_bits=128)
    # The records after the OVERRUN count from its time (40): the second write is at
    # 90..92, and nothing of clocks 4..89 is known (12 records were lost among them); the
    # third write follows at 100 after idle clocks left out by idle compression.
    records[6:, :] = raw_records(WRITE_CLOCKS, deltas=[8, 1, 1])
    trace = parse_trace(trace_bytes(np.concatenate([records[:3], overrun, records[3:]]),
                                    {"mode": "raw"}))
    assert trace.times()[trace.indices(0x1)].tolist() == [1, 2, 3, 90, 91, 92, 100, 101, 102]
    _, vcd = _vcd(trace)
    assert vcd["pci.frame_n"].tv == [(CLOCK_PS, "0"), (2 * CLOCK_PS, "1"),
                                     (4 * CLOCK_PS, "x"), (90 * CLOCK_PS, "0"),
                                     (91 * CLOCK_PS, "1"), (100 * CLOCK_PS, "0"),
                                     (101 * CLOCK_PS, "1")]
    # The idle clocks 93..99 show the record before them (TRDY# of its last phase).
    assert vcd["pci.trdy_n"][99 * CLOCK_PS] == "0"
    assert all(vcd[name][89 * CLOCK_PS] == "x" for name in vcd.signals)


@pytest.mark.parametrize("clock_mhz, period_ps", [
    (33, 30_000), (100 / 3, 30_000), (33.333, 30_000), (66, 15_000), (66.667, 15_000),
    (25, 40_000), (50, 20_000)])
def test_vcd_clock_is_the_nominal_pci_period(clock_mhz, period_ps):
    trace = parse_trace(_two_writes(10, clock_mhz=clock_mhz))
    text, vcd = _vcd(trace)
    assert "$timescale 1 ps $end" in text
    assert vcd["pci.frame_n"].tv == [(period_ps, "0"), (2 * period_ps, "1"),
                                     (13 * period_ps, "0"), (14 * period_ps, "1")]


#: A memory read nobody claims: the master gives up five clocks after its address phase.
MASTER_ABORT_CLOCKS = ([{}, dict(frame=1, ad=0x2000, cbe=Command.MEM_READ.value)] +
                       [dict(frame=1, irdy=1, cbe=0x0)] * 4 + [dict(irdy=1, cbe=0x0), {}])


def test_json_master_abort_has_no_devsel_speed():
    trace = parse_trace(trace_bytes(raw_records(MASTER_ABORT_CLOCKS + RTC_CLOCKS[2:7]),
                                    {"mode": "raw"}))
    summaries = summarise(trace)
    document = json.loads(json.dumps(to_json(summaries)))
    assert [(t["termination"], t["devsel"]) for t in document["transactions"]] == [
        ("master_abort", None), ("retry", "medium")]
    assert np.array_equal(summaries_from_json(document), summaries)
    document["transactions"][1]["devsel"] = None
    with pytest.raises(PcispyError, match="devsel null for a retry"):
        summaries_from_json(document)
