# SPDX-License-Identifier: BSD-2-Clause
"""pcapng for Wireshark: one packet per transaction, and the dissector that reads it.

``pcispy decode FILE --format pcapng -o FILE.pcapng`` writes a pcapng file (the IETF
draft "PCAP Now Generic"), little-endian: a Section Header Block, one Interface
Description Block and one Enhanced Packet Block per transaction summary (a raw trace is
decoded in software first, as for the table and the CSV).

- The interface's link type is one of the sixteen LINKTYPE_USER types kept for private
  use (:data:`LINKTYPE`), its snapshot length the packet size, its ``if_name`` ``pcispy``
  and its ``if_description`` the bus width and clock.
- Time stamps are nanoseconds (``if_tsresol`` 9) from clock 0 of the trace: a transaction
  starting at clock N is at N x 30 ns on a 33 MHz bus, N x 15 ns at 66 MHz (another clock
  is rounded to the ns: ``vcd_clock_period`` of pcispy/trace/vcd.py). Wireshark shows
  clock 0 as 1970-01-01 00:00:00 UTC; ``frame.time_relative`` counts from the first
  transaction.
- Each packet is laid out by :data:`PACKET_FIELDS`, the one declaration the writer, the
  reader (:func:`read_pcapng`) and the dissector use (:func:`packet_markdown` tabulates
  it for docs/trace-format.md).
- What the trace says beside its transactions (records lost, a segmented capture's
  segments, the trigger, the trigger input's markers, protocol violations) is the
  section's comments (``opt_comment``), a line each, as under the table; a transaction
  after records lost carries the ``lost_before`` flag. Segments and markers leave the
  packet layout as it is.

The dissector, contrib/wireshark/pcispy.lua, reads the layout from tables that
``python -m pcispy.trace.pcapng`` writes into it from these declarations (a test fails when
they are out of date). It registers the protocol ``pcispy`` for the link type.
Every packet field is a display-filter field ``pcispy.NAME``: ``pcispy.cmd == "MW"``,
``pcispy.addr >= 0x80000000``, ``pcispy.term != "completion"``; a flag is true or false
(``pcispy.flags.lost_before == 1``: the name alone matches every packet). Beside them
``pcispy.wait`` is the sum of the two wait-state counts (the CSV's ``wait``), and the Info
column reads like ``MW 0x80010000 len 16 completion``. Load the dissector for one run with
``wireshark -X lua_script:contrib/wireshark/pcispy.lua capture.pcapng`` (``tshark -X``
alike), or copy the file into the personal Lua plugins folder (Help > About Wireshark >
Folders) to have it at every start.
"""

import argparse
import struct
import sys
from collections import namedtuple
from pathlib import Path

import numpy as np

from pcispy import __version__
from pcispy.host.errors import PcispyError
from pcispy.pci.bus import COMMAND_MNEMONICS, TERMINATION_NAMES, Command, DevselSpeed
from pcispy.spy.format import CaptureMode, RecordKind
from pcispy.trace.decode import iter_summaries, lost_marks
from pcispy.trace.events import note_lines, trace_events, without_devsel
from pcispy.trace.vcd import vcd_clock_period

__all__ = ["LINKTYPE_USER0", "USER_LINK", "LINKTYPE", "PACKET_VERSION", "PACKET_FIELDS",
           "PACKET_DTYPE", "PACKET_BYTES", "PACKET_FLAGS", "DEVSEL_NONE", "VALUE_NAMES",
           "TSRESOL_NS", "nanoseconds", "section_header", "interface_description",
           "enhanced_packets", "write_packets", "write_pcapng_parts", "Capture", "read_pcapng",
           "packet_markdown", "dissector_tables", "dissector_lua",
           "DISSECTOR_PATH", "main"]

#: LINKTYPE_USER0: the first of the link types 147..162 tcpdump.org keeps for private use.
LINKTYPE_USER0 = 147
#: Which of them the packets are: not USER0, the one examples and other tools take first,
#: so that it is less likely to meet a dissector a user has already registered.
USER_LINK = 7
#: The interface's link type.
LINKTYPE = LINKTYPE_USER0 + USER_LINK

