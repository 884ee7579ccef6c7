# SPDX-License-Identifier: BSD-2-Clause
"""Enblom's message queue across a bridge: reads retried until the data comes, posted
writes flushed in broken bursts, reads far slower than writes.

L. Enblom, "Performance of a Communication Mechanism over the PCI-bus" (Mälardalen
University), measured two CompactPCI boards joined by an Intel 21554 bridge with a bus
analyser. Figure 8: a read of one word from the non-system board's side crosses the
bridges as a delayed read, retried every 5 clocks until the bridge has the data, 58
clocks a word. Figure 9: writes go through posted, but each 16-byte group reaches the
backplane as a one-word write and a three-word burst. Figures 7 and 10: the message
queue rewritten to use only writes moved 6.5 times the bytes.

:func:`bridge_traffic` makes pcispy's board the non-system board: its DMA engine reads
host memory one word at a time (Figure 8's reads, in the same direction), the host writes
into the board 16 bytes at a time (Figure 9's writes, flushed by the bridge onto the
board's bus as Enblom's were onto the backplane), and ``pcispy pio`` measures both
directions. The spy captures the board's bus. In the simulator the machine is
``--sim=cpci21554``: the board behind a bridge with the 21554's profile
(pcispy/sim/bfm/bridge.py); on hardware, whatever is between the host and the board.
"""

from pcispy.dma.dma_feature import dma
from pcispy.dma.dwords import pattern_dwords
from pcispy.dma.registers import Pattern
from pcispy.exerciser.pio_feature import EXERCISER_BAR, pio
from pcispy.host.board import Board
from pcispy.pci.bus import COMMAND_MNEMONICS, Command, Termination
from pcispy.app.papers.capture import captured, ns

__all__ = ["PAPER", "TITLE", "PROFILE", "FIGURE8", "FIGURE8_WORD", "FIGURE9",
           "FIGURE9_GROUP", "MESSAGE_RATES", "CPU_GAP", "WRITE_GROUP", "bridge_traffic", "run",
           "blocks", "figures", "figure8_rows", "figure9_rows", "summary_rows"]

PAPER = ('L. Enblom, "Performance of a Communication Mechanism over the PCI-bus", '
         'Mälardalen University')
#: The report's heading of this experiment.
TITLE = "Reads and writes across a bridge (the form of Enblom's Figures 8, 9 and 10)"
#: The simulated machine the experiment is shaped for (pcispy/sim/bfm/profiles.py).
PROFILE = "cpci21554"

#: Figure 8 as printed: per analyser sample, the time since the previous sample (ns) and
#: whether the read was retried or moved its word; three words, the third cut off.
FIGURE8 = ((179.4, "OK"), (956.8, "Retry"), (149.5, "Retry"), (149.5, "Retry"),
           (149.5, "Retry"), (149.5, "Retry"), (179.4, "OK"), (867.1, "Retry"),
           (149.5, "Retry"), (149.5, "Retry"), (149.5, "Retry"), (149.5, "Retry"),
           (179.4, "OK"), (837.2, "Retry"), (149.5, "Retry"), (149.5, "Retry"),
           (149.5, "Retry"))
#: What Figure 8 shows of one word (the first): attempts, the retried ones, clocks
#: between retries, clocks from its first attempt to the one that moves the word, clocks
#: from the previous word to it (the paper's sum, 1734.2 ns over 29.9 ns clocks).
FIGURE8_WORD = {"attempts": 6, "retries": 5, "retry_clocks": 5, "first_to_data_clocks": 26,
                "word_clocks": 58}
#: Figure 9 as printed: per data phase, the time since the previous one (ns) and its
#: place in a burst ("." alone, "Start", "B").
FIGURE9 = ((119.6, "."), (149.5, "Start"), (29.9, "B"), (29.9, "B"), (119.6, "."),
           (119.6, "Start"), (29.9, "B"), (29.9, "B"), (119.6, "."), (149.5, "Start"),
           (29.9, "B"), (29.9, "B"), (119.6, "."))
#: What Figure 9 shows of each 16-byte group: a one-word write and a three-word burst,
#: the burst's first word 5 clocks after the lone one, then one clock a word.
FIGURE9_GROUP = {"words_per_transaction": (1, 3), "start_clocks": 5, "clocks_per_word": 1}
#: Figures 7 and 10: messages per second and direction of the ping-pong test with reads
#: (Figure 7) and with writes only (Figure 10), by message size in bytes.
MESSAGE_RATES = {1000: (2224, 14450), 100: (15223, 36750), 10: (34000, 43150),
                 0: (45400, 45400)}
#: Clocks between the word Figure 8's reader got and its next read's first attempt
#: (956.8 ns): its CPU and local bus, which pcispy's board stands in for with a DMA gap.
CPU_GAP = 32
#: Bytes the CPU of Figure 9 wrote at once (its write-combining: 16-byte groups).
WRITE_GROUP = 16


