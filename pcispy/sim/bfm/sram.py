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
- the storage is the RAM of :mod:`pcispy.core.ram` with an asynchronous read (the
  backdoor ``bd_storage``): an Amaranth memory for Amaranth's Python simulator, or with
  ``verilog=True`` the hand-written ``ram.v`` (:data:`VERILOG_SOURCE`, to pass in the
  Verilator build's ``sources``) for large depths.

Ports (pin levels):
    a (In, addr_bits), d_i (In, data_bits): what the controller drives;
    d_o (Out, data_bits), d_oe (Out, 1): what the SRAM drives;
    ce_n, we_n, oe_n (In, 1); errors (Out, 16): timing breaches seen.

Parameters:
    addr_bits, data_bits; init: initial contents (list of words, Amaranth memory only);
    verilog: keep the words in ``ram.v``.
"""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.core.ram import VERILOG_SOURCE, add_ram

__all__ = ["AsyncSRAM", "UNSTABLE", "VERILOG_SOURCE"]

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
        storage = add_ram(m, width=self.data_bits, addr_bits=self.addr_bits,
                          lane_width=self.data_bits, async_read=True, verilog=self.verilog,
                          init=self.init)

        previous_a = Signal(self.addr_bits)
        m.d.sync += previous_a.eq(self.a)
        unstable = int(f"{UNSTABLE:08x}" * (self.data_bits // 32), 16)
        m.d.comb += [
            storage.r_addr.eq(self.a),
            self.d_oe.eq(~self.ce_n & ~self.oe_n & self.we_n),
            self.d_o.eq(Mux(self.a == previous_a, storage.r_data, unstable)),
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
            m.d.comb += [storage.w_addr.eq(latched_a), storage.w_data.eq(latched_d), storage.w_en.eq(1)]
            with m.If((self.d_i != latched_d) | (self.a != latched_a)):
                m.d.comb += breach.eq(1)
        with m.If(breach & (self.errors != 0xFFFF)):
            m.d.sync += self.errors.eq(self.errors + 1)
        return m