#: The layout version in every packet's first byte: a change of :data:`PACKET_FIELDS`
#: takes the next one, so that a dissector never misreads another layout.
PACKET_VERSION = 1
#: The ``devsel`` byte of a transaction no target claimed (a master abort).
DEVSEL_NONE = 0xFF

#: The packet, in order: ``(name, numpy type, label, shown as)``; a field is ``pcispy.NAME``
#: in Wireshark. Shown as ``dec``/``hex``: a number; ``name``: a string field holding the
#: byte's name from :data:`VALUE_NAMES` (filter by name, ``pcispy.term == "retry"``);
#: ``flags``: the bits of :data:`PACKET_FLAGS`. The counts saturate where the summary's
#: fields do (:class:`~pcispy.spy.format.SummaryRecord`).
PACKET_FIELDS = (
    ("version", "u1", "Layout version", "dec"),
    ("trans", "u8", "Transaction number (from 1)", "dec"),
    ("clock", "u8", "Start clock (the address phase)", "dec"),
    ("cmd", "u1", "Command", "name"),
    ("rw", "u1", "Read/write", "name"),
    ("addr", "u8", "Address", "hex"),
    ("len", "u2", "Data phases", "dec"),
    ("dur", "u2", "Duration (clocks)", "dec"),
    ("lat", "u2", "First-data latency (clocks)", "dec"),
    ("iwait", "u2", "Initiator wait states", "dec"),
    ("twait", "u2", "Target wait states", "dec"),
    ("term", "u1", "Termination", "name"),
    ("devsel", "u1", "DEVSEL# timing", "name"),
    ("data", "u4", "First data word (AD[31:0])", "hex"),
    ("be", "u1", "C/BE#[7:0] of the first data phase (pin levels)", "hex"),
    ("master", "u1", "Master (1 + its GNT# line, 0 unknown)", "dec"),
    ("filters", "u1", "Filters matched (a bit per comparator)", "hex"),
    ("flags", "u1", "Flags", "flags"),
)

#: The packet as a numpy dtype: packed, little-endian.
PACKET_DTYPE = np.dtype([(name, "<" + kind) for name, kind, _, _ in PACKET_FIELDS])
#: Bytes in a packet.
PACKET_BYTES = PACKET_DTYPE.itemsize

#: The bits of ``flags``: ``(name, mask, label, warn)``; ``warn``: Wireshark's expert info
#: warns of a packet with the bit set. A flag is ``pcispy.flags.NAME``.
PACKET_FLAGS = (
    ("lost_before", 0x01, "Records lost before this transaction", True),
    ("dac", 0x02, "Dual address cycle", False),
    ("is64", 0x04, "64-bit transfer (REQ64# and ACK64#)", False),
    ("parity_error", 0x08, "Parity error (PAR/PAR64 mismatch, PERR# or SERR#)", True),
)

#: The names of the ``name`` fields' bytes: the CLI's command mnemonics, R or W, the
#: export's termination names, DEVSEL# speeds (``none``: a master abort).
VALUE_NAMES = {
    "cmd": {command.value: name for command, name in COMMAND_MNEMONICS.items()},
    "rw": {0: "W", 1: "R"},
    "term": {term.value: name for term, name in TERMINATION_NAMES.items()},
    "devsel": {**{speed.value: speed.name.lower() for speed in DevselSpeed},
               DEVSEL_NONE: "none"},
}

#: ``if_tsresol`` of nanoseconds (10^-9 s).
TSRESOL_NS = 9

# Block types, the byte-order magic and the option codes used (pcapng draft, section 4).
_SECTION_HEADER, _INTERFACE, _ENHANCED_PACKET = 0x0A0D0D0A, 0x00000001, 0x00000006
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_OPT_END, _OPT_COMMENT = 0, 1
_SHB_USERAPPL = 4
_IF_NAME, _IF_DESCRIPTION, _IF_TSRESOL = 2, 3, 9

