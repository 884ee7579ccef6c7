# SPDX-License-Identifier: BSD-2-Clause
"""The UART side channel end to end: the real gateware (UART, frame engine, clock-domain
crossing, the board's CSR bank, configuration space and BAR1 path) in Amaranth's
simulator, reached by the real :class:`UartTransport` over a simulated wire that loses
and corrupts bytes; the CLI over a socket; the transport's one-line errors."""

import asyncio
import io
import json
import os
import random
import socket
import threading

import pytest

from pcispy.board.registers import DEFAULT_DEVICE_ID, DEFAULT_VENDOR_ID
from pcispy.board.registers import IDENTITY_MAGIC, REGISTER_MAP
from pcispy.sidechannel import protocol as P
from pcispy.app import cli
from pcispy.host.board import Board
from pcispy.host.errors import PassiveBuild, TransportError
from pcispy.host.transports.uart import ByteStream, SerialStream, UartTransport
from pcispy.sim.sidechannel import (CLOCK_GATE_LOG2, DIVISOR, SLOW_PCI_PERIOD,
                                    SimulatedSideChannel, measure_bulk_read, trace_word)

pytestmark = pytest.mark.board

SEEDS = [int(s) for s in os.environ.get("PCISPY_UART_SEEDS", "1,3").split(",")]


@pytest.fixture(scope="module")
def side():
    return SimulatedSideChannel()


def _delta(before, after):
    return {name: after[name] - before[name] for name in P.STATUS_COUNTERS}


def _wire_index(frame, position):
    """Where body byte ``position`` (0: the sequence number) of ``frame`` is on the wire."""
    index = 1
    for _ in range(position):
        index += 2 if frame[index] == P.ESC else 1
    return index


def test_crc_and_escaping():
    assert P.crc16(b"123456789") == 0x29B1            # CRC-16/CCITT-FALSE check value
    frame = P.frame(P.SOF, P.ResponseStatus.OK, bytes((P.ESC, 1, P.SOF)))
    assert frame == bytes((P.SOF, P.ESC, P.SOF ^ 0x20, 0, 3, P.ESC, P.ESC ^ 0x20, 1,
                           P.ESC, P.SOF ^ 0x20)) + P.escape(
        P.crc16(bytes((P.SOF, 0, 3, P.ESC, 1, P.SOF))).to_bytes(2, "big"))
    assert frame.count(P.SOF) == 1


def test_registers_config_and_trace(side):
    async def body(transport, ctx, bench):
        status = await transport.open()
        board = Board(transport)
        magic = await board.read("id.magic")
        ids = await transport.config_read(0)
        await board.write("irq.seed", 0x1234ABCD)
        seed = await board.read("irq.seed")
        words = await transport.read_block(1, 4 * 3, 8)
        after = await transport.status()
        return status, magic, ids, seed, words, after, ctx.get(bench.writes)
    status, magic, ids, seed, words, after, writes = side.run(body, seq=10)
    assert status["version"] == P.PROTOCOL_VERSION and status["max_words"] == P.MAX_WORDS
    assert status["pci_running"] is True
    assert magic == IDENTITY_MAGIC
    assert ids == DEFAULT_DEVICE_ID << 16 | DEFAULT_VENDOR_ID
    assert seed == 0x1234ABCD
    assert words == [trace_word(3 + i) for i in range(8)]
    assert _delta(status, after) == {"executed": 6, "replays": 0, "dropped": 0, "busy": 0,
                                     "noise": 0}
    assert writes == 1


#: A write of irq.seed (BAR0), as a request.
SEED_DWORD = REGISTER_MAP["irq.seed"][0] // 4
WRITE = (P.Opcode.WRITE, bytes((P.Space.BAR0,)) + SEED_DWORD.to_bytes(3, "little") +
         (0x55AA).to_bytes(4, "little"))

