# SPDX-License-Identifier: BSD-2-Clause
"""The pcapng export: the exact blocks of a known trace, every summary field read back,
time stamps at each PCI clock, records lost (flag, comment, warning), ``pcispy decode
--format pcapng`` to a file, a pipe and a terminal, the dissector's tables generated from the
declarations, and the real ``tshark`` reading a file pcispy wrote with that dissector.

Wireshark's tshark is installed with apt-get when missing (as root); when that is impossible
only the tshark checks are skipped, with the reason printed.
"""

import io
import os
import struct
import subprocess

import numpy as np
import pytest

from pcispy import __version__
from pcispy.app.cli import main
from pcispy.app.tests._debian import debian_tool
from pcispy.host.errors import PcispyError
from pcispy.pci.bus import Command, DevselSpeed, Termination
from pcispy.trace import pcapng
from pcispy.trace.decode import SUMMARY_DTYPE, summarise, synthetic_trace
from pcispy.trace.export import export
from pcispy.trace.pcapng import _PACKET_SUMMARY_FIELDS, pcapng_packets
from pcispy.spy.format import OverrunEvent, SummaryRecord, record_fields
from pcispy.trace.tests.test_export import LOSS_LINE, _lossy_rtc_file, rtc_trace
from pcispy.trace.file import pack_records, parse_trace, trace_bytes, write_trace

pytestmark = pytest.mark.spy

#: ns per clock at the nominal 33 MHz PCI clock.
CLOCK_NS = 30


def _pcapng_of(trace):
    """The pcapng export of ``trace``, as bytes."""
    out = io.BytesIO()
    export(trace, "pcapng", out, warn=lambda line: None)
    return out.getvalue()


def _option(code, value):
    """A pcapng option, written out by hand."""
    return struct.pack("<HH", code, len(value)) + value + bytes(-len(value) % 4)


def _block(kind, body):
    """A pcapng block of a ``body`` that is a multiple of 4 bytes, written out by hand."""
    return struct.pack("<II", kind, len(body) + 12) + body + struct.pack("<I", len(body) + 12)


def test_blocks_of_a_known_trace_are_exact():
    # The RTC trace (test_export.RTC_CSV): a retried IOW at clock 3, the IOW again at 8,
    # an IOR at 13; each block written out here by hand from the pcapng draft.
    blob = _pcapng_of(rtc_trace())
    end = struct.pack("<HH", 0, 0)
    section = _block(0x0A0D0D0A, bytes.fromhex("4d3c2b1a") + struct.pack("<HH", 1, 0)
                     + b"\xff" * 8 + _option(4, f"pcispy {__version__}".encode()) + end)
    description = b"transactions of a 32-bit PCI bus at 33.3333 MHz (30000 ps a clock)"
    interface = _block(1, struct.pack("<HHI", 147 + 7, 0, 47) + _option(2, b"pcispy")
                       + _option(3, description) + _option(9, b"\x09") + end)
    # Packet 1: version, trans, clock, cmd IOW, rw W, addr, len, dur, lat, iwait, twait,
    # term retry, devsel medium, data, C/BE#, master, filters, flags.
    first = struct.pack("<BQQBBQHHHHHBBIBBBB", 1, 1, 3, 3, 0, 0x70, 0, 4, 2, 0, 1, 2, 1, 0,
                        0x0E, 0, 0, 0)
    packet = _block(6, struct.pack("<IIIII", 0, 0, 3 * CLOCK_NS, 47, 47) + first + b"\0")
    assert blob[:len(section)] == section
    assert blob[len(section):len(section) + len(interface)] == interface
    packets = blob[len(section) + len(interface):]
    assert len(packets) == 3 * 80 and packets[:80] == packet
    third = packets[160:]
    assert struct.unpack_from("<IIIII", third, 8) == (0, 0, 13 * CLOCK_NS, 47, 47)
    assert third[28:28 + 47] == struct.pack("<BQQBBQHHHHHBBIBBBB", 1, 3, 13, 2, 1, 0x71, 1,
                                            4, 3, 0, 2, 0, 1, 0x55, 0x0E, 0, 0, 0)


