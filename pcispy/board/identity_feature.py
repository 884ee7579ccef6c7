# SPDX-License-Identifier: BSD-2-Clause
"""Who the board is: identity registers, configuration space, register dump; and which
boards this machine's PCI slots hold.

Features and commands: ``pcispy info``, ``pcispy config``, ``pcispy regs``, ``pcispy passive``
and ``pcispy list``.
"""

from pcispy.board.registers import REGISTER_MAP
from pcispy.host.board import Board, c_header
from pcispy.host.command import CliCommand, run_feature
from pcispy.host.errors import PassiveBuild, TransportError
from pcispy.host.transports.sysfs import board_ids, find_boards

__all__ = ["info", "config_space", "register_dump", "passive_mode", "lspci_text",
           "CONFIG_SPACE_BYTES", "InfoCommand", "ConfigCommand", "RegsCommand", "PassiveCommand",
           "ListCommand"]

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
        # The fastest bus clock at which the build samples every input in time.
        "bus_clock_max_mhz": identity["config.bus_clock"],
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


class InfoCommand(CliCommand):
    name = "info"
    help = ("identify the board: IDs, gateware version, bus width, clock, decode speed, "
            "transport, BARs")
    examples = ("pcispy info", "pcispy --sim --bus-width 64 --json info")

    def run(self, args, out):
        result = run_feature(args, info)
        if not args.json:
            if result["passive"]:
                out.write("pcispy board, passive build: no PCI function (no configuration "
                          "space, target or DMA master), the spy and the checker only\n")
            else:
                out.write(f"pcispy board {result['vendor_id']:04x}:{result['device_id']:04x} "
                          f"class {result['class_code']:06x} rev {result['revision']}\n")
            measured = result["clock_measured_mhz"]
            out.write(f"gateware {result['gateware_version']}, trace format "
                      f"{result['trace_format']}, {result['bus_width']}-bit bus at "
                      f"{result['clock_mhz']} MHz nominal, "
                      + (f"{measured:.3f} MHz measured" if measured is not None else
                         "not measured (no board oscillator)")
                      + f"{'' if result['passive'] else ', ' + result['decode'] + ' decode'}\n")
            out.write(f"samples every input in time on a bus up to "
                      f"{result['bus_clock_max_mhz']} MHz\n")
            transport = result["transport"]
            out.write(f"transport: {transport['transport']}" +
                      (f" (profile {transport['profile']}, seed {transport['seed']}"
                       + (f", session {transport['session']})" if transport.get("session")
                          else ", a board for this command only)")
                       if transport["transport"] == "sim" else "") + "\n")
            for index, bar in sorted(transport.get("bars", {}).items()):
                out.write(f"  BAR{index}: {bar['kind']:6s} at {bar['address']:#010x}, "
                          f"{bar['size']} bytes\n")
        return result


class ConfigCommand(CliCommand):
    name = "config"
    help = "the board's configuration space (--lspci: as lspci -xxx prints it)"
    examples = ("pcispy config --lspci > board.lspci && lspci -F board.lspci -vv",)

    def add_arguments(self, parser):
        parser.add_argument("--lspci", action="store_true",
                            help="print in the format of lspci -xxx (readable by lspci -F)")

    def run(self, args, out):
        result = run_feature(args, config_space)
        if not args.json:
            config = result["config"]
            if args.lspci:
                out.write(lspci_text(config))
            else:
                for row in range(0, len(config), 16):
                    out.write(f"{row:02x}: " +
                              " ".join(f"{b:02x}" for b in config[row:row + 16]) + "\n")
        return result


class RegsCommand(CliCommand):
    name = "regs"
    help = "the board's registers by name with decoded fields (--header: as a C header)"
    examples = ("pcispy regs", "pcispy regs --header > pcispy_regs.h",
                "pcispy --json regs --map")

    def add_arguments(self, parser):
        parser.add_argument("--header", action="store_true",
                            help="print the register map as a C header")
        parser.add_argument("--map", action="store_true",
                            help="print the register map (no board needed)")

    def run(self, args, out):
        if args.header:
            out.write(c_header())
            return None
        if not args.map:
            result = run_feature(args, register_dump)
            if not args.json:
                for row in result["registers"]:
                    value = "  (not read)" if row["value"] is None else f"{row['value']:#010x}"
                    fields = " ".join(f"{k}={v}" for k, v in row["fields"].items()
                                      if len(row["fields"]) > 1)
                    out.write(f"0x{row['address']:03x} {row['name']:28s} {value} {fields}\n")
            return result
        rows = [{"name": name, "address": address, "doc": reg.doc,
                 "fields": [{"name": f.name, "lsb": f.lsb, "width": f.width,
                             "access": f.access.value, "reset": f.reset, "doc": f.doc}
                            for f in reg.fields]}
                for name, address, reg in REGISTER_MAP]
        if not args.json:
            for row in rows:
                out.write(f"0x{row['address']:03x}  {row['name']:28s} {row['doc']}\n")
        return {"registers": rows}


class PassiveCommand(CliCommand):
    name = "passive"
    help = ("passive mode of an active board: drive no PCI line, claim nothing, keep spying "
            "(on, off, or without an argument: show it)")
    examples = ("pcispy --uart /dev/ttyUSB0 passive on",
                "pcispy --uart /dev/ttyUSB0 passive off",
                "pcispy --uart /dev/ttyUSB0 --json passive")

    def add_arguments(self, parser):
        parser.add_argument("setting", nargs="?", choices=("on", "off"),
                            help="set passive mode on or off (default: show it)")

    def run(self, args, out):
        setting = None if args.setting is None else args.setting == "on"
        result = run_feature(args, passive_mode,
                             setting=setting)
        if not args.json:
            # What ends passive mode where this command ran: in the simulator, RST#.
            way_out = ("`pcispy sim reset` (RST#) ends it" if args.sysfs is None and
                       args.uart is None else "RST# or the side channel (--uart) clears it")
            if not result["answering"] and result["requested"]:
                out.write(f"passive: the board answers nothing more over the PCI bus; "
                          f"{way_out}\n")
            elif not result["answering"]:
                out.write(f"the board does not answer over the PCI bus (passive mode? "
                          f"{way_out})\n")
            elif result["passive_build"]:
                out.write("passive: a passive build, it has no PCI output drivers\n")
            elif result["passive_on"]:
                out.write("passive: the board drives no PCI line\n")
            elif result["requested"]:
                out.write("passive mode requested: it takes hold once the board's current "
                          "bus activity ends\n")
            else:
                out.write("active: the board answers as a target and may master the bus\n")
        return result
