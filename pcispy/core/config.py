# SPDX-License-Identifier: BSD-2-Clause
"""The type 0 configuration header of the board (PCI LB 3.0 §6.1, §6.2).

One function (function 0). The header's identity is set by parameters; the Command and
Status registers hold every bit the device implements; the BARs come from a list of
:class:`BarSpec`. Registers the device does not implement read as zero and ignore writes;
writes honour the byte enables.

The space is reached through the target's word-addressed backend bus
(:class:`~pcispy.pci.backend.BackendSignature`, ``addr`` = DWORD register number),
so it answers a read one clock after the request, like every other backend.
"""

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.bus import DevselSpeed
from pcispy.pci.backend import BackendSignature

__all__ = ["BarSpec", "ConfigSpace", "COMMAND_BITS", "STATUS_BITS", "DEFAULT_CLASS_CODE"]

#: Data acquisition and signal processing controller, "other" (0x11/0x80, prog-if 0).
DEFAULT_CLASS_CODE = 0x11_80_00

#: Command register bits (bit numbers).
COMMAND_BITS = {"io": 0, "memory": 1, "master": 2, "mwi": 4, "parity": 6, "serr": 8,
                "int_disable": 10}
#: Status register bits (bit numbers; devsel is bits 10:9).
STATUS_BITS = {"int_status": 3, "cap_list": 4, "mhz66": 5, "master_parity": 8,
               "signaled_target_abort": 11, "received_target_abort": 12,
               "received_master_abort": 13, "signaled_serr": 14, "detected_parity": 15}
_STATUS_W1C = ("master_parity", "signaled_target_abort", "received_target_abort",
               "received_master_abort", "signaled_serr", "detected_parity")


@dataclass(frozen=True)
class BarSpec:
    """One Base Address Register: ``kind`` "mem" or "io", ``size`` in bytes (power of 2)."""
    name: str
    kind: str
    size: int
    prefetchable: bool = False

    def __post_init__(self):
        if self.kind not in ("mem", "io"):
            raise ValueError(f"BAR {self.name}: kind must be 'mem' or 'io', not {self.kind!r}")
        minimum = 16 if self.kind == "mem" else 4
        if self.size < minimum or self.size & (self.size - 1):
            raise ValueError(f"BAR {self.name}: size {self.size} is not a power of two "
                             f">= {minimum}")
        if self.kind == "io" and self.size > 256:
            raise ValueError(f"BAR {self.name}: I/O BARs may claim at most 256 bytes")
        if self.kind == "io" and self.prefetchable:
            raise ValueError(f"BAR {self.name}: I/O BARs cannot be prefetchable")

    @property
    def size_bits(self):
        return self.size.bit_length() - 1

    @property
    def type_bits(self):
        """The read-only low bits of the BAR."""
        if self.kind == "io":
            return 0b01
        return 0b1000 if self.prefetchable else 0b0000