#: (what, the damaged byte (direction, body position or wire index, fault), counter
#: changes besides executed +3).
CASES = [
    ("request byte lost", ("host", 3, None), {"dropped": 1}),
    ("request payload corrupted", ("host", 6, 0x01), {"dropped": 1}),
    ("request SOF lost", ("host", 0, None), {"noise": "rest of the frame"}),
    ("answer byte lost", ("board", 2, None), {"replays": 1}),
    ("answer CRC corrupted", ("board", 5, 0x80), {"replays": 1}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case[0])
def test_damaged_write_is_applied_once(side, case):
    """One damaged byte in a write's request or answer: the transport sends it again, the
    board counts exactly what happened, and the write is applied once."""
    what, (direction, position, fault), expected = case
    seq = 40 + 8 * CASES.index(case)
    frame = P.frame(seq + 2, *WRITE)          # open() uses seq + 1
    index = position if direction == "board" or position == 0 else _wire_index(frame,
                                                                               position)

    async def body(transport, ctx, bench):
        before = await transport.open()
        writes = ctx.get(bench.writes)
        transport.wire.reset({(direction, index): fault})
        await transport.request(*WRITE, 0)
        transport.wire.reset()
        value = await Board(transport).read("irq.seed")
        after = await transport.status()
        return before, after, ctx.get(bench.writes) - writes, value, transport.resent
    before, after, writes, value, resent = side.run(body, seq=seq)
    changes = {"executed": 3, "replays": 0, "dropped": 0, "busy": 0, "noise": 0}
    for name, change in expected.items():
        changes[name] = len(frame) - 1 if isinstance(change, str) else change
    assert _delta(before, after) == changes
    assert (writes, value, resent) == (1, 0x55AA, 1)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_loss_and_corruption(side, seed):
    """Random operations over a line that loses or corrupts 1 % of the bytes each way
    (never a SOF: a SOF made or lost is covered above): every answer right, every write
    applied once, one drop per damaged request frame, one replay per damaged answer."""
    rng = random.Random(seed)
    state = {"on": False}

    def fault(direction, n, byte):
        if not state["on"] or byte == P.SOF or rng.random() >= 0.01:
            return 0
        if rng.random() < 0.5:
            return None
        return rng.choice([m for m in range(1, 256) if byte ^ m != P.SOF])

    async def body(transport, ctx, bench):
        wire = transport.wire
        before = await transport.open()
        writes0, seq0 = ctx.get(bench.writes), transport.seq
        board = Board(transport)
        wire.reset(fault)
        state["on"] = True
        seed_value, writes, mismatches = 1, 0, []
        for step in range(8):
            choice = rng.random()
            if choice < 0.35:
                seed_value = rng.getrandbits(32)
                await board.write("irq.seed", seed_value)
                writes += 1
            elif choice < 0.6:
                got = await board.read("irq.seed")
                if got != seed_value:
                    mismatches.append((step, got, seed_value))
            elif choice < 0.85:
                start, count = rng.randrange(32), rng.randrange(1, 9)
                got = await transport.read_block(1, 4 * start, count)
                if got != [trace_word(start + i) for i in range(count)]:
                    mismatches.append((step, got))
            else:
                got = await transport.config_read(0)
                if got != DEFAULT_DEVICE_ID << 16 | DEFAULT_VENDOR_ID:
                    mismatches.append((step, got))
        state["on"] = False
        after = await transport.status()
        return (before, after, (transport.seq - seq0) & 0xFF, ctx.get(bench.writes) - writes0,
                writes, mismatches, dict(wire.damaged))
    before, after, requests, applied, writes, mismatches, damaged = side.run(
        body, seq=100 + 20 * seed)
    assert mismatches == [], f"seed {seed}"
    assert applied == writes, f"seed {seed}"
    changes = _delta(before, after)
    del changes["noise"]          # bytes of a broken frame after its drop: not asserted
    assert changes == {"executed": requests, "replays": damaged["board"],
                       "dropped": damaged["host"], "busy": 0}, f"seed {seed}"
    assert damaged["host"] + damaged["board"] > 0, f"seed {seed}: no fault was injected"


def test_no_pci_clock_times_out_and_recovers(side):
    async def body(transport, ctx, bench):
        await transport.open()
        ctx.set(bench.pci_clock, 0)
        await transport.sleep(20 * DIVISOR * 40e-9 * 10)
        with pytest.raises(TransportError, match="its PCI side does not: no PCI clock"):
            await transport.read32(0, 0)
        stopped = await transport.status()
        ctx.set(bench.pci_clock, 1)
        await transport.sleep(20e-6)
        magic = await transport.read32(0, 0)       # the late answer is thrown away
        running = await transport.status()
        return stopped["pci_running"], running["pci_running"], magic
    assert side.run(body, seq=200) == (False, True, IDENTITY_MAGIC)


def test_refusals(side):
    async def body(transport, ctx, bench):
        await transport.open()
        errors = []
        for call in (transport.read32(1, 0x100),                 # BAR1 has 64 words
                     transport.read_block(1, 0xF0, 8),           # runs past its end
                     transport.request(P.Opcode.BULK_READ,
                                       bytes((P.Space.BAR1, 0, 0, 0, 0)), 0),
                     transport.request(0x7F, b"", 0),
                     transport.request(P.Opcode.READ, bytes((3, 0, 0, 0)), 4)):
            with pytest.raises(TransportError) as error:
                await call
            errors.append(str(error.value).split(": ")[-1])
        return errors
    assert side.run(body, seq=210) == ["BAD_ADDRESS", "BAD_ADDRESS", "BAD_LENGTH",
                                       "BAD_COMMAND", "BAD_ADDRESS"]
    with pytest.raises(TransportError, match="BAR2 is not reachable"):
        asyncio.run(UartTransport(_Silent()).read32(2, 0))


def test_bulk_read_throughput(side):
    """All of BAR1 (64 words: a full frame and a one-word frame), timed."""
    figures = measure_bulk_read(side)
    assert figures["words"] == [trace_word(i) for i in range(P.MAX_WORDS + 1)]
    # The measured rate is the wire's, less the board's turnarounds (a few bit times).
    assert 0.95 * figures["computed"] <= figures["measured"] <= figures["computed"]


def test_cli_info_over_a_socket(side):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    thread = threading.Thread(target=side.serve, args=(listener,))
    thread.start()
    out = io.StringIO()
    try:
        status = cli.main(["--uart", f"socket://127.0.0.1:{port}", "--uart-timeout", "20",
                           "--json", "info"], out=out)
    finally:
        thread.join(timeout=120)
        listener.close()
    assert status == 0
    result = json.loads(out.getvalue())
    assert (result["vendor_id"], result["device_id"]) == (DEFAULT_VENDOR_ID,
                                                          DEFAULT_DEVICE_ID)
    assert result["transport"]["transport"] == "uart"
    assert result["transport"]["board"]["executed"] >= 1


class _Silent(ByteStream):
    async def write(self, data):
        pass

    async def read(self, timeout_s):
        return b""


class _Noisy(_Silent):
    async def read(self, timeout_s):
        return P.frame(0x33, P.ResponseStatus.OK, b"\0\0\0\0")[:-1] + b"\x00"    # bad CRC


@pytest.mark.parametrize("stream, message", [
    (_Silent(), "no answer from the UART at 115200 baud: a wrong --baud, or not the UART "
                "of a pcispy board"),
    (_Noisy(), "9 corrupted answers out of 9 attempts from the UART: a noisy line, or a "
               "wrong --baud (now 115200)"),
])
def test_transport_errors_are_one_line(stream, message):
    with pytest.raises(TransportError) as error:
        asyncio.run(UartTransport(stream, latency_s=0).open())
    assert str(error.value) == message


@pytest.mark.parametrize("where, reason", [("ttyNONE", "No such file or directory"),
                                           ("", "Is a directory")])
def test_a_port_that_cannot_be_opened_is_named_once(tmp_path, where, reason):
    device = str(tmp_path / where) if where else str(tmp_path)
    with pytest.raises(TransportError) as error:
        SerialStream(device, 115200)
    assert str(error.value) == f"cannot open {device}: {reason}"


def test_a_url_that_cannot_be_opened_is_named_once():
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"socket://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()                        # nobody listens there any more
    with pytest.raises(TransportError) as error:
        SerialStream(url, 115200)
    assert str(error.value) == f"cannot open {url}: Connection refused"


@pytest.mark.heavy
def test_whole_board():
    """The real PCIBoard behind the side channel on a 5 MHz PCI clock (about 20 s in
    Amaranth's simulator): registers, configuration space, the trace window, and passive
    mode set and cleared through the pcispy feature as ``pcispy --uart DEV passive
    on/off`` runs it. The board measures its PCI clock against the oscillator, and the
    host computes with that, not with the nominal 33 MHz."""
    from pcispy.board.identity_feature import passive_mode
    full = SimulatedSideChannel(full=True, pci_period=SLOW_PCI_PERIOD)

    async def body(transport, ctx, bench):
        await transport.open()
        board = Board(transport)
        await board.write("irq.seed", 77)
        return (await board.read("id.magic"), await board.read("irq.seed"),
                await transport.config_read(0), await transport.read_block(1, 0, 5),
                await passive_mode(transport, True), await passive_mode(transport),
                await passive_mode(transport, False), await board.identify())
    on = {"requested": True, "passive_on": True, "answering": True, "passive_build": False}
    off = {"requested": False, "passive_on": False, "answering": True, "passive_build": False}
    *answers, identity = full.run(body)
    assert answers == [IDENTITY_MAGIC, 77, DEFAULT_DEVICE_ID << 16 | DEFAULT_VENDOR_ID,
                       [trace_word(i) for i in range(5)], on, on, off]
    # 200 ns clocks in an 8 us gate: 40, counted 40 (one either way as the phases
    # walk); the host reports and computes with the measurement, not the nominal 33.
    gate_us = 1 << CLOCK_GATE_LOG2
    assert identity["clock.gate_log2"] == CLOCK_GATE_LOG2
    assert abs(identity["clock.pci_count"] - gate_us * 1e-6 / SLOW_PCI_PERIOD) <= 1
    assert abs(identity["clock_mhz"] - 5) <= 0.125
    assert identity["clock_measured_mhz"] == identity["clock_mhz"] == round(
        identity["clock.pci_count"] / gate_us, 3)
    assert identity["clock_hz"] == identity["clock.pci_count"] / gate_us * 1e6
    assert identity["config.clock_mhz"] == 33


@pytest.mark.heavy
def test_passive_build_over_the_side_channel():
    """The passive build's board behind the side channel: it identifies as passive (no
    IDs: no configuration space), its trace window and spy registers answer, and every
    command that needs a PCI target, master or INTA# is refused in one line naming the
    build, before it writes anything."""
    from pcispy.dma.dma_feature import dma
    from pcispy.board.identity_feature import config_space, info, passive_mode
    from pcispy.irq.irq_feature import irq_latency
    from pcispy.exerciser.pio_feature import pio
    from pcispy.dma.sweep_feature import sweep
    from pcispy.exerciser.target_feature import target
    passive = SimulatedSideChannel(full=True, passive=True, pci_period=SLOW_PCI_PERIOD)
    refusals = {"pcispy dma": lambda t: dma(t, length=64),
                "pcispy sweep": lambda t: sweep(t, bursts=(4,)),
                "pcispy target": lambda t: target(t, show=True),
                "pcispy pio": lambda t: pio(t, size=64),
                "pcispy irq": lambda t: irq_latency(t, count=1),
                "pcispy config": config_space,
                "passive off": lambda t: passive_mode(t, False)}

    async def body(transport, ctx, bench):
        await transport.open()
        before = ctx.get(bench.writes)
        messages = {}
        for name, command in refusals.items():
            with pytest.raises(PassiveBuild) as error:
                await command(transport)
            messages[name] = str(error.value)
        return (await info(transport), await passive_mode(transport),
                await transport.read_block(1, 0, 3), messages, ctx.get(bench.writes) - before)
    about, mode, words, messages, writes = passive.run(body)
    assert {key: about[key] for key in ("vendor_id", "device_id", "class_code", "revision",
                                        "decode", "passive", "bus_width")} == {
        "vendor_id": None, "device_id": None, "class_code": None, "revision": None,
        "decode": None, "passive": True, "bus_width": 32}
    assert mode == {"requested": False, "passive_on": True, "answering": True,
                    "passive_build": True}
    assert words == [trace_word(i) for i in range(3)]
    assert writes == 0
    build = ("this board is a passive build (no PCI output drivers: the spy and the checker "
             "only); load an active bitstream (built without --passive) for it")
    assert messages == {
        **{name: f"{name} needs the board's PCI target, master or INTA#, and {build}"
           for name in ("pcispy dma", "pcispy sweep", "pcispy target", "pcispy pio",
                        "pcispy irq")},
        "pcispy config": f"pcispy config reads the board's configuration space, and {build}",
        "passive off": f"passive off would let the board drive the PCI bus, and {build}"}
