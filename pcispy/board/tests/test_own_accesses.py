# SPDX-License-Identifier: BSD-2-Clause
"""The board's spy leaves the board's own register accesses (the BAR0 transactions its
target claims: the host tool's) out of its counters, at every decode speed: the target's
registered report of the claim meets the address phase the spy sees, whenever the claim
comes. A scripted initiator at the pins (pcispy/core/tests/pci_host.py) makes the
traffic; the counters are read through BAR0 like the tool does."""

import pytest

from pcispy.board.registers import REGISTER_MAP
from pcispy.board.top import PCIBoard
from pcispy.core.tests.pci_host import BAR_ADDRESSES, enumerate_board, simulate
from pcispy.pci.bus import Command, DevselSpeed, Termination

pytestmark = pytest.mark.board

BAR0, BAR2 = BAR_ADDRESSES[0], BAR_ADDRESSES[2]
#: An address no one answers (master abort): counted, not the board's.
NOBODY = 0x5000_0000


async def read(host, name):
    r = await host.read(BAR0 + REGISTER_MAP[name][0], 1, cmd=Command.MEM_READ)
    assert r.moved == 1, r.termination
    return r.data[0]


async def write(host, name, **fields):
    address, register = REGISTER_MAP[name]
    value = sum(v << register.field(f).lsb for f, v in fields.items())
    assert (await host.write(BAR0 + address, [value])).moved == 1


@pytest.mark.parametrize("decode", [DevselSpeed.FAST, DevselSpeed.MEDIUM, DevselSpeed.SLOW])
def test_the_spy_leaves_out_the_transactions_the_target_claims_on_bar0(decode):
    got = {}

    async def bench(host, pins, ctx):
        await enumerate_board(host)
        await write(host, "spy.control", clear=1)
        while REGISTER_MAP["spy.status"][1].decode(await read(host, "spy.status"))["clearing"]:
            pass

        async def counters():
            # A new snapshot, then its counters: three BAR0 transactions each time, the
            # snapshot's write on the same side of it every time.
            await write(host, "spy.control", snapshot=1)
            return {name: await read(host, f"spy.{name}")
                    for name in ("transactions", "own_transactions")}

        got["before"] = await counters()
        others = 0
        for i in range(3):
            assert (await host.write(BAR2 + 8 * i, [i, i + 1])).moved == 2
            await read(host, "id.magic")
            assert (await host.read(BAR2 + 8 * i, 2)).data == [i, i + 1]
            others += 2
        assert (await host.read(NOBODY, 1)).termination == Termination.MASTER_ABORT
        others += 1
        await read(host, "spy.status")
        got["after"] = await counters()
        got["others"] = others

    simulate(PCIBoard(32, exerciser_size=1024, spy_addr_bits=5, decode=decode), bench)
    before, after = got["before"], got["after"]
    assert after["transactions"] - before["transactions"] == got["others"] == 7
    # Two counter reads, three id.magic, one status, the second snapshot's write.
    assert after["own_transactions"] - before["own_transactions"] == 2 + 3 + 1 + 1
