# SPDX-License-Identifier: BSD-2-Clause
"""Who the board is: identity registers, configuration space, register dump; and which
boards this machine's PCI slots hold.

Features behind ``pcispy info``, ``pcispy config``, ``pcispy regs`` and ``pcispy passive``,
and ``pcispy list`` (:class:`ListCommand`).
"""

from pcispy.host.board import Board
from pcispy.host.command import CliCommand
from pcispy.host.errors import PassiveBuild, TransportError
from pcispy.host.transports.sysfs import board_ids, find_boards

__all__ = ["info", "config_space", "register_dump", "passive_mode", "lspci_text",
           "CONFIG_SPACE_BYTES", "ListCommand"]

#: Bytes of configuration space a conventional PCI function has.
CONFIG_SPACE_BYTES = 256


async def info(transport):
    """Identity, bus width, clock (nominal and measured), decode speed and BARs of the
    board. A passive build has no configuration space: its IDs, class, revision and
    decode are None."""
    board = Board(transport)
    identity = await board.identify()
    _, config = board.map["id.config"]
    passive = bool(identity["config.passive"])
    words = [None, None] if passive else [await transport.config_read(offset)
                                          for offset in (0x00, 0x08)]
    return {
        "vendor_id": words[0] and words[0] & 0xFFFF, "device_id": words[0] and words[0] >> 16,
        "revision": words[1] and words[1] & 0xFF, "class_code": words[1] and words[1] >> 8,
        "gateware_version": f"{identity['version.major']}.{identity['version.minor']}",
        "trace_format": identity["version.format"],
        "bus_width": 64 if identity["config.bus_width"] else 32,
        "passive": passive,
        "clock_mhz": identity["config.clock_mhz"],
        # The board's measurement against its oscillator (None: no oscillator).
        "clock_measured_mhz": identity["clock_measured_mhz"],
        # The fastest DEVSEL# its target answers with (pcispy target --devsel).
        "decode": None if passive else config.field("decode").values[identity["config.decode"]],
        "transport": transport.describe(),
    }


async def config_space(transport):
    """The 256 bytes of the board's configuration space."""
    if (await Board(transport).identify())["config.passive"]:
        raise PassiveBuild("pcispy config reads the board's configuration space")
    data = bytearray()
    for offset in range(0, CONFIG_SPACE_BYTES, 4):
        data += (await transport.config_read(offset)).to_bytes(4, "little")
    return {"config": list(data)}


async def register_dump(transport):
    """Every readable register with its decoded fields."""
    rows = await Board(transport).dump()
    return {"registers": [{"name": name, "address": address, "value": value, "fields": fields}
                          for name, address, value, fields in rows]}


async def passive_mode(transport, setting=None):
    """Read, or set (``setting`` True/False) and read back, the board's passive mode
    (``id.mode``). Set over the PCI bus itself, the board stops answering once it takes
    hold: then nothing can be read back (``answering`` False, checked by reading the
    identity register: a master abort, or all ones). A passive build is always passive
    (``passive_build`` True): clearing it is refused."""
    board = Board(transport)
    if setting is False and await _passive_build(board):
        raise PassiveBuild("passive off would let the board drive the PCI bus")
    if setting is not None:
        await board.write("id.mode", passive=int(setting))
    try:
        fields = await board.fields("id.mode")
        identity = await board.identify()        # the magic: is it the board answering?
    except TransportError:
        return {"requested": bool(setting), "passive_on": None, "answering": False,
                "passive_build": None}
    return {"requested": bool(fields["passive"]), "passive_on": bool(fields["passive_on"]),
            "answering": True, "passive_build": bool(identity["config.passive"])}


async def _passive_build(board):
    """Whether the board is a passive build (False when it does not answer)."""
    try:
        return bool((await board.identify())["config.passive"])
    except TransportError:
        return False


def lspci_text(config, slot="00:00.0"):
    """``config`` (256 bytes) in the format of ``lspci -xxx``, which ``lspci -F`` reads."""
    vendor = config[0] | config[1] << 8
    device = config[2] | config[3] << 8
    lines = [f"{slot} Device {vendor:04x}:{device:04x}"]
    for row in range(0, len(config), 16):
        lines.append(f"{row:02x}: " + " ".join(f"{b:02x}" for b in config[row:row + 16]))
    return "\n".join(lines) + "\n\n"


class ListCommand(CliCommand):
    name = "list"
    help = "list the pcispy boards in this machine's PCI slots (by vendor/device ID)"
    examples = ("pcispy list", "pcispy --json list")

    def run(self, args, out):
        boards = find_boards()
        if not args.json:
            if not boards:
                ids = ":".join(f"{x:04x}" for x in board_ids())
                out.write(f"no pcispy board ({ids}) found\n")
            for board in boards:
                bars = ", ".join(f"BAR{i} {b['kind']} {b['size']:#x}"
                                 for i, b in board["bars"].items())
                out.write(f"{board['bdf']}  driver: {board['driver'] or '-'}  "
                          f"uio: {board['uio'] or '-'}  {bars}\n")
        return {"boards": boards}
