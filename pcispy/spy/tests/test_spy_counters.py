# SPDX-License-Identifier: BSD-2-Clause
"""The per-filter counters (:class:`~pcispy.spy.counters.FilterCounters`) fed
with crafted summaries: exact values of every counter of every filter for each kind of
ending, the latency bounds, the bytes of each transaction, summaries on consecutive clocks
and back-to-back with the next address phase, accumulators at their worst case, saturation
of 32- and 48-bit counters, clear (and the zero round after it). Read through the register
bank: test_spy_registers.py."""

import pytest

from amaranth.sim import Simulator

from pcispy.pci.bus import Termination
from pcispy.spy.counters import (FILTER_COUNTER_INIT, FilterCounter, FilterCounters,
                                 TRANSACTION_BYTES_BITS)
pytestmark = pytest.mark.spy

C = FilterCounter
#: Clocks after which a summary is in every counter (a round of 64 words, the pipeline,
#: and the read port's clock).
SETTLE = 64 + 8


def summary(termination, *, phases=0, duration=4, iwait=0, twait=0, latency=2):
    return {"termination": termination, "data_phases": phases, "duration": duration,
            "initiator_wait": iwait, "target_wait": twait, "latency": latency}


def step(*, address=False, transfer=0, done=None, hits=0):
    """One clock of the inputs: an address phase, a data phase moving ``transfer`` bytes,
    a finished transaction ``done`` (a summary) hitting the comparators in ``hits``."""
    return {"address": address, "transfer": transfer, "done": done, "hits": hits}


def transaction_steps(record, hits, lanes=()):
    """Address phase, one data phase per entry of ``lanes`` (its bytes), then the summary
    on the clock after the last busy clock."""
    return ([step(address=True)] + [step(transfer=n) for n in lanes] +
            [step(done=record, hits=hits)])


def run(steps, *, filters=4, before=None, clears=(), settle=SETTLE, during=None, **options):
    """Feed ``steps`` (and ``clear`` at the step indices in ``clears``), wait until every
    summary is in the counters, read them all: ``{filter: {counter name: value}}``.
    ``before(ctx, dut)`` runs once the reset's zero round is over; ``during`` collects
    ``clearing`` per step; ``options`` go to :class:`FilterCounters`."""
    dut = FilterCounters(filters, **options)
    result = {}

    async def bench(ctx):
        while ctx.get(dut.clearing):
            await ctx.tick()
        if before:
            await before(ctx, dut)
        for index, s in enumerate(steps):
            ctx.set(dut.address_valid, s["address"])
            ctx.set(dut.transfer, s["transfer"] != 0)
            ctx.set(dut.transfer_bytes, s["transfer"])
            ctx.set(dut.summary_valid, s["done"] is not None)
            if s["done"] is not None:
                ctx.set(dut.summary, s["done"])
            ctx.set(dut.hits, s["hits"])
            ctx.set(dut.clear, index in clears)
            if during is not None:
                during.append(ctx.get(dut.clearing))
            await ctx.tick()
        for name in ("address_valid", "transfer", "summary_valid", "clear"):
            ctx.set(getattr(dut, name), 0)
        await ctx.tick().repeat(settle)
        result["clearing"] = ctx.get(dut.clearing)
        for f in range(filters):
            values = {}
            for counter in C:
                ctx.set(dut.select, {"filter": f, "counter": counter})
                await ctx.tick().repeat(2)
                values[counter.name.lower()] = ctx.get(dut.value)
            result[f] = values

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return result


def counters(**values):
    """A filter's expected counters: ``values``, the others at their initial value."""
    expected = {c.name.lower(): FILTER_COUNTER_INIT[c] for c in C}
    expected.update(values)
    return expected


