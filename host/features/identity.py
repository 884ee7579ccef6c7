# SPDX-License-Identifier: BSD-2-Clause
"""Who the board is: identity registers, configuration space, register dump.

Features behind ``pcispy info``, ``pcispy config`` and ``pcispy regs``.
"""

from pcispy.host.board import Board

__all__ = ["info", "config_space", "register_dump", "lspci_text", "CONFIG_SPACE_BYTES"]

#: Bytes of configuration space a conventional PCI function has.
CONFIG_SPACE_BYTES = 256


async def info(transport):
    """Identity, bus width, clock and BARs of the board."""
    board = Board(transport)
    identity = await board.identify()
    words = [await transport.config_read(offset) for offset in (0x00, 0x08)]
    return {
        "vendor_id": words[0] & 0xFFFF, "device_id": words[0] >> 16,
        "revision": words[1] & 0xFF, "class_code": words[1] >> 8,
        "gateware_version": f"{identity['version.major']}.{identity['version.minor']}",
        "trace_format": identity["version.format"],
        "bus_width": 64 if identity["config.bus_width"] else 32,
        "passive": bool(identity["config.passive"]),
        "clock_mhz": identity["config.clock_mhz"],
        "transport": transport.describe(),
    }


async def config_space(transport):
    """The 256 bytes of the board's configuration space."""
    data = bytearray()
    for offset in range(0, CONFIG_SPACE_BYTES, 4):
        data += (await transport.config_read(offset)).to_bytes(4, "little")
    return {"config": list(data)}


async def register_dump(transport):
    """Every readable register with its decoded fields."""
    rows = await Board(transport).dump()
    return {"registers": [{"name": name, "address": address, "value": value, "fields": fields}
                          for name, address, value, fields in rows]}


def lspci_text(config, slot="00:00.0"):
    """``config`` (256 bytes) in the format of ``lspci -xxx``, which ``lspci -F`` reads."""
    vendor = config[0] | config[1] << 8
    device = config[2] | config[3] << 8
    lines = [f"{slot} Device {vendor:04x}:{device:04x}"]
    for row in range(0, len(config), 16):
        lines.append(f"{row:02x}: " + " ".join(f"{b:02x}" for b in config[row:row + 16]))
    return "\n".join(lines) + "\n\n"