def _summary_of_every_field(count=60, seed=5):
    """A summary trace of random values in every field (a 64-bit address, any DEVSEL#
    with any ending: a master abort with 0 is "none")."""
    rng = np.random.default_rng(seed)
    fields = {name: rng.integers(0, 1 << min(width, 62), count, dtype=np.uint64)
              for name, _, width in record_fields(SummaryRecord())
              if name not in ("kind", "termination")}
    fields["termination"] = rng.integers(0, len(Termination), count)
    fields["termination"][:2] = Termination.MASTER_ABORT.value
    fields["devsel"][:2] = (0, 2)
    return parse_trace(trace_bytes(pack_records(SummaryRecord(), fields),
                                   {"mode": "summary"}))


def test_every_summary_field_reads_back():
    trace = _summary_of_every_field()
    capture = pcapng.read_pcapng(_pcapng_of(trace))
    summaries = trace.summaries
    packets = capture.packets
    assert np.array_equal(packets, pcapng_packets(summaries, np.zeros(len(summaries), bool)))
    assert packets["trans"].tolist() == list(range(1, len(summaries) + 1))
    # Each field of the summary, back from the packet.
    back = np.zeros(len(packets), dtype=SUMMARY_DTYPE)
    back["kind"] = summaries["kind"]
    for packet_field, summary_field in _PACKET_SUMMARY_FIELDS.items():
        back[summary_field] = packets[packet_field]
    none = packets["devsel"] == pcapng.DEVSEL_NONE
    back["devsel"] = np.where(none, 0, packets["devsel"])
    masks = {name: mask for name, mask, *_ in pcapng.PACKET_FLAGS}
    for name in ("dac", "is64", "parity_error"):
        back[name] = packets["flags"] & masks[name] != 0
    assert np.array_equal(back, summaries.astype(SUMMARY_DTYPE))
    assert none.tolist()[:2] == [True, False]         # a master abort with DEVSEL# 2 keeps it
    assert not (packets["flags"] & masks["lost_before"]).any()
    assert packets["rw"].tolist() == [int(Command(int(c)).is_read)
                                      for c in summaries["command"]]
    assert capture.timestamps.tolist() == [int(t) * CLOCK_NS for t in summaries["timestamp"]]
    assert capture.interfaces == [{"linktype": pcapng.LINKTYPE, "snaplen": 47,
                                   "name": "pcispy", "tsresol": 9, "description":
                                   "transactions of a 32-bit PCI bus at 33.3333 MHz (30000 "
                                   "ps a clock)"}]
    assert (capture.comments, capture.application) == ([], f"pcispy {__version__}")


def test_a_raw_trace_is_its_decoded_transactions():
    trace = synthetic_trace(3000, seed=3)[0]
    packets = pcapng.read_pcapng(_pcapng_of(trace)).packets
    summaries = summarise(trace)
    assert len(packets) == len(summaries) > 50
    assert packets["addr"].tolist() == summaries["address"].tolist()


@pytest.mark.parametrize("clock_mhz, clocks, ns", [
    (100 / 3, [0, 1, 1 << 47], [0, 30, 30 << 47]),
    (66, [1, 7], [15, 105]),
    (25, [3], [120]),
    # 44.24 MHz: 22 604 ps a clock, rounded to the ns.
    (44.24, [1, 3, 1000], [23, 68, 22_604]),
])
def test_time_stamps_are_clocks_in_ns(clock_mhz, clocks, ns):
    records = pack_records(SummaryRecord(), {"timestamp": clocks})
    trace = parse_trace(trace_bytes(records, {"mode": "summary", "clock_mhz": clock_mhz}))
    assert pcapng.read_pcapng(_pcapng_of(trace)).timestamps.tolist() == ns


