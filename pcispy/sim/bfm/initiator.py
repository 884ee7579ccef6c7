# SPDX-License-Identifier: BSD-2-Clause
"""The behavioural PCI initiator: the master half of the host bridge and of the test device.

Written from the PCI rules (PCI Local Bus Specification 3.0), sharing no state machine
with the gateware. Python queues *commands* (bus command, address, length, burst limit, byte
enables, wait states, ...) through the control port; the initiator arbitrates, runs as
many transactions as the command needs (repeating retried ones, continuing after
disconnects and latency-timer endings), and leaves one *result* per command in a FIFO
(status and counters), raising ``event`` while a result waits.

Units: addresses are bytes; lengths and buffer offsets are DWORDs (32-bit words). A
64-bit data phase (REQ64# answered by ACK64#) moves two DWORDs.

Timing words used below count the address phase as clock 1. All bus outputs come from
registers: nothing this agent drives depends combinationally on a line it samples. The
lines it samples (``bus.X.i``) are the resolved bus of the current clock, seen
combinationally; a decision taken from them is loaded into a register at the rising edge
that ends the clock, which is the edge at which a PCI agent samples the bus, and shows on
the bus in the next clock. "Sampled in clock K" below means: seen during clock K, acted on
from clock K + 1.

Who drives what, and when (PCI LB 3.0 §2.1, §3.3.1, §3.4.3, §3.7):

- FRAME#, REQ64#: from the address phase through the last data phase, in which they are
  driven deasserted; released in the clock after it (the idle clock is their
  turnaround, another master may start there).
- IRDY#: from the clock after the (first) address phase, whose clock is the turnaround
  for IRDY# (the previous owner may still drive it deasserted there), through the clock
  after the last data phase (driven deasserted), then released.
- AD, C/BE#: the address phase(s); then C/BE# and, on writes, AD through the last data
  phase. On reads AD is released after the address phase (the target drives it from
  clock 3). AD[63:32] and C/BE#[7:4] alike, on 64-bit transactions only.
- PAR (PAR64): one clock after every clock in which this agent drove AD (AD[63:32]), even
  parity of what it drove then, and only then.
- Bus parking: with GNT# sampled asserted on an idle bus, AD[31:0] and C/BE#[3:0] are
  driven (to zero) from the next clock, PAR one clock later, until GNT# is sampled
  deasserted (they float in the clock after, PAR one clock later) or a transaction of
  this agent takes them over. The 64-bit extension is not parked.
- PERR#: asserted for one clock two clocks after a read data phase with bad parity (when
  enabled), driven deasserted one clock, released.
- REQ#: point-to-point to the arbiter, driven whenever RST# is deasserted.

Its control-port registers and the logic that serves them are
pcispy/sim/bfm/initiator_control.py; :class:`~pcispy.sim.bfm.initiator_driver.InitiatorDriver`
(pcispy/sim/bfm/initiator_driver.py) is the Python side.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.bus import Command, PCIBusSignature, Termination
from pcispy.sim.bfm.backdoor_ram import BackdoorRAM
from pcispy.sim.bfm.gate import Gate
from pcispy.sim.bfm.initiator_control import (COMMAND, CONFIG, INJECT, REGISTERS, RESULT,
                                              Outcome, _ControlPortLogic, _State)
from pcispy.sim.bfm.nets import net
from pcispy.sim.control import ControlSignature

__all__ = ["BehaviouralInitiator"]


_QUEUE_DEPTH = 4
_ABORT_CLOCK = 5           # DEVSEL# may come as late as clock 5 (subtractive decode)


class BehaviouralInitiator(wiring.Component):
    """A PCI master driven by a command queue (clock domain ``sync``).

    Ports:
        bus (Out, PCIBusSignature(width)): drives AD, C/BE#, PAR, FRAME#, IRDY#, REQ#,
            PERR# (read data parity), and on 64-bit buses AD[63:32], C/BE#[7:4], PAR64,
            REQ64#; samples TRDY#, STOP#, DEVSEL#, GNT#, ACK64#, PAR, PAR64.
        ctl (Out, ControlSignature): registers :class:`Reg`; ``event`` is high while a
            result waits in the result FIFO.
        prio (In, stream.Signature(COMMAND)): a second command input that wins over the
            queue when the initiator is idle (the interrupt responder's acknowledge
            writes). Its results do not enter the result FIFO; instead
        prio_done (Out, 1): pulses for one clock when a ``prio`` command has finished,
        prio_status (Out, Outcome): its status, valid with ``prio_done``.

    Parameters:
        width: bus width, 32 or 64.
        buffer_addr_bits: log2 of the buffer depth in words of ``width`` bits.
        verilog_ram: keep the buffer in the hand-written Verilog RAM of
            :mod:`pcispy.core.ram` (Verilator); False for
            Amaranth's Python simulator.
        gated: run on a clock gated while it has nothing to do (a Verilator build only,
            :mod:`pcispy.sim.bfm.gate`): idle with no command queued or offered on
            ``prio``, GNT# not on it and nothing of its own on the bus, no control-port
            access. Its random generator steps on every clock all the same.

    Commands are refused (Outcome.BAD_COMMAND, no bus activity) when the length is 0, the
    code is DUAL_ADDRESS (the initiator adds DAC itself), REQ64# is asked on a 32-bit bus,
    or the buffer range (for reads, or writes without ``imm``) runs past the buffer.
    A transaction asks for REQ64# only when the command asks for it, the address and the
    buffer DWORD are 8-byte aligned and at least two DWORDs remain. A Special Cycle is
    claimed by nobody and so ends as a master abort (Outcome.MASTER_ABORT), as on a bus.
    """

    def __init__(self, width=32, buffer_addr_bits=14, verilog_ram=True, *, gated=False):
        if width not in (32, 64):
            raise ValueError(f"bus width must be 32 or 64, not {width!r}")
        self.width = width
        self.gated = gated
        self.buffer_addr_bits = buffer_addr_bits
        self.verilog_ram = verilog_ram
        super().__init__({
            "bus": Out(PCIBusSignature(width)),
            "ctl": Out(ControlSignature()),
            "prio": In(stream.Signature(COMMAND)),
            "prio_done": Out(1),
            "prio_status": Out(Outcome),
        })

    @property
    def buffer_dwords(self):
        return (1 << self.buffer_addr_bits) * (self.width // 32)

    def elaborate(self, platform):
        top = Module()          # the clock gate and what must see every clock
        m = Module()            # the sequencer, the queues and the registers, gated
        # The buffer runs on every clock: its read port shows what Python wrote through
        # the backdoor a clock later, asleep or not.
        top.submodules.buffer = buffer = BackdoorRAM(
            width=self.width, addr_bits=self.buffer_addr_bits, verilog=self.verilog_ram)
        m.submodules.queue = queue = fifo.SyncFIFOBuffered(width=COMMAND.size, depth=_QUEUE_DEPTH)
        m.submodules.results = results = fifo.SyncFIFOBuffered(width=RESULT.size, depth=_QUEUE_DEPTH)

        # The steps share their signals through ``logic``; their order is the order in
        # which their statements are added (a later assignment to a signal wins).
        gate = Gate(top, gated=self.gated)
        logic = _InitiatorLogic(self, m, buffer, queue, results, top)
        logic.control_port()
        logic.buffer_port()
        logic.frame_irdy_req()
        logic.address_data_lines()
        logic.parity_outputs()
        logic.read_parity_check()
        logic.sequencer()
        gate.add(m, *logic.wake())
        return top


class _InitiatorLogic(_ControlPortLogic):
    """The logic of one :class:`BehaviouralInitiator`, added to its module step by step.

    The attributes are the signals the steps share: the control registers, the command
    being executed, the transaction under way and its data phase, and the bus outputs'
    state. ``state`` is the sequencer's (:class:`_State`). Values read in several places
    are signals of their own (:func:`~pcispy.sim.bfm.nets.net`).
    """

    def __init__(self, initiator, m, buffer, queue, results, free):
        self.m = m
        self.free = free              # the module of the registers that see every clock
        self.initiator = initiator
        self.bus, self.ctl = initiator.bus, initiator.ctl
        self.buffer, self.queue, self.results = buffer, queue, results
        self.wide = initiator.width == 64
        self.lane_bits = 1 if self.wide else 0

        # Control registers.
        self.staging = Signal(COMMAND)
        config = REGISTERS["CONFIG"]
        self.config = Signal(CONFIG, init=config.unpack(config.reset))
        self.inject = Signal(INJECT)
        self.retry_limit = Signal(16, init=REGISTERS["RETRY_LIMIT"].reset)
        self.lfsr = Signal(32, init=1)      # steps on every clock (control_port)
        self.perr_total = Signal(32)
        self.buf_ptr = Signal(21)
        self.push_refused = Signal()
        self.buf_refused = Signal()
        self.config_refused = Signal()

        self.state = Signal(_State)
        self.busy = net(m, self.state != _State.IDLE, "busy")
        self.req_in_end = Signal()
        # Queued or running: the register path to the buffer is closed.
        self.engaged = net(m, self.busy | (queue.level != 0), "engaged")

        # The command being executed.
        self.cur = Signal(COMMAND)
        self.from_prio = Signal()
        self.res = Signal(RESULT)
        self.cur_status = Signal(Outcome)
        self.is_read = Signal()
        self.is_dac = Signal()
        self.idx = Signal(20)            # DWORDs done
        self.remaining = Signal(20)
        self.xfer_addr = Signal(64)      # this transaction's address (idx is fixed until its data)
        self.retry_run = Signal(16)
        self.fill_left = Signal(20)
        self.backoff = Signal(9)
        self.latency_done = Signal()
        self.oneshot_irdy_drop = Signal()
        self.oneshot_irdy_idle = Signal()
        self.oneshot_frame_after_stop = Signal()
        self.reassert_done = Signal()        # (c) happens once per command; (b) likewise
        self.oneshot_frame_no_irdy = Signal()

        # The transaction under way.
        self.xfer_phases = Signal(16)    # data phases moved in this transaction
        self.is64 = Signal()             # REQ64# asked in this transaction
        self.clk = Signal(8)             # clock of the transaction, address phase = 1 (saturates)
        self.devsel_seen = Signal()
        self.ack64_seen = Signal()
        self.frame_on = Signal()
        self.irdy_on = Signal()
        self.wait_cnt = Signal(5)
        self.wait_seen = Signal()        # the current IRDY# phase has seen a clock without TRDY#/STOP#
        self.stop_seen = Signal()
        self.term_stop = Signal(Termination)  # classification at the first STOP#
        self.lt_stop = Signal()          # Latency Timer expired while GNT# was removed
        self.lt_ended = Signal()
        self.xfer_term = Signal(Termination)

        # Read data parity check.
        self.chk_pending = Signal()
        self.chk_ad = Signal(32)
        self.chk_cbe = Signal(4)
        self.chk64 = Signal()
        self.chk_ad_hi = Signal(32)
        self.chk_cbe_hi = Signal(4)
        self.perr_cmd = Signal(8)

        # The data phase: how this clock ends it.
        self.idx_next = Signal(20)
        self.buf_dw = Signal(21)
        self.completes = Signal()
        self.moved = Signal(2)
        self.stop_valid = Signal()
        self.term_now = Signal(Termination)
        self.m_abort = Signal()
        self.abandon = Signal()   # (b): FRAME# goes in this clock while IRDY# is deasserted

        cur = self.cur
        m.d.comb += [
            self.remaining.eq(cur.length - self.idx),
            self.xfer_addr.eq(cur.addr + (self.idx << 2)),
            self.is_read.eq(~cur.code[0]),
            self.is_dac.eq((self.xfer_addr[32:] != 0) | self.inject.dac_low),
        ]

        # States the bus outputs follow.
        self.in_addr = net(m, _is(self.state, _State.ADDR, _State.ADDR2), "in_addr")
        self.in_data = net(m, self.state == _State.DATA, "in_data")
        # FRAME#, REQ64# and C/BE# are this agent's from the address phase through the last
        # data phase. The clock after it (END) is the idle clock, their turnaround: another
        # master that sampled the bus idle there starts in the clock after, so nothing of
        # this agent may still be driven in it but IRDY# (driven deasserted) and PAR.
        self.owning = net(m, self.in_addr | self.in_data, "owning")
        self.data_cycle = net(m, self.in_data & self.irdy_on, "data_cycle")
        self.mid_phase_wait = net(m, self.data_cycle & self.wait_seen, "mid_phase_wait")
        self.frame_out = Signal()
        self.irdy_out = Signal()
        self.parked = Signal()
        self.parking = net(m, self.parked & ~self.owning, "parking")

        # What the target answers, as sampled in this clock.
        bus = self.bus
        self.trdy, self.stop, self.devsel = bus.trdy.i, bus.stop.i, bus.devsel.i
        ack64_in = bus.ack64.i if self.wide else Const(0)
        self.bus_idle = net(m, ~bus.frame.i & ~bus.irdy.i, "bus_idle")
        self.devsel_now = net(m, self.devsel_seen | self.devsel, "devsel_now")
        self.ack64_now = net(m, Mux(self.devsel_seen, self.ack64_seen, self.devsel & ack64_in),
                             "ack64_now")
        self.lt_stop_now = net(m, self.lt_stop | ((self.clk > self.config.lat_timer)
                                                  & ~bus.gnt.i), "lt_stop_now")
        # The DWORDs a data phase moves when it completes (two on a 64-bit one).
        self.phase_dwords = net(m, Mux(self.is64 & self.ack64_now, 2, 1), "phase_dwords")

    def wake(self):
        """``(wake, bus_wake, access)`` for the gate (:mod:`pcispy.sim.bfm.gate`): high
        before every edge at which a register of the engine would change: a control-port
        access (``access``), RST#, a command under way, queued or offered on ``prio``, a
        result moving to the result FIFO's output, GNT# on it (parking), its lines still
        driven, a parity check or PERR# under way."""
        bus, ctl, results = self.bus, self.ctl, self.results
        bus_wake = (bus.rst.i | self.engaged | self.initiator.prio.valid
                    | (~results.r_rdy & (results.level != 0))
                    | bus.gnt.i | self.parked | self.irdy_was | bus.par.oe
                    | self.chk_pending | (self.perr_stage != 0))
        if self.wide:
            bus_wake = bus_wake | bus.par64.oe
        access = ctl.w_en | ctl.r_en
        bus_wake = net(self.m, bus_wake, "bus_wake")
        return access | bus_wake, bus_wake, access


    # ---- bus outputs (registers only) --------------------------------------------------

    def frame_irdy_req(self):
        """FRAME#, IRDY#, REQ# and their enables."""
        m, bus, inject, cur = self.m, self.bus, self.inject, self.cur
        state, frame_on, irdy_on = self.state, self.frame_on, self.irdy_on
        # (b) the phase about to start is the last one, estimated from registers.
        pending_last = (self.remaining <= Mux(self.is64 & self.ack64_seen, 2, 1)) | \
                       ((cur.burst != 0) & (self.xfer_phases + 1 >= cur.burst)) | self.lt_stop

        m.d.comb += self.abandon.eq(inject.frame_no_irdy & frame_on & pending_last
                                    & ~self.oneshot_frame_no_irdy)
        with m.If(state == _State.IDLE):
            m.d.sync += [self.reassert_done.eq(0), self.oneshot_frame_no_irdy.eq(0)]
        with m.If(self.in_addr):
            m.d.comb += self.frame_out.eq(1)
        with m.Elif(self.in_data):
            with m.If(irdy_on):
                m.d.comb += self.frame_out.eq(frame_on)
            with m.Else():
                m.d.comb += self.frame_out.eq(frame_on & ~self.abandon)
        # Every path into END leaves DATA in a clock with FRAME# deasserted (the last data
        # phase, a master abort's last clock, or (b)'s abandon), so FRAME# is always driven
        # deasserted for at least one clock before it is released.
        m.d.comb += self.irdy_out.eq(self.data_cycle | (state == _State.JUNK)
                                     | (self.in_addr & inject.irdy_in_addr))
        # IRDY# asserted by this agent in the previous clock: driven deasserted now
        # (sustained tri-state), whatever the state (END, JUNK_END, or an address phase
        # after (q)'s).
        self.irdy_was = irdy_was = Signal()
        m.d.sync += irdy_was.eq(self.irdy_out)
        m.d.comb += [
            bus.frame.o.eq(self.frame_out),
            bus.frame.oe.eq(self.owning),
            bus.irdy.o.eq(self.irdy_out),
            # Not in the (first) address phase: it is IRDY#'s turnaround clock, in which the
            # previous owner may still drive it deasserted (PCI LB 3.0 §3.3.1).
            bus.irdy.oe.eq((state == _State.ADDR2) | self.in_data | self.irdy_out | irdy_was),
            bus.req.o.eq(_is(state, _State.ARB, _State.JUNK, _State.JUNK_END,
                             _State.ADDR, _State.ADDR2, _State.DATA) | self.req_in_end),
            # Every PCI output floats while RST# is asserted (PCI LB 3.0 §4.3.2).
            bus.req.oe.eq(~bus.rst.i),
        ]

    def address_data_lines(self):
        """AD, C/BE# (and their 64-bit extension, REQ64#) in the address and data phases,
        and parked."""
        m, bus, inject, cur = self.m, self.bus, self.inject, self.cur
        state, is_dac, xfer_addr = self.state, self.is_dac, self.xfer_addr
        # Bus parking (PCI LB 3.0 §3.4.3). ``parked`` is loaded at the edge that ends clock
        # K from what clock K showed: GNT# asserted with FRAME# and IRDY# deasserted. So
        #   clock K:     GNT# asserted, bus idle (sampled at the edge ending K);
        #   clock K + 1: AD[31:0], C/BE#[3:0] driven (to zero);
        #   clock K + 2: PAR driven too (registered from AD's enable, below).
        # and when GNT# goes:
        #   clock J:     GNT# deasserted (sampled at the edge ending J);
        #   clock J + 1: AD, C/BE# float;  clock J + 2: PAR floats.
        # The arbiter gives the next master GNT# no earlier than clock J + 1, and that master
        # samples it there and drives from J + 2 on: J + 1 is the turnaround. A bus that
        # stops being idle (someone started without GNT#) ends the parking a clock later
        # too. A transaction of this agent takes AD and C/BE# over without a gap (same
        # driver). After this agent's own last data phase the bus is not idle in that
        # clock (IRDY# asserted), so the idle clock after it stays the turnaround and the
        # parking begins a clock later. Reset holds ``parked`` at 0.
        m.d.sync += self.parked.eq(bus.gnt.i & ~bus.frame.i & ~bus.irdy.i & ~inject.park_float)

        dac_phase = (((state == _State.ADDR) & is_dac)
                     | ((state == _State.ADDR2) & inject.dac_twice))
        addr_cmd = Mux(dac_phase, Command.DUAL_ADDRESS.value, cur.code)
        addr_ad = Mux((state == _State.ADDR2), xfer_addr[32:], xfer_addr[:32])
        with m.If(self.in_addr):
            m.d.comb += [bus.ad.o.eq(addr_ad), bus.ad.oe.eq(1),
                         bus.cbe.o.eq(addr_cmd), bus.cbe.oe.eq(1)]
        with m.Elif(self.in_data):
            m.d.comb += [
                bus.ad.o.eq(self.data_lo ^ (inject.wdata_change & self.mid_phase_wait)),
                bus.ad.oe.eq(~self.is_read),
                bus.cbe.o.eq(self.be_of(self.idx) ^ (inject.be_change & self.mid_phase_wait)),
                bus.cbe.oe.eq(1),
            ]
        with m.Elif(self.parking):
            # Any stable value will do; zero (with PAR 0) is told apart from a floating
            # bus (all ones, PAR 1) at a glance.
            m.d.comb += [bus.ad.o.eq(0), bus.ad.oe.eq(1), bus.cbe.o.eq(0), bus.cbe.oe.eq(1)]
        if self.wide:
            is64 = self.is64
            m.d.comb += [
                bus.req64.o.eq(is64 & Mux(inject.req64_mismatch, state == _State.ADDR,
                                          self.frame_out)),
                bus.req64.oe.eq(self.owning),
            ]
            with m.If(self.in_addr & is64):
                m.d.comb += [bus.ad_hi.o.eq(Mux(is_dac, xfer_addr[32:], 0)), bus.ad_hi.oe.eq(1),
                             bus.cbe_hi.o.eq(Mux(is_dac, cur.code, 0)), bus.cbe_hi.oe.eq(1)]
            with m.Elif(self.in_data & is64):
                idx = self.idx
                m.d.comb += [
                    bus.ad_hi.o.eq(self.data_hi), bus.ad_hi.oe.eq(~self.is_read),
                    bus.cbe_hi.o.eq(Mux(idx + 1 < cur.length, self.be_of(idx + 1), 0xF)),
                    bus.cbe_hi.oe.eq(1),
                ]

    def parity_outputs(self):
        """PAR (PAR64) one clock after the AD value it covers, by whoever drove that AD:
        this agent drives it exactly in the clocks after those in which it drove AD ((x):
        not after a clock in which it drove AD only because it was parked)."""
        m, bus, inject = self.m, self.bus, self.inject
        writing_data = self.data_cycle & ~self.is_read
        par_bad = ((self.in_addr & inject.addr_parity)
                   | (writing_data & inject.wdata_parity)
                   | (writing_data & ~bus.trdy.i & inject.wdata_parity_wait))
        m.d.sync += [
            bus.par.o.eq(parity_of(bus.ad.o, bus.cbe.o) ^ par_bad),
            bus.par.oe.eq(bus.ad.oe & ~(self.parking & inject.park_no_par)),
        ]
        if self.wide:
            par64_bad = writing_data & inject.wdata_parity64
            m.d.sync += [
                bus.par64.o.eq(parity_of(bus.ad_hi.o, bus.cbe_hi.o) ^ par64_bad),
                bus.par64.oe.eq(bus.ad_hi.oe),
            ]

    def read_parity_check(self):
        """Check PAR (PAR64) of read data one clock after each read data phase; count the
        errors and answer them with PERR# when enabled (and (o): at the wrong time)."""
        m, bus, inject, state = self.m, self.bus, self.inject, self.state
        # 1: PERR# asserted, 2: PERR# driven deasserted
        self.perr_stage = perr_stage = Signal(2)
        parity_error = Signal()
        chk_bad = parity_of(self.chk_ad, self.chk_cbe) != bus.par.i
        if self.wide:
            chk_bad = chk_bad | (self.chk64
                                 & (parity_of(self.chk_ad_hi, self.chk_cbe_hi) != bus.par64.i))
        m.d.comb += parity_error.eq(self.chk_pending & chk_bad)
        m.d.sync += self.chk_pending.eq(0)
        with m.If(parity_error):
            m.d.sync += [self.perr_total.eq(self.perr_total + 1),
                         self.perr_cmd.eq(self.perr_cmd + 1)]
        perr_trigger = Signal()
        with m.If(perr_trigger):
            m.d.sync += perr_stage.eq(1)
        with m.Elif(perr_stage == 1):
            m.d.sync += perr_stage.eq(2)
        with m.Elif(perr_stage == 2):
            m.d.sync += perr_stage.eq(0)
        m.d.comb += [
            perr_trigger.eq((parity_error & self.config.perr_enable) |
                            ((state == _State.ADDR) & ~self.is_dac & inject.perr_wrong) |
                            ((state == _State.ADDR2) & inject.perr_wrong)),
            bus.perr.o.eq(perr_stage == 1),
            bus.perr.oe.eq(perr_stage != 0),
        ]

    # ---- the sequencer -----------------------------------------------------------------

    def sequencer(self):
        """Take commands, run their transactions, report their results (:class:`_State`)."""
        m, res = self.m, self.res
        m.d.sync += self.clk.eq(Mux(self.clk == 0xFF, self.clk, self.clk + 1))
        with m.If(self.state != _State.IDLE):
            m.d.sync += res.clocks.eq(res.clocks + 1)
        self.data_phase_outcome()

        with m.Switch(self.state):
            with m.Case(_State.IDLE):
                self.take_command()
            with m.Case(_State.CHECK):
                self.check_command()
            with m.Case(_State.ARB):
                self.start_if_granted()
            with m.Case(_State.JUNK):
                self.goto(_State.JUNK_END)
            with m.Case(_State.JUNK_END):
                self.goto(_State.ARB)
            with m.Case(_State.ADDR):
                with m.If(self.is_dac):
                    self.goto(_State.ADDR2)
                with m.Else():
                    self.enter_data()
            with m.Case(_State.ADDR2):
                self.enter_data()
            with m.Case(_State.DATA):
                self.data_phase_bookkeeping()
                self.data_phase_control()
            with m.Case(_State.END):
                self.end_transaction()
            with m.Case(_State.BACKOFF):
                with m.If(self.backoff == 0):
                    self.goto(_State.ARB)
                with m.Else():
                    m.d.sync += self.backoff.eq(self.backoff - 1)
            with m.Case(_State.FILL):
                # Write all ones for the DWORDs an aborted read did not return.
                self.write_buffer(Const(0xFFFF_FFFF, 32))
                m.d.sync += [self.idx.eq(self.idx + 1), self.fill_left.eq(self.fill_left - 1)]
                with m.If(self.fill_left == 1):
                    self.goto(_State.REPORT)
            with m.Case(_State.REPORT):
                self.report()

    def goto(self, target):
        self.m.d.sync += self.state.eq(target)

    def data_phase_outcome(self):
        """How this clock ends the data phase (if it does), and whether REQ# stays on
        through the idle clock."""
        m, cur = self.m, self.cur
        trdy, stop, devsel = self.trdy, self.stop, self.devsel
        abort_clock = Mux(self.inject.early_abort, 3, _ABORT_CLOCK) + self.is_dac
        # REQ# stays asserted through the idle clock when more transactions follow (a
        # retried master releases it: it backs off through BACKOFF).
        m.d.comb += self.req_in_end.eq((self.state == _State.END) & (self.remaining != 0) &
                                       (self.xfer_term != Termination.RETRY) & (cur.idle == 0))
        m.d.comb += [
            self.completes.eq(self.in_data & self.irdy_on & trdy),
            self.moved.eq(Mux(self.completes,
                              Mux(self.is64 & self.ack64_now & (self.remaining >= 2), 2, 1), 0)),
            # A data phase completes with IRDY# and STOP# whether or not DEVSEL# was ever
            # asserted (PCI LB 3.0 §3.3.3.2.1): the master then ends the transaction as
            # for any STOP#, so FRAME# is not held after it. STOP# without DEVSEL# is a
            # target abort by its pins (a target that never claimed breaks a rule of its
            # own, which the master does not repeat).
            self.stop_valid.eq(stop),
            self.m_abort.eq(~self.devsel_now & (self.clk >= abort_clock)),
        ]
        with m.If(stop & ~devsel):
            m.d.comb += self.term_now.eq(Termination.TARGET_ABORT)
        with m.Elif(trdy):
            m.d.comb += self.term_now.eq(Termination.DISCONNECT_DATA)
        with m.Elif(self.xfer_phases == 0):
            m.d.comb += self.term_now.eq(Termination.RETRY)
        with m.Else():
            m.d.comb += self.term_now.eq(Termination.DISCONNECT_NODATA)

    def burst_hit(self, phases):
        """The burst limit ends the transaction after data phase number ``phases``."""
        return (self.cur.burst != 0) & (phases + 1 >= self.cur.burst)

    def ends_here(self, rem):
        """The data phase starting with ``rem`` DWORDs left is the command's last."""
        return rem <= self.phase_dwords

    def undecided(self, rem, phases):
        """64-bit, two DWORDs left: one phase or two depends on ACK64#, not seen yet."""
        return (self.is64 & ~self.devsel_now & (rem == 2) & ~self.burst_hit(phases)
                & ~self.lt_stop_now)

    def draw_wait(self, base):
        """IRDY# wait states: ``base`` plus the random part the command asks for."""
        return base + (self.lfsr[:4] & self.cur.wait_rand)

    def start_phase(self, rem, phases, at):
        """Assert IRDY# for a data phase (``rem`` DWORDs left, ``phases`` done, starting at
        DWORD ``at``), deciding whether it is the transaction's last.

        Decided as IRDY# is asserted: FRAME# may not change again until it completes.
        Memory Write and Invalidate only gives way to the Latency Timer at the end of a
        cache line (the phase starting at DWORD ``at`` ends one)."""
        cur, config = self.cur, self.config
        line_mask = Mux(config.cache_line == 0, 0, config.cache_line - 1)
        is_mwi = cur.code == Command.MEM_WRITE_INVALIDATE
        dw = self.phase_dwords
        line_end = (((cur.addr >> 2) + at + dw) & line_mask) == 0
        lt_end = self.lt_stop_now & (~is_mwi | line_end)
        last = self.ends_here(rem) | self.burst_hit(phases)
        self.m.d.sync += [self.irdy_on.eq(1), self.wait_seen.eq(0),
                          self.frame_on.eq(~(last | lt_end)),
                          self.lt_ended.eq(lt_end & ~last)]

    def finish(self, status):
        """End the command with ``status``: fill what an aborted read did not return, then
        report."""
        m, cur = self.m, self.cur
        m.d.sync += self.cur_status.eq(status)
        with m.If(self.is_read & (status != Outcome.OK.value) & (self.idx < cur.length)):
            m.d.sync += [self.fill_left.eq(cur.length - self.idx),
                         self.res.last_data.eq(0xFFFF_FFFF)]
            self.goto(_State.FILL)
        with m.Else():
            self.goto(_State.REPORT)

    def start_if_granted(self, otherwise=None):
        """With GNT# sampled asserted on an idle bus, the address phase is the next clock
        (or, once per command with (j), a clock of IRDY# on the idle bus first)."""
        m, bus, inject, cur = self.m, self.bus, self.inject, self.cur
        # (t) the clock in which another master's final data phase completes: the bus
        # is idle only from the next clock on.
        final_done = ~bus.frame.i & bus.irdy.i & (bus.trdy.i | bus.stop.i)
        free = self.bus_idle | (inject.busy_start & final_done)
        with m.If((bus.gnt.i | inject.no_gnt) & free):
            with m.If(inject.irdy_idle & ~self.oneshot_irdy_idle):
                m.d.sync += self.oneshot_irdy_idle.eq(1)
                self.goto(_State.JUNK)
            with m.Else():
                m.d.sync += [
                    self.clk.eq(1), self.devsel_seen.eq(0), self.ack64_seen.eq(0),
                    self.xfer_phases.eq(0), self.stop_seen.eq(0), self.lt_stop.eq(0),
                    self.lt_ended.eq(0), self.wait_seen.eq(0),
                    self.is64.eq(cur.req64 & ~self.xfer_addr[2] & ~self.buf_dw[0]
                                 & (self.remaining >= 2) if self.wide else 0),
                    self.res.transactions.eq(self.res.transactions + 1),
                ]
                self.goto(_State.ADDR)
        if otherwise is not None:
            with m.Else():
                self.goto(otherwise)

    def enter_data(self):
        """After the (last) address phase: the first data phase, after its IRDY# waits."""
        m = self.m
        self.goto(_State.DATA)
        first_wait = Mux(self.inject.irdy_late, 9, self.draw_wait(self.cur.wait_first))
        with m.If((first_wait == 0) & ~self.undecided(self.remaining, 0)):
            self.start_phase(self.remaining, 0, self.idx)
        with m.Else():
            m.d.sync += [self.irdy_on.eq(0), self.frame_on.eq(1), self.wait_cnt.eq(first_wait)]

    def data_phase_bookkeeping(self):
        """DATA: count what moved, note the first TRDY#, store read data in the buffer and
        queue it for the parity check."""
        m, bus, res, moved = self.m, self.bus, self.res, self.moved
        m.d.comb += self.idx_next.eq(self.idx + moved)
        m.d.sync += [self.idx.eq(self.idx_next), self.xfer_phases.eq(self.xfer_phases + self.completes),
                     self.devsel_seen.eq(self.devsel_now), self.ack64_seen.eq(self.ack64_now),
                     self.lt_stop.eq(self.lt_stop_now)]
        with m.If(self.trdy & ~self.latency_done):
            m.d.sync += [res.latency.eq(self.clk - 1), self.latency_done.eq(1)]
        with m.If(self.completes):
            m.d.sync += [res.phases.eq(res.phases + 1), res.dwords.eq(res.dwords + moved),
                         self.retry_run.eq(0)]
            with m.If(self.is_read):
                m.d.sync += [
                    res.last_data.eq(Mux(moved == 2, bus.ad_hi.i if self.wide else 0, bus.ad.i)),
                    self.chk_pending.eq(1), self.chk_ad.eq(bus.ad.i), self.chk_cbe.eq(bus.cbe.o),
                ]
                if self.wide:
                    m.d.sync += [self.chk64.eq(self.is64 & self.ack64_now),
                                 self.chk_ad_hi.eq(bus.ad_hi.i), self.chk_cbe_hi.eq(bus.cbe_hi.o)]
                    with m.If(moved == 2):
                        self.write_buffer(bus.ad.i, bus.ad_hi.i)
                    with m.Else():
                        self.write_buffer(bus.ad.i)
                else:
                    self.write_buffer(bus.ad.i)

    def data_phase_control(self):
        """DATA: FRAME# and IRDY# for the next clock: end the transaction, follow the
        target's STOP#, start the next data phase after its waits, or break a rule as an
        injection asks."""
        m, inject, cur = self.m, self.inject, self.cur
        trdy, frame_on, irdy_on = self.trdy, self.frame_on, self.irdy_on
        stop_valid, term_now = self.stop_valid, self.term_now
        with m.If(irdy_on & ~frame_on & (trdy | stop_valid)):
            # The last data phase is over.
            m.d.sync += irdy_on.eq(0)
            with m.If(self.stop_seen):
                m.d.sync += self.xfer_term.eq(self.term_stop)
            with m.Elif(stop_valid):
                m.d.sync += self.xfer_term.eq(term_now)
            with m.Elif(self.lt_ended):
                m.d.sync += self.xfer_term.eq(Termination.LATENCY_TIMER)
            with m.Else():
                m.d.sync += self.xfer_term.eq(Termination.COMPLETION)
            self.goto(_State.END)
        with m.Elif(self.m_abort):
            m.d.sync += self.xfer_term.eq(Termination.MASTER_ABORT)
            with m.If(irdy_on & ~frame_on):
                m.d.sync += irdy_on.eq(0)
                self.goto(_State.END)
            with m.Else():
                # FRAME# first (with IRDY# asserted), IRDY# the clock after.
                m.d.sync += [irdy_on.eq(1), frame_on.eq(0)]
        with m.Elif(frame_on & stop_valid):
            # How the transaction ends is decided by the first STOP#.
            m.d.sync += [self.stop_seen.eq(1),
                         self.term_stop.eq(Mux(self.stop_seen, self.term_stop, term_now))]
            with m.If(inject.frame_after_stop & irdy_on & ~self.oneshot_frame_after_stop):
                # (u) this data phase completes with STOP#, yet FRAME# stays
                # asserted (with IRDY#) for one more clock; the next one is last.
                m.d.sync += [self.oneshot_frame_after_stop.eq(1), self.wait_seen.eq(0)]
            with m.Else():
                # The target ends it: FRAME# deasserted as soon as possible (the
                # next clock), with IRDY# asserted.
                m.d.sync += [irdy_on.eq(1), frame_on.eq(0), self.wait_seen.eq(0)]
        with m.Elif(self.completes):
            next_wait = self.draw_wait(cur.wait_next)
            with m.If(next_wait == 0):
                self.start_phase(self.remaining - self.moved, self.xfer_phases + self.completes,
                                 self.idx_next)
            with m.Else():
                m.d.sync += [irdy_on.eq(0), self.wait_cnt.eq(next_wait)]
        with m.Elif(irdy_on):
            m.d.sync += self.wait_seen.eq(1)
            with m.If(inject.irdy_drop & frame_on & ~self.oneshot_irdy_drop):
                m.d.sync += [irdy_on.eq(0), self.wait_cnt.eq(1), self.oneshot_irdy_drop.eq(1)]
            with m.Elif(inject.frame_reassert & ~frame_on & ~self.reassert_done
                        & ~self.ends_here(self.remaining)):
                # (c) the phase signalled last is not the last after all: FRAME#
                # is asserted again while it waits and the burst continues.
                m.d.sync += [frame_on.eq(1), self.reassert_done.eq(1)]
            with m.Elif(inject.frame_drop_wait & frame_on):
                # (r) the waiting phase becomes the last one after all: FRAME# goes
                # while IRDY# waits; the rest follows in a new transaction.
                m.d.sync += frame_on.eq(0)
        with m.Elif(self.abandon):
            # (b) FRAME# went while IRDY# was deasserted: to every agent the bus is
            # idle now, so the transaction is over; the rest follows in a new one.
            m.d.sync += [self.oneshot_frame_no_irdy.eq(1),
                         self.xfer_term.eq(Termination.COMPLETION)]
            self.goto(_State.END)
        with m.Else():
            with m.If(self.wait_cnt > 1):
                m.d.sync += self.wait_cnt.eq(self.wait_cnt - 1)
            with m.Elif(~self.undecided(self.remaining, self.xfer_phases)):
                self.start_phase(self.remaining, self.xfer_phases, self.idx)

    def end_transaction(self):
        """END, the idle clock after the transaction: count how it ended, then finish the
        command or go on with the next transaction (after a pause, or at once)."""
        m, res, cur, xfer_term = self.m, self.res, self.cur, self.xfer_term
        m.d.sync += res.ack64.eq(self.ack64_seen)
        pause = Mux(xfer_term == Termination.RETRY, Mux(cur.idle == 0, 1, cur.idle), cur.idle)

        def again():
            with m.If(pause == 0):
                # END is the idle clock after the last data phase: still granted,
                # the next transaction's address phase follows at once.
                self.start_if_granted(otherwise=_State.ARB)
            with m.Else():
                m.d.sync += self.backoff.eq(pause - 1)
                self.goto(_State.BACKOFF)

        with m.Switch(xfer_term):
            with m.Case(Termination.MASTER_ABORT):
                self.finish(Outcome.MASTER_ABORT)
            with m.Case(Termination.TARGET_ABORT):
                self.finish(Outcome.TARGET_ABORT)
            with m.Case(Termination.RETRY):
                retry_limit, retry_run = self.retry_limit, self.retry_run
                m.d.sync += [res.retries.eq(res.retries + 1), retry_run.eq(retry_run + 1)]
                with m.If((retry_limit != 0) & (retry_run + 1 >= retry_limit)):
                    self.finish(Outcome.RETRY_LIMIT)
                with m.Else():
                    again()
            with m.Default():
                with m.If(_is(xfer_term, Termination.DISCONNECT_DATA,
                              Termination.DISCONNECT_NODATA)):
                    m.d.sync += res.disconnects.eq(res.disconnects + 1)
                with m.If(xfer_term == Termination.LATENCY_TIMER):
                    m.d.sync += res.lt_ends.eq(res.lt_ends + 1)
                with m.If(self.remaining == 0):
                    self.finish(Outcome.OK)
                with m.Else():
                    again()


def _is(view, *members):
    """``view`` (an enum-shaped signal) holds one of ``members``."""
    return view.as_value().matches(*(member.value for member in members))


def parity_of(*values):
    """Even parity (XOR of all bits) of Amaranth values."""
    return Cat(*values).xor()
