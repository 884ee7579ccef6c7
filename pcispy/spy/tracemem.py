# SPDX-License-Identifier: BSD-2-Clause
"""Trace memory: one interface, two implementations (block RAM, external async SRAM),
and the writer that moves records from a FIFO into it.

The memory holds ``2**addr_bits`` slots of :data:`~.format.SLOT_BITS` bits
(:class:`TraceMemorySignature`). Writes are whole slots, accepted when ``w_ready``; reads
are 32-bit words (word ``4 * slot + lane``, lane 0 = bits 31:0), requested with a one-clock
``r_en`` pulse and answered by ``r_valid`` one or more clocks later (the reader waits for
``r_valid`` before the next request). :class:`TraceBackend` turns it into the target's
backend bus, which the board puts behind BAR1.

A third implementation keeps the trace in an SDRAM (the ULX3S's 32 MB):
:class:`pcispy.spy.sdram.SDRAMTraceMemory`, with a FIFO of slots in front (docs/sdram.md).
"""

from amaranth.hdl import Module, Signal, Mux, ResetInserter, Const, Cat
from amaranth.lib import enum, io, memory, wiring, fifo
from amaranth.lib.wiring import In, Out

from pcispy.pci.bus import TriStateSignature
from pcispy.pci.backend import BackendSignature
from pcispy.spy.format import SLOT_BITS, SUMMARY_RECORD_BITS

__all__ = ["TraceMemorySignature", "BRAMTraceMemory", "SRAMSignature", "SRAMTraceMemory",
           "SRAMPads", "SRAM_PINS", "sram_simulation_ports", "TraceWriter", "TraceBackend"]

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


#: The pins of an SRAM port, by name (what ``sram_ports`` of the board holds): address,
#: data, and the active-low chip, write and output enables.
SRAM_PINS = ("a", "d", "ce_n", "we_n", "oe_n")


def sram_simulation_ports(addr_bits, data_bits):
    """``{pin: io.SimulationPort}`` for :data:`SRAM_PINS`, pin level, named ``sram_<pin>``
    (so a converted design exposes ``sram_a__o``, ``sram_d__oe``, ``sram_d__i`` ...)."""
    return {"a": io.SimulationPort("o", addr_bits, name="sram_a"),
            "d": io.SimulationPort("io", data_bits, name="sram_d"),
            **{pin: io.SimulationPort("o", 1, name=f"sram_{pin}")
               for pin in ("ce_n", "we_n", "oe_n")}}


class SRAMPads(wiring.Component):
    """The I/O buffers of an asynchronous SRAM: plain (unregistered) buffers, because
    :class:`SRAMTraceMemory` drives every pin from its own flip-flops; CE#, WE# and OE#
    are inverted here.

    Ports:
        sram (In, SRAMSignature(addr_bits, data_bits)): the controller's pins,
            inside-level.

    Parameters:
        ports: ``{pin: io port}`` for :data:`SRAM_PINS` (pin level; ``d`` bidirectional).
        addr_bits, data_bits: the SRAM's address and data widths (the ports' widths).
    """
    def __init__(self, ports, addr_bits, data_bits):
        missing = set(SRAM_PINS) - set(ports)
        if missing:
            raise ValueError(f"SRAM ports missing: {', '.join(sorted(missing))}")
        for pin, bits in (("a", addr_bits), ("d", data_bits)):
            if len(ports[pin]) != bits:
                raise ValueError(f"SRAM port {pin} is {len(ports[pin])} bits wide, not {bits}")
        self.ports = ports
        super().__init__({"sram": In(SRAMSignature(addr_bits, data_bits))})

    def elaborate(self, platform):
        m = Module()
        pins, ports = self.sram, self.ports
        m.submodules.a = a = io.Buffer("o", ports["a"])
        m.submodules.d = d = io.Buffer("io", ports["d"])
        m.d.comb += [a.o.eq(pins.a), d.o.eq(pins.d.o), d.oe.eq(pins.d.oe), pins.d.i.eq(d.i)]
        for name in ("ce", "we", "oe"):
            buffer = m.submodules[name] = io.Buffer("o", ~ports[f"{name}_n"])
            m.d.comb += buffer.o.eq(getattr(pins, name))
        return m


class _SRAMState(enum.Enum, shape=3):
    """What the pins show in this clock."""
    IDLE         = 0   # nothing enabled
    WRITE_SETUP  = 1   # address and data driven, CE#, WE# high
    WRITE_STROBE = 2   # WE# low
    WRITE_HOLD   = 3   # WE# high again, address and data still held
    READ_ACCESS  = 4   # address, CE# and OE#: the data settles
    READ_SAMPLE  = 5   # the same; sampled at the end of this clock


