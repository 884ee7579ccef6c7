# SPDX-License-Identifier: BSD-2-Clause
"""Real boards: the board on an FPGA's pins and clocks (:mod:`.top`), ECP5 cells, I/O
cells and the floorplan of the live logic (:mod:`.ecp5`), the boards' PCI pin-outs and
wiring tables (:mod:`.boards`), and the bitstream build with its timing report and check
(:mod:`.build`)."""
