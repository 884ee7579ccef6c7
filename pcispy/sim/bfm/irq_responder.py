# SPDX-License-Identifier: BSD-2-Clause
"""The host's interrupt response, as a bus model: INTA# in, an acknowledge write out.

Models the software path from an interrupt to its handler: when INTA# (resolved, level)
is asserted, the responder draws a delay (fixed, or uniform in [min, max] from a seeded
LFSR: :class:`UniformDraw`), waits that many clocks, and has the host bridge's initiator
write a programmable value to a programmable address (the acknowledge, e.g. the device's
interrupt-clear register). Then it optionally makes up to four *checkpoint* writes, each a
programmable number of clocks after the acknowledge completed (the handler's later
steps). Each interrupt leaves one log entry (drawn delay and timestamps) readable through
the control port. INTA# is a level: the responder takes the next interrupt once INTA# has
been deasserted at least once since it took the last one, or when INTA# is still asserted
:data:`END_OF_INTERRUPT_CLOCKS` after the handler's last write completed (as a
level-sensitive interrupt controller delivers a line still asserted at the end of the
interrupt: the device raised a new interrupt before the acknowledge took effect).

The writes go through the initiator's priority command port
(:attr:`BehaviouralInitiator.prio`), so they never wait behind queued Python commands.
"""

from amaranth import Cat, Module, Mux, ResetSignal, Signal
from amaranth.lib import enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.bus import Command
from pcispy.pci.lfsr import lfsr_advance
from pcispy.sim.bfm.gate import Gate
from pcispy.sim.bfm.initiator_control import COMMAND, Outcome
from pcispy.sim.control import (ControlRegisters, ControlSignature, ControlField, ControlRegister,
                                register_reads, register_writes)

__all__ = ["InterruptResponder", "IrqReg", "REGISTERS", "IRQ_CONTROL", "LOG_ENTRY", "CHECKPOINTS",
           "END_OF_INTERRUPT_CLOCKS",
           "UniformDraw", "uniform_draws", "InterruptResponderDriver"]

#: Most checkpoint writes per interrupt.
CHECKPOINTS = 4

#: Clocks after the handler's last write at which a still-asserted INTA# is a new
#: interrupt: longer than a device takes to act on a posted acknowledge write.
END_OF_INTERRUPT_CLOCKS = 32

_LOG_DEPTH = 16

#: The control-port registers of :class:`InterruptResponder`.
REGISTERS = ControlRegisters("IrqReg", [
    ControlRegister("ID", 0x00, doc='read: ID_VALUE ("PCIQ")'),
    ControlRegister("CONTROL", 0x01, (
        ControlField("enable", 0, 1, "respond to INTA#"),
        ControlField("uniform", 1, 1,
                     "delay uniform in [DELAY_MIN, DELAY_MAX]; else fixed DELAY_MIN"),
        ControlField("checkpoints", 2, 3, "checkpoint writes per interrupt, 0..CHECKPOINTS"),
        ControlField("hold_cpu", 5, 1, "the host's CPU runs the handler: ``cpu_busy`` from "
                     "INTA# taken to the last write done"),
    ), doc="a checkpoint count above CHECKPOINTS is refused"),
    ControlRegister("STATUS", 0x02, (
        ControlField("busy", 0, 1),
        ControlField("refused", 1, 1, "a control write was refused (sticky; write 1 clears)"),
    )),
    ControlRegister("SEED", 0x03, doc="write: seed the LFSR (0 is taken as 1); read: its state"),
    ControlRegister("DELAY_MIN", 0x04),
    ControlRegister("DELAY_MAX", 0x05, doc="below DELAY_MIN is refused"),
    ControlRegister("ACK_ADDR_LO", 0x06),
    ControlRegister("ACK_ADDR_HI", 0x07),
    ControlRegister("ACK_VALUE", 0x08),
    ControlRegister("CKPT_ADDR_LO", 0x09),
    ControlRegister("CKPT_ADDR_HI", 0x0A),
    ControlRegister("CKPT_VALUE", 0x0B, doc="checkpoint k writes CKPT_VALUE + k"),
    ControlRegister("CKPT_OFFSET", 0x0C, words=CHECKPOINTS,
                    doc="word k: clocks after the acknowledge for checkpoint k"),
    ControlRegister("COUNT", 0x10, doc="read: interrupts seen"),
    ControlRegister("LOGGED", 0x11, doc="read: log entries written (the log keeps the last 16)"),
    ControlRegister("LOG_INDEX", 0x12, doc="which entry LOG reads (modulo 16)"),
    ControlRegister("LOG", 0x14, words=4, doc="the entry at LOG_INDEX", fields=(
        ControlField("delay", 0, 32,
                     "drawn delay: the acknowledge is requested at t_irq + delay (delay >= 2)"),
        ControlField("t_irq", 32, 32, "NOW when INTA# was seen asserted"),
        ControlField("t_ack", 64, 32, "NOW when the acknowledge write had completed"),
        ControlField("t_ckpt", 96, 32, "NOW when the last checkpoint write had completed "
                     "(t_ack if none)"),
    )),
    ControlRegister("SEEN", 0x18, doc="entries Python has handled; ``event`` = LOGGED != SEEN"),
    ControlRegister("NOW", 0x19, doc="read: the free-running clock counter"),
])