def _words(rows):
    """Group captured reads by address: ``[(address, [rows])]`` in order."""
    groups = []
    for row in rows:
        if groups and groups[-1][0] == row["addr"]:
            groups[-1][1].append(row)
        else:
            groups.append((row["addr"], [row]))
    return groups


def _read_figures(rows):
    """Figure 8's figures from the captured reads: per word attempts, retries, clocks from
    the first attempt to the data, clocks since the previous word's data."""
    words = []
    previous = None
    for address, attempts in _words(rows):
        done = [a for a in attempts if a["term"] != Termination.RETRY.label]
        if not done:
            continue
        data_at = done[0]["answer"]
        words.append({
            "address": address, "attempts": len(attempts),
            "retries": sum(a["term"] == Termination.RETRY.label for a in attempts),
            "retry_clocks": [b["answer"] - a["answer"] for a, b in zip(attempts, attempts[1:])
                             if a["term"] == Termination.RETRY.label],
            "first_to_data_clocks": data_at - attempts[0]["answer"],
            "word_clocks": None if previous is None else data_at - previous})
        previous = data_at
    return words


def _write_figures(rows):
    """Figure 9's figures: data phases per transaction, clocks from one transaction's
    first data to the next's."""
    return {"words_per_transaction": [row["len"] for row in rows],
            "start_clocks": [b["answer"] - (a["answer"] + a["len"] - 1)
                             for a, b in zip(rows, rows[1:])]}


