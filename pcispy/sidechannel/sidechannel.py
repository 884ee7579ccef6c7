# SPDX-License-Identifier: BSD-2-Clause
"""The UART side channel: UART, frame engine and the crossing into the PCI clock.

Everything UART-side runs in ``sync`` (the board oscillator); the board's registers and
trace memory live in ``pci``. The two clocks are unrelated, so every bit that crosses goes
through a synchroniser:

- local accesses go ``sync -> pci`` through an :class:`~amaranth.lib.fifo.AsyncFIFO`, and
  their answers ``pci -> sync`` through another (Gray-coded pointers: a word is read only
  after it is stable on the other side);
- "the PCI side runs" is a slow toggle of the ``pci`` domain (a divided counter bit, so
  the faster PCI clock cannot alias) through an :class:`~amaranth.lib.cdc.FFSynchronizer`.

The hazards that remain are at the edges of the PCI clock's life: when RST# is asserted
the answer FIFO (written in ``pci``) empties and the bridge forgets a request in flight,
and without a PCI clock nothing is answered; the frame engine answers
:attr:`~.protocol.ResponseStatus.PCI_TIMEOUT` in both cases and discards answers that come late.
Requests still queued when the clock stopped are carried out when it comes back.
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.wiring import In, Out

from pcispy.sidechannel.engine import FrameEngine
from pcispy.sidechannel.local import ADDR_BITS, LocalAccessSignature
from pcispy.sidechannel.protocol import DEFAULT_BAUD, STATUS_COUNTERS, SYNC_CLOCK_HZ
from pcispy.sidechannel.uart import UARTReceiver, UARTTransmitter

__all__ = ["SideChannel", "DEFAULT_DIVISOR"]

#: Clocks per bit at the default rate on the board oscillator (25 MHz / 115200 = 217).
DEFAULT_DIVISOR = round(SYNC_CLOCK_HZ / DEFAULT_BAUD)

# Sync clocks without a change of the PCI side's toggle before it counts as stopped, and
# the PCI counter bit that toggles (every 16 PCI clocks: slow enough to sample at 25 MHz).
_PCI_IDLE_CLOCKS = 256
_PCI_TOGGLE_BIT = 4


class SideChannel(wiring.Component):
    """The side channel (domains ``sync`` and ``pci``).

    Ports:
        rx (In, 1): UART line from the host (idle high). tx (Out, 1): UART line to it.
        local (Out, LocalAccessSignature()): in domain ``pci``: to
            :attr:`PCIBoard.local <pcispy.board.top.PCIBoard>`.
        count_<name> (Out, 32): the frame engine's counters (``sync``;
            :data:`~.protocol.STATUS_COUNTERS`), for tests.

    Parameters:
        divisor: ``sync`` clocks per UART bit.
        pci_timeout: ``sync`` clocks the engine waits for an answer of the PCI side.
        fifo_depth: entries of each crossing FIFO (a power of two).
    """
    def __init__(self, divisor=DEFAULT_DIVISOR, *, pci_timeout=1 << 16, fifo_depth=8):
        self.divisor = divisor
        self.pci_timeout = pci_timeout
        self.fifo_depth = fifo_depth
        members = {"rx": In(1, init=1), "tx": Out(1, init=1),
                   "local": Out(LocalAccessSignature())}
        members.update({f"count_{name}": Out(32) for name in STATUS_COUNTERS})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.receiver = receiver = UARTReceiver(self.divisor)
        m.submodules.transmitter = transmitter = UARTTransmitter(self.divisor)
        m.submodules.engine = engine = FrameEngine(self.pci_timeout)
        m.d.comb += [
            receiver.rx.eq(self.rx), self.tx.eq(transmitter.tx),
            engine.rx_data.eq(receiver.data), engine.rx_valid.eq(receiver.valid),
            engine.rx_error.eq(receiver.error),
            transmitter.data.eq(engine.tx_data), transmitter.valid.eq(engine.tx_valid),
            engine.tx_ready.eq(transmitter.ready),
        ]
        for name in STATUS_COUNTERS:
            m.d.comb += getattr(self, f"count_{name}").eq(getattr(engine, f"count_{name}"))

        # sync -> pci: the accesses. pci -> sync: their answers (data, error).
        m.submodules.requests = requests = AsyncFIFO(
            width=2 + ADDR_BITS + 1 + 32, depth=self.fifo_depth, w_domain="sync", r_domain="pci")
        m.submodules.answers = answers = AsyncFIFO(
            width=33, depth=self.fifo_depth, w_domain="pci", r_domain="sync")
        m.d.comb += [
            requests.w_data.eq(Cat(engine.req_space, engine.req_addr, engine.req_write,
                                   engine.req_data)),
            requests.w_en.eq(engine.req_valid), engine.req_ready.eq(requests.w_rdy),
            engine.resp_valid.eq(answers.r_rdy), answers.r_en.eq(engine.resp_ready),
            engine.resp_data.eq(answers.r_data[:32]), engine.resp_error.eq(answers.r_data[32]),
        ]

        # The bridge (pci): one access at a time, started only when its answer has room.
        local = self.local
        waiting = Signal()
        space, addr, write, data = (requests.r_data[:2], requests.r_data[2:2 + ADDR_BITS],
                                    requests.r_data[2 + ADDR_BITS],
                                    requests.r_data[3 + ADDR_BITS:])
        m.d.comb += [local.space.eq(space), local.addr.eq(addr), local.write.eq(write),
                     local.w_data.eq(data),
                     local.valid.eq(~waiting & requests.r_rdy & answers.w_rdy)]
        with m.If(local.valid & local.ready):
            m.d.comb += requests.r_en.eq(1)
            m.d.pci += waiting.eq(1)
        with m.If(local.r_valid):
            m.d.comb += [answers.w_en.eq(1), answers.w_data.eq(Cat(local.r_data, local.r_error))]
            m.d.pci += waiting.eq(0)

        # Is the PCI side running (clock present, out of reset)?
        pci_count = Signal(_PCI_TOGGLE_BIT + 1)
        m.d.pci += pci_count.eq(pci_count + 1)
        toggle = Signal()
        m.submodules.pci_toggle = FFSynchronizer(pci_count[-1], toggle, o_domain="sync")
        toggle_seen = Signal()
        quiet = Signal(range(_PCI_IDLE_CLOCKS + 1), init=_PCI_IDLE_CLOCKS)
        m.d.sync += toggle_seen.eq(toggle)
        with m.If(toggle != toggle_seen):
            m.d.sync += quiet.eq(0)
        with m.Elif(quiet != _PCI_IDLE_CLOCKS):
            m.d.sync += quiet.eq(quiet + 1)
        m.d.comb += engine.pci_running.eq(quiet != _PCI_IDLE_CLOCKS)
        return m
