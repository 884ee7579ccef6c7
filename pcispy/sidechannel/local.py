# SPDX-License-Identifier: BSD-2-Clause
"""Local access to the board's registers, trace memory and configuration space
(clock domain ``pci``), shared with the PCI target.

The UART side channel reaches :class:`~pcispy.board.top.PCIBoard` through one port,
:class:`LocalAccessSignature`: a request (space, DWORD address, read or write) and one
response per request. :class:`LocalAccess` routes it by space to a
:class:`SharedBackend` per space; each sits between the target and that space's backend
(the CSR bank, the trace memory, the configuration space) and lets a local request in
only while the target has nothing presented or in flight, so both keep their responses in
order and neither needs to know about the other.
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.backend import BackendSignature
from pcispy.sidechannel.protocol import ADDRESS_BYTES, Space

__all__ = ["LocalAccessSignature", "SharedBackend", "LocalAccess", "ADDR_BITS"]

#: Width of a local DWORD address (what a request frame carries).
ADDR_BITS = 8 * ADDRESS_BYTES


class LocalAccessSignature(wiring.Signature):
    """A local requester's port, from the requester's side.

    Members:
        valid (Out, 1): a request is presented; taken at an edge where ``ready`` is high.
        ready (In, 1): the request is taken.
        space (Out, 2): a :class:`~pcispy.sidechannel.protocol.Space`.
        addr (Out, addr_bits): DWORD number within the space.
        write (Out, 1), w_data (Out, 32): a write of a whole DWORD, and its value.
        r_valid (In, 1): one clock per request taken, at least one clock after it: the
            read's word in ``r_data``, or a write's acknowledgment.
        r_data (In, 32): read data. r_error (In, 1): with ``r_valid``: no such space or
            address (nothing was read or written).
    """
    def __init__(self, addr_bits=ADDR_BITS):
        self.addr_bits = addr_bits
        super().__init__({
            "valid": Out(1), "ready": In(1), "space": Out(2), "addr": Out(addr_bits),
            "write": Out(1), "w_data": Out(32),
            "r_valid": In(1), "r_data": In(32), "r_error": In(1),
        })


class SharedBackend(wiring.Component):
    """One backend shared by the PCI target and a local requester (domain ``pci``).

    The target has priority: a local request is taken only in a clock after one where the
    target presented no request, while it has no read in flight. The grant never waits
    for the target's request of the same clock (that request is decoded from the address
    phase in this very clock: a long path, kept out of the backend's port muxes); a target
    request meeting a grant, or a local read in flight, waits (``ready`` low), which a PCI
    target answers with wait states or a retry like any slow backend.

    Ports:
        target (In, BackendSignature(addr_bits, width)): from the PCI target.
        backend (Out, BackendSignature(addr_bits, width)): to the backend.
        local (In, LocalAccessSignature(addr_bits + log2(width // 32))): from the local
            requester (``space`` ignored, ``r_error`` always 0); a 64-bit backend word is
            two DWORDs, the lower at the even address.

    Parameters:
        addr_bits: word address bits of the backend. width: backend word, 32 or 64.
    """
    def __init__(self, addr_bits, width=32):
        self.lanes = width // 32
        super().__init__({
            "target": In(BackendSignature(addr_bits, width)),
            "backend": Out(BackendSignature(addr_bits, width)),
            "local": In(LocalAccessSignature(addr_bits + self.lanes - 1)),
        })

    def elaborate(self, platform):
        m = Module()
        target, backend, local = self.target, self.backend, self.local
        in_flight = Signal(range(256))     # target reads taken and not yet answered
        local_read = Signal()              # a local read is in flight
        lane = Signal()                    # its DWORD within a 64-bit word
        write_ack = Signal()
        grant = Signal()
        target_was_idle = Signal()
        m.d.pci += target_was_idle.eq(~target.valid)
        m.d.comb += grant.eq(local.valid & target_was_idle & (in_flight == 0) & ~local_read
                             & ~write_ack & backend.ready)
        m.d.comb += [local.ready.eq(grant),
                     target.ready.eq(backend.ready & ~local_read & ~grant)]
        with m.If(grant):
            word = local.addr[1:] if self.lanes == 2 else local.addr
            enables = (Const(0xF, 4) if self.lanes == 1 else
                       Cat((~local.addr[0]).replicate(4), local.addr[0].replicate(4)))
            m.d.comb += [backend.valid.eq(1), backend.addr.eq(word),
                         backend.write.eq(local.write),
                         backend.w_data.eq(local.w_data.replicate(self.lanes)),
                         backend.w_be.eq(enables)]
            m.d.pci += [local_read.eq(~local.write), write_ack.eq(local.write),
                        lane.eq(local.addr[0] if self.lanes == 2 else 0)]
        with m.Else():
            m.d.comb += [backend.valid.eq(target.valid & ~local_read),
                         backend.addr.eq(target.addr), backend.write.eq(target.write),
                         backend.w_data.eq(target.w_data), backend.w_be.eq(target.w_be)]
            m.d.pci += write_ack.eq(0)
        taken = target.valid & target.ready & ~target.write
        answered = backend.r_valid & ~local_read
        m.d.pci += in_flight.eq(in_flight + taken - answered)
        m.d.comb += [target.r_valid.eq(answered), target.r_data.eq(backend.r_data)]
        with m.If(local_read & backend.r_valid):
            m.d.pci += local_read.eq(0)
        m.d.comb += [
            local.r_valid.eq(write_ack | (local_read & backend.r_valid)),
            local.r_data.eq(backend.r_data.word_select(lane, 32) if self.lanes == 2
                            else backend.r_data),
        ]
        return m


class LocalAccess(wiring.Component):
    """Routes local requests by space to each space's :class:`SharedBackend` (``pci``).

    Ports:
        request (In, LocalAccessSignature()): from the local requester. A request to a
            space that is not built, or beyond its end, is answered with ``r_error`` in the
            next clock.
        <space name lower-case> (Out, LocalAccessSignature(bits)): one per space given.

    Parameters:
        spaces: ``{Space: address bits}`` of the spaces the board has (DWORD addresses).
    """
    def __init__(self, spaces):
        self.spaces = {Space(space): bits for space, bits in spaces.items()}
        members = {"request": In(LocalAccessSignature())}
        for space, bits in self.spaces.items():
            members[space.name.lower()] = Out(LocalAccessSignature(bits))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        req = self.request
        known = Const(0)
        refused = Signal()
        r_valid, r_data = Const(0), Const(0, 32)
        for space, bits in self.spaces.items():
            port = getattr(self, space.name.lower())
            selected = Signal(name=f"{space.name.lower()}_selected")
            m.d.comb += selected.eq((req.space == space) & (req.addr >> bits == 0))
            known = known | selected
            m.d.comb += [port.valid.eq(req.valid & selected), port.addr.eq(req.addr),
                         port.write.eq(req.write), port.w_data.eq(req.w_data)]
            with m.If(selected):
                m.d.comb += req.ready.eq(port.ready)
            r_valid = r_valid | port.r_valid
            r_data = r_data | (port.r_data & port.r_valid.replicate(32))
        with m.If(~known):
            m.d.comb += req.ready.eq(1)
        m.d.pci += refused.eq(req.valid & ~known)
        m.d.comb += [req.r_valid.eq(r_valid | refused), req.r_data.eq(r_data),
                     req.r_error.eq(refused)]
        return m
