# SPDX-License-Identifier: BSD-2-Clause
"""The PCI core of the board: pads (:mod:`.pads`), configuration space
(:mod:`.config`), target (:mod:`.target`), master (:mod:`.initiator`) and the shallow
combinational blocks they share (:mod:`.logic`).

The capability slices (exerciser, dma, spy, irq, sidechannel) sit on top of this core;
:mod:`pcispy.board` wires them together."""
