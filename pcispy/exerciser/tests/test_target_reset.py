# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy target --reset`` restores the board's own reset values: a slow-decode build's
exerciser resets to slow DEVSEL# (id.config.decode) and refuses medium, so writing the
register map's medium would be refused. A stand-in board holds BAR0's registers with the
reset values of its build and refuses DEVSEL# faster than it decodes, as the gateware does
(pcispy/core/tests/test_target.py::test_slow_decode_option checks the gateware itself)."""

import asyncio

import pytest

from pcispy.pci.bus import DevselSpeed
from pcispy.board.registers import REGISTER_MAP
from pcispy.exerciser.registers import decode_resets
from pcispy.host.errors import RefusedSetting
from pcispy.exerciser.target_feature import target

from pcispy.host.tests._standin import StandInBoard

pytestmark = pytest.mark.host


class DecodingBoard(StandInBoard):
    """BAR0 of a board built with target decode speed ``decode``."""
    def __init__(self, decode):
        self.decode = decode
        self.map = REGISTER_MAP.with_resets(decode_resets(decode))
        self.values = {name: reg.reset for name, _, reg in self.map}
        field = self.map["id.config"][1].field("decode")
        self.values["id.config"] = ((self.values["id.config"] & ~field.mask)
                                    | decode.value << field.lsb)
        self.values["id.magic"] = 0x5043_4953
        self.by_offset = {address: name for name, address, _ in self.map}
        self.writes = []

    async def read32(self, bar, offset):
        return self.values[self.by_offset[offset]]

    async def write32(self, bar, offset, value):
        name = self.by_offset[offset]
        self.writes.append((name, value))
        status = self.map["target.status"][1]
        if name == "target.status":                  # write 1 to clear
            self.values[name] &= ~value
        elif name == "target.response" and value & 3 < self.decode.value:
            self.values["target.status"] |= 1 << status.field("bad_devsel").lsb
        else:
            self.values[name] = value



@pytest.mark.parametrize("decode", [DevselSpeed.MEDIUM, DevselSpeed.SLOW])
def test_reset_writes_the_boards_own_devsel_speed(decode):
    board = DecodingBoard(decode)
    settings = asyncio.run(target(board, reset=True))
    written = [value & 3 for name, value in board.writes if name == "target.response"]
    assert written == [decode.value]
    assert settings["devsel"] == decode.name.lower()


def test_slow_board_refuses_medium_with_the_maps_reason():
    board = DecodingBoard(DevselSpeed.SLOW)
    with pytest.raises(RefusedSetting, match="faster than the build decodes"):
        asyncio.run(target(board, devsel="medium"))
    assert asyncio.run(target(board, show=True))["devsel"] == "slow"