#: An Enhanced Packet Block of one packet (no options), as numpy writes it.
_EPB_DTYPE = np.dtype([("type", "<u4"), ("length", "<u4"), ("interface", "<u4"),
                       ("ts_high", "<u4"), ("ts_low", "<u4"), ("captured", "<u4"),
                       ("original", "<u4"), ("packet", PACKET_DTYPE)]
                      + ([("pad", f"V{-PACKET_BYTES % 4}")] if PACKET_BYTES % 4 else [])
                      + [("length_again", "<u4")])


def _padded(data):
    """``data`` with zero bytes to a multiple of 4 (every block body and option value)."""
    return data + bytes(-len(data) % 4)


def _options(options):
    """An option list: ``(code, bytes)`` each, then opt_endofopt; nothing for none."""
    if not options:
        return b""
    return b"".join(struct.pack("<HH", code, len(value)) + _padded(value)
                    for code, value in options) + struct.pack("<HH", _OPT_END, 0)


def _block(kind, body):
    """A block: type, total length, ``body`` padded, the total length again."""
    body = _padded(body)
    length = 12 + len(body)
    return struct.pack("<II", kind, length) + body + struct.pack("<I", length)


def _text(value):
    """An option's string value: UTF-8, as pcapng's strings are."""
    return value.encode("utf-8")


def section_header(comments=(), application=None):
    """A Section Header Block (version 1.0, section length unknown) with one
    ``opt_comment`` per line of ``comments`` and ``shb_userappl`` ``application``."""
    options = [(_OPT_COMMENT, _text(line)) for line in comments]
    if application:
        options.append((_SHB_USERAPPL, _text(application)))
    return _block(_SECTION_HEADER, struct.pack("<IHHq", _BYTE_ORDER_MAGIC, 1, 0, -1)
                  + _options(options))


def interface_description(name, description):
    """The Interface Description Block: :data:`LINKTYPE`, snapshot length
    :data:`PACKET_BYTES`, ``if_name``, ``if_description`` and ``if_tsresol`` 9 (ns)."""
    options = [(_IF_NAME, _text(name)), (_IF_DESCRIPTION, _text(description)),
               (_IF_TSRESOL, bytes([TSRESOL_NS]))]
    return _block(_INTERFACE, struct.pack("<HHI", LINKTYPE, 0, PACKET_BYTES)
                  + _options(options))


def enhanced_packets(packets, timestamps):
    """One Enhanced Packet Block per packet (:data:`PACKET_DTYPE`) on interface 0, at
    ``timestamps`` (ns, unsigned 64-bit), as bytes."""
    blocks = np.zeros(len(packets), dtype=_EPB_DTYPE)
    blocks["type"] = _ENHANCED_PACKET
    blocks["length"] = blocks["length_again"] = _EPB_DTYPE.itemsize
    stamps = np.asarray(timestamps, dtype=np.uint64)
    blocks["ts_high"] = stamps >> np.uint64(32)
    blocks["ts_low"] = stamps & np.uint64(0xFFFF_FFFF)
    blocks["captured"] = blocks["original"] = PACKET_BYTES
    blocks["packet"] = packets
    return blocks.tobytes()


def nanoseconds(clocks, period_ps):
    """``clocks`` (bus clocks) as pcapng time stamps in ns at ``period_ps`` ps a clock:
    exact for a whole number of ns a clock (30 000 ps: 30 ns), else rounded to the ns.
    Raises :class:`PcispyError` for a clock before 0 or past what 64 bits of ns hold."""
    clocks = np.asarray(clocks, dtype=np.int64)
    if not len(clocks) or not clocks.any():
        return np.zeros(len(clocks), dtype=np.uint64)
    if clocks.min() < 0:
        raise PcispyError(f"cannot write a pcapng: a transaction at clock {clocks.min()}, "
                          "before clock 0 (pcapng time stamps have no time before it)")
    if int(clocks.max()) * period_ps // 1000 >> 64:
        raise PcispyError(f"cannot write a pcapng: clock {clocks.max()} at {period_ps} ps a "
                          "clock is past what a pcapng time stamp holds (2^64 ns)")
    whole, part = divmod(period_ps, 1000)
    clocks = clocks.astype(np.uint64)
    return clocks * np.uint64(whole) + np.rint(clocks * (part / 1000)).astype(np.uint64)


