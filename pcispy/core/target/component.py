# SPDX-License-Identifier: BSD-2-Clause
"""The PCI target component: its ports, and its elaboration as a row of steps, each
taking the nets it needs and returning the ones it makes (:mod:`.decode`,
:mod:`.transaction`, :mod:`.datapath`, :mod:`.decision`).

The target sits behind :class:`~pcispy.core.pads.PCIPads`: what it presents at a clock
edge is on the pins during the next clock, and it sees the wide inputs one clock late.
The package's docstring (:mod:`pcispy.core.target`) says what it answers and how.
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.backend import BackendSignature
from pcispy.pci.bus import DECODE_SPEEDS, DevselSpeed, PCIBusSignature
from pcispy.core.live import cells_for
from pcispy.core.pads import LIVE_LINES, decode_signature
from pcispy.core.target.datapath import (backend_requests, posted_writes, read_data_out,
                                         read_prefetch, read_word, write_data_and_parity)
from pcispy.core.target.decision import (LiveChoice, choose_state, decide,
                                         present_handshake)
from pcispy.core.target.decode import (build_claim, check_address_parity,
                                       decode_address_phase, report_bar0)
from pcispy.core.target.transaction import next_clock, transaction_state
from pcispy.core.target.window import ResponseKnobs

__all__ = ["PCITarget"]


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
            whatever the decode speed (for the spy;
            :func:`~.decode.report_bar0`).

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
        decode and parity, the claim and its report to the spy (:mod:`.decode`); the
        transaction's state, the read prefetch and posted-write buffers, the next
        clock's arithmetic and the next read word (:mod:`.transaction`,
        :mod:`.datapath`); then the decision, built per value of the live IRDY# and
        FRAME#, which choose the handshake outputs and, a clock later, the one-bit state
        (:mod:`.decision`); last AD, the backend requests and the write data and its
        parity (:mod:`.datapath`)."""
        m = Module()
        cells = cells_for(platform)
        wide = self.width == 64
        backends = [self.config] + [getattr(self, f"bar{i}")
                                    for i, w in enumerate(self.windows) if w is not None]
        n_sel = len(backends)
        phase = decode_address_phase(m, self)
        address_parity_bad = check_address_parity(m, self, cells, phase.now)
        claim = build_claim(m, self, phase, n_sel)
        report_bar0(m, self, phase)
        transaction, effective = transaction_state(m, claim, n_sel)
        prefetch = read_prefetch(m, backends, wide)
        posted = posted_writes(m, prefetch.data_bits, n_sel)
        ahead = next_clock(claim, transaction, self.knobs, posted.wfifo, posted.moved)
        word = read_word(m, self.knobs, prefetch, transaction, wide)

        cases = {(claimed, irdy, frame): decide(
                     m, transaction, prefetch, word, ahead.moves[claimed], irdy, frame,
                     ahead.views[claimed], wide=wide, fast_decode=self.fast_decode)
                 for claimed in (False, True) for irdy in (0, 1) for frame in (0, 1)}
        choice = LiveChoice(m, cells, self.live, claim.with_frame, cases)
        presented = present_handshake(m, choice)
        xfer64_n = choose_state(m, self, choice, presented, claim, transaction, effective,
                                ahead.moves, prefetch, word, posted)

        read_data_out(m, self, choice, claim, prefetch, word, effective, xfer64_n)
        requests = backend_requests(m, self, backends, claim, transaction, effective,
                                    prefetch, posted)
        write_data_and_parity(m, self, transaction, effective, posted, requests,
                              address_parity_bad)
        return m
