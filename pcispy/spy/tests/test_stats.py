# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy stats`` without a simulator: the per-filter counters read through the index
registers (a stand-in register file), computed in software from summary records, printed as
a table, the histograms printed without their empty bins, the tool's own accesses shown
apart, and ``--watch`` reading live until Ctrl-C on every hardware transport (``--uart``
as well as ``--sysfs``). The simulated board's counters: pcispy/spy/tests/bench_spy.py and
pcispy/spy/tests/bench_stats.py."""

import asyncio
import contextlib
import io
import json

import numpy as np
import pytest

from pcispy.pci.bus import Termination
from pcispy.board.registers import REGISTER_MAP
from pcispy.spy.registers import SPY_FILTERS
from pcispy.spy.counters import CounterValues, FilterCounter
from pcispy.app import cli
from pcispy.host.board import Board
from pcispy.trace.decode import SUMMARY_DTYPE
from pcispy.spy import stats_feature as stats_feature
from pcispy.spy.stats_feature import (FILTER_COUNTERS, comparator_hits,
                                      filter_counters_from_summaries, format_stats,
                                      read_filter_counter, read_filter_counters,
                                      since_previous)

pytestmark = pytest.mark.spy


class RegisterFile:
    """BAR0 of a stand-in board: plain registers, and the spy's per-filter counters behind
    ``spy.fcount_select``/``_lo``/``_hi`` (reading ``_lo`` latches ``_hi``)."""
    def __init__(self, counters):
        self.counters = counters          # {(comparator, FilterCounter): value}
        self.values = {}
        self.hi = 0
        self.accesses = []

    def _fields(self, name):
        return REGISTER_MAP[name][1].decode(self.values.get(REGISTER_MAP[name][0], 0))

    async def read32(self, bar, offset):
        assert bar == 0
        self.accesses.append(("read", offset))
        if offset == REGISTER_MAP["spy.fcount_lo"][0]:
            select = self._fields("spy.fcount_select")
            value = self.counters[(select["filter"], FilterCounter(select["counter"]))]
            self.hi = value >> 32
            return value & 0xFFFF_FFFF
        if offset == REGISTER_MAP["spy.fcount_hi"][0]:
            return self.hi
        return self.values.get(offset, 0)

    async def write32(self, bar, offset, value):
        assert bar == 0
        self.accesses.append(("write", offset, value))
        self.values[offset] = value


def _counters(comparator):
    """Distinct values for every per-filter counter: 48-bit ones above 32 bits; as many
    master aborts as the comparator's number."""
    values = {(comparator, counter): (counter.value + 1) * 1000 + comparator +
              ((7 << 32) if counter.width > 32 else 0) for counter in FilterCounter}
    values[(comparator, FilterCounter.MASTER_ABORTS)] = comparator
    return values


def test_board_reads_a_per_filter_counter_through_the_index_registers():
    regs = RegisterFile(_counters(2))
    board = Board(regs)
    assert asyncio.run(read_filter_counter(board, 2, "bytes")) == (7 << 32) + 3002
    select = REGISTER_MAP["spy.fcount_select"]
    # select = filter 2, counter bytes (2); then _lo, then _hi for a 48-bit counter.
    assert regs.accesses == [("write", select[0], 2 | 2 << 8),
                             ("read", REGISTER_MAP["spy.fcount_lo"][0]),
                             ("read", REGISTER_MAP["spy.fcount_hi"][0])]
    regs.accesses.clear()
    assert asyncio.run(read_filter_counter(board, 2, FilterCounter.RETRIES)) == 7002
    assert len(regs.accesses) == 2                  # a 32-bit counter: no _hi read
    with pytest.raises(ValueError, match="no per-filter counter 'idle_clocks'"):
        asyncio.run(read_filter_counter(board, 0, "idle_clocks"))