#: Control-port register indices of the interrupt responder.
IrqReg = REGISTERS.enum()

#: Layouts of ``IrqReg.CONTROL`` and of one log entry (``IrqReg.LOG``).
IRQ_CONTROL = REGISTERS["CONTROL"].layout
LOG_ENTRY = REGISTERS["LOG"].layout

ID_VALUE = 0x5043_4951

#: XORed into the seed when it is loaded. The board's interrupt generator runs the same
#: LFSR, and ``pcispy irq`` in simulation gives both the same seed by default: without
#: this, the delay drawn for interrupt k would be computed from the very word that sets
#: the generator's next gap, and the two would be fully correlated.
_SEED_MIX = 0x9E37_79B9
#: Generator steps per draw: a whole word, so no bit of one draw is reused in the next.
_STEPS_PER_DRAW = 32


def _seed_state(seed):
    """The generator state that writing ``seed`` to ``SEED`` loads (never 0)."""
    seed &= 0xFFFF_FFFF
    state = (seed or 1) ^ _SEED_MIX
    return state or 1


def uniform_draws(seed, low, high, count):
    """The first ``count`` values :class:`UniformDraw` gives after loading ``seed`` with
    the range ``[low, high]`` (a reference model, for tests and host-side prediction)."""
    n = high - low + 1 if high > low else 1
    state, out = _seed_state(seed), []
    for _ in range(count):
        state = lfsr_advance(state, _STEPS_PER_DRAW)
        out.append(low + (state * n >> 32))
    return out


