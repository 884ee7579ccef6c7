# SPDX-License-Identifier: BSD-2-Clause
"""The ``uart`` transport: the board's UART side channel (``pcispy --uart DEV``).

For a board that spies on a bus it is not reached through: registers (BAR0), the trace
memory (BAR1) and the configuration space, over the framed protocol of
:mod:`pcispy.sidechannel.protocol` (sequence numbers, CRC-16, one answer per
request, replayed answers for repeated requests).

The bytes go through a :class:`ByteStream`: :class:`SerialStream` (pyserial: a device
path such as ``/dev/ttyUSB0`` or a pyserial URL such as ``socket://host:port``) on
hardware, and a simulated wire in :mod:`pcispy.sim.sidechannel`, so the same
:class:`UartTransport` code is tested against the simulated gateware.

A request that gets no valid answer in time (bytes lost, or corrupted and refused by
either side's CRC) is sent again with the same sequence number, up to ``retries`` times;
the board executes it at most once. What a user can meet ends in a one-line
:class:`~pcispy.host.errors.TransportError`: a port that cannot be opened, no answer at all
(wrong baud rate, or not a pcispy board), too many corrupted answers, a board whose PCI
side does not answer.
"""

import os
import re
import struct
from abc import ABC, abstractmethod

import serial

from pcispy.sidechannel import protocol as P
from pcispy.host.errors import TransportError
from pcispy.host.transports.base import Transport
from pcispy.host.board import Board

__all__ = ["ByteStream", "SerialStream", "UartTransport", "run", "BAR_SPACES"]

#: The BARs the side channel reaches, and their space in a request.
BAR_SPACES = {0: P.Space.BAR0, 1: P.Space.BAR1}


class ByteStream(ABC):
    """A byte pipe to the board's UART."""

    @abstractmethod
    async def write(self, data):
        """Send ``data`` (bytes)."""

    @abstractmethod
    async def read(self, timeout_s):
        """The bytes that arrived (at least one), waiting up to ``timeout_s`` for the
        first; ``b""`` on timeout."""

    async def sleep(self, seconds):
        """Let ``seconds`` pass on the board's side."""
        # asyncio loads where a feature runs on hardware, not with the command line
        import asyncio
        await asyncio.sleep(seconds)

    def close(self):
        pass


class SerialStream(ByteStream):
    """A serial port (pyserial ``serial_for_url``: a device path or a URL)."""

    def __init__(self, device, baud):
        self.device = device
        try:
            self.port = serial.serial_for_url(device, baudrate=baud, timeout=0)
        except (serial.SerialException, ValueError, OSError) as error:
            raise TransportError(f"cannot open {device}: {_open_failure(error, device)}") \
                from None

    async def write(self, data):
        try:
            self.port.write(data)
            self.port.flush()
        except (serial.SerialException, OSError) as error:
            raise TransportError(f"writing to {self.device} failed: {error}") from None

    async def read(self, timeout_s):
        try:
            self.port.timeout = max(timeout_s, 0)
            data = self.port.read(1)
            if data:
                self.port.timeout = 0
                data += self.port.read(4096)
        except (serial.SerialException, OSError) as error:
            raise TransportError(f"reading from {self.device} failed: {error}") from None
        return data

    def close(self):
        self.port.close()


def _open_failure(error, device):
    """Why pyserial could not open ``device``, without the device: its messages name the
    port once or twice themselves ("[Errno 2] could not open port DEV: [Errno 2] No such
    file or directory: 'DEV'"), and the caller names it already."""
    if isinstance(getattr(error, "errno", None), int) and error.errno > 0:
        return os.strerror(error.errno)
    reason = str(error)
    # The innermost reason: what follows the last "...port DEV: " and "[Errno N] ".
    reason = reason.rpartition(f"{device}: ")[2] if f"{device}: " in reason else reason
    reason = re.sub(r"^\[Errno -?\d+\]\s*", "", reason)
    reason = reason.removesuffix(f": {device!r}")
    return reason or type(error).__name__


class _Answer:
    """What one attempt got: ``kind`` "ok" (with status and payload), "bad" (a frame
    that failed its checks) or "silent" (nothing valid in time); ``heard`` says whether
    any byte arrived."""
    def __init__(self, kind, status=None, payload=b"", heard=False):
        self.kind, self.status, self.payload, self.heard = kind, status, payload, heard


