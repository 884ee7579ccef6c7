# SPDX-License-Identifier: BSD-2-Clause
"""Board platforms and PCI pin-outs (importable as ``pcispy.platform.boards``).

:mod:`.ulx3s` holds the ULX3S platforms with the 32-bit PCI pin-out on its GPIO header,
:mod:`.ecp5_evn` the ECP5-5G evaluation board with a 64-bit pin-out; :mod:`.build`
builds a bitstream and reads its timing report (``make bitstream``), :mod:`.floorplan`
places the live handshake logic by hand (``--floorplan``), :mod:`.wiring` writes the
wiring tables of docs/wiring.md.
"""

__all__ = ["BOARDS", "PINOUTS", "board_platform"]

from pcispy.platform.boards import ecp5_evn, ulx3s

#: ``{board name: pin-out module}``: each module has ``BOARDS``, ``WIDTH``,
#: ``NEXTPNR_DEFAULTS``, ``add_pci``, ``PCI_PINOUT``, ``PCI_EDGE_PINS`` and ``header_label``.
PINOUTS = {name: module for module in (ulx3s, ecp5_evn) for name in module.BOARDS}

#: ``{board name: platform class or factory}`` of every board.
BOARDS = {name: module.BOARDS[name] for name, module in PINOUTS.items()}


def board_platform(name, passive=False, clock_mhz=ulx3s.PCI_CLOCK_MHZ):
    """``(platform with its pci resource, bus width)`` of board ``name``, its PCI clock
    constrained to ``clock_mhz``."""
    if name not in PINOUTS:
        raise ValueError(f"unknown board {name!r}; known: {', '.join(BOARDS)}")
    module = PINOUTS[name]
    return (module.add_pci(module.BOARDS[name](), passive=passive, clock_mhz=clock_mhz),
            module.WIDTH)
