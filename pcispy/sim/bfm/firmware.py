# SPDX-License-Identifier: BSD-2-Clause
"""Firmware-like bus enumeration through the host bridge's initiator.

:func:`enumerate_bus` does what a PC BIOS does for the devices behind a host bridge:
read each slot's Vendor ID (a master abort or 0xFFFF means an empty slot), size every
BAR (write all ones, read back: the bits a BAR hard-wires to zero give its size), give it
an address aligned to its size (memory from 0x8000_0000 up, I/O from 0x1000 up), set
Cache Line Size and Latency Timer, and enable I/O and memory decode, bus mastering, parity
error response and SERR#.

:func:`enumerate_bridge` does the same for the devices behind a PCI-to-PCI bridge: bus
numbers, the devices' BARs through Type 1 configuration cycles, then the bridge's
forwarding windows around what they were given.

Cache Line Size and Latency Timer get the values Linux programs into a type 0 function
when the platform gives none (``pci_default_type0`` of drivers/pci: 8 DWORDs, i.e.
32-byte lines, and 64 clocks; 64 is also what ``pcibios_set_master`` raises a Latency
Timer below 16 to). A function that hard-wires either (a target-only device's Latency
Timer) reads back what it keeps: :class:`Function` holds the values read back.
"""

from dataclasses import dataclass, field

from pcispy.sim.bfm.bridge_driver import Type1Config
from pcispy.sim.bfm.initiator_control import Outcome

__all__ = ["Bar", "Function", "enumerate_bus", "enumerate_bridge", "MEM_BASE", "IO_BASE", "COMMAND_ENABLES",
           "CACHE_LINE_SIZE", "LATENCY_TIMER"]

MEM_BASE = 0x8000_0000
IO_BASE = 0x1000

#: Command register bits set on every function found: I/O space, memory space, bus
#: master, parity error response, SERR# enable.
COMMAND_ENABLES = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 6) | (1 << 8)
#: Cache Line Size written to every function, in DWORDs (32-byte lines).
CACHE_LINE_SIZE = 8
#: Latency Timer written to every function, in clocks.
LATENCY_TIMER = 64

_VENDOR, _COMMAND, _CLASS, _LINE, _BAR0 = 0x00, 0x04, 0x08, 0x0C, 0x10
#: Type 1 header: bus numbers, I/O base/limit, memory base/limit, prefetchable ones.
_BUSES, _IO_WINDOW, _MEM_WINDOW, _PREF_WINDOW = 0x18, 0x1C, 0x20, 0x24
#: Granularity of a bridge's memory and I/O windows.
_MEM_GRAIN, _IO_GRAIN = 1 << 20, 1 << 12


@dataclass
class Bar:
    """One base address register as enumeration found and programmed it."""
    index: int            # 0..5 (a 64-bit BAR takes index and index + 1)
    kind: str             # "memory" or "io"
    size: int             # bytes
    address: int          # assigned base
    prefetchable: bool = False
    is64: bool = False


@dataclass
class Function:
    """A function found in a slot."""
    slot: int
    vendor: int
    device: int
    class_code: int       # 24 bits: base class, subclass, programming interface
    revision: int
    command: int          # Command register value read back after enabling
    bars: list = field(default_factory=list)
    cache_line_size: int = 0   # read back after enumeration set it (DWORDs)
    latency_timer: int = 0     # read back likewise (clocks; 0 when hard-wired)
    bus: int = 0               # the bus number (behind a bridge: its secondary bus)


def _align(value, size):
    return (value + size - 1) // size * size


async def _read(driver, slot, register):
    result = await driver.config_read(slot, register)
    return result.value if result.status == Outcome.OK else 0xFFFF_FFFF


async def _size_bar(driver, slot, register):
    """Return (original, read-back after writing all ones) of the BAR at ``register``."""
    original = await _read(driver, slot, register)
    await driver.config_write(slot, register, 0xFFFF_FFFF)
    probe = await _read(driver, slot, register)
    return original, probe