#: Each kind of ending, hitting comparators in different combinations.
ENDINGS = [
    # (summary, hits, bytes of each completed data phase)
    (summary(Termination.COMPLETION, phases=3, duration=6, iwait=1, twait=2, latency=2),
     0b0001, (4, 4, 4)),
    (summary(Termination.RETRY, duration=3, latency=2), 0b0011, ()),
    (summary(Termination.DISCONNECT_DATA, phases=1, duration=3, latency=1), 0b0010, (4,)),
    (summary(Termination.DISCONNECT_NODATA, phases=2, duration=5, twait=1, latency=3),
     0b0011, (4, 2)),
    (summary(Termination.TARGET_ABORT, duration=4, iwait=2, latency=3), 0b0100, ()),
    (summary(Termination.MASTER_ABORT, duration=6, latency=0), 0b0101, ()),
    (summary(Termination.LATENCY_TIMER, phases=4, duration=7, iwait=3, twait=5, latency=5),
     0b1001, (4, 4, 4, 4)),
]


def test_every_ending_in_the_filters_it_hits():
    steps = []
    for record, hits, lanes in ENDINGS:
        steps += transaction_steps(record, hits, lanes) + [step()]
    got = run(steps)
    assert got[0] == counters(transactions=5, data_phases=9, bytes=34, busy_clocks=27,
                              initiator_wait=4, target_wait=8, retries=1, disconnects=1,
                              target_aborts=0, master_aborts=1, latency_sum=12,
                              latency_min=2, latency_max=5)
    assert got[1] == counters(transactions=3, data_phases=3, bytes=10, busy_clocks=11,
                              target_wait=1, retries=1, disconnects=2, latency_sum=6,
                              latency_min=1, latency_max=3)
    # Filter 2: a target abort and a master abort; the master abort has no latency.
    assert got[2] == counters(transactions=2, busy_clocks=10, initiator_wait=2,
                              target_aborts=1, master_aborts=1, latency_sum=3,
                              latency_min=3, latency_max=3)
    assert got[3] == counters(transactions=1, data_phases=4, bytes=16, busy_clocks=7,
                              initiator_wait=3, target_wait=5, latency_sum=5, latency_min=5,
                              latency_max=5)
    assert got["clearing"] == 0


def test_back_to_back_and_consecutive_summaries():
    # A fast back-to-back pair: the second address phase in the clock of the first's
    # summary; then a transaction of one clock whose summary follows the first's on the
    # next clock (no data phase: an illegal bus, which must still count right).
    first = summary(Termination.COMPLETION, phases=2, duration=3, latency=1)
    second = summary(Termination.COMPLETION, phases=1, duration=2, latency=1)
    third = summary(Termination.MASTER_ABORT, duration=1, latency=0)
    steps = [step(address=True), step(transfer=4), step(transfer=3),
             {"address": True, "transfer": 0, "done": first, "hits": 0b01},
             step(transfer=2),
             {"address": True, "transfer": 0, "done": second, "hits": 0b11},
             step(done=third, hits=0b10)]
    got = run(steps, filters=2)
    assert got[0] == counters(transactions=2, data_phases=3, bytes=9, busy_clocks=5,
                              latency_sum=2, latency_min=1, latency_max=1)
    assert got[1] == counters(transactions=2, data_phases=1, bytes=2, busy_clocks=3,
                              master_aborts=1, latency_sum=1, latency_min=1, latency_max=1)


def test_accumulators_at_their_worst_case():
    # A summary with every field at its maximum on every clock, for three rounds: each
    # accumulator takes a whole round of the largest increments between its turns.
    worst = summary(Termination.RETRY, phases=0xFFFF, duration=0xFFFF, iwait=0xFFF,
                    twait=0xFFF, latency=0xFF)
    n = 200
    steps = [step(transfer=8)] + [{"address": False, "transfer": 8, "done": worst,
                                   "hits": 0b1111} for _ in range(n)]
    got = run(steps)
    # The bytes of "one transaction" grow by 8 a clock: the summaries add 8, 16, ...
    top = (1 << TRANSACTION_BYTES_BITS) - 1
    total_bytes = sum(min(8 * (k + 1), top) for k in range(n))
    for f in range(4):
        assert got[f] == counters(transactions=n, data_phases=n * 0xFFFF, bytes=total_bytes,
                                  busy_clocks=n * 0xFFFF, initiator_wait=n * 0xFFF,
                                  target_wait=n * 0xFFF, retries=n, latency_sum=n * 0xFF,
                                  latency_min=0xFF, latency_max=0xFF)


