# SPDX-License-Identifier: BSD-2-Clause
"""The word bus between the PCI target and the backend of each of its windows.

A backend (the register bank, a scratch RAM, the trace memory, the configuration space)
sees the target's data phases as word requests of any latency; the target turns the
backend's pace into wait states, disconnects or retries.
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["BackendSignature"]


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
