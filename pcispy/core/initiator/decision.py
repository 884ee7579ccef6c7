# SPDX-License-Identifier: BSD-2-Clause
"""The master's decision for one value of the live lines (one cofactor): the next state
and the outputs for the next clock.

:func:`decide` runs the steps in order: the defaults (:func:`cofactor_defaults`), what the
lines mean for the data phase on the pins (:func:`data_phase_values`), REQ#, the write
words and the events (:func:`cofactor_driving`), then the phase's own decision (idle:
:func:`decide_idle`; in a transaction: :func:`decide_address_phases` and
:func:`decide_data_phase`) and last the outcome registered for the next clock
(:func:`decide_outcome`). The lines are constants in a cofactor (synthesis folds them),
or the live lines themselves in the folded build (:class:`~.choice.Cofactors`).
"""

from typing import Callable, NamedTuple

from amaranth import Const, Mux, Signal, Value

from pcispy.pci.bus import Command, Termination
from pcispy.core.initiator.bookkeeping import (Comparisons, DecidedState, Edge,
                                               HeldDescriptor, StartValues,
                                               TransactionRegisters)
from pcispy.core.initiator.interface import (DescriptorResult, InitiatorEvents, _Phase,
                                             is_write_command)

__all__ = ["Machine", "Lines", "Drive", "CofactorOutputs", "PhaseValues", "Driving",
           "decide", "cofactor_defaults", "data_phase_values", "cofactor_driving",
           "decide_idle", "decide_address_phases", "decide_data_phase", "decide_outcome"]


class Machine(NamedTuple):
    """The master's nets every cofactor's decision reads, as the bookkeeping made them
    (:mod:`.bookkeeping`): ``edge``, ``held`` (the descriptor), ``txn``, ``cmp``,
    ``start``, the write words ``word`` and the ``decided`` state; ``sizes``: the DWORDs
    a data phase may move; ``wide_bus``: a 64-bit bus."""
    edge: Edge
    held: HeldDescriptor
    txn: TransactionRegisters
    cmp: Comparisons
    start: StartValues
    word: dict
    decided: DecidedState
    sizes: tuple
    wide_bus: bool


class Lines(NamedTuple):
    """One cofactor's live lines (inside-level): the target's TRDY#, STOP#, DEVSEL#,
    ACK64#, GNT# as it counts in a transaction (``gnt``), and while idle GNT# with the
    bus idle (``go``). Constants in a cofactor; the lines themselves, folded."""
    trdy: Value
    stop: Value
    devsel: Value
    gnt: Value
    ack64: Value
    go: Value


class Drive(NamedTuple):
    """One bus line's output and output enable, as a cofactor decides them."""
    o: Signal
    oe: Signal


class CofactorOutputs(NamedTuple):
    """A cofactor's next state (``nxt``: ``{name: next value}`` of the decided state)
    and outputs (``drv``: ``{line: Drive}``)."""
    nxt: dict
    drv: dict


class PhaseValues(NamedTuple):
    """What a cofactor's lines mean for the data phase on the pins: a word moves
    (``xfer``), DWORDs moving now (``moved_now``), ``by_moved(values)`` (``values[k]``
    for ``k`` DWORDs moving now), the next phase is 64-bit (``next_wide``), the target
    stops (``target_stop``) or aborts (``target_abort``), the transaction's end is forced
    (``forced_end``: STOP# or a master abort), the last phase is on the pins
    (``txn_over``), the master ends the burst of its own (``voluntary_end``), AD holds
    through a wait-stated phase (``hold_data``), the transaction has room for the next
    phase only (``fits_next``), IRDY# for the next clock (``irdy_next``)."""
    xfer: Value
    moved_now: Signal
    by_moved: Callable
    next_wide: Value
    target_stop: Value
    target_abort: Value
    forced_end: Signal
    txn_over: Value
    voluntary_end: Signal
    hold_data: Value
    fits_next: Value
    irdy_next: Signal


