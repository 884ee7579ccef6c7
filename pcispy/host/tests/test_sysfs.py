# SPDX-License-Identifier: BSD-2-Clause
"""The ``--sysfs`` transport against a directory tree shaped like sysfs: regular files
stand in for the BARs and the config space, a FIFO for /dev/uioN, a sparse file for
/dev/mem."""

import asyncio
import json
import os
import struct

import pytest

from pcispy.pci.bus import DevselSpeed
from pcispy.board.registers import DEFAULT_DEVICE_ID, DEFAULT_VENDOR_ID
from pcispy.board.registers import IDENTITY_MAGIC, REGISTER_MAP
from pcispy.host.board import Board
from pcispy.app.cli import main
from pcispy.host.errors import TransportError
from pcispy.host.transports.sysfs import (SysfsTransport, find_boards, normalise_bdf,
                                          parse_buffer)

pytestmark = pytest.mark.board

BDF = "0000:03:00.0"
# BAR sizes of the fake board: registers, trace window, exerciser, I/O window.
BARS = [("memory", 0x1000, 0xFE000000), ("memory", 0x10000, 0xFE100000),
        ("memory", 0x4000, 0xFE200000), ("io", 0x100, 0xE000)]


def make_tree(tmp_path, *, vendor=DEFAULT_VENDOR_ID, device=DEFAULT_DEVICE_ID, driver="uio_pci_generic",
              config_bytes=256, bdf=BDF):
    root = tmp_path / "devices"
    dev = tmp_path / "dev"
    node = root / bdf
    node.mkdir(parents=True)
    dev.mkdir(exist_ok=True)
    (node / "vendor").write_text(f"{vendor:#06x}\n")
    (node / "device").write_text(f"{device:#06x}\n")
    lines = []
    for kind, size, start in BARS:
        flags = 0x101 if kind == "io" else 0x40200
        lines.append(f"{start:#018x} {start + size - 1:#018x} {flags:#018x}")
    lines += ["0x0000000000000000 0x0000000000000000 0x0000000000000000"] * 3
    (node / "resource").write_text("\n".join(lines) + "\n")
    for index, (_, size, _) in enumerate(BARS):
        (node / f"resource{index}").write_bytes(bytes(size))
    config = bytearray(config_bytes)
    config[0:4] = struct.pack("<HH", vendor, device)
    config[4:8] = struct.pack("<HH", 1 << 10, 0x0200)   # INTx masked; a status bit set
    config[8:12] = struct.pack("<I", 0x05800001)        # class code, revision 1
    (node / "config").write_bytes(bytes(config))
    if driver:
        drivers = tmp_path / "drivers" / driver
        drivers.mkdir(parents=True)
        (node / "driver").symlink_to(drivers)
    if driver == "uio_pci_generic":
        (node / "uio" / "uio0").mkdir(parents=True)
        os.mkfifo(dev / "uio0")
    # id.magic and id.config in BAR0, as a board would answer them.
    regs = bytearray((node / "resource0").read_bytes())
    magic = REGISTER_MAP["id.magic"][0]
    regs[magic:magic + 4] = struct.pack("<I", IDENTITY_MAGIC)
    version = REGISTER_MAP["id.version"][0]
    regs[version:version + 4] = struct.pack("<I", 0x0001_0201)   # format 1, 2.1
    cfg = REGISTER_MAP["id.config"][0]
    # 33 MHz, slow decode, active (a passive build has no configuration space: it is never
    # in a slot's sysfs), 32-bit, built for a bus clocked at up to 25 MHz
    regs[cfg:cfg + 4] = struct.pack("<I", 25 << 24 | 33 << 8 | DevselSpeed.SLOW.value << 4)
    (node / "resource0").write_bytes(bytes(regs))
    return root, dev, node


@pytest.fixture
def tree(tmp_path, monkeypatch):
    root, dev, node = make_tree(tmp_path)
    monkeypatch.setenv("PCISPY_SYSFS_ROOT", str(root))
    monkeypatch.setenv("PCISPY_DEV_ROOT", str(dev))
    return root, dev, node


def cli(capsys, *argv):
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_info_runs_on_the_board_through_the_cli(tree, capsys):
    status, out, err = cli(capsys, "--sysfs", "03:00.0", "--json", "info")
    assert status == 0, err
    result = json.loads(out)
    assert (result["vendor_id"], result["device_id"]) == (DEFAULT_VENDOR_ID, DEFAULT_DEVICE_ID)
    assert (result["revision"], result["class_code"]) == (1, 0x058000)
    assert (result["bus_width"], result["passive"], result["clock_mhz"]) == (32, False, 33)
    assert result["decode"] == "slow"
    assert result["bus_clock_max_mhz"] == 25
    assert result["gateware_version"] == "2.1"
    assert result["transport"]["bdf"] == BDF
    assert result["transport"]["driver"] == "uio_pci_generic"
    assert result["transport"]["bars"]["3"] == {"kind": "io", "address": BARS[3][2],
                                                "size": 0x100}


