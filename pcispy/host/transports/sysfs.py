# SPDX-License-Identifier: BSD-2-Clause
"""The ``sysfs`` transport: a board in a PCI slot of this Linux machine.

- BARs: memory BARs by ``mmap`` of ``/sys/bus/pci/devices/BDF/resourceN``; I/O BARs by
  ``pread``/``pwrite`` of the same file (the kernel does the port access).
- Configuration space: ``pread``/``pwrite`` of ``.../config`` (unprivileged users may
  read only its first 64 bytes; pcispy says so).
- Interrupts: through ``uio_pci_generic``. The board's ``.../uio/uioN`` names the device
  ``/dev/uioN``; a 4-byte read returns the interrupt count once an interrupt came. The
  driver masks INTx (Command bit 10, Interrupt Disable) in its handler; pcispy unmasks it
  before each wait by clearing that bit through the config file, which is what the
  driver's own ``irqcontrol`` does (``pci_intx``).
- DMA: the board masters into a physical range reserved at boot (``memmap=SIZE$ADDR`` on
  the kernel command line, IOMMU off or in passthrough so bus address = physical
  address), named with ``--buffer ADDR:SIZE`` and reached through ``/dev/mem``. Without one,
  DMA is refused: pcispy never guesses where free memory is.

Every failure a user can meet (no such device, no permission, a driver bound, a device
that is not a pcispy board, no DMA buffer) ends in a :class:`TransportError` that says
what to do. :func:`find_boards` is ``pcispy list``.

The paths are parameters (``root``, ``dev``) so tests run against a directory tree
shaped like sysfs; the environment variables ``PCISPY_SYSFS_ROOT`` and ``PCISPY_DEV_ROOT``
set them for the CLI.
"""

import errno
import mmap
import os
import re
import struct
from pathlib import Path

from pcispy.board.registers import DEFAULT_DEVICE_ID, DEFAULT_VENDOR_ID, parse_ids
from pcispy.host.errors import TransportError
from pcispy.host.transports.base import DmaBuffer, Transport

__all__ = ["board_ids", "BOARD_IDS_ENV", "SysfsTransport", "PhysicalDmaBuffer", "find_boards",
           "normalise_bdf", "parse_buffer", "SYSFS_ROOT", "DEV_ROOT", "UIO_DRIVER"]

#: Where the kernel lists PCI functions, and where device nodes live.
SYSFS_ROOT = "/sys/bus/pci/devices"
DEV_ROOT = "/dev"
#: The one driver pcispy works with (it only routes interrupts to /dev/uioN).
UIO_DRIVER = "uio_pci_generic"

# resource file flags (include/linux/ioport.h).
_IORESOURCE_IO = 0x100
_IORESOURCE_MEM = 0x200
# Configuration space: Command register and its Interrupt Disable bit.
_COMMAND = 0x04
_INTX_DISABLE = 1 << 10
_MEMORY_ENABLE = 1 << 1
_IO_ENABLE = 1 << 0
# Bytes of config space an unprivileged reader gets from the sysfs file.
_UNPRIVILEGED_CONFIG = 64

_BDF = re.compile(r"^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$")


def sysfs_root():
    return Path(os.environ.get("PCISPY_SYSFS_ROOT", SYSFS_ROOT))


def dev_root():
    return Path(os.environ.get("PCISPY_DEV_ROOT", DEV_ROOT))


def normalise_bdf(bdf):
    """``"3:00.0"``-style names as the kernel spells them: ``"0000:03:00.0"``."""
    match = _BDF.match(bdf.strip())
    if not match:
        raise TransportError(f"{bdf!r} is not a PCI address; give DOMAIN:BUS:DEVICE.FUNCTION "
                             "in hex, e.g. 0000:03:00.0 (pcispy list shows boards)")
    domain, bus, device, function = match.groups()
    return f"{(domain or '0000').lower()}:{bus.lower()}:{device.lower()}.{function}"


def parse_buffer(text):
    """``"ADDR:SIZE"`` (hex or decimal, SIZE may end in K/M/G) -> ``(address, size)``."""
    match = re.fullmatch(r"\s*(\w+)\s*:\s*(\w+?)([KMG]?)\s*", text or "", re.IGNORECASE)
    try:
        address, size = int(match.group(1), 0), int(match.group(2), 0)
    except (AttributeError, ValueError):
        raise TransportError(f"--buffer {text!r}: give ADDR:SIZE, e.g. 0x7f000000:16M "
                             "(a physical range reserved at boot)") from None
    size <<= {"": 0, "K": 10, "M": 20, "G": 30}[match.group(3).upper()]
    if size <= 0 or address % 4096:
        raise TransportError(f"--buffer {text!r}: the range must be page aligned and not "
                             "empty")
    return address, size


