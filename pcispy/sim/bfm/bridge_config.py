# SPDX-License-Identifier: BSD-2-Clause
"""The PCI-to-PCI bridge model's configuration space (gateware, for
pcispy/sim/bfm/bridge.py): the Type 1 header its primary side answers, written from the
PCI-to-PCI Bridge Architecture Specification (rev. 1.1): Command/Status, Cache Line Size,
Latency Timers, the bus numbers, the I/O (16-bit), memory and prefetchable memory (32-bit)
base/limit windows and the tests of an address against them.
"""

from amaranth import Cat, Const, Mux, Signal

from pcispy.pci.bus import DevselSpeed
from pcispy.sim.bfm.bridge_control import BRIDGE_CLASS, BRIDGE_DEVICE_ID, BRIDGE_VENDOR_ID
from pcispy.sim.bfm.nets import net

__all__ = ["BridgeConfigSpace"]

#: Configuration header registers (DWORD index).
_CFG_ID, _CFG_COMMAND, _CFG_CLASS, _CFG_LINE = 0, 1, 2, 3
_CFG_BUSES, _CFG_IO, _CFG_MEM, _CFG_PREF, _CFG_INTERRUPT = 6, 7, 8, 9, 15
#: Command register bits the bridge keeps: I/O, memory, bus master, parity response,
#: SERR# enable.
_COMMAND_BITS = 0x0147
#: Status bits (write 1 to clear): signaled target abort, received target abort,
#: received master abort.
_STATUS_TA_SIGNALED, _STATUS_TA_RECEIVED, _STATUS_MA_RECEIVED = 11, 12, 13


