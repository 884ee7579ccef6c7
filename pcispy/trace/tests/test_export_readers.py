# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy decode`` exports read back by readers that are not ours: the VCD by two PyPI
parsers (vcdvcd, and pyvcd's tokenizer), the CSV by the csv module, the JSON by the json
module. The expected values are built here from the clocks and records the test made (pin
names, pin levels, CSV texts and enum names written out from the PCI specification and
the spy issue), not from the exporter's own tables."""

import csv
import io
import json

import numpy as np
import pytest
from vcd.reader import TokenKind, tokenize
from vcdvcd import VCDVCD

from pcispy.spy.format import SummaryRecord, record_fields
from pcispy.app.cli import main
from pcispy.trace.decode import raw_records
from pcispy.trace.file import pack_records, read_trace, write_trace

pytestmark = pytest.mark.host

SEEDS = [1, 2, 3]

#: Each bus line's VCD name and bit count, as the wires are named (# lines end in _n).
PINS_32 = {"ad": ("ad", 32), "cbe": ("cbe_n", 4), "par": ("par", 1),
           "frame": ("frame_n", 1), "irdy": ("irdy_n", 1), "trdy": ("trdy_n", 1),
           "stop": ("stop_n", 1), "devsel": ("devsel_n", 1), "idsel": ("idsel", 1),
           "lock": ("lock_n", 1), "perr": ("perr_n", 1), "serr": ("serr_n", 1),
           "req": ("req_n", None), "gnt": ("gnt_n", None), "inta": ("inta_n", 1),
           "intb": ("intb_n", 1), "intc": ("intc_n", 1), "intd": ("intd_n", 1),
           "rst": ("rst_n", 1)}
PINS_64 = {**PINS_32, "ad_hi": ("ad_hi", 32), "cbe_hi": ("cbe_hi_n", 4), "par64": ("par64", 1),
           "req64": ("req64_n", 1), "ack64": ("ack64_n", 1)}
#: Lines recorded at pin level (C/BE# is carried as on the pins); the others are inverted.
AT_PIN_LEVEL = {"ad", "ad_hi", "cbe", "cbe_hi", "par", "par64", "idsel"}
#: Clock period in ps at the trace's 33.33 MHz.
PERIOD = 30_000


def _random_clocks(rng, width, masters, count):
    pins = PINS_64 if width == 64 else PINS_32
    clocks = []
    for _ in range(count):
        clock = {}
        for line, (_, bits) in pins.items():
            bits = bits or masters
            clock[line] = int(rng.integers(0, 1 << bits, dtype=np.uint64))
        clock["trigger"] = int(rng.random() < 0.05)
        clock["violation"] = int(rng.random() < 0.05)
        clocks.append(clock)
    return clocks


def _pin(line, value, bits):
    return value if line in AT_PIN_LEVEL else ~value & ((1 << bits) - 1)


def _pyvcd_values(text):
    """``{(scope, name): [(time, value)]}`` from pyvcd's tokenizer."""
    names, scope, changes, time = {}, None, {}, None
    for token in tokenize(io.BytesIO(text.encode())):
        if token.kind is TokenKind.SCOPE:
            scope = token.data.ident
        elif token.kind is TokenKind.VAR:
            names[token.data.id_code] = (scope, token.data.reference)
        elif token.kind is TokenKind.CHANGE_TIME:
            time = token.data
        elif token.kind in (TokenKind.CHANGE_SCALAR, TokenKind.CHANGE_VECTOR):
            value = int(token.data.value) if token.kind is TokenKind.CHANGE_SCALAR \
                else token.data.value
            changes.setdefault(names[token.data.id_code], []).append((time, value))
    return changes


def _at(changes, time):
    value = None
    for when, new in changes:
        if when > time:
            break
        value = new
    return value


@pytest.mark.parametrize("width,masters", [(32, 1), (64, 3)])
@pytest.mark.parametrize("seed", SEEDS)
def test_vcd_holds_every_line_at_every_record_time(tmp_path, seed, width, masters):
    rng = np.random.default_rng(seed)
    clocks = _random_clocks(rng, width, masters, 60)
    # Idle-compressed gaps: a record's delta counts the clocks since the one before.
    deltas = rng.choice([1, 1, 1, 2, 7, 300], size=len(clocks))
    start = int(rng.integers(0, 1000))
    write_trace(tmp_path / "raw.pcitrace", raw_records(clocks, width, masters, deltas),
                {"mode": "raw", "bus_width": width, "masters": masters,
                 "start_timestamp": start})
    out = tmp_path / "raw.vcd"
    assert main(["decode", str(tmp_path / "raw.pcitrace"), "--format", "vcd",
                 "-o", str(out)]) == 0
    text = out.read_text()
    times = start + np.cumsum(deltas)
    pins = PINS_64 if width == 64 else PINS_32
    vcd = VCDVCD(vcd_string=text)
    tokens = _pyvcd_values(text)
    expected_names = {f"pci.{name}" for name, _ in pins.values()} | {"spy.trigger",
                                                                     "spy.violation"}
    assert set(vcd.signals) == expected_names, f"seed {seed}"
    for line, (name, bits) in pins.items():
        bits = bits or masters
        assert int(vcd[f"pci.{name}"].size) == bits, f"seed {seed}: {name}"
        for index, clock in enumerate(clocks):
            want = _pin(line, clock[line], bits)
            # At the record's clock edge, and through the idle clocks up to the next record.
            for time in {int(times[index]) * PERIOD,
                         (int(times[index + 1]) * PERIOD - 1 if index + 1 < len(clocks)
                          else int(times[index]) * PERIOD)}:
                got = int(vcd[f"pci.{name}"][time], 2)
                assert got == want, (f"seed {seed}: {name} at record {index} (ps {time}): "
                                     f"vcdvcd reads {got:#x}, the clock had {want:#x}")
                assert _at(tokens[("pci", name)], time) == want, \
                    f"seed {seed}: {name} at record {index}: pyvcd disagrees"
    for mark in ("trigger", "violation"):
        for index, clock in enumerate(clocks):
            assert int(vcd[f"spy.{mark}"][int(times[index]) * PERIOD]) == clock[mark]
    # Nothing before the first record's clock.
    first = min(when for changes in tokens.values() for when, _ in changes)
    assert first == int(times[0]) * PERIOD


# -- CSV and JSON -----------------------------------------------------------------------------

#: Command codes (PCI 3.0 table 3-1) and the mnemonics the spy issue gives them.
MNEMONICS = {0x2: "IOR", 0x3: "IOW", 0x6: "MR", 0x7: "MW", 0xA: "CFGR", 0xB: "CFGW",
             0xC: "MRM", 0xE: "MRL", 0xF: "MWI"}
READS = {"IOR", "MR", "CFGR", "MRM", "MRL"}
#: Termination codes of the summary record and their CSV names (spy issue).
TERMINATIONS = {0: "completion", 1: "master_abort", 2: "retry", 3: "disconnect_data",
                4: "disconnect_nodata", 5: "target_abort", 6: "latency_timer"}
DEVSEL = {0: "fast", 1: "medium", 2: "slow", 3: "subtractive"}


def _devsel(record):
    """The JSON's ``devsel`` of ``record``: none for a master abort (no target asserted
    DEVSEL#; the spy writes 0 there), else the speed's name. A master abort with another
    code is not what the spy writes: it keeps its name, so that the file reads back."""
    if TERMINATIONS[record["termination"]] == "master_abort" and record["devsel"] == 0:
        return None
    return DEVSEL[record["devsel"]]
HEADER = "trans,time,addr,cmd,rw,len,dur,lat,wait,term,data,delta"


def _summary_file(tmp_path, seed, count=80):
    """A summary trace of random transactions (known commands, every termination, 32 and
    64-bit addresses); its fields as Python ints, one dict per record."""
    rng = np.random.default_rng(seed)
    layout = SummaryRecord()
    fields = {}
    for name, _, bits in record_fields(layout):
        if name != "kind":
            fields[name] = rng.integers(0, 1 << min(bits, 63), count, dtype=np.uint64)
    fields["command"] = rng.choice(sorted(MNEMONICS), count).astype(np.uint64)
    fields["termination"] = rng.integers(0, len(TERMINATIONS), count).astype(np.uint64)
    fields["timestamp"] = np.cumsum(rng.integers(1, 5000, count)).astype(np.uint64)
    fields["address"] = np.where(rng.random(count) < 0.3,
                                 rng.integers(1 << 32, 1 << 40, count, dtype=np.uint64),
                                 rng.integers(0, 1 << 32, count, dtype=np.uint64))
    path = tmp_path / "sum.pcitrace"
    write_trace(path, pack_records(layout, fields), {"mode": "summary"})
    records = [{name: int(value[i]) for name, value in fields.items()} for i in range(count)]
    return path, records


@pytest.mark.parametrize("seed", SEEDS)
def test_csv_read_by_the_csv_module_equals_the_summaries(tmp_path, seed):
    path, records = _summary_file(tmp_path, seed)
    assert main(["decode", str(path), "--format", "csv", "-o", str(tmp_path / "s.csv")]) == 0
    with open(tmp_path / "s.csv", newline="") as file:
        assert file.readline().rstrip("\r\n") == HEADER
        file.seek(0)
        rows = list(csv.DictReader(file))
    assert len(rows) == len(records)
    previous = records[0]["timestamp"]
    for number, (row, record) in enumerate(zip(rows, records), start=1):
        digits = 16 if record["address"] >> 32 else 8
        mnemonic = MNEMONICS[record["command"]]
        assert row == {
            "trans": str(number), "time": str(record["timestamp"]),
            "addr": f"0x{record['address']:0{digits}x}", "cmd": mnemonic,
            "rw": "R" if mnemonic in READS else "W", "len": str(record["data_phases"]),
            "dur": str(record["duration"]), "lat": str(record["latency"]),
            "wait": str(record["initiator_wait"] + record["target_wait"]),
            "term": TERMINATIONS[record["termination"]],
            "data": f"0x{record['first_data']:08x}",
            "delta": str(record["timestamp"] - previous),
        }, f"seed {seed} transaction {number}"
        previous = record["timestamp"]


@pytest.mark.parametrize("seed", SEEDS)
def test_json_read_by_the_json_module_equals_the_records(tmp_path, seed, capsys):
    path, records = _summary_file(tmp_path, seed)
    out = io.StringIO()
    assert main(["decode", str(path), "--format", "json"], out=out) == 0
    document = json.loads(out.getvalue())
    assert document["metadata"] == read_trace(path).metadata
    assert len(document["transactions"]) == len(records)
    previous = records[0]["timestamp"]
    for number, (item, record) in enumerate(zip(document["transactions"], records), start=1):
        mnemonic = MNEMONICS[record["command"]]
        expected = dict(record, command=mnemonic,
                        termination=TERMINATIONS[record["termination"]],
                        devsel=_devsel(record), trans=number,
                        rw="R" if mnemonic in READS else "W",
                        wait=record["initiator_wait"] + record["target_wait"],
                        delta=record["timestamp"] - previous)
        assert item == expected, f"seed {seed} transaction {number}"
        previous = record["timestamp"]
    # `--json decode` prints the same object on one line.
    out = io.StringIO()
    assert main(["--json", "decode", str(path)], out=out) == 0
    assert out.getvalue().count("\n") == 1 and json.loads(out.getvalue()) == document
