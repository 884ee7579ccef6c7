# SPDX-License-Identifier: BSD-2-Clause
"""The board's PCI target, clock by clock, driven by a scripted initiator at the pins.

Clock numbers count the address phase as clock 1, as PCI LB 3.0 §3.6.1 does for DEVSEL#
timing. With the pads' I/O flip-flops and registered decode the board answers at medium
DEVSEL# timing: DEVSEL# on clock 3, first write data on clock 3, first read data on clock 4
(the scratch RAM is read at the claim, one clock of RAM latency), then one data phase per
clock.
"""

import random

import pytest

from pcispy.pci.bus import Command, DevselSpeed, Termination
from pcispy.board.registers import REGISTER_MAP
from pcispy.board.top import PCIBoard

from pcispy.core.tests.pci_host import (BAR_ADDRESSES, enumerate_board, simulate,
                                       simulate_shared)

pytestmark = pytest.mark.target

BAR0, BAR1, BAR2, BAR3 = (BAR_ADDRESSES[i] for i in range(4))
EXERCISER_SIZE = 16 * 1024


async def csr_write(host, name, value):
    address, _ = REGISTER_MAP[name]
    r = await host.write(BAR0 + address, [value])
    assert r.moved == 1


async def csr_read(host, name):
    address, _ = REGISTER_MAP[name]
    r = await host.read(BAR0 + address, 1, cmd=Command.MEM_READ)
    assert r.moved == 1
    return r.data[0]


def board_of(width=32):
    return PCIBoard(width, exerciser_size=EXERCISER_SIZE)


def run(bench, width=32, board=None):
    """Enumerate, then run ``bench``: on ``board``, or on the default board of ``width``
    whose simulator the tests share."""
    async def wrapped(host, pins, ctx):
        await enumerate_board(host)
        await bench(host, ctx)
    if board is None:
        simulate_shared(("board", width, EXERCISER_SIZE), lambda: board_of(width), wrapped)
    else:
        simulate(board, wrapped)


def test_memory_burst_write_then_read_exact_clocks():
    words = [0x1111_0000 + 0x0101 * i for i in range(8)]

    async def bench(host, ctx):
        w = await host.write(BAR2 + 0x40, words)
        assert w.termination == Termination.COMPLETION and w.moved == 8
        assert w.first("devsel") == 3                      # medium decode
        assert w.data_clocks() == list(range(3, 11))       # zero-wait from clock 3
        r = await host.read(BAR2 + 0x40, 8)
        assert r.termination == Termination.COMPLETION
        assert r.data == words
        assert r.first("devsel") == 3
        assert r.data_clocks() == list(range(4, 12))       # one wait, then zero-wait
        assert r.read_parity_errors == 0
        # The board drives AD only from clock 3 (turnaround on clock 2) to the last phase.
        assert not r.clocks[1]["devsel"]
    run(bench)