async def bridge_traffic(transport, *, words=6, gap=CPU_GAP - 2, write_bytes=64,
                         pio_size=1024, seed=1):
    """Enblom's Figures 8, 9 and 10 on this machine: ``words`` single-word DMA reads of
    host memory by the board, ``gap`` idle clocks apart, captured by the spy; the host's
    writes of ``write_bytes`` into the board's exerciser window, :data:`WRITE_GROUP`
    bytes at a time, captured likewise; ``pcispy pio`` of ``pio_size`` bytes with one
    data phase per transaction and with 4. Returns ``{"reads": {"rows", "words"},
    "writes": {"rows", ...figures}, "pio": [...], "clock_mhz"}``."""
    board = Board(transport)
    identity = await board.identify(drives_bus="the bridge experiment")

    buffer = await transport.dma_buffer(4 * words)
    expected = pattern_dwords(Pattern.COUNTER, seed, words)
    await buffer.write(0, b"".join(v.to_bytes(4, "little") for v in expected))

    async def reads():
        return await dma(transport, cmd=COMMAND_MNEMONICS[Command.MEM_READ],
                         addr=buffer.bus_address, length=4 * words, burst=1, idle=gap,
                         verify=True, seed=seed)
    run, read_rows = await captured(transport, [f"mem:{buffer.bus_address:#x}/0xfffff000"],
                                    reads)

    window = transport.bars[EXERCISER_BAR]
    data = bytes(range(256)) * (write_bytes // 256 + 1)

    async def writes():
        for offset in range(0, write_bytes, WRITE_GROUP):
            await transport.write_block(EXERCISER_BAR, offset,
                                        data[offset:offset + WRITE_GROUP], burst=4)
    _, write_rows = await captured(
        transport, [f"mem:{window['address']:#x}/{~(window['size'] - 1) & 0xFFFF_FFFF:#x}"],
        writes)

    directions = []
    for burst in (1, 4):
        result = await pio(transport, size=pio_size, burst=burst, seed=seed)
        directions.append({key: result[key] for key in
                           ("burst", "bytes", "write_mbps", "read_mbps", "errors")})
    return {"clock_mhz": identity["clock_mhz"], "gap": gap,
            "reads": {"rows": read_rows, "words": _read_figures(read_rows),
                      "mismatches": run["mismatches"], "error": run["error"]},
            "writes": {"rows": write_rows, **_write_figures(write_rows)},
            "pio": directions}


async def run(transport, sizes, seed=1):
    """:func:`bridge_traffic` with the report's ``sizes``
    (:class:`~pcispy.app.report.Sizes`)."""
    return await bridge_traffic(transport, words=sizes.bridge_words,
                                write_bytes=sizes.bridge_write_bytes,
                                pio_size=sizes.bridge_pio_size, seed=seed)


# --- tables ----------------------------------------------------------------------------

def _beside(ours, papers):
    """Rows of ours and the paper's side by side (blanks where one is shorter)."""
    width = len(ours[0]) if ours else len(papers[0])
    blank = [""] * width
    return [[str(i)] + (ours[i] if i < len(ours) else blank)
            + (list(papers[i]) if i < len(papers) else ["", ""])
            for i in range(max(len(ours), len(papers)))]


def figure8_rows(result):
    """The reads in Figure 8's columns beside the paper's: ``[sample, TimeRel, command,
    address, status, paper's TimeRel, paper's status]`` (TimeRel: ns from the previous
    sample, a sample being a read's answer)."""
    ours, previous = [], None
    for row in result["reads"]["rows"]:
        rel = "" if previous is None else ns(row["answer"] - previous, result["clock_mhz"])
        status = "Retry" if row["term"] == Termination.RETRY.label else "OK"
        ours.append([rel, row["cmd"], f"{row['addr']:08X}", status])
        previous = row["answer"]
    return _beside(ours, [(f"{t}ns", status) for t, status in FIGURE8])


def figure9_rows(result):
    """The writes in Figure 9's columns beside the paper's, one row per data phase:
    ``[sample, TimeRel, burst, address, paper's TimeRel, paper's burst]``."""
    ours, previous = [], None
    for row in result["writes"]["rows"]:
        for phase in range(row["len"]):
            at = row["answer"] + phase
            place = "." if row["len"] == 1 else "Start" if phase == 0 else "B"
            rel = "" if previous is None else ns(at - previous, result["clock_mhz"])
            ours.append([rel, place, f"{row['addr'] + 4 * phase:08X}"])
            previous = at
    return _beside(ours, [(f"{t}ns", place) for t, place in FIGURE9])


def blocks(result):
    """The report's blocks of this experiment (see :func:`pcispy.app.report.report_blocks`)."""
    reads = result["reads"]
    return [
        ("h2", TITLE),
        ("p", f"After {PAPER}. The board reads {len(reads['words'])} words of host memory "
              f"with its DMA engine, one word per transaction and {result['gap']} idle "
              "clocks apart (Figure 8's reader: the non-system board, its CPU's time "
              "between reads), the host writes into the board's exerciser window 16 bytes "
              "at a time (Figure 9's writer), the spy captures both on the board's bus, "
              "and pcispy pio measures each direction. Columns marked 'paper' are "
              "Enblom's measurements, not ours."),
        ("table", ["Figure", "Quantity", "pcispy", "paper"], summary_rows(result)),
        ("p", "The reads in the form of Figure 8 (TimeRel: ns since the previous read's "
              "answer, Retry or the word), beside the paper's analyser samples:"),
        ("table", ["Sample", "TimeRel", "Command", "Address", "Status", "paper TimeRel",
                   "paper Status"], figure8_rows(result)),
        ("p", "The writes in the form of Figure 9 (a row per data phase; '.' a lone word, "
              "Start and B a burst), beside the paper's:"),
        ("table", ["Sample", "TimeRel", "Burst", "Address", "paper TimeRel", "paper Burst"],
         figure9_rows(result)),
    ]


def figures(result):
    """The experiment's figures beside the paper's: :func:`summary_rows`."""
    return summary_rows(result)


def summary_rows(result):
    """``[figure, quantity, pcispy, paper]``: the figures beside Enblom's."""
    words = [w for w in result["reads"]["words"]]
    later = [w for w in words if w["word_clocks"] is not None]

    def span(values):
        values = sorted(set(values))
        return "-" if not values else str(values[0]) if len(values) == 1 else \
            f"{values[0]}-{values[-1]}"
    spacing = [c for w in words for c in w["retry_clocks"]]
    rows = [
        ["Figure 8", "attempts per word", span(w["attempts"] for w in words),
         str(FIGURE8_WORD["attempts"])],
        ["Figure 8", "clocks between retries", span(spacing),
         str(FIGURE8_WORD["retry_clocks"])],
        ["Figure 8", "clocks from the first attempt to the data",
         span(w["first_to_data_clocks"] for w in words),
         str(FIGURE8_WORD["first_to_data_clocks"])],
        ["Figure 8", "clocks per word", span(w["word_clocks"] for w in later),
         str(FIGURE8_WORD["word_clocks"])],
    ]
    writes = result["writes"]
    rows += [
        ["Figure 9", "words per write transaction",
         " ".join(str(n) for n in writes["words_per_transaction"]),
         " ".join(str(n) for n in FIGURE9_GROUP["words_per_transaction"] * 2)],
        ["Figure 9", "clocks from a transaction's last word to the next one's first",
         span(writes["start_clocks"]), f"4-{FIGURE9_GROUP['start_clocks']}"],
    ]
    reads_mb, writes_mb = (MESSAGE_RATES[1000][0] * 1000 / 1e6,
                           MESSAGE_RATES[1000][1] * 1000 / 1e6)
    for entry in result["pio"]:
        rows.append(["Figures 7, 10", f"MB/s written / read, {entry['burst']} word(s) per "
                     "transaction (paper: 1000-byte messages, writes only / with reads)",
                     f"{entry['write_mbps']:.1f} / {entry['read_mbps']:.1f}",
                     f"{writes_mb:.1f} / {reads_mb:.1f}"])
    return rows
