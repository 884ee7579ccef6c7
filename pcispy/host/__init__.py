# SPDX-License-Identifier: BSD-2-Clause
"""The host's foundation: the register-level board driver (:mod:`.board`), the
transports that reach a board (:mod:`.transports`), the errors a user sees
(:mod:`.errors`), the command framework every slice's CLI command is written in
(:mod:`.command`) and the plots (:mod:`.plots`).

A *feature* is ``async def feature(transport, **arguments) -> dict``: it awaits only the
transport (through :class:`~pcispy.host.board.Board`), so the same code runs on hardware
under asyncio and in the simulator under cocotb. Each slice keeps its features beside its
gateware (``pcispy/spy/capture_feature.py`` ...)."""
