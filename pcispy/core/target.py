# SPDX-License-Identifier: BSD-2-Clause
"""The PCI target: decode, data phases, terminations, parity, and the backend bus.

The target sits behind :class:`~pcispy.core.pads.PCIPads`: what it presents at a
clock edge is on the pins during the next clock, and it sees the wide inputs one clock
late. Address decode is therefore registered and DEVSEL# comes out at medium timing
(clock 3, counting the address phase as clock 1) or later when the exerciser asks; a
build can decode within the address phase instead (fast, clock 2) or register the
decode's result a clock before claiming (slow, clock 4: the address pins then reach
only those registers, not the drivers across the die). The
only decisions taken within the clock they are sampled are the handshakes
(``live.irdy``, ``live.frame``) and the PERR#/SERR# answer to ``par_error``.

Every address range the target answers (configuration space and each BAR) is served by a
*backend* on a :class:`BackendSignature` bus: word-addressed requests with ready/valid and
in-order read responses of any latency. Writes are posted through a small FIFO; reads of
windows that allow it are prefetched into a small FIFO, so bursts run without wait states
in both directions when the backend keeps up.

Each transaction ends the PCI way:

- master completion (FRAME# deasserted on the last phase);
- disconnect with data on the first phase for configuration, I/O, non-prefetchable reads
  and memory bursts with a reserved or cache-wrap burst order (AD[1:0] != 0), and on the
  last word of a window (never runs past the end of a BAR);
- the exerciser's programmed responses (:class:`ResponseKnobs`) on windows marked
  ``exerciser``: DEVSEL# delay, initial and subsequent wait states, disconnect after N
  phases with or without data, retry, target abort on an address range, ACK64# by
  address bit, PAR corruption.

Parity: the pads generate PAR for the read data; the target checks the address phase
(SERR# when enabled; the transaction is still claimed and completed, as PCI permits) and
its write data (PERR# two clocks after the data phase when Parity Error Response is set;
Detected Parity Error in any case).

Timing: the live IRDY# and FRAME# reach only the output flip-flops (DEVSEL#, TRDY#,
STOP#, ACK64#, AD and its enable, the PAR corruption) and two registers of their own; the
live PAR reaches SERR#, PERR# and the Status pulses' flip-flops. The one-bit state whose
next value depends on them is registered once per value of the two lines and chosen by
the registered lines in the next clock; wider state is retimed on registered one-bit
events (:class:`_Retimed`, :class:`_RetimedFIFO`).
"""

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Optional

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.backend import BackendSignature
from pcispy.pci.bus import DECODE_SPEEDS, Command, DevselSpeed, PCIBusSignature
from pcispy.core.live import LiveLines, cells_for
from pcispy.core.pads import LIVE_LINES, decode_signature

__all__ = ["Window", "ResponseKnobs", "PCITarget", "WRITE_FIFO_DEPTH",
           "READ_FIFO_DEPTH"]

#: Posted write buffer depth (words). Four keep zero-wait write bursts flowing.
WRITE_FIFO_DEPTH = 4
#: Read prefetch buffer depth (words), enough to cover one clock of backend latency.
READ_FIFO_DEPTH = 4
# Plain windows whose backend stalls: STOP# (retry) on clock 16 at the latest (16 clocks
# of initial latency, address phase = clock 1, first decision for clock 3), and
# disconnect without data 8 clocks after the last data phase.
INITIAL_STALL_LIMIT = 13
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


class _RegisterFIFO:
    """A small FIFO in flip-flops with a combinational head and a flush."""
    def __init__(self, m, name, shape, depth):
        self.depth = depth
        self.storage = Array(Signal(shape, name=f"{name}_{i}") for i in range(depth))
        self.rp = Signal(range(depth), name=f"{name}_rp")
        self.wp = Signal(range(depth), name=f"{name}_wp")
        self.level = Signal(range(depth + 1), name=f"{name}_level")
        self.push = Signal(name=f"{name}_push")
        self.pop = Signal(name=f"{name}_pop")
        self.flush = Signal(name=f"{name}_flush")
        self.w_data = Signal(shape, name=f"{name}_w_data")
        self.head = self.storage[self.rp]
        self.nonempty = self.level != 0
        with m.If(self.push):
            m.d.pci += [self.storage[self.wp].eq(self.w_data),
                        self.wp.eq(Mux(self.wp == depth - 1, 0, self.wp + 1))]
        with m.If(self.pop):
            m.d.pci += self.rp.eq(Mux(self.rp == depth - 1, 0, self.rp + 1))
        m.d.pci += self.level.eq(self.level + self.push - self.pop)
        with m.If(self.flush):
            m.d.pci += [self.rp.eq(0), self.wp.eq(0), self.level.eq(0)]


class _Retimed:
    """A register whose next value depends on a live handshake line, moved behind the
    register: both candidates are registered and a registered one-bit event picks one in
    the next clock. ``value`` (a comb signal) then equals what registering
    ``Mux(event, when_set, when_clear)`` would hold, clock for clock, while the live line
    reaches only the one-bit event register instead of every bit of ``value``.
    """
    def __init__(self, m, event_q, value):
        self._m = m
        self.when_set = Signal.like(value, name=f"{value.name}_when_set")
        self.when_clear = Signal.like(value, name=f"{value.name}_when_clear")
        m.d.comb += value.eq(Mux(event_q, self.when_set, self.when_clear))

    def update(self, when_set, when_clear):
        """At this edge: the next value is ``when_set`` if the event happens, else
        ``when_clear`` (neither may depend on a live line)."""
        self._m.d.pci += [self.when_set.eq(when_set), self.when_clear.eq(when_clear)]


class _RetimedFIFO:
    """A small FIFO in flip-flops (combinational head) whose ``pop`` and ``flush`` may
    depend on the live handshake: they are registered and applied to the pointers in the
    next clock, while ``rp``, ``level`` and ``head`` already show their effect (the same
    values as popping or flushing at the edge). ``push`` writes the storage and must not
    depend on a live line. A word may be pushed and popped in the same clock even when the
    FIFO is empty (it goes straight through ``head``'s bypass in the caller). ``pop_q`` and
    ``flush_q`` are the registered pop and flush, which the caller keeps."""
    def __init__(self, m, name, shape, depth, pop_q, flush_q):
        self.storage = Array(Signal(shape, name=f"{name}_{i}") for i in range(depth))
        self.rp = Signal(range(depth), name=f"{name}_rp")
        self.wp = Signal(range(depth), name=f"{name}_wp")
        self.level = Signal(range(depth + 1), name=f"{name}_level")
        self.push = Signal(name=f"{name}_push")
        self.w_data = Signal(shape, name=f"{name}_w_data")
        # Pointers before the previous edge's pop and flush, which are kept registered.
        rp_before = Signal(range(depth), name=f"{name}_rp_before")
        wp_before = Signal(range(depth), name=f"{name}_wp_before")
        level_before = Signal(range(depth + 1), name=f"{name}_level_before")

        def advance(pointer):
            return Mux(pointer == depth - 1, 0, pointer + 1)
        m.d.comb += [
            self.rp.eq(Mux(flush_q, 0, Mux(pop_q, advance(rp_before), rp_before))),
            self.wp.eq(Mux(flush_q, 0, wp_before)),
            self.level.eq(Mux(flush_q, 0, level_before - pop_q)),
        ]
        with m.If(self.push):
            m.d.pci += self.storage[self.wp].eq(self.w_data)
        m.d.pci += [
            rp_before.eq(self.rp), wp_before.eq(Mux(self.push, advance(self.wp), self.wp)),
            level_before.eq(self.level + self.push),
        ]
        self.head = self.storage[self.rp]
        self.nonempty = self.level != 0


def _command_in(cmd, predicate):
    """``cmd`` (a C/BE# value) is one of the commands for which ``predicate`` holds
    (the classification lives on :class:`Command`)."""
    return Cat(*(cmd == code for code in Command if predicate(code))).any()


def _is_memory(cmd):
    return _command_in(cmd, lambda code: code.is_memory)