def test_info_says_the_bus_clock_the_bitstream_was_built_for(tree, capsys):
    status, out, err = cli(capsys, "--sysfs", "03:00.0", "info")
    assert status == 0, err
    assert "samples every input in time on a bus up to 25 MHz\n" in out
    assert f"  BAR3: io     at {BARS[3][2]:#010x}, 256 bytes\n" in out


def test_bar_access_reaches_the_resource_files(tree):
    _, _, node = tree

    async def run(transport):
        await transport.write32(2, 0x10, 0xDEADBEEF)
        await transport.write32(3, 0x8, 0x01020304)
        words = await transport.read_block(2, 0xC, 3)
        return words, await transport.read32(3, 0x8), await transport.config_read(4)

    transport = SysfsTransport(BDF)
    words, io_word, command = asyncio.run(run(transport))
    transport.close()
    assert words == [0, 0xDEADBEEF, 0]
    assert io_word == 0x01020304
    assert (node / "resource2").read_bytes()[0x10:0x14] == bytes.fromhex("efbeadde")
    assert (node / "resource3").read_bytes()[0x8:0xC] == bytes.fromhex("04030201")
    # The first memory and I/O accesses turned on decoding; the status half was written
    # as 0 (write-one-to-clear) and INTx stays masked until a wait.
    assert command == (1 << 10) | 0b11
    assert (node / "config").read_bytes()[4:8] == struct.pack("<HH", (1 << 10) | 0b11, 0)


def test_out_of_range_and_missing_bars_are_refused(tree):
    transport = SysfsTransport(BDF)
    with pytest.raises(TransportError, match=r"outside its 0x1000 bytes"):
        asyncio.run(transport.read32(0, 0x1000))
    with pytest.raises(TransportError, match="has no BAR5"):
        asyncio.run(transport.read32(5, 0))
    transport.close()


def test_interrupt_wait_unmasks_intx_and_reads_the_uio_count(tree):
    _, dev, node = tree
    transport = SysfsTransport(BDF)
    kernel = os.open(dev / "uio0", os.O_RDWR)   # the driver's end of the stand-in

    async def run():
        nothing = await transport.wait_irq(0.05)
        unmasked = struct.unpack("<H", (node / "config").read_bytes()[4:6])[0]
        asyncio.get_running_loop().call_later(0.02, os.write, kernel, struct.pack("<I", 7))
        got = await transport.wait_irq(2.0)
        return nothing, unmasked, got

    nothing, unmasked, got = asyncio.run(run())
    transport.close()
    os.close(kernel)
    assert nothing is False
    assert unmasked & (1 << 10) == 0
    assert got is True


def test_interrupts_need_uio_pci_generic(tmp_path):
    root, dev, _ = make_tree(tmp_path, driver=None)
    transport = SysfsTransport(BDF, root=root, dev=dev)
    with pytest.raises(TransportError, match="bind uio_pci_generic"):
        asyncio.run(transport.wait_irq(0.01))
    transport.close()


