# SPDX-License-Identifier: BSD-2-Clause
"""The PCI master: turns transfer descriptors into bus transactions.

The initiator takes one :class:`Descriptor` at a time (command, 64-bit address, number of
DWORDs, 64-bit wish) and runs as many bus transactions as the target lets it need: a retry
repeats the same transaction, a disconnect or a latency-timer exit continues at the next
address, a target or master abort ends the descriptor with an error. It reports every
address phase, data phase and termination as one-clock events (:class:`InitiatorEvents`)
so a DMA engine can count them without knowing the protocol.

Timing model (docs/architecture.md, "I/O timing"). Every output of this component is the
*D input* of the pads' output flip-flop: what the component drives in clock ``k`` is on the
pins in clock ``k + 1``. The component keeps a copy of what it drives on FRAME#, IRDY# and
AD (the ``pin_*`` registers). The handshake lines it must react to within one clock (GNT#,
FRAME#, IRDY#, TRDY#, STOP#, DEVSEL#, ACK64#) come through the ``now`` port: the
unregistered pin value of the current clock. They only *select*: the whole decision of a
clock (next state and outputs) is built once per value of the lines that matter in the phase
(on an FPGA; ``expand_live``). The lines choose among the copies' outputs just in front of
the pads' output flip-flops; every copy's next state is registered, with the lines, and the
state is chosen from those registers in the next clock, so that no live line reaches a state
register. The wider registers (address, DWORDs left, the clock counters) keep their value
from before the previous edge with the registered event of that edge and show the updated
value combinationally; the comparisons of them that the decisions read are registered a
clock ahead, one per value that event may take, and the event only chooses among them.
Everything the initiator tells the DMA engine (``events``, ``status``, ``wdata_take``)
leaves registered, one clock after the edge it is about. The formal job ``expansion_prove``
shows the expanded and the folded build to be the same machine. The pads' live parity check
(``par_error``) serves the two-clock PERR# rule. The pads generate PAR themselves, so the
initiator leaves ``bus.par``/``bus.par64`` alone. Read data comes through the registered
``bus.ad.i`` one clock after the data phase. Lines the pads treat as sustained tri-state
(FRAME#, IRDY#, REQ64#, PERR#) are *owned* through ``oe``: when ``oe`` drops, the pads drive
the line deasserted for one more clock and then float it, so the component simply stops
owning a line in the clock it wants it deasserted and released.

Write data is read from a *window* of the next :data:`WDATA_WINDOW` DWORDs of the data
stream (``wdata``); the initiator reports with ``wdata_take`` how many of them moved at the
previous edge (0, 1 or 2), and reads the window from there on: the stream's source
advances a clock after a phase moves. Nothing is consumed by a phase that did not
complete, so a retried or disconnected phase is simply presented again. Read data leaves
as up to two DWORDs per clock (``rdata``), one clock after their data phase.
"""

import itertools
from types import SimpleNamespace

from amaranth import Cat, Const, Module, Signal, Mux, Value
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.bus import PRESENTED_GATED, ADDecision, Command, Termination, PCIBusSignature
from pcispy.core.cells import gated_two_way, two_way
from pcispy.core.live import SLICE_PAIR_LINES, LiveLines, cells_for
from pcispy.core.pads import CORE_GATED_LINES, JOINED_LINES

__all__ = ["Descriptor", "Handshake", "ReadWords", "DescriptorResult", "InitiatorEvents",
           "InitiatorStatus", "Initiator", "MASTER_ABORT_CLOCK", "WDATA_WINDOW",
           "is_write_command", "is_memory_command"]

#: Counting the address phase as clock 1, DEVSEL# is due by clock 5 (subtractive decode);
#: with none sampled at the end of clock 5 (4 clocks after the address phase) the master
#: aborts.
MASTER_ABORT_CLOCK = 4

#: DWORDs of the write data window: up to two moved at the previous edge (not yet taken
#: from the window), up to two moving now, and the high half of the next 64-bit phase.
WDATA_WINDOW = 6


def is_write_command(cmd):
    """Data flows from the initiator: bit 0 of every write command (and Special Cycle)."""
    return cmd.as_value()[0]


def is_memory_command(cmd):
    """Memory commands: the only ones that may use 64-bit data phases."""
    return cmd.as_value().matches(Command.MEM_READ, Command.MEM_WRITE, Command.MEM_READ_MULTIPLE,
                       Command.MEM_READ_LINE, Command.MEM_WRITE_INVALIDATE)


class Descriptor(data.Struct):
    """One transfer: ``dwords`` DWORDs from byte address ``addr`` (bits 1:0 must be 0).

    ``wide`` asks for 64-bit data phases (used where the address is QWORD aligned and the
    target answers ACK64#). ``more`` says another descriptor follows at once, so REQ# stays
    asserted through this one.
    """
    cmd: Command
    addr: 64
    dwords: 32
    wide: 1
    more: 1


class Handshake(data.Struct):
    """Unregistered pin values of the current clock, inside-level (the same-clock paths)."""
    frame: 1
    irdy: 1
    trdy: 1
    stop: 1
    devsel: 1
    gnt: 1
    ack64: 1


class ReadWords(data.Struct):
    """Read data: ``count`` (0..2) DWORDs in ``dw[0]``, ``dw[1]``, in address order."""
    dw: data.ArrayLayout(32, 2)
    count: 2


class DescriptorResult(enum.Enum, shape=2):
    OK           = 0
    MASTER_ABORT = 1
    TARGET_ABORT = 2
    STOPPED      = 3


class InitiatorEvents(data.Struct):
    """One-clock events about the pins of one clock. The initiator's ``events`` port
    presents them registered: in the clock after the one they describe."""
    start: 1          # the first address phase of a transaction is on the pins next clock
    gnt_wait: 16      # with start: clocks the initiator had work but waited for GNT#/idle
    owning: 1         # we assert FRAME# or IRDY# on the pins (the bus is ours)
    phase: 1          # a data phase completed (IRDY# and TRDY# sampled asserted)
    dwords: 2         # with phase: DWORDs it moved (1, or 2 for a 64-bit phase)
    first: 1          # with phase: the first data phase of this transaction
    latency: 16       # with first: clocks from the address phase to this data phase
    end: 1            # the transaction ends with this clock (its last phase is on the pins)
    term: Termination  # with end: how it ended
    done: 1           # with end (or when stopped while idle): the descriptor is finished
    result: DescriptorResult  # with done


class InitiatorStatus(data.Struct):
    """One-clock pulses for the configuration Status register (registered, like the
    events)."""
    received_master_abort: 1   # Status bit 13
    received_target_abort: 1   # Status bit 12
    master_data_parity: 1      # Status bit 8 (PERR# asserted or seen while master)
    detected_parity: 1         # Status bit 15 (bad read-data parity detected)


class _Phase(enum.Enum, shape=2):
    """What the initiator has on the pins in the current clock."""
    IDLE = 0   # not in a transaction (the pads may still be releasing our lines)
    DAC  = 1   # first address phase of a Dual Address Cycle
    ADDR = 2   # the address phase carrying the command
    DATA = 3   # a data phase (including the read turnaround and wait states)


