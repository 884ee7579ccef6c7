# SPDX-License-Identifier: BSD-2-Clause
"""Trace memory: one interface, two implementations (block RAM, external async SRAM),
and the writer that moves records from a FIFO into it.

The memory holds ``2**addr_bits`` slots of :data:`~.format.SLOT_BITS` bits
(:class:`TraceMemorySignature`). Writes are whole slots, accepted when ``w_ready``; reads
are 32-bit words (word ``4 * slot + lane``, lane 0 = bits 31:0), requested with a one-clock
``r_en`` pulse and answered by ``r_valid`` one or more clocks later (the reader waits for
``r_valid`` before the next request). :class:`TraceBackend` turns it into the target's
backend bus, which the board puts behind BAR1.
"""

from amaranth.hdl import Module, Signal, Mux, ResetInserter, Const, Cat
from amaranth.lib import enum, memory, wiring, fifo
from amaranth.lib.wiring import In, Out

from ..pci.bus import TriStateSignature
from ..pci.target import BackendSignature
from .format import SLOT_BITS, SUMMARY_RECORD_BITS

__all__ = ["TraceMemorySignature", "BRAMTraceMemory", "SRAMSignature", "SRAMTraceMemory",
           "TraceWriter", "TraceBackend"]

_LANES = SLOT_BITS // 32


class TraceMemorySignature(wiring.Signature):
    """A trace memory, from the memory's side.

    Members:
        w_addr (In, addr_bits): slot to write; w_data (In, 128): its value;
        w_en (In, 1): write requested; w_ready (Out, 1): the write is taken this clock.
        r_addr (In, addr_bits + 2): 32-bit word to read; r_en (In, 1): request pulse;
        r_data (Out, 32), r_valid (Out, 1): the answer.
    """
    def __init__(self, addr_bits):
        self.addr_bits = addr_bits
        super().__init__({
            "w_addr": In(addr_bits), "w_data": In(SLOT_BITS), "w_en": In(1),
            "w_ready": Out(1),
            "r_addr": In(addr_bits + 2), "r_en": In(1),
            "r_data": Out(32), "r_valid": Out(1),
        })