#: Packets written at a time: a block of bytes of a few MB whatever the trace's size.
_CHUNK = 1 << 16


def write_packets(out, packets, timestamps, *, name, description, comments=(),
                 application=None):
    """Write a whole pcapng file to the binary stream ``out``: :func:`section_header`
    (``comments``, ``application``), :func:`interface_description` (``name``,
    ``description``), then :func:`enhanced_packets` of ``packets`` at ``timestamps``."""
    write_pcapng_parts(out, [(packets, timestamps)], name=name, description=description,
                       comments=comments, application=application)


def write_pcapng_parts(out, parts, *, name, description, comments=(), application=None):
    """:func:`write_packets` of packets that come in ``parts``: an iterable of ``(packets,
    timestamps)``, written as each arrives (a trace of millions of transactions in
    bounded memory); the bytes are those of :func:`write_packets` of them all at once."""
    out.write(section_header(comments, application))
    out.write(interface_description(name, description))
    for packets, timestamps in parts:
        for start in range(0, len(packets), _CHUNK):
            out.write(enhanced_packets(packets[start:start + _CHUNK],
                                       timestamps[start:start + _CHUNK]))


#: What :func:`read_pcapng` found: the section's ``comments`` (list of str) and
#: ``application`` (str or None), ``interfaces`` (one dict per IDB: ``linktype``,
#: ``snaplen``, ``name``, ``description``, ``tsresol``), and the ``packets``
#: (:data:`PACKET_DTYPE`) with their ``timestamps`` (in their interface's resolution).
Capture = namedtuple("Capture", "comments application interfaces packets timestamps")


def _read_options(blob, offset, end, where):
    """``[(code, bytes)]`` of the option list in ``blob[offset:end]``."""
    options = []
    while offset + 4 <= end:
        code, length = struct.unpack_from("<HH", blob, offset)
        if code == _OPT_END:
            break
        if offset + 4 + length > end:
            raise PcispyError(f"{where}: option {code} at byte {offset} runs past its block")
        options.append((code, bytes(blob[offset + 4:offset + 4 + length])))
        offset += 4 + length + (-length % 4)
    return options


def _option_text(options, code):
    """The first string option ``code`` of ``options``, or None."""
    found = [value.decode("utf-8") for option, value in options if option == code]
    return found[0] if found else None


def read_pcapng(blob, where="pcapng"):
    """Read a pcapng file of :func:`write_packets` (``blob``: its bytes): one little-endian
    section of pcispy packets. Other block types are passed over; a packet on another link
    type or of another size, or a damaged block, raises :class:`PcispyError` naming the
    byte offset (``where`` names the file)."""
    blob = memoryview(bytes(blob))
    comments, application, interfaces = [], None, []
    packets, stamps = [], []
    offset = 0
    while offset < len(blob):
        if offset + 12 > len(blob):
            raise PcispyError(f"{where}: {len(blob) - offset} bytes at byte {offset} are not "
                              "a block")
        kind, length = struct.unpack_from("<II", blob, offset)
        if offset == 0 and (kind != _SECTION_HEADER or
                            struct.unpack_from("<I", blob, 8)[0] != _BYTE_ORDER_MAGIC):
            raise PcispyError(f"{where}: not a little-endian pcapng file")
        if length < 12 or length % 4 or offset + length > len(blob) or \
                struct.unpack_from("<I", blob, offset + length - 4)[0] != length:
            raise PcispyError(f"{where}: damaged block at byte {offset} (length {length})")
        body, end = offset + 8, offset + length - 4
        if kind == _SECTION_HEADER:
            options = _read_options(blob, body + 16, end, where)
            comments += [value.decode("utf-8") for code, value in options
                         if code == _OPT_COMMENT]
            application = _option_text(options, _SHB_USERAPPL)
        elif kind == _INTERFACE:
            linktype, _, snaplen = struct.unpack_from("<HHI", blob, body)
            options = _read_options(blob, body + 8, end, where)
            resolution = [value[0] for code, value in options if code == _IF_TSRESOL]
            interfaces.append({"linktype": linktype, "snaplen": snaplen,
                               "name": _option_text(options, _IF_NAME),
                               "description": _option_text(options, _IF_DESCRIPTION),
                               "tsresol": resolution[0] if resolution else 6})
        elif kind == _ENHANCED_PACKET:
            interface, high, low, captured = struct.unpack_from("<IIII", blob, body)
            if interface >= len(interfaces) or \
                    interfaces[interface]["linktype"] != LINKTYPE or captured != PACKET_BYTES:
                raise PcispyError(f"{where}: the packet at byte {offset} is not a pcispy "
                                  f"packet (link type {LINKTYPE}, {PACKET_BYTES} bytes)")
            packets.append(blob[body + 20:body + 20 + PACKET_BYTES])
            stamps.append(high << 32 | low)
        offset += length
    return Capture(comments, application, interfaces,
                   np.frombuffer(b"".join(packets), dtype=PACKET_DTYPE),
                   np.array(stamps, dtype=np.uint64))


