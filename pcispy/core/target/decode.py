# SPDX-License-Identifier: BSD-2-Clause
"""The target's address phase: which window (or configuration space) an address hits, its
parity (SERR#), the claim with the transaction's parameters chosen with it, and the report
of BAR0 claims to the spy.

Each step is built into the target's module ``m`` and takes the component ``target``
for its ports and parameters (:class:`~pcispy.core.target.component.PCITarget`).
"""

from typing import Callable, NamedTuple

from amaranth import Cat, Const, Mux, Signal, Value

from pcispy.pci.bus import Command, DevselSpeed
from pcispy.core.pads import decode_signature
from pcispy.core.target.transaction import Parameters
from pcispy.core.target.window import in_abort_range

__all__ = ["DecodeLines", "WindowHit", "AddressPhase", "Claim", "decode_address_phase",
           "check_address_parity", "build_claim", "report_bar0"]


def _command_in(cmd, predicate):
    """``cmd`` (a C/BE# value) is one of the commands for which ``predicate`` holds
    (the classification lives on :class:`Command`)."""
    return Cat(*(cmd == code for code in Command if predicate(code))).any()


def _is_memory(cmd):
    return _command_in(cmd, lambda code: code.is_memory)


def _is_read(cmd):
    return _command_in(cmd, lambda code: code.is_read and code != Command.INTERRUPT_ACK)


class DecodeLines(NamedTuple):
    """The lines of the address phase the decode reads (inside-level): AD, C/BE#, IDSEL
    and, on a 64-bit bus, REQ64#. The names of the pads' ``decode`` port."""
    ad: Value
    cbe: Value
    idsel: Value
    req64: Value = None


def _registered_lines(bus, width):
    """The decode's lines as the pads registered them (``bus.NAME.i``)."""
    return DecodeLines(**{name: getattr(bus, name).i
                          for name in decode_signature(width).members})


class WindowHit(NamedTuple):
    """The address phase against one window: its select index (0: configuration space),
    whether it ``hit``, the DWORD ``offset`` in it, its ``last`` DWORD and the
    :class:`~pcispy.core.target.window.Window` (None for configuration space)."""
    sel: int
    hit: Value
    offset: Value
    last: int
    window: object


class AddressPhase(NamedTuple):
    """The address phase being decoded now.

    ``now``: it is the address phase (from the registered lines, or with fast decode the
    live FRAME#); ``with_frame(frame_now)``: the same with FRAME# on the pins now
    ``frame_now``; ``source``: the lines decoded (:class:`DecodeLines`, or with fast
    decode the pads' ``decode`` port); ``cmd_read``: its command reads; ``hits``: one
    :class:`WindowHit` per window, configuration space first; ``any_hit``: one of them
    hit."""
    now: Value
    with_frame: Callable
    source: object
    cmd_read: Value
    hits: list
    any_hit: Signal


class Claim(NamedTuple):
    """The claim, and the transaction's parameters chosen with it (the ``c_*`` nets:
    registered a clock before the claim with slow decode).

    ``claim``: the target claims a transaction now; ``with_frame(frame_now)``: the claim
    with FRAME# on the pins now ``frame_now``; ``params``: the transaction's
    :class:`~pcispy.core.target.transaction.Parameters`; its DWORD ``offset`` in the
    window; the window drops writes (``read_only``); the first phase is the window's last
    (``at_end``) or in the exerciser's abort range (``abort_range``); the exerciser's
    DEVSEL# delay (``devsel_delay``) and its clocks before the first TRDY#
    (``exerciser_wait``)."""
    claim: Signal
    with_frame: Callable
    params: Parameters
    offset: Value
    read_only: Value
    at_end: Value
    abort_range: Value
    devsel_delay: Signal
    exerciser_wait: Signal


