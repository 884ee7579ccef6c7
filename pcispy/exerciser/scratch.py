# SPDX-License-Identifier: BSD-2-Clause
"""The scratch RAM behind the exerciser windows: every PIO lands in memory and can be checked.

:class:`ScratchRAM` answers the target's backend bus (always ready, read data one clock
after the request, byte-enable writes). Its storage is named ``bd_storage`` so the
simulated system reaches it as a backdoor. Large RAMs must be built from the hand-written
:data:`VERILOG_SOURCE` (``verilog=True``, pass the file in the build's ``sources``);
``verilog=False`` uses an Amaranth ``Memory`` for unit tests under the Python simulator.
"""

from pathlib import Path

from amaranth import ClockSignal, Instance, Module, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In

from pcispy.core.target import BackendSignature

__all__ = ["ScratchRAM", "VERILOG_SOURCE"]

#: The Verilog RAM used with ``verilog=True``.
VERILOG_SOURCE = Path(__file__).with_name("scratch_ram.v")


class ScratchRAM(wiring.Component):
    """Word-addressed RAM on a target backend bus, in clock domain ``pci``.

    Ports:
        bus (In, BackendSignature(addr_bits, width)): requests from the target.

    Parameters:
        width: word width, 32 or 64.
        addr_bits: log2 of the number of words.
        verilog: instantiate :data:`VERILOG_SOURCE` instead of an Amaranth ``Memory``.
    """
    def __init__(self, *, width=32, addr_bits=10, verilog=False):
        self.width = width
        self.addr_bits = addr_bits
        self.verilog = verilog
        super().__init__({"bus": In(BackendSignature(addr_bits, width))})

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        w_en = Signal(self.width // 8)
        writing = bus.valid & bus.write
        m.d.comb += [bus.ready.eq(1), w_en.eq(bus.w_be & writing.replicate(self.width // 8))]
        m.d.pci += bus.r_valid.eq(bus.valid & ~bus.write)
        if self.verilog:
            m.submodules.ram = Instance(
                "pcispy_scratch_ram", p_WIDTH=self.width, p_ABITS=self.addr_bits,
                i_clk=ClockSignal("pci"), i_w_addr=bus.addr, i_w_data=bus.w_data,
                i_w_en=w_en, i_r_addr=bus.addr, o_r_data=bus.r_data)
            return m
        m.submodules.bd_storage = storage = memory.Memory(
            shape=self.width, depth=1 << self.addr_bits, init=[])
        write = storage.write_port(granularity=8, domain="pci")
        read = storage.read_port(domain="pci")
        m.d.comb += [
            write.addr.eq(bus.addr), write.data.eq(bus.w_data), write.en.eq(w_en),
            read.addr.eq(bus.addr), bus.r_data.eq(read.data),
        ]
        return m