class SRAMTraceMemory(wiring.Component):
    """Trace memory in an external asynchronous SRAM (Pamette's trace store).

    Every pin is driven from a flip-flop (a decoded state would glitch WE# low between
    two states and write a wrong word) and every edge the SRAM cares about has a whole
    clock of margin, so pin-to-pin skew never matters: a word is written in three clocks
    (address and data set up with WE# high, WE# low, WE# high with both held), a slot
    takes ``128 / data_bits`` words and one clock in between, and a 32-bit SRAM is
    slower than one raw record per clock (the recorder reports the drops as overruns).
    A read presents the address for two clocks and samples the data at the end of the
    second (address access time up to two clocks, less pad delays); a clock with neither
    side driving the data pins separates a write from a read. A pending read goes before
    the next slot's write (the writer's FIFO absorbs it, or the drop is reported).

    Ports:
        mem (In, TraceMemorySignature(addr_bits)): the trace memory interface.
        sram (Out, SRAMSignature(sram_addr_bits, data_bits)): the SRAM pins, each from a
            flip-flop.

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
        lane_bits = (self.data_bits // 32).bit_length() - 1

        state = Signal(_SRAMState)
        slot = Signal(SLOT_BITS)
        word = Signal(max(word_bits, 1))
        read_addr = Signal(self.addr_bits + 2)
        read_pending = Signal()

        with m.If(p.r_en):
            m.d.sync += [read_pending.eq(1), read_addr.eq(p.r_addr)]
        m.d.sync += p.r_valid.eq(0)

        def word_address(slot_address, index):
            return Cat(index[:word_bits], slot_address) if word_bits else slot_address

        def release():
            # The pins of the next clock: nothing enabled.
            return [pins.ce.eq(0), pins.we.eq(0), pins.oe.eq(0), pins.d.oe.eq(0)]

        # The pins below are registered: each assignment shows on the next clock.
        m.d.comb += p.w_ready.eq((state == _SRAMState.IDLE) & ~read_pending)
        with m.Switch(state):
            with m.Case(_SRAMState.IDLE):
                with m.If(read_pending):
                    m.d.sync += [pins.a.eq(read_addr >> lane_bits), pins.ce.eq(1),
                                 pins.oe.eq(1), state.eq(_SRAMState.READ_ACCESS)]
                with m.Elif(p.w_en):
                    m.d.sync += [slot.eq(p.w_data), word.eq(0),
                                 pins.a.eq(word_address(p.w_addr, Const(0, max(word_bits, 1)))),
                                 pins.d.o.eq(p.w_data[:self.data_bits]), pins.d.oe.eq(1),
                                 pins.ce.eq(1), state.eq(_SRAMState.WRITE_SETUP)]
            with m.Case(_SRAMState.WRITE_SETUP):
                m.d.sync += [pins.we.eq(1), state.eq(_SRAMState.WRITE_STROBE)]
            with m.Case(_SRAMState.WRITE_STROBE):
                m.d.sync += [pins.we.eq(0), state.eq(_SRAMState.WRITE_HOLD)]
            with m.Case(_SRAMState.WRITE_HOLD):
                with m.If(word == words - 1):
                    m.d.sync += release() + [state.eq(_SRAMState.IDLE)]
                with m.Else():
                    following = word + 1
                    m.d.sync += [
                        word.eq(following),
                        pins.a.eq(word_address(pins.a[word_bits:], following)),
                        pins.d.o.eq(slot.word_select(following, self.data_bits)),
                        state.eq(_SRAMState.WRITE_SETUP)]
            with m.Case(_SRAMState.READ_ACCESS):
                m.d.sync += state.eq(_SRAMState.READ_SAMPLE)
            with m.Case(_SRAMState.READ_SAMPLE):
                lane = read_addr[:lane_bits] if lane_bits else Const(0)
                m.d.sync += release() + [
                    p.r_data.eq(pins.d.i.word_select(lane, 32)), p.r_valid.eq(1),
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
        pop (Out, 1): a record leaves the FIFO this clock (its last slot is written).
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
            "can_push": Out(1), "level": Out(range(fifo_depth + 1)), "pop": Out(1),
            "idle": Out(1),
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
            self.idle.eq(~queue.r_rdy), self.pop.eq(queue.r_en),
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
