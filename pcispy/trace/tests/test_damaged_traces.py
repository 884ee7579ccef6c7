# SPDX-License-Identifier: BSD-2-Clause
"""Damaged traces: ``pcispy decode`` refuses a damaged record in one line naming it;
``decode --partial`` recovers every undamaged transaction before and after the damage
(flipped bits, a file cut short) and says how many records it left out; metadata that
contradicts the records (a 32-bit capture labelled 64-bit, and the reverse) is refused in
one line, exit 2, with or without ``--partial``."""

import csv
import io
import json
import re

import numpy as np
import pytest

from pcispy.app.tests._cli import run_cli
from pcispy.trace.decode import synthetic_summary_trace, synthetic_trace
from pcispy.spy.format import RecordKind, SummaryRecord, record_fields
from pcispy.trace.file import HEADER_BYTES, read_trace, trace_bytes

pytestmark = pytest.mark.spy

SEED = 46
#: Transactions of the summary capture the tests damage.
RECORDS = 2000


def _file(tmp_path, trace, name="capture.pcitrace"):
    path = tmp_path / name
    path.write_bytes(trace_bytes(trace.data, trace.metadata))
    return path


def _csv_rows(status, out, err):
    """The CSV's rows without the columns that count from the row before (``trans``, the
    row's number, and ``delta``, the clocks since the one before)."""
    assert status == 0, err
    return [{key: value for key, value in row.items() if key not in ("trans", "delta")}
            for row in csv.DictReader(io.StringIO(out))]


def _first_record(path):
    """Byte offset of the first record of the file at ``path``."""
    blob = path.read_bytes()
    return HEADER_BYTES + int.from_bytes(blob[12:16], "little")


