# SPDX-License-Identifier: BSD-2-Clause
"""An asynchronous FIFO whose read side hands out flip-flops: :class:`RegisteredAsyncFIFO`.

Written for the SDRAM trace memory's crossing (pcispy/spy/sdram.py: slots written on the
PCI clock, taken by the SDRAM controller on its own faster clock), where Amaranth's
``AsyncFIFOBuffered`` put its empty test (Gray to binary of the synchronised write
pointer, a compare) in front of its read pointer's increment and the block RAM's read
address within one SDRAM clock, the slowest path of the build at 110 MHz.

The scheme is the textbook one: each side counts in binary with one bit more than the
address (so full and empty differ), hands its count to the other side in Gray code (one
bit changes per step, so a two flip-flop synchroniser samples either the old or the new
count, never a mix) and compares it with its own. What this one adds is registers, so
every decision the read side makes starts from flip-flops and ends in flip-flops.
"""

from amaranth.hdl import Cat, Module, Mux, ResetSignal, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.cdc import AsyncFFSynchronizer, FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["RegisteredAsyncFIFO", "gray_encode", "gray_decode", "WRITE_TO_READ_CLOCKS"]

#: Read clocks from the write clock edge that takes a word to the read clock edge after
#: which ``r_rdy`` shows it, when the FIFO was empty, in the simulator (and on hardware
#: when the write pointer's synchroniser catches the change at its first edge; one more
#: when it does not): the two synchroniser flip-flops, the decoded pointer, ``avail``,
#: the block RAM read, the output register.
WRITE_TO_READ_CLOCKS = 6


def gray_encode(value):
    """The Gray code of an unsigned ``value`` (an Amaranth value or an int)."""
    return value ^ (value >> 1)


def gray_decode(code):
    """The unsigned value of the Gray code ``code`` (an Amaranth value): bit i is the
    exclusive or of bits i and up (a :class:`Signal`'s width)."""
    bits = [code[-1]]
    for i in reversed(range(len(code) - 1)):
        bits.insert(0, bits[0] ^ code[i])
    return Cat(*bits)


