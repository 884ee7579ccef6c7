# SPDX-License-Identifier: BSD-2-Clause
"""The PCI master component: its ports, and its elaboration as a row of steps, each
taking the nets it needs and returning the ones it makes (:mod:`.bookkeeping`,
:mod:`.decision`, :mod:`.choice`, :mod:`.outputs`). The package's docstring
(:mod:`pcispy.core.initiator`) states the timing model."""

from amaranth import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.bus import ADDecision, PCIBusSignature
from pcispy.core.live import cells_for
from pcispy.core.initiator.bookkeeping import (comparisons, decided_state, descriptor,
                                               previous_edge, start_values, transaction,
                                               write_words)
from pcispy.core.initiator.choice import Cofactors
from pcispy.core.initiator.decision import Machine
from pcispy.core.initiator.interface import (WDATA_WINDOW, Descriptor, Handshake,
                                             InitiatorEvents, InitiatorStatus, ReadWords)
from pcispy.core.initiator.outputs import drive_outputs, read_data_and_parity

__all__ = ["Initiator"]


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
            that make the choice in the cell joining the target's AD. Expanded, only
            ``take_high`` is live; folded, the word is ``high``, always taken.

    Parameters:
        width: bus width, 32 or 64.
        expand_live: build the decision once per value of the live lines and let them
            select (the timing structure, see :mod:`.choice` and :mod:`pcispy.core.live`), or
            once with the live lines as inputs (the same function, an eighth of the logic:
            faster to simulate). ``None``: expand when elaborated for a platform.
        ad_groups: the copies of ``ad_decision``'s ``take_high`` (32-bit): one per group
            of AD pins the pads serve.
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
        """The master, in the order its parts feed one another (:mod:`.bookkeeping`):
        what the previous edge did and what is on the pins, the descriptor, the
        transaction's registers, the counters' comparisons, the write words, a
        transaction's start and the state the decision updates; then the live
        handshake: the decision (:mod:`.decision`) built per value of the live lines
        (:class:`~.choice.Cofactors`), the outputs they choose (:mod:`.outputs`), the
        state they choose a clock later; last the read data and parity."""
        m = Module()
        wide_bus = self.width == 64
        cells = cells_for(platform)
        sizes = (0, 1, 2) if wide_bus else (0, 1)    # DWORDs a data phase may move
        # The decision built per value of the live lines where the cells are the
        # FPGA's (see :class:`~.choice.Cofactors`), once with the lines as inputs
        # elsewhere.
        expand = cells.fpga if self.expand_live is None else self.expand_live
        edge = previous_edge()
        held = descriptor(m, self, edge.advanced_q)
        txn = transaction(m, self, edge)
        cmp = comparisons(m, self, edge, held, txn, sizes)
        word = write_words(m, self, edge.take_q, sizes)
        start = start_values(m, self, held, txn, cmp, wide_bus)
        decided = decided_state(self, edge, held, txn, cmp, wide_bus)
        machine = Machine(edge=edge, held=held, txn=txn, cmp=cmp, start=start, word=word,
                          decided=decided, sizes=sizes, wide_bus=wide_bus)
        cofactors = Cofactors(m, self, cells, machine, expand)
        drive_outputs(m, self, cells, machine, cofactors, expand)
        cofactors.register_state(decided.state)
        read_data_and_parity(m, self, machine)
        return m