def packet_markdown():
    """The packet in Markdown, for docs/trace-format.md: the link type, size and layout
    version, a table of the fields (offset, bytes, filter field, meaning; a ``name`` field
    lists its names) and one of the flags."""
    lines = [f"Link type `LINKTYPE_USER{USER_LINK}` ({LINKTYPE}). A packet is "
             f"{PACKET_BYTES} bytes, layout version {PACKET_VERSION}, little-endian "
             "numbers:", "", "| Offset | Bytes | Field | Meaning |", "|---|---|---|---|"]
    for name, _, label, shown in PACKET_FIELDS:
        if shown == "name":
            label += ": " + ", ".join(f"{value} `{text}`"
                                      for value, text in sorted(VALUE_NAMES[name].items()))
        lines.append(f"| {PACKET_DTYPE.fields[name][1]} | {PACKET_DTYPE[name].itemsize} | "
                     f"`pcispy.{name}` | {label} |")
    lines += ["", "| Flag bit | Field | Meaning |", "|---|---|---|"]
    for name, mask, label, warn in PACKET_FLAGS:
        lines.append(f"| `0x{mask:02x}` | `pcispy.flags.{name}` | {label}"
                     f"{' (an expert-info warning)' if warn else ''} |")
    return "\n".join(lines) + "\n"


# -- the dissector ----------------------------------------------------------------------------

#: The dissector in the source tree.
DISSECTOR_PATH = Path(__file__).resolve().parents[2] / "contrib" / "wireshark" / "pcispy.lua"
#: The lines around the dissector's generated part (:func:`dissector_tables`).
_BEGIN = "-- BEGIN generated by `python -m pcispy.trace.pcapng`: do not edit, regenerate.\n"
_END = "-- END generated\n"


def _lua_string(text):
    """A Lua string literal of ``text`` (the declarations' labels and names are ASCII)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _lua_names():
    """The Lua table of :data:`VALUE_NAMES`, a few names a line."""
    lines = ["-- The names of the enumerated bytes, by value.", "local names = {"]
    for field, names in VALUE_NAMES.items():
        lines.append(f"    {field} = {{")
        row = ""
        for value, name in sorted(names.items()):
            entry = f"[{value}] = {_lua_string(name)},"
            if row and len(row) + 1 + len(entry) > 96:
                lines.append(row)
                row = ""
            row = f"{row} {entry}" if row else " " * 8 + entry
        lines += [row, "    },"]
    return lines + ["}"]


def _lua_layout():
    """The Lua tables of :data:`PACKET_FIELDS` and :data:`PACKET_FLAGS`, and the range of
    the wait states' sum."""
    lines = ["-- The packet: name, offset, size in bytes, label, shown as.", "local layout = {"]
    for name, _, label, shown in PACKET_FIELDS:
        offset = PACKET_DTYPE.fields[name][1]
        size = PACKET_DTYPE[name].itemsize
        lines.append(f"    {{{_lua_string(name)}, {offset}, {size}, {_lua_string(label)}, "
                     f"{_lua_string(shown)}}},")
    lines += ["}", "", "-- The flags' bits: name, mask, label, warn.", "local flags = {"]
    for name, mask, label, warn in PACKET_FLAGS:
        lines.append(f"    {{{_lua_string(name)}, 0x{mask:02x}, {_lua_string(label)}, "
                     f"{'true' if warn else 'false'}}},")
    # The two counts are neighbours (iwait, then twait): the sum's range covers both.
    first = PACKET_DTYPE.fields["iwait"][1]
    end = PACKET_DTYPE.fields["twait"][1] + PACKET_DTYPE["twait"].itemsize
    lines += ["}", "", "-- The bytes the sum of the wait states is over: offset, size.",
              f"local wait_range = {{{first}, {end - first}}}"]
    return lines