class RegisteredAsyncFIFO(wiring.Component):
    """A first-word-fall-through FIFO from ``w_domain`` to ``r_domain`` in block RAM.

    What is registered, and why:

    - ``r_rdy`` and ``r_data`` are flip-flops with nothing after them, so a consumer on a
      fast clock can decide from them at once. Behind them the block RAM's own output
      holds the next word (a second stage) so a word can be taken every read clock.
    - The read side's "a word is there to fetch" (``avail``) is a flip-flop too: it is
      computed a clock ahead from the read pointer and its value plus one (both kept in
      registers) against the write pointer, synchronised and decoded from Gray into a
      register of its own. The block RAM's read address is the read pointer register
      itself; its enable, the pointers' increment and the stages' moves are one gate of
      flip-flops (``avail``, the two stage flags, ``r_en``). ``avail`` uses the write
      pointer as it was a clock earlier, so it may say "empty" one clock too long, never
      "there is a word" too early.
    - ``w_rdy`` is a flip-flop: the free space after this clock's write, counted against
      the read side's count as last synchronised (which only grows), so it may say
      "full" a clock too long, never accept a word that has no room.
    - ``w_level`` is not registered: the write pointer less the synchronised count of
      words *taken* by the reader (``r_en`` with ``r_rdy``), so it counts a word until the
      reader has it, including the words in the two read stages. The block RAM holds
      ``depth`` words and a word's place is freed only when it is taken, so the FIFO
      holds ``depth`` words.

    Latency: a word written into an empty FIFO shows on ``r_rdy`` at the
    :data:`WRITE_TO_READ_CLOCKS`\\ th (6th) read clock edge after the write edge (7th when
    the synchroniser misses the change at its first edge). A word taken shows as room on
    the write side (``w_level``, then ``w_rdy`` a clock later) after one read clock (the
    Gray count's register) and three write clocks (two synchroniser flip-flops and the
    decoded count's register), at most four when the synchroniser misses.

    Reset: the write domain's reset empties the FIFO: it is carried asynchronously into
    the read domain (released on the read clock) and clears the read side's pointers and
    stages. The read side's own registers have no reset of their own, so a reset of the
    read domain alone (a PLL relocking) loses nothing and keeps the two sides' counts
    consistent.

    Ports:
        w_data (In, width), w_en (In, 1): a word to write, taken when ``w_rdy``.
        w_rdy (Out, 1): there is room (registered).
        w_level (Out, range(depth + 1)): words written and not yet taken by the reader.
        r_data (Out, width): the first word (registered). r_rdy (Out, 1): it is valid
            (registered). r_en (In, 1): take it (when ``r_rdy``).

    Parameters: width (bits of a word); depth (a power of two, 2 or more);
    w_domain, r_domain (clock domain names).
    """
    def __init__(self, width, depth, w_domain="sync", r_domain="read"):
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two, 2 or more, not {depth}")
        if w_domain == r_domain:
            raise ValueError(f"the write and read domains must differ, not both {w_domain!r}")
        self.width = width
        self.depth = depth
        self.w_domain = w_domain
        self.r_domain = r_domain
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "w_level": Out(range(depth + 1)),
            "r_data": Out(width), "r_rdy": Out(1), "r_en": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        addr_bits = (self.depth - 1).bit_length()
        count_bits = addr_bits + 1          # one more: full and empty differ
        w, r = m.d[self.w_domain], m.d[self.r_domain]

        m.submodules.storage = storage = memory.Memory(shape=self.width, depth=self.depth,
                                                       init=[])
        w_port = storage.write_port(domain=self.w_domain)
        r_port = storage.read_port(domain=self.r_domain)

        # Write side.
        w_count = Signal(count_bits)
        w_gray = Signal(count_bits)
        taken_w = Signal(count_bits)        # the reader's count, Gray, synchronised
        taken_w_bin = Signal(count_bits)
        write = Signal()
        w_next = Signal(count_bits)
        w_rdy = Signal(init=1)
        m.d.comb += [
            write.eq(self.w_en & w_rdy),
            w_next.eq(w_count + write),
            w_port.addr.eq(w_count[:addr_bits]),
            w_port.data.eq(self.w_data),
            w_port.en.eq(write),
            self.w_rdy.eq(w_rdy),
            self.w_level.eq(w_count - taken_w_bin),
        ]
        # The Gray count leaves a register and changes one bit per word; the word is in
        # the block RAM from this same edge, clocks before the reader can see the count.
        w += [w_count.eq(w_next), w_gray.eq(gray_encode(w_next)),
              taken_w_bin.eq(gray_decode(taken_w)),
              w_rdy.eq((w_next - taken_w_bin)[:count_bits] < self.depth)]

        # Read side: every register without a reset of its own (see the docstring).
        def read_reg(name, init=0, width=count_bits):
            return Signal(width, init=init, reset_less=True, name=name)
        w_gray_r = read_reg("w_gray_r")     # the writer's count, Gray, synchronised
        w_bin_r = read_reg("w_bin_r")
        fetch_at = read_reg("fetch_at")     # the next word to read from the block RAM
        fetch_at_1 = read_reg("fetch_at_1", init=1)
        avail = read_reg("avail", width=1)  # fetch_at != the writer's count
        staged = read_reg("staged", width=1)    # the block RAM's output holds a word
        out_valid = read_reg("out_valid", width=1)
        out_data = read_reg("out_data", width=self.width)
        taken = read_reg("taken")           # words the reader has taken
        taken_gray = read_reg("taken_gray")

        m.submodules.w_count_sync = FFSynchronizer(w_gray, w_gray_r, o_domain=self.r_domain)
        # Hazard: `taken_gray` crosses to the write domain; with the write domain's reset
        # both ends are cleared (this synchroniser at once, `taken_gray` by `clear`).
        m.submodules.taken_sync = FFSynchronizer(taken_gray, taken_w, o_domain=self.w_domain,
                                                 reset_less=False)
        # `clear` holds for three read clocks after the write reset ends, so the writer's
        # count (zero from the reset's first write clock) has flushed the synchroniser and
        # `w_bin_r` by then. The write reset must last a read clock or more.
        clear = Signal()
        m.submodules.reset_sync = AsyncFFSynchronizer(
            ResetSignal(self.w_domain, allow_reset_less=True), clear, o_domain=self.r_domain,
            stages=3)

        take = Signal()
        move = Signal()
        fetch = Signal()
        m.d.comb += [
            take.eq(self.r_en & out_valid),
            # The staged word moves out when the output is free or taken this clock.
            move.eq(staged & (~out_valid | self.r_en)),
            # A word is fetched when one is there and the stage is free or moving out.
            fetch.eq(avail & (~staged | ~out_valid | self.r_en) & ~clear),
            r_port.addr.eq(fetch_at[:addr_bits]),
            r_port.en.eq(fetch),
            self.r_data.eq(out_data),
            self.r_rdy.eq(out_valid),
        ]
        r += [w_bin_r.eq(gray_decode(w_gray_r)), taken_gray.eq(gray_encode(taken))]
        with m.If(clear):
            r += [fetch_at.eq(0), fetch_at_1.eq(1), avail.eq(0), staged.eq(0),
                  out_valid.eq(0), taken.eq(0)]
        with m.Else():
            r += [avail.eq(Mux(fetch, fetch_at_1 != w_bin_r, fetch_at != w_bin_r)),
                  staged.eq(fetch | (staged & ~move)),
                  taken.eq(taken + take)]
            with m.If(fetch):
                r += [fetch_at.eq(fetch_at_1), fetch_at_1.eq(fetch_at_1 + 1)]
            with m.If(move):
                r += [out_data.eq(r_port.data), out_valid.eq(1)]
            with m.Elif(take):
                r += out_valid.eq(0)
        return m

