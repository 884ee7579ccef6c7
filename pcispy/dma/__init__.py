# SPDX-License-Identifier: BSD-2-Clause
"""The DMA exerciser: the bus-master engine (:mod:`.engine`), its data patterns
(:mod:`.patterns`) and registers (:mod:`.registers`), and the host side: ``pcispy dma``
(:mod:`.dma_feature`) and ``pcispy sweep`` (:mod:`.sweep_feature`)."""
