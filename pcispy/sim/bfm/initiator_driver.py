# SPDX-License-Identifier: BSD-2-Clause
"""The Python side of the behavioural initiator (pcispy/sim/bfm/initiator.py):
:class:`InitiatorDriver` queues commands through the control port and collects their
results, ``async``, over a control accessor such as :class:`pcispy.sim.control.PysimControl`
or the cocotb twin in :mod:`pcispy.sim.api`.
"""

from dataclasses import dataclass

from pcispy.pci.bus import Command
from pcispy.sim.bfm.initiator_control import (BUFFER_PATH, REGISTERS, STATUS_BUSY,
                                              STATUS_CONFIG_REFUSED, STATUS_QUEUE_FULL,
                                              STATUS_RESULT, Outcome, Reg)

__all__ = ["InitiatorDriver", "InitiatorResult", "InitiatorCommand"]


@dataclass
class InitiatorResult:
    """What one command did (the RESULT record, decoded), plus the data of reads.

    ``value`` is the DWORD (config) or the bytes shifted down (I/O) of single reads;
    ``data`` holds the bytes of memory reads.

    ``latency`` is counted in the transaction that first saw TRDY#: the clocks from its
    address phase to that TRDY# (2 when TRDY# comes in the third clock, as a
    medium-decode target without wait states gives it). Attempts the target retried before it
    (STOP# without TRDY#) are not in it, so for a retried read it is the last attempt's
    latency, not the time the command waited for its first data; that time is in
    ``clocks`` (the whole command), and ``retries`` says how many attempts came first.
    """
    status: Outcome
    ack64: bool
    perr: int
    phases: int
    dwords: int
    transactions: int
    retries: int
    disconnects: int
    lt_ends: int
    clocks: int
    latency: int
    last_data: int
    data: bytes = None
    value: int = None

    @property
    def ok(self):
        return self.status == Outcome.OK

    @classmethod
    def from_words(cls, words):
        raw = 0
        for i, word in enumerate(words):
            raw |= word << (32 * i)
        fields = REGISTERS["RESULT"].unpack(raw)
        fields["status"] = Outcome(fields["status"])
        fields["ack64"] = bool(fields["ack64"])
        return cls(**fields)


@dataclass
class InitiatorCommand:
    """A queued command: its sequence number and what :meth:`InitiatorDriver.wait` must
    fetch and decode once it has finished."""
    seq: int
    fields: dict
    read_bytes: tuple = None     # (first byte in the buffer, byte count) of a read
    value_shift: int = None      # single reads: shift/size of the returned value
    value_size: int = None


def _byte_enables(offset, count):
    """C/BE# (pin level) for ``count`` bytes starting at byte ``offset`` of a DWORD."""
    mask = ((1 << count) - 1) << offset
    return ~mask & 0xF


def _span(addr, size):
    """DWORD span of ``size`` bytes at ``addr``: (first DWORD address, DWORDs, C/BE# of the
    first, C/BE# of the last)."""
    if size <= 0:
        raise ValueError("a transfer needs at least one byte")
    start, end = addr & ~3, addr + size
    dwords = (end - start + 3) // 4
    first_bytes = min(end, start + 4) - addr
    be_first = _byte_enables(addr & 3, first_bytes)
    last_bytes = end - ((end - 1) & ~3)
    be_last = _byte_enables(0, last_bytes) if dwords > 1 else be_first
    return start, dwords, be_first, be_last