def _read_id(path):
    try:
        return int(path.read_text().strip(), 16)
    except (OSError, ValueError):
        return None


def _driver(device):
    link = device / "driver"
    return os.path.basename(os.readlink(link)) if link.is_symlink() else None


def _uio_name(device):
    try:
        names = sorted(p.name for p in (device / "uio").iterdir())
    except OSError:
        return None
    return names[0] if names else None


def _resources(device):
    """``{bar: (kind, size, bus address)}`` from the ``resource`` file (BARs 0..5 only)."""
    bars = {}
    try:
        lines = (device / "resource").read_text().splitlines()[:6]
    except OSError as error:
        raise TransportError(f"cannot read {device / 'resource'}: {error.strerror}") from None
    for index, line in enumerate(lines):
        start, end, flags = (int(x, 16) for x in line.split())
        if end <= start and not start:
            continue
        kind = "io" if flags & _IORESOURCE_IO else "memory" if flags & _IORESOURCE_MEM else None
        if kind:
            bars[index] = (kind, end - start + 1, start)
    return bars


#: A board built with IDs of its own (``make bitstream ARGS="--ids VENDOR:DEVICE"``) is
#: found and accepted with the same IDs here (hex ``VENDOR:DEVICE``).
BOARD_IDS_ENV = "PCISPY_BOARD_IDS"


def board_ids():
    """``(vendor ID, device ID)`` of a pcispy board: :data:`BOARD_IDS_ENV`'s, else pcispy's
    own (:data:`~pcispy.board.registers.DEFAULT_VENDOR_ID`); a value that is no pair of IDs is
    a :class:`TransportError` naming the variable."""
    text = os.environ.get(BOARD_IDS_ENV)
    if not text:
        return DEFAULT_VENDOR_ID, DEFAULT_DEVICE_ID
    try:
        return parse_ids(text)
    except ValueError as error:
        raise TransportError(f"{BOARD_IDS_ENV}: {error}") from None


def _ids_text(separator=":"):
    return separator.join(f"{x:04x}" for x in board_ids())


def find_boards(root=None, vendor_id=None, device_id=None):
    """Every PCI function with pcispy's IDs (:func:`board_ids`, or those given):
    ``[{"bdf", "driver", "uio", "bars"}]``."""
    if vendor_id is None or device_id is None:
        vendor_id, device_id = board_ids()
    root = Path(root or sysfs_root())
    boards = []
    try:
        devices = sorted(root.iterdir())
    except OSError as error:
        raise TransportError(f"cannot list PCI devices in {root}: {error.strerror} "
                             "(is this Linux with sysfs mounted?)") from None
    for device in devices:
        if (_read_id(device / "vendor"), _read_id(device / "device")) != (vendor_id, device_id):
            continue
        boards.append({
            "bdf": device.name, "driver": _driver(device), "uio": _uio_name(device),
            "bars": {str(i): {"kind": k, "address": a, "size": s}
                     for i, (k, s, a) in _resources(device).items()},
        })
    return boards


def _open(path, flags, what):
    """``os.open`` with the messages a user can act on."""
    try:
        return os.open(path, flags)
    except PermissionError:
        raise TransportError(f"permission denied opening {path} ({what}): run pcispy as "
                             "root, or give your user access with a udev rule") from None
    except FileNotFoundError:
        raise TransportError(f"{path} does not exist ({what})") from None
    except OSError as error:
        raise TransportError(f"cannot open {path} ({what}): {error.strerror}") from None


class PhysicalDmaBuffer(DmaBuffer):
    """A physical memory range reserved at boot, mapped through ``/dev/mem``."""

    def __init__(self, mapping, bus_address, size):
        super().__init__(bus_address, size)
        self._mapping = mapping

    def _check(self, offset, length):
        if offset < 0 or offset + length > self.size:
            raise ValueError(f"DMA buffer access [{offset}, {offset + length}) outside "
                             f"its {self.size} bytes")

    async def read(self, offset, length):
        self._check(offset, length)
        return bytes(self._mapping[offset:offset + length])

    async def write(self, offset, data):
        self._check(offset, len(data))
        self._mapping[offset:offset + len(data)] = data


