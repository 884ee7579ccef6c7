# SPDX-License-Identifier: BSD-2-Clause
"""The UART side channel: register and trace-memory access over the board's UART, for a
board that spies on a bus it is not reached through (see :mod:`.sidechannel`)."""

__all__ = []