class Driving(NamedTuple):
    """A cofactor's outputs of a data phase (``drive_data_phase(want_last)``), its events
    (``ev``), whether a transaction starts (``start``) and the DWORDs the descriptor
    advances (``advanced``)."""
    drive_data_phase: Callable
    ev: Signal
    start: Signal
    advanced: Signal


def decide(m, ini, machine, tag, idle, trdy=0, stop=0, devsel=0, gnt=0, ack64=0, go=0):
    """``(next state, outputs)`` (:class:`CofactorOutputs`' ``nxt`` and ``drv``) for
    these values of the live lines: one cofactor, its nets named after ``tag``.

    ``idle``: the family for the IDLE phase (only ``go``: GNT# asserted with the bus
    idle, counts) or for a transaction (the other lines count)."""
    lines = Lines(*(Value.cast(value) if isinstance(value, Value) else Const(value, 1)
                    for value in (trdy, stop, devsel, gnt, ack64, go)))
    outs = cofactor_defaults(m, ini, machine, tag)
    values = data_phase_values(m, ini, machine, lines, tag)
    driving = cofactor_driving(m, machine, outs, values, tag)
    if idle:
        decide_idle(m, machine, lines, outs, driving)
    else:
        decide_address_phases(m, ini, machine, outs, values, driving)
        decide_data_phase(m, ini, machine, lines, outs, values, driving, tag)
    decide_outcome(m, machine, outs, values, driving)
    return outs.nxt, outs.drv


def cofactor_defaults(m, ini, machine, tag):
    """This cofactor's :class:`CofactorOutputs`: the next state (the registers' values
    unless a step changes them) and the outputs."""
    state, held = machine.decided.state, machine.held
    # (No keep: the next state goes straight into registers of its own, the
    # outputs into the kept nets of the live choice.)
    nxt = {name: Signal.like(reg, name=f"{name}_{tag}")
           for name, reg in state.items()}
    drv = {name: Drive(o=Signal(len(getattr(ini.bus, name).o), name=f"{name}_o_{tag}"),
                       oe=Signal(name=f"{name}_oe_{tag}"))
           for name in machine.decided.driven}
    for name, reg in state.items():
        m.d.comb += nxt[name].eq(reg)
    with m.If(ini.stop & held.held):
        m.d.comb += nxt["stopping"].eq(1)
    with m.If(held.take):
        m.d.comb += nxt["held"].eq(1)
    return CofactorOutputs(nxt, drv)


def data_phase_values(m, ini, machine, lines, tag):
    """The :class:`PhaseValues` of this cofactor's ``lines``: the DWORDs moving, the
    terminations seen, whether the master ends the burst, and IRDY# for the next
    clock."""
    txn, cmp, sizes, wide_bus = machine.txn, machine.cmp, machine.sizes, machine.wide_bus
    ack64, devsel = lines.ack64, lines.devsel
    pin_irdy, ending, txn_wide = machine.edge.pin_irdy, txn.ending, txn.txn_wide
    in_data, devsel_seen, txn_left_within = txn.in_data, txn.devsel_seen, cmp.txn_left_within
    # Sizes of the data phase on the pins now and of the next one, in DWORDs.
    cur_wide = txn_wide & ack64
    next_wide = txn_wide & ~txn.narrow & ~(devsel & ~ack64)
    xfer = in_data & pin_irdy & lines.trdy & devsel & (~ending | txn.ending_open)
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
    target_stop = in_data & lines.stop & ~ending
    target_abort = target_stop & ~devsel & devsel_seen
    master_abort = in_data & ~ending & ~devsel & ~devsel_seen & cmp.devsel_overdue
    forced_end = Signal(name=f"forced_end_{tag}")
    m.d.comb += forced_end.eq(target_stop | master_abort)
    txn_over = txn.final_phase & (xfer | forced_end | ending)  # the last phase is on

    # The master may end the burst on its own: latency timer expired with GNT#
    # removed, or a stop request. MWI ends only at a cache-line boundary.
    voluntary_end = Signal(name=f"voluntary_end_{tag}")
    m.d.comb += voluntary_end.eq(((cmp.lt_expired & ~lines.gnt) | txn.stopping) &
                                 (~txn.is_mwi | by_sizes(cmp.at_line_end)))
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
        m.d.comb += irdy_next.eq(Mux(xfer, ini.irdy_wait == 0, txn.wait_left == 0))
    return PhaseValues(
        xfer=xfer, moved_now=moved_now, by_moved=by_moved, next_wide=next_wide,
        target_stop=target_stop, target_abort=target_abort, forced_end=forced_end,
        txn_over=txn_over, voluntary_end=voluntary_end, hold_data=hold_data,
        fits_next=fits_next, irdy_next=irdy_next)


