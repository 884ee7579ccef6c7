# SPDX-License-Identifier: BSD-2-Clause
"""The example cores the ``core`` tests run: the example Verilog target's description
and its deliberately faulty variant (one definition, so the tests that run it share one
model)."""

from dataclasses import replace
from pathlib import Path

from pcispy.sim.core_description import CoreDescription

__all__ = ["EXAMPLE", "faulty_example"]

#: The example Verilog target's core description (examples/verilog_target/).
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "verilog_target" / "core.json"


def faulty_example():
    """The example with its deliberate fault defined: TRDY#/STOP#/DEVSEL# released while
    asserted after every last data phase (slot 0 named ``example_target_fault``)."""
    return replace(CoreDescription.load(EXAMPLE), name="example_target_fault",
                   defines=(("FAULT_RELEASE_ASSERTED", ""),))