class UniformDraw(wiring.Component):
    """Draws integers uniform in ``[low, high]`` from a seeded 32-bit LFSR (domain ``sync``).

    Ports:
        seed (In, 32): the seed that ``load`` takes.
        load (In, 1): load the generator from ``seed`` (0 is taken as 1; the seed is
            XORed with a constant first, see ``_SEED_MIX``). Wins over ``start``. Until
            the first load the generator is as if seeded with 1.
        state (Out, 32): the generator's state.
        start (In, 1): draw one value (may be held: one draw per clock).
        low (In, 32), high (In, 32): the range, inclusive; ``high <= low`` draws ``low``.
        value (Out, 32): the last value drawn; held until the next draw.
        valid (Out, 1): 1 in the clock after ``start`` (``value`` is the new draw).

    Each draw advances the LFSR by a whole word (32 steps, as one XOR network), so
    successive draws share no output bits, and takes the new 32-bit state ``w`` as a
    fraction of 2**32: ``value = low + (w * n >> 32)`` with ``n = high - low + 1``. A
    remainder (``w % n``) would favour small values by up to one part in
    ``floor(2**32 / n)``; redrawing a rejected, masked word a clock later would reuse 31
    of its bits, so the rejections would pile up on a few values. The multiply-high maps
    either ``floor(2**32 / n)`` or ``ceil(2**32 / n)`` words to each value, so no value's
    probability is off from 1/n by more than 2**-32 (relative error below n / 2**32:
    7e-8 for a span of 301 clocks); the LFSR never yielding the all-zero word costs
    ``low`` one word in 2**32 more. The values depend only on the seed and the ranges,
    not on when the draws are made; a draw takes one clock, so the delay never waits on
    the draw.
    """

    def __init__(self):
        super().__init__({
            "seed": In(32),
            "load": In(1),
            "state": Out(32, init=_seed_state(1)),
            "start": In(1),
            "low": In(32),
            "high": In(32),
            "value": Out(32),
            "valid": Out(1),
        })

    @staticmethod
    def _advance(value):
        """The state ``_STEPS_PER_DRAW`` steps on from ``value``: LFSR steps are linear
        over GF(2), so each output bit is the XOR of the input bits whose unit vectors
        reach it (found by stepping each unit vector in Python)."""
        images = [lfsr_advance(1 << i, _STEPS_PER_DRAW) for i in range(32)]
        bits = []
        for j in range(32):
            taps = [value[i] for i in range(32) if images[i] >> j & 1]
            bit = taps[0]
            for tap in taps[1:]:
                bit = bit ^ tap
            bits.append(bit)
        return Cat(*bits)

    def elaborate(self, platform):
        m = Module()
        word = Signal(32)
        n = Signal(33)
        m.d.comb += [
            word.eq(self._advance(self.state)),
            n.eq(Mux(self.high > self.low, self.high - self.low + 1, 1)),
        ]
        m.d.sync += self.valid.eq(0)
        with m.If(self.load):
            mixed = Signal(32)
            m.d.comb += mixed.eq(Mux(self.seed == 0, 1, self.seed) ^ _SEED_MIX)
            m.d.sync += self.state.eq(Mux(mixed == 0, 1, mixed))
        with m.Elif(self.start):
            m.d.sync += [
                self.state.eq(word),
                self.value.eq(self.low + (word * n)[32:65]),
                self.valid.eq(1),
            ]
        return m


class _State(enum.Enum, shape=3):
    ARMED = 0
    DRAW = 1
    DELAY = 2
    REQUEST = 3     # a write offered on ``cmd``
    WRITING = 4     # waiting for ``done``
    CKPT_WAIT = 5
    LOG = 6
    REARM = 7       # wait for INTA# to be deasserted


