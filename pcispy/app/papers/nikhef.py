# SPDX-License-Identifier: BSD-2-Clause
"""NIKHEF's S-LINK bandwidth against block size, with a setup per block, and what the
bus analyser shows of one block.

NIKHEF, "S-LINK performance measurements in the PC environment" (September 1998),
measured an AMCC S5933 based S-LINK card sending blocks from host memory: the driver
sets up each block (address, count, control registers), the card's DMA reads it in
short bursts, the driver polls for the end. Figure 3: bandwidth against block size,
rising to about 35 MB/s (NT source driver, Pentium Pro 200), 15 MB/s at 1 kB, almost
twice that at 2 kB, poor for short blocks. Figure 4: the analyser shows the bus busy
(IRDY# and TRDY# both asserted) about a third of the time during a block, bursts of
10-12 words with long gaps, the polling reads between them.

:func:`block_sweep` is that driver on pcispy: per block it writes the DMA engine's
address and length, starts it and polls its status (one register write per setting, as
the S5933 driver's), the engine reads the block in AMCC-like bursts (:data:`AMCC_BURST`
words, :data:`AMCC_IDLE` idle clocks between them, from Figure 4's trace), and the board's
cycle counter times all of it. The spy then captures one block. In the simulator the
machine is ``--sim=dellpro200``, a host bridge shaped after Figure 4's Pentium Pro
(pcispy/sim/bfm/profiles.py).
"""

import math

from pcispy.app.papers.capture import captured
from pcispy.board.registers import REGISTER_MAP
from pcispy.dma.dwords import pattern_dwords
from pcispy.dma.registers import Pattern
from pcispy.host.board import Board
from pcispy.host.errors import PcispyError
from pcispy.pci.bus import COMMAND_MNEMONICS, Command

__all__ = ["PAPER", "TITLE", "PROFILE", "FIGURE3", "FIGURE4", "AMCC_BURST", "AMCC_IDLE",
           "BLOCK_SIZES", "block_sweep", "block_view", "run", "blocks", "figures",
           "figure3_rows", "figure4_rows", "summary_rows", "setup_fit"]

PAPER = ('NIKHEF, "S-LINK performance measurements in the PC environment", September '
         '1998')
#: The report's heading of this experiment.
TITLE = "Bandwidth against block size (the form of NIKHEF's Figures 3 and 4)"
#: The simulated machine the experiment is shaped for (pcispy/sim/bfm/profiles.py).
PROFILE = "dellpro200"

#: Figure 3 as the paper states it (NT source driver, Pentium Pro 200): MB/s for long
#: blocks, at 1 kB, and the factor from 1 kB to 2 kB ("almost doubled").
FIGURE3 = {"asymptote_mbps": 35, "at_1k_mbps": 15, "doubling_1k_to_2k": 2}
#: Figure 4: the fraction of a block's clocks the bus moves data in, and its trace's
#: bursts: words per burst, ns from a burst's address to its first word, ns between
#: bursts.
FIGURE4 = {"busy_fraction": 1 / 3, "burst_words": (10, 12), "first_word_ns": (330, 450),
           "between_bursts_ns": (390, 540)}
#: The AMCC-like master: words per burst and idle clocks after each (Figure 4's trace:
#: 10-12 words, then about 450 ns before the next burst's address).
AMCC_BURST = 11
AMCC_IDLE = 12
#: The block sizes of the sweep (bytes), Figure 3's range.
BLOCK_SIZES = (64, 256, 1024, 2048, 4096, 16384)

_DONE_FIELDS = {"done": 1, "stopped": 1, "master_abort": 1, "target_abort": 1}
#: BAR0 offset of the ``dma`` register block (256 bytes).
_DMA_BLOCK = REGISTER_MAP["dma.control"][0]


def _pow2(size):
    return 1 << max(2, (size - 1).bit_length())


async def _enable_master(transport):
    command = await transport.config_read(0x04) & 0xFFFF
    if not command & 0x4:
        await transport.config_write(0x04, command | 0x4)


async def _block(board, address, size):
    """One block as the S5933 driver does it: address, count, start, then poll."""
    await board.write("dma.addr_lo", address)
    await board.write("dma.length", size)
    await board.write("dma.status", **_DONE_FIELDS)
    await board.write("dma.control", start=1)
    polls = 0
    while True:
        polls += 1
        status = await board.fields("dma.status")
        if status["done"] and not status["busy"]:
            break
    if status["master_abort"] or status["target_abort"]:
        raise PcispyError("the block's DMA ended in an abort")
    return polls