def _is_read(cmd):
    return _command_in(cmd, lambda code: code.is_read and code != Command.INTERRUPT_ACK)


class PCITarget(wiring.Component):
    """The board's PCI target, in clock domain ``pci``.

    Ports:
        bus (Out, PCIBusSignature(width)): to the pads (next-clock drive, sampled inputs).
            AD's word is 0 where it is not driven, and DEVSEL#, TRDY#, STOP# (and
            ACK64#) are asserted only while owned (the board ORs the cores' values:
            :data:`~.bus.PRESENTED_GATED`).
        live (In): ``frame``, ``irdy``, ... unregistered from the pads.
        par_error, par64_error (In, 1): live parity check from the pads.
        corrupt_par, corrupt_par64 (Out, 1): to the pads, flip the PAR of the word
            presented on ``bus.ad.o``.
        config (Out, BackendSignature(6, 32)): configuration space (DWORD number).
        bar<N> (Out, BackendSignature): the backend of window N (one per ``windows``).
        bar_base (In, array of 32): programmed base of each window's BAR.
        io_enable, memory_enable, parity_response, serr_enable (In, 1): Command bits.
        claim_enable (In, 1, init 1): claim transactions at all (0: the board is passive;
            configuration cycles are not answered either, and no SERR# is signalled).
        drive_allowed (In, 1, init 1): AD's enable (``bus.ad.oe``) and SERR# only while this
            is 1 (passive mode clears it; from a register). The pads gate the other lines
            themselves; AD's enable copies join the target's enable with the master's
            decision and have no input left for it (:class:`~.pads.PCIPads`,
            ``master_ad``), and SERR# is one of the pads' ``CORE_GATED_LINES``.
        detected_parity, signaled_serr, signaled_target_abort (Out, 1): Status pulses.
        knobs (In, ResponseKnobs): the exerciser response for windows marked exerciser.
        retry (In, 1): retry the exerciser transaction being claimed now.
        attempt (Out, 1): an exerciser window transaction is being claimed (decode clock).
        corrupt_taken (Out, 1): a read word was loaded with corrupted parity.
        busy (Out, 1): a transaction is claimed or its writes are still being posted.
        bar0_claimed (Out, 1): registered pulse, a transaction to window 0 (BAR0) is
            being claimed: in the second clock after its address phase was on the pins,
            whatever the decode speed (for the spy; :meth:`_bar0_report`).

    Parameters:
        width: bus width, 32 or 64.
        windows: list of :class:`Window` or None (no BAR there), BAR0 first.
        decode: the build's decode speed (:class:`DevselSpeed`, the earliest DEVSEL#
            it can answer with). MEDIUM: from the registered address, DEVSEL# on clock
            3. FAST: within the address phase from the pads' unregistered ``decode``
            lines (port ``decode``, In), DEVSEL# on clock 2 (the address pins then reach
            the whole decision: a long same-clock path). SLOW: the medium decode's
            result registered and claimed a clock later, DEVSEL# on clock 4.
    """
    def __init__(self, width, windows, *, decode=DevselSpeed.MEDIUM):
        if decode not in DECODE_SPEEDS:
            raise ValueError(f"a target decodes fast, medium or slow, not {decode!r}")
        self.width = width
        self.windows = tuple(windows)
        self.decode_speed = decode
        self.fast_decode = decode is DevselSpeed.FAST
        members = {
            "bus": Out(PCIBusSignature(width)),
            "live": In(wiring.Signature({name: Out(1) for name in LIVE_LINES})),
            "par_error": In(1), "corrupt_par": Out(1),
            "config": Out(BackendSignature(6, 32)),
            "bar_base": In(32).array(max(len(self.windows), 1)),
            "io_enable": In(1), "memory_enable": In(1), "claim_enable": In(1, init=1),
            "drive_allowed": In(1, init=1),
            "parity_response": In(1), "serr_enable": In(1),
            "detected_parity": Out(1), "signaled_serr": Out(1),
            "signaled_target_abort": Out(1),
            "knobs": In(ResponseKnobs), "retry": In(1),
            "attempt": Out(1), "corrupt_taken": Out(1), "busy": Out(1),
            "bar0_claimed": Out(1),
        }
        if width == 64:
            members["par64_error"] = In(1)
            members["corrupt_par64"] = Out(1)
        if self.fast_decode:
            members["decode"] = In(decode_signature(width))
        for i, window in enumerate(self.windows):
            if window is None:
                continue
            if window.data_width not in (32, width):
                raise ValueError(f"window {i}: data width {window.data_width} on a "
                                 f"{width}-bit bus")
            members[f"bar{i}"] = Out(BackendSignature(window.addr_bits, window.data_width))
        super().__init__(members)

    def elaborate(self, platform):
        """The target, in the order its parts feed one another: the address phase's
        decode (:meth:`_address_phase`) and parity (:meth:`_address_parity`), the claim
        (:meth:`_claim`) and its report to the spy (:meth:`_bar0_report`), the
        transaction's state (:meth:`_transaction_state`), the read prefetch and
        posted-write buffers (:meth:`_read_prefetch`, :meth:`_posted_writes`), the
        next clock's arithmetic (:meth:`_next_clock`) and the
        next read word (:meth:`_read_word`); then the decision (:meth:`_decide`), built
        per value of the live IRDY# and FRAME#, which choose the handshake outputs
        (:meth:`_handshake_outputs`) and, a clock later, the one-bit state
        (:meth:`_chosen_state`); last AD (:meth:`_read_data_out`), the backend requests
        (:meth:`_backend_requests`) and the write data and its parity
        (:meth:`_write_data_and_parity`).

        ``s`` holds the nets one step makes for the later ones."""
        m = Module()
        backends = [self.config] + [getattr(self, f"bar{i}")
                                    for i, w in enumerate(self.windows) if w is not None]
        s = SimpleNamespace(m=m, bus=self.bus, live=self.live, wide=self.width == 64,
                            cells=cells_for(platform), backends=backends,
                            n_sel=len(backends), knobs=self.knobs)
        self._address_phase(m, s)
        self._address_parity(m, s)
        self._claim(m, s)
        self._bar0_report(m, s)
        self._transaction_state(m, s)
        self._read_prefetch(m, s)
        self._posted_writes(m, s)
        self._next_clock(m, s)
        self._read_word(m, s)
        self._handshake_outputs(m, s)
        self._chosen_state(m, s)
        self._read_data_out(m, s)
        self._backend_requests(m, s)
        self._write_data_and_parity(m, s)
        return m

    def _address_phase(self, m, s):
        """The address phase and its decode: which window (or configuration space) the
        address hits (``hits``), from the registered inputs in clock 2 or, with fast
        decode, the live ones in clock 1."""
        bus, live = s.bus, s.live
        if self.fast_decode:
            def address_phase_with(frame_now):
                """FRAME# asserted now and deasserted at the previous edge."""
                return frame_now & ~bus.frame.i
            source = self.decode
        else:
            frame_q = Signal()
            m.d.pci += frame_q.eq(bus.frame.i)

            def address_phase_with(frame_now):
                """FRAME# asserted at the previous edge, not at the one before (the live
                line plays no part)."""
                return bus.frame.i & ~frame_q
            source = SimpleNamespace(**{name: getattr(bus, name).i
                                        for name in decode_signature(self.width).members})
        address_phase = address_phase_with(live.frame)
        ad, cmd = source.ad, source.cbe
        cmd_read = _is_read(cmd)

        hits = self._decode(source)
        any_hit = Signal()
        m.d.comb += any_hit.eq(Cat(h for _, h, _, _, _ in hits).any())
        vars(s).update(
            ad=ad, address_phase=address_phase, address_phase_with=address_phase_with,
            any_hit=any_hit, cmd_read=cmd_read, hits=hits, source=source)

    def _decode(self, source):
        """``[(select index, hit, dword offset, last dword, window or None)]`` of the
        address phase on ``source`` (AD, C/BE#, IDSEL): configuration space first, then
        each window present."""
        ad, cmd = source.ad, source.cbe
        hits = []
        config_hit = (_command_in(cmd, lambda code: code.is_config)
                      & source.idsel & (ad[0:2] == 0) & (ad[8:11] == 0))
        hits.append((0, config_hit, ad[2:8], 63, None))
        present = [(i, w) for i, w in enumerate(self.windows) if w is not None]
        for sel, (i, window) in enumerate(present, start=1):
            bar = window.bar
            mask = (0xFFFF_FFFF << bar.size_bits) & 0xFFFF_FFFF
            in_range = (ad & mask) == (self.bar_base[i] & mask)
            if bar.kind == "mem":
                hit = _is_memory(cmd) & self.memory_enable & in_range
            else:
                hit = _command_in(cmd, lambda code: code.is_io) & self.io_enable & in_range
            hits.append((sel, hit, ad[2:bar.size_bits], bar.size // 4 - 1, window))
        return hits

    def _bar0_report(self, m, s):
        """``bar0_claimed``, for the board's spy, which keeps the accesses to the board's
        registers out of its figures: the claim of a BAR0 transaction (the same decode, a
        later window winning where BARs overlap), registered, and made from the
        registered inputs at every decode speed, so it adds no load to a live line nor,
        with fast decode, to the unregistered address lines. It pulses in the second
        clock after the address phase was on the pins, the clock in which the board's
        spy, a register later than the pads' inputs, sees that address phase: the clock
        after the claim with medium decode, the claim's clock with slow decode, two
        clocks after it with fast decode."""
        if self.windows[0] is None:
            return
        bus = s.bus
        if self.fast_decode:
            frame_q = Signal(name="report_frame_q")
            m.d.pci += frame_q.eq(bus.frame.i)
            address_phase = bus.frame.i & ~frame_q
            lines = decode_signature(self.width).members
            hits = self._decode(SimpleNamespace(
                **{name: getattr(bus, name).i for name in lines}))
        else:
            address_phase, hits = s.address_phase, s.hits
        # hits[1] is window 0 (configuration space comes first).
        only = hits[1][1] & ~Cat(h for _, h, _, _, _ in hits[2:]).any()
        m.d.pci += self.bar0_claimed.eq(address_phase & only & self.claim_enable)

    def _address_parity(self, m, s):
        """The address phase's parity check: SERR# and the Status pulses."""
        address_phase, cells = s.address_phase, s.cells
        # The PAR of the address phase is on the pins in the clock after it: at the
        # claim with medium decode, one clock after it with fast decode. The claim does
        # not wait for it: PCI lets a target that detects an address parity error claim
        # and complete the transaction as if the address were right (PCI 3.0, 3.7.3), and
        # the live PAR then reaches only SERR# and a status flip-flop, not the decode.
        address_par_clock = Signal()
        if self.fast_decode:
            m.d.pci += address_par_clock.eq(address_phase)
        else:
            m.d.comb += address_par_clock.eq(address_phase)

        # Address parity: the PAR of the address phase is on the pins now. SERR# goes out
        # at once (its I/O flip-flop); the Status pulses leave registered. Whether a
        # parity error now signals SERR# is one net from registers (kept on an FPGA), and
        # SERR# one hand-placed cell of the pads' parity check, it and passive mode's
        # permission, held inverted as SERR#'s tristate register takes it (the pads'
        # inversion cancels): PAR crosses two cells to that register (left to synthesis,
        # four: 0.13 ns over the budget, floorplanned; docs/timing.md).
        serr_armed = cells.kept(m, address_par_clock & self.parity_response &
                                self.serr_enable & self.claim_enable, "serr_armed")
        address_parity_bad = Signal()
        m.d.comb += address_parity_bad.eq(address_par_clock & self.par_error)
        serr_next = cells.enable_lut4(m, lambda error, armed, allowed, _:
                                      error and armed and allowed,
                                      [self.par_error, serr_armed, self.drive_allowed],
                                      "serr_floats")
        m.d.comb += [self.bus.serr.o.eq(serr_next), self.bus.serr.oe.eq(serr_next)]
        # The Status pulse restates the cell's condition rather than reading the cell, so
        # that SERR#'s tristate register stays the cell's one load.
        m.d.pci += self.signaled_serr.eq(self.par_error & serr_armed & self.drive_allowed)
        vars(s).update(address_parity_bad=address_parity_bad)

    def _claim(self, m, s):
        """The claim and the transaction's parameters chosen with it (``c_*``), per
        window beside the BAR compare, registered a clock first with slow decode."""
        (ad, address_phase, address_phase_with, any_hit, hits, live, n_sel, source) = (
            s.ad, s.address_phase, s.address_phase_with, s.any_hit, s.hits, s.live,
            s.n_sel, s.source)
        cmd_read = s.cmd_read
        # Per-transaction parameters, chosen at the claim.
        c_sel = Signal(range(n_sel))
        c_offset = Signal(30)
        c_last = Signal(30)
        c_single = Signal()
        c_prefetch = Signal()
        c_exerciser = Signal()
        c_xfer64 = Signal()
        c_data64 = Signal()
        c_read_only = Signal()
        # The window that claims: one-hot (a later window wins if misprogrammed BARs
        # overlap), so each parameter is an AND-OR of its candidates, not a priority chain
        # of muxes behind the address compare.
        chosen = []
        for k, (sel, hit, offset, last, window) in enumerate(hits):
            later = [h for _, h, _, _, _ in hits[k + 1:]]
            only = Signal(name=f"hit_{sel}")
            m.d.comb += only.eq(hit & ~Cat(*later).any() if later else hit)
            chosen.append((only, sel, offset, last, window))

        def select(width, value_of):
            """OR over the windows of the chosen one's value (``value_of(window, ...)``)."""
            result = Const(0, width)
            for only, sel, offset, last, window in chosen:
                value = value_of(sel, offset, last, window)
                if value is not None:
                    result = result | Mux(only, value, 0)
            return result

        def single(sel, offset, last, window):
            if window is None or window.bar.kind == "io":
                return Const(1)
            # Burst order other than linear: one data phase only.
            return (ad[0:2] != 0) | (cmd_read & ~window.prefetch)

        def xfer64(sel, offset, last, window):
            if window is None or window.data_width != 64:
                return None
            ok = source.req64 & ~ad[2] & (ad[0:2] == 0)
            if window.exerciser:
                ok &= self.knobs.ack64
            if window.ack64_bit is not None:
                ok &= ~ad[window.ack64_bit]
            return ok

        def flag(name):
            return lambda sel, offset, last, window: (
                Const(1) if window is not None and getattr(window, name) else None)
        m.d.comb += [
            c_sel.eq(select(len(c_sel), lambda sel, offset, last, window: Const(sel, len(c_sel)))),
            c_offset.eq(select(30, lambda sel, offset, last, window: offset)),
            c_last.eq(select(30, lambda sel, offset, last, window: Const(last, 30))),
            c_single.eq(select(1, single)),
            c_prefetch.eq(select(1, flag("prefetch"))),
            c_exerciser.eq(select(1, flag("exerciser"))),
            c_read_only.eq(select(1, flag("read_only"))),
            c_data64.eq(select(1, lambda sel, offset, last, window: (
                Const(1) if window is not None and window.data_width == 64 else None))),
            c_xfer64.eq(select(1, xfer64)),
        ]

        knobs = self.knobs
        # The claim's address arithmetic, made per window from AD beside the BAR compare
        # and chosen by the one-hot hit afterwards (not on the chosen offset, behind it).
        # c_at_end: the first phase is the window's last (offset + step > last: an offset
        # inside its window has all its bits set, the lowest aside for a 64-bit step).
        # c_abort_range: the first phase addresses the exerciser's abort range.
        c_at_end = Signal()
        c_abort_range = Signal()

        def abort_range(byte_addr):
            return (byte_addr >= knobs.abort_first) & (byte_addr <= knobs.abort_last)

        def window_abort_range(sel, offset, last, window):
            if window is None or not window.exerciser:
                return None
            return abort_range(Cat(Const(0, 2), offset))
        m.d.comb += [
            c_at_end.eq(select(1, lambda sel, offset, last, window: (
                Mux(c_xfer64, offset[1:].all(), offset.all())))),
            c_abort_range.eq(select(1, window_abort_range)),
        ]
        # Slow decode: everything the decode chose is registered, and the claim is the
        # clock after (DEVSEL# one clock later than medium). The address pins then end at
        # these registers; only the registered hit reaches the drivers' enables.
        decoded = dict(hit=address_phase & any_hit, read=cmd_read, sel=c_sel,
                       offset=c_offset, last=c_last, single=c_single, prefetch=c_prefetch,
                       exerciser=c_exerciser, read_only=c_read_only, data64=c_data64,
                       xfer64=c_xfer64, at_end=c_at_end, abort_range=c_abort_range)
        if self.decode_speed is DevselSpeed.SLOW:
            for name, value in decoded.items():
                registered = Signal.like(value, name=f"decoded_{name}")
                m.d.pci += registered.eq(value)
                decoded[name] = registered

            def claim_with(frame_now):
                """We claim the transaction (decoded a clock ago; FRAME# plays no part)."""
                return decoded["hit"] & self.claim_enable
        else:
            def claim_with(frame_now):
                """We claim the transaction, with FRAME# on the pins now ``frame_now``."""
                return address_phase_with(frame_now) & any_hit & self.claim_enable
        (cmd_read, c_sel, c_offset, c_last, c_single, c_prefetch, c_exerciser, c_read_only,
         c_data64, c_xfer64, c_at_end, c_abort_range) = (decoded[name] for name in (
            "read", "sel", "offset", "last", "single", "prefetch", "exerciser", "read_only",
            "data64", "xfer64", "at_end", "abort_range"))
        claim = Signal()
        m.d.comb += claim.eq(claim_with(live.frame))
        m.d.comb += self.attempt.eq(claim & c_exerciser)

        # Clocks before the first TRDY# of an exerciser window: from the registers alone,
        # so the decode only selects it.
        exerciser_wait = Signal(9)
        m.d.comb += exerciser_wait.eq(knobs.devsel_delay + knobs.initial_wait)
        c_retry = Signal()
        c_devsel_delay = Signal(2)
        with m.If(c_exerciser):
            m.d.comb += [c_retry.eq(self.retry), c_devsel_delay.eq(knobs.devsel_delay)]
        vars(s).update(
            abort_range=abort_range, c_abort_range=c_abort_range, c_at_end=c_at_end,
            c_data64=c_data64, c_devsel_delay=c_devsel_delay, c_exerciser=c_exerciser,
            c_last=c_last, c_offset=c_offset, c_prefetch=c_prefetch,
            c_read_only=c_read_only, c_retry=c_retry, c_sel=c_sel, c_single=c_single,
            c_xfer64=c_xfer64, claim=claim, claim_with=claim_with, cmd_read=cmd_read,
            exerciser_wait=exerciser_wait, knobs=knobs)

    def _transaction_state(self, m, s):
        """The transaction's state (``t_*`` and the retimed counters) and the state as the
        decision at this edge sees it (``e_*``: the claim's values in the claim's clock).

        Timing (docs/architecture.md, "I/O timing"): the live IRDY# and FRAME# reach the
        output flip-flops and a few one-bit registers only. The decision is built once
        for each value of the two lines and they select among the results last; every
        wider register whose next value depends on them is a :class:`_Retimed` (its
        candidates registered, a registered one-bit event choosing), so the values are
        the same clock for clock and the live lines never fan out into the datapath."""
        (c_data64, c_devsel_delay, c_exerciser, c_last, c_offset, c_prefetch, c_read_only,
         c_retry, c_sel, c_single, c_xfer64, claim, cmd_read, exerciser_wait, n_sel) = (
            s.c_data64, s.c_devsel_delay, s.c_exerciser, s.c_last, s.c_offset,
            s.c_prefetch, s.c_read_only, s.c_retry, s.c_sel, s.c_single, s.c_xfer64,
            s.claim, s.cmd_read, s.exerciser_wait, s.n_sel)
        active = Signal()        # claimed, in data phases (DEVSEL# may still be delayed)
        backoff = Signal()       # STOP# asserted, waiting for FRAME# to be deasserted
        t_sel = Signal(range(n_sel))
        t_read = Signal()
        t_single = Signal()
        t_prefetch = Signal()
        t_exerciser = Signal()
        t_xfer64 = Signal()
        t_data64 = Signal()
        t_last = Signal(30)
        t_retry = Signal()
        devsel_wait = Signal(2)
        moved_q = Signal()       # a data phase moved at the previous edge
        wait_cnt = Signal(9)
        phases = Signal(16)      # data phases completed
        group = Signal(8)        # phases since the last inserted wait
        addr = Signal(30)        # dword offset of the phase on the bus (next to move)
        stall = Signal(5)        # clocks since the claim or the last data phase
        retimed = {name: _Retimed(m, moved_q, value) for name, value in (
            ("wait", wait_cnt), ("phases", phases), ("group", group), ("addr", addr),
            ("stall", stall))}

        # Pin shadows: what the pads drive during this clock.
        devsel_p, trdy_p, stop_p = Signal(), Signal(), Signal()

        e_active = Signal()
        e_sel = Signal(range(n_sel))
        e_read, e_single, e_prefetch, e_exerciser, e_xfer64, e_data64, e_retry = (
            Signal(name=n) for n in ("e_read", "e_single", "e_prefetch", "e_exerciser",
                                     "e_xfer64", "e_data64", "e_retry"))
        e_last = Signal(30)
        e_devsel_wait = Signal(2)
        e_wait = Signal(9)
        e_phases = Signal(16)
        e_group = Signal(8)
        e_addr = Signal(30)
        with m.If(claim):
            m.d.comb += [
                e_active.eq(1), e_sel.eq(c_sel), e_read.eq(cmd_read), e_single.eq(c_single),
                e_prefetch.eq(c_prefetch), e_exerciser.eq(c_exerciser),
                e_xfer64.eq(c_xfer64), e_data64.eq(c_data64), e_retry.eq(c_retry),
                e_last.eq(c_last), e_devsel_wait.eq(c_devsel_delay),
                e_wait.eq(Mux(c_exerciser, exerciser_wait, 0)),
                e_phases.eq(0), e_group.eq(0), e_addr.eq(c_offset),
            ]
        with m.Else():
            m.d.comb += [
                e_active.eq(active), e_sel.eq(t_sel), e_read.eq(t_read),
                e_single.eq(t_single), e_prefetch.eq(t_prefetch),
                e_exerciser.eq(t_exerciser), e_xfer64.eq(t_xfer64), e_data64.eq(t_data64),
                e_retry.eq(t_retry), e_last.eq(t_last), e_devsel_wait.eq(devsel_wait),
                e_wait.eq(wait_cnt), e_phases.eq(phases), e_group.eq(group), e_addr.eq(addr),
            ]
        t_read_only = Signal()
        with m.If(claim):
            m.d.pci += t_read_only.eq(c_read_only)
            m.d.pci += [t_sel.eq(c_sel), t_read.eq(cmd_read), t_single.eq(c_single),
                        t_prefetch.eq(c_prefetch), t_exerciser.eq(c_exerciser),
                        t_xfer64.eq(c_xfer64), t_data64.eq(c_data64), t_retry.eq(c_retry),
                        t_last.eq(c_last)]

        step = Mux(e_xfer64, 2, 1)
        vars(s).update(
            active=active, addr=addr, backoff=backoff, devsel_p=devsel_p,
            devsel_wait=devsel_wait, e_active=e_active, e_addr=e_addr,
            e_devsel_wait=e_devsel_wait, e_read=e_read, e_retry=e_retry, e_sel=e_sel,
            e_xfer64=e_xfer64, group=group, moved_q=moved_q, phases=phases, retimed=retimed,
            stall=stall, step=step, stop_p=stop_p, t_data64=t_data64,
            t_exerciser=t_exerciser, t_last=t_last, t_read=t_read, t_read_only=t_read_only,
            t_retry=t_retry, t_single=t_single, t_xfer64=t_xfer64, trdy_p=trdy_p,
            wait_cnt=wait_cnt)

    def _read_prefetch(self, m, s):
        """The read prefetch: the FIFO of words read ahead, the requests outstanding and
        the answers to discard, and the word on AD."""
        backends, wide = s.backends, s.wide
        data_bits = 64 if wide else 32
        end_q = Signal()             # the transaction ended at the previous edge
        load_q = Signal()            # AD was loaded with the next word at the previous edge
        # (A word leaves the FIFO as it is loaded onto AD; a transaction's end flushes it.)
        rfifo = _RetimedFIFO(m, "rfifo", data_bits, READ_FIFO_DEPTH,
                             pop_q=load_q, flush_q=end_q)
        outstanding = Signal(range(READ_FIFO_DEPTH + 1))
        discard = Signal(range(READ_FIFO_DEPTH + 1))
        discard_r = _Retimed(m, end_q, discard)
        req_addr = Signal(30)        # dword offset of the next read request
        req_count = Signal(16)       # read requests issued in this transaction
        load_addr = Signal(30)       # dword offset of the next word loaded onto AD
        cur_valid = Signal()         # the AD output holds the word of the current phase
        cur_corrupt = Signal()
        ad_cur = Signal(data_bits)   # the word on AD now
        loaded = {name: _Retimed(m, load_q, value) for name, value in (
            ("load_addr", load_addr), ("cur_corrupt", cur_corrupt), ("ad_cur", ad_cur))}
        # Read responses: only the selected backend has requests outstanding.
        r_valid = Signal()
        r_data = Signal(data_bits)
        for backend in backends:
            with m.If(backend.r_valid):
                m.d.comb += [r_valid.eq(1), r_data.eq(backend.r_data)]
        read_avail = rfifo.nonempty | (r_valid & (discard == 0))
        vars(s).update(
            ad_cur=ad_cur, cur_corrupt=cur_corrupt, cur_valid=cur_valid,
            data_bits=data_bits, discard=discard, discard_r=discard_r, end_q=end_q,
            load_addr=load_addr, load_q=load_q, loaded=loaded, outstanding=outstanding,
            r_data=r_data, r_valid=r_valid, read_avail=read_avail, req_addr=req_addr,
            req_count=req_count, rfifo=rfifo)

    def _posted_writes(self, m, s):
        """The posted-write FIFO and the write phase sampled at the previous edge."""
        data_bits, n_sel = s.data_bits, s.n_sel
        wr_layout = data.StructLayout({"sel": range(n_sel), "addr": 30,
                                       "data": data_bits, "be": data_bits // 8, "x64": 1})
        wfifo = _RegisterFIFO(m, "wfifo", wr_layout, WRITE_FIFO_DEPTH)
        wr_moved = Signal()          # a write phase moved at the previous edge
        wr_addr = Signal(30)
        wr_sel = Signal(range(n_sel))
        wr_x64 = Signal()
        w_entry = Signal(wr_layout)  # the write phase sampled at the previous edge
        vars(s).update(
            w_entry=w_entry, wfifo=wfifo, wr_addr=wr_addr, wr_layout=wr_layout,
            wr_moved=wr_moved, wr_sel=wr_sel, wr_x64=wr_x64)

    def _next_clock(self, m, s):
        """The next-clock arithmetic, for a phase that moves at this edge or not (plain
        logic of registers: the live IRDY# only chooses between the two later)."""
        (abort_range, active, addr, c_abort_range, c_at_end, c_devsel_delay, c_exerciser,
         c_last, c_offset, c_retry, c_single, c_xfer64, cmd_read, devsel_wait,
         exerciser_wait, group, knobs, phases, stall, t_exerciser, t_last, t_read, t_retry,
         t_single, t_xfer64, trdy_p, wait_cnt, wfifo, wr_moved) = (
            s.abort_range, s.active, s.addr, s.c_abort_range, s.c_at_end,
            s.c_devsel_delay, s.c_exerciser, s.c_last, s.c_offset, s.c_retry, s.c_single,
            s.c_xfer64, s.cmd_read, s.devsel_wait, s.exerciser_wait, s.group, s.knobs,
            s.phases, s.stall, s.t_exerciser, s.t_last, s.t_read, s.t_retry, s.t_single,
            s.t_xfer64, s.trdy_p, s.wait_cnt, s.wfifo, s.wr_moved)
        def after(address, xfer64, mv):
            """The dword offset after this edge (30 bits, as ``next_addr``)."""
            return (address + Mux(xfer64, 2, 1))[:30] if mv else address

        def phases_after(count, mv):
            return (count + 1)[:16] if mv else count

        # The transaction as the decision sees it: a new one claimed in this clock (its
        # parameters from the address decode), or the one running (registers). The decision
        # is built for each and the claim picks one last, so the decode of the address
        # phase (a wire across the die away from some AD pins) reaches the outputs through
        # that one mux instead of the whole decision.
        def view(claimed):
            v = SimpleNamespace(claimed=claimed)
            if claimed:
                v.active, v.read, v.single, v.exerciser = Const(1), cmd_read, c_single, c_exerciser
                v.xfer64, v.retry, v.devsel_wait = c_xfer64, c_retry, c_devsel_delay
                v.wait = Mux(c_exerciser, exerciser_wait, 0)
                v.group = Const(0, 8)
                v.base = (c_offset, Const(0, 16), c_xfer64, c_last)
                v.at_end, v.abort_range = c_at_end, c_abort_range
            else:
                v.active, v.read, v.single, v.exerciser = active, t_read, t_single, t_exerciser
                v.xfer64, v.retry, v.devsel_wait = t_xfer64, t_retry, devsel_wait
                v.wait = wait_cnt
                v.group = group
                v.base = (addr, phases, t_xfer64, t_last)
            return v
        views = {claimed: view(claimed) for claimed in (False, True)}

        def by_move(mv, v):
            """Everything the decision needs that depends on whether a phase moves (``mv``,
            a Python bool) but not on FRAME#, for the transaction ``v`` (a :func:`view`).
            No phase moves in the claim's clock (TRDY# was deasserted since the previous
            transaction's last phase), so a moving phase is always the running one's."""
            def ahead(fn):
                return fn(*v.base, mv)
            r = SimpleNamespace()
            r.next_addr = ahead(lambda a, p, x, last, mv: after(a, x, mv))
            r.next_phases = ahead(lambda a, p, x, last, mv: phases_after(p, mv))
            r.group_full = (v.exerciser & (knobs.wait_every != 0) & (knobs.wait_clocks != 0)
                            & (v.group + 1 == knobs.wait_every)) if mv else Const(0)
            r.wcount = Mux(r.group_full, knobs.wait_clocks, v.wait)
            r.wcount_zero = r.wcount == 0
            # Room for posted writes: the one being pushed, the one moving, the next one.
            r.write_room = (wfifo.level + wr_moved + 1 + int(mv)) <= WRITE_FIFO_DEPTH

            if v.claimed:       # (mv is False: no phase moves in the claim's clock)
                in_range, at_end = v.abort_range, v.at_end
            else:
                in_range = ahead(lambda a, p, x, last, mv: abort_range(
                    Cat(Const(0, 2), after(a, x, mv))))
                at_end = ahead(lambda a, p, x, last, mv: after(a, x, mv) + Mux(x, 2, 1) > last)
            r.in_abort = v.exerciser & knobs.abort_enable & in_range
            disc_n = v.exerciser & (knobs.disconnect_after != 0)
            first_phase = ahead(lambda a, p, x, last, mv: phases_after(p, mv) == 0)
            disconnect_next = ahead(
                lambda a, p, x, last, mv: phases_after(p, mv) + 1 == knobs.disconnect_after)
            disconnect_now = ahead(
                lambda a, p, x, last, mv: phases_after(p, mv) == knobs.disconnect_after)
            r.with_data = (v.single & first_phase) | at_end \
                | (disc_n & knobs.disconnect_data & disconnect_next)
            r.without_data = disc_n & ~knobs.disconnect_data & disconnect_now
            # Next values of the retimed registers (a phase moved: trdy_p was set).
            if mv:
                r.wait_next = Mux(r.wcount != 0, r.wcount - 1, 0)
                r.group_next = Mux(r.group_full, 0, v.group + 1)
                r.stall_next = 1
            else:
                r.wait_next = Mux(trdy_p, r.wcount, Mux(r.wcount != 0, r.wcount - 1, 0))
                r.group_next = v.group
                r.stall_next = 1 if v.claimed else Mux(stall == 31, 31, stall + 1)
            return r
        # moves[claimed][mv]; a moving phase is the running transaction's.
        moves = {claimed: {0: by_move(False, views[claimed]), 1: by_move(True, views[False])}
                 for claimed in (False, True)}
        vars(s).update(moves=moves, views=views)

    def _read_word(self, m, s):
        """Read data for the next phase: the FIFO head, or a word arriving now, and its
        parity corruption."""
        (data_bits, knobs, load_addr, r_data, rfifo, t_data64, t_exerciser, t_xfer64, wide) = (
            s.data_bits, s.knobs, s.load_addr, s.r_data, s.rfifo, s.t_data64,
            s.t_exerciser, s.t_xfer64, s.wide)
        # (A word is never loaded in the claim's clock: the running transaction's values.)
        lane_hi = load_addr[0] & ~t_xfer64
        head = Mux(rfifo.nonempty, rfifo.head, r_data)
        head_word = Signal(data_bits)
        if wide:
            m.d.comb += head_word.eq(Cat(Mux(t_data64 & lane_hi, head[32:], head[:32]),
                                         head[32:]))
        else:
            m.d.comb += head_word.eq(head)
        corrupt_taken_q = Signal()
        # A one-shot corruption is disarmed a clock after the word that took it: skip the
        # word loaded in between.
        new_corrupt = t_exerciser & (knobs.corrupt | (knobs.corrupt_once & ~corrupt_taken_q))
        vars(s).update(
            corrupt_taken_q=corrupt_taken_q, head_word=head_word, new_corrupt=new_corrupt)

    def _decide(self, s, irdy, frame, v):
        """What to drive next clock and the one-bit next state, were IRDY# and FRAME#
        on the pins now ``irdy`` and ``frame`` (Python ints), for the transaction
        ``v`` (a :func:`view`)."""
        (active, ad_cur, backoff, cur_corrupt, cur_valid, devsel_p, head_word, m, moves,
         new_corrupt, phases, read_avail, stall, stop_p, trdy_p, wide) = (
            s.active, s.ad_cur, s.backoff, s.cur_corrupt, s.cur_valid, s.devsel_p,
            s.head_word, s.m, s.moves, s.new_corrupt, s.phases, s.read_avail, s.stall,
            s.stop_p, s.trdy_p, s.wide)
        claiming = Const(int(v.claimed), 1)
        irdy, frame = Const(irdy, 1), Const(frame, 1)
        moved = irdy & trdy_p
        by = moves[v.claimed]
        mv = {name: Mux(moved, getattr(by[1], name), getattr(by[0], name))
              for name in vars(by[0])}
        final = moved & ~frame
        d = SimpleNamespace()
        # No word is loaded in the claim's clock: its first read request leaves now and
        # every answer of an earlier transaction is discarded.
        d.load = ~claiming & v.active & v.read & read_avail & (moved | ~cur_valid) & ~final
        d.next_valid = d.load | (cur_valid & ~moved)
        ready = mv["wcount_zero"] & ~mv["in_abort"] & Mux(v.read, d.next_valid,
                                                        mv["write_room"])
        # Latency rules for the plain windows (the exerciser breaks them only on
        # purpose): clocks since the claim or the last data phase.
        late = (~v.exerciser & ~(claiming | moved)
                & (stall >= Mux(phases == 0, INITIAL_STALL_LIMIT, SUBSEQUENT_STALL_LIMIT)))
        suffix = f"_{int(v.claimed)}{irdy.value}{frame.value}"
        devsel_n, trdy_n, stop_n, next_active, next_backoff, abort_now = (
            Signal(name=n + suffix) for n in ("devsel_n", "trdy_n", "stop_n",
                                              "next_active", "next_backoff", "abort_now"))
        release = final | (~frame & ~irdy)
        with m.If(backoff):
            # Hold STOP# (and DEVSEL#, unless aborting) until FRAME# is deasserted.
            with m.If(frame):
                m.d.comb += [devsel_n.eq(devsel_p), stop_n.eq(1), next_backoff.eq(1)]
        with m.Elif(v.active):
            with m.If(release):
                # Last phase moved, or the initiator gave up (master abort): release.
                pass
            with m.Elif(trdy_p & ~moved):
                # TRDY# is asserted until its data phase completes: hold everything.
                m.d.comb += [devsel_n.eq(1), trdy_n.eq(1), stop_n.eq(stop_p),
                             next_active.eq(1)]
            with m.Elif(moved & stop_p):
                # Disconnect with data done; FRAME# still asserted: wait for it.
                m.d.comb += [devsel_n.eq(1), stop_n.eq(1), next_backoff.eq(1)]
            with m.Elif(v.devsel_wait != 0):
                m.d.comb += next_active.eq(1)
            with m.Elif(v.retry | mv["without_data"]):
                m.d.comb += [devsel_n.eq(1), stop_n.eq(1), next_backoff.eq(1)]
            with m.Elif(mv["in_abort"] & devsel_p):
                m.d.comb += [stop_n.eq(1), next_backoff.eq(1), abort_now.eq(1)]
            with m.Elif(late & ~ready):
                # The backend is too slow for the latency rules: retry (no data yet) or
                # disconnect without data, rather than hold the bus.
                m.d.comb += [devsel_n.eq(1), stop_n.eq(1), next_backoff.eq(1)]
            with m.Else():
                m.d.comb += [devsel_n.eq(1), trdy_n.eq(ready),
                             stop_n.eq(ready & frame & mv["with_data"]),
                             next_active.eq(1)]
        d.devsel_n, d.trdy_n, d.stop_n = devsel_n, trdy_n, stop_n
        d.next_active, d.next_backoff, d.abort_now = next_active, next_backoff, abort_now
        d.end_txn = (active | backoff) & ~next_active & ~next_backoff
        # The lines are owned (driven) in exactly the branches above that assert one of
        # them. Written from the branch conditions rather than as DEVSEL# | TRDY# |
        # STOP#: the same value, but the enables (AD's above all, 32 or 64 pads away)
        # then wait for neither the ready nor the disconnect and abort arithmetic of
        # the claim's address, which only choose between the asserting branches.
        d.own = Mux(backoff, frame,
                    v.active & ~release
                    & ((trdy_p & ~moved) | (moved & stop_p) | (v.devsel_wait == 0)))
        # AD is driven while the lines are owned in a read, never in the turnaround
        # clock after the address phase (fast decode claims then). A claim never meets
        # a backoff (STOP# is held only while FRAME# is asserted, and a claim follows a
        # clock with FRAME# deasserted).
        if v.claimed:
            d.drive_ad = Const(0) if self.fast_decode else d.own & v.read
        else:
            d.drive_ad = d.own & v.read & (v.active | backoff)
        d.ad = Mux(d.load, head_word, ad_cur)
        d.corrupt = Mux(d.load, new_corrupt, cur_corrupt)
        d.xfer64 = v.xfer64 & devsel_n
        # The word as presented to the pads: 0 on lanes not driven (the pads OR the
        # cores' AD words without their enables: ``merge_bus_drivers``).
        lanes = d.drive_ad.replicate(32)
        if wide:
            lanes = Cat(lanes, (d.drive_ad & d.xfer64).replicate(32))
        d.ad_presented = d.ad & lanes
        return d

    def _handshake_outputs(self, m, s):
        """DEVSEL#, TRDY#, STOP# and their enable, chosen by the live IRDY# and FRAME#
        among the decision's cofactors (:class:`~.live.LiveLines`, FRAME# choosing
        last). Within each cofactor the claim chooses between the decisions for the
        running and a newly claimed transaction (from registers, or decoded in the
        address phase), so that the live lines only pick among four kept nets at the
        output registers, in a slice of hand-placed cells per bit (IRDY# into two LUT4s,
        FRAME# their PFUMX). With fast decode the claim reads the live FRAME# (the
        address phase is the clock it is first asserted): within the cofactor for
        FRAME# = f it is that value."""
        cells, claim_with, live, views = s.cells, s.claim_with, s.live, s.views
        cases = {(c, i, f): self._decide(s, i, f, views[c])
                 for c in (False, True) for i in (0, 1) for f in (0, 1)}
        lines = LiveLines(m, cells, {"frame": live.frame, "irdy": live.irdy})

        def decision(name, claimable=True):
            """The decision's ``name`` as a function of a cofactor's ``values``, the
            claim chosen (``claimable``; else the running transaction's, for a value the
            claim's clock does not need)."""
            def value(values):
                i, f = lines.value(values, "irdy"), lines.value(values, "frame")
                running = getattr(cases[False, i, f], name)
                if not claimable:
                    return running
                return Mux(claim_with(Const(f, 1)), getattr(cases[True, i, f], name), running)
            return value

        def cofactor(name):
            """The decision's ``name`` (the claim chosen) as a function of a cofactor's
            ``values``: the kept net the live choice takes it from."""
            return lambda values: lines.kept(name, values, decision(name))

        def live_pick(name, claimable=True, gate=None):
            """The decision's ``name`` for IRDY# and FRAME# as they are on the pins now;
            0 where ``gate`` (a register) is 0."""
            return lines.choose_now(name if claimable else f"{name}_running",
                                    decision(name, claimable), gate=gate)

        devsel_n, trdy_n, stop_n, own = (Signal(name=n) for n in
                                         ("devsel_n", "trdy_n", "stop_n", "own"))
        m.d.comb += [devsel_n.eq(live_pick("devsel_n")), trdy_n.eq(live_pick("trdy_n")),
                     stop_n.eq(live_pick("stop_n")), own.eq(live_pick("own"))]
        vars(s).update(
            cofactor=cofactor, devsel_n=devsel_n, lines=lines, live_pick=live_pick, own=own,
            stop_n=stop_n, trdy_n=trdy_n)

    def _chosen_state(self, m, s):
        """One-bit state and registered events, chosen a clock late: each is registered
        once per value of IRDY# and FRAME# (the claim already chosen: it comes from
        registers), the two lines are registered beside them, and the registered lines
        choose (:meth:`~.live.LiveLines.choose_later`). The same value clock for clock as
        registering the live choice, while the live lines end at their own two
        flip-flops. Then the retimed registers' updates and the handshake lines."""
        (active, backoff, bus, claim, cofactor, corrupt_taken_q, cur_valid, devsel_n,
         devsel_p, devsel_wait, e_active, e_devsel_wait, e_read, end_q, lines, live_pick,
         load_q, moved_q, moves, new_corrupt, outstanding, own, retimed, stop_n, stop_p,
         trdy_n, trdy_p, wfifo, wide, wr_moved) = (
            s.active, s.backoff, s.bus, s.claim, s.cofactor, s.corrupt_taken_q,
            s.cur_valid, s.devsel_n, s.devsel_p, s.devsel_wait, s.e_active,
            s.e_devsel_wait, s.e_read, s.end_q, s.lines, s.live_pick, s.load_q, s.moved_q,
            s.moves, s.new_corrupt, s.outstanding, s.own, s.retimed, s.stop_n, s.stop_p,
            s.trdy_n, s.trdy_p, s.wfifo, s.wide, s.wr_moved)

        chosen_later = lines.choose_later

        def irdy(values):
            return Const(lines.value(values, "irdy"))

        signaled_target_abort = Signal()
        m.d.comb += [
            active.eq(chosen_later("active", cofactor("next_active"))),
            backoff.eq(chosen_later("backoff", cofactor("next_backoff"))),
            devsel_p.eq(chosen_later("devsel_p", cofactor("devsel_n"))),
            trdy_p.eq(chosen_later("trdy_p", cofactor("trdy_n"))),
            stop_p.eq(chosen_later("stop_p", cofactor("stop_n"))),
            moved_q.eq(chosen_later("moved", lambda values: irdy(values) & trdy_p)),
            load_q.eq(chosen_later("load", cofactor("load"))),
            end_q.eq(chosen_later("end_txn", cofactor("end_txn"))),
            cur_valid.eq(chosen_later("cur_valid", lambda values: (
                cofactor("next_valid")(values) & cofactor("next_active")(values)))),
            signaled_target_abort.eq(chosen_later("abort", cofactor("abort_now"))),
            corrupt_taken_q.eq(chosen_later("corrupt_taken", lambda values: (
                cofactor("load")(values) & new_corrupt))),
            # A write phase moved at the previous edge.
            wr_moved.eq(chosen_later("wr_moved", lambda values: (
                irdy(values) & trdy_p & ~e_read & e_active))),
        ]
        m.d.comb += [self.signaled_target_abort.eq(signaled_target_abort),
                     self.corrupt_taken.eq(corrupt_taken_q)]

        # Retimed registers. Outside a transaction they are not read (the claim's values
        # replace them through the e_* view), so they follow the arithmetic every clock.
        m.d.pci += devsel_wait.eq(Mux(e_devsel_wait != 0, e_devsel_wait - 1, 0))
        for name, field in (("wait", "wait_next"), ("phases", "next_phases"),
                            ("group", "group_next"), ("addr", "next_addr"),
                            ("stall", "stall_next")):
            retimed[name].update(getattr(moves[False][1], field),
                                 Mux(claim, getattr(moves[True][0], field),
                                     getattr(moves[False][0], field)))

        m.d.comb += [
            bus.devsel.o.eq(devsel_n), bus.devsel.oe.eq(own),
            bus.trdy.o.eq(trdy_n), bus.trdy.oe.eq(own),
            bus.stop.o.eq(stop_n), bus.stop.oe.eq(own),
            self.busy.eq(active | backoff | wfifo.nonempty | wr_moved | (outstanding != 0)),
        ]
        if wide:
            s.xfer64_n = live_pick("xfer64")
            m.d.comb += [bus.ack64.o.eq(s.xfer64_n), bus.ack64.oe.eq(own)]

    def _read_data_out(self, m, s):
        """Read data onto AD, with its enable and its parity's corruption."""
        (ad_cur, bus, c_offset, claim, cur_corrupt, head_word, live_pick, load_addr,
         loaded, new_corrupt, step, wide) = (
            s.ad_cur, s.bus, s.c_offset, s.claim, s.cur_corrupt, s.head_word, s.live_pick,
            s.load_addr, s.loaded, s.new_corrupt, s.step, s.wide)
        # The word (and its parity's corruption) leaves without the claim: AD's value then
        # waits for no address decode (only its enable does). In the claim's clock the
        # target drives AD for the first time and TRDY# cannot be asserted yet (no word is
        # loaded then), so the word does not count; the running transaction's decision
        # presents 0 in it (the target is idle before a claim).
        # The pads join AD's enable with the master's decision in cells with no input
        # left for the permission: the target applies it, in its slices' free input (to
        # the word as well, which is 0 wherever AD is not driven).
        drive_ad = live_pick("drive_ad", gate=self.drive_allowed)
        ad_next = live_pick("ad_presented", claimable=False, gate=self.drive_allowed)
        corrupt_next = live_pick("corrupt", claimable=False)
        m.d.comb += [
            bus.ad.o.eq(ad_next[:32]), bus.ad.oe.eq(drive_ad),
            self.corrupt_par.eq(corrupt_next),
        ]
        if wide:
            m.d.comb += [
                bus.ad_hi.o.eq(ad_next[32:]),
                bus.ad_hi.oe.eq(drive_ad & s.xfer64_n),
                self.corrupt_par64.eq(corrupt_next),
            ]
        loaded["ad_cur"].update(head_word, ad_cur)
        loaded["cur_corrupt"].update(new_corrupt, cur_corrupt)
        # A load in the claim's clock advances the old offset (it cannot happen: nothing
        # was requested yet); otherwise the claim starts the offset.
        loaded["load_addr"].update(load_addr + step, Mux(claim, c_offset, load_addr))

    def _backend_requests(self, m, s):
        """Backend requests: posted writes drained first, then read requests; the read
        answers into the prefetch FIFO."""
        (backends, backoff, c_offset, claim, discard, discard_r, e_active, e_read, e_retry,
         e_sel, knobs, n_sel, outstanding, r_data, r_valid, req_addr, req_count, rfifo,
         step, t_exerciser, t_last, t_read_only, t_single, w_entry, wfifo, wr_layout,
         wr_moved) = (
            s.backends, s.backoff, s.c_offset, s.claim, s.discard, s.discard_r,
            s.e_active, s.e_read, s.e_retry, s.e_sel, s.knobs, s.n_sel, s.outstanding,
            s.r_data, s.r_valid, s.req_addr, s.req_count, s.rfifo, s.step, s.t_exerciser,
            s.t_last, s.t_read_only, s.t_single, s.w_entry, s.wfifo, s.wr_layout,
            s.wr_moved)
        # Read requests of the running transaction stop at its phase limit: one for a
        # single-phase one, the exerciser's disconnect point, else unlimited.
        read_phase_limit = Signal(16)
        m.d.comb += read_phase_limit.eq(Mux(t_single, 1, 0xFFFF))
        with m.If(t_exerciser & (knobs.disconnect_after != 0) & ~t_single):
            m.d.comb += read_phase_limit.eq(knobs.disconnect_after)
        # The first request leaves at the claim itself (e_*: the claim's values). At the
        # claim no request has been issued, every limit is at least 1 and the claimed
        # offset lies inside its window: a request is always left.
        e_req_addr = Mux(claim, c_offset, req_addr)
        e_req_count = Mux(claim, 0, req_count)
        request_left = claim | ((req_addr <= t_last) & (req_count < read_phase_limit))
        # No request while answers to an ended transaction are still due: they are told
        # apart from new answers only by their count, and two backends answering in the
        # same clock would merge into one (a word lost, the transaction hung).
        may_read = (e_active & e_read & ~backoff & ~e_retry & ~wfifo.nonempty & ~wr_moved
                    & request_left & (discard == 0)
                    & (rfifo.level + outstanding < READ_FIFO_DEPTH))
        # A write arriving at an empty buffer goes straight to the backend: a Command or
        # BAR write takes effect before the next transaction can be decoded.
        w_direct = Signal()
        m.d.comb += w_direct.eq(~wfifo.nonempty & wr_moved & ~t_read_only)
        w_head = Signal(wr_layout)
        m.d.comb += w_head.eq(Mux(wfifo.nonempty, wfifo.head, w_entry))
        req_valid = Signal()
        req_write = Signal()
        req_ready = Signal()
        req_dword = Signal(30)
        req_sel = Signal(range(n_sel))
        m.d.comb += [req_write.eq(wfifo.nonempty | w_direct),
                     req_valid.eq(wfifo.nonempty | w_direct | may_read)]
        with m.If(wfifo.nonempty | w_direct):
            m.d.comb += [req_dword.eq(w_head.addr), req_sel.eq(w_head.sel)]
        with m.Else():
            m.d.comb += [req_dword.eq(e_req_addr), req_sel.eq(e_sel)]
        for sel, backend in enumerate(backends):
            bw = backend.w_data.shape().width
            word_addr = req_dword[1:] if bw == 64 else req_dword
            m.d.comb += [
                backend.addr.eq(word_addr), backend.write.eq(req_write),
                backend.valid.eq(req_valid & (req_sel == sel)),
            ]
            if bw == 64:
                # A 32-bit phase writes one lane; a 64-bit phase both.
                lane_be = Mux(w_head.x64, w_head.be,
                              Mux(w_head.addr[0], Cat(Const(0, 4), w_head.be[:4]),
                                  Cat(w_head.be[:4], Const(0, 4))))
                m.d.comb += [backend.w_data.eq(Mux(w_head.x64, w_head.data,
                                                   Cat(w_head.data[:32], w_head.data[:32]))),
                             backend.w_be.eq(lane_be)]
            else:
                m.d.comb += [backend.w_data.eq(w_head.data[:32]),
                             backend.w_be.eq(w_head.be[:4])]
            with m.If(req_sel == sel):
                m.d.comb += req_ready.eq(backend.ready)
        taken = req_valid & req_ready
        m.d.comb += wfifo.pop.eq(taken & req_write & wfifo.nonempty)
        read_taken = taken & ~req_write

        keep = r_valid & (discard == 0)
        # Every answer kept enters the FIFO; one loaded onto AD in the same clock leaves it
        # again at once (the head's bypass), so the push never waits for the live IRDY#.
        m.d.comb += [rfifo.push.eq(keep), rfifo.w_data.eq(r_data)]
        m.d.pci += outstanding.eq(outstanding + read_taken - r_valid)
        # Everything in flight when a transaction ends is dropped: prefetched words nobody
        # asked for, including those still to come (the FIFO is flushed by end_q).
        discard_r.update(outstanding + read_taken - r_valid,
                         Mux(r_valid & (discard != 0), discard - 1, discard))

        with m.If(claim):
            m.d.pci += [req_addr.eq(c_offset), req_count.eq(0)]
        with m.If(read_taken):
            m.d.pci += [req_addr.eq(e_req_addr + step), req_count.eq(e_req_count + 1)]
        vars(s).update(taken=taken, w_direct=w_direct)

    def _write_data_and_parity(self, m, s):
        """Write data, sampled one clock after its phase and posted to the FIFO, and its
        parity check (PERR#, Detected Parity Error)."""
        (address_parity_bad, bus, e_addr, e_sel, e_xfer64, t_read_only, taken, w_direct,
         w_entry, wfifo, wide, wr_addr, wr_moved, wr_sel, wr_x64) = (
            s.address_parity_bad, s.bus, s.e_addr, s.e_sel, s.e_xfer64, s.t_read_only,
            s.taken, s.w_direct, s.w_entry, s.wfifo, s.wide, s.wr_addr, s.wr_moved,
            s.wr_sel, s.wr_x64)
        m.d.pci += [wr_addr.eq(e_addr), wr_sel.eq(e_sel), wr_x64.eq(e_xfer64)]
        be = Cat(~bus.cbe.i, ~bus.cbe_hi.i) if wide else ~bus.cbe.i
        wdata = Cat(bus.ad.i, bus.ad_hi.i) if wide else bus.ad.i
        m.d.comb += [
            w_entry.sel.eq(wr_sel), w_entry.addr.eq(wr_addr), w_entry.data.eq(wdata),
            w_entry.be.eq(be), w_entry.x64.eq(wr_x64),
            wfifo.w_data.eq(w_entry), wfifo.push.eq(wr_moved & ~t_read_only & ~(w_direct & taken)),
        ]

        # Data parity of our write phases: PAR of the phase is on the pins now. PERR# goes
        # out at once (its I/O flip-flop); the Status pulse leaves registered.
        write_par_bad = self.par_error | (self.par64_error & wr_x64 if wide else 0)
        write_parity_bad = Signal()
        perr_n = Signal()
        m.d.comb += [write_parity_bad.eq(wr_moved & write_par_bad),
                     perr_n.eq(write_parity_bad & self.parity_response)]
        m.d.comb += [bus.perr.o.eq(perr_n), bus.perr.oe.eq(perr_n)]
        m.d.pci += self.detected_parity.eq(address_parity_bad | write_parity_bad)