async def enumerate_bus(driver, slots, *, mem_base=MEM_BASE, io_base=IO_BASE,
                        cache_line_size=CACHE_LINE_SIZE, latency_timer=LATENCY_TIMER):
    """Enumerate ``slots`` through ``driver`` (an :class:`InitiatorDriver`); return the
    :class:`Function` of every occupied slot, with its BARs sized, assigned and enabled,
    and its Cache Line Size and Latency Timer set (None leaves one as it is)."""
    found = []
    next_mem, next_io = mem_base, io_base
    bus = getattr(driver, "bus", 0)
    for slot in slots:
        ids = await _read(driver, slot, _VENDOR)
        if ids & 0xFFFF == 0xFFFF:
            continue
        class_rev = await _read(driver, slot, _CLASS)
        # Decode off while BARs hold all ones.
        await driver.config_write(slot, _COMMAND, 0, be=0b1100)
        bars = []
        index = 0
        while index < 6:
            register = _BAR0 + 4 * index
            original, probe = await _size_bar(driver, slot, register)
            if probe == 0:
                index += 1
                continue
            if original & 1:
                mask = probe & 0xFFFF_FFFC
                if mask >> 16 == 0:      # 16-bit I/O decode: upper half reads zero
                    mask |= 0xFFFF_0000
                size = (~mask + 1) & 0xFFFF_FFFF
                address = next_io = _align(next_io, size)
                next_io += size
                await driver.config_write(slot, register, address)
                bars.append(Bar(index, "io", size, address))
                index += 1
                continue
            is64 = (original >> 1) & 3 == 0b10
            mask = probe & 0xFFFF_FFF0
            if is64:
                _, probe_hi = await _size_bar(driver, slot, register + 4)
                mask |= probe_hi << 32
                size = (~mask + 1) & 0xFFFF_FFFF_FFFF_FFFF
            else:
                size = (~mask + 1) & 0xFFFF_FFFF
            address = next_mem = _align(next_mem, size)
            next_mem += size
            await driver.config_write(slot, register, address & 0xFFFF_FFFF)
            if is64:
                await driver.config_write(slot, register + 4, address >> 32)
            bars.append(Bar(index, "memory", size, address, bool(original & 0b1000), is64))
            index += 2 if is64 else 1
        line = await _line_settings(driver, slot, cache_line_size, latency_timer)
        await driver.config_write(slot, _COMMAND, COMMAND_ENABLES, be=0b1100)
        command = await _read(driver, slot, _COMMAND) & 0xFFFF
        found.append(Function(slot=slot, vendor=ids & 0xFFFF, device=ids >> 16,
                              class_code=class_rev >> 8, revision=class_rev & 0xFF,
                              command=command, bars=bars, cache_line_size=line & 0xFF,
                              latency_timer=line >> 8 & 0xFF, bus=bus))
    return found


async def enumerate_bridge(driver, slot, secondary, devices, *, mem_base=MEM_BASE,
                           io_base=IO_BASE, cache_line_size=CACHE_LINE_SIZE,
                           latency_timer=LATENCY_TIMER):
    """Set up the PCI-to-PCI bridge in ``slot`` of bus 0 as firmware does and enumerate
    the ``devices`` (device numbers) of its secondary bus ``secondary``: bus numbers
    (primary 0, secondary and subordinate ``secondary``), the devices' BARs from
    ``mem_base``/``io_base`` on, the bridge's memory and I/O windows around them (1 MiB
    and 4 KiB granularity; the prefetchable window closed), its Cache Line Size and
    Latency Timers, and its I/O, memory and bus-master enables. Returns ``(functions
    behind it, {"mem_base", "io_base"})``, the second where the rest of bus 0 may
    start. A slot without a bridge (header type not 1) gives ``([], {})``."""
    header = await _read(driver, slot, _LINE) >> 16 & 0x7F
    if header != 1:
        return [], {}
    await driver.config_write(slot, _COMMAND, 0, be=0b1100)
    secondary_latency = latency_timer if latency_timer is not None else 0
    await driver.config_write(slot, _BUSES, secondary << 8 | secondary << 16
                              | secondary_latency << 24)
    behind = await enumerate_bus(Type1Config(driver, secondary), devices, mem_base=mem_base,
                                 io_base=io_base, cache_line_size=cache_line_size,
                                 latency_timer=latency_timer)
    ends = {kind: max((bar.address + bar.size for function in behind for bar in function.bars
                       if bar.kind == kind), default=base)
            for kind, base in (("memory", mem_base), ("io", io_base))}
    mem_top = _align(ends["memory"], _MEM_GRAIN)
    io_top = _align(ends["io"], _IO_GRAIN)
    # Base above limit closes a window.
    memory = ((mem_base >> 16) & 0xFFF0 | (mem_top - 1) & 0xFFF0_0000
              if mem_top > mem_base else 0x0000_FFF0)
    io = (io_base >> 8) & 0xF0 | (io_top - 1) & 0xF000 if io_top > io_base else 0xF0
    await driver.config_write(slot, _MEM_WINDOW, memory)
    await driver.config_write(slot, _PREF_WINDOW, 0x0000_FFF0)
    await driver.config_write(slot, _IO_WINDOW, io, be=0b1100)
    await _line_settings(driver, slot, cache_line_size, latency_timer)
    await driver.config_write(slot, _COMMAND, COMMAND_ENABLES, be=0b1100)
    return behind, {"mem_base": max(mem_top, mem_base), "io_base": max(io_top, io_base)}


async def _line_settings(driver, slot, cache_line_size, latency_timer):
    """Write Cache Line Size (byte 0 of 0x0C) and Latency Timer (byte 1), only the bytes
    given, so Header Type and BIST are not touched; return the DWORD read back."""
    value, be = 0, 0b1111            # C/BE# at pin level: 0 enables a byte
    if cache_line_size is not None:
        value, be = value | cache_line_size, be & ~0b0001
    if latency_timer is not None:
        value, be = value | latency_timer << 8, be & ~0b0010
    if be != 0b1111:
        await driver.config_write(slot, _LINE, value, be=be)
    return await _read(driver, slot, _LINE)
