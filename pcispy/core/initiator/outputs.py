# SPDX-License-Identifier: BSD-2-Clause
"""The master's outputs: the bus lines as the live lines choose them
(:func:`drive_outputs`), AD's word and enable as one decision the pads make on a 32-bit
bus (:func:`ad_decision`), and the read data with its parity check and the Status
pulses (:func:`read_data_and_parity`).

Each is built into the initiator's module ``m`` and takes the component ``ini`` for its
ports (:class:`~pcispy.core.initiator.component.Initiator`).
"""

from amaranth import Cat, Mux, Signal

from pcispy.pci.bus import PRESENTED_GATED
from pcispy.core.pads import CORE_GATED_LINES, JOINED_LINES
from pcispy.core.initiator.interface import _Phase

__all__ = ["ad_decision", "drive_outputs", "read_data_and_parity"]


def ad_decision(m, ini, cells, machine, cofactors):
    """``{part: value}`` of :class:`~pcispy.pci.bus.ADDecision`: AD's word and enable on
    a 32-bit bus, the values of the phase machine's outputs (:func:`~.decision.decide`)
    as one decision between two registered words, which the pads make in the cell that
    joins the target's AD. ``machine``: the :class:`~.decision.Machine`;
    ``cofactors``: the :class:`~.choice.Cofactors` (its ``is_idle``).

    What the machine presents on AD: while idle, the address whenever GNT# counts
    (``go``: a start, or the bus parked on us), else nothing; in the DAC phase the
    upper address; in the address phase a write's held or first word; in a data
    phase a write's word
    (the next one when a word moves now, ``xfer``), nothing once the transaction
    ends with this phase (``kill``: STOP# or a master abort ends the final phase).
    ``high`` is the address while idle and the next word after a data phase that is
    not the final one, so it is 0 in the final phase and ``kill`` can take it
    rather than gate ``low``: ``take_high = go | xfer | kill``. ``go`` holds only
    while idle and ``xfer`` and ``kill`` only in a data phase, so the phase chooses
    which to read, and STOP# which form of ``kill``: ``take_high`` is one slice pair
    per copy (:meth:`~pcispy.core.cells.CellModel.table_choice`, by "idle" and STOP#,
    among four tables of the other lines and registered halves). A line crosses that
    and the pads' join, two cells reached by routing to AD's registers. (With the three
    terms each a cell, ORed in a cell of the pads, three; chosen among the sixteen
    cofactors' words, five or six.) The same values clock for clock:
    ``expansion_prove`` checks them against the folded build.
    """
    txn, edge, now, word = machine.txn, machine.edge, ini.now, machine.word
    is_idle, final_phase, ending = cofactors.is_idle, txn.final_phase, txn.ending
    txn_write, pin_irdy = txn.txn_write, edge.pin_irdy

    def net(value, name):
        return cells.kept(m, value, name)
    # The registered halves of the three decisions (``go`` only while idle,
    # ``xfer`` only in a data phase, ``kill`` only in the final one, not idle).
    go_ok = net(ini.gnt_allowed & is_idle, "ad_go_ok")
    xfer_ok = net(txn.in_data & pin_irdy & (~ending | txn.ending_open), "ad_xfer_ok")
    final_open = net(~is_idle & final_phase & ~ending, "ad_final_open")
    abort_due = net(~txn.devsel_seen & machine.cmp.devsel_overdue, "ad_abort_due")
    # GNT# counts while idle only with the bus idle: ``gnt_counts`` written out,
    # since ``go_ok`` already holds "idle" and GNT# then meets one LUT of four
    # inputs (``gnt_counts & go_ok`` would read the phase again: five). In a data
    # phase ``kill`` with STOP# asserted is ``final_open``; with STOP# deasserted a
    # master abort, ``final_open & abort_due`` (one registered half: the table then
    # has room for ``xfer``).
    abort_open = net(final_open & abort_due, "ad_abort_open")
    go = (lambda gnt, frame, irdy, ok: gnt and not frame and not irdy and ok,
          [now.gnt, now.frame, now.irdy, go_ok], (0, 1, 2))
    busy = (lambda trdy, devsel, ok, abort: (trdy and devsel and ok) or (not devsel and abort),
            [now.trdy, now.devsel, xfer_ok, abort_open], (0, 1))
    stopped = (lambda trdy, devsel, ok, open_: (trdy and devsel and ok) or open_,
               [now.trdy, now.devsel, xfer_ok, final_open], (0, 1))
    # One copy of the decision per group of AD pins (``ad_groups``), each placed next
    # to its pins; table index: bit 0 "idle", bit 1 STOP#.
    take_high = [cells.table_choice(m, [is_idle, now.stop], [busy, go, stopped, go],
                                    f"ad_take_high_{group}", inverted=(1,))
                 for group in range(ini.ad_groups)]
    # high: idle, the address; moving now, the next word unless this phase is the
    # final one. low: the DAC phase's upper address; a write's word on the pins
    # through a wait state (or the first), unless the final phase is ending.
    is_dac = txn.phase == _Phase.DAC
    moving_on = txn_write & ~final_phase
    writing = ~is_idle & txn_write & ~(final_phase & ending)
    held_word = Mux(pin_irdy, edge.pin_ad, word[0])
    return {
        "take_high": Cat(*take_high),
        "high": net(Mux(is_idle, machine.held.e_addr[:32], moving_on.replicate(32) & word[1]),
                    "ad_high"),
        "high_oe": net(is_idle | moving_on, "ad_high_oe"),
        "low": net(Mux(is_dac, machine.held.addr[32:], writing.replicate(32) & held_word),
                   "ad_low"),
        "low_oe": net(is_dac | writing, "ad_low_oe"),
    }