def test_flipped_bits_leave_every_undamaged_transaction_decoded(tmp_path):
    trace = synthetic_summary_trace(RECORDS, seed=SEED)
    clean = _file(tmp_path, trace)
    rows = _csv_rows(*run_cli("decode", str(clean), "--format", "csv"))
    assert len(rows) == RECORDS
    blob = bytearray(clean.read_bytes())
    start, size = _first_record(clean), trace.record_bytes
    rng = np.random.default_rng(SEED)
    # Damage the spy cannot have written, each kind once: an unknown record kind, an enum
    # value its enum does not have, a reserved bit set; then 200 bits flipped anywhere.
    termination = next(offset for name, offset, _ in record_fields(SummaryRecord())
                       if name == "termination")
    reserved = sum(width for _, _, width in record_fields(SummaryRecord()))
    marked = {100: (0, 0b1000), 700: (termination // 8, 0b111 << termination % 8),
              1500: (size - 1, 0x80)}
    for record, (byte, bits) in marked.items():
        blob[start + record * size + byte] |= bits
    assert reserved < 8 * (size - 1)
    flipped = set(marked)
    for bit in rng.choice((len(blob) - start) * 8, 200, replace=False):
        blob[start + bit // 8] ^= 1 << (bit % 8)
        flipped.add(int(bit // 8 // size))
    damaged = tmp_path / "damaged.pcitrace"
    damaged.write_bytes(bytes(blob))
    print(f"seed {SEED}: {len(flipped)} records hold a flipped bit")
    # Without --partial: one line naming the first damaged record, exit 2.
    status, out, err = run_cli("decode", str(damaged))
    assert status == 2 and out == "" and err.count("\n") == 1, err
    first = int(re.search(r": record (\d+) ", err).group(1))
    assert first in flipped and first <= min(marked), err
    assert f"at byte offset {start + first * size}" in err, err
    # With --partial: every record no flip touched decodes as it did, before and after
    # the damage; the ones found damaged are left out and counted.
    status, out, err = run_cli("decode", str(damaged), "--format", "csv", "--partial")
    recovered = _csv_rows(status, out, err)
    warning = [line for line in err.splitlines() if "damaged record" in line]
    assert len(warning) == 1, err
    skipped = int(re.search(r"(\d+) damaged records? skipped \(the first: record "
                            rf"{first} ", warning[0]).group(1))
    assert len(recovered) == RECORDS - skipped
    assert skipped >= len(marked) and skipped <= len(flipped)
    assert f"decoded the {RECORDS - skipped} records that remain" in warning[0]
    untouched = [rows[i] for i in range(RECORDS) if i not in flipped]
    as_tuples = {tuple(row.values()) for row in recovered}
    assert all(tuple(row.values()) in as_tuples for row in untouched)
    assert tuple(rows[RECORDS - 1].values()) in as_tuples or RECORDS - 1 in flipped


def test_a_file_cut_in_half_decodes_up_to_the_cut_with_partial(tmp_path):
    trace = synthetic_summary_trace(RECORDS, seed=SEED)
    clean = _file(tmp_path, trace)
    rows = _csv_rows(*run_cli("decode", str(clean), "--format", "csv"))
    blob = clean.read_bytes()
    start, size = _first_record(clean), trace.record_bytes
    cut = tmp_path / "cut.pcitrace"
    whole = (len(blob) - start) // size // 2
    cut.write_bytes(blob[:start + whole * size + 5])
    status, out, err = run_cli("decode", str(cut))
    assert status == 2 and err.count("\n") == 1 and f"truncated record {whole}" in err, err
    status, out, err = run_cli("decode", str(cut), "--format", "csv", "--partial")
    assert _csv_rows(status, out, err) == rows[:whole]
    assert err == f"pcispy: warning: {cut}: the file is cut short: its last 5 bytes, part " \
                  f"of a record, are left out; decoded the {whole} records that remain\n"


def test_a_cut_readout_says_how_many_records_are_missing(tmp_path):
    trace = synthetic_summary_trace(100, seed=SEED)
    metadata = dict(trace.metadata, readout={"complete": True, "records_total": 100,
                                             "start": 0, "capacity": 2048,
                                             "trigger_timestamp": 1})
    path = tmp_path / "readout.pcitrace"
    blob = trace_bytes(trace.data, metadata)
    path.write_bytes(blob[:len(blob) - 30 * trace.record_bytes])
    status, out, err = run_cli("decode", str(path))
    assert status == 2 and "70 records where the complete readout has 100" in err, err
    status, out, err = run_cli("--json", "decode", str(path), "--partial")
    assert status == 0, err
    assert len(json.loads(out)["transactions"]) == 70
    assert "30 records its readout holds are missing at the end" in err, err


def test_raw_records_damaged_are_skipped_and_the_rest_decoded(tmp_path):
    trace, _ = synthetic_trace(3000, seed=SEED)
    clean = _file(tmp_path, trace)
    before = json.loads(run_cli("--json", "decode", str(clean))[1])["transactions"]
    blob = bytearray(clean.read_bytes())
    start, size = _first_record(clean), trace.record_bytes
    blob[start + 1500 * size] = 0x0A                      # record 1500: kind 10
    damaged = tmp_path / "damaged.pcitrace"
    damaged.write_bytes(bytes(blob))
    status, out, err = run_cli("decode", str(damaged))
    assert status == 2 and err == (f"pcispy: error: {damaged}: record 1500 is unknown record "
                                   "kind 10, which a raw capture cannot hold at byte offset "
                                   f"{start + 1500 * size}\n")
    status, out, err = run_cli("--json", "decode", str(damaged), "--partial")
    assert status == 0, err
    after = json.loads(out)["transactions"]
    assert "1 damaged record skipped (the first: record 1500" in err
    assert "times may be early by its delta" in err
    # One record gone: at most the transaction it was in is lost or changed; every other
    # is there as it was (its time may be early by the skipped record's delta, 1 here).
    def content(rows):
        return [tuple(value for key, value in row.items() if key != "timestamp")
                for row in rows]
    assert len(before) - 1 <= len(after) <= len(before)
    kept = content(after)
    assert sum(1 for row in content(before) if row in kept) >= len(before) - 1
    shifted = [b["timestamp"] - a["timestamp"] for a, b in zip(after[-10:], before[-10:])]
    assert shifted == [1] * 10, shifted


def test_metadata_that_contradicts_the_records_is_refused(tmp_path):
    narrow, _ = synthetic_trace(400, seed=SEED, width=32)
    wide, _ = synthetic_trace(400, seed=SEED, width=64)
    cases = {"as64.pcitrace": (narrow, 64, "bus_width 64, but its"),
             "as32.pcitrace": (wide, 32, "bus_width 32, but")}
    for name, (trace, width, says) in cases.items():
        path = tmp_path / name
        path.write_bytes(trace_bytes(trace.data, dict(trace.metadata, bus_width=width)))
        for partial in ((), ("--partial",)):
            status, out, err = run_cli("decode", str(path), "--format", "vcd", *partial)
            assert status == 2 and out == "" and err.count("\n") == 1, err
            assert says in err and "bad metadata" in err, err
    # The same records with the metadata they were written with are read.
    assert len(read_trace(_file(tmp_path, narrow, "narrow.pcitrace"))) == len(narrow)
    assert len(read_trace(_file(tmp_path, wide, "wide.pcitrace"))) == len(wide)
    assert RecordKind.RAW.value in set(int(k) for k in wide.kinds)