class InterruptResponder(wiring.Component):
    """Acknowledges INTA# through the host initiator after a drawn delay (domain ``sync``).

    Ports:
        inta (In, 1): INTA# as resolved on the bus, inside level (1 = asserted).
        cmd (Out, stream.Signature(COMMAND)): write commands for the initiator's ``prio``.
        done (In, 1): the initiator's ``prio_done`` (one clock per finished command).
        done_status (In, Outcome): the initiator's ``prio_status``.
        ctl (Out, ControlSignature): registers :class:`IrqReg`; ``event`` while log
            entries are newer than ``SEEN``.
        cpu_busy (Out, 1): with ``CONTROL.hold_cpu``, high from the interrupt taken to its
            last write done: the handler runs on the host's one CPU, which meanwhile
            issues nothing else (the simulated system holds the host's own accesses).

    The acknowledge and checkpoint writes are single-DWORD Memory Writes with all byte
    enables. Delays are counted in bus clocks.

    Parameters:
        gated: run on a clock gated while it has nothing to do (a Verilator build only,
            :mod:`pcispy.sim.bfm.gate`): armed with no interrupt to take (disabled, or
            INTA# deasserted and seen so), no control-port access. Its clock counter
            ``NOW`` counts every clock all the same.
    """

    def __init__(self, *, gated=False):
        self.gated = gated
        super().__init__({
            "inta": In(1),
            "cmd": Out(stream.Signature(COMMAND)),
            "done": In(1),
            "done_status": In(Outcome),
            "ctl": Out(ControlSignature()),
            "cpu_busy": Out(1),
        })

    def elaborate(self, platform):
        top = Module()          # the clock gate and the clock counter
        m = Module()            # the rest, on the gated clock
        ctl = self.ctl

        m.submodules.log = log = memory.Memory(shape=LOG_ENTRY, depth=_LOG_DEPTH, init=[])
        log_w = log.write_port()
        log_r = log.read_port(domain="comb")

        control = Signal(IRQ_CONTROL)
        refused = Signal()
        m.submodules.draw = draw = UniformDraw()
        now = Signal(32)
        delay_min = Signal(32)
        delay_max = Signal(32)
        ack_addr = Signal(64)
        ack_value = Signal(32)
        ckpt_addr = Signal(64)
        ckpt_value = Signal(32)
        ckpt_offset = [Signal(32, name=f"ckpt_offset{k}") for k in range(CHECKPOINTS)]
        count = Signal(32)
        logged = Signal(32)
        seen = Signal(32)
        log_index = Signal(range(_LOG_DEPTH))
        state = Signal(_State)

        top.d.sync += now.eq(now + 1)
        m.d.comb += ctl.event.eq(logged != seen)

        plain = {
            IrqReg.DELAY_MIN: delay_min, IrqReg.ACK_ADDR_LO: ack_addr[:32],
            IrqReg.ACK_ADDR_HI: ack_addr[32:], IrqReg.ACK_VALUE: ack_value,
            IrqReg.CKPT_ADDR_LO: ckpt_addr[:32], IrqReg.CKPT_ADDR_HI: ckpt_addr[32:],
            IrqReg.CKPT_VALUE: ckpt_value, IrqReg.SEEN: seen,
            **{IrqReg.CKPT_OFFSET + k: ckpt_offset[k] for k in range(CHECKPOINTS)},
        }
        register_writes(m, ctl, plain)
        with m.If(ctl.w_en):
            with m.Switch(ctl.addr):
                with m.Case(IrqReg.CONTROL):
                    new = IRQ_CONTROL(ctl.w_data[:IRQ_CONTROL.size])
                    with m.If(new.checkpoints > CHECKPOINTS):
                        m.d.sync += refused.eq(1)
                    with m.Else():
                        m.d.sync += control.eq(new)
                with m.Case(IrqReg.DELAY_MAX):
                    with m.If(ctl.w_data < delay_min):
                        m.d.sync += refused.eq(1)
                    with m.Else():
                        m.d.sync += delay_max.eq(ctl.w_data)
                with m.Case(IrqReg.STATUS):
                    with m.If(REGISTERS["STATUS"].field("refused").get(ctl.w_data)):
                        m.d.sync += refused.eq(0)
                with m.Case(IrqReg.SEED):
                    m.d.comb += draw.load.eq(1)
                with m.Case(IrqReg.LOG_INDEX):
                    m.d.sync += log_index.eq(ctl.w_data)

        m.d.comb += log_r.addr.eq(log_index)
        status = Signal(REGISTERS["STATUS"].layout)
        m.d.comb += [status.busy.eq(state != _State.ARMED), status.refused.eq(refused),
                     self.cpu_busy.eq(control.hold_cpu & (state != _State.ARMED)
                                      & (state != _State.REARM))]
        register_reads(m, ctl, {
            **plain,
            IrqReg.ID: ID_VALUE,
            IrqReg.CONTROL: control.as_value(),
            IrqReg.STATUS: status.as_value(),
            IrqReg.SEED: draw.state,
            IrqReg.DELAY_MAX: delay_max,
            IrqReg.COUNT: count,
            IrqReg.LOGGED: logged,
            IrqReg.LOG_INDEX: log_index,
            IrqReg.NOW: now,
            **REGISTERS["LOG"].slices(log_r.data),
        })

        # ---- response sequence ---------------------------------------------------------
        entry = Signal(LOG_ENTRY)
        ckpt = Signal(range(CHECKPOINTS + 1))
        writing_ack = Signal()
        m.d.comb += [draw.seed.eq(ctl.w_data), draw.low.eq(delay_min),
                     draw.high.eq(delay_max)]

        payload = self.cmd.payload
        m.d.comb += [
            payload.code.eq(Command.MEM_WRITE),
            payload.length.eq(1),
            payload.imm.eq(1),
            payload.addr.eq(Mux(writing_ack, ack_addr, ckpt_addr)),
            payload.imm_data.eq(Mux(writing_ack, ack_value, ckpt_value + ckpt)),
        ]
        ckpt_offset_now = Signal(32)
        with m.Switch(ckpt):
            for k in range(CHECKPOINTS):
                with m.Case(k):
                    m.d.comb += ckpt_offset_now.eq(ckpt_offset[k])

        # INTA# is a level: a new interrupt is one that was deasserted at some point after
        # the last one was taken (it may come back before this one's checkpoints are done).
        dropped = Signal()
        with m.If(~self.inta):
            m.d.sync += dropped.eq(1)

        with m.Switch(state):
            with m.Case(_State.ARMED):
                with m.If(control.enable & self.inta):
                    m.d.comb += draw.start.eq(control.uniform)
                    m.d.sync += [entry.t_irq.eq(now), count.eq(count + 1), dropped.eq(0),
                                 state.eq(_State.DRAW)]
            with m.Case(_State.DRAW):
                # A draw started with the interrupt (uniform delays) is ready now.
                m.d.sync += [entry.delay.eq(Mux(draw.valid, draw.value, delay_min)),
                             state.eq(_State.DELAY)]
            with m.Case(_State.DELAY):
                # Counted from t_irq, so the clock spent drawing is part of the delay.
                with m.If(now - entry.t_irq >= entry.delay):
                    m.d.sync += [writing_ack.eq(1), state.eq(_State.REQUEST)]
            with m.Case(_State.REQUEST):
                m.d.comb += self.cmd.valid.eq(1)
                with m.If(self.cmd.ready):
                    m.d.sync += state.eq(_State.WRITING)
            with m.Case(_State.WRITING):
                with m.If(self.done):
                    with m.If(writing_ack):
                        m.d.sync += [entry.t_ack.eq(now), entry.t_ckpt.eq(now), ckpt.eq(0),
                                     writing_ack.eq(0)]
                        with m.If(control.checkpoints != 0):
                            m.d.sync += state.eq(_State.CKPT_WAIT)
                        with m.Else():
                            m.d.sync += state.eq(_State.LOG)
                    with m.Else():
                        m.d.sync += [entry.t_ckpt.eq(now), ckpt.eq(ckpt + 1)]
                        with m.If(ckpt + 1 == control.checkpoints):
                            m.d.sync += state.eq(_State.LOG)
                        with m.Else():
                            m.d.sync += state.eq(_State.CKPT_WAIT)
            with m.Case(_State.CKPT_WAIT):
                with m.If(now - entry.t_ack >= ckpt_offset_now):
                    m.d.sync += state.eq(_State.REQUEST)
            with m.Case(_State.LOG):
                m.d.comb += [log_w.addr.eq(logged[:4]), log_w.data.eq(entry), log_w.en.eq(1)]
                m.d.sync += [logged.eq(logged + 1), state.eq(_State.REARM)]
            with m.Case(_State.REARM):
                # INTA# still asserted at the end of the interrupt is a new one.
                end_of_interrupt = (now - entry.t_ckpt)[:32] >= END_OF_INTERRUPT_CLOCKS
                with m.If(dropped | ~self.inta | end_of_interrupt):
                    m.d.sync += state.eq(_State.ARMED)

        # Asleep (armed, nothing to take), every register holds: ``dropped`` is set once
        # INTA# is seen deasserted and stays so.
        access = ctl.w_en | ctl.r_en
        bus_wake = (ResetSignal("sync") | (state != _State.ARMED)
                    | (control.enable & self.inta) | (~self.inta & ~dropped))
        Gate(top, gated=self.gated).add(m, access | bus_wake, bus_wake, access)
        return top


