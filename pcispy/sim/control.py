# SPDX-License-Identifier: BSD-2-Clause
"""How Python reaches the simulated bus agents without running on every PCI clock.

Every agent of the simulated system has one *control port*: a bank of 32-bit registers that
the cocotb side reads and writes one access per clock, plus an ``event`` line the agent
raises when it has something to report (a command finished, an interrupt arrived). Python
writes a command into an agent's registers, pokes a "go" register, and then sleeps until
``event`` rises: no Python runs while the bus moves data.

The system top-level multiplexes the control ports of all agents onto one set of top-level
ports (``ctl_sel`` picks the agent), see :mod:`pcispy.sim.system`.

Timing of one access (the agent's view, all in its clock domain):

- write: ``addr``, ``w_data`` and ``w_en`` are valid for one clock; the agent takes them at
  that clock edge.
- read: ``addr`` is presented; ``r_data`` must hold the register's value from the next clock
  on (agents may register the read mux). ``r_en`` pulses in the clock ``addr`` is presented,
  for registers with side effects on read (e.g. popping a response FIFO).

The register idiom of every agent: its registers are declared once, as a
:class:`ControlRegisters` list of :class:`ControlRegister` (an index, maybe several consecutive
words) with their :class:`ControlField` s, data declared in :mod:`pcispy.sim.control_registers`
(so the host side names the registers without Amaranth) and imported here with the rest of
the port. From that declaration come the register indices (an ``IntEnum``,
:meth:`ControlRegisters.enum`), the Amaranth layout of a register's value
(:attr:`ControlRegister.layout`), the read mux (:func:`register_reads` with
:meth:`ControlRegister.slices`), and the Python driver's packing (:meth:`ControlRegister.pack`,
:meth:`ControlRegister.unpack`). The idea is the board's (:mod:`pcispy.csr.map`); the agents'
registers are their own.
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.sim.control_registers import (CONTROL_ADDR_BITS, ControlField, ControlRegister,
                                          ControlRegisters)

__all__ = ["ControlSignature", "CONTROL_ADDR_BITS", "PysimControl", "register_reads",
           "register_writes", "written", "ControlField", "ControlRegister", "ControlRegisters"]


class ControlSignature(wiring.Signature):
    """An agent's control port, from the agent's side: declare it ``ctl:
    Out(ControlSignature())`` (``In`` would flip every member).

    Members:
        addr (In, 10): register index.
        w_data (In, 32): value to write.
        w_en (In, 1): write ``w_data`` to ``addr`` at this clock.
        r_en (In, 1): ``addr`` is being read (for read side effects).
        r_data (Out, 32): value of the register at ``addr``, one clock later.
        event (Out, 1): the agent has something to report; level, cleared through a register.
    """
    def __init__(self):
        super().__init__({
            "addr":   In(CONTROL_ADDR_BITS),
            "w_data": In(32),
            "w_en":   In(1),
            "r_en":   In(1),
            "r_data": Out(32),
            "event":  Out(1),
        })


def written(ctl, index):
    """High in the clock the control port writes register ``index``."""
    return ctl.w_en & (ctl.addr == index)


def register_writes(m, ctl, writable):
    """Plain read/write registers: a control write to ``index`` loads ``writable[index]``
    (a signal, or a slice of one) with ``w_data`` (truncated to its width)."""
    with m.If(ctl.w_en):
        with m.Switch(ctl.addr):
            for index, target in writable.items():
                with m.Case(index):
                    m.d.sync += target.eq(ctl.w_data)


def register_reads(m, ctl, readable, r_data=None):
    """An agent's read mux: ``ctl.r_data`` takes the value of ``readable[ctl.addr]`` at the
    clock edge (so it holds from the next clock on, as the access timing above allows), 0
    for an address not in ``readable`` (``{register index: value}``). An agent that puts
    something in front of the mux gives the signal to load as ``r_data``."""
    r_data = ctl.r_data if r_data is None else r_data
    with m.Switch(ctl.addr):
        for address, value in readable.items():
            with m.Case(address):
                m.d.sync += r_data.eq(value)
        with m.Default():
            m.d.sync += r_data.eq(0)


class PysimControl:
    """Drive an agent's control port from an Amaranth Python-simulator testbench.

    The same driver code (``async`` methods calling :meth:`write`, :meth:`read`,
    :meth:`wait_event`) then runs in unit tests under :class:`amaranth.sim.Simulator` and
    in the Verilator system under cocotb (:class:`pcispy.sim.api.CocotbControl`).

    ``ctx`` is the testbench context, ``port`` the agent's ``ctl`` port (flipped view).
    """
    def __init__(self, ctx, port):
        self.ctx = ctx
        self.port = port

    async def write(self, addr, value):
        self.ctx.set(self.port.addr, addr)
        self.ctx.set(self.port.w_data, value & 0xFFFF_FFFF)
        self.ctx.set(self.port.w_en, 1)
        await self.ctx.tick()
        self.ctx.set(self.port.w_en, 0)

    async def read(self, addr):
        self.ctx.set(self.port.addr, addr)
        self.ctx.set(self.port.r_en, 1)
        await self.ctx.tick()
        self.ctx.set(self.port.r_en, 0)
        return self.ctx.get(self.port.r_data)

    async def wait_event(self, timeout=1_000_000):
        """Wait until ``event`` is high; raise TimeoutError after ``timeout`` clocks."""
        for _ in range(timeout):
            if self.ctx.get(self.port.event):
                return
            await self.ctx.tick()
        raise TimeoutError(f"no event from the agent within {timeout} clocks")

    async def clocks(self, count):
        """Let ``count`` clocks pass."""
        await self.ctx.tick().repeat(count)