@pytest.mark.runs_long
@pytest.mark.parametrize("width", [32, pytest.param(64, marks=pytest.mark.heavy)])
def test_pio_data_integrity_random_bursts(width):
    """Random bursts (1..64 phases; on the 64-bit board each burst 64- or 32-bit at random),
    written then read back in another random width: the scratch RAM is the scoreboard."""
    for seed in (1, 2, 3):
        rng = random.Random(seed)
        plan = []
        for _ in range(4):
            wide_write = width == 64 and rng.random() < 0.5
            wide_read = width == 64 and rng.random() < 0.5
            length = rng.randint(1, 64)
            offset = 2 * rng.randrange(0, EXERCISER_SIZE // 16 - 64)   # qword aligned
            plan.append((offset, length, wide_write, wide_read))

        async def bench(host, ctx, rng=rng, plan=plan, seed=seed):
            model = {}
            for offset, length, wide_write, _ in plan:
                bits = 64 if wide_write else 32
                data = [rng.getrandbits(bits) for _ in range(length)]
                w = await host.write(BAR2 + 4 * offset, data, req64=wide_write)
                assert w.moved == length, f"seed {seed}"
                for i, d in enumerate(data):
                    if wide_write:
                        model[offset + 2 * i] = d & 0xFFFF_FFFF
                        model[offset + 2 * i + 1] = d >> 32
                    else:
                        model[offset + i] = d
            for offset, length, wide_write, wide_read in plan:
                dwords = 2 * length if wide_write else length
                count = (dwords + 1) // 2 if wide_read else dwords
                r = await host.read(BAR2 + 4 * offset, count, req64=wide_read)
                got = []
                for word in r.data:
                    got += [word & 0xFFFF_FFFF, word >> 32] if wide_read else [word]
                expected = [model.get(offset + i, 0) for i in range(len(got))]
                assert got == expected, f"seed {seed}"
                assert r.read_parity_errors == 0, f"seed {seed}"
        run(bench, width)


def test_byte_enables_on_memory_writes():
    async def bench(host, ctx):
        await host.write(BAR2, [0x1122_3344])
        await host.write(BAR2, [0xAABB_CCDD], be=0b1010)   # bytes 0 and 2 only
        r = await host.read(BAR2, 1)
        assert r.data == [0x11BB_33DD]
    run(bench)


def test_burst_stops_at_window_end_and_on_reserved_order():
    async def bench(host, ctx):
        w = await host.write(BAR2 + EXERCISER_SIZE - 8, [1, 2, 3, 4])
        assert (w.moved, w.termination) == (2, Termination.DISCONNECT_DATA)
        r = await host.read(BAR2 + EXERCISER_SIZE - 8, 4)
        assert (r.data, r.termination) == ([1, 2], Termination.DISCONNECT_DATA)
        # AD[1:0] = 01 is a reserved burst order: one phase, then disconnect.
        w = await host.write(BAR2 + 0x101, [7, 8])
        assert (w.moved, w.termination) == (1, Termination.DISCONNECT_DATA)
    run(bench)


@pytest.mark.parametrize("width", [32, 64])
def test_burst_claimed_on_the_window_last_word_stops_with_its_first_phase(width):
    """The claim's own phase is the window's last: STOP# with the first TRDY# (the end
    test of the claim is made per window, apart from the running transaction's)."""
    board = board_of(width)
    trace_size = board.windows[1].bar.size

    async def bench(host, ctx):
        w = await host.write(BAR2 + EXERCISER_SIZE - 4, [5, 6])
        assert (w.moved, w.termination) == (1, Termination.DISCONNECT_DATA)
        assert w.first("stop") == 3 and w.data_clocks() == [3]
        if width == 64:
            # A 64-bit write to the (read-only) trace window's last qword: one phase, the
            # step being 2. One qword before it: two phases.
            w = await host.write(BAR1 + trace_size - 8, [1, 2], req64=True)
            assert w.first("ack64") == 3
            assert (w.moved, w.termination) == (1, Termination.DISCONNECT_DATA)
            w = await host.write(BAR1 + trace_size - 16, [1, 2, 3], req64=True)
            assert (w.moved, w.termination) == (2, Termination.DISCONNECT_DATA)
    run(bench, board=board)


def test_io_window_and_unclaimed_addresses():
    async def bench(host, ctx):
        w = await host.write(BAR3 + 0x10, [0xCAFE_F00D], cmd=Command.IO_WRITE)
        assert w.first("devsel") == 3 and w.moved == 1
        r = await host.read(BAR3 + 0x10, 1, cmd=Command.IO_READ)
        assert r.data == [0xCAFE_F00D]
        # I/O is one data phase per transaction.
        w = await host.write(BAR3 + 0x20, [1, 2], cmd=Command.IO_WRITE)
        assert (w.moved, w.termination) == (1, Termination.DISCONNECT_DATA)
        # Outside every BAR, and memory commands to the I/O window: master abort.
        r = await host.read(BAR2 + EXERCISER_SIZE, 1)
        assert r.termination == Termination.MASTER_ABORT
        r = await host.read(BAR3 + 0x10, 1, cmd=Command.MEM_READ)
        assert r.termination == Termination.MASTER_ABORT
    run(bench)


def test_csr_bank_through_bar0():
    async def bench(host, ctx):
        assert await csr_read(host, "id.magic") == 0x5043_4953
        cfg = await csr_read(host, "id.config")
        assert cfg & 1 == 0 and (cfg >> 8) & 0xFF == 33
        await csr_write(host, "target.abort_first", 0x1234)
        assert await csr_read(host, "target.abort_first") == 0x1234
        # BAR0 is not prefetchable: a read burst ends after one word.
        address, _ = REGISTER_MAP["id.magic"]
        r = await host.read(BAR0 + address, 2)
        assert (r.moved, r.termination) == (1, Termination.DISCONNECT_DATA)
    run(bench)


@pytest.mark.parametrize("speed,clock", [(DevselSpeed.SLOW, 4), (DevselSpeed.SUBTRACTIVE, 5)])
def test_devsel_speed(speed, clock):
    async def bench(host, ctx):
        await csr_write(host, "target.response", speed.value)
        w = await host.write(BAR2, [5, 6])
        assert w.first("devsel") == clock and w.data_clocks() == [clock, clock + 1]
        r = await host.read(BAR3, 1, cmd=Command.IO_READ)
        assert r.first("devsel") == clock
        # BAR0 keeps medium timing.
        assert (await host.read(BAR0, 1)).first("devsel") == 3
    run(bench)


def test_initial_and_subsequent_wait_states():
    async def bench(host, ctx):
        await csr_write(host, "target.response", DevselSpeed.MEDIUM.value | 3 << 8)
        w = await host.write(BAR2, [1, 2])
        assert w.first("devsel") == 3 and w.data_clocks() == [6, 7]
        await csr_write(host, "target.response", DevselSpeed.MEDIUM.value)
        await csr_write(host, "target.wait", 2 | 1 << 8)      # every 2 phases, 1 clock
        w = await host.write(BAR2, list(range(6)))
        assert w.data_clocks() == [3, 4, 6, 7, 9, 10]
        r = await host.read(BAR2, 6)
        assert r.data == list(range(6))
        assert r.data_clocks() == [4, 5, 7, 8, 10, 11]
    run(bench)


@pytest.mark.parametrize("with_data", [1, 0])
def test_disconnect_after_n(with_data):
    async def bench(host, ctx):
        await csr_write(host, "target.disconnect", 3 | with_data << 8)
        w = await host.write(BAR2, list(range(10, 18)))
        assert w.moved == 3
        assert w.termination == (Termination.DISCONNECT_DATA if with_data
                                 else Termination.DISCONNECT_NODATA)
        stop = w.first("stop")
        assert stop == (5 if with_data else 6)
        r = await host.read(BAR2, 8)
        assert r.data == [10, 11, 12]
    run(bench)


def test_retry_first_k_then_every_nth():
    async def bench(host, ctx):
        await csr_write(host, "target.retry", 2 | 3 << 8)
        results = [await host.write(BAR2, [i]) for i in range(8)]
        kinds = [r.termination for r in results]
        R, C = Termination.RETRY, Termination.COMPLETION
        assert kinds == [R, R, C, C, R, C, C, R]
        assert results[0].first("stop") == 3 and results[0].moved == 0
        assert await csr_read(host, "target.attempts") == 8
        assert await csr_read(host, "target.retried") == 4
    run(bench)


def test_target_abort_on_range_sets_status_bits():
    async def bench(host, ctx):
        await csr_write(host, "target.abort_first", 8)
        await csr_write(host, "target.abort_last", 11)
        await csr_write(host, "target.control", 0b11)
        w = await host.write(BAR2, [1, 2, 3, 4])
        assert (w.moved, w.termination) == (2, Termination.TARGET_ABORT)
        stop = w.first("stop")
        assert stop == 5 and not w.clocks[stop - 1]["devsel"]
        status = (await host.config_read(1)) >> 16
        assert status & (1 << 11)                     # Signaled Target Abort
        await host.config_write(1, 0x0000_0043)       # writing 0 leaves it set
        assert (await host.config_read(1)) >> 16 & (1 << 11)
        await host.config_write(1, (1 << 11) << 16 | 0x43)
        assert not (await host.config_read(1)) >> 16 & (1 << 11)
        assert await csr_read(host, "target.aborted") == 1
        # The claim's own phase in the range: no TRDY#, target abort on clock 4.
        await csr_write(host, "target.abort_first", 0x40)
        await csr_write(host, "target.abort_last", 0x43)
        w = await host.write(BAR2 + 0x40, [5, 6])
        assert (w.moved, w.termination) == (0, Termination.TARGET_ABORT)
        assert w.first("devsel") == 3 and w.first("stop") == 4
        assert w.first("trdy") is None
    run(bench)


def test_parity_corruption_on_demand():
    async def bench(host, ctx):
        await host.write(BAR2, [1, 2, 3])
        await csr_write(host, "target.control", 0b1010)     # ack64 | corrupt_next
        r = await host.read(BAR2, 3)
        assert r.data == [1, 2, 3] and r.read_parity_errors == 1
        await csr_write(host, "target.control", 0b0110)     # ack64 | corrupt_par
        r = await host.read(BAR2, 3)
        assert r.read_parity_errors == 3
        await csr_write(host, "target.control", 0b0010)
        assert (await host.read(BAR2, 3)).read_parity_errors == 0
        assert await csr_read(host, "target.corrupted") == 4
    run(bench)


def test_refused_register_values():
    async def bench(host, ctx):
        status = "target.status"
        await csr_write(host, "target.response", DevselSpeed.FAST.value)
        assert await csr_read(host, "target.response") == DevselSpeed.MEDIUM.value
        assert await csr_read(host, status) == 0b1
        # 2 + 1 (slow) + 14 = 17 clocks of initial latency: refused without the allow bit.
        await csr_write(host, "target.response", DevselSpeed.SLOW.value | 14 << 8)
        assert await csr_read(host, "target.response") == DevselSpeed.MEDIUM.value
        assert await csr_read(host, status) == 0b11
        await csr_write(host, "target.wait", 3 << 8)          # period 0
        await csr_write(host, "target.wait", 1 | 8 << 8)      # 9 clocks between phases
        assert await csr_read(host, "target.wait") == 0
        await csr_write(host, "target.retry", 1 << 8)         # retry everything
        assert await csr_read(host, "target.retry") == 0
        await csr_write(host, "target.abort_first", 12)
        await csr_write(host, "target.abort_last", 8)
        await csr_write(host, "target.control", 0b11)
        assert await csr_read(host, "target.control") == 0b10
        assert await csr_read(host, status) == 0b11111
        await csr_write(host, status, 0b11111)
        assert await csr_read(host, status) == 0
        # With allow_noncompliant the long latency is honoured, cycle-exactly.
        value = DevselSpeed.SLOW.value | 14 << 8 | 1 << 31
        await csr_write(host, "target.response", value)
        assert await csr_read(host, "target.response") == value
        w = await host.write(BAR2, [9])
        assert w.first("devsel") == 4 and w.data_clocks() == [18]
    run(bench)


def test_write_data_parity_error_asserts_perr():
    async def bench(host, ctx):
        w = await host.write(BAR2, [1, 2, 3], corrupt_data_par=True)
        assert w.moved == 3
        clocks = [k for k, c in enumerate(w.clocks, start=1) if c["perr"]]
        # PERR# two clocks after each data phase (3, 4, 5); the last one after the end.
        assert clocks == [5, 6]
        status = (await host.config_read(1)) >> 16
        assert status & (1 << 15)
        assert await csr_read(host, "target.status") & (1 << 8)
    run(bench)


def test_address_parity_error_is_claimed_and_signals_serr():
    """PCI lets a target claim and complete a transaction whose address phase had bad
    parity (3.7.3): the board does, and signals SERR# on clock 3 (PAR is on the pins in
    clock 2, the SERR# flip-flop answers at its edge)."""
    async def bench(host, ctx):
        await host.config_write(1, 0x0143)                    # + SERR# enable
        w = await host.write(BAR2, [0x1234], corrupt_addr_par=True)
        assert w.termination == Termination.COMPLETION and w.moved == 1
        assert w.first("devsel") == 3
        assert [k for k, c in enumerate(w.clocks, start=1) if c["serr"]] == [3]
        assert (await host.read(BAR2, 1)).data == [0x1234]
        status = (await host.config_read(1)) >> 16
        assert status & (1 << 15) and status & (1 << 14)
    run(bench)


def test_64bit_ack64_by_address_bit():
    async def bench(host, ctx):
        words = [0x0123_4567_89AB_CDEF, 0x1111_2222_3333_4444, 0x5555_6666_7777_8888]
        w = await host.write(BAR2 + 0x80, words, req64=True)
        assert w.moved == 3 and w.first("ack64") == 3 and w.first("devsel") == 3
        assert w.data_clocks() == [3, 4, 5]
        r = await host.read(BAR2 + 0x80, 3, req64=True)
        assert r.data == words and r.first("ack64") == 3 and r.read_parity_errors == 0
        # The upper half of the window aliases the RAM but answers 32-bit.
        alias = BAR2 + EXERCISER_SIZE // 2 + 0x80
        r = await host.read(alias, 2, req64=True)
        assert r.first("ack64") is None
        assert r.data == [words[0] & 0xFFFF_FFFF, words[0] >> 32]
        # ACK64# can be switched off.
        await csr_write(host, "target.control", 0)
        r = await host.read(BAR2 + 0x80, 2, req64=True)
        assert r.first("ack64") is None
    run(bench, width=64)


def slow_trace_backend(board, latency):
    """A BAR1 backend answering a read of word ``a`` with ``a * 3``, sampled ``latency``
    edges after the request was taken (1 = like a block RAM), one request at a time."""
    async def process(ctx):
        port = board.trace
        pending = []                                     # (edge it is sampled at, addr)
        edge = 0
        ctx.set(port.ready, 1)
        async for _, _, valid, ready, write, addr in ctx.tick("pci").sample(
                port.valid, port.ready, port.write, port.addr):
            edge += 1
            assert not (valid and write), "the target passed a BAR1 write on"
            if valid and ready:
                pending.append((edge + latency, addr))
            ctx.set(port.r_valid, 0)
            if pending and pending[0][0] == edge + 1:
                ctx.set(port.r_data, pending.pop(0)[1] * 3)
                ctx.set(port.r_valid, 1)
            ctx.set(port.ready, not pending)
    return process


@pytest.mark.parametrize("latency,first_data", [(1, 4), (4, 7)])
def test_slow_plain_backend_within_latency_rules(latency, first_data):
    board = PCIBoard(32, exerciser_size=EXERCISER_SIZE, spy_addr_bits=8, external_trace=True)
    BAR1 = BAR_ADDRESSES[1]

    async def bench(host, pins, ctx):
        await enumerate_board(host)
        r = await host.read(BAR1 + 8, 2)
        assert r.data == [6, 9] and r.first("trdy") == first_data
        w = await host.write(BAR1, [1, 2])               # dropped, not passed on
        assert w.moved == 2
    simulate(board, bench, processes=[slow_trace_backend(board, latency)])


def test_too_slow_backend_is_retried_by_clock_16():
    board = PCIBoard(32, exerciser_size=EXERCISER_SIZE, spy_addr_bits=8, external_trace=True)
    BAR1 = BAR_ADDRESSES[1]

    async def bench(host, pins, ctx):
        await enumerate_board(host)
        r = await host.read(BAR1, 1)
        assert r.termination == Termination.RETRY and r.first("stop") == 16
    simulate(board, bench, processes=[slow_trace_backend(board, 40)])


def test_initiator_wait_states_hold_the_data_phase():
    async def bench(host, ctx):
        words = [0xA0 + i for i in range(6)]
        w = await host.write(BAR2 + 0x200, words, irdy_waits={2, 4, 5})
        assert w.data_clocks() == [3, 4, 6, 7, 9, 11]
        r = await host.read(BAR2 + 0x200, 6, irdy_waits={0, 2, 5})
        assert r.data == words and r.read_parity_errors == 0
        assert r.data_clocks() == [4, 5, 7, 8, 9, 11]
        # An exerciser wait pattern and initiator waits together.
        await csr_write(host, "target.wait", 1 | 1 << 8)
        r = await host.read(BAR2 + 0x200, 4, irdy_waits={1})
        assert r.data == words[:4]
    run(bench)


def test_pio_throughput_64_word_bursts():
    """64-word bursts at 33 MHz: the target adds one clock (DEVSEL#) to writes and two
    (DEVSEL#, RAM read) to reads; with the initiator's address and turnaround clocks that
    is 67 and 68 clocks per 256 bytes: 127 and 125 MB/s."""
    words = list(range(64))

    async def bench(host, ctx):
        w = await host.write(BAR2, words)
        r = await host.read(BAR2, 64)
        assert r.data == words
        assert (len(w.clocks), len(r.clocks)) == (67, 68)
        write_mbps = 256 / (len(w.clocks) * 30e-9) / 1e6
        read_mbps = 256 / (len(r.clocks) * 30e-9) / 1e6
        print(f"PIO 64-word bursts: write {write_mbps:.1f} MB/s, read {read_mbps:.1f} MB/s")
        assert write_mbps >= 120 and read_mbps >= 110
    run(bench)


async def check_three_words(host, *, devsel, write_clocks, read_clocks):
    """Three words written to and read back from BAR2: DEVSEL# on clock ``devsel`` and
    the data phases on exactly these clocks both ways, the data intact."""
    words = [7, 8, 9]
    w = await host.write(BAR2, words)
    assert w.first("devsel") == devsel and w.data_clocks() == write_clocks
    r = await host.read(BAR2, 3)
    assert r.first("devsel") == devsel and r.data_clocks() == read_clocks
    assert r.data == words and r.read_parity_errors == 0


async def check_address_parity_answer(host):
    """A corrupted address phase PAR: SERR# on clock 3 (when enabled) and Detected Parity
    Error in Status."""
    await host.config_write(1, 0x0143)
    w = await host.write(BAR2, [1], corrupt_addr_par=True)
    assert [k for k, c in enumerate(w.clocks, start=1) if c["serr"]] == [3]
    assert (await host.config_read(1)) >> 16 & (1 << 15)


def test_fast_decode_option():
    async def bench(host, pins, ctx):
        await enumerate_board(host)
        assert (await host.config_read(1)) >> 16 & 0x0600 == 0        # DEVSEL# fast
        r = await host.transaction(Command.CONFIG_READ, 0, idsel=True)
        assert r.first("devsel") == 2 and r.data == [0x0001_5C15]
        # The exerciser windows follow target.response (reset: medium); ask for fast.
        assert (await host.write(BAR2, [1])).first("devsel") == 3
        await csr_write(host, "target.response", DevselSpeed.FAST.value)
        assert await csr_read(host, "target.status") == 0
        await check_three_words(host, devsel=2, write_clocks=[2, 3, 4],
                                read_clocks=[3, 4, 5])
        # Address parity is known only after the claim.
        await check_address_parity_answer(host)
    simulate(PCIBoard(32, exerciser_size=EXERCISER_SIZE, decode=DevselSpeed.FAST), bench)


def test_slow_decode_option():
    """A slow-decode build claims a clock after it decodes: DEVSEL# on clock 4 for every
    window, its exerciser resets to (and refuses anything faster than) slow, and it says
    so in Status and id.config."""
    async def bench(host, pins, ctx):
        await enumerate_board(host)
        assert (await host.config_read(1)) >> 16 & 0x0600 == 0x0400    # DEVSEL# slow
        r = await host.transaction(Command.CONFIG_READ, 0, idsel=True)
        assert r.first("devsel") == 4 and r.data == [0x0001_5C15]
        assert r.data_clocks() == [5]
        config = REGISTER_MAP["id.config"][1].decode(await csr_read(host, "id.config"))
        assert config["decode"] == DevselSpeed.SLOW.value
        assert await csr_read(host, "target.response") == DevselSpeed.SLOW.value
        assert (await host.read(BAR0, 1)).first("devsel") == 4
        await check_three_words(host, devsel=4, write_clocks=[4, 5, 6],
                                read_clocks=[5, 6, 7])
        # A clock more than medium decode's 67 and 68 for 64-word bursts.
        w = await host.write(BAR2, list(range(64)))
        r = await host.read(BAR2, 64)
        assert r.data == list(range(64)) and (len(w.clocks), len(r.clocks)) == (68, 69)
        # Medium is faster than this board decodes: refused, the register kept.
        await csr_write(host, "target.response", DevselSpeed.MEDIUM.value)
        status = REGISTER_MAP["target.status"][1].decode(await csr_read(host, "target.status"))
        assert status["bad_devsel"] == 1
        assert await csr_read(host, "target.response") == DevselSpeed.SLOW.value
        await csr_write(host, "target.response", DevselSpeed.SUBTRACTIVE.value)
        assert (await host.write(BAR2, [1])).first("devsel") == 5
        # Address parity is checked in the clock after the address phase, as with medium
        # decode, although the claim comes a clock later.
        await check_address_parity_answer(host)
    simulate(PCIBoard(32, exerciser_size=EXERCISER_SIZE, decode=DevselSpeed.SLOW), bench)


def test_initiator_giving_up_before_devsel_is_released():
    async def bench(host, ctx):
        await csr_write(host, "target.response", DevselSpeed.SUBTRACTIVE.value)
        # An impatient initiator gives up after clock 4, before DEVSEL# (clock 5), and
        # leaves the bus idle from clock 5. The target, which cannot know at clock 4,
        # answers on clock 5, sees the idle bus and lets go at once.
        w = await host.write(BAR2, [1], devsel_timeout=4)
        assert w.termination == Termination.MASTER_ABORT and w.moved == 0
        assert [k for k, c in enumerate(w.clocks, 1) if c["devsel"]] == [5]
        for _ in range(3):
            assert not any(ctx.get(host.pins.value[n]) for n in ("devsel", "trdy", "stop"))
            await host.idle()
        w = await host.write(BAR2, [2])
        assert w.first("devsel") == 5 and w.moved == 1
        assert (await host.read(BAR2, 1)).data == [2]
    run(bench)