class SysfsTransport(Transport):
    """A board in a slot of this machine, reached through sysfs.

    Parameters:
        bdf: the board's PCI address (``0000:03:00.0``; the domain may be left out).
        buffer: ``(physical address, size)`` of a range reserved at boot for DMA, or None.
        root, dev: the sysfs PCI device directory and the device-node directory
            (defaults: ``PCISPY_SYSFS_ROOT``/``PCISPY_DEV_ROOT``, else the real ones).
        check_ids: refuse a device whose vendor/device ID is not pcispy's.
    """
    kind = "sysfs"

    def __init__(self, bdf, *, buffer=None, root=None, dev=None, check_ids=True):
        self.bdf = normalise_bdf(bdf)
        self.device = Path(root or sysfs_root()) / self.bdf
        self.dev = Path(dev or dev_root())
        self.buffer = buffer
        self._fds = {}
        self._maps = {}
        self._uio_fd = None
        self._dma_map = None
        if not self.device.exists():
            raise TransportError(f"no PCI device {self.bdf} (nothing at {self.device}); "
                                 "`pcispy list` shows the boards in this machine")
        ids = (_read_id(self.device / "vendor"), _read_id(self.device / "device"))
        if check_ids and ids != board_ids():
            found = ":".join(f"{x:04x}" if x is not None else "????" for x in ids)
            raise TransportError(
                f"{self.bdf} is {found}, not a pcispy board "
                f"({_ids_text()}; a board built with other IDs: {BOARD_IDS_ENV}=VENDOR:DEVICE); "
                "`pcispy list` shows boards")
        driver = _driver(self.device)
        if driver not in (None, UIO_DRIVER):
            raise TransportError(
                f"{self.bdf} is bound to driver {driver}; unbind it first: echo {self.bdf} > "
                f"/sys/bus/pci/drivers/{driver}/unbind (then bind {UIO_DRIVER} for interrupts)")
        self.driver = driver
        self.bars = _resources(self.device)
        self._config = _open(self.device / "config", os.O_RDWR, "configuration space")

    # -- configuration space ------------------------------------------------------------
    async def config_read(self, offset):
        self._check_config(offset)
        data = os.pread(self._config, 4, offset)
        if len(data) < 4:
            raise TransportError(
                f"{self.bdf}: configuration space beyond byte {_UNPRIVILEGED_CONFIG} is "
                "readable by root only; run pcispy as root")
        return int.from_bytes(data, "little")

    async def config_write(self, offset, value):
        self._check_config(offset)
        try:
            written = os.pwrite(self._config, value.to_bytes(4, "little"), offset)
        except PermissionError:
            written = 0
        if written != 4:
            raise TransportError(f"{self.bdf}: cannot write configuration space at "
                                 f"{offset:#x}; run pcispy as root")

    @staticmethod
    def _check_config(offset):
        if offset % 4 or not 0 <= offset <= 252:
            raise ValueError(f"configuration offset {offset:#x} is not a word in 0..0xfc")

    async def _enable_decoding(self, kind):
        """Set Memory/I/O Space Enable if no driver did (a board without driver is
        left undecoded by the kernel)."""
        bit = _MEMORY_ENABLE if kind == "memory" else _IO_ENABLE
        command = await self.config_read(_COMMAND)
        if not command & bit:
            # Status (upper half) bits are write-one-to-clear: write them as 0.
            await self.config_write(_COMMAND, (command | bit) & 0xFFFF)

    # -- BARs ---------------------------------------------------------------------------
    async def _bar(self, bar, offset, length):
        try:
            kind, size, _ = self.bars[bar]
        except KeyError:
            raise TransportError(f"{self.bdf} has no BAR{bar}") from None
        if offset < 0 or offset % 4 or offset + length > size:
            raise TransportError(f"BAR{bar} access [{offset:#x}, {offset + length:#x}) outside "
                                 f"its {size:#x} bytes or not word aligned")
        if bar not in self._fds:
            path = self.device / f"resource{bar}"
            fd = _open(path, os.O_RDWR | os.O_SYNC, f"BAR{bar}")
            self._fds[bar] = fd
            if kind == "memory":
                try:
                    self._maps[bar] = mmap.mmap(fd, size, mmap.MAP_SHARED,
                                                mmap.PROT_READ | mmap.PROT_WRITE)
                except (OSError, ValueError) as error:
                    raise TransportError(f"cannot map {path}: "
                                         f"{getattr(error, 'strerror', None) or error}") from None
            await self._enable_decoding(kind)
        return kind

    async def read32(self, bar, offset):
        if await self._bar(bar, offset, 4) == "memory":
            # One aligned 32-bit load (memoryview of format "I").
            return memoryview(self._maps[bar])[offset:offset + 4].cast("I")[0]
        return struct.unpack("<I", self._io(os.pread, bar, 4, offset))[0]

    async def write32(self, bar, offset, value):
        if await self._bar(bar, offset, 4) == "memory":
            memoryview(self._maps[bar])[offset:offset + 4].cast("I")[0] = value
        else:
            self._io(os.pwrite, bar, struct.pack("<I", value), offset)

    async def read_block(self, bar, offset, count):
        if await self._bar(bar, offset, 4 * count) != "memory":
            return await super().read_block(bar, offset, count)
        return memoryview(self._maps[bar])[offset:offset + 4 * count].cast("I").tolist()

    def _io(self, op, bar, data_or_size, offset):
        try:
            result = op(self._fds[bar], data_or_size, offset)
        except OSError as error:
            raise TransportError(f"I/O access to BAR{bar} at {offset:#x} failed: "
                                 f"{error.strerror}") from None
        if (result if isinstance(result, int) else len(result)) != 4:
            raise TransportError(f"I/O access to BAR{bar} at {offset:#x} was cut short")
        return result

    # -- interrupts ---------------------------------------------------------------------
    def _uio(self):
        if self._uio_fd is None:
            if self.driver != UIO_DRIVER:
                raise TransportError(
                    f"{self.bdf} has no interrupt path: bind {UIO_DRIVER} to it (modprobe "
                    f"{UIO_DRIVER}; echo {_ids_text(' ')} > "
                    f"/sys/bus/pci/drivers/{UIO_DRIVER}/new_id)")
            name = _uio_name(self.device)
            if name is None:
                raise TransportError(f"{self.bdf} is bound to {UIO_DRIVER} but has no uio "
                                     "device (its interrupt pin is 0?)")
            self._uio_fd = _open(self.dev / name, os.O_RDONLY | os.O_NONBLOCK, "interrupts")
        return self._uio_fd

    async def wait_irq(self, timeout_s):
        fd = self._uio()
        # Unmask INTx the way the driver's irqcontrol does (Interrupt Disable cleared).
        command = await self.config_read(_COMMAND)
        if command & _INTX_DISABLE:
            await self.config_write(_COMMAND, command & 0xFFFF & ~_INTX_DISABLE)
        # asyncio loads where a feature runs on hardware, not with the command line
        import asyncio
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
        try:
            await asyncio.wait_for(ready, timeout_s)
        except asyncio.TimeoutError:
            return False
        finally:
            loop.remove_reader(fd)
        try:
            data = os.read(fd, 4)
        except OSError as error:
            if error.errno == errno.EAGAIN:
                return False
            raise TransportError(f"reading /dev/{_uio_name(self.device)}: "
                                 f"{error.strerror}") from None
        return len(data) == 4

    # -- DMA ----------------------------------------------------------------------------
    async def dma_buffer(self, size):
        if self.buffer is None:
            raise TransportError(
                "DMA on hardware needs host memory the board may write: reserve a range at "
                "boot (kernel option memmap=16M$0x7f000000, IOMMU off or iommu=pt) and give "
                "it with --buffer 0x7f000000:16M")
        address, reserved = self.buffer
        if size > reserved:
            raise TransportError(f"the DMA buffer given with --buffer has {reserved} bytes; "
                                 f"this run needs {size}")
        if self._dma_map is None:
            fd = _open(self.dev / "mem", os.O_RDWR | os.O_SYNC, "the --buffer range")
            try:
                self._dma_map = mmap.mmap(fd, reserved, mmap.MAP_SHARED,
                                          mmap.PROT_READ | mmap.PROT_WRITE, offset=address)
            except OSError as error:
                raise TransportError(
                    f"cannot map the --buffer range at {address:#x} through /dev/mem: "
                    f"{error.strerror} (a kernel with CONFIG_STRICT_DEVMEM allows only "
                    "ranges it does not manage: reserve it with memmap=)") from None
            finally:
                os.close(fd)
        return PhysicalDmaBuffer(self._dma_map, address, size)

    def close(self):
        for mapping in self._maps.values():
            mapping.close()
        for fd in list(self._fds.values()) + [self._config, self._uio_fd]:
            if fd is not None:
                os.close(fd)
        if self._dma_map is not None:
            self._dma_map.close()
        self._fds, self._maps, self._uio_fd, self._dma_map = {}, {}, None, None

    def describe(self):
        return {"transport": "sysfs", "bdf": self.bdf, "driver": self.driver,
                "bars": {str(i): {"kind": k, "address": a, "size": s}
                         for i, (k, s, a) in self.bars.items()},
                "dma_buffer": None if self.buffer is None else
                {"address": self.buffer[0], "size": self.buffer[1]}}


def run(feature, arguments, bdf, buffer=None):
    """Run ``feature`` (an ``async def feature(transport, **arguments)``) on the board at
    ``bdf`` under asyncio; the CLI's ``--sysfs`` branch. ``buffer``: ``(address, size)``
    (:func:`parse_buffer`) or None."""
    # asyncio loads where a feature runs on hardware, not with the command line
    import asyncio
    transport = SysfsTransport(bdf, buffer=buffer)
    try:
        return asyncio.run(feature(transport, **arguments))
    finally:
        transport.close()

