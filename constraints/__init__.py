# SPDX-License-Identifier: BSD-2-Clause
"""Board platforms and PCI pin-outs (importable as ``pcispy.constraints``).

:mod:`.ulx3s` holds the ULX3S platforms with the 32-bit PCI pin-out on its GPIO header;
:mod:`.build` builds a bitstream and reads its timing report (``make bitstream``).
"""

__all__ = ["BOARDS"]

from .ulx3s import BOARDS
