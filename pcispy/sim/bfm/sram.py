# SPDX-License-Identifier: BSD-2-Clause
"""A behavioural asynchronous SRAM (the spy's external trace memory), at clock resolution.

Written from the data sheet behaviour of a common asynchronous SRAM (e.g. 12 ns, CE#, WE#,
OE#, pins active low), not from the controller that drives it:

- read: with CE# and OE# low and WE# high the chip drives the word at ``a``; the data is
  valid only once the address has been stable for a whole clock (access time), before that
  the model drives :data:`UNSTABLE` so a controller sampling too early reads garbage;
- write: with CE# and WE# low the chip takes the address and data; the word is written when
  WE# (or CE#) rises, with the data present in the last clock WE# was low. The address must
  be set up before the write starts (a data sheet's t_AS of 0 ns is, at clock resolution,
  no change of address in the clock WE# falls: two pins switching on the same edge race),
  must not change while WE# is low, and it and the data must still be held the clock WE#
  rises (hold time); each breach adds one to ``errors``;
- the storage is named ``bd_storage`` (the backdoor): an Amaranth memory for Amaranth's
  Python simulator, or with ``verilog=True`` the hand-written ``sram_storage.v``
  (:data:`VERILOG_SOURCE`, to pass in the Verilator build's ``sources``) for large depths.

Ports (pin levels):
    a (In, addr_bits), d_i (In, data_bits): what the controller drives;
    d_o (Out, data_bits), d_oe (Out, 1): what the SRAM drives;
    ce_n, we_n, oe_n (In, 1); errors (Out, 16): timing breaches seen.

Parameters:
    addr_bits, data_bits; init: initial contents (list of words, Amaranth memory only);
    verilog: use ``sram_storage.v`` for the storage.
"""

from pathlib import Path


from amaranth.hdl import Module, Signal, Mux, Instance, ClockSignal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["AsyncSRAM", "UNSTABLE", "VERILOG_SOURCE"]

#: The Verilog storage used with ``verilog=True``.
VERILOG_SOURCE = Path(__file__).with_name("sram_storage.v")

#: Pattern driven while the read data is not yet valid (one per 32 bits).
UNSTABLE = 0xBAD0_BAD0


class AsyncSRAM(wiring.Component):
    def __init__(self, addr_bits=12, data_bits=32, init=(), verilog=False):
        if verilog and init:
            raise ValueError("initial contents need the Amaranth storage (verilog=False)")
        self.addr_bits = addr_bits
        self.data_bits = data_bits
        self.init = list(init)
        self.verilog = verilog
        super().__init__({
            "a": In(addr_bits), "d_i": In(data_bits),
            "d_o": Out(data_bits), "d_oe": Out(1),
            "ce_n": In(1, init=1), "we_n": In(1, init=1), "oe_n": In(1, init=1),
            "errors": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        read = _Port(self.addr_bits, self.data_bits)
        write = _Port(self.addr_bits, self.data_bits)
        if self.verilog:
            m.submodules.storage = Instance(
                "pcispy_sram_storage", p_WIDTH=self.data_bits, p_ABITS=self.addr_bits,
                i_clk=ClockSignal("sync"), i_r_addr=read.addr, o_r_data=read.data,
                i_w_addr=write.addr, i_w_data=write.data, i_w_en=write.en)
        else:
            m.submodules.bd_storage = storage = memory.Memory(
                shape=self.data_bits, depth=1 << self.addr_bits, init=self.init)
            async_read = storage.read_port(domain="comb")
            sync_write = storage.write_port()
            m.d.comb += [async_read.addr.eq(read.addr), read.data.eq(async_read.data),
                         sync_write.addr.eq(write.addr), sync_write.data.eq(write.data),
                         sync_write.en.eq(write.en)]

        previous_a = Signal(self.addr_bits)
        m.d.sync += previous_a.eq(self.a)
        unstable = int(f"{UNSTABLE:08x}" * (self.data_bits // 32), 16)
        m.d.comb += [
            read.addr.eq(self.a),
            self.d_oe.eq(~self.ce_n & ~self.oe_n & self.we_n),
            self.d_o.eq(Mux(self.a == previous_a, read.data, unstable)),
        ]

        writing = Signal()
        was_writing = Signal()
        latched_a = Signal(self.addr_bits)
        latched_d = Signal(self.data_bits)
        m.d.comb += writing.eq(~self.ce_n & ~self.we_n)
        m.d.sync += was_writing.eq(writing)
        breach = Signal()
        with m.If(writing):
            m.d.sync += [latched_a.eq(self.a), latched_d.eq(self.d_i)]
            with m.If(was_writing & (self.a != latched_a)):
                m.d.comb += breach.eq(1)
            with m.If(~was_writing & (self.a != previous_a)):
                m.d.comb += breach.eq(1)          # no address setup before the write
        with m.If(was_writing & ~writing):
            # WE# rose at this clock's edge: the word is written; the data must be held.
            m.d.comb += [write.addr.eq(latched_a), write.data.eq(latched_d), write.en.eq(1)]
            with m.If((self.d_i != latched_d) | (self.a != latched_a)):
                m.d.comb += breach.eq(1)
        with m.If(breach & (self.errors != 0xFFFF)):
            m.d.sync += self.errors.eq(self.errors + 1)
        return m


class _Port:
    """The signals of one storage port (address, data, enable)."""
    def __init__(self, addr_bits, data_bits):
        self.addr = Signal(addr_bits)
        self.data = Signal(data_bits)
        self.en = Signal()