def dissector_tables():
    """The generated part of the dissector: the layout version, :data:`PACKET_BYTES`,
    :data:`USER_LINK`, and :data:`VALUE_NAMES`, :data:`PACKET_FIELDS` (with each field's
    offset and size) and :data:`PACKET_FLAGS` as Lua tables."""
    lines = ["-- The layout version this file reads (the packet's first byte), the packet's",
             "-- size, and the link type's LINKTYPE_USER number.",
             f"local VERSION = {PACKET_VERSION}", f"local PACKET_BYTES = {PACKET_BYTES}",
             f"local USER_LINK = {USER_LINK}", ""]
    lines += _lua_names() + [""] + _lua_layout()
    return "\n".join(lines) + "\n"


def dissector_lua(text):
    """``text`` (the dissector's) with its generated part made :func:`dissector_tables`."""
    head, begin, rest = text.partition(_BEGIN)
    _, end, tail = rest.partition(_END)
    if not begin or not end:
        raise PcispyError(f"{DISSECTOR_PATH.name} has lost its {_BEGIN.strip()!r} or "
                          f"{_END.strip()!r} line")
    return head + _BEGIN + dissector_tables() + _END + tail


# Transactions of a trace as packets.

#: The packet fields of :mod:`pcispy.trace.pcapng` that are a summary field as it is.
_PACKET_SUMMARY_FIELDS = {
    "cmd": "command", "term": "termination", "be": "first_be", "master": "master",
    "clock": "timestamp", "addr": "address", "data": "first_data", "len": "data_phases",
    "dur": "duration", "lat": "latency", "iwait": "initiator_wait",
    "twait": "target_wait", "filters": "filters",
}
#: Whether each command code reads (``rw`` 1) or writes (0).
_READS = np.array([Command(code).is_read for code in range(len(Command))])


def pcapng_packets(summaries, lost, first=1):
    """The pcapng packets (:data:`~pcispy.trace.PACKET_DTYPE`) of ``summaries``,
    numbered from ``first``; ``lost``: ``(n,) bool``, records were lost before each
    transaction (:func:`lost_before`)."""
    packets = np.zeros(len(summaries), dtype=PACKET_DTYPE)
    packets["version"] = PACKET_VERSION
    packets["trans"] = np.arange(first, first + len(summaries))
    for packet_field, summary_field in _PACKET_SUMMARY_FIELDS.items():
        packets[packet_field] = summaries[summary_field]
    packets["rw"] = _READS[summaries["command"]]
    packets["devsel"] = np.where(without_devsel(summaries["termination"],
                                                 summaries["devsel"]),
                                 DEVSEL_NONE, summaries["devsel"])
    # Every flag but lost_before is the summary's one-bit field of its name.
    flags = {"lost_before": np.asarray(lost, dtype=bool)}
    for name, mask, *_ in PACKET_FLAGS:
        bits = flags[name] if name in flags else summaries[name].astype(bool)
        packets["flags"] |= np.where(bits, mask, 0).astype(np.uint8)
    return packets


