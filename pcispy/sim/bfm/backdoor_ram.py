# SPDX-License-Identifier: BSD-2-Clause
"""A large simulation RAM with a Python backdoor, for host memory and agent buffers: the
RAM of :mod:`pcispy.core.ram` as a component with ports.

Python reaches the words as ``<instance path>.<name>.ram.bd_storage[index]`` in a Verilator
build (add :data:`pcispy.core.ram.VERILOG_SOURCE` to the build's ``sources``).
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.core.ram import VERILOG_SOURCE, add_ram

__all__ = ["BackdoorRAM", "VERILOG_SOURCE"]


class BackdoorRAM(wiring.Component):
    """Simulation RAM: one byte-lane write port, one synchronous read port.

    Ports:
        w_addr (In, addr_bits): word address written at the clock edge.
        w_data (In, width): data to write.
        w_en (In, width // 8): byte lanes to write (0 = no write).
        r_addr (In, addr_bits): word address to read.
        r_data (Out, width): the word at ``r_addr`` one clock after it was presented.

    Parameters:
        width: word width in bits (32 or 64).
        addr_bits: log2 of the depth in words.
        verilog: True (default) keeps the words in ``pcispy/core/ram.v`` for Verilator
            builds; False builds the same RAM from an Amaranth ``Memory`` named ``bd_storage``,
            for small unit tests under Amaranth's Python simulator (which cannot run a
            Verilog instance).
    """
    def __init__(self, *, width=32, addr_bits=10, verilog=True):
        self.width = width
        self.addr_bits = addr_bits
        self.verilog = verilog
        super().__init__({
            "w_addr": In(addr_bits), "w_data": In(width), "w_en": In(width // 8),
            "r_addr": In(addr_bits), "r_data": Out(width),
        })

    def elaborate(self, platform):
        m = Module()
        ram = add_ram(m, width=self.width, addr_bits=self.addr_bits, verilog=self.verilog)
        m.d.comb += [
            ram.w_addr.eq(self.w_addr), ram.w_data.eq(self.w_data), ram.w_en.eq(self.w_en),
            ram.r_addr.eq(self.r_addr), self.r_data.eq(ram.r_data),
        ]
        return m
