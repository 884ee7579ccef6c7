# SPDX-License-Identifier: BSD-2-Clause
"""What is particular to the Lattice ECP5: logic cells instantiated for the
live paths (:mod:`.cells`), I/O-cell flip-flops (:mod:`.iocell`) and the hand placement of
the live logic (:mod:`.floorplan`)."""