@pytest.mark.parametrize("case, message", [
    ("missing", "no PCI device 0000:07:00.0"),
    ("ids", "0000:03:00.0 is 8086:100e, not a pcispy board"),
    ("driver", "bound to driver e1000e; unbind it first"),
    ("magic", "not a pcispy board (or its BAR0 is not mapped)"),
])
def test_user_errors_end_in_one_line(tmp_path, monkeypatch, capsys, case, message):
    kwargs = {"ids": {"vendor": 0x8086, "device": 0x100E},
              "driver": {"driver": "e1000e"}}.get(case, {})
    root, dev, node = make_tree(tmp_path, **kwargs)
    if case == "magic":
        (node / "resource0").write_bytes(bytes(0x1000))
    monkeypatch.setenv("PCISPY_SYSFS_ROOT", str(root))
    monkeypatch.setenv("PCISPY_DEV_ROOT", str(dev))
    # (A malformed address is argparse's usage error: test_cli_help.py.)
    bdf = {"missing": "07:00.0"}.get(case, BDF)
    status, out, err = cli(capsys, "--sysfs", bdf, "info")
    assert status == 2
    assert out == ""
    assert err.startswith("pcispy: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_missing_permission_names_the_file(tree, monkeypatch):
    # Tests run as root, who may open anything: the kernel's refusal is stood in for.
    real_open = os.open

    def refusing_open(path, flags, *args):
        if str(path).endswith("resource0"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refusing_open)
    transport = SysfsTransport(BDF)
    with pytest.raises(TransportError, match=r"permission denied opening .*resource0 \(BAR0\)"):
        asyncio.run(Board(transport).identify())
    transport.close()


def test_unprivileged_config_space_is_explained(tmp_path):
    root, dev, _ = make_tree(tmp_path, config_bytes=64)
    transport = SysfsTransport(BDF, root=root, dev=dev)
    assert asyncio.run(transport.config_read(0x3C)) == 0
    with pytest.raises(TransportError, match="beyond byte 64 is readable by root only"):
        asyncio.run(transport.config_read(0x40))
    transport.close()


def test_dma_buffer_is_a_reserved_physical_range(tree):
    _, dev, _ = tree
    address, size = 0x20000, 0x2000
    with open(dev / "mem", "wb") as mem:
        mem.truncate(address + size)
    with pytest.raises(TransportError, match="--buffer 0x7f000000:16M"):
        asyncio.run(SysfsTransport(BDF).dma_buffer(4096))
    transport = SysfsTransport(BDF, buffer=(address, size))

    async def run():
        buffer = await transport.dma_buffer(0x1000)
        await buffer.write(8, b"pcispy")
        return buffer.bus_address, await buffer.read(6, 10)

    bus_address, data = asyncio.run(run())
    with pytest.raises(TransportError, match="has 8192 bytes; this run needs 16384"):
        asyncio.run(transport.dma_buffer(0x4000))
    transport.close()
    assert bus_address == address
    assert data == b"\0\0pcispy\0\0"
    with open(dev / "mem", "rb") as mem:
        mem.seek(address + 8)
        assert mem.read(6) == b"pcispy"


def test_list_finds_boards_by_id(tmp_path, monkeypatch, capsys):
    root, dev, _ = make_tree(tmp_path)
    other = tmp_path / "other"
    make_tree(other, vendor=0x8086, device=0x100E, driver="e1000e", bdf="0000:00:19.0")
    os.symlink(other / "devices" / "0000:00:19.0", root / "0000:00:19.0")
    monkeypatch.setenv("PCISPY_SYSFS_ROOT", str(root))
    assert [b["bdf"] for b in find_boards()] == [BDF]
    status, out, _ = cli(capsys, "list")
    assert status == 0
    assert out == (f"{BDF}  driver: uio_pci_generic  uio: uio0  BAR0 memory 0x1000, "
                   "BAR1 memory 0x10000, BAR2 memory 0x4000, BAR3 io 0x100\n")
    status, out, _ = cli(capsys, "--json", "list")
    assert json.loads(out)["boards"][0]["bars"]["1"] == {"kind": "memory",
                                                         "address": BARS[1][2],
                                                         "size": 0x10000}


def test_a_board_built_with_ids_of_its_own_is_found_with_them(tmp_path, monkeypatch, capsys):
    """``make bitstream ARGS="--ids 1234:abcd"`` builds a board the host finds only when
    PCISPY_BOARD_IDS names the same IDs; a bad value is one line naming the variable."""
    from pcispy.platform.build import _pci_ids
    assert _pci_ids("1234:abcd") == (0x1234, 0xABCD)
    for bad in ("1234", "12345:1", "ffff:0001", "x:1"):
        with pytest.raises(Exception, match="VENDOR:DEVICE|ffff"):
            _pci_ids(bad)
    root, _, _ = make_tree(tmp_path, vendor=0x1234, device=0xABCD)
    monkeypatch.setenv("PCISPY_SYSFS_ROOT", str(root))
    assert find_boards() == []
    status, out, _ = cli(capsys, "list")
    assert status == 0 and out == f"no pcispy board ({DEFAULT_VENDOR_ID:04x}:" \
        f"{DEFAULT_DEVICE_ID:04x}) found\n"
    status, _, err = cli(capsys, "--sysfs", BDF, "info")
    assert status == 2 and "PCISPY_BOARD_IDS=VENDOR:DEVICE" in err, err
    monkeypatch.setenv("PCISPY_BOARD_IDS", "1234:abcd")
    assert [b["bdf"] for b in find_boards()] == [BDF]
    status, out, err = cli(capsys, "--json", "--sysfs", BDF, "info")
    assert status == 0, err
    assert (json.loads(out)["vendor_id"], json.loads(out)["device_id"]) == (0x1234, 0xABCD)
    monkeypatch.setenv("PCISPY_BOARD_IDS", "12:zz")
    status, _, err = cli(capsys, "list")
    assert status == 2 and err.count("\n") == 1 and "PCISPY_BOARD_IDS" in err, err


def test_addresses_and_buffers_are_parsed_or_refused():
    assert normalise_bdf("3:00.0".zfill(7)) == "0000:03:00.0"
    assert normalise_bdf("0001:0A:1f.7") == "0001:0a:1f.7"
    assert parse_buffer("0x7f000000:16M") == (0x7F000000, 16 << 20)
    assert parse_buffer("4096:8192") == (4096, 8192)
    for bad in ("0x7f000000", "0x7f000001:4K", "x:y", "0x1000:0"):
        with pytest.raises(TransportError, match="--buffer"):
            parse_buffer(bad)
