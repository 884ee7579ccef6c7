# SPDX-License-Identifier: BSD-2-Clause
"""Features: what the CLI commands do, as ``async def feature(transport, **arguments) -> dict``.

Each awaits only the transport (through :class:`pcispy.host.board.Board`), so the same code
runs on hardware under asyncio and in the simulator under cocotb.
"""
