# SPDX-License-Identifier: BSD-2-Clause
"""The software decoder on hand-made raw traces: exact summaries for every ending, waits,
DEVSEL# speeds, 64-bit, DAC, fast back-to-back, parity, masters, gaps, lost records."""

import numpy as np
import pytest

from pcispy.pci.bus import Command, DevselSpeed, Termination
from pcispy.spy.format import OverrunEvent, WrapEvent
from pcispy.trace.decode import (SUMMARY_DTYPE, raw_records, summarise, summarise_raw,
                               synthetic_trace, _synthetic_clocks)
from pcispy.trace.file import pack_records, parse_trace, trace_bytes

pytestmark = pytest.mark.spy

IDLE = {}


def trace_of(records, width=32, masters=1, **metadata):
    return parse_trace(trace_bytes(records, {"mode": "raw", "bus_width": width,
                                             "masters": masters, **metadata}))


def rows(summaries):
    return [{name: int(record[name]) for name in SUMMARY_DTYPE.names} for record in summaries]


def decode(clocks, width=32, masters=1, latency_timer=0, before=(IDLE, IDLE)):
    """Summaries of ``before`` + ``clocks`` + two idle clocks; a record's time is its delta
    (1) after the one before, the first counting from 0, so ``clocks`` start at time 3."""
    records = raw_records(list(before) + clocks + [IDLE, IDLE], width, masters)
    return rows(summarise(trace_of(records, width, masters, latency_timer=latency_timer)))


def expect(**fields):
    base = dict(kind=2, timestamp=3, first_be=0, first_data=0, data_phases=0, latency=0,
                initiator_wait=0, target_wait=0, is64=0, dac=0, parity_error=0, master=0,
                filters=0, devsel=DevselSpeed.MEDIUM, termination=Termination.COMPLETION)
    base.update(fields)
    return {k: int(v.value if hasattr(v, "value") else v) for k, v in base.items()}


def test_single_write_medium_devsel():
    clocks = [dict(frame=1, ad=0x1234_5678, cbe=Command.MEM_WRITE.value),
              dict(irdy=1, ad=0xCAFE_F00D, cbe=0x3),
              dict(irdy=1, devsel=1, trdy=1, ad=0xCAFE_F00D, cbe=0x3)]
    assert decode(clocks) == [expect(address=0x1234_5678, command=Command.MEM_WRITE,
                                     first_be=0x3, first_data=0xCAFE_F00D, data_phases=1,
                                     latency=2, duration=3, target_wait=1)]


def test_burst_read_with_initiator_and_target_waits():
    clocks = [dict(frame=1, ad=0x8000, cbe=Command.MEM_READ_LINE.value),
              dict(frame=1, irdy=1, devsel=1),                         # turnaround
              dict(frame=1, irdy=1, devsel=1, trdy=1, ad=0x11),       # data 1
              dict(frame=1, devsel=1, trdy=1, ad=0x22),               # initiator wait
              dict(frame=1, irdy=1, devsel=1, trdy=1, ad=0x22),       # data 2
              dict(frame=0, irdy=1, devsel=1, ad=0x33),               # target wait
              dict(irdy=1, devsel=1, trdy=1, ad=0x33)]                # data 3, last
    assert decode(clocks) == [expect(address=0x8000, command=Command.MEM_READ_LINE,
                                     first_data=0x11, data_phases=3, latency=2, duration=7,
                                     initiator_wait=1, target_wait=2, devsel=DevselSpeed.FAST)]


def test_retry_slow_devsel():
    io_write = Command.IO_WRITE.value
    clocks = [dict(frame=1, ad=0x70, cbe=io_write),
              dict(frame=1, irdy=1, ad=0x0A, cbe=0xE),
              dict(frame=1, irdy=1, ad=0x0A, cbe=0xE),
              dict(frame=1, irdy=1, devsel=1, stop=1, ad=0x0A, cbe=0xE),
              dict(irdy=1, devsel=1, stop=1, ad=0x0A, cbe=0xE)]
    assert decode(clocks) == [expect(address=0x70, command=Command.IO_WRITE, first_be=0xE,
                                     latency=3, duration=5, target_wait=2,
                                     devsel=DevselSpeed.SLOW, termination=Termination.RETRY)]