def test_read_filter_counters_names_every_comparator():
    counters = {}
    for comparator in range(SPY_FILTERS):
        counters.update(_counters(comparator))
    # Comparator 0 saw master aborts only.
    counters[(0, FilterCounter.TRANSACTIONS)] = counters[(0, FilterCounter.MASTER_ABORTS)] = 5
    regs = RegisterFile(counters)
    enable = REGISTER_MAP["spy.filter1_control"]
    regs.values[enable[0]] = 1
    sets = asyncio.run(read_filter_counters(Board(regs)))
    assert [s["enabled"] for s in sets] == [False, True, False, False]
    assert sets[1]["transactions"] == 1001 and sets[1]["latency_sum"] == (7 << 32) + 11001
    assert sets[3]["latency_max"] == 13003
    assert sets[1]["latency_mean"] == round(((7 << 32) + 11001) / (1001 - 1), 3)
    assert sets[0]["latency_min"] is None and sets[0]["latency_mean"] is None


def _summaries(rows):
    records = np.zeros(len(rows), dtype=SUMMARY_DTYPE)
    for index, row in enumerate(rows):
        for name, value in row.items():
            records[index][name] = value
    return records


def test_filter_counters_from_summaries():
    rows = [
        dict(filters=0b01, termination=Termination.COMPLETION.value, data_phases=4,
             duration=7, initiator_wait=1, target_wait=2, latency=3),
        dict(filters=0b11, termination=Termination.RETRY.value, duration=3, latency=2),
        dict(filters=0b10, termination=Termination.DISCONNECT_NODATA.value, data_phases=2,
             duration=6, target_wait=3, latency=4),
        dict(filters=0b11, termination=Termination.MASTER_ABORT.value, duration=6),
        dict(filters=0b01, termination=Termination.TARGET_ABORT.value, duration=4,
             latency=5),
    ]
    sets = filter_counters_from_summaries(_summaries(rows), comparators=3,
                                          transaction_bytes=[16, 0, 8, 0, 0])
    assert sets[0] == {"comparator": 0, "transactions": 4, "data_phases": 4, "bytes": 16,
                       "busy_clocks": 20, "initiator_wait": 1, "target_wait": 2,
                       "retries": 1, "disconnects": 0, "target_aborts": 1,
                       "master_aborts": 1, "latency_sum": 10, "latency_min": 2,
                       "latency_max": 5, "latency_mean": 3.333}
    assert sets[1] == {"comparator": 1, "transactions": 3, "data_phases": 2, "bytes": 8,
                       "busy_clocks": 15, "initiator_wait": 0, "target_wait": 3,
                       "retries": 1, "disconnects": 1, "target_aborts": 0,
                       "master_aborts": 1, "latency_sum": 6, "latency_min": 2,
                       "latency_max": 4, "latency_mean": 3.0}
    assert sets[2]["transactions"] == 0 and sets[2]["latency_min"] is None
    assert filter_counters_from_summaries(_summaries(rows))[0]["bytes"] is None


def test_comparator_hits_follow_the_hardware_rule():
    from pcispy.pci.bus import Command
    from pcispy.spy.capture_settings_feature import parse_filter
    rows = [dict(address=0x70, command=Command.IO_WRITE.value),
            dict(address=0x71, command=Command.IO_READ.value),
            dict(address=0x9000_0040, command=Command.MEM_WRITE.value),
            dict(address=0x1_9000_0040, command=Command.MEM_READ.value)]
    filters = [parse_filter("io:0x70/0xfffe"), parse_filter("MW"),
               parse_filter("!mem:0x90000000/0xf0000000"), parse_filter("IOR")]
    filters.append(dict(parse_filter("any"), enable=0))
    assert comparator_hits(_summaries(rows), filters).tolist() == [0b0001, 0b1001, 0b0110,
                                                                   0b0100]


def _snapshot(clock=1000):
    counters = {name: 0 for name, _ in CounterValues(SPY_FILTERS)}
    counters.update(hits=[0] * SPY_FILTERS, transactions=5, busy_clocks=30, idle_clocks=70,
                    latency_min=None, latency_mean=None)
    sets = []
    for comparator in range(SPY_FILTERS):
        values = {name: 0 for name in FILTER_COUNTERS}
        values.update(comparator=comparator, enabled=comparator in (0, 2),
                      latency_min=None, latency_mean=None)
        sets.append(values)
    sets[2].update(transactions=3, bytes=12, busy_clocks=15, latency_sum=9, latency_min=2,
                   latency_max=4, latency_mean=3.0)
    return {"time": clock, "counters": counters, "filters": sets,
            "checker": {"any": False, "first_rule": None, "first_cycle": None,
                        "violations": {}}}


