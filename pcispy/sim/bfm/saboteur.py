# SPDX-License-Identifier: BSD-2-Clause
"""A saboteur on the simulated bus: an agent that breaks the driver rules on command.

The bus resolver (:mod:`pcispy.sim.bfm.resolver`) judges who drives each line
(:data:`~pcispy.pci.rules.DRIVER_RULES`); to prove each of its rules, something
has to break exactly that rule and nothing else. The saboteur does, as three agents on the
resolver:

- ``bus``, a master on the arbiter: it can request the bus whenever GNT# is not on it (a
  master that wants the bus parked on itself, under a park-on-last arbiter), or all the
  time (it keeps the bus under any arbiter until it lets go), and when parked (GNT# asserted, FRAME#
  and IRDY# deasserted, RST# deasserted, as sampled) it drives AD[31:0] and C/BE#[3:0] after
  a chosen number of parked clocks, then PAR, as :class:`ParkMode` says: correctly (PAR one
  clock after AD, with the parity of the AD and C/BE# of the clock before), not at all, AD
  and C/BE# without PAR, or PAR in the same clocks as AD (one clock early, released one
  clock early). It floats everything the clock after it samples GNT# deasserted, the bus
  busy or RST# asserted.
- ``chan_a`` and ``chan_b``, two independent channels: each drives one chosen line
  (:func:`~pcispy.sim.bfm.resolver.shared_lines` index) with a chosen value (inside level:
  1 asserts an active-low line) for a chosen number of clocks, starting a chosen delay
  after its trigger: at once, the first idle clock (FRAME# and IRDY# deasserted), the
  first idle clock after a busy one, or the first clock RST# is asserted. Both are armed by
  one register write, so they can play agents A and B of one fault.

Every register is reset-less (the system runs it on the bus clock without the bus reset):
what it was told survives RST#, so a channel can drive while RST# is asserted. Its
outputs are registered or come from registers only: it answers the bus a clock after it
samples it, as a real agent does.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from pcispy.pci.bus import PCIBusSignature
from pcispy.sim.bfm.gate import Gate
from pcispy.sim.bfm.resolver import shared_lines
from pcispy.sim.control import (ControlRegisters, ControlSignature, ControlField, ControlRegister,
                                register_reads, register_writes, written)

__all__ = ["Saboteur", "SaboteurDriver", "SaboteurReg", "REGISTERS", "channel_register",
           "ParkMode", "Request", "Trigger", "CHANNELS"]

#: Independent channels (``chan_a``, ``chan_b``).
CHANNELS = 2


class Request:
    """When the saboteur asserts REQ# (:attr:`SaboteurReg.REQUEST`); never during RST#."""
    NEVER = 0
    UNTIL_GRANTED = 1  # whenever GNT# is not on it
    HOLD = 2           # always (a master that never starts keeps a granted bus)


class ParkMode:
    """What the saboteur drives while parked (:attr:`SaboteurReg.PARK_MODE`)."""
    NOTHING = 0     # leaves AD, C/BE# and PAR floating
    CORRECT = 1     # AD and C/BE#, then PAR one clock later with their parity
    NO_PAR = 2      # AD and C/BE#, never PAR
    PAR_WITH_AD = 3  # PAR in the same clocks as AD (starts and stops a clock early)


class Trigger:
    """When an armed channel starts counting its delay (its ``TRIGGER_c`` register)."""
    NOW = 0           # the clock after it is armed
    IDLE = 1          # the first clock FRAME# and IRDY# are deasserted (maybe at once)
    IDLE_AFTER_BUSY = 2  # the first idle clock after one with FRAME# or IRDY# asserted
    RESET = 3         # the first clock RST# is asserted


#: Where the channels' registers start, and how far apart (channel ``c``'s register
#: ``NAME`` is ``NAME_c``: :func:`channel_register`).
CHANNEL_BASE = 8
CHANNEL_STRIDE = 8