def cofactor_driving(m, machine, outs, values, tag):
    """REQ#, the write words for the next clock, the outputs of a data phase and the
    events of this edge: the :class:`Driving`."""
    edge, held, txn, wide_bus = machine.edge, machine.held, machine.txn, machine.wide_bus
    word, sizes, by_moved = machine.word, machine.sizes, values.by_moved
    drv, nxt, req_off = outs.drv, outs.nxt, txn.req_off
    irdy_next, txn_write = values.irdy_next, txn.txn_write
    # --- outputs: defaults keep the bus released -----------------------------------
    req_wanted = ((held.held | held.offered) & (req_off == 0)
                  & ((txn.phase == _Phase.IDLE) | held.e_more))
    m.d.comb += [drv["req"].oe.eq(1), drv["req"].o.eq(req_wanted)]
    with m.If(req_off != 0):
        m.d.comb += nxt["req_off"].eq(req_off - 1)

    # Write data for the next clock: the word on the pins through a wait-stated
    # phase (a timestamp pattern's window is no stream: only the pins keep its
    # word), the next one after a phase that moved.
    write_word_lo = Mux(values.hold_data, edge.pin_ad, by_moved({k: word[k] for k in sizes}))
    write_word_hi = Mux(values.hold_data, edge.pin_ad_hi,
                        by_moved({k: word[k + 1] for k in sizes}))

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
                drv["req64"].oe.eq(txn.txn_wide & frame_next),
                drv["req64"].o.eq(frame_next),
                drv["cbe_hi"].oe.eq(values.next_wide), drv["cbe_hi"].o.eq(0),
                drv["ad_hi"].oe.eq(values.next_wide & txn_write),
                drv["ad_hi"].o.eq(write_word_hi),
            ]

    # The events of this edge, registered on their way out (see ``events``).
    ev = Signal(InitiatorEvents, name=f"ev_{tag}")
    m.d.comb += [
        ev.owning.eq(edge.pin_frame | edge.pin_irdy),
        ev.gnt_wait.eq(txn.gnt_wait),
        ev.latency.eq(txn.since_addr),
    ]
    start = Signal(name=f"start_{tag}")
    advanced = Signal(2, name=f"advanced_{tag}")
    m.d.comb += advanced.eq(values.moved_now)
    return Driving(drive_data_phase, ev, start, advanced)


