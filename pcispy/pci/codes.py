# SPDX-License-Identifier: BSD-2-Clause
"""The PCI codes the register blocks and the host name without the gateware: DEVSEL# timing
and the bus commands' mnemonics.

Data only (no Amaranth), so that a register block, and the host's board driver standing on
the blocks, load without the gateware. :class:`DevselSpeed` is a plain integer enum; the
gateware uses it as a shape as it is (Amaranth takes an enum of integers as a shape as wide
as its largest value), and :mod:`pcispy.pci.bus` imports it with the rest of the
vocabulary. The commands themselves are :class:`pcispy.pci.bus.Command`, whose codes index
:data:`COMMAND_MNEMONICS`.
"""

import enum

__all__ = ["DevselSpeed", "DECODE_SPEEDS", "COMMAND_MNEMONICS"]


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