class InterruptResponderDriver:
    """Python side of :class:`InterruptResponder` over a control accessor."""

    def __init__(self, ctl):
        self.ctl = ctl
        self._seen = 0

    async def configure(self, *, ack_addr, ack_value, delay=None, delay_range=None,
                        checkpoints=(), ckpt_addr=0, ckpt_value=0, seed=None,
                        hold_cpu=False):
        """``delay`` (fixed clocks) or ``delay_range=(min, max)`` (uniform);
        ``checkpoints``: clock offsets after the acknowledge, at most CHECKPOINTS;
        ``hold_cpu``: the handler holds the host's CPU (``cpu_busy``)."""
        if (delay is None) == (delay_range is None):
            raise ValueError("give either delay or delay_range")
        if len(checkpoints) > CHECKPOINTS:
            raise ValueError(f"at most {CHECKPOINTS} checkpoints")
        low, high = (delay, delay) if delay is not None else delay_range
        if seed is not None:
            await self.ctl.write(IrqReg.SEED, seed)
        await self.ctl.write(IrqReg.DELAY_MIN, low)
        await self.ctl.write(IrqReg.DELAY_MAX, high)
        for reg, value in ((IrqReg.ACK_ADDR_LO, ack_addr & 0xFFFF_FFFF), (IrqReg.ACK_ADDR_HI, ack_addr >> 32),
                           (IrqReg.ACK_VALUE, ack_value), (IrqReg.CKPT_ADDR_LO, ckpt_addr & 0xFFFF_FFFF),
                           (IrqReg.CKPT_ADDR_HI, ckpt_addr >> 32), (IrqReg.CKPT_VALUE, ckpt_value)):
            await self.ctl.write(reg, value)
        for k, offset in enumerate(checkpoints):
            await self.ctl.write(IrqReg.CKPT_OFFSET + k, offset)
        control = REGISTERS["CONTROL"].pack(enable=1, uniform=delay_range is not None,
                                            checkpoints=len(checkpoints),
                                            hold_cpu=int(hold_cpu))
        await self.ctl.write(IrqReg.CONTROL, control)
        refused = REGISTERS["STATUS"].field("refused").mask
        if (await self.ctl.read(IrqReg.STATUS)) & refused:
            await self.ctl.write(IrqReg.STATUS, refused)
            raise ValueError(f"the responder refused delay range {low}..{high}")

    async def entries(self):
        """Log entries not returned before, oldest first, as dicts (LOG_ENTRY fields)."""
        logged = await self.ctl.read(IrqReg.LOGGED)
        out = []
        for index in range(max(self._seen, logged - _LOG_DEPTH), logged):
            await self.ctl.write(IrqReg.LOG_INDEX, index % _LOG_DEPTH)
            log = REGISTERS["LOG"]
            words = [await self.ctl.read(IrqReg.LOG + w) for w in range(log.words)]
            out.append(log.unpack(sum(word << (32 * w) for w, word in enumerate(words))))
        self._seen = logged
        await self.ctl.write(IrqReg.SEEN, logged)
        return out

    async def count(self):
        return await self.ctl.read(IrqReg.COUNT)