def drive_outputs(m, ini, cells, machine, cofactors, expand):
    """The outputs: the live lines choose in front of the pads' output flip-flops
    (:meth:`~.choice.Cofactors.choose`). AD's words and the handshake lines
    (``PRESENTED_GATED``) are presented as 0 where they are not driven (the board ORs the
    cores' values without their enables: ``merge_bus_drivers``); each cofactor gates its
    own value, from registers, so the live lines choose among gated values. On a 32-bit
    bus, expanded, AD leaves as the decision the pads make (:func:`ad_decision`)."""
    bus, wide_bus = ini.bus, machine.wide_bus

    def presented(name, port):
        def pick(nxt, drv):
            line = drv[name]
            if port == "o" and name in PRESENTED_GATED:
                return line.o & line.oe.replicate(len(line.o))
            return getattr(line, port)
        return pick
    late_ad = {}
    if expand and not wide_bus:
        m.d.comb += [getattr(ini.ad_decision, part).eq(value)
                     for part, value in ad_decision(m, ini, cells, machine,
                                                    cofactors).items()]
        late_ad = {("ad", "o"): ini.ad_decision.word(),
                   ("ad", "oe"): ini.ad_decision.enable()}
    elif not wide_bus:
        # Decided among the cofactors (or folded): the word is the decision's high half.
        m.d.comb += ini.ad_decision.take_high.eq((1 << ini.ad_groups) - 1)
        m.d.comb += [ini.ad_decision.high.eq(bus.ad.o),
                     ini.ad_decision.high_oe.eq(bus.ad.oe)]
    for name in machine.decided.driven:
        line = getattr(bus, name)
        for port in ("o", "oe"):
            if (name, port) in late_ad:
                m.d.comb += getattr(line, port).eq(late_ad[name, port])
                continue
            if (name, port) == ("req", "oe"):
                # REQ# is driven in every clock (every cofactor enables it): a choice
                # among ones in kept cells, which synthesis cannot fold, would still put
                # DEVSEL#, STOP# and GNT# in front of REQ#'s tristate register.
                m.d.comb += line.oe.eq(1)
                continue
            # C/BE#'s enable carries passive mode's gate (``drive_allowed``).
            gate = ini.drive_allowed if name in CORE_GATED_LINES and port == "oe" else None
            # REQ#'s value crosses nothing after GNT#'s cell to its output register: the
            # card's tightest paths (DEVSEL# -> REQ#) had an inverter cell there.
            inverse = (name, port) == ("req", "o")
            m.d.comb += getattr(line, port).eq(cofactors.choose(
                presented(name, port), f"{name}_{port}",
                staged=name not in JOINED_LINES, gate=gate, inverse=inverse))


def read_data_and_parity(m, ini, machine):
    """Read data (one clock after its data phase), its parity check (PERR#) and the
    Status register's pulses; ``wdata_take``."""
    bus, wide_bus, txn = ini.bus, machine.wide_bus, machine.txn
    txn_write, decided = txn.txn_write, machine.decided
    rd_count = Signal(2)
    m.d.comb += rd_count.eq(Mux(txn_write, 0, machine.edge.moved_q))
    m.d.comb += [
        ini.rdata.count.eq(rd_count),
        ini.rdata.dw[0].eq(bus.ad.i),
    ]
    if wide_bus:
        m.d.comb += ini.rdata.dw[1].eq(bus.ad_hi.i)
    # Data moved at the end of clock k; its PAR is on the pins in clock k + 1, where
    # the pads compare it (par_error); PERR# must be on the pins in clock k + 2.
    bad_parity = Signal()
    bad_hi = (ini.par64_error & (rd_count == 2)) if wide_bus else 0
    m.d.comb += bad_parity.eq((rd_count != 0) & (ini.par_error | bad_hi))
    m.d.comb += [
        bus.perr.oe.eq(bad_parity & ini.parity_response),
        bus.perr.o.eq(1),
    ]
    # Master Data Parity Error: we asserted PERR# on a read, or the target did on a
    # write of ours (sampled in the registered PERR# input, two clocks after data).
    write_window = Signal(3)
    with m.If(txn_write & (txn.phase == _Phase.DATA)):
        m.d.pci += write_window.eq(3)
    with m.Elif(write_window != 0):
        m.d.pci += write_window.eq(write_window - 1)
    # Everything that leaves for the DMA engine and the Status register is registered:
    # the live lines end at these flip-flops.
    detected_parity = Signal()
    master_data_parity = Signal()
    m.d.pci += [
        detected_parity.eq(bad_parity),
        master_data_parity.eq(ini.parity_response & (
            bad_parity | (bus.perr.i & ((write_window != 0) | (txn_write & txn.in_data))))),
    ]
    m.d.comb += [
        ini.status.received_master_abort.eq(decided.received_master_abort),
        ini.status.received_target_abort.eq(decided.received_target_abort),
        ini.status.detected_parity.eq(detected_parity),
        ini.status.master_data_parity.eq(master_data_parity),
    ]
    m.d.comb += ini.wdata_take.eq(machine.edge.take_q)
