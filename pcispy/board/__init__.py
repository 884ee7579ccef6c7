# SPDX-License-Identifier: BSD-2-Clause
"""The board: the core and every slice wired together (:mod:`.top`), its identity and
clock meter, the BAR0 register map assembled from the slices' blocks (:mod:`.registers`),
and ``pcispy info/config/regs/passive`` (:mod:`.identity_feature`). On a real FPGA it is
wrapped by :mod:`pcispy.platform.top`."""