def test_transaction_bytes_saturate():
    # With an 8-bit byte count per transaction (20 bits on the board, 2**17 phases of 8
    # bytes to fill): 40 phases of 8 bytes saturate it, and the next transaction restarts.
    assert TRANSACTION_BYTES_BITS == 20
    record = summary(Termination.COMPLETION, phases=40, duration=41, latency=1)
    short = summary(Termination.COMPLETION, phases=2, duration=3, latency=1)
    steps = (transaction_steps(record, 0b1, [8] * 40) +
             transaction_steps(short, 0b11, [8, 8]))
    got = run(steps, filters=2, transaction_bytes_bits=8)
    assert got[0]["bytes"] == 255 + 16 and got[1]["bytes"] == 16
    assert got[0]["transactions"] == 2 and got[0]["data_phases"] == 42


def test_counters_saturate_at_their_width():
    record = summary(Termination.RETRY, phases=10, duration=100, iwait=3, latency=7)
    near = {C.TRANSACTIONS: 0xFFFF_FFFE, C.DATA_PHASES: 0xFFFF_FFF0, C.RETRIES: 0xFFFF_FFFD,
            C.BYTES: (1 << 48) - 20, C.BUSY_CLOCKS: (1 << 48) - 150,
            C.LATENCY_SUM: (1 << 48) - 10, C.INITIATOR_WAIT: 0xFFFF_0000}

    async def before(ctx, dut):
        # Twice, 4 clocks apart: a word the engine read before the first write is written
        # back (unchanged) within 3 clocks; one it reads after that carries the value.
        for _ in range(2):
            for counter, value in near.items():
                ctx.set(dut.words.data[0 << 4 | counter.value], value)
            await ctx.tick().repeat(4)

    got = run([step(address=True), step(transfer=4), step(done=record, hits=0b11)] * 3,
              filters=2, before=before)
    assert got[0] == counters(transactions=0xFFFF_FFFF, data_phases=0xFFFF_FFFF,
                              bytes=(1 << 48) - 8, busy_clocks=(1 << 48) - 1,
                              initiator_wait=0xFFFF_0009, retries=0xFFFF_FFFF,
                              latency_sum=(1 << 48) - 1, latency_min=7, latency_max=7)
    # The other filter, from zero, saw the same three transactions.
    assert got[1] == counters(transactions=3, data_phases=30, bytes=12, busy_clocks=300,
                              initiator_wait=9, retries=3, latency_sum=21, latency_min=7,
                              latency_max=7)


def test_clear_then_a_zero_round():
    record = summary(Termination.COMPLETION, phases=1, duration=2, latency=4)
    late = summary(Termination.DISCONNECT_DATA, phases=2, duration=3, latency=6)
    steps = [step(address=True), step(transfer=4), step(done=record, hits=0b1)] * 5
    clear_at = len(steps) + 2
    steps += [step(address=True), step(done=record, hits=0b1),     # one clock before clear
              step(address=True, done=record, hits=0b1),            # the clear's clock
              step(transfer=1), step(transfer=1),
              step(done=late, hits=0b1)]                           # after the clear: counted
    # More while the zero round runs: counted too.
    steps += [step(address=True), step(transfer=2), step(done=late, hits=0b11)] * 4
    clearing = []
    got = run(steps, clears=(clear_at,), during=clearing)
    assert got[0] == counters(transactions=5, data_phases=10, bytes=2 + 4 * 2,
                              busy_clocks=15, disconnects=5, latency_sum=30,
                              latency_min=6, latency_max=6)
    assert got[1] == counters(transactions=4, data_phases=8, bytes=8, busy_clocks=12,
                              disconnects=4, latency_sum=24, latency_min=6, latency_max=6)
    assert got[2] == got[3] == counters()        # latency_min back at 0xFFFF
    # `clearing` rises the clock after the clear and stays up for the round.
    assert clearing[:clear_at + 1] == [0] * (clear_at + 1)
    assert clearing[clear_at + 1:] == [1] * (len(steps) - clear_at - 1)
    assert got["clearing"] == 0
