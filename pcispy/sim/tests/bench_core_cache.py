# SPDX-License-Identifier: BSD-2-Clause
"""cocotb bench of pcispy/sim/tests/test_core_cache.py's tiny model: read its value (the
included file's constant) while the model records waves."""

import os

import cocotb
from cocotb.triggers import Timer

__all__ = ["tiny_value"]


@cocotb.test()
async def tiny_value(dut):
    await Timer(100, "ns")
    assert int(dut.value.value) == int(os.environ["PCISPY_EXPECTED"]), dut.value.value