def test_time_stamps_outside_pcapng_are_refused():
    with pytest.raises(PcispyError, match="before clock 0"):
        pcapng.nanoseconds([5, -1], 30_000)
    with pytest.raises(PcispyError, match="2\\^64 ns"):
        pcapng.nanoseconds([1 << 62], 30_000)
    assert pcapng.nanoseconds([], 30_000).tolist() == []


def _lossy_summary_trace():
    """Four summaries, 5 records lost after the second (an OVERRUN record between)."""
    summaries = pack_records(SummaryRecord(), {"timestamp": [10, 20, 90, 95],
                                               "command": Command.MEM_READ.value})
    overrun = pack_records(OverrunEvent(), {"timestamp": 50, "lost": 5}, size_bits=256)
    return parse_trace(trace_bytes(np.concatenate([summaries[:2], overrun, summaries[2:]]),
                                   {"mode": "summary"}))


def test_records_lost_are_flagged_commented_and_warned(tmp_path, capsys):
    lost = pcapng.PACKET_FLAGS[0][1]
    capture = pcapng.read_pcapng(_pcapng_of(_lossy_summary_trace()))
    assert (capture.packets["flags"] & lost).tolist() == [0, 0, lost, 0]
    assert capture.comments == ["5 records lost in 1 overrun (the spy's trace writer fell "
                                "behind the bus) at clock 50: transactions around them are "
                                "missing or left out"]
    # A raw trace: the decode restarts after the OVERRUN record; the IOR after it is marked.
    out = tmp_path / "lossy.pcapng"
    assert main(["decode", str(_lossy_rtc_file(tmp_path)), "--format", "pcapng",
                 "-o", str(out)]) == 0
    assert capsys.readouterr().err == f"pcispy: warning: {LOSS_LINE}\n"
    capture = pcapng.read_pcapng(out.read_bytes())
    assert capture.packets["addr"].tolist() == [0x70, 0x71]
    assert (capture.packets["flags"] & lost).tolist() == [0, lost]
    assert capture.comments == [LOSS_LINE]


class _Terminal(io.StringIO):
    """Standard output on a terminal."""
    def isatty(self):
        return True


def test_decode_command_writes_a_file_and_a_pipe_not_a_terminal(tmp_path, capsysbinary):
    path = tmp_path / "rtc.pcitrace"
    trace = rtc_trace()
    write_trace(path, trace.data, trace.metadata)
    assert main(["decode", str(path), "--format", "pcapng", "-o", str(tmp_path / "x")]) == 0
    blob = (tmp_path / "x").read_bytes()
    assert blob == _pcapng_of(trace)
    # Standard output as a pipe: its byte buffer, or the characters of the bytes on a text
    # stream without one.
    assert main(["decode", str(path), "--format", "pcapng"]) == 0
    assert capsysbinary.readouterr().out == blob
    out = io.StringIO()
    assert main(["decode", str(path), "--format", "pcapng"], out=out) == 0
    assert out.getvalue().encode("latin-1") == blob
    terminal = _Terminal()
    assert main(["decode", str(path), "--format", "pcapng"], out=terminal) == 2
    assert terminal.getvalue() == ""
    assert capsysbinary.readouterr().err == (b"pcispy: error: pcapng is binary: not written "
                                             b"to a terminal; give an output file with -o "
                                             b"FILE.pcapng (or pipe it)\n")


def test_reader_refuses_other_files():
    with pytest.raises(PcispyError, match="not a little-endian pcapng"):
        pcapng.read_pcapng(b"\xd4\xc3\xb2\xa1" + bytes(20))
    blob = bytearray(_pcapng_of(rtc_trace()))
    with pytest.raises(PcispyError, match="damaged block at byte"):
        pcapng.read_pcapng(blob[:-1])
    blob[-80 + 8:-80 + 12] = b"\x01\0\0\0"              # the last packet on interface 1
    with pytest.raises(PcispyError, match="not a pcispy packet"):
        pcapng.read_pcapng(blob)


