# SPDX-License-Identifier: BSD-2-Clause
"""The PCI target: decode, data phases, terminations, parity, and the backend bus.

The target sits behind :class:`~pcispy.gateware.pci.pads.PCIPads`: what it presents at a
clock edge is on the pins during the next clock, and it sees the wide inputs one clock
late. Address decode is therefore registered and DEVSEL# comes out at medium timing
(clock 3, counting the address phase as clock 1) or later when the exerciser asks. The
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
(no claim, SERR# when enabled) and its write data (PERR# two clocks after the data phase
when Parity Error Response is set; Detected Parity Error in any case).
"""

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Optional

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .bus import Command, PCIBusSignature
from .pads import LIVE_LINES, decode_signature

__all__ = ["BackendSignature", "Window", "ResponseKnobs", "PCITarget", "WRITE_FIFO_DEPTH",
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


class BackendSignature(wiring.Signature):
    """The bus between the target and one backend, from the target's side.

    Members:
        addr (Out, addr_bits): word address within the window (words of ``width`` bits).
        write (Out, 1): the request is a write.
        w_data (Out, width), w_be (Out, width // 8): write data, active-high byte enables.
        valid (Out, 1): a request is presented; taken at an edge where ``ready`` is high.
        ready (In, 1): the backend takes the request.
        r_data (In, width), r_valid (In, 1): read responses, one per read request taken,
            in order, at least one clock after the request.
    """
    def __init__(self, addr_bits, width=32):
        self.addr_bits = addr_bits
        self.width = width
        super().__init__({
            "addr": Out(addr_bits), "write": Out(1),
            "w_data": Out(width), "w_be": Out(width // 8),
            "valid": Out(1), "ready": In(1),
            "r_data": In(width), "r_valid": In(1),
        })


@dataclass(frozen=True)
class Window:
    """How the target serves one BAR.

    ``bar`` is its :class:`~pcispy.gateware.pci.config.BarSpec`; ``data_width`` the
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
    ``corrupt``: invert PAR of every read data word loaded while set.
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
        live (In): ``frame``, ``irdy``, ... unregistered from the pads.
        par_error, par64_error (In, 1): live parity check from the pads.
        corrupt_par, corrupt_par64 (Out, 1): to the pads, flip the PAR of the word
            presented on ``bus.ad.o``.
        config (Out, BackendSignature(6, 32)): configuration space (DWORD number).
        bar<N> (Out, BackendSignature): the backend of window N (one per ``windows``).
        bar_base (In, array of 32): programmed base of each window's BAR.
        io_enable, memory_enable, parity_response, serr_enable (In, 1): Command bits.
        detected_parity, signaled_serr, signaled_target_abort (Out, 1): Status pulses.
        knobs (In, ResponseKnobs): the exerciser response for windows marked exerciser.
        retry (In, 1): retry the exerciser transaction being claimed now.
        attempt (Out, 1): an exerciser window transaction is being claimed (decode clock).
        corrupt_taken (Out, 1): a read word was loaded with corrupted parity.
        busy (Out, 1): a transaction is claimed or its writes are still being posted.

    Parameters:
        width: bus width, 32 or 64.
        windows: list of :class:`Window` or None (no BAR there), BAR0 first.
        fast_decode: decode the address within the address phase from the pads'
            unregistered ``decode`` lines (port ``decode``, In): DEVSEL# on clock 2. The
            address parity is then checked after the claim (SERR#, no refusal).
    """
    def __init__(self, width, windows, *, fast_decode=False):
        self.width = width
        self.windows = tuple(windows)
        self.fast_decode = fast_decode
        members = {
            "bus": Out(PCIBusSignature(width)),
            "live": In(wiring.Signature({name: Out(1) for name in LIVE_LINES})),
            "par_error": In(1), "corrupt_par": Out(1),
            "config": Out(BackendSignature(6, 32)),
            "bar_base": In(32).array(max(len(self.windows), 1)),
            "io_enable": In(1), "memory_enable": In(1),
            "parity_response": In(1), "serr_enable": In(1),
            "detected_parity": Out(1), "signaled_serr": Out(1),
            "signaled_target_abort": Out(1),
            "knobs": In(ResponseKnobs), "retry": In(1),
            "attempt": Out(1), "corrupt_taken": Out(1), "busy": Out(1),
        }
        if width == 64:
            members["par64_error"] = In(1)
            members["corrupt_par64"] = Out(1)
        if fast_decode:
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
        m = Module()
        bus, live = self.bus, self.live
        wide = self.width == 64
        backends = [self.config] + [getattr(self, f"bar{i}")
                                    for i, w in enumerate(self.windows) if w is not None]
        n_sel = len(backends)

        # --- Address phase: decode (registered inputs in clock 2, or live in clock 1) ------
        if self.fast_decode:
            # FRAME# asserted now and deasserted at the previous edge: the address phase.
            address_phase = live.frame & ~bus.frame.i
            source = self.decode
        else:
            frame_q = Signal()
            m.d.pci += frame_q.eq(bus.frame.i)
            address_phase = bus.frame.i & ~frame_q
            source = SimpleNamespace(**{name: getattr(bus, name).i
                                        for name in decode_signature(self.width).members})
        ad, cmd = source.ad, source.cbe
        cmd_read = _is_read(cmd)

        hits = []  # (select index, hit, dword offset, last dword, window or None)
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

        any_hit = Signal()
        m.d.comb += any_hit.eq(Cat(h for _, h, _, _, _ in hits).any())
        # The PAR of the address phase is on the pins in the clock after it: at the
        # claim with medium decode, one clock after it with fast decode.
        address_par_clock = Signal()
        if self.fast_decode:
            m.d.pci += address_par_clock.eq(address_phase)
            address_bad = 0
        else:
            m.d.comb += address_par_clock.eq(address_phase)
            address_bad = self.par_error & self.parity_response
        claim = Signal()
        m.d.comb += claim.eq(address_phase & any_hit & ~address_bad)

        # Address parity: the PAR of the address phase is on the pins now.
        serr_next = Signal()
        with m.If(address_par_clock):
            m.d.comb += self.detected_parity.eq(self.par_error)
            m.d.comb += serr_next.eq(self.par_error & self.parity_response & self.serr_enable)
        m.d.comb += self.signaled_serr.eq(serr_next)
        m.d.comb += [self.bus.serr.o.eq(serr_next), self.bus.serr.oe.eq(serr_next)]

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
        for sel, hit, offset, last, window in hits:
            with m.If(hit):
                m.d.comb += [c_sel.eq(sel), c_offset.eq(offset), c_last.eq(last)]
                if window is None or window.bar.kind == "io":
                    m.d.comb += c_single.eq(1)
                else:
                    # Burst order other than linear: one data phase only.
                    m.d.comb += c_single.eq((ad[0:2] != 0) | (cmd_read & ~window.prefetch))
                    m.d.comb += c_prefetch.eq(window.prefetch)
                if window is not None:
                    m.d.comb += [c_exerciser.eq(window.exerciser),
                                 c_read_only.eq(window.read_only)]
                    if window.data_width == 64:
                        m.d.comb += c_data64.eq(1)
                        ok = source.req64 & ~ad[2] & (ad[0:2] == 0)
                        if window.exerciser:
                            ok &= self.knobs.ack64
                        if window.ack64_bit is not None:
                            ok &= ~ad[window.ack64_bit]
                        m.d.comb += c_xfer64.eq(ok)
        m.d.comb += self.attempt.eq(claim & c_exerciser)

        knobs = self.knobs
        c_retry = Signal()
        c_devsel_delay = Signal(2)
        c_initial_wait = Signal(8)
        with m.If(c_exerciser):
            m.d.comb += [c_retry.eq(self.retry), c_devsel_delay.eq(knobs.devsel_delay),
                         c_initial_wait.eq(knobs.initial_wait)]

        # --- Transaction state (registers) and the effective state at this edge -------
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
        wait_cnt = Signal(9)
        phases = Signal(16)      # data phases completed
        group = Signal(8)        # phases since the last inserted wait
        addr = Signal(30)        # dword offset of the phase on the bus (next to move)

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
                e_wait.eq(c_devsel_delay + c_initial_wait),
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

        # --- Read prefetch ------------------------------------------------------------
        data_bits = 64 if wide else 32
        rfifo = _RegisterFIFO(m, "rfifo", data_bits, READ_FIFO_DEPTH)
        outstanding = Signal(range(READ_FIFO_DEPTH + 1))
        discard = Signal(range(READ_FIFO_DEPTH + 1))
        req_addr = Signal(30)        # dword offset of the next read request
        req_count = Signal(16)       # read requests issued in this transaction
        load_addr = Signal(30)       # dword offset of the next word loaded onto AD
        cur_valid = Signal()         # the AD output holds the word of the current phase
        cur_corrupt = Signal()
        ad_cur = Signal(data_bits)
        # Read responses: only the selected backend has requests outstanding.
        r_valid = Signal()
        r_data = Signal(data_bits)
        for backend in backends:
            with m.If(backend.r_valid):
                m.d.comb += [r_valid.eq(1), r_data.eq(backend.r_data)]
        read_avail = rfifo.nonempty | (r_valid & (discard == 0))

        # --- Posted writes -------------------------------------------------------------
        wr_layout = data.StructLayout({"sel": range(n_sel), "addr": 30,
                                       "data": data_bits, "be": data_bits // 8, "x64": 1})
        wfifo = _RegisterFIFO(m, "wfifo", wr_layout, WRITE_FIFO_DEPTH)
        wr_moved = Signal()          # a write phase moved at the previous edge
        wr_addr = Signal(30)
        wr_sel = Signal(range(n_sel))
        wr_x64 = Signal()
        w_entry = Signal(wr_layout)  # the write phase sampled at the previous edge

        # --- Data phases: the next-clock drive -------------------------------------------
        moved = Signal()
        m.d.comb += moved.eq(live.irdy & trdy_p)
        final = moved & ~live.frame
        devsel_n, trdy_n, stop_n = Signal(), Signal(), Signal()
        next_active, next_backoff = Signal(), Signal()
        load = Signal()
        abort_now = Signal()

        # The arithmetic of the next-clock decision (address and phase count after this
        # edge, their compares) is computed for the claim's and the running transaction's
        # values and for both values of ``moved``, and selected last: the decode and the
        # live IRDY# then reach the output flip-flops through a few mux levels instead of
        # feeding adders and comparators (Shannon expansion; the same values as the
        # arithmetic on e_* and ``moved`` that it replaces).
        def ahead(fn):
            views = [(c_offset, Const(0, 16), c_xfer64, c_last),    # at the claim
                     (addr, phases, t_xfer64, t_last)]              # later
            per_move = [Mux(claim, fn(*views[0], mv), fn(*views[1], mv)) for mv in (0, 1)]
            return Mux(moved, per_move[1], per_move[0])

        def after(address, xfer64, mv):
            """The dword offset after this edge (30 bits, as ``next_addr``)."""
            return (address + Mux(xfer64, 2, 1))[:30] if mv else address

        def phases_after(count, mv):
            return (count + 1)[:16] if mv else count

        next_addr = Signal(30)
        next_phases = Signal(16)
        m.d.comb += [next_addr.eq(ahead(lambda a, p, x, last, mv: after(a, x, mv))),
                     next_phases.eq(ahead(lambda a, p, x, last, mv: phases_after(p, mv)))]
        group_full = Signal()
        m.d.comb += group_full.eq(e_exerciser & (knobs.wait_every != 0) & (knobs.wait_clocks != 0)
                                  & moved & Mux(claim, knobs.wait_every == 1,
                                                group + 1 == knobs.wait_every))
        wcount = Signal(9)
        m.d.comb += wcount.eq(Mux(group_full, knobs.wait_clocks, e_wait))
        wcount_zero = Mux(group_full, knobs.wait_clocks == 0, e_wait == 0)

        # Read word for the next phase: keep the current one, or load the FIFO head.
        m.d.comb += load.eq(e_active & e_read & read_avail & (moved | ~cur_valid) & ~final)
        next_valid = Signal()
        m.d.comb += next_valid.eq(load | (cur_valid & ~moved))
        # Room for posted writes: the one being pushed, the one moving, the next one.
        write_room = Mux(moved, (wfifo.level + wr_moved + 2) <= WRITE_FIFO_DEPTH,
                         (wfifo.level + wr_moved + 1) <= WRITE_FIFO_DEPTH)

        def abort_range(a, p, x, last, mv):
            byte_addr = Cat(Const(0, 2), after(a, x, mv))
            return (byte_addr >= knobs.abort_first) & (byte_addr <= knobs.abort_last)
        in_abort = e_exerciser & knobs.abort_enable & ahead(abort_range)
        disc_n = e_exerciser & (knobs.disconnect_after != 0)
        at_end = ahead(lambda a, p, x, last, mv: after(a, x, mv) + Mux(x, 2, 1) > last)
        first_phase = ahead(lambda a, p, x, last, mv: phases_after(p, mv) == 0)
        disconnect_next = ahead(
            lambda a, p, x, last, mv: phases_after(p, mv) + 1 == knobs.disconnect_after)
        disconnect_now = ahead(
            lambda a, p, x, last, mv: phases_after(p, mv) == knobs.disconnect_after)
        with_data = (e_single & first_phase) | at_end \
            | (disc_n & knobs.disconnect_data & disconnect_next)
        without_data = disc_n & ~knobs.disconnect_data & disconnect_now

        ready = Signal()
        m.d.comb += ready.eq(wcount_zero & ~in_abort & Mux(e_read, next_valid, write_room))
        # Latency rules for the plain windows (the exerciser breaks them only on purpose):
        # clocks since the claim or the last data phase, counted at the deciding edge.
        stall = Signal(5)
        e_stall = Signal(5)
        m.d.comb += e_stall.eq(Mux(claim | moved, 0, stall))
        m.d.pci += stall.eq(Mux(e_stall == 31, 31, e_stall + 1))
        late = Signal()
        # e_stall is 0 at a claim or a moved phase, below either (positive) limit.
        m.d.comb += late.eq(~e_exerciser & ~(claim | moved)
                            & (stall >= Mux(phases == 0, INITIAL_STALL_LIMIT,
                                            SUBSEQUENT_STALL_LIMIT)))

        with m.If(backoff):
            # Hold STOP# (and DEVSEL#, unless aborting) until FRAME# is deasserted.
            with m.If(live.frame):
                m.d.comb += [devsel_n.eq(devsel_p), stop_n.eq(1), next_backoff.eq(1)]
        with m.Elif(e_active):
            with m.If(final | ~live.frame & ~live.irdy):
                # Last phase moved, or the initiator gave up (master abort): release all.
                pass
            with m.Elif(trdy_p & ~moved):
                # TRDY# is asserted until its data phase completes: hold everything.
                m.d.comb += [devsel_n.eq(1), trdy_n.eq(1), stop_n.eq(stop_p),
                             next_active.eq(1)]
            with m.Elif(moved & stop_p):
                # Disconnect with data done; FRAME# still asserted: wait for it.
                m.d.comb += [devsel_n.eq(1), stop_n.eq(1), next_backoff.eq(1)]
            with m.Elif(e_devsel_wait != 0):
                m.d.comb += next_active.eq(1)
            with m.Elif(e_retry | without_data):
                m.d.comb += [devsel_n.eq(1), stop_n.eq(1), next_backoff.eq(1)]
            with m.Elif(in_abort & devsel_p):
                m.d.comb += [stop_n.eq(1), next_backoff.eq(1), abort_now.eq(1)]
            with m.Elif(late & ~ready):
                # The backend is too slow for the latency rules: retry (no data yet) or
                # disconnect without data, rather than hold the bus.
                m.d.comb += [devsel_n.eq(1), stop_n.eq(1), next_backoff.eq(1)]
            with m.Else():
                m.d.comb += [devsel_n.eq(1), trdy_n.eq(ready),
                             stop_n.eq(ready & live.frame & with_data), next_active.eq(1)]
        m.d.comb += self.signaled_target_abort.eq(abort_now)

        m.d.pci += [active.eq(next_active), backoff.eq(next_backoff),
                    devsel_p.eq(devsel_n), trdy_p.eq(trdy_n), stop_p.eq(stop_n)]
        with m.If(next_active):
            m.d.pci += [
                devsel_wait.eq(Mux(e_devsel_wait != 0, e_devsel_wait - 1, 0)),
                wait_cnt.eq(Mux(trdy_p & ~moved, wcount, Mux(wcount != 0, wcount - 1, 0))),
                phases.eq(next_phases), addr.eq(next_addr),
                group.eq(Mux(group_full, 0, e_group + moved)),
            ]

        own = devsel_n | trdy_n | stop_n
        owner = Signal()
        m.d.pci += owner.eq(own)
        xfer64_n = Signal()
        m.d.comb += xfer64_n.eq(e_xfer64 & devsel_n)
        m.d.comb += [
            bus.devsel.o.eq(devsel_n), bus.devsel.oe.eq(own),
            bus.trdy.o.eq(trdy_n), bus.trdy.oe.eq(own),
            bus.stop.o.eq(stop_n), bus.stop.oe.eq(own),
            self.busy.eq(active | backoff | wfifo.nonempty | wr_moved | (outstanding != 0)),
        ]
        if wide:
            m.d.comb += [bus.ack64.o.eq(xfer64_n), bus.ack64.oe.eq(own)]

        # --- Read data onto AD ------------------------------------------------------------
        drive_ad = Signal()
        # Never in the turnaround clock after the address phase (fast decode claims then).
        m.d.comb += drive_ad.eq(own & e_read & (e_active | backoff)
                                & ~(claim if self.fast_decode else 0))
        lane_hi = load_addr[0] & ~e_xfer64
        head = Mux(rfifo.nonempty, rfifo.head, r_data)
        head_word = Signal(data_bits)
        if wide:
            m.d.comb += head_word.eq(Cat(Mux(e_data64 & lane_hi, head[32:], head[:32]),
                                         head[32:]))
        else:
            m.d.comb += head_word.eq(head)
        new_corrupt = e_exerciser & knobs.corrupt
        m.d.comb += [
            bus.ad.o.eq(Mux(load, head_word[:32], ad_cur[:32])),
            bus.ad.oe.eq(drive_ad),
            rfifo.pop.eq(load & rfifo.nonempty),
            self.corrupt_par.eq(Mux(load, new_corrupt, cur_corrupt)),
            self.corrupt_taken.eq(load & new_corrupt),
        ]
        if wide:
            m.d.comb += [
                bus.ad_hi.o.eq(Mux(load, head_word[32:], ad_cur[32:])),
                bus.ad_hi.oe.eq(drive_ad & xfer64_n),
                self.corrupt_par64.eq(Mux(load, new_corrupt, cur_corrupt)),
            ]
        with m.If(load):
            m.d.pci += [ad_cur.eq(head_word), cur_corrupt.eq(new_corrupt),
                        load_addr.eq(load_addr + step)]
        m.d.pci += cur_valid.eq(next_valid & next_active)

        # --- Backend requests: drain posted writes first, then read requests ---------------
        end_txn = Signal()
        m.d.comb += end_txn.eq((active | backoff) & ~next_active & ~next_backoff)
        # Read requests of the running transaction stop at its phase limit: one for a
        # single-phase one, the exerciser's disconnect point, else unlimited.
        read_phase_limit = Signal(16)
        m.d.comb += read_phase_limit.eq(Mux(t_single, 1, 0xFFFF))
        with m.If(t_exerciser & (knobs.disconnect_after != 0) & ~t_single):
            m.d.comb += read_phase_limit.eq(knobs.disconnect_after)
        # The first request leaves at the claim itself (e_*: the claim's values). At the
        # claim no request has been issued and every limit is at least 1, so only the
        # window end applies; both compares are made before the claim selects one.
        e_req_addr = Mux(claim, c_offset, req_addr)
        e_req_count = Mux(claim, 0, req_count)
        request_left = Mux(claim, c_offset <= c_last,
                           (req_addr <= t_last) & (req_count < read_phase_limit))
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
        # A word arriving while the buffer is empty may go straight onto AD.
        m.d.comb += [rfifo.push.eq(keep & ~(load & ~rfifo.nonempty)), rfifo.w_data.eq(r_data)]
        m.d.pci += outstanding.eq(outstanding + read_taken - r_valid)
        with m.If(r_valid & (discard != 0)):
            m.d.pci += discard.eq(discard - 1)
        # Everything in flight when a transaction ends is dropped (see end_txn below).

        with m.If(claim):
            m.d.pci += [req_addr.eq(c_offset), req_count.eq(0), load_addr.eq(c_offset)]
        with m.If(read_taken):
            m.d.pci += [req_addr.eq(e_req_addr + step), req_count.eq(e_req_count + 1)]
        with m.If(end_txn):
            # Prefetched words nobody asked for are dropped, including those in flight.
            m.d.comb += rfifo.flush.eq(1)
            m.d.pci += discard.eq(outstanding + read_taken - r_valid)

        # --- Write data: sampled one clock after its phase, posted to the FIFO ---------------
        m.d.pci += [wr_moved.eq(moved & ~e_read & e_active),
                    wr_addr.eq(e_addr), wr_sel.eq(e_sel), wr_x64.eq(e_xfer64)]
        be = Cat(~bus.cbe.i, ~bus.cbe_hi.i) if wide else ~bus.cbe.i
        wdata = Cat(bus.ad.i, bus.ad_hi.i) if wide else bus.ad.i
        m.d.comb += [
            w_entry.sel.eq(wr_sel), w_entry.addr.eq(wr_addr), w_entry.data.eq(wdata),
            w_entry.be.eq(be), w_entry.x64.eq(wr_x64),
            wfifo.w_data.eq(w_entry), wfifo.push.eq(wr_moved & ~t_read_only & ~(w_direct & taken)),
        ]

        # Data parity of our write phases: PAR of the phase is on the pins now.
        write_par_bad = self.par_error | (self.par64_error & wr_x64 if wide else 0)
        perr_n = Signal()
        with m.If(wr_moved & write_par_bad):
            m.d.comb += [self.detected_parity.eq(1), perr_n.eq(self.parity_response)]
        m.d.comb += [bus.perr.o.eq(perr_n), bus.perr.oe.eq(perr_n)]
        return m
