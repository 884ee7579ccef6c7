# SPDX-License-Identifier: BSD-2-Clause
"""The UART side channel's framed protocol, declared once for the gateware and the host.

Plain Python (no Amaranth): the board's frame engine
(:mod:`pcispy.sidechannel.engine`) builds its hardware from these constants and
the host's :mod:`pcispy.host.transports.uart` builds and checks frames with them.

Frames on the wire (8N1 bytes)::

    request:   SOF  seq  command  length  payload[length]  crc_hi  crc_lo
    response:  SOF  seq  status   length  payload[length]  crc_hi  crc_lo

``crc`` is CRC-16/CCITT-FALSE (:func:`crc16`) over ``seq .. payload`` (unescaped). Every
byte after the SOF that equals :data:`SOF` or :data:`ESC` is sent as ``ESC, byte ^
ESC_XOR``, so a SOF byte only ever starts a frame: a frame that lost or gained bytes is
cut short by the next SOF (the board counts it dropped) and never swallows the next frame.
``ESC`` followed by anything but an escaped SOF or ESC is a broken frame.

The board answers every valid request frame with exactly one response of the same ``seq``
and drops invalid ones (counted: :data:`STATUS_COUNTERS`). A request whose ``seq`` and CRC
equal the previous executed request's is not executed again: the board replays its stored
answer (a host that lost an answer resends the same frame, and a write is never applied
twice). A host starts a session with :attr:`Opcode.STATUS` so that no later request of
its own can match a stale request of an earlier session.

Addresses are DWORD numbers within a space (:class:`Space`): BAR0 (registers), BAR1 (the
spy's trace memory) or the board's configuration space.
"""

import enum
import struct

__all__ = ["SOF", "ESC", "ESC_XOR", "Opcode", "ResponseStatus", "Space", "PROTOCOL_VERSION",
           "MAX_WORDS", "MAX_REQUEST_PAYLOAD", "MAX_RESPONSE_PAYLOAD", "ADDRESS_BYTES",
           "REQUEST_PAYLOAD", "STATUS_COUNTERS", "STATUS_FLAGS", "STATUS_PAYLOAD",
           "CRC_POLY", "CRC_INIT", "crc16", "escape", "frame", "status_payload",
           "parse_status", "DEFAULT_BAUD", "SYNC_CLOCK_HZ"]

#: Start of frame, escape byte, and what an escaped byte is XORed with.
SOF = 0xA5
ESC = 0xDB
ESC_XOR = 0x20

#: Version reported by :attr:`Opcode.STATUS`.
PROTOCOL_VERSION = 1

#: The board's ``sync`` clock (ULX3S oscillator) and the default line rate.
SYNC_CLOCK_HZ = 25_000_000
DEFAULT_BAUD = 115_200

#: CRC-16/CCITT-FALSE: polynomial x^16 + x^12 + x^5 + 1, initial value 0xFFFF, MSB first.
CRC_POLY = 0x1021
CRC_INIT = 0xFFFF


class Opcode(enum.IntEnum):
    """What a request asks (its command byte)."""
    STATUS = 0x01       #: no payload -> :data:`STATUS_PAYLOAD` bytes (:func:`parse_status`)
    READ = 0x02         #: space, address -> 4 bytes (little-endian word)
    WRITE = 0x03        #: space, address, data (4 bytes LE) -> no payload
    BULK_READ = 0x04    #: space, address, count (1..MAX_WORDS) -> 4 * count bytes


class ResponseStatus(enum.IntEnum):
    """Response status byte. Anything but OK comes with no payload."""
    OK = 0
    BAD_COMMAND = 1     #: unknown command
    BAD_LENGTH = 2      #: payload length wrong for the command, or count out of range
    BAD_ADDRESS = 3     #: no such space, or an address beyond it
    PCI_TIMEOUT = 4     #: the PCI side did not answer (no PCI clock, or RST# asserted)


class Space(enum.IntEnum):
    """Address spaces a request reaches (2 bits in the gateware)."""
    BAR0 = 0
    BAR1 = 1
    CONFIG = 2


#: Bytes of a DWORD address in a request (little-endian).
ADDRESS_BYTES = 3
#: Most words of one BULK_READ (the response length is one byte).
MAX_WORDS = 63
#: Request payload length of each command.
REQUEST_PAYLOAD = {
    Opcode.STATUS: 0,
    Opcode.READ: 1 + ADDRESS_BYTES,
    Opcode.WRITE: 1 + ADDRESS_BYTES + 4,
    Opcode.BULK_READ: 1 + ADDRESS_BYTES + 1,
}
MAX_REQUEST_PAYLOAD = max(REQUEST_PAYLOAD.values())
MAX_RESPONSE_PAYLOAD = 4 * MAX_WORDS

#: The 32-bit counters of a STATUS answer, in order (little-endian words after 4 header
#: bytes: version, flags, MAX_WORDS, 0).
STATUS_COUNTERS = (
    "executed",     # valid requests executed (replays not included)
    "replays",      # valid requests answered from the stored answer
    "dropped",      # frames started by a SOF and found invalid: CRC, length, escape,
                    # UART framing error, or cut short by the next SOF
    "busy",         # valid requests that arrived while the board was still answering
    "noise",        # bytes outside any frame (before a SOF)
)
#: Bits of the flags byte of a STATUS answer.
STATUS_FLAGS = {"pci_running": 0}
STATUS_PAYLOAD = 4 + 4 * len(STATUS_COUNTERS)


def crc16(data, crc=CRC_INIT):
    """CRC-16/CCITT-FALSE of ``data`` (bytes), continuing from ``crc``."""
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ CRC_POLY if crc & 0x8000 else crc << 1) & 0xFFFF
    return crc


def escape(data):
    """``data`` with every SOF and ESC byte escaped."""
    out = bytearray()
    for byte in data:
        if byte in (SOF, ESC):
            out += bytes((ESC, byte ^ ESC_XOR))
        else:
            out.append(byte)
    return bytes(out)


def frame(seq, code, payload=b""):
    """A whole frame as sent on the wire: request (``code`` a command) or response
    (``code`` a status)."""
    if len(payload) > 255:
        raise ValueError(f"a frame carries at most 255 payload bytes, not {len(payload)}")
    body = bytes((seq & 0xFF, int(code), len(payload))) + bytes(payload)
    return bytes((SOF,)) + escape(body + crc16(body).to_bytes(2, "big"))


def status_payload(counters, flags=0):
    """The payload of a STATUS answer (what the gateware sends), for tests and docs."""
    return (bytes((PROTOCOL_VERSION, flags, MAX_WORDS, 0)) +
            b"".join(struct.pack("<I", counters[name]) for name in STATUS_COUNTERS))


def parse_status(payload):
    """A STATUS answer's payload -> ``{"version", "pci_running", "max_words", counters}``."""
    if len(payload) != STATUS_PAYLOAD:
        raise ValueError(f"a STATUS answer has {STATUS_PAYLOAD} bytes, not {len(payload)}")
    result = {"version": payload[0], "max_words": payload[2]}
    for name, bit in STATUS_FLAGS.items():
        result[name] = bool(payload[1] >> bit & 1)
    words = struct.unpack(f"<{len(STATUS_COUNTERS)}I", payload[4:])
    result.update(zip(STATUS_COUNTERS, words))
    return result