def decide_idle(m, machine, lines, outs, driving):
    """The IDLE phase: bus parking, a stop between transactions, a transaction's
    start, or a descriptor with nothing to move."""
    held, start_values, wide_bus = machine.held, machine.start, machine.wide_bus
    drv, nxt, ev, go = outs.drv, outs.nxt, driving.ev, lines.go
    e_addr, e_cmd, dac, start_cmd = (held.e_addr, held.e_cmd, start_values.dac,
                                     start_values.start_cmd)
    use_wide = start_values.use_wide
    pending = held.held | held.offered
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
    with m.If(machine.txn.stopping):
        # Stopped between transactions: drop the descriptor.
        m.d.comb += [nxt["held"].eq(0), nxt["stopping"].eq(0)]
        m.d.comb += [ev.done.eq(1), ev.result.eq(DescriptorResult.STOPPED)]
    with m.Elif(machine.cmp.startable & go):
        # AD and C/BE# as parked (above). IRDY# is left alone in the address
        # phase: the previous master may still be driving it deasserted then.
        m.d.comb += [
            driving.start.eq(1), ev.start.eq(1),
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
    with m.Elif(pending & machine.cmp.nothing_left):
        # Nothing to move: finished without a transaction.
        m.d.comb += nxt["held"].eq(0)
        m.d.comb += [ev.done.eq(1), ev.result.eq(DescriptorResult.OK)]


def decide_address_phases(m, ini, machine, outs, values, driving):
    """The DAC phase and the address phase (``phase`` DAC, ADDR)."""
    txn, wide_bus, addr = machine.txn, machine.wide_bus, machine.held.addr
    drv, nxt, irdy_next = outs.drv, outs.nxt, values.irdy_next
    txn_cmd, txn_wide, txn_left_within = txn.txn_cmd, txn.txn_wide, machine.cmp.txn_left_within
    voluntary_end, drive_data_phase = values.voluntary_end, driving.drive_data_phase
    with m.Switch(txn.phase):
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
            m.d.comb += irdy_next.eq(ini.irdy_wait == 0)
            # The latency timer may have expired by the address phase (a timer
            # of 0, or 1 with a DAC): with GNT# removed, the first data phase is
            # the last.
            drive_data_phase(last | voluntary_end)
            with m.If(voluntary_end & irdy_next & ~txn.stopping & ~last):
                m.d.comb += [nxt["term"].eq(Termination.LATENCY_TIMER),
                             nxt["req_off"].eq(2), drv["req"].o.eq(0)]
            m.d.comb += [
                nxt["phase"].eq(_Phase.DATA),
                nxt["wait_left"].eq(Mux(ini.irdy_wait == 0, 0,
                                        ini.irdy_wait - 1))]


def decide_data_phase(m, ini, machine, lines, outs, values, driving, tag):
    """A data phase (``phase`` DATA): DEVSEL#, the words moving, why and when the
    transaction ends, and what the descriptor's result is."""
    txn, pin_frame, pin_irdy = machine.txn, machine.edge.pin_frame, machine.edge.pin_irdy
    dwords_left_is, sizes = machine.cmp.dwords_left_is, machine.sizes
    drv, nxt, ev, advanced = outs.drv, outs.nxt, driving.ev, driving.advanced
    drive_data_phase = driving.drive_data_phase
    target_stop, forced_end, stopping = values.target_stop, values.forced_end, txn.stopping
    voluntary_end, hold_data, fits_next = (values.voluntary_end, values.hold_data,
                                           values.fits_next)
    with m.Switch(txn.phase):

        with m.Case(_Phase.DATA):
            with m.If(lines.devsel):
                m.d.comb += nxt["devsel_seen"].eq(1)
                with m.If(txn.txn_wide & ~lines.ack64):
                    m.d.comb += nxt["narrow"].eq(1)
            with m.If(~pin_irdy & (txn.wait_left != 0)):
                m.d.comb += nxt["wait_left"].eq(txn.wait_left - 1)
            with m.If(values.xfer):
                m.d.comb += [
                    nxt["moved"].eq(1),
                    nxt["wait_left"].eq(Mux(ini.irdy_wait == 0, 0,
                                            ini.irdy_wait - 1)),
                    ev.phase.eq(1), ev.dwords.eq(values.moved_now), ev.first.eq(~txn.moved),
                ]

            # Why the transaction ends, decided in the clock it is seen.
            seen_term = Signal(Termination, name=f"seen_term_{tag}")
            with m.If(values.target_abort):
                m.d.comb += seen_term.eq(Termination.TARGET_ABORT)
            with m.Elif(target_stop & lines.trdy):
                # With IRDY# asserted the word moves now; else TRDY# is held
                # until IRDY# is asserted in the last phase, and it moves then.
                m.d.comb += seen_term.eq(Termination.DISCONNECT_DATA)
            with m.Elif(target_stop & txn.moved):
                m.d.comb += seen_term.eq(Termination.DISCONNECT_NODATA)
            with m.Elif(target_stop):
                m.d.comb += seen_term.eq(Termination.RETRY)
            with m.Else():
                m.d.comb += seen_term.eq(Termination.MASTER_ABORT)
            with m.If(forced_end):
                m.d.comb += nxt["term"].eq(seen_term)
            lt_end = (pin_frame & voluntary_end & values.irdy_next & ~hold_data &
                      ~stopping & ~fits_next)
            with m.Elif(lt_end):
                m.d.comb += nxt["term"].eq(Termination.LATENCY_TIMER)

            with m.If(target_stop | lt_end):
                # Ended by the target or by GNT# removal: REQ# off for two
                # clocks around the idle clock, so other masters get their turn
                # (and an arbiter that withholds GNT# until REQ# drops gives it
                # back).
                m.d.comb += [nxt["req_off"].eq(2), drv["req"].o.eq(0)]

            with m.If(values.txn_over):
                # The phase on the pins is the last: release the bus next clock.
                end_term = Signal(Termination, name=f"end_term_{tag}")
                m.d.comb += [nxt["phase"].eq(_Phase.IDLE), ev.end.eq(1),
                             end_term.eq(Mux(forced_end, seen_term, txn.term)),
                             ev.term.eq(end_term)]
                aborted = end_term.as_value().matches(Termination.MASTER_ABORT,
                                                      Termination.TARGET_ABORT)
                # Special Cycles are broadcast: no DEVSEL# is the normal ending.
                with m.If(txn.special & (end_term == Termination.MASTER_ABORT)):
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
                with m.Elif(values.by_moved({k: dwords_left_is[k] for k in sizes})):
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


def decide_outcome(m, machine, outs, values, driving):
    """The outcome of this edge, registered: the pins' copies, the events and the
    flags the next clock's decision starts from."""
    drv, nxt, ev, moved_now = outs.drv, outs.nxt, driving.ev, values.moved_now
    # The outcome of this edge, registered.
    m.d.comb += [
        nxt["pin_frame"].eq(drv["frame"].oe & drv["frame"].o),
        nxt["pin_irdy"].eq(drv["irdy"].oe & drv["irdy"].o),
        nxt["pin_ad"].eq(drv["ad"].o),
        nxt["busy"].eq(nxt["held"] | (nxt["phase"] != _Phase.IDLE)),
        nxt["go_held"].eq((nxt["phase"] == _Phase.IDLE) & nxt["held"] & ~nxt["stopping"] &
                          ~machine.cmp.left_next_is.bit_select(nxt["advanced_q"], 1)),
        nxt["go_free"].eq((nxt["phase"] == _Phase.IDLE) & ~nxt["held"] &
                          ~nxt["stopping"] & ~nxt["aborted_q"]),
        nxt["moved_q"].eq(moved_now), nxt["advanced_q"].eq(driving.advanced),
        nxt["start_q"].eq(driving.start),
        nxt["take_q"].eq(Mux(machine.txn.txn_write, moved_now, 0)),
        nxt["aborted_q"].eq(ev.done & ev.result.as_value().matches(
            DescriptorResult.MASTER_ABORT, DescriptorResult.TARGET_ABORT)),
        nxt["events"].eq(ev),
        nxt["received_master_abort"].eq(
            ev.done & (ev.result == DescriptorResult.MASTER_ABORT)),
        nxt["received_target_abort"].eq(
            ev.done & (ev.result == DescriptorResult.TARGET_ABORT)),
    ]
    if machine.wide_bus:
        m.d.comb += nxt["pin_ad_hi"].eq(drv["ad_hi"].o)