class BridgeConfigSpace:
    """The Type 1 header's registers and the windows they open (primary side), made in
    the bridge's module ``m``: :meth:`read` and :meth:`write` serve the configuration
    cycles the primary target half claims, :meth:`in_mem` and :meth:`in_io` decode an
    address against the windows, and the halves' ``set_*`` pulses set Status bits
    (:meth:`status_updates`)."""

    def __init__(self, m):
        self.m = m
        self.command = Signal(16, name="cfg_command")
        self.status = Signal(16, name="cfg_status")
        self.cache_line = Signal(8, name="cfg_cache_line")
        self.latency = Signal(8, name="cfg_latency")
        self.primary_bus = Signal(8, name="cfg_primary_bus")
        self.secondary_bus = Signal(8, name="cfg_secondary_bus")
        self.subordinate_bus = Signal(8, name="cfg_subordinate_bus")
        self.secondary_latency = Signal(8, name="cfg_secondary_latency")
        self.io_base = Signal(4, name="cfg_io_base")            # AD[15:12]
        self.io_limit = Signal(4, name="cfg_io_limit")
        self.mem_base = Signal(12, name="cfg_mem_base")         # AD[31:20]
        self.mem_limit = Signal(12, name="cfg_mem_limit")
        self.pref_base = Signal(12, name="cfg_pref_base")
        self.pref_limit = Signal(12, name="cfg_pref_limit")
        self.interrupt_line = Signal(8, name="cfg_interrupt_line")
        self.bridge_control = Signal(16, name="cfg_bridge_control")
        # Status bits set by the halves (one clock pulses).
        self.set_ta_signaled = Signal()
        self.set_ta_received = Signal()
        self.set_ma_received = Signal()

    def in_mem(self, address):
        """``address`` is inside the memory or the prefetchable window."""
        top = address[20:32]
        return net(self.m, ((self.mem_base <= top) & (top <= self.mem_limit))
                   | ((self.pref_base <= top) & (top <= self.pref_limit)), "in_mem_window")

    def in_io(self, address):
        top = address[12:16]
        return net(self.m, (address[16:32] == 0) & (self.io_base <= top)
                   & (top <= self.io_limit), "in_io_window")

    def read(self, index):
        """The DWORD at ``index`` (combinational)."""
        value = Signal(32, name="cfg_rdata")
        words = {
            _CFG_ID: Const(BRIDGE_VENDOR_ID | BRIDGE_DEVICE_ID << 16, 32),
            _CFG_COMMAND: Cat(self.command, self.status | (DevselSpeed.MEDIUM.value << 9)),
            _CFG_CLASS: Const(BRIDGE_CLASS << 8, 32),
            _CFG_LINE: Cat(self.cache_line, self.latency, Const(0x01, 8), Const(0, 8)),
            _CFG_BUSES: Cat(self.primary_bus, self.secondary_bus, self.subordinate_bus,
                            self.secondary_latency),
            _CFG_IO: Cat(Const(0, 4), self.io_base, Const(0, 4), self.io_limit, Const(0, 16)),
            _CFG_MEM: Cat(Const(0, 4), self.mem_base, Const(0, 4), self.mem_limit),
            _CFG_PREF: Cat(Const(0, 4), self.pref_base, Const(0, 4), self.pref_limit),
            _CFG_INTERRUPT: Cat(self.interrupt_line, Const(0, 8), self.bridge_control),
        }
        with self.m.Switch(index):
            for number, word in words.items():
                with self.m.Case(number):
                    self.m.d.comb += value.eq(word)
        return value

    def write(self, index, data, be):
        """Logic: write ``data`` to DWORD ``index`` with C/BE# ``be`` (pin level) in this
        clock."""
        m = self.m
        lane = [~be[k] for k in range(4)]

        def byte(k):
            return data[8 * k:8 * k + 8]

        def update(signal, value, enable):
            with m.If(enable):
                m.d.sync += signal.eq(value)

        with m.Switch(index):
            with m.Case(_CFG_COMMAND):
                command = Cat(byte(0), byte(1)) & _COMMAND_BITS
                with m.If(lane[0] | lane[1]):
                    m.d.sync += self.command.eq(
                        Cat(Mux(lane[0], command[:8], self.command[:8]),
                            Mux(lane[1], command[8:], self.command[8:])))
                clear = Cat(byte(2), byte(3)) & Cat(Mux(lane[2], 0xFF, 0), Mux(lane[3], 0xFF, 0))
                m.d.sync += self.status.eq(self.status & ~clear)
            with m.Case(_CFG_LINE):
                update(self.cache_line, byte(0), lane[0])
                update(self.latency, byte(1), lane[1])
            with m.Case(_CFG_BUSES):
                update(self.primary_bus, byte(0), lane[0])
                update(self.secondary_bus, byte(1), lane[1])
                update(self.subordinate_bus, byte(2), lane[2])
                update(self.secondary_latency, byte(3), lane[3])
            with m.Case(_CFG_IO):
                update(self.io_base, byte(0)[4:], lane[0])
                update(self.io_limit, byte(1)[4:], lane[1])
            with m.Case(_CFG_MEM):
                update(self.mem_base[:4], byte(0)[4:], lane[0])
                update(self.mem_base[4:], byte(1), lane[1])
                update(self.mem_limit[:4], byte(2)[4:], lane[2])
                update(self.mem_limit[4:], byte(3), lane[3])
            with m.Case(_CFG_PREF):
                update(self.pref_base[:4], byte(0)[4:], lane[0])
                update(self.pref_base[4:], byte(1), lane[1])
                update(self.pref_limit[:4], byte(2)[4:], lane[2])
                update(self.pref_limit[4:], byte(3), lane[3])
            with m.Case(_CFG_INTERRUPT):
                update(self.interrupt_line, byte(0), lane[0])
                update(self.bridge_control[:8], byte(2), lane[2])
                update(self.bridge_control[8:], byte(3), lane[3])

    def status_updates(self):
        """The status bits the halves set (after any write, so a set wins a clear)."""
        for bit, pulse in ((_STATUS_TA_SIGNALED, self.set_ta_signaled),
                           (_STATUS_TA_RECEIVED, self.set_ta_received),
                           (_STATUS_MA_RECEIVED, self.set_ma_received)):
            with self.m.If(pulse):
                self.m.d.sync += self.status[bit].eq(1)