class ConfigSpace(wiring.Component):
    """Configuration space, header type 0, in clock domain ``pci``.

    Ports:
        access (In, BackendSignature(6, 32)): register access from the target
            (``addr`` = DWORD number 0..63), always ready, read data one clock later.
        command (Out, 16): the Command register.
        io_enable, memory_enable, master_enable, parity_response, serr_enable,
            int_disable (Out, 1 each): Command bits by name.
        cache_line_size, latency_timer, interrupt_line (Out, 8 each).
        bar_base (Out, array of 32 per BAR): programmed base address of each BAR (the
            bits below the size read as zero).
        set_<name> (In, 1) for each W1C Status bit (``set_detected_parity``,
            ``set_signaled_serr``, ``set_signaled_target_abort``,
            ``set_received_target_abort``, ``set_received_master_abort``,
            ``set_master_parity``): pulse to set the sticky bit.
        interrupt_status (In, 1): the device's interrupt is pending (Status bit 3).

    Parameters:
        bars: list of :class:`BarSpec` or None (an unimplemented BAR, reads 0), BAR0
            first; at most 6.
        vendor_id, device_id, revision, class_code, subsystem_vendor_id, subsystem_id.
        mhz66: report 66 MHz capable.
        devsel: the DEVSEL# timing reported in Status (:class:`DevselSpeed`: the
            target's decode speed).
        master: the device can be a bus master (Command bus master, MWI, latency timer).
        interrupt_pin: 1 = INTA# .. 4 = INTD#, 0 = none.
        min_gnt, max_lat: in 1/4 us units, for the configuration software.
    """
    def __init__(self, bars, *, vendor_id, device_id,
                 revision=1, class_code=DEFAULT_CLASS_CODE, subsystem_vendor_id=None,
                 subsystem_id=None, mhz66=False, master=True, interrupt_pin=1,
                 min_gnt=0, max_lat=0, devsel=DevselSpeed.MEDIUM):
        if len(bars) > 6:
            raise ValueError("a type 0 header has six BARs")
        self.bars = tuple(bars)
        self.vendor_id = vendor_id
        self.device_id = device_id
        self.revision = revision
        self.class_code = class_code
        self.subsystem_vendor_id = vendor_id if subsystem_vendor_id is None else subsystem_vendor_id
        self.subsystem_id = device_id if subsystem_id is None else subsystem_id
        self.mhz66 = mhz66
        self.devsel = DevselSpeed(devsel)
        self.master = master
        self.interrupt_pin = interrupt_pin
        self.min_gnt = min_gnt
        self.max_lat = max_lat
        members = {
            "access": In(BackendSignature(6, 32)),
            "command": Out(16),
            "io_enable": Out(1), "memory_enable": Out(1), "master_enable": Out(1),
            "parity_response": Out(1), "serr_enable": Out(1), "int_disable": Out(1),
            "cache_line_size": Out(8), "latency_timer": Out(8), "interrupt_line": Out(8),
            "bar_base": Out(32).array(max(len(self.bars), 1)),
            "interrupt_status": In(1),
        }
        for name in _STATUS_W1C:
            members[f"set_{name}"] = In(1)
        super().__init__(members)

    def _command_writable(self):
        bits = [COMMAND_BITS["memory"], COMMAND_BITS["parity"], COMMAND_BITS["serr"]]
        if any(bar is not None and bar.kind == "io" for bar in self.bars):
            bits.append(COMMAND_BITS["io"])
        if self.master:
            bits += [COMMAND_BITS["master"], COMMAND_BITS["mwi"]]
        if self.interrupt_pin:
            bits.append(COMMAND_BITS["int_disable"])
        return sum(1 << bit for bit in bits)

    def elaborate(self, platform):
        m = Module()
        acc = self.access
        m.d.comb += acc.ready.eq(1)

        command = Signal(16)
        status_sticky = Signal(16)
        cache_line = Signal(8)
        latency = Signal(8)
        int_line = Signal(8)
        bases = [Signal(32, name=f"bar{i}_base") for i in range(len(self.bars))]

        m.d.comb += [
            self.command.eq(command),
            self.io_enable.eq(command[COMMAND_BITS["io"]]),
            self.memory_enable.eq(command[COMMAND_BITS["memory"]]),
            self.master_enable.eq(command[COMMAND_BITS["master"]]),
            self.parity_response.eq(command[COMMAND_BITS["parity"]]),
            self.serr_enable.eq(command[COMMAND_BITS["serr"]]),
            self.int_disable.eq(command[COMMAND_BITS["int_disable"]]),
            self.cache_line_size.eq(cache_line),
            self.latency_timer.eq(latency),
            self.interrupt_line.eq(int_line),
        ]
        for i, base in enumerate(bases):
            m.d.comb += self.bar_base[i].eq(base)

        status_const = self.devsel.value << 9
        if self.mhz66:
            status_const |= 1 << STATUS_BITS["mhz66"]
        status = Signal(16)
        m.d.comb += status.eq(status_sticky | status_const
                              | (self.interrupt_status << STATUS_BITS["int_status"]))

        # Read values, DWORD by DWORD; everything else reads zero.
        words = {
            0x00: Const(self.vendor_id | self.device_id << 16, 32),
            0x01: Cat(command, status),
            0x02: Const(self.revision | self.class_code << 8, 32),
            0x03: Cat(cache_line, latency, Const(0, 16)),
            0x0B: Const(self.subsystem_vendor_id | self.subsystem_id << 16, 32),
            0x0F: Cat(int_line, Const(self.interrupt_pin, 8), Const(self.min_gnt, 8),
                      Const(self.max_lat, 8)),
        }
        for i, (bar, base) in enumerate(zip(self.bars, bases)):
            if bar is not None:
                words[0x04 + i] = base | bar.type_bits
        if not self.master:
            m.d.comb += latency.eq(0)

        with m.If(acc.valid & ~acc.write):
            m.d.pci += acc.r_data.eq(0)
            with m.Switch(acc.addr):
                for index, value in words.items():
                    with m.Case(index):
                        m.d.pci += acc.r_data.eq(value)
        m.d.pci += acc.r_valid.eq(acc.valid & ~acc.write)

        # Writes: only enabled bytes, only writable bits.
        mask = Signal(32)
        m.d.comb += mask.eq(Cat(*(b.replicate(8) for b in acc.w_be)))
        data = acc.w_data

        def merge(old, writable, lsb=0):
            bits = len(old)
            sel = mask[lsb:lsb + bits] & Const(writable, bits)
            return (old & ~sel) | (data[lsb:lsb + bits] & sel)

        with m.If(acc.valid & acc.write):
            with m.Switch(acc.addr):
                with m.Case(0x01):
                    m.d.pci += command.eq(merge(command, self._command_writable()))
                    w1c = sum(1 << STATUS_BITS[name] for name in _STATUS_W1C)
                    m.d.pci += status_sticky.eq(
                        status_sticky & ~(data[16:32] & mask[16:32] & w1c))
                with m.Case(0x03):
                    m.d.pci += cache_line.eq(merge(cache_line, 0xFF, 0))
                    if self.master:
                        m.d.pci += latency.eq(merge(latency, 0xFF, 8))
                for i, (bar, base) in enumerate(zip(self.bars, bases)):
                    if bar is None:
                        continue
                    with m.Case(0x04 + i):
                        m.d.pci += base.eq(merge(base, (0xFFFF_FFFF << bar.size_bits)
                                                 & 0xFFFF_FFFF))
                with m.Case(0x0F):
                    m.d.pci += int_line.eq(merge(int_line, 0xFF, 0))

        # Hardware sets the sticky status bits (after a clearing write in the same clock).
        for name in _STATUS_W1C:
            with m.If(getattr(self, f"set_{name}")):
                m.d.pci += status_sticky[STATUS_BITS[name]].eq(1)
        return m