def _channel_registers(index):
    """The registers of channel ``index``."""
    base = CHANNEL_BASE + CHANNEL_STRIDE * index
    return [
        ControlRegister(f"LINE_{index}", base + 0, doc="the line (index into shared_lines)"),
        ControlRegister(f"VALUE_{index}", base + 1,
                        doc="the value it drives (inside level, low bits)"),
        ControlRegister(f"TRIGGER_{index}", base + 2, doc="Trigger"),
        ControlRegister(f"DELAY_{index}", base + 3,
                        doc="clocks between the trigger and the first driven one"),
        ControlRegister(f"CLOCKS_{index}", base + 4, doc="clocks it drives"),
    ]


#: The control-port registers of :class:`Saboteur`.
REGISTERS = ControlRegisters("SaboteurReg", [
    ControlRegister("REQUEST", 0, doc="Request"),
    ControlRegister("PARK_MODE", 1, doc="ParkMode"),
    ControlRegister("PARK_DELAY", 2,
                    doc="parked clocks before it drives AD/C/BE# (1..255; 0 reads as 1)"),
    ControlRegister("PARK_AD", 3, doc="the AD[31:0] it parks with"),
    ControlRegister("PARK_CBE", 4, doc="the C/BE#[3:0] it parks with (pin levels)"),
    ControlRegister("ARM", 5, (
        ControlField("arm", 0, CHANNELS, "bit c arms channel c (both at once with 0b11)"),
        ControlField("stop", 8, CHANNELS, "bit c stops channel c (disarmed, not driving)"),
    ), doc="write only"),
    ControlRegister("STATUS", 6, (
        ControlField("busy", 0, CHANNELS, "bit c: channel c armed or running"),
        ControlField("ran", 8, CHANNELS, "bit c: channel c ran since armed"),
    ), doc="read only"),
    ControlRegister("PARKED", 7,
                    doc="read: parked clocks so far (saturates at 255), 0 when not parked"),
    *(register for index in range(CHANNELS) for register in _channel_registers(index)),
])

#: Control-port register indices of :class:`Saboteur`.
SaboteurReg = REGISTERS.enum()


def channel_register(index, name):
    """The index of channel ``index``'s register ``name`` ("LINE", "VALUE", "TRIGGER",
    "DELAY", "CLOCKS")."""
    return SaboteurReg[f"{name}_{index}"]


