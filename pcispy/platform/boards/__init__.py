# SPDX-License-Identifier: BSD-2-Clause
"""Board platforms and PCI pin-outs (importable as ``pcispy.platform.boards``).

:mod:`.ulx3s` holds the ULX3S platforms with the 32-bit PCI pin-out on its GPIO header,
:mod:`.ecp5_evn` the ECP5-5G evaluation board with a 64-bit pin-out, :mod:`.pci_card` a
reference PCI card with the bus on one edge of the die; :mod:`.wiring` writes the wiring
tables of docs/wiring.md. Each pin-out module declares ``BOARDS``, ``WIDTH``,
``BUS_CLOCK_MHZ`` (the bus clock its pin-out lets an active build meet),
``FLOORPLAN_DATA_PATHS`` (whether the floorplan places the logic before AD's registers),
``NEXTPNR_DEFAULTS``, ``add_pci``, ``PCI_PINOUT``, ``PCI_EDGE_PINS``, ``header_label`` and
``ball``.
"""

__all__ = ["BOARDS", "PINOUTS", "board_platform"]

from pcispy.platform.boards import ecp5_evn, pci_card, ulx3s
from pcispy.platform.timing import PCI_CLOCK_MHZ

#: ``{board name: pin-out module}``.
PINOUTS = {name: module for module in (ulx3s, ecp5_evn, pci_card) for name in module.BOARDS}

#: ``{board name: platform class or factory}`` of every board.
BOARDS = {name: module.BOARDS[name] for name, module in PINOUTS.items()}


def board_platform(name, passive=False, clock_mhz=PCI_CLOCK_MHZ, sdram_clock_mhz=None):
    """``(platform with its pci resource, bus width)`` of board ``name``, its PCI clock
    constrained to ``clock_mhz``; ``sdram_clock_mhz`` the SDRAM trace memory's own clock
    (a passive ULX3S build; None: the PCI clock)."""
    if name not in PINOUTS:
        raise ValueError(f"unknown board {name!r}; known: {', '.join(BOARDS)}")
    module = PINOUTS[name]
    options = {}
    if sdram_clock_mhz is not None:
        if module is not ulx3s or not passive:
            raise ValueError("an SDRAM clock is for the passive ULX3S build, the one that "
                             "keeps its trace in SDRAM")
        options["sdram_clock_mhz"] = sdram_clock_mhz
    return (module.add_pci(module.BOARDS[name](), passive=passive, clock_mhz=clock_mhz,
                           **options),
            module.WIDTH)
