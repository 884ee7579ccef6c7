# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb bench that runs one host feature inside the simulator (``pcispy --sim``).

The CLI names the feature (``module:function``, an ``async def feature(transport,
**arguments) -> dict``) and its arguments in the environment; this bench starts the
simulated system, enumerates it like firmware, hands the feature a
:class:`pcispy.sim.transport.SimTransport`, and writes the feature's result (or its
expected error) as JSON to the file the CLI reads back. See :func:`pcispy.sim.api.run_feature`.
"""

import importlib
import json
import os

import cocotb

from pcispy.host.errors import PcispyError
from pcispy.sim.speed import RESULT_ENV

__all__ = ["FEATURE_ENV", "ARGS_ENV", "resolve_feature"]

FEATURE_ENV = "PCISPY_FEATURE"
ARGS_ENV = "PCISPY_FEATURE_ARGS"


def resolve_feature(path):
    """``"pcispy.board.identity_feature:info"`` -> the function."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@cocotb.test()
async def run_feature(dut):
    """Run the feature named in the environment against the simulated board."""
    from pcispy.sim.api import SimSystem
    from pcispy.sim.transport import SimTransport
    from pcispy.sim.irq_service import ResponderService
    feature = resolve_feature(os.environ[FEATURE_ENV])
    arguments = json.loads(os.environ.get(ARGS_ENV, "{}"))
    system = SimSystem(dut)
    try:
        # Starting applies the profile: an unknown one is an expected error too.
        await system.start()
        bars = await system.enumerate_board()
        transport = SimTransport(system, bars)
        # The host bridge's interrupt responder services the board's interrupts (it idles
        # until a feature starts it).
        transport.interrupt_service = ResponderService(system, bars)
        result = {"result": await feature(transport, **arguments)}
    except PcispyError as error:
        result = {"error": str(error), "kind": type(error).__name__}
    result["checker"] = await system.checker_report()
    with open(os.environ[RESULT_ENV], "w") as f:
        json.dump(result, f)
