# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb bench that runs one host feature inside the simulator (``pcispy --sim
--fresh``, and each command of a session: :mod:`pcispy.sim.session_bench`).

The CLI names the feature (``module:function``, an ``async def feature(transport,
**arguments) -> dict``) and its arguments in the environment; this bench starts the
simulated system, enumerates it like firmware, hands the feature a
:class:`pcispy.sim.transport.SimTransport`, and writes the feature's result (or its
expected error) as JSON to the file the CLI reads back. See :func:`pcispy.sim.launcher.run_feature`.
"""

import importlib
import json
import os

import cocotb

from pcispy.host.errors import PcispyError
from pcispy.sim.api import SimSystem
from pcispy.sim.irq_service import ResponderService
from pcispy.sim.launcher import ARGS_ENV, FEATURE_ENV, RESULT_ENV
from pcispy.sim.session import end_with_parent
from pcispy.sim.transport import SimTransport

__all__ = ["resolve_feature", "run_on_board"]


def resolve_feature(path):
    """``"pcispy.board.identity_feature:info"`` -> the function."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


async def run_on_board(system, bars, feature, arguments, *, session=None, hangup=None):
    """Run ``feature`` (a function or its ``module:function`` name) with ``arguments`` on
    the started and enumerated ``system``; return ``{"result": ...}`` or ``{"error": ...,
    "kind": ...}`` for an expected error, and ``"checker"``: both monitors' report
    (:meth:`~pcispy.sim.api.SimSystem.checker_report`). ``session`` names the session
    the board belongs to (in the transport's description); ``hangup``, set when nobody
    waits for the result any more (a cocotb Event, or what has its ``is_set`` and
    ``wait``), ends the feature (the transport's ``hangup``: ``asyncio.CancelledError``
    from its next access or wait)."""
    try:
        if isinstance(feature, str):
            feature = resolve_feature(feature)
        transport = SimTransport(system, bars, session=session, hangup=hangup)
        # The host bridge's interrupt responder services the board's interrupts (it idles
        # until a feature starts it).
        transport.interrupt_service = ResponderService(system, bars)
        outcome = {"result": await feature(transport, **arguments)}
    except PcispyError as error:
        outcome = {"error": str(error), "kind": type(error).__name__}
    outcome["checker"] = await system.checker_report()
    return outcome


@cocotb.test()
async def run_feature(dut):
    """Run the feature named in the environment against the simulated board."""
    end_with_parent()                   # a command killed with -9 leaves no simulator
    system = SimSystem(dut)
    try:
        # Starting applies the profile: an unknown one is an expected error too.
        await system.start()
        bars = await system.enumerate_board()
    except PcispyError as error:
        outcome = {"error": str(error), "kind": type(error).__name__,
                   "checker": await system.checker_report()}
    else:
        outcome = await run_on_board(system, bars, os.environ[FEATURE_ENV],
                                     json.loads(os.environ.get(ARGS_ENV, "{}")))
    with open(os.environ[RESULT_ENV], "w") as f:
        json.dump(outcome, f)