def test_dissector_tables_are_generated_from_the_declarations(tmp_path, monkeypatch,
                                                                capsys):
    text = pcapng.DISSECTOR_PATH.read_text()
    assert pcapng.dissector_lua(text) == text, \
        "contrib/wireshark/pcispy.lua is out of date: run python -m pcispy.trace.pcapng"
    tables = pcapng.dissector_tables()
    assert tables in text
    for name, _, label, _ in pcapng.PACKET_FIELDS:
        offset, size = pcapng.PACKET_DTYPE.fields[name][1], pcapng.PACKET_DTYPE[name].itemsize
        assert f'{{"{name}", {offset}, {size}, "{label}",' in tables
    assert '[7] = "MW",' in tables and '[255] = "none",' in tables
    assert f"local USER_LINK = {pcapng.USER_LINK}\n" in tables
    # A stale copy is rewritten; one without the generated part's lines refused.
    copy = tmp_path / "wireshark" / "pcispy.lua"
    copy.parent.mkdir()
    copy.write_text(text.replace('[7] = "MW",', '[7] = "MWR",'))
    monkeypatch.setattr(pcapng, "DISSECTOR_PATH", copy)
    assert pcapng.main([]) == 0
    assert copy.read_text() == text
    assert capsys.readouterr().out == f"wrote {copy}\n"
    with pytest.raises(PcispyError, match="pcispy.lua has lost its"):
        pcapng.dissector_lua(text.replace("-- END generated", "-- the end"))


def test_packet_table_for_the_docs_names_every_field_at_its_offset():
    text = pcapng.packet_markdown()
    assert f"`LINKTYPE_USER{pcapng.USER_LINK}` ({pcapng.LINKTYPE})" in text
    for name, _, _, _ in pcapng.PACKET_FIELDS:
        offset, size = pcapng.PACKET_DTYPE.fields[name][1], pcapng.PACKET_DTYPE[name].itemsize
        assert f"| {offset} | {size} | `pcispy.{name}` |" in text
    assert "7 `MW`" in text and "| `0x01` | `pcispy.flags.lost_before` |" in text


# -- the real tshark -------------------------------------------------------------------------

