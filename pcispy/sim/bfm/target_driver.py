# SPDX-License-Identifier: BSD-2-Clause
"""The Python side of the behavioural target (pcispy/sim/bfm/target.py) and of the legacy
device: :class:`TargetDriver` programs a behaviour profile, the windows and the knobs through
the control port and reaches the memory through its backdoor, ``async``, over a control
accessor such as :class:`pcispy.sim.control.PysimControl` or the cocotb twin in
:mod:`pcispy.sim.api`.
"""

from pcispy.sim.bfm.profiles import profile_by_name
from pcispy.sim.bfm.target_control import (FIELDS, STATS, Knob, Reg, TargetConfigError, _pack,
                                           _refusal, profile_fields)

__all__ = ["TargetDriver"]


class TargetDriver:
    """Python side of a :class:`BehaviouralTarget` (or a legacy device), over a control
    accessor (``write(reg, value)``, ``read(reg)``, ``wait_event()``, optional
    ``backdoor``: the cocotb handle of the agent instance).

    Every method is ``async`` and awaits only the accessor, so the same code runs under
    Amaranth's simulator and under cocotb. A value the target refuses raises
    :class:`TargetConfigError` naming the register and the reason.
    """
    #: Path from the agent instance to the storage array (see BehaviouralTarget).
    BACKDOOR_PATH = ("ram", "ram", "bd_storage")

    def __init__(self, ctl, *, width=None):
        self.ctl = ctl
        self.width = width    # None: asked from the target (Reg.INFO) on first use

    async def bus_width(self):
        """The target's bus width (32 or 64), read once from :attr:`Reg.INFO`."""
        if self.width is None:
            self.width = (await self.ctl.read(Reg.INFO)) & 0xFF   # bits 7:0
        return self.width

    async def write_reg(self, reg, value):
        """Write a whole register; raise :class:`TargetConfigError` if refused."""
        reason = _refusal(Reg(reg), value, await self.bus_width())
        if reason:
            raise TargetConfigError(f"{Reg(reg).name} = {value:#x}: {reason}")
        await self.ctl.write(reg, value)

    async def read_reg(self, reg):
        return await self.ctl.read(reg)

    async def set_fields(self, **values):
        """Set fields by name (read-modify-write of their registers, one write each; read
        fresh, because configuration writes change some of them)."""
        for name in values:
            if name not in FIELDS:
                raise TargetConfigError(f"unknown target field {name!r}")
        regs = {FIELDS[name][0] for name in values}
        base = {reg: await self.ctl.read(reg) for reg in regs}
        for reg, word in sorted(_pack(values, base).items()):
            await self.write_reg(reg, word)

    async def apply_profile(self, profile, *, seed=1):
        """Program every behaviour knob of ``profile`` (a :class:`Profile` or its name)."""
        if isinstance(profile, str):
            profile = profile_by_name(profile)
        await self.set_fields(**profile_fields(profile, width=await self.bus_width(), seed=seed))

    async def set_windows(self, *, mem=None, io=None, io_ram_offset=0, config=None,
                          claim_all=None):
        """Open the decode windows: ``mem``/``io`` = (base, size) in bytes (size a power of
        two; None leaves it, (0, 0) closes it); ``config`` = True/False answers type-0
        configuration cycles; ``claim_all`` makes a subtractive target take every memory
        and I/O command nobody else claimed."""
        values = {}
        if mem is not None:
            values.update(mem_base=mem[0], mem_size=mem[1])
        if io is not None:
            values.update(io_base=io[0], io_size=io[1], io_ram_offset=io_ram_offset)
        if config is not None:
            values["config_enable"] = int(config)
        if claim_all is not None:
            values["claim_all"] = int(claim_all)
        await self.set_fields(**values)

    async def inject(self, *knobs, bad_par_phase=None):
        """Set exactly these error-injection knobs (:class:`Knob` members or names); none
        clears them all. ``bad_par_phase`` picks the data phase for BAD_PAR/BAD_PAR64."""
        bits = 0
        for k in knobs:
            bits |= 1 << (Knob[k.upper()] if isinstance(k, str) else Knob(k))
        if bad_par_phase is not None:
            await self.set_fields(bad_par_phase=bad_par_phase)
        await self.write_reg(Reg.INJECT, bits)

    async def stats(self):
        """Statistics counters: ``{name: count}``."""
        return {name: await self.ctl.read(reg) for reg, name in STATS.items()}

    async def clear_stats(self):
        for reg in STATS:
            await self.ctl.write(reg, 0)

    async def status(self):
        """The PCI Status register (error bits and DEVSEL timing)."""
        return await self.ctl.read(Reg.STATUS)

    async def events(self):
        return await self.ctl.read(Reg.EVENT)

    async def clear_events(self, bits=0xFFFF_FFFF):
        await self.ctl.write(Reg.EVENT, bits)

    async def wait_event(self, **kwargs):
        await self.ctl.wait_event(**kwargs)

    def _backdoor_array(self):
        handle = getattr(self.ctl, "backdoor", None)
        if handle is None:
            return None
        for part in self.BACKDOOR_PATH:
            handle = getattr(handle, part)
        return handle

    async def backdoor_read(self, addr, n):
        """``n`` bytes of storage from byte ``addr``."""
        array = self._backdoor_array()
        first, last = addr // 4, (addr + n + 3) // 4
        words = []
        if array is not None:
            per = await self.bus_width() // 32
            for dw in range(first, last):
                value = int(array[dw // per].value)
                words.append((value >> (32 * (dw % per))) & 0xFFFF_FFFF)
        else:
            await self.ctl.write(Reg.BD_ADDR, first)
            for _ in range(first, last):
                words.append(await self.ctl.read(Reg.BD_DATA))
        raw = b"".join(w.to_bytes(4, "little") for w in words)
        return raw[addr - 4 * first:addr - 4 * first + n]

    async def backdoor_write(self, addr, data):
        """Write ``data`` (bytes) into the storage from byte ``addr``."""
        data = bytes(data)
        first, last = addr // 4, (addr + len(data) + 3) // 4
        head = addr - 4 * first
        raw = bytearray(await self.backdoor_read(4 * first, 4 * (last - first))) \
            if (head or len(data) % 4) else bytearray(4 * (last - first))
        raw[head:head + len(data)] = data
        words = [int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw), 4)]
        array = self._backdoor_array()
        if array is not None:
            # Merge DWORDs per storage cell first and write each cell once: a backdoor
            # write lands only at the end of the time step, so reading a cell back to merge
            # its other half would see the old value and undo the first write.
            per = await self.bus_width() // 32
            cells = {}
            for i, w in enumerate(words):
                dw = first + i
                index = dw // per
                if index not in cells:
                    cells[index] = int(array[index].value) if per > 1 else 0
                shift = 32 * (dw % per)
                cells[index] = (cells[index] & ~(0xFFFF_FFFF << shift)) | (w << shift)
            for index, value in cells.items():
                array[index].value = value
        else:
            await self.ctl.write(Reg.BD_ADDR, first)
            for w in words:
                await self.ctl.write(Reg.BD_DATA, w)