class Initiator(wiring.Component):
    """PCI bus master.

    Ports:
        bus (Out, PCIBusSignature(width)): o/oe toward the pads' output flip-flops; ``i``
            are the registered samples (only ``ad``/``ad_hi`` and ``perr`` are used).
            AD's word is 0 where it is not driven (the board ORs the cores' AD words).
        now (In, Handshake): unregistered handshake pins of this clock.
        gnt_allowed (In, 1, init 1): GNT# counts only while this is 1 (passive mode
            withholds it). From registers: it chooses inside the GNT# cofactors, so the
            live GNT# meets no gate of its own before the selection.
        drive_allowed (In, 1, init 1): C/BE#'s enable (``bus.cbe.oe``, ``bus.cbe_hi.oe``)
            only while this is 1 (passive mode; from a register). The pads leave C/BE# to
            the master (:data:`~.pads.CORE_GATED_LINES`): on an FPGA the gate is
            the free input of the enable's last cell, which hands the enable over in the
            tristate register's polarity, so no cell of its own follows the live lines'
            choice.
        par_error (In, 1), par64_error (In, 1): the pads' live parity check: PAR (PAR64) on
            the pins now disagrees with AD and C/BE# sampled at the previous edge.
        desc (In, stream of Descriptor): the next transfer; taken when the initiator is
            free (not in the clock after an abort: the engine learns of it a clock later).
        offer_when_free (In, 1): ``desc.valid & (desc.payload.dwords != 0)`` as it stands
            when this initiator is free (``busy`` 0): while ``busy`` is 0 the two must be
            equal. A new descriptor's start is decided on this rather than on the offer,
            which may itself wait on ``busy`` (the DMA engine offers a fresh pass only
            with the master idle), so the start does not wait on ``busy`` twice. A source
            whose offer does not depend on ``busy`` gives that value as it is.
        wdata (In, ArrayLayout(32, WDATA_WINDOW)): the next DWORDs of the write data stream,
            from the one after the words counted in ``wdata_take``'s previous value on.
        wdata_take (Out, 2): DWORDs of ``wdata`` moved on the bus at the previous edge
            (registered); the source advances its window by them at the next edge.
        rdata (Out, ReadWords): read DWORDs, one clock after their data phase.
        latency_timer (In, 8): configuration Latency Timer, in clocks.
        cache_line (In, 8): configuration Cache Line Size, in DWORDs (power of two; 0 = none).
            Both are compared a clock ahead: a new value takes effect a clock after it appears.
        parity_response (In, 1): configuration Command bit 6 (drive PERR#).
        irdy_wait (In, 3): IRDY# wait states before each data phase (0 = none).
        stop (In, 1): end the current descriptor as soon as the protocol allows.
        events (Out, InitiatorEvents): what happened in the previous clock, for counters.
        status (Out, InitiatorStatus): pulses for the configuration Status register (of
            the previous clock).
        busy (Out, 1): a descriptor is held or a transaction is on the bus.
        ad_decision (Out, ADDecision): 32-bit only: ``bus.ad``'s word and enable as one
            decision between two registered words (``bus.ad`` is its value), for pads
            that make the choice in the cell joining the target's AD. Expanded, only the
            terms are live; folded, the word is ``high``, always taken.

    Parameters:
        width: bus width, 32 or 64.
        expand_live: build the decision once per value of the live lines and let them
            select (the timing structure, see ``_decided_state`` and :mod:`.live`), or
            once with the live lines as inputs (the same function, an eighth of the logic:
            faster to simulate). ``None``: expand when elaborated for a platform.
        ad_groups: the copies of ``ad_decision``'s terms (32-bit): one per group of AD
            pins the pads serve.
    """
    def __init__(self, width=32, *, expand_live=None, ad_groups=1):
        if width not in (32, 64):
            raise ValueError(f"PCI bus width must be 32 or 64, not {width!r}")
        self.width = width
        self.expand_live = expand_live
        self.ad_groups = ad_groups
        super().__init__({
            "bus": Out(PCIBusSignature(width)),
            "now": In(Handshake),
            "gnt_allowed": In(1, init=1),
            "drive_allowed": In(1, init=1),
            "par_error": In(1),
            "par64_error": In(1),
            "desc": In(stream.Signature(Descriptor)),
            "offer_when_free": In(1),
            "wdata": In(data.ArrayLayout(32, WDATA_WINDOW)),
            "wdata_take": Out(2),
            "rdata": Out(ReadWords),
            "latency_timer": In(8),
            "cache_line": In(8),
            "parity_response": In(1),
            "irdy_wait": In(3),
            "stop": In(1),
            "events": Out(InitiatorEvents),
            "status": Out(InitiatorStatus),
            "busy": Out(1),
            **({} if width == 64 else {"ad_decision": Out(ADDecision(ad_groups))}),
        })

    def elaborate(self, platform):
        """The master, in the order its parts feed one another: what the previous edge
        did and what is on the pins (:meth:`_previous_edge`), the descriptor
        (:meth:`_descriptor`), the transaction's registers (:meth:`_transaction`), the
        counters' comparisons (:meth:`_comparisons`), the write words
        (:meth:`_write_words`), a transaction's start (:meth:`_start`); then the live
        handshake: the decision (:meth:`_decide`) built per value of the live lines
        (:meth:`_cofactors`), the outputs they choose (:meth:`_outputs`), the state they
        choose a clock later (:meth:`_state`); last the read data and parity
        (:meth:`_read_data_and_parity`).

        ``s`` holds the nets one step makes for the later ones."""
        m = Module()
        wide_bus = self.width == 64
        cells = cells_for(platform)
        s = SimpleNamespace(
            m=m, bus=self.bus, now=self.now, wide_bus=wide_bus, cells=cells,
            sizes=(0, 1, 2) if wide_bus else (0, 1),    # DWORDs a data phase may move
            # The decision built per value of the live lines where the cells are the
            # FPGA's (see :meth:`_cofactors`), once with the lines as inputs elsewhere.
            expand=cells.fpga if self.expand_live is None else self.expand_live)
        self._previous_edge(m, s)
        self._descriptor(m, s)
        self._transaction(m, s)
        self._comparisons(m, s)
        self._write_words(m, s)
        self._start(m, s)
        self._decided_state(m, s)
        self._cofactors(m, s)
        self._outputs(m, s)
        self._state(m, s)
        self._read_data_and_parity(m, s)
        return m

    def _previous_edge(self, m, s):
        """The registered events of the previous edge and the copy of what the master
        drives on the pins now (its own outputs, one clock later)."""
        # --- registered events of the previous edge -------------------------------------
        # Timing (docs/architecture.md, "I/O timing"): the live handshake lines reach only
        # the output flip-flops and the one- to four-bit registers below. Every wider
        # register whose next value depended on them keeps the value from before the
        # previous edge and the registered event, and shows the updated value
        # combinationally: the same values clock for clock, without a live line entering
        # an adder.
        moved_q = Signal(2)      # DWORDs the data phase at the previous edge moved
        advanced_q = Signal(2)   # DWORDs the descriptor advanced at the previous edge
        start_q = Signal()       # a transaction started at the previous edge
        take_q = Signal(2)       # DWORDs of the write stream consumed at the previous edge

        # --- what is on the pins now (our own outputs, one clock later) -----------------
        pin_frame = Signal()
        pin_irdy = Signal()
        pin_ad = Signal(32)
        pin_ad_hi = Signal(32)
        vars(s).update(
            advanced_q=advanced_q, moved_q=moved_q, pin_ad=pin_ad, pin_ad_hi=pin_ad_hi,
            pin_frame=pin_frame, pin_irdy=pin_irdy, start_q=start_q, take_q=take_q)

    def _descriptor(self, m, s):
        """The descriptor being worked on: held in registers, or the one offered now
        (``e_*``: a new descriptor can start in the very clock it arrives). Its address
        and DWORDs left advance by the registered event of the previous edge."""
        advanced_q = s.advanced_q
        held = Signal()                 # a descriptor is held in the registers below
        cmd = Signal(Command)
        want_wide = Signal()
        more = Signal()
        addr_before = Signal(64)
        left_before = Signal(32)
        addr = Signal(64)               # byte address of the next data phase to move
        dwords_left = Signal(32)
        m.d.comb += [addr.eq(addr_before + (advanced_q << 2)),
                     dwords_left.eq(left_before - advanced_q)]
        # A descriptor that ended in an abort at the previous edge: the engine learns of it
        # from the (registered) events one clock later, so the next one is not taken yet.
        aborted_q = Signal()
        offered = Signal()
        m.d.comb += offered.eq(self.desc.valid & ~aborted_q)
        # Effective descriptor: the held one, or the one offered now (so a new descriptor
        # can start in the very clock it arrives: no wasted clock between transfers).
        e_cmd = Signal(Command)
        e_addr = Signal(64)
        e_left = Signal(32)
        e_wide = Signal()
        e_more = Signal()
        m.d.comb += [
            e_cmd.eq(Mux(held, cmd, self.desc.payload.cmd)),
            e_addr.eq(Mux(held, addr, self.desc.payload.addr)),
            e_left.eq(Mux(held, dwords_left, self.desc.payload.dwords)),
            e_wide.eq(Mux(held, want_wide, self.desc.payload.wide)),
            e_more.eq(Mux(held, more, self.desc.payload.more)),
            self.desc.ready.eq(~held & ~aborted_q),
        ]
        take = offered & ~held
        addr_next = Mux(take, self.desc.payload.addr, addr)
        left_next = Mux(take, self.desc.payload.dwords, dwords_left)
        m.d.pci += [addr_before.eq(addr_next), left_before.eq(left_next)]
        with m.If(take):
            # (``held`` is set with the decision below, which may drop the descriptor again
            # in the same clock: one with nothing to move is finished at once.)
            m.d.pci += [cmd.eq(self.desc.payload.cmd),
                        want_wide.eq(self.desc.payload.wide), more.eq(self.desc.payload.more)]
        vars(s).update(
            aborted_q=aborted_q, addr=addr, addr_next=addr_next, e_addr=e_addr, e_cmd=e_cmd,
            e_left=e_left, e_more=e_more, e_wide=e_wide, held=held, left_next=left_next,
            offered=offered, take=take)

    def _transaction(self, m, s):
        """The registers of the transaction on the bus (the ``state`` the decision
        updates) and the counters retimed on the previous edge's events."""
        moved_q, pin_frame, start_q = s.moved_q, s.pin_frame, s.start_q
        phase = Signal(_Phase)
        txn_cmd = Signal(Command)       # command of this transaction (MWI may become MW)
        txn_write = Signal()
        txn_wide = Signal()             # REQ64# asserted with this transaction's FRAME#
        narrow = Signal()               # REQ64# asked but the target answered without ACK64#
        devsel_seen = Signal()
        moved = Signal()                # data moved in this transaction
        ending = Signal()               # the phase on the pins is a forced last one (STOP#, abort)
        # The forced last phase is the one STOP# came in (IRDY# was deasserted then): the
        # target holds TRDY# until IRDY#, so if it asserted TRDY# with STOP#, a word moves.
        ending_open = Signal()
        term = Signal(Termination)      # why this transaction is ending
        wait_left = Signal(3)           # IRDY# wait states still to insert
        req_off = Signal(2)             # REQ# must stay deasserted this many more clocks
        stopping = Signal()             # a stop was requested; finish and drop the descriptor
        txn_dac = Signal()              # this transaction began with a Dual Address Cycle
        txn_left = Signal(32)           # DWORDs this transaction may still move
        since_addr = Signal(16)         # clocks since the (last) address phase, saturating
        gnt_wait = Signal(16)
        txn_left_before = Signal(32)
        txn_left_start = Signal(32)
        since_before = Signal(16)
        gnt_wait_before = Signal(16)
        m.d.comb += [
            txn_left.eq(Mux(start_q, txn_left_start, txn_left_before - moved_q)),
            since_addr.eq(Mux(start_q, 0, since_before)),
            gnt_wait.eq(Mux(start_q, 0, gnt_wait_before)),
        ]

        # The DWORD index of the address inside a cache line (line size is a power of two).
        line_mask = Signal(8)
        m.d.comb += line_mask.eq(self.cache_line - 1)
        in_data = phase == _Phase.DATA
        final_phase = in_data & ~pin_frame     # FRAME# already deasserted: last phase
        special = txn_cmd == Command.SPECIAL_CYCLE
        is_mwi = txn_cmd == Command.MEM_WRITE_INVALIDATE
        vars(s).update(
            devsel_seen=devsel_seen, ending=ending, ending_open=ending_open,
            final_phase=final_phase, gnt_wait=gnt_wait, gnt_wait_before=gnt_wait_before,
            in_data=in_data, is_mwi=is_mwi, line_mask=line_mask, moved=moved, narrow=narrow,
            phase=phase, req_off=req_off, since_addr=since_addr, since_before=since_before,
            special=special, stopping=stopping, term=term, txn_cmd=txn_cmd, txn_dac=txn_dac,
            txn_left=txn_left, txn_left_before=txn_left_before,
            txn_left_start=txn_left_start, txn_wide=txn_wide, txn_write=txn_write,
            wait_left=wait_left)

    def _comparisons(self, m, s):
        """The counters' comparisons, registered a clock ahead, one per value the
        previous edge's event may take."""
        (addr_next, advanced_q, held, left_next, line_mask, moved_q, phase, sizes, start_q,
         txn_dac) = (
            s.addr_next, s.advanced_q, s.held, s.left_next, s.line_mask, s.moved_q,
            s.phase, s.sizes, s.start_q, s.txn_dac)
        # Timing: a comparison behind a counter's adder is two carry chains deep, and in
        # front of the cofactors it would lie on the path of every output. What a counter
        # held before the previous edge's event (a register of two bits at most) is known a
        # clock early, from registers: the comparisons are registered then, one for each
        # value that event may take, and the event only chooses among them. Bit ``j`` of a
        # ``*_is`` vector: the counter equals ``j``. (The Latency Timer and Cache Line Size
        # registers are therefore read a clock ahead as well.)
        txn_left_is = Signal(5)                 # the burst's end is decided among 0..4
        txn_left_before_is = Signal(len(txn_left_is) + 3, init=1)    # (- moved_q, 0..3)
        txn_left_start_is = Signal(len(txn_left_is), init=1)
        m.d.comb += txn_left_is.eq(Mux(start_q, txn_left_start_is,
                                       txn_left_before_is >> moved_q))
        dwords_left_is = Signal(3)              # the descriptor's end: 0..2
        left_before_is = Signal(len(dwords_left_is) + 3, init=1)     # (- advanced_q)
        m.d.comb += dwords_left_is.eq(left_before_is >> advanced_q)
        left_next_is = Signal(len(left_before_is))
        m.d.comb += left_next_is.eq(Cat(left_next == j for j in range(len(left_before_is))))
        m.d.pci += left_before_is.eq(left_next_is)
        nothing_left = Mux(held, dwords_left_is[0], self.desc.payload.dwords == 0)  # e_left == 0
        # Whether a transaction may start now (with GNT#), a clock ahead: idle and not
        # stopping, and a held descriptor with something left (``go_held``), or none held
        # and no abort at the previous edge (``go_free``: then the offer decides, as it
        # stands with the master free). State of their own (set in ``_decide`` from the
        # next state), so that the start reads two registers and the offer: the master's
        # start is the head of AD's decision (docs/timing.md).
        go_held = Signal()
        go_free = Signal(init=1)
        startable = go_held | (go_free & self.offer_when_free)
        # MWI ends only at a cache-line boundary: bit s, the DWORD address (before the
        # event's advance) plus s starts a line. s = advanced + this phase + the next one.
        line_start_before = Signal(8)
        m.d.pci += line_start_before.eq(Cat(((addr_next[2:10] + s)[:8] & line_mask) == 0
                                            for s in range(len(line_start_before))))
        at_line_end = {(k, n): (line_start_before >> advanced_q)[k + n]
                       for k in sizes for n in sizes[1:]}
        # The Latency Timer counts from FRAME# asserted: for a DAC, from its first address
        # phase (one clock more than since_addr). Bit i: since_addr + i >= Latency Timer.
        since_next = Signal(16)
        lt_reached_before = Signal(2)
        lt_reached_start = Signal(2)            # (since_addr is 0 after a start)
        m.d.pci += [
            lt_reached_before.eq(Cat(since_next + i >= self.latency_timer for i in (0, 1))),
            lt_reached_start.eq(Cat(i >= self.latency_timer for i in (0, 1))),
        ]
        lt_expired = Mux(start_q, lt_reached_start, lt_reached_before).bit_select(
            txn_dac & (phase != _Phase.DAC), 1)
        # No DEVSEL# by then: master abort (never right after a start).
        devsel_due_before = Signal()
        m.d.pci += devsel_due_before.eq(since_next >= MASTER_ABORT_CLOCK)
        devsel_overdue = ~start_q & devsel_due_before

        def txn_left_within(low, high):
            """``low <= txn_left <= high`` (within 0..4)."""
            return txn_left_is[low:high + 1].any()
        vars(s).update(
            at_line_end=at_line_end, devsel_overdue=devsel_overdue,
            dwords_left_is=dwords_left_is, go_free=go_free, go_held=go_held,
            left_next_is=left_next_is, lt_expired=lt_expired, nothing_left=nothing_left,
            since_next=since_next, startable=startable,
            txn_left_before_is=txn_left_before_is, txn_left_is=txn_left_is,
            txn_left_start_is=txn_left_start_is, txn_left_within=txn_left_within)

    def _write_words(self, m, s):
        """The write words a data phase may present (``word[k]``: the stream's word after
        ``k`` more move now)."""
        sizes, take_q = s.sizes, s.take_q
        # Write data: the stream's next word is wdata[take_q] (the engine advances its
        # window a clock after a phase moves); wdata[take_q + k] after k more move now.
        window_words = len(self.wdata)
        word = {k: Signal(32, name=f"word_{k}") for k in range(len(sizes) + 1)}
        for k in word:
            with m.Switch(take_q):
                for q in range(len(sizes)):
                    if q + k < window_words:
                        with m.Case(q):
                            m.d.comb += word[k].eq(self.wdata[q + k])
        vars(s).update(word=word)

    def _start(self, m, s):
        """What a transaction starting now carries (from the registers: command, wide,
        DAC, the DWORDs it may move), and the registers whose next value depends on no
        live line."""
        (e_addr, e_cmd, e_left, e_wide, gnt_wait, gnt_wait_before, held, line_mask,
         offered, phase, since_addr, since_before, since_next, stopping, txn_left,
         txn_left_before, txn_left_before_is, txn_left_is, txn_left_start,
         txn_left_start_is, wide_bus) = (
            s.e_addr, s.e_cmd, s.e_left, s.e_wide, s.gnt_wait, s.gnt_wait_before, s.held,
            s.line_mask, s.offered, s.phase, s.since_addr, s.since_before, s.since_next,
            s.stopping, s.txn_left, s.txn_left_before, s.txn_left_before_is,
            s.txn_left_is, s.txn_left_start, s.txn_left_start_is, s.wide_bus)
        dac = e_addr[32:] != 0
        use_wide = Signal()
        m.d.comb += use_wide.eq(e_wide & (e_addr[2] == 0) & (e_left >= 2) &
                                is_memory_command(e_cmd))
        if not wide_bus:
            m.d.comb += use_wide.eq(0)
        # MWI only for whole cache lines: otherwise write up to the next line as MW.
        mwi_partial = Signal()
        dw_in_line = Signal(8)
        m.d.comb += [
            dw_in_line.eq(e_addr[2:10] & line_mask),
            mwi_partial.eq((e_cmd == Command.MEM_WRITE_INVALIDATE) &
                           ((self.cache_line == 0) | (dw_in_line != 0) |
                            (e_left < self.cache_line))),
        ]
        to_line_end = Signal(32)
        m.d.comb += to_line_end.eq(Mux(self.cache_line == 0, e_left,
                                       self.cache_line - dw_in_line))
        start_txn_left = Mux(mwi_partial & (to_line_end < e_left), to_line_end, e_left)
        m.d.pci += [
            txn_left_before_is.eq(Cat(txn_left == j for j in range(len(txn_left_before_is)))),
            txn_left_start_is.eq(Cat(start_txn_left == j for j in range(len(txn_left_is)))),
        ]
        start_cmd = Mux(mwi_partial, Command.MEM_WRITE, e_cmd)

        # The registers whose next value depends on no live line.
        waiting = (phase == _Phase.IDLE) & ~stopping & (held | offered) & (e_left != 0)
        m.d.pci += [txn_left_before.eq(txn_left), txn_left_start.eq(start_txn_left),
                    gnt_wait_before.eq(Mux(waiting, gnt_wait + (gnt_wait != 0xFFFF),
                                           gnt_wait))]
        m.d.pci += since_before.eq(since_next)
        with m.Switch(phase):
            with m.Case(_Phase.IDLE):
                m.d.comb += since_next.eq(since_addr)
            with m.Case(_Phase.DAC):
                m.d.comb += since_next.eq(0)
            with m.Case(_Phase.ADDR):
                m.d.comb += since_next.eq(1)
            with m.Case(_Phase.DATA):
                m.d.comb += since_next.eq(since_addr + (since_addr != 0xFFFF))
        vars(s).update(dac=dac, start_cmd=start_cmd, use_wide=use_wide)

    def _decided_state(self, m, s):
        """The registers the decision updates (``state``) and the lines it drives.

        Timing: a live line arrives late in its clock, so it may only *choose* among
        values computed from registers. :meth:`_decide` builds the whole next state and
        the outputs for given values of the live lines; it is built once per
        combination of them (:meth:`_cofactors`; constants, folded by synthesis), and
        the live lines choose among the outputs just in front of the pads' flip-flops
        (:meth:`_outputs`) and among the registered next states in the clock after
        (:meth:`_state`). Two families keep the copies few: while idle only "GNT# with
        the bus idle" counts (two copies); in a transaction TRDY#, STOP#, DEVSEL#, GNT#
        (and ACK64#) do (16 or 32 copies)."""
        (aborted_q, advanced_q, devsel_seen, ending, ending_open, go_free, go_held, held,
         moved, moved_q, narrow, phase, pin_ad, pin_ad_hi, pin_frame, pin_irdy, req_off,
         start_q, stopping, take_q, term, txn_cmd, txn_dac, txn_wide, txn_write, wait_left,
         wide_bus) = (
            s.aborted_q, s.advanced_q, s.devsel_seen, s.ending, s.ending_open, s.go_free,
            s.go_held, s.held, s.moved, s.moved_q, s.narrow, s.phase, s.pin_ad,
            s.pin_ad_hi, s.pin_frame, s.pin_irdy, s.req_off, s.start_q, s.stopping,
            s.take_q, s.term, s.txn_cmd, s.txn_dac, s.txn_wide, s.txn_write, s.wait_left,
            s.wide_bus)
        received_master_abort = Signal()   # the Status register's pulses, registered
        received_target_abort = Signal()
        state = {
            "held": held, "stopping": stopping, "req_off": req_off, "phase": phase,
            "txn_cmd": txn_cmd, "txn_write": txn_write, "txn_wide": txn_wide,
            "narrow": narrow, "devsel_seen": devsel_seen, "moved": moved,
            "ending": ending, "ending_open": ending_open, "term": term, "txn_dac": txn_dac,
            "wait_left": wait_left, "pin_frame": pin_frame, "pin_irdy": pin_irdy,
            "pin_ad": pin_ad, "moved_q": moved_q, "advanced_q": advanced_q,
            "start_q": start_q, "take_q": take_q, "aborted_q": aborted_q,
            "events": self.events,
            "received_master_abort": received_master_abort,
            "received_target_abort": received_target_abort,
            # ``held | phase != IDLE`` as state of its own, from the next state's (in
            # ``_decide``): the DMA engine's offer waits on it, and the master's start on
            # the offer; formed from the phase instead, that chain would be the pci clock's
            # critical path (docs/timing-log.md).
            "busy": self.busy, "go_held": go_held, "go_free": go_free,
        }
        if wide_bus:
            state["pin_ad_hi"] = pin_ad_hi
        driven = ["frame", "irdy", "cbe", "ad", "req"]
        if wide_bus:
            driven += ["req64", "cbe_hi", "ad_hi"]
        vars(s).update(
            driven=driven, received_master_abort=received_master_abort,
            received_target_abort=received_target_abort, state=state)

    def _decide(self, s, tag, idle, trdy=0, stop=0, devsel=0, gnt=0, ack64=0, go=0):
        """(next state, outputs) for these values of the live lines: one cofactor.

        ``idle``: the family for the IDLE phase (only ``go``: GNT# asserted with the
        bus idle, counts) or for a transaction (the other lines count). The steps share
        ``c``: the elaboration's nets (``s``) and this cofactor's own.
        """
        c = SimpleNamespace(**vars(s), tag=tag)
        c.trdy, c.stop, c.devsel, c.gnt, c.ack64, c.go = (
            Value.cast(value) if isinstance(value, Value) else Const(value, 1)
            for value in (trdy, stop, devsel, gnt, ack64, go))
        self._cofactor_defaults(c)
        self._cofactor_data_phase_values(c)
        self._cofactor_driving(c)
        if idle:
            self._decide_idle(c)
        else:
            self._decide_address_phases(c)
            self._decide_data_phase(c)
        self._decide_outcome(c)
        return c.nxt, c.drv

    def _cofactor_defaults(self, c):
        """This cofactor's next state (``nxt``, the registers' values unless a step
        changes them) and outputs (``drv``)."""
        (bus, driven, held, m, state, tag, take) = (
            c.bus, c.driven, c.held, c.m, c.state, c.tag, c.take)
        # (No keep: the next state goes straight into registers of its own, the
        # outputs into the kept nets of ``_choose``.)
        nxt = {name: Signal.like(reg, name=f"{name}_{tag}")
               for name, reg in state.items()}
        drv = {name: SimpleNamespace(
            o=Signal(len(getattr(bus, name).o), name=f"{name}_o_{tag}"),
            oe=Signal(name=f"{name}_oe_{tag}")) for name in driven}
        for name, reg in state.items():
            m.d.comb += nxt[name].eq(reg)
        with m.If(self.stop & held):
            m.d.comb += nxt["stopping"].eq(1)
        with m.If(take):
            m.d.comb += nxt["held"].eq(1)
        vars(c).update(drv=drv, nxt=nxt)

    def _cofactor_data_phase_values(self, c):
        """What this cofactor's lines mean for the data phase on the pins: the DWORDs
        moving (``xfer``), the terminations seen, whether the master ends the burst, and
        IRDY# for the next clock."""
        (ack64, at_line_end, devsel, devsel_overdue, devsel_seen, ending, ending_open,
         final_phase, gnt, in_data, is_mwi, lt_expired, m, narrow, pin_irdy, sizes, stop,
         stopping, tag, trdy, txn_left_within, txn_wide, wait_left, wide_bus) = (
            c.ack64, c.at_line_end, c.devsel, c.devsel_overdue, c.devsel_seen, c.ending,
            c.ending_open, c.final_phase, c.gnt, c.in_data, c.is_mwi, c.lt_expired, c.m,
            c.narrow, c.pin_irdy, c.sizes, c.stop, c.stopping, c.tag, c.trdy,
            c.txn_left_within, c.txn_wide, c.wait_left, c.wide_bus)
        # Sizes of the data phase on the pins now and of the next one, in DWORDs.
        cur_wide = txn_wide & ack64
        next_wide = txn_wide & ~narrow & ~(devsel & ~ack64)
        xfer = in_data & pin_irdy & trdy & devsel & (~ending | ending_open)
        moved_now = Signal(2, name=f"moved_now_{tag}")
        m.d.comb += moved_now.eq(Mux(xfer, Mux(cur_wide, 2, 1), 0))

        def by_moved(values):
            """``values[k]`` for the number of DWORDs moving now (xfer, ACK64#)."""
            if wide_bus:
                return Mux(xfer, Mux(cur_wide, values[2], values[1]), values[0])
            return Mux(xfer, values[1], values[0])

        def by_sizes(values):
            """``values[k, n]``: ``k`` DWORDs moving now, the next phase ``n`` wide."""
            return by_moved({k: (Mux(next_wide, values[k, 2], values[k, 1]) if wide_bus
                                 else values[k, 1]) for k in sizes})

        # Target terminations and aborts, seen on the pins this clock.
        target_stop = in_data & stop & ~ending
        target_abort = target_stop & ~devsel & devsel_seen
        master_abort = in_data & ~ending & ~devsel & ~devsel_seen & devsel_overdue
        forced_end = Signal(name=f"forced_end_{tag}")
        m.d.comb += forced_end.eq(target_stop | master_abort)
        txn_over = final_phase & (xfer | forced_end | ending)  # the last phase is on

        # The master may end the burst on its own: latency timer expired with GNT#
        # removed, or a stop request. MWI ends only at a cache-line boundary.
        voluntary_end = Signal(name=f"voluntary_end_{tag}")
        m.d.comb += voluntary_end.eq(((lt_expired & ~gnt) | stopping) &
                                     (~is_mwi | by_sizes(at_line_end)))
        hold_data = pin_irdy & ~xfer    # AD must stay stable through a wait-stated phase
        # A burst's last phase: the transaction has room for the next one only.
        # (txn_left - k <= 2 with k DWORDs moving now: k <= txn_left <= k + 2.)
        fits_next = by_moved({k: Mux(next_wide, txn_left_within(k, k + 2),
                                     txn_left_within(k, k + 1)) if wide_bus
                              else txn_left_within(k, k + 1) for k in sizes})

        # IRDY# for the next clock: hold it through a phase, else insert the wait states.
        irdy_next = Signal(name=f"irdy_next_{tag}")
        with m.If(pin_irdy & ~xfer & ~forced_end):
            m.d.comb += irdy_next.eq(1)
        with m.Elif(forced_end):
            m.d.comb += irdy_next.eq(1)     # FRAME# may drop only with IRDY# asserted
        with m.Else():
            m.d.comb += irdy_next.eq(Mux(xfer, self.irdy_wait == 0, wait_left == 0))
        vars(c).update(
            by_moved=by_moved, fits_next=fits_next, forced_end=forced_end,
            hold_data=hold_data, irdy_next=irdy_next, moved_now=moved_now,
            next_wide=next_wide, target_abort=target_abort, target_stop=target_stop,
            txn_over=txn_over, voluntary_end=voluntary_end, xfer=xfer)

    def _cofactor_driving(self, c):
        """REQ#, the write words for the next clock, the outputs of a data phase
        (``drive_data_phase``) and the events of this edge."""
        (by_moved, drv, e_more, gnt_wait, held, hold_data, irdy_next, m, moved_now,
         next_wide, nxt, offered, phase, pin_ad, pin_ad_hi, pin_frame, pin_irdy, req_off,
         since_addr, sizes, tag, txn_wide, txn_write, wide_bus, word) = (
            c.by_moved, c.drv, c.e_more, c.gnt_wait, c.held, c.hold_data, c.irdy_next,
            c.m, c.moved_now, c.next_wide, c.nxt, c.offered, c.phase, c.pin_ad,
            c.pin_ad_hi, c.pin_frame, c.pin_irdy, c.req_off, c.since_addr, c.sizes, c.tag,
            c.txn_wide, c.txn_write, c.wide_bus, c.word)
        # --- outputs: defaults keep the bus released -----------------------------------
        req_wanted = (held | offered) & (req_off == 0) & ((phase == _Phase.IDLE) | e_more)
        m.d.comb += [drv["req"].oe.eq(1), drv["req"].o.eq(req_wanted)]
        with m.If(req_off != 0):
            m.d.comb += nxt["req_off"].eq(req_off - 1)

        # Write data for the next clock: the word on the pins through a wait-stated
        # phase (a timestamp pattern's window is no stream: only the pins keep its
        # word), the next one after a phase that moved.
        write_word_lo = Mux(hold_data, pin_ad, by_moved({k: word[k] for k in sizes}))
        write_word_hi = Mux(hold_data, pin_ad_hi, by_moved({k: word[k + 1] for k in sizes}))

        def drive_data_phase(want_last):
            """Outputs of a data phase of this transaction for the next clock.

            FRAME# is deasserted for the last phase, but only together with IRDY#.
            FRAME# (and REQ64#) are owned only while asserted: the pads drive a
            sustained tri-state line deasserted for the clock after its owner lets go,
            so FRAME# is driven deasserted in the last data phase and released in the
            clock after it, where the next master may start (PCI LB 3.0 §3.3.3.1).
            """
            frame_next = ~(want_last & irdy_next)
            m.d.comb += [
                drv["frame"].oe.eq(frame_next), drv["frame"].o.eq(frame_next),
                drv["irdy"].oe.eq(1), drv["irdy"].o.eq(irdy_next),
                drv["cbe"].oe.eq(1), drv["cbe"].o.eq(0),         # every byte enabled
                drv["ad"].oe.eq(txn_write),
                drv["ad"].o.eq(write_word_lo),
            ]
            if wide_bus:
                # The upper half is driven while the next phase may be 64-bit.
                m.d.comb += [
                    drv["req64"].oe.eq(txn_wide & frame_next),
                    drv["req64"].o.eq(frame_next),
                    drv["cbe_hi"].oe.eq(next_wide), drv["cbe_hi"].o.eq(0),
                    drv["ad_hi"].oe.eq(next_wide & txn_write),
                    drv["ad_hi"].o.eq(write_word_hi),
                ]

        # The events of this edge, registered on their way out (see ``events``).
        ev = Signal(InitiatorEvents, name=f"ev_{tag}")
        m.d.comb += [
            ev.owning.eq(pin_frame | pin_irdy),
            ev.gnt_wait.eq(gnt_wait),
            ev.latency.eq(since_addr),
        ]
        start = Signal(name=f"start_{tag}")
        advanced = Signal(2, name=f"advanced_{tag}")
        m.d.comb += advanced.eq(moved_now)
        vars(c).update(
            advanced=advanced, drive_data_phase=drive_data_phase, ev=ev, start=start)

    def _decide_idle(self, c):
        """The IDLE phase: bus parking, a stop between transactions, a transaction's
        start, or a descriptor with nothing to move."""
        (dac, drv, e_addr, e_cmd, ev, go, held, m, nothing_left, nxt, offered, start,
         start_cmd, startable, stopping, use_wide, wide_bus) = (
            c.dac, c.drv, c.e_addr, c.e_cmd, c.ev, c.go, c.held, c.m, c.nothing_left,
            c.nxt, c.offered, c.start, c.start_cmd, c.startable, c.stopping, c.use_wide,
            c.wide_bus)
        pending = held | offered
        # Bus parking (PCI LB 3.0 §3.4.3): GNT# on an idle bus obliges the agent to
        # drive AD[31:0] and C/BE#[3:0] (the pads add PAR a clock later) until GNT#
        # goes. They carry what an address phase would: a start then changes only
        # FRAME#. ``go`` is the live GNT#, so the clock after it is sampled
        # deasserted the lines float, the turnaround the arbiter leaves before the
        # next master's GNT#. The 64-bit extension is not parked.
        with m.If(go):
            m.d.comb += [
                drv["ad"].oe.eq(1), drv["cbe"].oe.eq(1),
                drv["ad"].o.eq(e_addr[:32]),
                drv["cbe"].o.eq(Mux(dac, Command.DUAL_ADDRESS, start_cmd)),
            ]
        with m.If(stopping):
            # Stopped between transactions: drop the descriptor.
            m.d.comb += [nxt["held"].eq(0), nxt["stopping"].eq(0)]
            m.d.comb += [ev.done.eq(1), ev.result.eq(DescriptorResult.STOPPED)]
        with m.Elif(startable & go):
            # AD and C/BE# as parked (above). IRDY# is left alone in the address
            # phase: the previous master may still be driving it deasserted then.
            m.d.comb += [
                start.eq(1), ev.start.eq(1),
                drv["frame"].oe.eq(1), drv["frame"].o.eq(1),
            ]
            if wide_bus:
                m.d.comb += [
                    drv["req64"].oe.eq(use_wide), drv["req64"].o.eq(1),
                    drv["ad_hi"].oe.eq(use_wide), drv["cbe_hi"].oe.eq(use_wide),
                    drv["ad_hi"].o.eq(e_addr[32:]), drv["cbe_hi"].o.eq(start_cmd),
                ]
            m.d.comb += [
                nxt["phase"].eq(Mux(dac, _Phase.DAC, _Phase.ADDR)),
                nxt["txn_cmd"].eq(start_cmd),
                nxt["txn_write"].eq(is_write_command(e_cmd)),
                nxt["txn_wide"].eq(use_wide),
                nxt["narrow"].eq(0), nxt["devsel_seen"].eq(0), nxt["moved"].eq(0),
                nxt["ending"].eq(0), nxt["term"].eq(Termination.COMPLETION),
                nxt["txn_dac"].eq(dac),
            ]
        with m.Elif(pending & nothing_left):
            # Nothing to move: finished without a transaction.
            m.d.comb += nxt["held"].eq(0)
            m.d.comb += [ev.done.eq(1), ev.result.eq(DescriptorResult.OK)]

    def _decide_address_phases(self, c):
        """The DAC phase and the address phase (``phase`` DAC, ADDR)."""
        (addr, drive_data_phase, drv, irdy_next, m, nxt, phase, stopping, txn_cmd,
         txn_left_within, txn_wide, voluntary_end, wide_bus) = (
            c.addr, c.drive_data_phase, c.drv, c.irdy_next, c.m, c.nxt, c.phase,
            c.stopping, c.txn_cmd, c.txn_left_within, c.txn_wide, c.voluntary_end,
            c.wide_bus)
        with m.Switch(phase):
            with m.Case(_Phase.DAC):
                # Second address phase: upper address and the real command.
                m.d.comb += [
                    drv["frame"].oe.eq(1), drv["frame"].o.eq(1),
                    drv["irdy"].oe.eq(1), drv["irdy"].o.eq(0),
                    drv["ad"].oe.eq(1), drv["cbe"].oe.eq(1),
                    drv["ad"].o.eq(addr[32:]), drv["cbe"].o.eq(txn_cmd),
                ]
                if wide_bus:
                    m.d.comb += [
                        drv["req64"].oe.eq(txn_wide), drv["req64"].o.eq(1),
                        drv["ad_hi"].oe.eq(txn_wide), drv["cbe_hi"].oe.eq(txn_wide),
                        drv["ad_hi"].o.eq(addr[32:]), drv["cbe_hi"].o.eq(txn_cmd),
                    ]
                m.d.comb += nxt["phase"].eq(_Phase.ADDR)

            with m.Case(_Phase.ADDR):
                last = Mux(txn_wide, txn_left_within(0, 2), txn_left_within(0, 1))
                m.d.comb += irdy_next.eq(self.irdy_wait == 0)
                # The latency timer may have expired by the address phase (a timer
                # of 0, or 1 with a DAC): with GNT# removed, the first data phase is
                # the last.
                drive_data_phase(last | voluntary_end)
                with m.If(voluntary_end & irdy_next & ~stopping & ~last):
                    m.d.comb += [nxt["term"].eq(Termination.LATENCY_TIMER),
                                 nxt["req_off"].eq(2), drv["req"].o.eq(0)]
                m.d.comb += [
                    nxt["phase"].eq(_Phase.DATA),
                    nxt["wait_left"].eq(Mux(self.irdy_wait == 0, 0,
                                            self.irdy_wait - 1))]

    def _decide_data_phase(self, c):
        """A data phase (``phase`` DATA): DEVSEL#, the words moving, why and when the
        transaction ends, and what the descriptor's result is."""
        (ack64, advanced, by_moved, devsel, drive_data_phase, drv, dwords_left_is, ev,
         fits_next, forced_end, hold_data, irdy_next, m, moved, moved_now, nxt, phase,
         pin_frame, pin_irdy, sizes, special, stopping, tag, target_abort, target_stop,
         term, trdy, txn_over, txn_wide, voluntary_end, wait_left, xfer) = (
            c.ack64, c.advanced, c.by_moved, c.devsel, c.drive_data_phase, c.drv,
            c.dwords_left_is, c.ev, c.fits_next, c.forced_end, c.hold_data, c.irdy_next,
            c.m, c.moved, c.moved_now, c.nxt, c.phase, c.pin_frame, c.pin_irdy, c.sizes,
            c.special, c.stopping, c.tag, c.target_abort, c.target_stop, c.term, c.trdy,
            c.txn_over, c.txn_wide, c.voluntary_end, c.wait_left, c.xfer)
        with m.Switch(phase):

            with m.Case(_Phase.DATA):
                with m.If(devsel):
                    m.d.comb += nxt["devsel_seen"].eq(1)
                    with m.If(txn_wide & ~ack64):
                        m.d.comb += nxt["narrow"].eq(1)
                with m.If(~pin_irdy & (wait_left != 0)):
                    m.d.comb += nxt["wait_left"].eq(wait_left - 1)
                with m.If(xfer):
                    m.d.comb += [
                        nxt["moved"].eq(1),
                        nxt["wait_left"].eq(Mux(self.irdy_wait == 0, 0,
                                                self.irdy_wait - 1)),
                        ev.phase.eq(1), ev.dwords.eq(moved_now), ev.first.eq(~moved),
                    ]

                # Why the transaction ends, decided in the clock it is seen.
                seen_term = Signal(Termination, name=f"seen_term_{tag}")
                with m.If(target_abort):
                    m.d.comb += seen_term.eq(Termination.TARGET_ABORT)
                with m.Elif(target_stop & trdy):
                    # With IRDY# asserted the word moves now; else TRDY# is held
                    # until IRDY# is asserted in the last phase, and it moves then.
                    m.d.comb += seen_term.eq(Termination.DISCONNECT_DATA)
                with m.Elif(target_stop & moved):
                    m.d.comb += seen_term.eq(Termination.DISCONNECT_NODATA)
                with m.Elif(target_stop):
                    m.d.comb += seen_term.eq(Termination.RETRY)
                with m.Else():
                    m.d.comb += seen_term.eq(Termination.MASTER_ABORT)
                with m.If(forced_end):
                    m.d.comb += nxt["term"].eq(seen_term)
                lt_end = (pin_frame & voluntary_end & irdy_next & ~hold_data &
                          ~stopping & ~fits_next)
                with m.Elif(lt_end):
                    m.d.comb += nxt["term"].eq(Termination.LATENCY_TIMER)

                with m.If(target_stop | lt_end):
                    # Ended by the target or by GNT# removal: REQ# off for two
                    # clocks around the idle clock, so other masters get their turn
                    # (and an arbiter that withholds GNT# until REQ# drops gives it
                    # back).
                    m.d.comb += [nxt["req_off"].eq(2), drv["req"].o.eq(0)]

                with m.If(txn_over):
                    # The phase on the pins is the last: release the bus next clock.
                    end_term = Signal(Termination, name=f"end_term_{tag}")
                    m.d.comb += [nxt["phase"].eq(_Phase.IDLE), ev.end.eq(1),
                                 end_term.eq(Mux(forced_end, seen_term, term)),
                                 ev.term.eq(end_term)]
                    aborted = end_term.as_value().matches(Termination.MASTER_ABORT,
                                                          Termination.TARGET_ABORT)
                    # Special Cycles are broadcast: no DEVSEL# is the normal ending.
                    with m.If(special & (end_term == Termination.MASTER_ABORT)):
                        m.d.comb += [ev.term.eq(Termination.COMPLETION),
                                     advanced.eq(1)]
                        with m.If(dwords_left_is[1]):
                            m.d.comb += [nxt["held"].eq(0), ev.done.eq(1),
                                         ev.result.eq(DescriptorResult.OK)]
                    with m.Elif(aborted):
                        m.d.comb += [
                            nxt["held"].eq(0), nxt["stopping"].eq(0), ev.done.eq(1),
                            ev.result.eq(Mux(end_term == Termination.MASTER_ABORT,
                                             DescriptorResult.MASTER_ABORT,
                                             DescriptorResult.TARGET_ABORT)),
                        ]
                    with m.Elif(by_moved({k: dwords_left_is[k] for k in sizes})):
                        m.d.comb += [nxt["held"].eq(0), nxt["stopping"].eq(0),
                                     ev.done.eq(1), ev.result.eq(DescriptorResult.OK)]
                    with m.Elif(stopping):
                        m.d.comb += [nxt["held"].eq(0), nxt["stopping"].eq(0),
                                     ev.done.eq(1),
                                     ev.result.eq(DescriptorResult.STOPPED)]
                with m.Elif(forced_end):
                    # STOP#/abort while FRAME# is asserted: one more phase with FRAME#
                    # deasserted and IRDY# asserted, in which nothing more moves,
                    # unless STOP# came while IRDY# was deasserted (ending_open).
                    m.d.comb += [nxt["ending"].eq(1), nxt["ending_open"].eq(~pin_irdy)]
                    drive_data_phase(1)
                with m.Else():
                    # Once IRDY# is asserted FRAME# may not change until that data
                    # phase completes: a latency-timer exit or stop request seen while
                    # the target holds the phase in wait states ends the burst at the
                    # next one.
                    drive_data_phase(~pin_frame |
                                     (~hold_data & (fits_next | voluntary_end)))

    def _decide_outcome(self, c):
        """The outcome of this edge, registered: the pins' copies, the events and the
        flags the next clock's decision starts from."""
        (advanced, drv, ev, left_next_is, m, moved_now, nxt, start, txn_write, wide_bus) = (
            c.advanced, c.drv, c.ev, c.left_next_is, c.m, c.moved_now, c.nxt, c.start,
            c.txn_write, c.wide_bus)
        # The outcome of this edge, registered.
        m.d.comb += [
            nxt["pin_frame"].eq(drv["frame"].oe & drv["frame"].o),
            nxt["pin_irdy"].eq(drv["irdy"].oe & drv["irdy"].o),
            nxt["pin_ad"].eq(drv["ad"].o),
            nxt["busy"].eq(nxt["held"] | (nxt["phase"] != _Phase.IDLE)),
            nxt["go_held"].eq((nxt["phase"] == _Phase.IDLE) & nxt["held"] & ~nxt["stopping"] &
                              ~left_next_is.bit_select(nxt["advanced_q"], 1)),
            nxt["go_free"].eq((nxt["phase"] == _Phase.IDLE) & ~nxt["held"] &
                              ~nxt["stopping"] & ~nxt["aborted_q"]),
            nxt["moved_q"].eq(moved_now), nxt["advanced_q"].eq(advanced),
            nxt["start_q"].eq(start),
            nxt["take_q"].eq(Mux(txn_write, moved_now, 0)),
            nxt["aborted_q"].eq(ev.done & ev.result.as_value().matches(
                DescriptorResult.MASTER_ABORT, DescriptorResult.TARGET_ABORT)),
            nxt["events"].eq(ev),
            nxt["received_master_abort"].eq(
                ev.done & (ev.result == DescriptorResult.MASTER_ABORT)),
            nxt["received_target_abort"].eq(
                ev.done & (ev.result == DescriptorResult.TARGET_ABORT)),
        ]
        if wide_bus:
            m.d.comb += nxt["pin_ad_hi"].eq(drv["ad_hi"].o)

    def _cofactors(self, m, s):
        """The decision, built per value of the live lines (expanded) or once with the
        lines as inputs (folded): the idle family (GNT# as it counts) and the busy family
        (the target's lines and GNT#)."""
        cells, expand, now, phase, wide_bus = s.cells, s.expand, s.now, s.phase, s.wide_bus
        live_names = ["trdy", "stop", "devsel", "gnt"] + (["ack64"] if wide_bus else [])
        target_names = [name for name in live_names if name != "gnt"]
        is_idle = phase == _Phase.IDLE
        # GNT# as it counts: while idle only with the bus idle (FRAME#, IRDY# deasserted).
        # One hand-placed LUT4 (the cell backend): GNT# crosses it and the outputs' last choice.
        gnt_counts = cells.lut4(m, lambda gnt, frame, irdy, idle:
                                gnt and not (idle and (frame or irdy)),
                                [now.gnt, now.frame, now.irdy, is_idle], "gnt_counts",
                                inverted=(0, 1, 2))
        # GNT# asserted counts as GNT# only while it is allowed: in the cofactors for GNT#
        # asserted, the registered permission stands in for the line.
        allowed = self.gnt_allowed
        if expand:
            idle_family = {(go,): self._decide(s, f"idle{go}", True, go=allowed if go else 0)
                           for go in (0, 1)}
            busy_family = {}
            for values in itertools.product((0, 1), repeat=len(live_names)):
                tag = "_".join(f"{name}{v}" for name, v in zip(live_names, values))
                lines = dict(zip(live_names, values))
                lines["gnt"] = allowed if lines["gnt"] else 0
                busy_family[values] = self._decide(s, tag, False, **lines)
        else:
            idle_family = {(): self._decide(s, "idle", True, go=gnt_counts & allowed)}
            busy_family = {(): self._decide(s, "busy", False, **{
                name: getattr(now, name) & (allowed if name == "gnt" else 1)
                for name in live_names})}
        # The target's lines, TRDY# choosing last (GNT# chooses after them: ``_choose``).
        target_lines = LiveLines(m, cells, {name: getattr(now, name) for name in target_names})
        vars(s).update(
            allowed=allowed, busy_family=busy_family, gnt_counts=gnt_counts,
            idle_family=idle_family, is_idle=is_idle, live_names=live_names,
            target_lines=target_lines)

    def _choose(self, s, pick, name, *, staged=False, gate=None):
        """``pick(next state, outputs)`` of the cofactor the live lines choose now, for
        output ``name`` (``bus.NAME.o``): the phase (from registers) chooses between the
        families inside each cofactor of the target's lines, so the lines only choose
        among one kept net each; GNT# as it counts chooses last, in one LUT4 of its own
        (``gnt_counts``, with FRAME# and IRDY#) per bit. ``gate`` (1 bit, from a
        register): the choice is 0 where it is 0.

        On a 32-bit bus the target's three lines choose in hand-placed cells
        (:meth:`~.live.LiveLines.choose_now`: per bit a slice pair) and GNT# in one more
        LUT4: a line crosses at most four cells to the pads. Synthesis keeps to a kept
        net only as a name: written as two-way choices each kept (``staged``, the 64-bit
        bus's form, four lines), abc decodes the lines again in front of them and
        DEVSEL# crosses 5 to 7 cells to FRAME#'s register. Left whole, abc decodes TRDY#
        and DEVSEL# once for FRAME#, IRDY#, C/BE#'s enable and the AD word, and the
        placer may put that LUT by the AD pins across the die (on the ULX3S, DEVSEL# ->
        9.7 ns of wire to it -> back to FRAME#'s register, 22.6 ns).
        """
        m, cells, gnt = s.m, s.cells, s.gnt_counts
        idle_family, busy_family, is_idle = s.idle_family, s.busy_family, s.is_idle
        if not s.expand:
            value = Mux(is_idle, pick(*idle_family[()]), pick(*busy_family[()]))
            return value if gate is None else value & gate

        def cofactor(gnt_value):
            return lambda values: Value.cast(Mux(
                is_idle, pick(*idle_family[gnt_value,]),
                pick(*busy_family[self._busy_key(s, gnt_value, values)])))
        granted, refused = (s.target_lines.choose_now(f"{name}_gnt{gnt_value}",
                                                      cofactor(gnt_value), staged=staged)
                            for gnt_value in (1, 0))
        if len(s.target_lines.names) > SLICE_PAIR_LINES:
            value = Mux(gnt, granted, refused)
            return value if gate is None else value & gate
        if gate is None:
            return Cat(*(cells.lut4(m, two_way, [gnt, granted[bit], refused[bit]],
                                    f"{name}_by_gnt_b{bit}")
                         for bit in range(len(granted))))
        # Gated (an enable only): the gate in the cell's fourth input, the cell in the
        # tristate register's polarity, so no cell follows it.
        return Cat(*(cells.enable_lut4(m, gated_two_way,
                                       [gnt, granted[bit], refused[bit], gate],
                                       f"{name}_floats_b{bit}")
                     for bit in range(len(granted))))

    @staticmethod
    def _busy_key(s, gnt_value, values):
        """The busy family's key of GNT# ``gnt_value`` and the target's lines ``values``."""
        lines_at = dict(zip(s.target_lines.names, values), gnt=gnt_value)
        return tuple(lines_at[name] for name in s.live_names)

    def _ad_decision(self, s):
        """``{part: value}`` of :class:`~.bus.ADDecision`: AD's word and enable on a
        32-bit bus, the values of the phase machine's outputs (``_decide``) as one
        decision between two registered words, which the pads make in the cell that
        joins the target's AD.

        What the machine presents on AD: while idle, the address whenever GNT# counts
        (``go``: a start, or the bus parked on us), else nothing; in the DAC phase the
        upper address; in the address phase a write's held or first word; in a data
        phase a write's word
        (the next one when a word moves now, ``xfer``), nothing once the transaction
        ends with this phase (``kill``: STOP# or a master abort ends the final phase).
        ``high`` is the address while idle and the next word after a data phase that is
        not the final one, so it is 0 in the final phase and ``kill`` can take it
        rather than gate ``low``: the terms of ``take_high`` are ``go``, ``xfer`` and
        ``kill``, each a hand-placed LUT4 of the lines and registered halves
        (:mod:`~pcispy.core.cells`). The pads OR them in a cell next to each pair of AD pins: a
        line crosses that and the pads' join, three cells to AD's registers. (Chosen
        among the sixteen cofactors' words, the lines would cross five or six; as
        ``sel ? high : keep & low`` with the join with the target's word a cell of its
        own, four.) The same values clock for clock:
        ``expansion_prove`` checks them against the folded build.
        """
        (addr, allowed, cells, devsel_overdue, devsel_seen, e_addr, ending, ending_open,
         final_phase, in_data, is_idle, m, now, phase, pin_ad, pin_irdy, txn_write, word) = (
            s.addr, s.allowed, s.cells, s.devsel_overdue, s.devsel_seen, s.e_addr,
            s.ending, s.ending_open, s.final_phase, s.in_data, s.is_idle, s.m, s.now,
            s.phase, s.pin_ad, s.pin_irdy, s.txn_write, s.word)

        def net(value, name):
            return cells.kept(m, value, name)
        # The registered halves of the three decisions (``go`` only while idle,
        # ``xfer`` only in a data phase, ``kill`` only in the final one, not idle).
        go_ok = net(allowed & is_idle, "ad_go_ok")
        xfer_ok = net(in_data & pin_irdy & (~ending | ending_open), "ad_xfer_ok")
        final_open = net(~is_idle & final_phase & ~ending, "ad_final_open")
        abort_due = net(~devsel_seen & devsel_overdue, "ad_abort_due")
        # GNT# counts while idle only with the bus idle: ``gnt_counts`` written out,
        # since ``go_ok`` already holds "idle" and GNT# then meets one LUT of four
        # inputs (``gnt_counts & go_ok`` would read the phase again: five).
        # One copy of the terms per group of AD pins (``ad_groups``), each placed next
        # to its pins.
        terms = []
        for group in range(self.ad_groups):
            terms += [
                cells.lut4(m, lambda gnt, frame, irdy, ok: gnt and not frame and not irdy
                           and ok, [now.gnt, now.frame, now.irdy, go_ok], f"ad_go_{group}",
                           inverted=(0, 1, 2)),
                cells.lut4(m, lambda trdy, devsel, ok, _: trdy and devsel and ok,
                           [now.trdy, now.devsel, xfer_ok], f"ad_xfer_{group}",
                           inverted=(0, 1)),
                cells.lut4(m, lambda stop, devsel, open_, due:
                           open_ and (stop or (not devsel and due)),
                           [now.stop, now.devsel, final_open, abort_due], f"ad_kill_{group}",
                           inverted=(0, 1)),
            ]
        # high: idle, the address; moving now, the next word unless this phase is the
        # final one. low: the DAC phase's upper address; a write's word on the pins
        # through a wait state (or the first), unless the final phase is ending.
        is_dac = phase == _Phase.DAC
        moving_on = txn_write & ~final_phase
        writing = ~is_idle & txn_write & ~(final_phase & ending)
        held_word = Mux(pin_irdy, pin_ad, word[0])
        return {
            "take_high": Cat(*terms),
            "high": net(Mux(is_idle, e_addr[:32], moving_on.replicate(32) & word[1]),
                        "ad_high"),
            "high_oe": net(is_idle | moving_on, "ad_high_oe"),
            "low": net(Mux(is_dac, addr[32:], writing.replicate(32) & held_word),
                       "ad_low"),
            "low_oe": net(is_dac | writing, "ad_low_oe"),
        }

    def _outputs(self, m, s):
        """The outputs: the live lines choose in front of the pads' output flip-flops
        (:meth:`_choose`). AD's words and the handshake lines (``PRESENTED_GATED``) are
        presented as 0 where they are not driven (the board ORs the cores' values
        without their enables: ``merge_bus_drivers``); each cofactor gates its own
        value, from registers, so the live lines choose among gated values. On a 32-bit
        bus, expanded, AD leaves as the decision the pads make (:meth:`_ad_decision`)."""
        bus, driven, expand, wide_bus = s.bus, s.driven, s.expand, s.wide_bus
        def presented(name, port):
            def pick(nxt, drv):
                line = drv[name]
                if port == "o" and name in PRESENTED_GATED:
                    return line.o & line.oe.replicate(len(line.o))
                return getattr(line, port)
            return pick
        late_ad = {}
        if expand and not wide_bus:
            m.d.comb += [getattr(self.ad_decision, part).eq(value)
                         for part, value in self._ad_decision(s).items()]
            late_ad = {("ad", "o"): self.ad_decision.word(),
                       ("ad", "oe"): self.ad_decision.enable()}
        elif not wide_bus:
            # Decided among the cofactors (or folded): the word is the decision's high half.
            m.d.comb += [self.ad_decision.terms(group)[0].eq(1)
                         for group in range(self.ad_groups)]
            m.d.comb += [self.ad_decision.high.eq(bus.ad.o),
                         self.ad_decision.high_oe.eq(bus.ad.oe)]
        for name in driven:
            line = getattr(bus, name)
            for port in ("o", "oe"):
                if (name, port) in late_ad:
                    m.d.comb += getattr(line, port).eq(late_ad[name, port])
                    continue
                # C/BE#'s enable carries passive mode's gate (``drive_allowed``).
                gate = self.drive_allowed if name in CORE_GATED_LINES and port == "oe" else None
                m.d.comb += getattr(line, port).eq(self._choose(
                    s, presented(name, port), f"{name}_{port}",
                    staged=name not in JOINED_LINES, gate=gate))

    def _state(self, m, s):
        """The state. Folded, the registers take the one next state. Expanded, every
        cofactor's next state is registered, and so are the lines that choose among them;
        the choice is made in the next clock, from registers only. The same value, clock
        for clock, but a live line then ends at one flip-flop of its own: the state
        registers, and everything behind them, are out of its reach."""
        (busy_family, expand, gnt_counts, idle_family, is_idle, state, target_lines) = (
            s.busy_family, s.expand, s.gnt_counts, s.idle_family, s.is_idle, s.state,
            s.target_lines)
        if not expand:
            for name, reg in state.items():
                m.d.pci += reg.eq(self._choose(s, lambda nxt, drv: nxt[name], None))
            return

        def registered(family, tag):
            copies = {}
            for key, (nxt, _) in family.items():
                suffix = "".join(map(str, key))
                q = {name: Signal.like(reg, name=f"{name}_{tag}{suffix}_q")
                     for name, reg in state.items()}
                m.d.pci += [q[name].eq(nxt[name]) for name in state]
                copies[key] = q
            return copies
        idle_q = Signal()
        gnt_q = Signal()
        m.d.pci += [idle_q.eq(is_idle), gnt_q.eq(gnt_counts)]
        lines_q = target_lines.registered()
        idle_copies = registered(idle_family, "idle")
        busy_copies = registered(busy_family, "busy")

        def chosen(name, gnt_value):
            return lines_q.choose(lambda values: Value.cast(Mux(
                idle_q, idle_copies[gnt_value,][name],
                busy_copies[self._busy_key(s, gnt_value, values)][name])))
        for name, reg in state.items():
            m.d.comb += reg.eq(Mux(gnt_q, chosen(name, 1), chosen(name, 0)))

    def _read_data_and_parity(self, m, s):
        """Read data (one clock after its data phase), its parity check (PERR#) and the
        Status register's pulses."""
        (bus, in_data, moved_q, phase, received_master_abort, received_target_abort,
         take_q, txn_write, wide_bus) = (
            s.bus, s.in_data, s.moved_q, s.phase, s.received_master_abort,
            s.received_target_abort, s.take_q, s.txn_write, s.wide_bus)
        rd_count = Signal(2)
        m.d.comb += rd_count.eq(Mux(txn_write, 0, moved_q))
        m.d.comb += [
            self.rdata.count.eq(rd_count),
            self.rdata.dw[0].eq(bus.ad.i),
        ]
        if wide_bus:
            m.d.comb += self.rdata.dw[1].eq(bus.ad_hi.i)
        # Data moved at the end of clock k; its PAR is on the pins in clock k + 1, where
        # the pads compare it (par_error); PERR# must be on the pins in clock k + 2.
        bad_parity = Signal()
        bad_hi = (self.par64_error & (rd_count == 2)) if wide_bus else 0
        m.d.comb += bad_parity.eq((rd_count != 0) & (self.par_error | bad_hi))
        m.d.comb += [
            bus.perr.oe.eq(bad_parity & self.parity_response),
            bus.perr.o.eq(1),
        ]
        # Master Data Parity Error: we asserted PERR# on a read, or the target did on a
        # write of ours (sampled in the registered PERR# input, two clocks after data).
        write_window = Signal(3)
        with m.If(txn_write & (phase == _Phase.DATA)):
            m.d.pci += write_window.eq(3)
        with m.Elif(write_window != 0):
            m.d.pci += write_window.eq(write_window - 1)
        # Everything that leaves for the DMA engine and the Status register is registered:
        # the live lines end at these flip-flops.
        detected_parity = Signal()
        master_data_parity = Signal()
        m.d.pci += [
            detected_parity.eq(bad_parity),
            master_data_parity.eq(self.parity_response & (
                bad_parity | (bus.perr.i & ((write_window != 0) | (txn_write & in_data))))),
        ]
        m.d.comb += [
            self.status.received_master_abort.eq(received_master_abort),
            self.status.received_target_abort.eq(received_target_abort),
            self.status.detected_parity.eq(detected_parity),
            self.status.master_data_parity.eq(master_data_parity),
        ]
        m.d.comb += self.wdata_take.eq(take_q)
        return m
