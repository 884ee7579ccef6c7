# SPDX-License-Identifier: BSD-2-Clause
"""The exerciser target: the programmable response of the BAR2/BAR3 windows
(:mod:`.response`, its registers in :mod:`.registers`), the scratch RAM behind them
(:mod:`.scratch`), and the host side: ``pcispy target`` (:mod:`.target_feature`) and
``pcispy pio`` (:mod:`.pio_feature`)."""
