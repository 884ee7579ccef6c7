# SPDX-License-Identifier: BSD-2-Clause
"""A large simulation RAM with a Python backdoor, for host memory and agent buffers.

Amaranth's own ``Memory`` would be emitted with an initialiser line per word; a RAM of a
few megabytes then takes minutes to build. This component instantiates the hand-written
``backdoor_ram.v`` instead (add :data:`VERILOG_SOURCE` to the build's ``sources``).
Python reaches the words as ``<instance path>.<name>.bd_storage[index]``.
"""

from pathlib import Path

from amaranth import Instance, Module, ClockSignal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["BackdoorRAM", "VERILOG_SOURCE"]

#: The Verilog file that must be passed to :func:`pcispy.sim.verilate.build_model`.
VERILOG_SOURCE = Path(__file__).with_name("backdoor_ram.v")


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
        verilog: True (default) instantiates ``backdoor_ram.v`` for Verilator builds;
            False builds the same RAM from an Amaranth ``Memory`` named ``bd_storage``,
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
        if not self.verilog:
            m.submodules.bd_storage = storage = memory.Memory(
                shape=self.width, depth=1 << self.addr_bits, init=[])
            write = storage.write_port(granularity=8)
            read = storage.read_port()
            m.d.comb += [
                write.addr.eq(self.w_addr), write.data.eq(self.w_data), write.en.eq(self.w_en),
                read.addr.eq(self.r_addr), self.r_data.eq(read.data),
            ]
            return m
        m.submodules.ram = Instance(
            "pcispy_backdoor_ram",
            p_WIDTH=self.width, p_ABITS=self.addr_bits,
            i_clk=ClockSignal("sync"),
            i_w_addr=self.w_addr, i_w_data=self.w_data, i_w_en=self.w_en,
            i_r_addr=self.r_addr, o_r_data=self.r_data,
        )
        return m