def test_the_per_filter_table():
    text = format_stats(_snapshot())
    table = text[text.index("  per filter:"):text.index("  checker:")].splitlines()
    assert table[0] == "  per filter:      filter 0      filter 2"
    rows = {line.split()[0]: line.split()[1:] for line in table[1:]}
    assert list(rows) == list(FILTER_COUNTERS) + ["latency_mean"]
    assert rows["transactions"] == ["0", "3"] and rows["bytes"] == ["0", "12"]
    assert rows["latency_min"] == ["-", "2"] and rows["latency_mean"] == ["-", "3.0"]
    nothing = _snapshot()
    for values in nothing["filters"]:
        values["enabled"] = False
    assert "  per filter: no comparator enabled\n" in format_stats(nothing)


def _run_cli(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = cli.main(list(argv), out=out)
    return status, out.getvalue()


@pytest.mark.parametrize("transport", [["--uart", "/dev/ttyUSB0"], ["--sysfs", "0000:03:00.0"]])
def test_watch_on_hardware_runs_until_ctrl_c(monkeypatch, transport):
    # The board is not there: the feature is stood in for. Ctrl-C comes at the eighth
    # reading, past the five the simulator would take.
    calls = []

    def run_feature(args, feature, **arguments):
        calls.append(arguments)
        if len(calls) == 8:
            raise KeyboardInterrupt
        return {"clock_mhz": 33, "snapshots": [_snapshot(len(calls))]}
    monkeypatch.setattr(stats_feature, "run_feature", run_feature)
    monkeypatch.setattr(stats_feature.time, "sleep", lambda seconds: None)
    status, out = _run_cli(*transport, "--json", "stats", "--watch", "--clear",
                           "--no-histograms")
    assert status == 0
    result = json.loads(out)
    assert [s["time"] for s in result["snapshots"]] == [1, 2, 3, 4, 5, 6, 7]
    # The stand-in's counters stand still: nothing happened between two readings.
    assert "since_previous" not in result["snapshots"][0]
    assert all(s["since_previous"] is None for s in result["snapshots"][1:])
    # Only the first reading clears; each reads one snapshot of everything but histograms.
    assert [c["clear"] for c in calls] == [True] + [False] * 7
    assert all(c["histograms"] is False and c["per_filter"] is True and "samples" not in c
               for c in calls)


def test_watch_with_samples_on_hardware_and_in_the_simulator(monkeypatch):
    calls = []

    def run_feature(args, feature, **arguments):
        calls.append(arguments)
        return {"clock_mhz": 33,
                "snapshots": [_snapshot(k) for k in range(arguments["samples"])]}
    monkeypatch.setattr(stats_feature, "run_feature", run_feature)
    status, out = _run_cli("--uart", "/dev/ttyUSB0", "stats", "--watch", "--samples", "2",
                           "--no-filters")
    assert status == 0 and calls[-1]["samples"] == 2 and calls[-1]["per_filter"] is False
    assert out.count("at clock") == 2
    status, out = _run_cli("--sim", "stats", "--watch")
    assert status == 0 and calls[-1]["samples"] == 5


def _counting(clocks, busy, transactions, nbytes, phases=0, target_wait=0, retries=0,
              own=(0, 0)):
    """A snapshot after ``clocks`` clocks, ``busy`` of them busy; ``own``: the own
    transactions left out and their clocks (of ``clocks``, not of ``busy``)."""
    snapshot = _snapshot()
    snapshot["counters"].update(busy_clocks=busy, idle_clocks=clocks - busy - own[1],
                                transactions=transactions, bytes=nbytes, data_phases=phases,
                                target_wait=target_wait, retries=retries,
                                own_transactions=own[0], own_clocks=own[1])
    return snapshot


def test_since_previous_gives_the_interval_s_throughput_load_and_waits():
    # 33,000 clocks at 33 MHz are 1 ms; 60,000 bytes in them are 60 MB/s, in 15,000 data
    # phases that waited 9,000 clocks for the target.
    # The tool's own 30 transactions of 330 clocks are left out, but their clocks passed.
    before = _counting(10_000, 4_000, 7, 1_000, phases=250, target_wait=100, own=(20, 200))
    after = _counting(43_000, 19_000, 1_007, 61_000, phases=15_250, target_wait=9_100,
                      retries=4, own=(50, 530))
    since = since_previous(before, after, 33)
    assert since == {"clocks": 33_000, "transactions": 1_000, "data_phases": 15_000,
                     "bytes": 60_000, "busy_clocks": 15_000, "initiator_wait": 0,
                     "target_wait": 9_000, "retries": 4, "disconnects": 0,
                     "target_aborts": 0, "master_aborts": 0, "own_transactions": 30,
                     "own_clocks": 330, "mbytes_per_s": 60.0,
                     "busy_percent": 45.45, "target_wait_per_phase": 0.6,
                     "initiator_wait_per_phase": 0.0}
    after["since_previous"] = since
    assert ("  since previous  33000 clocks: 1000 transactions, 60000 bytes, 60.000 MB/s, "
            "bus busy 45.45 %\n"
            "                  wait clocks per data phase: target 0.600, initiator 0.000; "
            "4 retries, 0 disconnects\n") in format_stats(after)
    # Cleared in between (the counters went back), or no clock passed: no figures.
    assert since_previous(after, before, 33) is None
    assert since_previous(after, after, 33) is None
    # No data phase in the interval: no waits per phase.
    idle = _counting(76_000, 19_000, 1_007, 61_000, phases=15_250, target_wait=9_100,
                     retries=4, own=(50, 530))
    assert since_previous(after, idle, 33)["target_wait_per_phase"] is None


def test_watch_prints_the_rates_between_readings(monkeypatch):
    readings = [_counting(10_000, 4_000, 7, 1_000), _counting(43_000, 19_000, 1_007, 61_000)]

    def run_feature(args, feature, **arguments):
        return {"clock_mhz": 33, "snapshots": readings}
    monkeypatch.setattr(stats_feature, "run_feature", run_feature)
    status, out = _run_cli("--sim", "stats", "--watch", "--samples", "2")
    assert status == 0
    assert out.count("since previous") == 1 and "60.000 MB/s" in out


def test_histograms_print_only_the_bins_that_counted():
    snapshot = _snapshot()
    latency = [0] * 64
    latency[2], latency[3], latency[39], latency[63] = 20, 40, 2, 1
    gap = [0] * 64
    gap[6], gap[14] = 30, 3
    snapshot["histograms"] = {"latency": latency, "gap": gap}
    text = format_stats(snapshot)
    rows = text[text.index("  latency (clocks):"):text.index("  checker:")].splitlines()
    assert rows == ["  latency (clocks):",
                    "                2         20 " + "#" * 20,
                    "                3         40 " + "#" * 40,
                    "               39          2 ##",
                    "              63+          1 #",
                    "  gap (clocks):",
                    "            32-63         30 " + "#" * 40,
                    "       8192-16383          3 ####"]
    snapshot["histograms"] = {"latency": [0] * 64, "gap": gap}
    assert "  latency: empty\n  gap (clocks):\n" in format_stats(snapshot)


def test_the_own_accesses_are_shown_apart():
    snapshot = _counting(1_000, 100, 5, 20, own=(12, 150))
    text = format_stats(snapshot)
    assert "  bus busy        10.00 %\n" in text
    assert ("  left out        12 own transactions (the board's registers), 150 clocks "
            "(15.00 %)\n") in text
    snapshot["own_counted"] = True
    assert "  own accesses    counted with the rest (spy.counting.own)\n" in \
        format_stats(snapshot)
