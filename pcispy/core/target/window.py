# SPDX-License-Identifier: BSD-2-Clause
"""What the target is told: how it serves each BAR (:class:`Window`), the exerciser's
programmed response (:class:`ResponseKnobs`), its buffer depths and the latency limits it
keeps on plain windows."""

from dataclasses import dataclass
from typing import Optional

from amaranth import Cat, Const
from amaranth.lib import data

__all__ = ["Window", "ResponseKnobs", "in_abort_range", "WRITE_FIFO_DEPTH",
           "READ_FIFO_DEPTH", "INITIAL_STALL_LIMIT", "SUBSEQUENT_STALL_LIMIT"]

#: Posted write buffer depth (words). Four keep zero-wait write bursts flowing.
WRITE_FIFO_DEPTH = 4
#: Read prefetch buffer depth (words), enough to cover one clock of backend latency.
READ_FIFO_DEPTH = 4
#: Plain windows whose backend stalls: STOP# (retry) on clock 16 at the latest (16 clocks
#: of initial latency, address phase = clock 1, first decision for clock 3), and
#: disconnect without data 8 clocks after the last data phase.
INITIAL_STALL_LIMIT = 13
#: (See :data:`INITIAL_STALL_LIMIT`.)
SUBSEQUENT_STALL_LIMIT = 7


@dataclass(frozen=True)
class Window:
    """How the target serves one BAR.

    ``bar`` is its :class:`~pcispy.core.config.BarSpec`; ``data_width`` the
    backend word (32, or 64 for a window that may answer 64-bit transfers); ``prefetch``
    allows reading ahead (no read side effects); ``exerciser`` applies the programmed
    response; ``ack64_bit``, for a 64-bit window, is the offset bit that selects 32-bit
    answers when set (None: every aligned REQ64# transaction gets ACK64#);
    ``read_only`` windows accept writes and drop them (the backend never sees a write).
    """
    bar: object
    data_width: int = 32
    prefetch: bool = False
    exerciser: bool = False
    ack64_bit: Optional[int] = None
    read_only: bool = False

    @property
    def addr_bits(self):
        return max(self.bar.size_bits - (3 if self.data_width == 64 else 2), 1)


class ResponseKnobs(data.Struct):
    """The exerciser's programmed response, as the target applies it.

    ``devsel_delay``: clocks after medium timing (1 slow, 2 subtractive). ``initial_wait``:
    extra clocks before the first TRDY#. ``wait_every``/``wait_clocks``: after every
    ``wait_every`` data phases, TRDY# stays deasserted ``wait_clocks`` clocks (0: none).
    ``disconnect_after``: STOP# on phase N (with data) or after it (without); 0: never.
    ``abort_enable``/``abort_first``/``abort_last``: target abort when a data phase
    addresses a byte offset in [first, last]. ``ack64``: answer 64-bit where allowed.
    ``corrupt``: invert PAR of every read data word loaded while set. ``corrupt_once``:
    invert PAR of the next read data word loaded (the response disarms it when it sees
    ``corrupt_taken``, a clock later; the target skips the word loaded in between).
    """
    devsel_delay:     2
    initial_wait:     8
    wait_every:       8
    wait_clocks:      4
    disconnect_after: 8
    disconnect_data:  1
    abort_enable:     1
    ack64:            1
    corrupt:          1
    corrupt_once:     1
    abort_first:      32
    abort_last:       32


def in_abort_range(knobs, dword_offset):
    """The data phase at ``dword_offset`` (in its window) addresses the exerciser's abort
    range of ``knobs`` (:class:`ResponseKnobs`)."""
    byte_addr = Cat(Const(0, 2), dword_offset)
    return (byte_addr >= knobs.abort_first) & (byte_addr <= knobs.abort_last)