def _write_burst_ending(stop_with_trdy):
    return [dict(frame=1, ad=0x40, cbe=Command.MEM_WRITE.value),
            dict(frame=1, irdy=1, ad=9),
            dict(frame=1, irdy=1, devsel=1, trdy=1, ad=9),
            dict(frame=1, irdy=1, devsel=1, trdy=stop_with_trdy, stop=1, ad=10),
            dict(irdy=1, devsel=1, stop=1, ad=11 if stop_with_trdy else 10)]


def test_disconnect_with_data():
    assert decode(_write_burst_ending(1)) == [expect(
        address=0x40, command=Command.MEM_WRITE, first_data=9, data_phases=2, latency=2,
        duration=5, target_wait=1, termination=Termination.DISCONNECT_DATA)]


def test_disconnect_without_data():
    assert decode(_write_burst_ending(0)) == [expect(
        address=0x40, command=Command.MEM_WRITE, first_data=9, data_phases=1, latency=2,
        duration=5, target_wait=1, termination=Termination.DISCONNECT_NODATA)]


def test_target_abort():
    clocks = [dict(frame=1, ad=0x40, cbe=Command.MEM_READ.value),
              dict(frame=1, irdy=1, devsel=1),
              dict(frame=1, irdy=1, devsel=1),
              dict(frame=1, irdy=1, stop=1),
              dict(irdy=1, stop=1)]
    assert decode(clocks) == [expect(address=0x40, command=Command.MEM_READ, latency=3,
                                     duration=5, target_wait=2, devsel=DevselSpeed.FAST,
                                     termination=Termination.TARGET_ABORT)]


def test_master_abort_reports_devsel_zero():
    clocks = ([dict(frame=1, ad=0xFFF0, cbe=Command.MEM_READ.value)] +
              [dict(frame=1, irdy=1)] * 4 + [dict(irdy=1)])
    assert decode(clocks) == [expect(address=0xFFF0, command=Command.MEM_READ, duration=6,
                                     target_wait=5, devsel=DevselSpeed.FAST,
                                     termination=Termination.MASTER_ABORT)]


def _preempted_write(gnt):
    return [dict(frame=1, ad=0x40, cbe=Command.MEM_WRITE.value),
            dict(frame=1, irdy=1, devsel=1, trdy=1, ad=1),
            dict(irdy=1, devsel=1, trdy=1, ad=2, gnt=gnt)]


@pytest.mark.parametrize("gnt,latency_timer,ending", [
    (0, 2, Termination.LATENCY_TIMER),   # GNT# removed and the timer (2) expired at clock 2
    (1, 2, Termination.COMPLETION),      # still granted: an ordinary end
    (0, 3, Termination.COMPLETION),      # the timer had not expired
    (0, 0, Termination.COMPLETION),      # no timer given
])
def test_latency_timer_ending(gnt, latency_timer, ending):
    got = decode(_preempted_write(gnt), latency_timer=latency_timer,
                 before=(IDLE, dict(gnt=1)))
    assert got == [expect(address=0x40, command=Command.MEM_WRITE, first_data=1,
                          data_phases=2, latency=1, duration=3, devsel=DevselSpeed.FAST,
                          master=1, termination=ending)]


def test_master_is_the_lowest_grant_before_the_address_phase():
    clocks = [dict(frame=1, ad=0x40, cbe=Command.MEM_WRITE.value, gnt=0b10),
              dict(irdy=1, devsel=1, trdy=1, ad=1, gnt=0b10)]
    got = decode(clocks, masters=2, before=(IDLE, dict(gnt=0b10)))
    assert [r["master"] for r in got] == [2]
    got = decode(clocks, masters=2, before=(IDLE, dict(gnt=0b11)))
    assert [r["master"] for r in got] == [1]


def test_fast_back_to_back_are_two_transactions():
    write = Command.MEM_WRITE.value
    clocks = [dict(frame=1, ad=0x100, cbe=write),
              dict(irdy=1, devsel=1, trdy=1, ad=1),
              dict(frame=1, ad=0x200, cbe=write),
              dict(irdy=1, devsel=1, trdy=1, ad=3)]
    common = dict(command=Command.MEM_WRITE, data_phases=1, latency=1, duration=2,
                  devsel=DevselSpeed.FAST)
    assert decode(clocks) == [expect(address=0x100, first_data=1, **common),
                              expect(timestamp=5, address=0x200, first_data=3, **common)]