class UartTransport(Transport):
    """Board access over the UART side channel.

    Parameters:
        stream: a :class:`ByteStream`.
        baud: the line rate (bits per second), for the answer timeouts.
        name: the device, for messages.
        latency_s: time allowed on top of the bytes' wire time for an answer (USB serial
            adapters hold received bytes up to their latency timer, 16 ms on FTDI parts).
        quiet_s: after a broken answer, input is discarded until the line was quiet this
            long (the rest of the broken answer), before the request is sent again.
        retries: how often a request is sent again before giving up.
        seq: the first sequence number (None: a random one).
    """
    kind = "uart"

    def __init__(self, stream, *, baud=P.DEFAULT_BAUD, name="the UART", latency_s=0.25,
                 quiet_s=None, retries=8, seq=None):
        self.stream = stream
        self.baud = baud
        self.name = name
        self.latency_s = latency_s
        self.quiet_s = quiet_s if quiet_s is not None else 40 * 10 / baud
        self.retries = retries
        self.seq = (os.urandom(1)[0] if seq is None else seq) & 0xFF
        self.heard_valid = False
        self.board_status = None
        #: Attempts sent again, and broken answers seen (for reports and tests).
        self.resent = 0
        self.broken = 0

    # -- the protocol ---------------------------------------------------------------------
    async def open(self):
        """Start the session: a STATUS request (so no later request can match a request
        of an earlier session). Returns the board's STATUS (:func:`parse_status`)."""
        return await self.status()

    async def status(self):
        """The board's side-channel STATUS (version, PCI side running, counters)."""
        payload = await self.request(P.Opcode.STATUS, b"", P.STATUS_PAYLOAD)
        self.board_status = P.parse_status(payload)
        return self.board_status

    async def request(self, command, payload, answer_length):
        """Send one request, resending it until a valid answer comes; return its payload."""
        self.seq = (self.seq + 1) & 0xFF
        frame = P.frame(self.seq, command, payload)
        # Worst case every answer byte escaped; both directions, 10 bits per byte.
        wire_s = (len(frame) + 2 * (answer_length + 5) + 1) * 10 / self.baud
        timeout = 2 * wire_s + self.latency_s
        broken = 0
        for attempt in range(self.retries + 1):
            if attempt:
                self.resent += 1
            await self.stream.write(frame)
            answer = await self._receive(self.seq, timeout, answer_length)
            if answer.kind == "ok":
                self.heard_valid = True
                return self._check(command, answer, answer_length)
            if answer.kind == "bad":
                broken += 1
                self.broken += 1
            await self._drain()
        if broken:
            raise TransportError(
                f"{broken} corrupted answers out of {self.retries + 1} attempts from "
                f"{self.name}: a noisy line, or a wrong --baud (now {self.baud})")
        if not self.heard_valid:
            raise TransportError(
                f"no answer from {self.name} at {self.baud} baud: a wrong --baud, or not the "
                "UART of a pcispy board")
        raise TransportError(f"the board on {self.name} stopped answering")

    def _check(self, command, answer, answer_length):
        command = getattr(command, "name", f"command {command}")
        if answer.status == P.ResponseStatus.PCI_TIMEOUT:
            raise TransportError(
                f"the board on {self.name} answers, but its PCI side does not: no PCI clock, "
                "or RST# asserted")
        if answer.status != P.ResponseStatus.OK:
            try:
                status = P.ResponseStatus(answer.status).name
            except ValueError:
                status = f"status {answer.status}"
            raise TransportError(f"the board on {self.name} refused {command}: {status}")
        if len(answer.payload) != answer_length:
            raise TransportError(
                f"the board on {self.name} answered {command} with "
                f"{len(answer.payload)} bytes, not {answer_length} (another protocol version?)")
        return answer.payload

    async def _drain(self):
        """Discard input until the line was quiet for ``quiet_s`` (or a few answers' worth
        of bytes went by: a line full of noise)."""
        budget = 8 * (P.MAX_RESPONSE_PAYLOAD + 6)
        while budget > 0:
            data = await self.stream.read(self.quiet_s)
            if not data:
                return
            budget -= len(data)

    async def _receive(self, seq, timeout, answer_length):
        """Read one answer frame of sequence number ``seq`` (answers of other sequence
        numbers are stale duplicates and skipped). Waits up to ``timeout`` for each
        arrival, and reads at most a few answers' worth of bytes (a line full of noise)."""
        body = None          # None: hunting for a SOF
        escaped = False
        heard = False
        broken = False
        budget = 4 * (answer_length + 6) + 64
        pending = bytearray()
        while True:
            if not pending:
                data = await self.stream.read(timeout) if budget > 0 else b""
                if not data:
                    return _Answer("bad" if broken else "silent", heard=heard)
                heard = True
                budget -= len(data)
                pending += data
            byte = pending.pop(0)
            if byte == P.SOF:
                broken |= body is not None
                body, escaped = bytearray(), False
                continue
            if body is None:
                broken = True            # bytes outside a frame
                continue
            if escaped:
                escaped = False
                if byte not in (P.SOF ^ P.ESC_XOR, P.ESC ^ P.ESC_XOR):
                    body, broken = None, True
                    continue
                byte ^= P.ESC_XOR
            elif byte == P.ESC:
                escaped = True
                continue
            body.append(byte)
            if len(body) >= 3 and len(body) == body[2] + 5:
                frame, body = bytes(body), None
                if P.crc16(frame) != 0:
                    broken = True
                    continue
                if frame[0] != seq:
                    continue             # a late answer of an earlier request
                return _Answer("ok", frame[1], frame[3:-2], heard=True)

    # -- the Transport interface --------------------------------------------------------
    @staticmethod
    def _address(space, offset):
        if offset % 4 or offset < 0 or offset >> 2 >= 1 << (8 * P.ADDRESS_BYTES):
            raise TransportError(f"offset {offset:#x} is not a DWORD the side channel reaches")
        return bytes((space,)) + (offset >> 2).to_bytes(P.ADDRESS_BYTES, "little")

    def _space(self, bar):
        try:
            return BAR_SPACES[bar]
        except KeyError:
            raise TransportError(f"BAR{bar} is not reachable over the UART side channel "
                                 "(only BAR0 registers and the BAR1 trace memory)") from None

    async def read32(self, bar, offset):
        data = await self.request(P.Opcode.READ, self._address(self._space(bar), offset), 4)
        return struct.unpack("<I", data)[0]

    async def write32(self, bar, offset, value):
        await self.request(P.Opcode.WRITE, self._address(self._space(bar), offset) +
                           struct.pack("<I", value & 0xFFFFFFFF), 0)

    async def config_read(self, offset):
        self._check_config(offset)
        data = await self.request(P.Opcode.READ, self._address(P.Space.CONFIG, offset), 4)
        return struct.unpack("<I", data)[0]

    async def config_write(self, offset, value):
        self._check_config(offset)
        await self.request(P.Opcode.WRITE, self._address(P.Space.CONFIG, offset) +
                           struct.pack("<I", value & 0xFFFFFFFF), 0)

    @staticmethod
    def _check_config(offset):
        if offset % 4 or not 0 <= offset <= 252:
            raise ValueError(f"configuration offset {offset:#x} is not a word in 0..0xfc")

    async def read_block(self, bar, offset, count):
        """``count`` words by BULK_READ, :data:`~.protocol.MAX_WORDS` per frame."""
        space = self._space(bar)
        words = []
        while len(words) < count:
            n = min(P.MAX_WORDS, count - len(words))
            data = await self.request(
                P.Opcode.BULK_READ,
                self._address(space, offset + 4 * len(words)) + bytes((n,)), 4 * n)
            words += struct.unpack(f"<{n}I", data)
        return words

    async def wait_irq(self, timeout_s):
        """The side channel has no interrupt line: poll ``irq.status.pending``."""
        board = Board(self)
        waited = 0.0
        step = max(self.latency_s / 10, 20 * 10 / self.baud)
        while True:
            if (await board.fields("irq.status"))["pending"]:
                return True
            if waited >= timeout_s:
                return False
            await self.sleep(step)
            waited += step

    async def dma_buffer(self, size):
        raise TransportError("DMA needs host memory on the board's PCI bus; the UART side "
                             "channel has none (use --sysfs on the machine the board is in)")

    async def sleep(self, seconds):
        await self.stream.sleep(seconds)

    def describe(self):
        return {"transport": "uart", "device": self.name, "baud": self.baud,
                "resent": self.resent, "broken_answers": self.broken,
                "board": self.board_status}


def run(feature, arguments, device, baud=P.DEFAULT_BAUD, latency_s=0.25):
    """Run ``feature`` (an ``async def feature(transport, **arguments)``) on the board at
    the UART ``device`` under asyncio; the CLI's ``--uart`` branch."""
    if not device:
        raise TransportError("--uart needs a device, e.g. /dev/ttyUSB0 or socket://host:port")
    # asyncio loads where a feature runs on hardware, not with the command line
    import asyncio
    stream = SerialStream(device, baud)

    async def session():
        transport = UartTransport(stream, baud=baud, name=device, latency_s=latency_s)
        await transport.open()
        return await feature(transport, **arguments)
    try:
        return asyncio.run(session())
    finally:
        stream.close()
