# SPDX-License-Identifier: BSD-2-Clause
"""The PCI codes the register blocks and the host name without the gateware: DEVSEL# timing,
the bus commands' mnemonics and the lines of a slot.

Data only (no Amaranth), so that a register block, and the host's board driver standing on
the blocks, load without the gateware. :class:`DevselSpeed` is a plain integer enum; the
gateware uses it as a shape as it is (Amaranth takes an enum of integers as a shape as wide
as its largest value), and :mod:`pcispy.pci.bus` imports it with the rest of the
vocabulary. The commands themselves are :class:`pcispy.pci.bus.Command`, whose codes index
:data:`COMMAND_MNEMONICS`. A Verilog core's description (pcispy/sim/core_description.py),
which the command line reads, checks its pin map against :func:`bus_lines`.
"""

import enum

__all__ = ["DevselSpeed", "DECODE_SPEEDS", "COMMAND_MNEMONICS", "bus_lines"]


class DevselSpeed(enum.IntEnum):
    """DEVSEL# timing, counting the address phase as clock 1 (fast = clock 2)."""
    FAST        = 0
    MEDIUM      = 1
    SLOW        = 2
    SUBTRACTIVE = 3


#: The address decode speeds a target can be built with: a positive decoder claims at
#: one of these; SUBTRACTIVE is a timing the exerciser plays, not a decoder.
DECODE_SPEEDS = (DevselSpeed.FAST, DevselSpeed.MEDIUM, DevselSpeed.SLOW)

#: The short name of each bus command, by its code (C/BE#[3:0] in the address phase), as
#: tables, CSV exports and the command line write it.
COMMAND_MNEMONICS = ("IACK", "SPC", "IOR", "IOW", "RSV4", "RSV5", "MR", "MW",
                     "RSV8", "RSV9", "CFGR", "CFGW", "MRM", "DAC", "MRL", "MWI")


def bus_lines(width=32):
    """The lines of a PCI slot as ``{name: bits}``, in a fixed order.

    ``req``/``gnt``/``idsel`` are this slot's point-to-point lines; ``rst`` is RST#.
    A 64-bit bus adds ``ad_hi`` (AD[63:32]), ``cbe_hi`` (C/BE#[7:4]), ``par64``, ``req64``
    and ``ack64``.
    """
    if width not in (32, 64):
        raise ValueError(f"PCI bus width must be 32 or 64, not {width!r}")
    lines = {
        "ad": 32, "cbe": 4, "par": 1,
        "frame": 1, "irdy": 1, "trdy": 1, "stop": 1, "devsel": 1,
        "idsel": 1, "lock": 1, "perr": 1, "serr": 1,
        "req": 1, "gnt": 1,
        "inta": 1, "intb": 1, "intc": 1, "intd": 1,
        "rst": 1,
    }
    if width == 64:
        lines.update({"ad_hi": 32, "cbe_hi": 4, "par64": 1, "req64": 1, "ack64": 1})
    return lines
