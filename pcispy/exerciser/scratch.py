# SPDX-License-Identifier: BSD-2-Clause
"""The scratch RAM behind the exerciser windows: every PIO lands in memory and can be checked.

:class:`ScratchRAM` answers the target's backend bus (always ready, read data one clock
after the request, byte-enable writes). Its words are the RAM of :mod:`pcispy.core.ram`,
which the simulated system reaches as a backdoor (``board.scratch.ram.bd_storage`` in a
Verilator build, ``verilog=True``; an Amaranth ``Memory`` for the FPGA and for unit tests
under the Python simulator).
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from pcispy.core.ram import add_ram
from pcispy.pci.backend import BackendSignature

__all__ = ["ScratchRAM"]


class ScratchRAM(wiring.Component):
    """Word-addressed RAM on a target backend bus, in clock domain ``pci``.

    Ports:
        bus (In, BackendSignature(addr_bits, width)): requests from the target.

    Parameters:
        width: word width, 32 or 64.
        addr_bits: log2 of the number of words.
        verilog: keep the words in :data:`pcispy.core.ram.VERILOG_SOURCE` (Verilator builds)
            instead of an Amaranth ``Memory``.
    """
    def __init__(self, *, width=32, addr_bits=10, verilog=False):
        self.width = width
        self.addr_bits = addr_bits
        self.verilog = verilog
        super().__init__({"bus": In(BackendSignature(addr_bits, width))})

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        writing = bus.valid & bus.write
        ram = add_ram(m, width=self.width, addr_bits=self.addr_bits, domain="pci",
                      verilog=self.verilog)
        m.d.comb += [
            bus.ready.eq(1),
            ram.w_addr.eq(bus.addr), ram.w_data.eq(bus.w_data),
            ram.w_en.eq(bus.w_be & writing.replicate(self.width // 8)),
            ram.r_addr.eq(bus.addr), bus.r_data.eq(ram.r_data),
        ]
        m.d.pci += bus.r_valid.eq(bus.valid & ~bus.write)
        return m