def test_dual_address_cycle():
    clocks = [dict(frame=1, ad=0x2345_6780, cbe=Command.DUAL_ADDRESS.value),
              dict(frame=1, ad=0x1, cbe=Command.MEM_READ.value),
              dict(frame=1, irdy=1),
              dict(irdy=1, devsel=1),
              dict(irdy=1, devsel=1, trdy=1, ad=0x5)]
    assert decode(clocks) == [expect(address=0x1_2345_6780, command=Command.MEM_READ, dac=1,
                                     first_data=5, data_phases=1, latency=4, duration=5,
                                     target_wait=2)]


@pytest.mark.parametrize("ack64,is64", [(1, 1), (0, 0)])
def test_64bit_transfer(ack64, is64):
    clocks = [dict(frame=1, req64=1, ad=0x1000, cbe=Command.MEM_WRITE.value),
              dict(frame=1, req64=1, irdy=1, devsel=1, ack64=ack64, trdy=1, ad=0xA,
                   ad_hi=0xB, cbe=0x0, cbe_hi=0xF),
              dict(irdy=1, devsel=1, ack64=ack64, trdy=1, ad=0xC, ad_hi=0xD)]
    assert decode(clocks, width=64) == [expect(
        address=0x1000, command=Command.MEM_WRITE, first_be=0xF0, first_data=0xA,
        data_phases=2, latency=1, duration=3, devsel=DevselSpeed.FAST, is64=is64)]


def _with_par_flipped(clocks, clock, line="par", width=32):
    good = trace_of(raw_records(clocks, width), width).raw[f"bus.{line}"]
    bad = [dict(c, **{line: int(par)}) for c, par in zip(clocks, good)]
    bad[clock][line] ^= 1
    return rows(summarise(trace_of(raw_records(bad, width), width)))


def test_parity_errors():
    write = Command.MEM_WRITE.value
    clocks = [IDLE, IDLE,
              dict(frame=1, ad=0x100, cbe=write),
              dict(frame=1, irdy=1, devsel=1, trdy=1, ad=0x3),
              dict(irdy=1, devsel=1, trdy=1, ad=0x7),
              IDLE, IDLE]
    assert [r["parity_error"] for r in rows(summarise(trace_of(raw_records(clocks))))] == [0]
    # PAR one clock after the address phase, after a data phase, after the last data phase
    # (that clock is past the transaction but its PAR still covers it).
    for clock in (3, 4, 5):
        assert [r["parity_error"] for r in _with_par_flipped(clocks, clock)] == [1], clock
    # PAR after an idle clock covers nothing.
    assert [r["parity_error"] for r in _with_par_flipped(clocks, 6)] == [0]
    perr = [dict(c) for c in clocks]
    perr[4]["perr"] = 1
    assert [r["parity_error"] for r in rows(summarise(trace_of(raw_records(perr))))] == [1]
    # PAR64 covers AD[63:32] and C/BE#[7:4] of a 64-bit data phase.
    wide = [IDLE, IDLE, dict(frame=1, req64=1, ad=0x1000, cbe=write),
            dict(irdy=1, devsel=1, ack64=1, trdy=1, ad=0x1, ad_hi=0x1), IDLE, IDLE]
    assert [r["parity_error"] for r in _with_par_flipped(wide, 4, "par64", 64)] == [1]
    assert [r["parity_error"] for r in _with_par_flipped(wide, 3, "par64", 64)] == [0]


def _stream(*parts):
    return np.concatenate(parts)


def test_idle_compressed_gaps_wraps_and_lost_records():
    write = Command.MEM_WRITE.value
    txn = [dict(frame=1, ad=0x10, cbe=write, gnt=1), dict(irdy=1, devsel=1, trdy=1, ad=1,
                                                          gnt=1)]
    first = raw_records([dict(gnt=1), dict(gnt=1)] + txn + [dict(gnt=1)])
    # 1000 quiet clocks left out: the next record's delta covers them.
    second = raw_records([dict(gnt=1)] + txn + [dict(gnt=1)], deltas=[1000, 1, 1, 1])
    wrap = pack_records(WrapEvent(), {"timestamp": 5000})
    third = raw_records(txn + [IDLE], deltas=[7, 1, 1])
    overrun = pack_records(OverrunEvent(), {"timestamp": 6000, "lost": 3})
    # Records were lost: the transaction in flight at the overrun is left out, and so is
    # one the trace ends in.
    cut = raw_records(txn[1:] + [IDLE] + txn + [IDLE] + txn[:1], deltas=[1, 1, 1, 1, 1, 1])
    got = summarise(trace_of(_stream(first, second, wrap, third, overrun, cut)))
    assert [int(t) for t in got["timestamp"]] == [3, 1006, 5007, 6003]
    assert [int(m) for m in got["master"]] == [1, 1, 1, 0]    # no GNT# before the last
    assert [int(m) for m in got["data_phases"]] == [1, 1, 1, 1]