def lost_before(trace, summaries):
    """``(n,) bool`` over ``summaries`` of ``trace`` (:func:`~pcispy.trace.decode.summarise`):
    records were lost between the transaction and the one before it (the first: before it).
    A summary capture knows where its OVERRUN records stand among its summaries; a raw
    capture decodes anew after each (:func:`~pcispy.trace.decode.after_lost_records`), so a
    transaction is marked when it is the first to start from such a record's clock on."""
    marks = _LostBefore(trace)
    return marks(summaries)


class _LostBefore:
    """:func:`lost_before` of the summaries of ``trace`` taken a part at a time, in order:
    each call marks the next part."""
    def __init__(self, trace):
        self.trace = trace
        if trace.mode is CaptureMode.SUMMARY:
            self.runs = trace.chunks()
            self.overrun = False
            self.pending = np.zeros(0, dtype=bool)
        else:
            # The clocks where decoding started again after lost records (one per
            # overrun at most).
            restarts, start, overrun = [], None, False
            for _, chunk in trace.chunks():
                times = chunk.times(start)
                start = chunk.time_after(times)
                lost, overrun = lost_marks(chunk, overrun)
                restarts.append(times[chunk.indices(RecordKind.RAW)][lost])
            self.restarts = np.sort(np.concatenate(restarts)) if restarts else \
                np.zeros(0, np.int64)
            self.before = 0

    def __call__(self, summaries):
        if self.trace.mode is CaptureMode.SUMMARY:
            # A summary is marked when an OVERRUN record comes between it and the summary
            # before it: the marks of the summary records, run by run.
            while len(self.pending) < len(summaries):
                _, chunk = next(self.runs)
                lost, self.overrun = lost_marks(chunk, self.overrun, RecordKind.SUMMARY)
                self.pending = np.concatenate([self.pending, lost])
            marks, self.pending = self.pending[:len(summaries)], self.pending[len(summaries):]
            return marks
        before = np.searchsorted(self.restarts, summaries["timestamp"].astype(np.int64),
                                 side="right")
        marks = np.diff(before, prepend=self.before) > 0
        if len(before):
            self.before = int(before[-1])
        return marks


def write_pcapng(trace, out, latency_timer=None, events=None,
                 chunk_records=None):
    """Write the transactions of ``trace`` to the binary stream ``out`` as pcapng
    (:mod:`pcispy.trace.pcapng`): a packet each (:func:`pcapng_packets`), time-stamped at
    :func:`vcd_clock_period` of the metadata's ``clock_mhz``, and the lines under the table
    (:func:`note_lines`; ``events``: :func:`trace_events`, found when not given) as the
    section's comments; decoded and written a run of ``chunk_records`` records at a time.
    Returns the number of transactions."""
    events = trace_events(trace) if events is None else events
    clock_mhz = trace.metadata["clock_mhz"]
    period = vcd_clock_period(clock_mhz)
    marks = _LostBefore(trace)
    count = [0]

    def parts():
        for summaries in iter_summaries(trace, latency_timer, chunk_records):
            packets = pcapng_packets(summaries, marks(summaries), count[0] + 1)
            count[0] += len(summaries)
            yield packets, nanoseconds(summaries["timestamp"], period)
    write_pcapng_parts(
        out, parts(), name="pcispy",
        description=f"transactions of a {trace.width}-bit PCI bus at {clock_mhz:g} MHz "
                    f"({period} ps a clock)",
        comments=note_lines(trace, events), application=f"pcispy {__version__}")
    return count[0]


def main(argv=None):
    """Rewrite the generated part of contrib/wireshark/pcispy.lua (a test compares it with
    :func:`dissector_tables`, so that it cannot go stale)."""
    argparse.ArgumentParser(prog="python -m pcispy.trace.pcapng",
                            description="Regenerate the tables of the Wireshark dissector "
                                        f"{DISSECTOR_PATH}.").parse_args(argv)
    DISSECTOR_PATH.write_text(dissector_lua(DISSECTOR_PATH.read_text()))
    print(f"wrote {DISSECTOR_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