class InitiatorDriver:
    """Python-side driver of a :class:`BehaviouralInitiator`.

    ``ctl`` is a control accessor (``await ctl.write(reg, v)``, ``await ctl.read(reg)``,
    ``await ctl.wait_event()``). When it has a ``backdoor`` attribute (the cocotb handle
    of the initiator instance), the buffer is reached directly through
    :data:`BUFFER_PATH`; otherwise through ``Reg.BUF_ADDR``/``Reg.BUF_DATA``.

    Every operation has a blocking form (``mem_write``) and a non-blocking one
    (``submit_mem_write`` returning a handle for :meth:`wait`). Results come back in
    order; :meth:`wait` keeps results of other handles until they are asked for.

    Memory commands stage their data in the initiator's buffer at ``buf_off`` (DWORDs;
    default 0, or 1 for 64-bit transfers from an odd DWORD address so that buffer and bus
    pairs line up). Memory commands in flight at the same time need distinct ``buf_off``
    ranges. Extra keyword arguments are COMMAND fields (``wait_first``, ``wait_next``,
    ``wait_rand``, ``idle``, ``burst``, ...).
    """

    def __init__(self, ctl, *, width=32):
        self.ctl = ctl
        self.width = width
        self._next_seq = 0
        self._collected = 0
        self._results = {}

    # -- settings --------------------------------------------------------------------
    async def configure(self, *, lat_timer=0xFF, perr_enable=False, cache_line=0,
                        retry_limit=None, seed=None):
        """Latency Timer (clocks), PERR# on read parity errors, Cache Line Size (DWORDs,
        used by Memory Write and Invalidate), retry limit, LFSR seed. Raises ValueError
        when the initiator refuses the settings (they are then left as they were)."""
        await self.ctl.write(Reg.CONFIG, REGISTERS["CONFIG"].pack(
            lat_timer=lat_timer, perr_enable=perr_enable, cache_line=cache_line))
        if (await self.ctl.read(Reg.STATUS)) & STATUS_CONFIG_REFUSED:
            await self.ctl.write(Reg.STATUS, STATUS_CONFIG_REFUSED)
            raise ValueError(f"the initiator refused cache line size {cache_line} "
                             "(0 or a power of two)")
        if retry_limit is not None:
            await self.ctl.write(Reg.RETRY_LIMIT, retry_limit)
        if seed is not None:
            await self.ctl.write(Reg.SEED, seed)

    async def inject(self, **knobs):
        """Enable error-injection knobs by INJECT field name (all others off)."""
        await self.ctl.write(Reg.INJECT, REGISTERS["INJECT"].pack(**knobs))

    async def status(self):
        return await self.ctl.read(Reg.STATUS)

    # -- buffer --------------------------------------------------------------------
    def _storage(self):
        node = self.ctl.backdoor
        for name in BUFFER_PATH:
            node = getattr(node, name)
        return node

    async def buffer_write(self, dword, words):
        """Write 32-bit ``words`` into the buffer from DWORD index ``dword`` on."""
        words = list(words)
        if getattr(self.ctl, "backdoor", None) is not None:
            storage = self._storage()
            if self.width == 32:
                for i, word in enumerate(words):
                    storage[dword + i].value = word
            else:
                # Whole 64-bit words, each written once: a backdoor write only lands at the
                # end of the time step, so a second read-modify-write would undo the first.
                pairs = {}
                for i, word in enumerate(words):
                    index, lane = divmod(dword + i, 2)
                    pairs.setdefault(index, {})[lane] = word
                for index, lanes in pairs.items():
                    value = int(storage[index].value) if len(lanes) < 2 else 0
                    for lane, word in lanes.items():
                        value = (value & ~(0xFFFF_FFFF << (32 * lane))) | (word << (32 * lane))
                    storage[index].value = value
            return
        await self._until_idle()
        await self.ctl.write(Reg.BUF_ADDR, dword)
        for word in words:
            await self.ctl.write(Reg.BUF_DATA, word)

    async def buffer_read(self, dword, count):
        """Read ``count`` 32-bit words of the buffer from DWORD index ``dword`` on."""
        if getattr(self.ctl, "backdoor", None) is not None:
            storage = self._storage()
            if self.width == 32:
                return [int(storage[dword + i].value) for i in range(count)]
            out = []
            for i in range(count):
                index, lane = divmod(dword + i, 2)
                out.append((int(storage[index].value) >> (32 * lane)) & 0xFFFF_FFFF)
            return out
        await self._until_idle()
        await self.ctl.write(Reg.BUF_ADDR, dword)
        return [await self.ctl.read(Reg.BUF_DATA) for _ in range(count)]

    async def _until_idle(self):
        # The register path to the buffer is closed while commands are queued or run;
        # results are collected meanwhile so a full result FIFO cannot stall the engine.
        while True:
            status = await self.ctl.read(Reg.STATUS)
            if not status & STATUS_BUSY:
                return
            if status & STATUS_RESULT:
                await self._collect()

    # -- commands --------------------------------------------------------------------
    async def submit(self, code, addr, length, *, read_bytes=None, value_shift=None,
                     value_size=None, **fields):
        """Queue one command (COMMAND fields by name); returns its handle."""
        code = Command(code)
        fields = dict(fields, code=code.value, addr=addr, length=length)
        raw = REGISTERS["CMD"].pack(**fields)
        while (await self.ctl.read(Reg.STATUS)) & STATUS_QUEUE_FULL:
            await self._collect()
        for word in range(REGISTERS["CMD"].words):
            await self.ctl.write(Reg.CMD + word, (raw >> (32 * word)) & 0xFFFF_FFFF)
        await self.ctl.write(Reg.PUSH, 0)
        handle = InitiatorCommand(self._next_seq, fields, read_bytes, value_shift, value_size)
        self._next_seq += 1
        return handle

    async def _collect(self):
        await self.ctl.wait_event()
        words = [await self.ctl.read(Reg.RESULT + i) for i in range(REGISTERS["RESULT"].words)]
        await self.ctl.write(Reg.POP, 0)
        self._results[self._collected] = InitiatorResult.from_words(words)
        self._collected += 1

    async def wait(self, handle):
        """Wait for the command of ``handle`` to finish; return its :class:`InitiatorResult`."""
        while handle.seq not in self._results:
            await self._collect()
        result = self._results.pop(handle.seq)
        if handle.read_bytes is not None:
            first, count = handle.read_bytes
            words = await self.buffer_read(first // 4, (first % 4 + count + 3) // 4)
            raw = b"".join(w.to_bytes(4, "little") for w in words)
            result.data = raw[first % 4:first % 4 + count]
        if handle.value_shift is not None:
            mask = (1 << (8 * handle.value_size)) - 1
            result.value = (result.last_data >> (8 * handle.value_shift)) & mask
        return result

    async def run(self, code, addr, length, **fields):
        return await self.wait(await self.submit(code, addr, length, **fields))

    # -- configuration space -----------------------------------------------------------
    @staticmethod
    def config_address(slot, register, function=0):
        """Type 0 address: IDSEL of ``slot`` is AD[16+slot]; AD[10:8] function; AD[7:2]
        the DWORD register of byte offset ``register``; AD[1:0] = 00."""
        if not 0 <= slot < 16 or not 0 <= function < 8 or not 0 <= register < 256:
            raise ValueError(f"no configuration address for slot {slot}, function {function}, "
                             f"register {register:#x}")
        return (1 << (16 + slot)) | (function << 8) | (register & 0xFC)

    async def submit_config_read(self, slot, register, *, function=0, **fields):
        return await self.submit(Command.CONFIG_READ, self.config_address(slot, register, function),
                                 1, value_shift=0, value_size=4, **fields)

    async def config_read(self, slot, register, *, function=0, **fields):
        """Read the configuration DWORD holding byte ``register``; ``result.value``."""
        return await self.wait(await self.submit_config_read(slot, register, function=function,
                                                             **fields))

    async def submit_config_write(self, slot, register, value, *, function=0, be=0, **fields):
        return await self.submit(Command.CONFIG_WRITE, self.config_address(slot, register, function),
                                 1, imm=1, imm_data=value, be_first=be, **fields)

    async def config_write(self, slot, register, value, *, function=0, be=0, **fields):
        """Write ``value`` to the configuration DWORD holding byte ``register`` (C/BE#=``be``)."""
        return await self.wait(await self.submit_config_write(slot, register, value,
                                                              function=function, be=be, **fields))

    # -- I/O space --------------------------------------------------------------------
    @staticmethod
    def _io_check(addr, size):
        if size not in (1, 2, 3, 4) or (addr & 3) + size > 4:
            raise ValueError(f"an I/O access of {size} bytes at {addr:#x} crosses a DWORD")

    async def submit_io_read(self, addr, size=1, **fields):
        self._io_check(addr, size)
        return await self.submit(Command.IO_READ, addr, 1, be_first=_byte_enables(addr & 3, size),
                                 value_shift=addr & 3, value_size=size, **fields)

    async def io_read(self, addr, size=1, **fields):
        """Read ``size`` bytes at I/O ``addr`` (AD[1:0] = the byte address); ``result.value``."""
        return await self.wait(await self.submit_io_read(addr, size, **fields))

    async def submit_io_write(self, addr, value, size=1, **fields):
        self._io_check(addr, size)
        return await self.submit(Command.IO_WRITE, addr, 1, imm=1,
                                 imm_data=(value << (8 * (addr & 3))) & 0xFFFF_FFFF,
                                 be_first=_byte_enables(addr & 3, size), **fields)

    async def io_write(self, addr, value, size=1, **fields):
        return await self.wait(await self.submit_io_write(addr, value, size, **fields))

    # -- memory space -----------------------------------------------------------------
    def _buf_dword(self, addr, buf_off):
        # 64-bit data phases need the buffer DWORD and the bus DWORD equally aligned.
        if buf_off is None:
            return (addr >> 2) & 1 if self.width == 64 else 0
        return buf_off

    async def submit_mem_write(self, addr, data, *, burst=0, width=32,
                               command=Command.MEM_WRITE, buf_off=None, **fields):
        data = bytes(data)
        start, dwords, be_first, be_last = _span(addr, len(data))
        buf = self._buf_dword(start, buf_off)
        padded = bytes(addr & 3) + data + bytes(-(len(data) + (addr & 3)) % 4)
        await self.buffer_write(buf, [int.from_bytes(padded[i:i + 4], "little")
                                      for i in range(0, len(padded), 4)])
        return await self.submit(command, start, dwords, burst=burst, req64=int(width == 64),
                                 be_first=be_first, be_last=be_last, buf_off=buf, **fields)

    async def mem_write(self, addr, data, **kwargs):
        """Write ``data`` (bytes) at memory ``addr``; ``burst`` = most data phases per
        transaction (1: one data phase per store, no write aggregation; 0: no limit);
        ``width=64`` asks for REQ64#; ``command`` e.g. MEM_WRITE_INVALIDATE."""
        return await self.wait(await self.submit_mem_write(addr, data, **kwargs))

    async def submit_mem_read(self, addr, size, *, burst=0, width=32,
                              command=Command.MEM_READ, buf_off=None, **fields):
        start, dwords, be_first, be_last = _span(addr, size)
        buf = self._buf_dword(start, buf_off)
        return await self.submit(command, start, dwords, burst=burst, req64=int(width == 64),
                                 be_first=be_first, be_last=be_last, buf_off=buf,
                                 read_bytes=(4 * buf + (addr & 3), size), **fields)

    async def mem_read(self, addr, size, **kwargs):
        """Read ``size`` bytes at memory ``addr``; ``result.data`` holds them."""
        return await self.wait(await self.submit_mem_read(addr, size, **kwargs))