def test_trace_starting_inside_a_transaction_skips_it():
    clocks = [dict(frame=1, irdy=1, devsel=1, trdy=1, ad=1), dict(irdy=1, devsel=1, trdy=1),
              IDLE, dict(frame=1, ad=0x40, cbe=Command.MEM_WRITE.value),
              dict(irdy=1, devsel=1, trdy=1, ad=2), IDLE]
    got = rows(summarise(trace_of(raw_records(clocks))))
    assert [(r["timestamp"], r["address"], r["first_data"]) for r in got] == [(4, 0x40, 2)]


def _selected(pieces, gap=40, masters=1):
    """A raw capture of selected transactions only (``--select``) triggered at arm: the
    trigger clock (time 1, stored whatever the selection), then each piece's clocks with
    FRAME# or IRDY# asserted and nothing between (the first record of each ``gap`` clocks
    after the last of the one before)."""
    busy = [[c for c in piece if c.get("frame") or c.get("irdy")] for piece in pieces]
    deltas = [1] + sum(([gap] + [1] * (len(clocks) - 1) for clocks in busy), [])
    records = raw_records([dict(trigger=1)] + sum(busy, []), masters=masters, deltas=deltas)
    return trace_of(records, masters=masters, capture={"raw_select": True}), busy


def test_selected_capture_keeps_its_last_transaction_and_no_stale_master():
    # Three transactions of two masters, as the spy stores them with --select: no idle
    # clock after a transaction, no clock before its address phase.
    write, read = Command.MEM_WRITE.value, Command.IO_READ.value
    pieces = [[dict(frame=1, ad=0x1000, cbe=write, gnt=0b01),
               dict(irdy=1, devsel=1, trdy=1, ad=0xAB, gnt=0b01)],
              [dict(frame=1, ad=0x70, cbe=read, gnt=0b10),
               dict(irdy=1, cbe=0xE, gnt=0b10),
               dict(irdy=1, devsel=1, trdy=1, ad=0x55, cbe=0xE, gnt=0b10)],
              [dict(frame=1, ad=0x2000, cbe=write, gnt=0b10),
               dict(frame=1, irdy=1, devsel=1, stop=1, gnt=0b10),
               dict(irdy=1, devsel=1, stop=1, gnt=0b10)]]
    trace, _ = _selected(pieces, masters=2)
    got = rows(summarise(trace))
    assert [(r["timestamp"], r["address"], r["termination"], r["master"]) for r in got] == [
        (41, 0x1000, Termination.COMPLETION.value, 0),
        (82, 0x70, Termination.COMPLETION.value, 0),       # not master 1 of the record before
        (124, 0x2000, Termination.RETRY.value, 0)]
    assert [r["first_data"] for r in got] == [0xAB, 0x55, 0]
    # The same records without the raw_select setting: the last one's end is not seen.
    plain = trace_of(trace.data, masters=2)
    assert [int(t) for t in summarise(plain)["timestamp"]] == [41, 82]