class Saboteur(wiring.Component):
    """A master and two line channels that break the driver rules on command.

    Ports:
        bus (Out, PCIBusSignature(width)): the master: REQ#/GNT#, and AD, C/BE#, PAR when
            parked; reads RST#, FRAME#, IRDY# and GNT#.
        chan_a, chan_b (Out, PCIBusSignature(width)): the channels' drivers (each drives at
            most one line at a time; only their ``o``/``oe`` are used).
        ctl (Out, ControlSignature): :class:`SaboteurReg`; ``event`` is high when no
            channel is armed or running and one ran since it was last armed.

    Parameters:
        width: bus width (32 or 64).
        gated: run on a clock gated while it has nothing to do (a Verilator build only,
            :mod:`pcispy.sim.bfm.gate`): nothing requested, armed or running, GNT# not
            on it and no control-port access.
    """
    def __init__(self, width=32, *, gated=False):
        self.width = width
        self.gated = gated
        self.lines = shared_lines(width)
        super().__init__({
            "bus": Out(PCIBusSignature(width)),
            "chan_a": Out(PCIBusSignature(width)),
            "chan_b": Out(PCIBusSignature(width)),
            "ctl": Out(ControlSignature()),
        })

    def elaborate(self, platform):
        top = Module()          # the clock gate and what must see every clock
        m = Module()            # the rest, on the gated clock
        bus, ctl = self.bus, self.ctl
        rst = bus.rst.i
        idle = ~bus.frame.i & ~bus.irdy.i

        # --- the master --------------------------------------------------------------
        request = Signal(2)
        park_mode = Signal(2)
        park_delay = Signal(8, init=1)
        park_ad = Signal(32)
        park_cbe = Signal(4)
        parked = Signal(8)        # parked clocks up to the last one
        req = Signal()
        m.d.sync += req.eq(((request == Request.HOLD)
                            | ((request == Request.UNTIL_GRANTED) & ~bus.gnt.i)) & ~rst)
        m.d.comb += [bus.req.o.eq(req), bus.req.oe.eq(req)]
        parked_now = bus.gnt.i & idle & ~rst
        m.d.sync += parked.eq(Mux(parked_now, Mux(parked == 255, 255, parked + 1), 0))
        drives_ad = Signal()
        m.d.comb += drives_ad.eq((parked != 0) & (parked >= Mux(park_delay == 0, 1, park_delay))
                                 & (park_mode != ParkMode.NOTHING))
        par_late = Signal()
        par_value = Signal()
        m.d.sync += [par_late.eq(drives_ad & (park_mode == ParkMode.CORRECT) & ~rst),
                     par_value.eq((Cat(park_ad, park_cbe)).xor())]
        m.d.comb += [
            bus.ad.o.eq(Mux(drives_ad, park_ad, 0)), bus.ad.oe.eq(drives_ad),
            bus.cbe.o.eq(Mux(drives_ad, park_cbe, 0)), bus.cbe.oe.eq(drives_ad),
            bus.par.oe.eq(par_late | (drives_ad & (park_mode == ParkMode.PAR_WITH_AD))),
            bus.par.o.eq(Mux(bus.par.oe, par_value, 0)),
        ]

        # --- the channels ------------------------------------------------------------
        armed = Signal(CHANNELS)
        running = Signal(CHANNELS)
        ran = Signal(CHANNELS)
        registers = {
            SaboteurReg.REQUEST: request, SaboteurReg.PARK_MODE: park_mode,
            SaboteurReg.PARK_DELAY: park_delay, SaboteurReg.PARK_AD: park_ad,
            SaboteurReg.PARK_CBE: park_cbe,
        }
        prev_busy = Signal()
        top.d.sync += prev_busy.eq(~idle)
        arm_register = REGISTERS["ARM"]
        arming = written(ctl, SaboteurReg.ARM)
        arm = arm_register.field("arm").get(ctl.w_data)
        stop = arm_register.field("stop").get(ctl.w_data)
        for index, port in enumerate((self.chan_a, self.chan_b)):
            line = Signal(8, name=f"line_{index}")
            value = Signal(32, name=f"value_{index}")
            trigger = Signal(2, name=f"trigger_{index}")
            delay = Signal(16, name=f"delay_{index}")
            clocks = Signal(16, name=f"clocks_{index}")
            position = Signal(18, name=f"position_{index}")   # clocks since the trigger
            registers.update({
                channel_register(index, "LINE"): line,
                channel_register(index, "VALUE"): value,
                channel_register(index, "TRIGGER"): trigger,
                channel_register(index, "DELAY"): delay,
                channel_register(index, "CLOCKS"): clocks,
            })
            fired = Signal(name=f"fired_{index}")
            with m.Switch(trigger):
                with m.Case(Trigger.NOW):
                    m.d.comb += fired.eq(1)
                with m.Case(Trigger.IDLE):
                    m.d.comb += fired.eq(idle)
                with m.Case(Trigger.IDLE_AFTER_BUSY):
                    m.d.comb += fired.eq(idle & prev_busy)
                with m.Case(Trigger.RESET):
                    m.d.comb += fired.eq(rst)
            with m.If(arming & stop[index]):
                m.d.sync += [armed[index].eq(0), running[index].eq(0)]
            with m.Elif(arming & arm[index]):
                m.d.sync += [armed[index].eq(1), running[index].eq(0), ran[index].eq(0)]
            with m.Elif(armed[index] & fired):
                m.d.sync += [armed[index].eq(0), running[index].eq(1), position.eq(1)]
            with m.Elif(running[index]):
                m.d.sync += position.eq(position + 1)
                with m.If(position >= delay + clocks):
                    m.d.sync += [running[index].eq(0), ran[index].eq(1)]
            active = running[index] & (position > delay) & (position <= delay + clocks)
            for number, (name, bits) in enumerate(self.lines.items()):
                mine = Signal(name=f"chan{index}_{name}")
                m.d.comb += mine.eq(active & (line == number))
                m.d.comb += [getattr(port, name).oe.eq(mine),
                             getattr(port, name).o.eq(Mux(mine, value[:bits], 0))]

        # --- control port ------------------------------------------------------------
        register_writes(m, ctl, registers)
        status = Signal(REGISTERS["STATUS"].layout)
        m.d.comb += [status.busy.eq(armed | running), status.ran.eq(ran)]
        readable = dict(registers)
        readable[SaboteurReg.STATUS] = status.as_value()
        readable[SaboteurReg.PARKED] = parked
        register_reads(m, ctl, readable)
        m.d.comb += ctl.event.eq(~(armed | running).any() & ran.any())

        # Asleep, every register holds: REQ# stays deasserted, the parked count at 0 (GNT#
        # is not on it), no channel moves and no PAR is pending.
        access = ctl.w_en | ctl.r_en
        bus_wake = ((request != Request.NEVER) | req | bus.gnt.i | (parked != 0) | par_late
                    | armed.any() | running.any())
        Gate(top, gated=self.gated).add(m, access | bus_wake, bus_wake, access)
        return top


