# SPDX-License-Identifier: BSD-2-Clause
"""The behavioural initiator against a scripted target (Amaranth's Python simulator).

Waveforms are asserted clock by clock from the address phase (clock 1 = index 0 of the
strings); each string is one line, inside level (1 = asserted).
"""

import pytest

from pcispy.gateware.pci.bus import Command, parity
from pcispy.sim.bfm.initiator import Reg, Status, STATUS_BUF_REFUSED
from pcispy.sim.tests._initiator_bench import TargetScript, run_bench, waves

pytestmark = pytest.mark.bfm

CTRL = ["frame", "irdy", "devsel", "trdy", "stop"]


def _start(target, n=0):
    return target.transactions[n]["start"]


def _clean(target):
    assert not any(clock["contention"] for clock in target.trace), "two drivers on one line"


def test_single_write_fast_target():
    results = {}

    async def bench(ctx, drv, target, h):
        results["r"] = await drv.mem_write(0x1000_0040, bytes([1, 2, 3, 4]))
        await ctx.tick().repeat(4)

    target = run_bench(bench, TargetScript(devsel_clock=2))
    r = results["r"]
    assert r.status == Status.OK
    assert (r.phases, r.dwords, r.transactions, r.retries, r.disconnects) == (1, 1, 1, 0, 0)
    assert r.latency == 1
    t0 = _start(target)
    assert waves(target.trace, t0, 4, CTRL) == {
        "frame":  "1000",
        "irdy":   "0100",
        "devsel": "0100",
        "trdy":   "0100",
        "stop":   "0000",
    }
    addr_phase, data_phase = target.trace[t0], target.trace[t0 + 1]
    assert (addr_phase["ad"], addr_phase["cbe"]) == (0x1000_0040, Command.MEM_WRITE.value)
    assert (data_phase["ad"], data_phase["cbe"]) == (0x0403_0201, 0)
    # PAR one clock after what it covers.
    assert target.trace[t0 + 1]["par"] == parity(0x1000_0040, Command.MEM_WRITE.value)
    assert target.trace[t0 + 2]["par"] == parity(0x0403_0201, 0)
    assert target.s.memory[0x1000_0040 >> 2] == 0x0403_0201
    _clean(target)