def _run_tshark(tshark, home, capture, *options):
    """tshark's output lines on ``capture`` with the dissector, its preferences in ``home``
    (none of the user's)."""
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home))
    result = subprocess.run([tshark, "-X", f"lua_script:{pcapng.DISSECTOR_PATH}",
                             "-r", str(capture), *options], capture_output=True, text=True,
                            env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Lua" not in result.stderr, result.stderr
    return result.stdout.splitlines()


#: What the tshark check captures: ``(timestamp, address, command, termination,
#: data phases, DEVSEL# speed, more fields)``.
TSHARK_SUMMARIES = (
    (100, 0x8001_0000, Command.MEM_WRITE, Termination.COMPLETION, 16, DevselSpeed.FAST,
     dict(first_data=0x1234_5678, duration=17, latency=1, target_wait=2)),
    (140, 0x1_2345_6780, Command.MEM_READ_LINE, Termination.DISCONNECT_DATA, 4,
     DevselSpeed.MEDIUM, dict(dac=1, initiator_wait=3, first_data=0xCAFE)),
    (200, 0x71, Command.IO_READ, Termination.MASTER_ABORT, 0, DevselSpeed.FAST, {}),
)

#: tshark's fields for them (lines of ``-T fields``, tab-separated).
TSHARK_FIELDS = ("pcispy.trans", "frame.time_epoch", "pcispy.cmd", "pcispy.addr",
                 "pcispy.rw", "pcispy.len", "pcispy.dur", "pcispy.lat", "pcispy.wait",
                 "pcispy.term", "pcispy.devsel", "pcispy.data", "pcispy.flags.dac",
                 "pcispy.flags.lost_before", "_ws.col.Info")
TSHARK_LINES = [
    "1\t0.000003000\tMW\t0x0000000080010000\tW\t16\t17\t1\t2\tcompletion\tfast\t"
    "0x12345678\t0\t0\tMW 0x80010000 len 16 completion",
    "2\t0.000004200\tMRL\t0x0000000123456780\tR\t4\t0\t0\t3\tdisconnect_data\tmedium\t"
    "0x0000cafe\t1\t0\tMRL 0x0000000123456780 len 4 disconnect_data",
    "3\t0.000006000\tIOR\t0x0000000000000071\tR\t0\t0\t0\t0\tmaster_abort\tnone\t"
    "0x00000000\t0\t1\tIOR 0x00000071 len 0 master_abort",
]


def _tshark_trace(path):
    """A summary trace of :data:`TSHARK_SUMMARIES`, records lost before the third."""
    fields = {name: [] for name in ("timestamp", "address", "command", "termination",
                                    "data_phases", "devsel", "first_data", "duration",
                                    "latency", "initiator_wait", "target_wait", "dac")}
    for time, address, command, ending, phases, devsel, more in TSHARK_SUMMARIES:
        row = dict(timestamp=time, address=address, command=command.value,
                   termination=ending.value, data_phases=phases, devsel=devsel.value)
        for name in fields:
            fields[name].append({**row, **more}.get(name, 0))
    records = pack_records(SummaryRecord(), fields)
    overrun = pack_records(OverrunEvent(), {"timestamp": 150, "lost": 2}, size_bits=256)
    write_trace(path, np.concatenate([records[:2], overrun, records[2:]]),
                {"mode": "summary"})


def test_tshark_shows_every_field_with_the_dissector(tmp_path, capsys):
    tshark, reason = debian_tool("tshark", "tshark")
    if tshark is None:
        print(f"skipping the tshark check: {reason}")
        pytest.skip(reason)
    trace, capture = tmp_path / "bus.pcitrace", tmp_path / "bus.pcapng"
    _tshark_trace(trace)
    assert main(["decode", str(trace), "--format", "pcapng", "-o", str(capture)]) == 0
    fields = [option for name in TSHARK_FIELDS for option in ("-e", name)]
    assert _run_tshark(tshark, tmp_path, capture, "-T", "fields", *fields) == TSHARK_LINES
    assert _run_tshark(tshark, tmp_path, capture, "-Y", 'pcispy.cmd == "MW"', "-T", "fields",
                       *fields) == TSHARK_LINES[:1]
    assert _run_tshark(tshark, tmp_path, capture, "-Y", "pcispy.addr > 0xffffffff || "
                       'pcispy.term == "master_abort"', "-T", "fields", "-e",
                       "pcispy.trans") == ["2", "3"]
    # Records lost before the third: an expert warning.
    assert _run_tshark(tshark, tmp_path, capture, "-Y", "pcispy.flags.lost_before == 1", "-T",
                       "fields", "-e", "pcispy.trans", "-e", "_ws.expert.message") == [
        "3\tRecords lost before this transaction"]
    # A packet of another layout version is marked, not misread.
    packets = pcapng.read_pcapng(capture.read_bytes()).packets.copy()
    packets["version"] = pcapng.PACKET_VERSION + 1
    other = tmp_path / "other.pcapng"
    with open(other, "wb") as file:
        pcapng.write_packets(file, packets[:1], [0], name="pcispy", description="")
    assert _run_tshark(tshark, tmp_path, other, "-T", "fields", "-e", "pcispy.cmd", "-e",
                       "_ws.expert.message") == ["\tUnknown pcispy layout version"]
    # A packet cut short: marked too.
    short = pcapng.PACKET_VERSION.to_bytes(1, "little") + bytes(9)
    other.write_bytes(pcapng.section_header() + pcapng.interface_description("pcispy", "")
                      + _block(6, struct.pack("<IIIII", 0, 0, 0, 10, 10) + short + bytes(2)))
    assert _run_tshark(tshark, tmp_path, other, "-T", "fields", "-e", "pcispy.cmd", "-e",
                       "_ws.expert.message") == ["\tpcispy packet shorter than its layout"]

