# SPDX-License-Identifier: BSD-2-Clause
"""Where the legacy device (:mod:`.legacy`, the PC real-time clock behind a PCI-to-ISA
bridge) answers, as data: the scenarios and benches that read the clock name its ports
without loading the device's gateware."""

__all__ = ["RTC_PORT"]

#: I/O address of the index register; the data register is the next byte.
RTC_PORT = 0x70