class SaboteurDriver:
    """Python side of :class:`Saboteur`, over a control accessor (``read``/``write``).

    ``width`` names the bus width, for line names (:func:`shared_lines`)."""

    def __init__(self, ctl, width=32):
        self.ctl = ctl
        self.lines = list(shared_lines(width))

    async def park(self, mode=ParkMode.CORRECT, *, request=Request.UNTIL_GRANTED, delay=1,
                   ad=0, cbe=0):
        """Say what to drive when parked (:class:`ParkMode`), after ``delay`` parked
        clocks, with ``ad``/``cbe`` (set before the mode), and when to request the bus
        (:class:`Request`)."""
        await self.ctl.write(SaboteurReg.PARK_AD, ad)
        await self.ctl.write(SaboteurReg.PARK_CBE, cbe)
        await self.ctl.write(SaboteurReg.PARK_DELAY, delay)
        await self.ctl.write(SaboteurReg.PARK_MODE, mode)
        await self.request(request)

    async def request(self, when=Request.UNTIL_GRANTED):
        """When to assert REQ# (:class:`Request`)."""
        await self.ctl.write(SaboteurReg.REQUEST, when)

    async def parked_clocks(self):
        return await self.ctl.read(SaboteurReg.PARKED)

    async def channel(self, index, line, value=0, *, clocks=1, delay=0, trigger=Trigger.NOW):
        """Set channel ``index`` (0: agent saboteur_a, 1: saboteur_b) to drive ``line`` (a
        name of :func:`shared_lines`) with ``value`` for ``clocks`` clocks, ``delay``
        clocks after its ``trigger`` (:class:`Trigger`); :meth:`arm` starts it."""
        for name, word in (("LINE", self.lines.index(line)), ("VALUE", value),
                           ("TRIGGER", trigger), ("DELAY", delay), ("CLOCKS", clocks)):
            await self.ctl.write(channel_register(index, name), word)

    async def arm(self, *indices):
        """Arm the channels ``indices`` in the same clock (all with none given)."""
        indices = indices or range(CHANNELS)
        await self.ctl.write(SaboteurReg.ARM, REGISTERS["ARM"].pack(
            arm=sum(1 << index for index in indices)))

    async def stop(self):
        """Disarm both channels and stop them driving."""
        await self.ctl.write(SaboteurReg.ARM, REGISTERS["ARM"].pack(stop=(1 << CHANNELS) - 1))

    async def quiet(self):
        """Back to doing nothing: channels stopped, no request, nothing driven when
        parked (its settings survive RST#, so a bench that used it says so)."""
        await self.stop()
        await self.park(ParkMode.NOTHING, request=Request.NEVER)

    async def status(self):
        """``(busy, ran)``: bit masks of the channels armed or running, and of those
        that ran since they were armed."""
        status = REGISTERS["STATUS"].unpack(await self.ctl.read(SaboteurReg.STATUS))
        return status["busy"], status["ran"]

    async def wait_done(self, timeout=100_000):
        """Wait until every armed channel has run."""
        await self.ctl.wait_event(timeout=timeout)
