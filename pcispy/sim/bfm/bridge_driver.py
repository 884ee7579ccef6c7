# SPDX-License-Identifier: BSD-2-Clause
"""The Python side of the PCI-to-PCI bridge model (pcispy/sim/bfm/bridge.py):
:class:`BridgeDriver` sets a bridge profile and reads the statistics and state through the
control port, and :class:`Type1Config` reaches the devices behind the bridge with Type 1
configuration cycles (:func:`type1_address`), ``async``, over a control accessor such as
:class:`pcispy.sim.control.PysimControl` or the cocotb twin in :mod:`pcispy.sim.api`.
"""

from pcispy.pci.bus import Command
from pcispy.sim.bfm.bridge_control import (DIRECTIONS, REGISTERS, STATS, TUNING, BridgeReg,
                                           bridge_profile_by_name)

__all__ = ["BridgeDriver", "Type1Config", "type1_address"]


def type1_address(bus, device, register, function=0):
    """The Type 1 configuration address of ``register`` (a byte offset) of ``device``,
    ``function`` on bus ``bus``: AD[23:16] bus, AD[15:11] device, AD[10:8] function,
    AD[7:2] the DWORD, AD[1:0] = 01."""
    if not (0 <= bus < 256 and 0 <= device < 32 and 0 <= function < 8
            and 0 <= register < 256):
        raise ValueError(f"no Type 1 address for bus {bus}, device {device}, function "
                         f"{function}, register {register:#x}")
    return bus << 16 | device << 11 | function << 8 | (register & 0xFC) | 1


class Type1Config:
    """Configuration access to the devices of one bus behind a bridge, with the methods
    of :class:`~pcispy.sim.bfm.initiator_driver.InitiatorDriver` that enumeration uses
    (``config_read``, ``config_write``; ``slot`` is the device number there), over the
    host bridge's initiator driver ``driver``."""

    def __init__(self, driver, bus):
        self.driver = driver
        self.bus = bus

    async def config_read(self, slot, register, *, function=0, **fields):
        return await self.driver.run(Command.CONFIG_READ,
                                     type1_address(self.bus, slot, register, function), 1,
                                     value_shift=0, value_size=4, **fields)

    async def config_write(self, slot, register, value, *, function=0, be=0, **fields):
        return await self.driver.run(Command.CONFIG_WRITE,
                                     type1_address(self.bus, slot, register, function), 1,
                                     imm=1, imm_data=value, be_first=be, **fields)


class BridgeDriver:
    """Python side of :class:`PCIBridge` over a control accessor (``read``/``write``)."""

    def __init__(self, ctl):
        self.ctl = ctl

    async def apply_profile(self, profile):
        """Set every tuning register from ``profile`` (a :class:`BridgeProfile` or a
        name of :data:`BRIDGE_PROFILES`)."""
        if isinstance(profile, str):
            profile = bridge_profile_by_name(profile)
        values = profile.fields()
        for name in TUNING:
            register = REGISTERS[name]
            await self.ctl.write(BridgeReg[name], register.pack(
                **{f.name: values[f.name] for f in register.fields}))
        self.profile = profile

    async def set_fields(self, **values):
        """Change some tuning fields by name, the others kept."""
        for name in TUNING:
            register = REGISTERS[name]
            mine = {k: v for k, v in values.items() if k in {f.name for f in register.fields}}
            if mine:
                word = await self.ctl.read(BridgeReg[name])
                for key, value in mine.items():
                    word = register.field(key).insert(word, value)
                await self.ctl.write(BridgeReg[name], word)
        unknown = set(values) - {f.name for name in TUNING for f in REGISTERS[name].fields}
        if unknown:
            raise ValueError(f"no bridge fields {sorted(unknown)}")

    async def stats(self):
        """``{direction: {statistic: count}}`` since reset or the last :meth:`clear`."""
        return {direction: {name: await self.ctl.read(
                    BridgeReg[f"{direction.upper()}_{name.upper()}"]) for name in STATS}
                for direction in DIRECTIONS}

    async def clear(self):
        for direction in DIRECTIONS:
            for name in STATS:
                await self.ctl.write(BridgeReg[f"{direction.upper()}_{name.upper()}"], 0)

    async def state(self):
        return REGISTERS["STATE"].unpack(await self.ctl.read(BridgeReg.STATE))
