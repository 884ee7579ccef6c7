# SPDX-License-Identifier: BSD-2-Clause
"""Register-level driver of one pcispy board, over any transport.

Registers are named as in the register map, pcispy/board/registers.py (``"dma.status"``);
this module holds no offsets of its own. Every method is ``async`` and awaits only the transport.
"""

from pcispy.board.registers import IDENTITY_MAGIC, REGISTER_MAP
from pcispy.csr.map import Access
from pcispy.host.errors import PassiveBuild, TransportError

__all__ = ["Board", "REGS_BAR", "bus_clock", "c_header"]

#: The BAR that holds the registers.
REGS_BAR = 0


def bus_clock(identity):
    """The PCI clock of a board whose ``identity`` has ``config.clock_mhz`` and the fields of
    ``id.clock``: ``{"clock_measured_mhz": the board's measurement against its oscillator
    (3 decimals) or None, "clock_mhz": the clock to report (measured, else nominal),
    "clock_hz": the clock to compute with (measured, else the nominal clock's whole
    nanoseconds: PCI means 33 MHz as 30 ns; None if the board reports neither)}``. The
    simulated system has no oscillator: nominal there."""
    count, nominal = identity["clock.pci_count"], identity["config.clock_mhz"]
    if count:
        measured = count / (1 << identity["clock.gate_log2"])
        return {"clock_measured_mhz": round(measured, 3), "clock_mhz": round(measured, 3),
                "clock_hz": measured * 1e6}
    return {"clock_measured_mhz": None, "clock_mhz": nominal,
            "clock_hz": 1e9 / round(1000 / nominal) if nominal else None}


class Board:
    """One board reached through ``transport``."""

    def __init__(self, transport, register_map=REGISTER_MAP):
        self.transport = transport
        self.map = register_map

    async def read(self, name):
        """The 32-bit value of register ``name``."""
        address, _ = self.map[name]
        return await self.transport.read32(REGS_BAR, address)

    async def write(self, name, value=None, **fields):
        """Write register ``name``: a whole ``value``, or named ``fields`` (others 0)."""
        address, reg = self.map[name]
        if value is None:
            value = 0
            for field_name, field_value in fields.items():
                field = reg.field(field_name)
                if not 0 <= field_value < (1 << field.width):
                    raise ValueError(f"{name}.{field_name}: {field_value} does not fit "
                                     f"in {field.width} bits")
                value |= field_value << field.lsb
        elif fields:
            raise TypeError("give either a whole value or fields, not both")
        await self.transport.write32(REGS_BAR, address, value)

    async def fields(self, name):
        """``{field: value}`` of register ``name``."""
        _, reg = self.map[name]
        return reg.decode(await self.read(name))

    async def read64(self, name):
        """A 64-bit quantity held in ``name_lo``/``name_hi`` (reading lo latches hi)."""
        lo = await self.read(f"{name}_lo")
        hi = await self.read(f"{name}_hi")
        return hi << 32 | lo

    async def trace_memory(self):
        """Where the spy keeps its trace, from ``id.config``: ``{"memory": "none" | "bram" |
        "sram", "slots": 16-byte slots (0 without the spy)}``."""
        _, register = self.map["id.config"]
        config = register.decode(await self.read("id.config"))
        memory = register.field("trace_memory").values[config["trace_memory"]]
        return {"memory": memory,
                "slots": 1 << config["trace_depth"] if memory != "none" else 0}

    async def identify(self, *, drives_bus=None):
        """Check the magic; return the identity fields (``version.*``, ``config.*``,
        ``clock.*``) and the PCI clock (:func:`bus_clock`). Raises TransportError if not
        ours.

        ``drives_bus``: the command asking (``"pcispy dma"``), when it needs the board to
        answer or drive the PCI bus (its target, DMA master or INTA#): a passive build has
        none of them, and the command is refused with a :class:`PassiveBuild` error."""
        magic = await self.read("id.magic")
        if magic != IDENTITY_MAGIC:
            raise TransportError(
                f"the device answers {magic:#010x} at id.magic, not {IDENTITY_MAGIC:#010x}: "
                "it is not a pcispy board (or its BAR0 is not mapped)")
        identity = {"magic": magic}
        identity.update({f"version.{k}": v for k, v in (await self.fields("id.version")).items()})
        identity.update({f"config.{k}": v for k, v in (await self.fields("id.config")).items()})
        if drives_bus and identity["config.passive"]:
            raise PassiveBuild(f"{drives_bus} needs the board's PCI target, master or INTA#")
        identity.update({f"clock.{k}": v for k, v in (await self.fields("id.clock")).items()})
        identity.update(bus_clock(identity))
        return identity

    async def dump(self):
        """Every readable register: ``[(name, address, value, {field: value})]``."""
        rows = []
        for name, address, reg in self.map:
            if all(f.access in (Access.WO,) for f in reg.fields) or \
                    any(f.access is Access.RC for f in reg.fields):
                value = None      # reading would do nothing useful or pop a FIFO
            else:
                value = await self.transport.read32(REGS_BAR, address)
            rows.append((name, address, value, reg.decode(value) if value is not None else {}))
        return rows


def c_header(register_map=REGISTER_MAP, prefix="PCISPY"):
    """The register map as a C header (``pcispy regs --header``)."""
    lines = [
        "/* Generated from pcispy/board/registers.py by `pcispy regs --header`. Do not edit. */",
        f"#ifndef {prefix}_REGS_H",
        f"#define {prefix}_REGS_H",
        "",
    ]
    for name, address, reg in register_map:
        macro = f"{prefix}_{name.replace('.', '_').upper()}"
        lines.append(f"/* {reg.doc} */" if reg.doc else f"/* {name} */")
        lines.append(f"#define {macro} 0x{address:03x}u")
        for field in reg.fields:
            if len(reg.fields) == 1 and field.width == 32:
                continue
            fmacro = f"{macro}_{field.name.upper()}"
            lines.append(f"#define {fmacro}_SHIFT {field.lsb}u")
            lines.append(f"#define {fmacro}_MASK 0x{field.mask:08x}u  /* {field.access.value}: {field.doc} */")
        lines.append("")
    lines.append(f"#endif /* {prefix}_REGS_H */")
    return "\n".join(lines) + "\n"