def test_selected_capture_stopped_inside_a_transaction_leaves_it_out():
    read = Command.MEM_READ.value
    pieces = [[dict(frame=1, ad=0x40, cbe=read), dict(irdy=1, devsel=1, trdy=1, ad=1)],
              [dict(frame=1, ad=0x80, cbe=read), dict(frame=1, irdy=1, devsel=1, trdy=1),
               dict(frame=1, irdy=1, devsel=1)]]         # FRAME# still asserted: cut here
    assert [int(a) for a in summarise(_selected(pieces)[0])["address"]] == [0x40]
    # A master abort ends without DEVSEL#: before clock 5 it may still be claimed.
    waiting = [dict(frame=1, ad=0xFFF0, cbe=read)] + [dict(irdy=1)] * 4
    assert len(summarise(_selected([waiting])[0])) == 0
    aborted = waiting + [dict(irdy=1)]
    assert [int(t) for t in summarise(_selected([aborted])[0])["termination"]] == [
        Termination.MASTER_ABORT.value]


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_selected_capture_decodes_like_each_transaction_alone(seed):
    """Random transactions of every kind stored as a selected capture stores them give
    the summaries each gives decoded alone with idle clocks around it (master unknown)."""
    rng = np.random.default_rng(100 + seed)
    pieces = [_synthetic_clocks(rng) for _ in range(40)]
    trace, busy = _selected(pieces, gap=20)
    alone, at = [], 1
    for clocks in busy:
        at += 20
        got = rows(summarise(trace_of(raw_records([IDLE] + clocks + [IDLE]))))
        # Alone, the address phase is the second record: time 2.
        alone += [dict(r, timestamp=r["timestamp"] - 2 + at, master=0) for r in got]
        at += len(clocks) - 1
    assert len(alone) == 40, f"seed {seed}"
    assert rows(summarise(trace)) == alone, f"seed {seed}"


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_traffic_decodes_like_each_transaction_alone(seed):
    """A long trace gives, record for record, the summaries of its transactions decoded one
    at a time (shifted to their place): the vectorised reductions never mix transactions."""
    rng = np.random.default_rng(seed)
    pieces = [[IDLE]] + [_synthetic_clocks(rng) for _ in range(40)]
    alone, at, before = [], 0, IDLE
    for piece in pieces:
        # Alone: with the clock before it (GNT# and PAR) and an idle clock to end it.
        got = rows(summarise(trace_of(raw_records([before] + piece + [IDLE]))))
        before = piece[-1]
        alone += [dict(r, timestamp=r["timestamp"] - 1 + at) for r in got]
        at += len(piece)
    together = rows(summarise(trace_of(raw_records(sum(pieces, []) + [IDLE]))))
    assert len(alone) == 40, f"seed {seed}"
    assert together == alone, f"seed {seed}"


def test_synthetic_trace_has_every_kind_of_ending():
    trace, transactions = synthetic_trace(5000, seed=3)
    got = summarise(trace)
    assert len(got) == transactions
    # Every ending but the latency timer's (the trace gives no Latency Timer).
    assert {Termination(int(t)) for t in got["termination"]} == (
        set(Termination) - {Termination.LATENCY_TIMER})
    assert set(got["devsel"].tolist()) == {d.value for d in DevselSpeed}
    assert got["dac"].any() and got["initiator_wait"].any()


def test_structured_and_column_inputs_agree():
    trace, _ = synthetic_trace(2000, seed=5)
    times = trace.times()
    assert np.array_equal(summarise_raw(trace.raw, times), summarise(trace))


def _gateware_summaries(trace, latency_timer):
    """The gateware Summariser's records for the raw records of ``trace``, fed to it clock
    by clock in Amaranth's simulator."""
    from amaranth.sim import Simulator
    from pcispy.pci.bus import bus_lines
    from pcispy.spy.summary import Summariser
    dut = Summariser(trace.width, trace.masters)
    columns = trace.columns(1)
    times = trace.times()
    records = []

    async def bench(ctx):
        ctx.set(dut.latency_timer, latency_timer)
        for i in range(len(times)):
            for name in bus_lines(trace.width):
                ctx.set(getattr(dut.bus, name), int(columns[f"bus.{name}"][i]))
            ctx.set(dut.timestamp, int(times[i]))
            if ctx.get(dut.summary_valid):
                record = ctx.get(dut.summary)
                records.append({name: int(getattr(getattr(record, name), "value",
                                                  getattr(record, name)))
                                for name in SUMMARY_DTYPE.names if name != "filters"})
            await ctx.tick()
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return records


@pytest.mark.fuzz
@pytest.mark.parametrize("width,masters,latency_timer,seed", [
    (32, 1, 0, 1), (32, 3, 3, 2), (64, 2, 2, 3), (64, 1, 0, 4)])
def test_decoder_agrees_with_the_gateware_summariser(width, masters, latency_timer, seed):
    """Independent implementations of the same rules: random traffic of every kind gives the
    same records from both, field for field."""
    rng = np.random.default_rng(seed)
    clocks = [IDLE] + sum((_synthetic_clocks(rng, width, masters) for _ in range(40)), [])
    trace = trace_of(raw_records(clocks + [IDLE], width, masters), width, masters)
    software = [{k: v for k, v in r.items() if k != "filters"}
                for r in rows(summarise(trace, latency_timer))]
    hardware = _gateware_summaries(trace, latency_timer)
    assert len(software) == 40, f"seed {seed}"
    assert software == hardware, f"seed {seed}"