def _decode(target, source):
    """One :class:`WindowHit` per window of the address phase on ``source`` (AD, C/BE#,
    IDSEL): configuration space first, then each window present."""
    ad, cmd = source.ad, source.cbe
    hits = []
    config_hit = (_command_in(cmd, lambda code: code.is_config)
                  & source.idsel & (ad[0:2] == 0) & (ad[8:11] == 0))
    hits.append(WindowHit(0, config_hit, ad[2:8], 63, None))
    present = [(i, w) for i, w in enumerate(target.windows) if w is not None]
    for sel, (i, window) in enumerate(present, start=1):
        bar = window.bar
        mask = (0xFFFF_FFFF << bar.size_bits) & 0xFFFF_FFFF
        in_range = (ad & mask) == (target.bar_base[i] & mask)
        if bar.kind == "mem":
            hit = _is_memory(cmd) & target.memory_enable & in_range
        else:
            hit = _command_in(cmd, lambda code: code.is_io) & target.io_enable & in_range
        hits.append(WindowHit(sel, hit, ad[2:bar.size_bits], bar.size // 4 - 1, window))
    return hits


def decode_address_phase(m, target):
    """The address phase and its decode: which window (or configuration space) the
    address hits, from the registered inputs in clock 2 or, with fast decode, the live
    ones in clock 1."""
    bus, live = target.bus, target.live
    if target.fast_decode:
        def address_phase_with(frame_now):
            """FRAME# asserted now and deasserted at the previous edge."""
            return frame_now & ~bus.frame.i
        source = target.decode
    else:
        frame_q = Signal()
        m.d.pci += frame_q.eq(bus.frame.i)

        def address_phase_with(frame_now):
            """FRAME# asserted at the previous edge, not at the one before (the live
            line plays no part)."""
            return bus.frame.i & ~frame_q
        source = _registered_lines(bus, target.width)
    address_phase = address_phase_with(live.frame)
    cmd_read = _is_read(source.cbe)

    hits = _decode(target, source)
    any_hit = Signal()
    m.d.comb += any_hit.eq(Cat(h.hit for h in hits).any())
    return AddressPhase(address_phase, address_phase_with, source, cmd_read, hits, any_hit)


def report_bar0(m, target, phase):
    """``bar0_claimed``, for the board's spy, which keeps the accesses to the board's
    registers out of its figures: the claim of a BAR0 transaction (the same decode, a
    later window winning where BARs overlap), registered, and made from the registered
    inputs at every decode speed, so it adds no load to a live line nor, with fast
    decode, to the unregistered address lines. It pulses in the second clock after the
    address phase was on the pins, the clock in which the board's spy, a register later
    than the pads' inputs, sees that address phase: the clock after the claim with
    medium decode, the claim's clock with slow decode, two clocks after it with fast
    decode. ``phase``: the :class:`AddressPhase`."""
    if target.windows[0] is None:
        return
    bus = target.bus
    if target.fast_decode:
        frame_q = Signal(name="report_frame_q")
        m.d.pci += frame_q.eq(bus.frame.i)
        address_phase = bus.frame.i & ~frame_q
        hits = _decode(target, _registered_lines(bus, target.width))
    else:
        address_phase, hits = phase.now, phase.hits
    # hits[1] is window 0 (configuration space comes first).
    only = hits[1].hit & ~Cat(h.hit for h in hits[2:]).any()
    m.d.pci += target.bar0_claimed.eq(address_phase & only & target.claim_enable)


def check_address_parity(m, target, cells, address_phase):
    """The address phase's parity check: SERR# and the Status pulses. Returns whether
    the address phase's parity is bad (for Detected Parity Error)."""
    # The PAR of the address phase is on the pins in the clock after it: at the
    # claim with medium decode, one clock after it with fast decode. The claim does
    # not wait for it: PCI lets a target that detects an address parity error claim
    # and complete the transaction as if the address were right (PCI 3.0, 3.7.3), and
    # the live PAR then reaches only SERR# and a status flip-flop, not the decode.
    address_par_clock = Signal()
    if target.fast_decode:
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
    serr_armed = cells.kept(m, address_par_clock & target.parity_response &
                            target.serr_enable & target.claim_enable, "serr_armed")
    address_parity_bad = Signal()
    m.d.comb += address_parity_bad.eq(address_par_clock & target.par_error)
    serr_next = cells.inverse_lut4(m, lambda error, armed, allowed, _:
                                   error and armed and allowed,
                                   [target.par_error, serr_armed, target.drive_allowed],
                                   "serr_floats")
    m.d.comb += [target.bus.serr.o.eq(serr_next), target.bus.serr.oe.eq(serr_next)]
    # The Status pulse restates the cell's condition rather than reading the cell, so
    # that SERR#'s tristate register stays the cell's one load.
    m.d.pci += target.signaled_serr.eq(target.par_error & serr_armed & target.drive_allowed)
    return address_parity_bad


def build_claim(m, target, phase, n_sel):
    """The :class:`Claim`: the claim and the transaction's parameters chosen with it,
    per window beside the BAR compare, registered a clock first with slow decode.
    ``phase``: the :class:`AddressPhase`; ``n_sel``: the number of backends."""
    knobs = target.knobs
    source = phase.source
    ad, cmd_read = source.ad, phase.cmd_read
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
    for k, (sel, hit, offset, last, window) in enumerate(phase.hits):
        later = [h.hit for h in phase.hits[k + 1:]]
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
            ok &= knobs.ack64
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

    # The claim's address arithmetic, made per window from AD beside the BAR compare
    # and chosen by the one-hot hit afterwards (not on the chosen offset, behind it).
    # c_at_end: the first phase is the window's last (offset + step > last: an offset
    # inside its window has all its bits set, the lowest aside for a 64-bit step).
    # c_abort_range: the first phase addresses the exerciser's abort range.
    c_at_end = Signal()
    c_abort_range = Signal()

    def window_abort_range(sel, offset, last, window):
        if window is None or not window.exerciser:
            return None
        return in_abort_range(knobs, offset)
    m.d.comb += [
        c_at_end.eq(select(1, lambda sel, offset, last, window: (
            Mux(c_xfer64, offset[1:].all(), offset.all())))),
        c_abort_range.eq(select(1, window_abort_range)),
    ]
    # Slow decode: everything the decode chose is registered, and the claim is the
    # clock after (DEVSEL# one clock later than medium). The address pins then end at
    # these registers; only the registered hit reaches the drivers' enables.
    decoded = dict(hit=phase.now & phase.any_hit, read=cmd_read, sel=c_sel,
                   offset=c_offset, last=c_last, single=c_single, prefetch=c_prefetch,
                   exerciser=c_exerciser, read_only=c_read_only, data64=c_data64,
                   xfer64=c_xfer64, at_end=c_at_end, abort_range=c_abort_range)
    if target.decode_speed is DevselSpeed.SLOW:
        for name, value in decoded.items():
            registered = Signal.like(value, name=f"decoded_{name}")
            m.d.pci += registered.eq(value)
            decoded[name] = registered

        def claim_with(frame_now):
            """We claim the transaction (decoded a clock ago; FRAME# plays no part)."""
            return decoded["hit"] & target.claim_enable
    else:
        def claim_with(frame_now):
            """We claim the transaction, with FRAME# on the pins now ``frame_now``."""
            return phase.with_frame(frame_now) & phase.any_hit & target.claim_enable
    claim = Signal()
    m.d.comb += claim.eq(claim_with(target.live.frame))
    m.d.comb += target.attempt.eq(claim & decoded["exerciser"])

    # Clocks before the first TRDY# of an exerciser window: from the registers alone,
    # so the decode only selects it.
    exerciser_wait = Signal(9)
    m.d.comb += exerciser_wait.eq(knobs.devsel_delay + knobs.initial_wait)
    c_retry = Signal()
    c_devsel_delay = Signal(2)
    with m.If(decoded["exerciser"]):
        m.d.comb += [c_retry.eq(target.retry), c_devsel_delay.eq(knobs.devsel_delay)]
    params = Parameters(
        sel=decoded["sel"], read=decoded["read"], single=decoded["single"],
        prefetch=decoded["prefetch"], exerciser=decoded["exerciser"],
        xfer64=decoded["xfer64"], data64=decoded["data64"], retry=c_retry,
        last=decoded["last"])
    return Claim(claim=claim, with_frame=claim_with, params=params,
                 offset=decoded["offset"], read_only=decoded["read_only"],
                 at_end=decoded["at_end"], abort_range=decoded["abort_range"],
                 devsel_delay=c_devsel_delay, exerciser_wait=exerciser_wait)