async def block_sweep(transport, *, sizes=BLOCK_SIZES, blocks=4, burst=AMCC_BURST,
                      idle=AMCC_IDLE, view=1024, seed=1):
    """NIKHEF's Figure 3 and 4 on this machine: for each block size in ``sizes``,
    ``blocks`` blocks read from host memory by the board's DMA engine (Memory Read
    Multiple in bursts of ``burst`` words, ``idle`` clocks apart), each set up and polled
    by the host; then one block of ``view`` bytes captured by the spy. Returns ``{"rows":
    [{"size", "mbps", "transfer_mbps", "clocks_per_block", "transfer_clocks",
    "setup_clocks", "polls"}], "view": {"rows", "busy_fraction", ...}, "fit", ...}``."""
    board = Board(transport)
    identity = await board.identify(drives_bus="the block sweep")
    clock_hz = identity["clock_hz"]
    largest = max(max(sizes), view)
    buffer = await transport.dma_buffer(largest)
    words = pattern_dwords(Pattern.COUNTER, seed, largest // 4)
    await buffer.write(0, b"".join(w.to_bytes(4, "little") for w in words))
    await _enable_master(transport)
    await board.write("dma.mode", cmd=Command.MEM_READ_MULTIPLE.value,
                      pattern=Pattern.COUNTER.value, verify=1)
    await board.write("dma.burst", phases=burst)
    await board.write("dma.idle", clocks=idle)
    await board.write("dma.seed", seed)
    await board.write("dma.addr_hi", 0)

    rows = []
    for size in sizes:
        start = await board.read64("irq.now")
        polls = 0
        for _ in range(blocks):
            polls += await _block(board, buffer.bus_address, size)
        clocks = await board.read64("irq.now") - start
        transfer = await board.read64("dma.clocks")
        if await board.read("dma.mismatches"):
            raise PcispyError(f"the {size}-byte blocks came back wrong")
        per_block = clocks / blocks
        rows.append({"size": size, "mbps": round(size * blocks * clock_hz / clocks / 1e6, 2),
                     "transfer_mbps": round(size * clock_hz / transfer / 1e6, 2),
                     "clocks_per_block": round(per_block, 1), "transfer_clocks": transfer,
                     "setup_clocks": round(per_block - transfer, 1),
                     "polls": round(polls / blocks, 1)})

    async def one_block():
        return await _block(board, buffer.bus_address, view)
    # The driver's accesses to the DMA registers and the engine's reads of the block.
    registers = transport.bars[0]["address"] + _DMA_BLOCK
    _, view_rows = await captured(
        transport, [f"mem:{registers:#x}/0xffffff00",
                    f"mem:{buffer.bus_address:#x}/{~(_pow2(largest) - 1) & 0xFFFF_FFFF:#x}"],
        one_block)
    return {"clock_mhz": identity["clock_mhz"], "burst": burst, "idle": idle,
            "blocks": blocks, "rows": rows, "fit": setup_fit(rows),
            "view": {"size": view, **block_view(view_rows)}}


def block_view(rows):
    """Figure 4's figures of one block's captured ``rows`` (summary rows, oldest first):
    ``{"rows", "data_phases", "clocks"`` (from the first read's address to the last's
    end), ``"busy_fraction", "bursts", "retried"`` (read attempts that moved nothing),
    ``"burst_words", "first_data_clocks", "between_bursts_clocks"}`` (per burst; between
    one burst's end and the next one's address)."""
    reads = [r for r in rows if r["cmd"] == COMMAND_MNEMONICS[Command.MEM_READ_MULTIPLE]]
    moved = sum(r["len"] for r in reads)
    span = reads[-1]["time"] + reads[-1]["dur"] - reads[0]["time"] if reads else 0
    # The bursts are the reads that moved data: behind a bridge a read is retried until
    # the bridge has fetched it, and those attempts move none.
    bursts = [r for r in reads if r["len"]]
    return {"rows": rows, "data_phases": moved, "clocks": span,
            "busy_fraction": round(moved / span, 3) if span else 0.0,
            "bursts": len(bursts), "retried": len(reads) - len(bursts),
            "burst_words": [r["len"] for r in bursts],
            "first_data_clocks": [r["lat"] for r in bursts],
            "between_bursts_clocks": [b["time"] - (a["time"] + a["dur"])
                                      for a, b in zip(bursts, bursts[1:])]}


def setup_fit(rows):
    """The straight line through time per block against size (least squares): ``{"setup_us",
    "asymptote_mbps"}``, the per-block cost and the rate long blocks approach."""
    points = [(row["size"], row["size"] / row["mbps"]) for row in rows if row["mbps"]]
    if len(points) < 2:
        return None
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    slope = (sum((x - mean_x) * (y - mean_y) for x, y in points)
             / sum((x - mean_x) ** 2 for x, _ in points))
    return {"setup_us": round(mean_y - slope * mean_x, 2),
            "asymptote_mbps": round(1 / slope, 1) if slope > 0 else math.inf}


async def run(transport, sizes, seed=1):
    """:func:`block_sweep` with the report's ``sizes`` (:class:`~pcispy.app.report.Sizes`)."""
    return await block_sweep(transport, sizes=sizes.block_sizes, blocks=sizes.block_count,
                             view=min(1024, max(sizes.block_sizes)), seed=seed)


# --- tables ----------------------------------------------------------------------------

def figure3_rows(result):
    """``[block bytes, MB/s, transfer alone MB/s, setup clocks per block, polls]``."""
    return [[str(row["size"]), f"{row['mbps']:.1f}", f"{row['transfer_mbps']:.1f}",
             f"{row['setup_clocks']:.0f}", f"{row['polls']:.1f}"] for row in result["rows"]]


def figure4_rows(result, limit=24):
    """The captured block in Figure 4's trace form: ``[n, start delta ns, first data ns,
    command, address, words]`` (the first ``limit`` transactions)."""
    mhz = result["clock_mhz"]
    out = []
    for row in result["view"]["rows"][:limit]:
        out.append([str(row["trans"]), f"{row['delta'] * 1000 / mhz:.0f}ns",
                    f"{row['lat'] * 1000 / mhz:.0f}ns", row["cmd"], f"{row['addr']:08X}",
                    str(row["len"])])
    return out


def figures(result):
    """The experiment's figures beside the paper's: :func:`summary_rows`."""
    return summary_rows(result)


def summary_rows(result):
    """``[figure, quantity, pcispy, paper]``."""
    by_size = {row["size"]: row for row in result["rows"]}
    fit = result["fit"] or {}
    rows = [["Figure 3", "MB/s for long blocks (fit)", f"{fit.get('asymptote_mbps', '-')}",
             f"~{FIGURE3['asymptote_mbps']}"]]
    if 1024 in by_size:
        rows.append(["Figure 3", "MB/s at 1 kB", f"{by_size[1024]['mbps']:.1f}",
                     f"~{FIGURE3['at_1k_mbps']}"])
    if 1024 in by_size and 2048 in by_size:
        rows.append(["Figure 3", "2 kB over 1 kB",
                     f"{by_size[2048]['mbps'] / by_size[1024]['mbps']:.2f}",
                     "almost 2"])
    paper_setup = 1024 / FIGURE3["at_1k_mbps"] - 1024 / FIGURE3["asymptote_mbps"]
    rows.append(["Figure 3", "setup per block, µs (fit)", f"{fit.get('setup_us', '-')}",
                 f"{paper_setup:.0f} (from the two figures above)"])
    view = result["view"]
    mhz = result["clock_mhz"]

    def ns_span(clocks):
        return "-" if not clocks else \
            f"{min(clocks) * 1000 / mhz:.0f}-{max(clocks) * 1000 / mhz:.0f}"
    # The block's last burst carries what is left of it: the bursts before it are the
    # engine's own length.
    whole = view["burst_words"][:-1] or view["burst_words"]
    rows += [["Figure 4", "fraction of the block's clocks moving data",
              f"{view['busy_fraction']:.2f}", "about 1/3"],
             ["Figure 4", "words per burst (the block's last left out)",
              "-" if not whole else f"{min(whole)}-{max(whole)}" if min(whole) < max(whole)
              else str(whole[0]), "{}-{}".format(*FIGURE4["burst_words"])],
             ["Figure 4", "ns from a burst's address to its first word",
              ns_span(view["first_data_clocks"]), "{}-{}".format(*FIGURE4["first_word_ns"])],
             ["Figure 4", "ns from a burst's end to the next one's address",
              ns_span(view["between_bursts_clocks"]),
              "{}-{}".format(*FIGURE4["between_bursts_ns"])]]
    return rows


def blocks(result):
    """The report's blocks of this experiment (see :func:`pcispy.app.report.report_blocks`)."""
    view = result["view"]
    return [
        ("h2", TITLE),
        ("p", f"After {PAPER}. For each block size the host sets up the board's DMA engine "
              "(address, length, start: a register write each) and polls its status until "
              f"the block is read, {result['blocks']} blocks in a row timed by the board's "
              f"cycle counter; the engine reads like an AMCC S5933, {result['burst']} words "
              f"a burst and {result['idle']} idle clocks between bursts. Column 'paper' "
              "gives NIKHEF's figures, not ours (the paper states Figure 3's in its text)."),
        ("table", ["Figure", "Quantity", "pcispy", "paper"], summary_rows(result)),
        ("table", ["Block bytes", "MB/s", "MB/s of the transfer alone",
                   "Setup clocks per block", "Polls per block"], figure3_rows(result)),
        ("p", f"One {view['size']}-byte block as the spy saw it, in the form of Figure 4's "
              "trace (the driver's register writes, the engine's bursts, the polls of its "
              f"status): {view['bursts']} bursts moved data in {view['data_phases']} of the "
              f"{view['clocks']} clocks from the first burst to the last"
              + (f"; {view['retried']} more attempts were retried (a bridge fetching the "
                 "data)." if view["retried"] else ".")),
        ("table", ["Trans", "delta", "first data", "Command", "Address", "Words"],
         figure4_rows(result)),
    ]
