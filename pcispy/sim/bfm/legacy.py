# SPDX-License-Identifier: BSD-2-Clause
"""A legacy ISA-bridge device: the PC real-time clock behind a PCI-to-ISA bridge.

The PC/AT RTC answers at I/O 0x70 (index register, write the CMOS address) and 0x71 (the
CMOS/RTC byte at that index, 128 bytes). Behind a PCI-to-ISA bridge it claims late
(subtractive decode by default), takes 39 clocks to first data on reads and 31-34 on
writes, and now and then retries a write 7 times in a row: Moll & Shand (FCCM'97),
Figure 3. It breaks the 16-clock initial latency rule on purpose, as real ones do.

It is a :class:`~pcispy.sim.bfm.target.BehaviouralTarget` (same protocol engine, same
control registers, :data:`~pcispy.sim.bfm.profiles.RTC` profile after reset) whose storage
is the RTC's register file instead of a RAM.
"""

from amaranth import Cat, Module, Mux, Signal, C
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from pcispy.sim.bfm.legacy_ports import RTC_PORT
from pcispy.sim.bfm.profiles import RTC
from pcispy.sim.bfm.target import BehaviouralTarget
from pcispy.sim.bfm.target_driver import TargetDriver

__all__ = ["RTCStorage", "LegacyDevice", "LegacyDriver", "CMOS_OFFSET"]

#: Storage byte address of CMOS byte 0 (word 0 holds the two I/O ports).
CMOS_OFFSET = 4

# Power-on contents of the status registers A-D (divider on, 24-hour BCD, valid RAM).
_CMOS_INIT = {0x0A: 0x26, 0x0B: 0x02, 0x0D: 0x80}


class RTCStorage(wiring.Component):
    """The RTC's registers behind the storage ports of a behavioural target.

    Word 0 is the I/O window: byte lane 0 = port 0x70 (index; reads back the index),
    lane 1 = port 0x71 (CMOS byte at the index). Words 1..32 are the 128 CMOS bytes
    directly (the backdoor view).

    Ports (as :class:`~pcispy.sim.bfm.backdoor_ram.BackdoorRAM`, 32-bit words):
        w_addr (In, 6), w_data (In, 32), w_en (In, 4): write at the clock edge.
        r_addr (In, 6): word to read; r_data (Out, 32): that word one clock later.
    """
    def __init__(self):
        super().__init__({
            "w_addr": In(6), "w_data": In(32), "w_en": In(4),
            "r_addr": In(6), "r_data": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        init = [sum(_CMOS_INIT.get(4 * w + b, 0) << (8 * b) for b in range(4)) for w in range(32)]
        m.submodules.bd_storage = cmos = memory.Memory(shape=32, depth=32, init=init)
        wr = cmos.write_port(granularity=8)
        rd = cmos.read_port()
        index = Signal(7)
        nmi_mask = Signal()
        port_write = (self.w_addr == 0)
        with m.If(port_write & self.w_en[0]):
            m.d.sync += [index.eq(self.w_data[0:7]), nmi_mask.eq(self.w_data[7])]
        with m.If(port_write):
            m.d.comb += [
                wr.addr.eq(index[2:7]),
                wr.data.eq(Cat(*([self.w_data[8:16]] * 4))),
                wr.en.eq(Mux(self.w_en[1], C(1, 4) << index[0:2], 0)),
            ]
        with m.Else():
            m.d.comb += [wr.addr.eq(self.w_addr - 1), wr.data.eq(self.w_data),
                         wr.en.eq(self.w_en)]
        port_read = Signal()
        lane = Signal(2)
        shown_index = Signal(8)
        m.d.sync += [port_read.eq(self.r_addr == 0), lane.eq(index[0:2]),
                     shown_index.eq(Cat(index, nmi_mask))]
        m.d.comb += rd.addr.eq(Mux(self.r_addr == 0, index[2:7], self.r_addr - 1))
        cmos_byte = rd.data.word_select(lane, 8)
        m.d.comb += self.r_data.eq(Mux(port_read, Cat(shown_index, cmos_byte, C(0, 16)),
                                       rd.data))
        return m


class LegacyDevice(BehaviouralTarget):
    """The PC real-time clock at I/O 0x70/0x71, behind a slow PCI-to-ISA bridge.

    Ports:
        bus (Out, PCIBusSignature(32)): as :class:`BehaviouralTarget`.
        ctl (Out, ControlSignature()): the same control registers (``Reg``); the I/O window
            is ``io_base``/``io_size`` (0x70, 2), the behaviour profile is :data:`RTC`
            after reset (subtractive decode, read latency 39, write latency 31-34,
            write retry runs of 7).

    Parameters:
        profile: the behaviour after reset (default :data:`RTC`).
        seed: the random generator's seed after reset.
        fields: further reset values by field name.
        gated: as :class:`BehaviouralTarget`'s.

    Backdoor: ``<instance>.ram.bd_storage[1 + i // 4]`` holds CMOS bytes ``i..i+3``.
    """
    def __init__(self, *, profile=RTC, seed=1, fields=None, gated=False):
        values = {"io_base": RTC_PORT, "io_size": 2, "mem_size": 0}
        values.update(fields or {})
        # 6 address bits: word 0 (the ports) and 32 words of CMOS (see RTCStorage).
        super().__init__(width=32, mem_addr_bits=6, verilog_ram=False, profile=profile,
                         seed=seed, fields=values, gated=gated)

    def _storage(self):
        return RTCStorage()


class LegacyDriver(TargetDriver):
    """:class:`TargetDriver` of a :class:`LegacyDevice`, plus CMOS byte access."""
    BACKDOOR_PATH = ("ram", "bd_storage")

    async def cmos_read(self, index, n=1):
        """``n`` CMOS bytes from ``index`` (backdoor, no bus traffic)."""
        return await self.backdoor_read(CMOS_OFFSET + index, n)

    async def cmos_write(self, index, data):
        """Write CMOS bytes from ``index`` (backdoor, no bus traffic)."""
        await self.backdoor_write(CMOS_OFFSET + index, data)