class BRAMTraceMemory(wiring.Component):
    """Trace memory in on-chip block RAM: a write every clock, reads answered next clock.

    Ports: ``mem`` (In, TraceMemorySignature(addr_bits)).

    Parameters:
        addr_bits: log2 of the depth in slots (keep it at most ~11: Amaranth emits an
            initialiser line per word).
    """
    def __init__(self, addr_bits=10):
        self.addr_bits = addr_bits
        super().__init__({"mem": In(TraceMemorySignature(addr_bits))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.slots = slots = memory.Memory(shape=SLOT_BITS, depth=1 << self.addr_bits,
                                                   init=[])
        write = slots.write_port()
        read = slots.read_port()
        lane = Signal(2)
        p = self.mem
        m.d.comb += [
            write.addr.eq(p.w_addr), write.data.eq(p.w_data), write.en.eq(p.w_en),
            p.w_ready.eq(1),
            read.addr.eq(p.r_addr[2:]),
            p.r_data.eq(read.data.word_select(lane, 32)),
        ]
        m.d.sync += [lane.eq(p.r_addr[:2]), p.r_valid.eq(p.r_en)]
        return m


class SRAMSignature(wiring.Signature):
    """Pins of an asynchronous SRAM, from the controller's side, inside-level (the pads
    invert CE#, WE#, OE#).

    Members:
        a (Out, addr_bits): address. d (TriStateSignature(data_bits)): data.
        ce (Out, 1), we (Out, 1), oe (Out, 1): chip enable, write enable, output enable.
    """
    def __init__(self, addr_bits, data_bits):
        self.addr_bits = addr_bits
        self.data_bits = data_bits
        super().__init__({
            "a": Out(addr_bits), "d": Out(TriStateSignature(data_bits)),
            "ce": Out(1), "we": Out(1), "oe": Out(1),
        })


class _SRAMState(enum.Enum, shape=3):
    IDLE    = 0
    WRITE_A = 1   # address, data and WE# asserted
    WRITE_B = 2   # WE# released, address and data held (hold time)
    READ_A  = 3   # address and OE# asserted
    READ_B  = 4   # address stable for a whole clock: data valid, sampled at the end


class SRAMTraceMemory(wiring.Component):
    """Trace memory in an external asynchronous SRAM (Pamette's trace store).

    A slot is written as ``128 / data_bits`` SRAM words, two clocks each (WE# asserted with a
    stable address and data, then released with both held), so a slot takes
    ``2 * 128 / data_bits`` clocks: slower than one raw record per clock with a 32-bit SRAM,
    which the recorder reports as overruns. A read takes three clocks (address, access,
    sample) and waits for any write in progress.

    Ports:
        mem (In, TraceMemorySignature(addr_bits)): the trace memory interface.
        sram (Out, SRAMSignature(sram_addr_bits, data_bits)): the SRAM pins.

    Parameters:
        addr_bits: log2 of the depth in slots.
        data_bits: SRAM data width, 32, 64 or 128.
    """
    def __init__(self, addr_bits=14, data_bits=32):
        if data_bits not in (32, 64, 128):
            raise ValueError(f"SRAM data width must be 32, 64 or 128, not {data_bits}")
        self.addr_bits = addr_bits
        self.data_bits = data_bits
        self.words_per_slot = SLOT_BITS // data_bits
        self.sram_addr_bits = addr_bits + (self.words_per_slot.bit_length() - 1)
        super().__init__({
            "mem":  In(TraceMemorySignature(addr_bits)),
            "sram": Out(SRAMSignature(self.sram_addr_bits, data_bits)),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.mem
        pins = self.sram
        words = self.words_per_slot
        word_bits = words.bit_length() - 1
        lanes_per_word = self.data_bits // 32

        state = Signal(_SRAMState)
        slot = Signal(SLOT_BITS)
        base = Signal(self.addr_bits)
        word = Signal(max(word_bits, 1))
        read_addr = Signal(self.addr_bits + 2)
        read_pending = Signal()

        with m.If(p.r_en):
            m.d.sync += [read_pending.eq(1), read_addr.eq(p.r_addr)]
        m.d.sync += p.r_valid.eq(0)

        address = Signal(self.sram_addr_bits)
        if word_bits:
            m.d.comb += address.eq(base << word_bits | word)
        else:
            m.d.comb += address.eq(base)
        read_word = read_addr >> (lanes_per_word.bit_length() - 1)

        m.d.comb += p.w_ready.eq(state == _SRAMState.IDLE)
        with m.Switch(state):
            with m.Case(_SRAMState.IDLE):
                with m.If(p.w_en):
                    m.d.sync += [slot.eq(p.w_data), base.eq(p.w_addr), word.eq(0),
                                 state.eq(_SRAMState.WRITE_A)]
                with m.Elif(read_pending):
                    m.d.sync += state.eq(_SRAMState.READ_A)
            with m.Case(_SRAMState.WRITE_A):
                m.d.comb += [pins.a.eq(address), pins.d.o.eq(slot.word_select(word,
                                                                               self.data_bits)),
                             pins.d.oe.eq(1), pins.ce.eq(1), pins.we.eq(1)]
                m.d.sync += state.eq(_SRAMState.WRITE_B)
            with m.Case(_SRAMState.WRITE_B):
                m.d.comb += [pins.a.eq(address), pins.d.o.eq(slot.word_select(word,
                                                                               self.data_bits)),
                             pins.d.oe.eq(1), pins.ce.eq(1)]
                with m.If(word == words - 1):
                    m.d.sync += state.eq(_SRAMState.IDLE)
                with m.Else():
                    m.d.sync += [word.eq(word + 1), state.eq(_SRAMState.WRITE_A)]
            with m.Case(_SRAMState.READ_A):
                m.d.comb += [pins.a.eq(read_word), pins.ce.eq(1), pins.oe.eq(1)]
                m.d.sync += state.eq(_SRAMState.READ_B)
            with m.Case(_SRAMState.READ_B):
                m.d.comb += [pins.a.eq(read_word), pins.ce.eq(1), pins.oe.eq(1)]
                lane = read_addr[:lanes_per_word.bit_length() - 1] if lanes_per_word > 1 \
                    else Const(0)
                m.d.sync += [p.r_data.eq(pins.d.i.word_select(lane, 32)), p.r_valid.eq(1),
                             read_pending.eq(0), state.eq(_SRAMState.IDLE)]
        return m


class TraceWriter(wiring.Component):
    """A FIFO of records and the sequencer writing them, slot by slot, into trace memory.

    Records are written at consecutive slots from slot 0 after ``restart``, one slot each
    (``wide`` = 0) or two (``wide`` = 1, bits 127:0 first), wrapping at the end.

    Ports:
        restart (In, 1): empty the FIFO and write from slot 0 again.
        wide (In, 1): records are two slots (summary mode).
        push (In, 1), push_data (In, 256): a record into the FIFO (ignored when full).
        can_push (Out, 1): the FIFO has room. level (Out): records in the FIFO.
        idle (Out, 1): everything pushed has been written.
        mem (Out, TraceMemorySignature(addr_bits)): to the memory's write side (its read
            side is left to the owner).

    Parameters:
        addr_bits: log2 of the memory depth in slots.
        fifo_depth: records the FIFO holds.
    """
    def __init__(self, addr_bits=10, fifo_depth=16):
        self.addr_bits = addr_bits
        self.fifo_depth = fifo_depth
        super().__init__({
            "restart": In(1), "wide": In(1),
            "push": In(1), "push_data": In(SUMMARY_RECORD_BITS),
            "can_push": Out(1), "level": Out(range(fifo_depth + 1)), "idle": Out(1),
            "mem": Out(TraceMemorySignature(addr_bits)),
        })

    def elaborate(self, platform):
        m = Module()
        queue = fifo.SyncFIFOBuffered(width=SUMMARY_RECORD_BITS, depth=self.fifo_depth)
        m.submodules.queue = ResetInserter(self.restart)(queue)
        pointer = Signal(self.addr_bits)
        second = Signal()   # writing the second slot of a wide record
        p = self.mem
        m.d.comb += [
            queue.w_en.eq(self.push), queue.w_data.eq(self.push_data),
            self.can_push.eq(queue.w_rdy), self.level.eq(queue.level),
            self.idle.eq(~queue.r_rdy),
            p.w_en.eq(queue.r_rdy),
            p.w_addr.eq(pointer),
            p.w_data.eq(Mux(second, queue.r_data[SLOT_BITS:], queue.r_data[:SLOT_BITS])),
        ]
        with m.If(p.w_en & p.w_ready):
            m.d.sync += pointer.eq(pointer + 1)
            with m.If(self.wide & ~second):
                m.d.sync += second.eq(1)
            with m.Else():
                m.d.sync += second.eq(0)
                m.d.comb += queue.r_en.eq(1)
        with m.If(self.restart):
            m.d.sync += [pointer.eq(0), second.eq(0)]
        return m


class TraceBackend(wiring.Component):
    """The trace memory's read port as a PCI target backend (BAR1): each request of
    ``width`` bits is read as ``width // 32`` words, one at a time, and answered in order.
    A new request is taken on the clock the previous one is answered, so block RAM is
    read at a word per clock. Writes are taken and dropped (BAR1 is read-only).

    Ports:
        bus (In, BackendSignature(addr_bits + 2 - log2(width // 32), width)): from the
            target.
        mem (Out, TraceMemorySignature(addr_bits)): to the memory's read side (its write
            side is left to the owner).

    Parameters:
        addr_bits: log2 of the memory depth in slots. width: 32 or 64.
    """
    def __init__(self, addr_bits=10, width=32):
        if width not in (32, 64):
            raise ValueError(f"backend width must be 32 or 64, not {width}")
        self.addr_bits = addr_bits
        self.width = width
        self.lanes = width // 32
        super().__init__({
            "bus": In(BackendSignature(addr_bits + 3 - self.lanes, width)),
            "mem": Out(TraceMemorySignature(addr_bits)),
        })

    def elaborate(self, platform):
        m = Module()
        bus, mem = self.bus, self.mem
        busy = Signal()
        lane = Signal(range(self.lanes))
        word = Signal(self.addr_bits + 2)
        low = Signal(32)            # the first word of a 64-bit answer
        last = Signal()
        m.d.comb += last.eq(mem.r_valid & (lane == self.lanes - 1))
        m.d.comb += bus.ready.eq(~busy | last)
        first_word = bus.addr if self.lanes == 1 else Cat(Const(0, 1), bus.addr)
        take = Signal()
        m.d.comb += take.eq(bus.valid & bus.ready & ~bus.write)
        with m.If(take):
            m.d.comb += [mem.r_en.eq(1), mem.r_addr.eq(first_word)]
            m.d.sync += [busy.eq(1), lane.eq(0), word.eq(first_word)]
        with m.Elif(last):
            m.d.sync += busy.eq(0)
        with m.If(busy & mem.r_valid & ~last):
            m.d.comb += [mem.r_en.eq(1), mem.r_addr.eq(word + 1)]
            m.d.sync += [lane.eq(lane + 1), word.eq(word + 1), low.eq(mem.r_data)]
        m.d.comb += [bus.r_valid.eq(busy & last),
                     bus.r_data.eq(mem.r_data if self.lanes == 1 else Cat(low, mem.r_data))]
        return m
