# SPDX-License-Identifier: BSD-2-Clause
"""A PCI-to-PCI bridge between two simulated buses, written from the PCI-to-PCI Bridge
Architecture Specification (rev. 1.1), not from any bridge's design.

The bridge has a target half and a master half on each bus. What a master on one bus
sends through it is forwarded by the other side's master half:

- **Posted writes.** Memory Write (and Memory Write and Invalidate, forwarded as Memory
  Write) inside the bridge's forwarding range is taken into the posted-write buffer of
  its direction (:class:`~pcispy.sim.bfm.bridge_queues.PostedWriteBuffer`, 256 bytes
  each way) and completes at once for its master. When the buffer is about to fill,
  the bridge disconnects (STOP# with TRDY# on the last word it can take); a write that
  finds it full is retried. The other side writes each posted transaction at its own
  addresses, in order; each flush carries the words of that transaction that are in the
  buffer when its address phase goes out (``post_threshold`` of them at least, or all,
  once the transaction has ended), so a flush that starts while its master is still
  writing ends early and the rest follows in a new transaction: the burst is broken.
- **Delayed transactions.** Reads, I/O writes and configuration cycles are latched and
  answered with Retry; the other side's master runs them; the master's repeat of the
  same transaction (command, address, byte enables, write data) is completed from the
  result, read data coming from the bridge's read buffer (Memory Read one DWORD,
  Memory Read Line to the end of the cache line, Memory Read Multiple
  ``prefetch_words``). Any other transaction for that direction is retried meanwhile. A
  completion its master does not collect within ``discard_clocks`` is dropped (the
  specification's discard timer, 2**15 clocks). A master abort on the other bus
  completes reads with all ones and writes normally (Master-Abort Mode 0); a target
  abort there is answered with Target-Abort.
- **Ordering** (chapter 5 of the specification): posted writes go out in the order
  they were taken; a delayed request is run only when no posted write of its direction
  waits in front of it (it pushes them ahead); a delayed read's completion is given only
  once every posted write that came the other way before the read completed on the
  other bus has been written out (it pulls them through); posted writes may always pass
  a delayed transaction.
- **Configuration.** The primary side answers Type 0 configuration cycles (IDSEL) with a
  Type 1 header: Command/Status, Cache Line Size, Latency Timers, the bus numbers and
  the I/O (16-bit), memory and prefetchable memory (32-bit) base/limit windows. A Type 1
  cycle to the secondary bus number is forwarded as Type 0, device ``d`` selected by
  IDSEL = AD[16 + d]; one to a subordinate bus behind it goes on as Type 1.
- **Decode.** Downstream (primary to secondary): memory inside either memory window
  (Memory Space enabled), I/O inside the I/O window (I/O Space enabled). Upstream: memory
  and I/O outside them (Bus Master Enable set). DEVSEL# at the speed each side is set to.

The INTx lines are not bridged by the protocol: the bridge passes INTA# from the
secondary to the primary bus as the backplane routes it. PERR#, SERR# and LOCK# are not
modelled (the bridge checks no parity and never locks).

What the bridge does is set through its control port
(:data:`~pcispy.sim.bfm.bridge_control.REGISTERS`), by profile
(:class:`~pcispy.sim.bfm.bridge_control.BridgeProfile`, ``BRIDGE_PROFILES``): decode
speeds, the posting threshold and burst limit, the clocks a request, a posted word and a
completion take to cross (the 21554's sides run on their own clocks and cross through
synchronisers), the retry back-off, the prefetch length and the discard timer.
pcispy/sim/bfm/bridge_control.py declares them, pcispy/sim/bfm/bridge_config.py holds the
Type 1 header, and :class:`~pcispy.sim.bfm.bridge_driver.BridgeDriver` is the Python side.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import Out

from pcispy.pci.bus import Command, DevselSpeed, PCIBusSignature
from pcispy.sim.bfm.bridge_config import BridgeConfigSpace
from pcispy.sim.bfm.bridge_control import (DIRECTIONS, ID_VALUE, REGISTERS, STATS, TRANSPARENT,
                                           TUNING, BridgeReg)
from pcispy.sim.bfm.bridge_queues import (COUNT_BITS, READ_WORDS, DelayedState, DelayedStatus,
                                          DelayedTransaction, PostedWriteBuffer)
from pcispy.sim.bfm.nets import net
from pcispy.sim.control import ControlSignature, register_reads, written

__all__ = ["PCIBridge"]


class _TargetKind(enum.Enum, shape=3):
    NONE = 0
    OWN_CONFIG = 1
    POSTED = 2
    DELAYED = 3
    RETRY = 4       # posted, but the buffer has no room


class _Answer(enum.Enum, shape=3):
    WAITING = 0
    RETRY = 1
    DATA = 2        # TRDY# for data phases (completion, posted, own configuration)
    ABORT = 3       # target abort (DEVSEL# first, then STOP# without it)


class _MasterState(enum.Enum, shape=3):
    IDLE = 0
    ARB = 1
    ADDR = 2
    DATA = 3
    END = 4
    BACKOFF = 5
    DROP = 6


_READ_COMMANDS = ("0010", "0110", "1010", "1100", "1110")
_ABORT_CLOCK = 5        # no DEVSEL# by clock 5: master abort


def _devsel_clock(m, speed, name):
    clock = Signal(3, name=name)
    with m.Switch(speed):
        for value, number in ((DevselSpeed.FAST, 2), (DevselSpeed.MEDIUM, 3),
                              (DevselSpeed.SLOW, 4), (DevselSpeed.SUBTRACTIVE, 5)):
            with m.Case(value.value):
                m.d.comb += clock.eq(number)
    return clock


class _Outputs:
    """One half's drive of a bus: o/oe per line it may drive (others left at 0)."""
    LINES = {"ad": 32, "cbe": 4, "par": 1, "frame": 1, "irdy": 1, "trdy": 1, "stop": 1,
             "devsel": 1, "req": 1}

    def __init__(self, prefix):
        for name, bits in self.LINES.items():
            setattr(self, f"{name}_o", Signal(bits, name=f"{prefix}_{name}_o"))
            setattr(self, f"{name}_oe", Signal(name=f"{prefix}_{name}_oe"))


class _TargetHalf:
    """The target half of one side: claims what is to cross (or the configuration
    header), takes posted writes, latches and completes delayed transactions.

    ``posted`` and ``delayed`` are the queues of the direction leaving this side;
    ``deliver`` is high while ``delayed``'s completion may be given (crossing delay and
    ordering fence met); ``master_owns`` is high while this side's master half owns the
    bus (the target never claims its own side's transactions).
    """

    def __init__(self, m, bus, *, primary, config, knobs, posted, delayed, deliver,
                 master_owns, stats, name):
        self.m, self.bus, self.primary = m, bus, primary
        self.config, self.knobs, self.posted, self.delayed = config, knobs, posted, delayed
        self.deliver, self.master_owns, self.stats = deliver, master_owns, stats
        self.name = name
        self.out = _Outputs(f"{name}_t")
        #: High in the clock a completion has been given (its transaction ended).
        self.release = Signal(name=f"{name}_t_release")

    def build(self):
        m, bus, cfg, knobs = self.m, self.bus, self.config, self.knobs
        out, name = self.out, self.name
        frame, irdy = bus.frame.i, bus.irdy.i
        frame_prev = Signal(name=f"{name}_frame_prev")
        m.d.sync += frame_prev.eq(frame)
        bus_idle = net(m, ~frame & ~irdy, f"{name}_bus_idle")

        busy = Signal(name=f"{name}_busy")
        claimed = Signal(name=f"{name}_claimed")
        start = net(m, ~(busy & claimed) & frame & ~frame_prev, f"{name}_start")
        clk = Signal(5, name=f"{name}_clk")
        nclk = net(m, Mux(start, 2, Mux(clk == 31, 31, clk + 1)), f"{name}_nclk")

        # ---- the address phase, decoded live ------------------------------------------
        ad, cmd = bus.ad.i, bus.cbe.i
        is_mem = net(m, cmd.matches("0110", "0111", "1100", "1110", "1111"), f"{name}_is_mem")
        is_mem_write = net(m, cmd.matches("0111", "1111"), f"{name}_is_mem_write")
        is_io = net(m, cmd.matches("0010", "0011"), f"{name}_is_io")
        is_cfg = net(m, cmd.matches("1010", "1011"), f"{name}_is_cfg")
        is_read = net(m, cmd.matches(*_READ_COMMANDS), f"{name}_is_read")
        command = cfg.command
        if self.primary:
            mem_fwd = is_mem & command[1] & cfg.in_mem(ad)
            io_fwd = is_io & command[0] & cfg.in_io(ad)
            own_cfg = is_cfg & bus.idsel.i & (ad[0:2] == 0) & (ad[8:11] == 0)
            target_bus = ad[16:24]
            type1 = net(m, is_cfg & (ad[0:2] == 1) & (cfg.secondary_bus != 0)
                        & (cfg.secondary_bus <= target_bus)
                        & (target_bus <= cfg.subordinate_bus), f"{name}_type1")
            device = ad[11:16]
            idsel = Signal(32, name=f"{name}_idsel")
            with m.If(device < 16):
                m.d.comb += idsel.eq(Const(1 << 16, 32) << device)
            type0 = idsel | Cat(Const(0, 2), ad[2:11])
            fwd_addr = Mux(type1 & (target_bus == cfg.secondary_bus), type0, ad)
        else:
            mem_fwd = is_mem & command[2] & ~cfg.in_mem(ad)
            io_fwd = is_io & command[2] & ~cfg.in_io(ad)
            own_cfg = Const(0)
            type1 = Const(0)
            fwd_addr = ad
        kind_now = Signal(_TargetKind, name=f"{name}_kind_now")
        with m.If(self.master_owns):
            m.d.comb += kind_now.eq(_TargetKind.NONE)
        with m.Elif(own_cfg):
            m.d.comb += kind_now.eq(_TargetKind.OWN_CONFIG)
        with m.Elif(mem_fwd & is_mem_write):
            m.d.comb += kind_now.eq(Mux((self.posted.space == 0) | ~self.posted.seg_space,
                                        _TargetKind.RETRY, _TargetKind.POSTED))
        with m.Elif(mem_fwd | io_fwd | type1):
            m.d.comb += kind_now.eq(_TargetKind.DELAYED)

        # What a delayed read fetches on the other bus.
        line = cfg.cache_line
        to_line_end = Signal(range(READ_WORDS + 1), name=f"{name}_to_line_end")
        m.d.comb += to_line_end.eq(Mux((line == 0) | (line > READ_WORDS), 1,
                                       line - (ad[2:8] & (line - 1)[:6])))
        fetch_now = Signal(range(READ_WORDS + 1), name=f"{name}_fetch_now")
        prefetch = knobs["prefetch_words"]
        with m.Switch(cmd):
            with m.Case(Command.MEM_READ_LINE.value):
                m.d.comb += fetch_now.eq(to_line_end)
            with m.Case(Command.MEM_READ_MULTIPLE.value):
                m.d.comb += fetch_now.eq(Mux(prefetch == 0, 1,
                                             Mux(prefetch > READ_WORDS, READ_WORDS, prefetch)))
            with m.Default():
                m.d.comb += fetch_now.eq(1)
        speed = knobs["primary_devsel" if self.primary else "secondary_devsel"]
        dclk_now = _devsel_clock(m, speed, f"{name}_dclk_now")

        # ---- latched for the transaction ---------------------------------------------
        kind = self.kind_latched = Signal(_TargetKind, name=f"{name}_kind")
        t_cmd = Signal(4, name=f"{name}_cmd")
        t_addr = Signal(32, name=f"{name}_addr")
        t_fwd_addr = Signal(32, name=f"{name}_fwd_addr")
        t_fwd_cmd = Signal(4, name=f"{name}_fwd_cmd")
        t_fetch = Signal(range(READ_WORDS + 1), name=f"{name}_fetch")
        t_read = Signal(name=f"{name}_read")
        t_dclk = Signal(3, name=f"{name}_dclk")
        t_nonlinear = Signal(name=f"{name}_nonlinear")
        with m.If(start):
            fwd_cmd = Mux(is_mem_write, Command.MEM_WRITE.value,
                          Mux(type1 & (ad[16:24] == cfg.secondary_bus) & ~cmd[0],
                              Command.CONFIG_READ.value,
                              Mux(type1 & (ad[16:24] == cfg.secondary_bus),
                                  Command.CONFIG_WRITE.value, cmd)))
            m.d.sync += [kind.eq(kind_now), t_cmd.eq(cmd), t_addr.eq(ad),
                         t_fwd_addr.eq(fwd_addr), t_fwd_cmd.eq(fwd_cmd),
                         t_fetch.eq(fetch_now), t_read.eq(is_read), t_dclk.eq(dclk_now),
                         t_nonlinear.eq(is_mem & (ad[0:2] != 0))]
        k_kind = net(m, Mux(start, kind_now, kind), f"{name}_k")
        k_read = Mux(start, is_read, t_read)
        k_dclk = Mux(start, dclk_now, t_dclk)

        # IRDY# of the first data phase: the byte enables (and write data) of a delayed
        # request are taken there.
        irdy_seen = Signal(name=f"{name}_irdy_seen")
        cap_be = Signal(4, name=f"{name}_cap_be")
        cap_data = Signal(32, name=f"{name}_cap_data")
        first_irdy = net(m, irdy & ~irdy_seen & busy & ~start, f"{name}_first_irdy")
        with m.If(start):
            m.d.sync += irdy_seen.eq(0)
        with m.Elif(first_irdy):
            m.d.sync += [irdy_seen.eq(1), cap_be.eq(bus.cbe.i), cap_data.eq(bus.ad.i)]
        be_now = Mux(irdy_seen, cap_be, bus.cbe.i)
        data_now = Mux(irdy_seen, cap_data, bus.ad.i)

        # ---- the transaction ----------------------------------------------------------
        answer = Signal(_Answer, name=f"{name}_answer")
        phase = Signal(range(READ_WORDS + 1), name=f"{name}_phase")    # words moved
        abort_next = Signal(name=f"{name}_abort_next")
        turnaround = Signal(name=f"{name}_turnaround")
        trdy_o, stop_o, devsel_o = out.trdy_o, out.stop_o, out.devsel_o
        ad_oe = Signal(name=f"{name}_ad_oe")
        delivering = Signal(name=f"{name}_delivering")   # this transaction completes the slot
        delayed, posted = self.delayed, self.posted
        moved = net(m, busy & claimed & trdy_o & irdy, f"{name}_moved")
        last_edge = net(m, busy & claimed & irdy & ~frame & (trdy_o | stop_o),
                        f"{name}_last_edge")
        m.d.comb += delayed.r_index.eq(phase)

        dly = delayed
        match = net(m, (dly.state != DelayedState.FREE) & (dly.cmd == t_cmd)
                    & (dly.addr == t_addr) & (dly.be == be_now)
                    & (t_read | (dly.data == data_now)), f"{name}_match")
        words = Mux(dly.status == DelayedStatus.OK, dly.words, 1)
        cfg_index = t_addr[2:8]
        cfg_word = cfg.read(cfg_index) if self.primary else Const(0, 32)

        with m.If(turnaround):
            m.d.sync += [out.trdy_oe.eq(0), turnaround.eq(0)]
        m.d.comb += [out.stop_oe.eq(out.trdy_oe), out.devsel_oe.eq(out.trdy_oe)]

        with m.If(start | busy):
            m.d.sync += clk.eq(nclk)
        with m.If(start):
            m.d.sync += [busy.eq(1), claimed.eq(0), answer.eq(_Answer.WAITING), phase.eq(0),
                         abort_next.eq(0), delivering.eq(0)]

        ours = k_kind != _TargetKind.NONE
        claim_now = net(m, (start | busy) & ~claimed & ours & (nclk == k_dclk),
                        f"{name}_claim_now")
        # The first answer: not before the DEVSEL# clock, read data not before clock 3
        # (the AD turnaround), a posted write not before its latency, a delayed
        # transaction not before its first IRDY# (its byte enables and data).
        earliest = Mux(k_read, 3, Mux(k_kind == _TargetKind.POSTED,
                                      knobs["post_latency"] + 1, 2))
        answer_now = net(m, (claimed | claim_now) & (answer == _Answer.WAITING)
                         & (nclk >= k_dclk) & (nclk >= earliest)
                         & ((k_kind != _TargetKind.DELAYED) | irdy_seen | first_irdy),
                         f"{name}_answer_now")

        with m.If(~start & busy & claimed & (last_edge | bus_idle)):
            # The transaction is over: our lines driven deasserted for one clock.
            m.d.sync += [busy.eq(0), claimed.eq(0), trdy_o.eq(0), stop_o.eq(0),
                         devsel_o.eq(0), ad_oe.eq(0), turnaround.eq(1)]
            with m.If(kind == _TargetKind.POSTED):
                m.d.comb += posted.w_close.eq(1)
            with m.If(delivering):
                m.d.comb += [self.release.eq(1), self.stats["completions"].eq(1)]
        with m.Elif(~start & busy & ~claimed & bus_idle):
            m.d.sync += busy.eq(0)
        with m.Elif((start | busy) & ~claimed & ~claim_now & (~ours | (nclk > k_dclk))):
            pass                                  # not ours: wait for the bus to go idle
        with m.Elif(start | busy):
            with m.If(claim_now):
                m.d.sync += [claimed.eq(1), out.trdy_oe.eq(1), turnaround.eq(0),
                             devsel_o.eq(1)]
            # Read data from clock 3 to the end (never after a target abort).
            m.d.sync += ad_oe.eq((claimed | claim_now) & k_read & (nclk >= 3)
                                 & (answer != _Answer.ABORT) & ~abort_next)
            with m.If(answer_now):
                self._first_answer(k_kind, dly, match, words, be_now, data_now,
                                   t_cmd, t_addr, t_fwd_addr, t_fwd_cmd, t_fetch, t_read,
                                   t_nonlinear, answer, delivering, abort_next, frame)
            with m.Elif(abort_next):
                m.d.sync += [devsel_o.eq(0), stop_o.eq(1), trdy_o.eq(0), abort_next.eq(0)]
            with m.Elif(answer == _Answer.DATA):
                self._later_phases(moved, phase, words, frame)

        # Posted words into the buffer as they move.
        with m.If(moved & (kind == _TargetKind.POSTED)):
            m.d.comb += [posted.w_en.eq(1), posted.w_new.eq(phase == 0),
                         posted.w_addr.eq(t_addr[2:]), posted.w_data.eq(bus.ad.i),
                         posted.w_be.eq(bus.cbe.i), self.stats["posted_words"].eq(1)]
        # Own configuration writes.
        if self.primary:
            with m.If(moved & (kind == _TargetKind.OWN_CONFIG) & t_cmd[0]):
                cfg.write(cfg_index, bus.ad.i, bus.cbe.i)

        # Read data on AD: the word of the data phase presented (from registers only).
        shown = Signal(32, name=f"{name}_shown")
        m.d.comb += shown.eq(Mux(kind == _TargetKind.OWN_CONFIG, cfg_word,
                                 Mux(dly.status == DelayedStatus.OK, dly.r_data,
                                     0xFFFF_FFFF)))
        m.d.comb += [out.ad_o.eq(Mux(ad_oe, shown, 0)), out.ad_oe.eq(ad_oe)]
        m.d.sync += [out.par_o.eq(ad_oe & Cat(out.ad_o, bus.cbe.i).xor()),
                     out.par_oe.eq(ad_oe)]
        self.busy, self.claimed = busy, claimed

    def _first_answer(self, kind, dly, match, words, be_now, data_now, t_cmd,
                      t_addr, t_fwd_addr, t_fwd_cmd, t_fetch, t_read, t_nonlinear, answer,
                      delivering, abort_next, frame):
        m, out, stats, cfg = self.m, self.out, self.stats, self.config
        trdy_o, stop_o = out.trdy_o, out.stop_o

        def retry():
            m.d.sync += [stop_o.eq(1), trdy_o.eq(0), answer.eq(_Answer.RETRY)]
            m.d.comb += stats["retries"].eq(1)

        def data(stop):
            m.d.sync += [trdy_o.eq(1), stop_o.eq(stop), answer.eq(_Answer.DATA)]

        with m.Switch(kind):
            with m.Case(_TargetKind.RETRY):
                retry()
            with m.Case(_TargetKind.OWN_CONFIG):
                data(frame)
            with m.Case(_TargetKind.POSTED):
                data(frame & ((self.posted.space == 1) | t_nonlinear))
            with m.Case(_TargetKind.DELAYED):
                with m.If(dly.state == DelayedState.FREE):
                    m.d.comb += [dly.latch.eq(1), dly.l_cmd.eq(t_cmd), dly.l_addr.eq(t_addr),
                                 dly.l_be.eq(be_now), dly.l_data.eq(data_now),
                                 dly.l_fwd_addr.eq(t_fwd_addr), dly.l_fwd_cmd.eq(t_fwd_cmd),
                                 dly.l_words.eq(Mux(t_read, t_fetch, 1)),
                                 stats["requests"].eq(1)]
                    retry()
                with m.Elif(match & self.deliver):
                    m.d.sync += delivering.eq(1)
                    with m.If(dly.status == DelayedStatus.TARGET_ABORT):
                        # DEVSEL# has been asserted for a clock before STOP# comes alone.
                        m.d.sync += [abort_next.eq(1), answer.eq(_Answer.ABORT)]
                        if self.primary:
                            m.d.comb += cfg.set_ta_signaled.eq(1)
                    with m.Else():
                        data(frame & ((words == 1) | ~t_read | t_nonlinear))
                with m.Else():
                    retry()

    def _later_phases(self, moved, phase, words, frame):
        """After the first TRDY#: hold STOP# to the end; present the next word while
        there is one (the last with STOP# if the master wants more); a posted write
        disconnects on the last word the buffer can take."""
        m, out = self.m, self.out
        trdy_o, stop_o = out.trdy_o, out.stop_o
        with m.If(moved):
            m.d.sync += phase.eq(phase + 1)
        with m.If(stop_o):
            m.d.sync += trdy_o.eq(trdy_o & ~moved)
        with m.Elif(moved):
            nxt = phase + 1
            with m.Switch(self.kind_latched):
                with m.Case(_TargetKind.POSTED):
                    room = self.posted.space - 1     # the word moving now is not counted yet
                    with m.If(room == 0):
                        m.d.sync += [trdy_o.eq(0), stop_o.eq(1)]
                    with m.Else():
                        m.d.sync += [trdy_o.eq(1), stop_o.eq(frame & (room == 1))]
                with m.Case(_TargetKind.DELAYED):
                    with m.If(nxt >= words):
                        m.d.sync += [trdy_o.eq(0), stop_o.eq(1)]
                    with m.Else():
                        m.d.sync += [trdy_o.eq(1), stop_o.eq(frame & (nxt + 1 == words))]
                with m.Default():
                    m.d.sync += [trdy_o.eq(0), stop_o.eq(1)]


class _MasterHalf:
    """The master half of one side: writes out the posted writes and runs the delayed
    transactions of the direction arriving at this side.

    ``posted`` and ``delayed`` are that direction's queues; ``back_enq`` counts the
    posted words going the other way (a completion's fence); ``latency_timer`` is this
    side's Latency Timer.
    """

    def __init__(self, m, bus, *, knobs, posted, delayed, back_enq, latency_timer, config,
                 stats, name):
        self.m, self.bus, self.knobs = m, bus, knobs
        self.posted, self.delayed, self.back_enq = posted, delayed, back_enq
        self.latency_timer, self.config, self.stats, self.name = (latency_timer, config,
                                                                  stats, name)
        self.out = _Outputs(f"{name}_m")
        self.owning = Signal(name=f"{name}_owning")
        #: One-clock pulses: a transaction of this half ended in a master (target) abort.
        self.master_aborted = Signal(name=f"{name}_master_aborted")
        self.target_aborted = Signal(name=f"{name}_target_aborted")

    def build(self):
        m, bus, knobs, name = self.m, self.bus, self.knobs, self.name
        posted, dly, out, stats = self.posted, self.delayed, self.out, self.stats
        state = Signal(_MasterState, name=f"{name}_state")
        job_post = Signal(name=f"{name}_job_post")
        addr = Signal(32, name=f"{name}_addr")
        cmd = Signal(4, name=f"{name}_cmd")
        left = Signal(range(READ_WORDS + 1), name=f"{name}_left")     # words still to move
        moved_count = Signal(range(READ_WORDS + 1), name=f"{name}_moved_count")
        frame_on = Signal(name=f"{name}_frame_on")
        devsel_seen = Signal(name=f"{name}_devsel_seen")
        clk = Signal(5, name=f"{name}_clk")
        lt_count = Signal(9, name=f"{name}_lt_count")
        master_abort = Signal(name=f"{name}_master_abort")
        target_abort = Signal(name=f"{name}_target_abort")
        retried = Signal(name=f"{name}_retried")
        backoff = Signal(8, name=f"{name}_backoff")
        drop_left = Signal(range(READ_WORDS + 1), name=f"{name}_drop_left")
        post_age = Signal(8, name=f"{name}_post_age")
        parked = Signal(name=f"{name}_parked")

        frame, irdy = bus.frame.i, bus.irdy.i
        trdy, stop, devsel, gnt = bus.trdy.i, bus.stop.i, bus.devsel.i, bus.gnt.i
        bus_idle = net(m, ~frame & ~irdy, f"{name}_m_bus_idle")
        go = net(m, gnt & bus_idle, f"{name}_go")

        # What is ready to go out: a posted transaction's words first (posted writes may
        # pass delayed transactions), then the delayed transaction, once no posted word
        # taken before it waits (it pushes them ahead), or again after a retry.
        with m.If(posted.head_valid):
            m.d.sync += post_age.eq(Mux(post_age == 0xFF, post_age, post_age + 1))
        with m.Else():
            m.d.sync += post_age.eq(0)
        post_ready = net(m, posted.head_valid
                         & ((posted.head_count >= knobs["post_threshold"]) | posted.head_closed)
                         & (post_age >= knobs["post_delay"]), f"{name}_post_ready")
        dly_start = net(m, (dly.state == DelayedState.QUEUED)
                        & (dly.age >= knobs["request_delay"]) & posted.empty,
                        f"{name}_dly_start")
        dly_resume = net(m, dly.state == DelayedState.RUNNING, f"{name}_dly_resume")
        ready = net(m, post_ready | dly_start | dly_resume, f"{name}_ready")
        max_burst = knobs["post_max_burst"]
        snapshot = Mux((max_burst != 0) & (posted.head_count > max_burst), max_burst,
                       posted.head_count)

        def begin(posts_only=False):
            """At this edge: the address phase is the next clock (the flush takes the
            words that are here now)."""
            def common():
                m.d.sync += [state.eq(_MasterState.ADDR), clk.eq(1), lt_count.eq(0),
                             devsel_seen.eq(0), moved_count.eq(0), master_abort.eq(0),
                             target_abort.eq(0), retried.eq(0)]
            with m.If(post_ready):
                common()
                m.d.sync += [job_post.eq(1), addr.eq(Cat(Const(0, 2), posted.head_addr)),
                             cmd.eq(Command.MEM_WRITE.value), left.eq(snapshot)]
            if not posts_only:
                with m.Elif(dly_start | dly_resume):
                    common()
                    m.d.sync += [job_post.eq(0), addr.eq(dly.fwd_addr), cmd.eq(dly.fwd_cmd),
                                 left.eq(dly.fetch)]
                    with m.If(dly_start):
                        m.d.comb += dly.start.eq(1)

        writing = cmd[0]              # the command's code bit 0: data from the master
        in_addr = state == _MasterState.ADDR
        in_data = state == _MasterState.DATA
        m.d.comb += self.owning.eq(in_addr | in_data)
        moved = net(m, in_data & trdy, f"{name}_m_moved")
        devsel_now = devsel_seen | devsel
        lt_stop = (lt_count > self.latency_timer) & ~gnt
        # The target's answer in this data phase.
        abort_by_target = devsel_seen & ~devsel & stop
        no_claim = ~devsel_now & (clk >= _ABORT_CLOCK)

        with m.If(moved):
            m.d.sync += [left.eq(left - 1), moved_count.eq(moved_count + 1)]
            with m.If(job_post):
                m.d.comb += posted.pop.eq(1)
            with m.Elif(~writing):
                m.d.comb += [dly.w_en.eq(1), dly.w_index.eq(moved_count),
                             dly.w_data.eq(bus.ad.i)]

        def finish(status, words):
            m.d.comb += [dly.finish.eq(1), dly.f_status.eq(status), dly.f_words.eq(words),
                         dly.f_fence.eq(self.back_enq)]

        with m.Switch(state):
            with m.Case(_MasterState.IDLE):
                with m.If(ready & go):
                    begin()
                with m.Elif(ready):
                    m.d.sync += state.eq(_MasterState.ARB)
            with m.Case(_MasterState.ARB):
                with m.If(ready & go):
                    begin()
                with m.Elif(~ready):
                    m.d.sync += state.eq(_MasterState.IDLE)
            with m.Case(_MasterState.ADDR):
                m.d.sync += [state.eq(_MasterState.DATA), clk.eq(2), lt_count.eq(1),
                             frame_on.eq(left > 1)]
            with m.Case(_MasterState.DATA):
                m.d.sync += [devsel_seen.eq(devsel_now), clk.eq(Mux(clk == 31, 31, clk + 1)),
                             lt_count.eq(Mux(lt_count == 0x1FF, lt_count, lt_count + 1))]
                with m.If(~frame_on & (trdy | stop)):
                    # The last data phase is over.
                    m.d.sync += [state.eq(_MasterState.END), target_abort.eq(abort_by_target),
                                 retried.eq(stop & ~trdy & (moved_count == 0)
                                            & ~abort_by_target)]
                with m.Elif(no_claim):
                    m.d.sync += master_abort.eq(1)
                    with m.If(frame_on):
                        m.d.sync += frame_on.eq(0)      # FRAME# first, IRDY# a clock later
                    with m.Else():
                        m.d.sync += state.eq(_MasterState.END)
                with m.Elif(frame_on & stop):
                    m.d.sync += frame_on.eq(0)          # the target ends it
                with m.Elif(moved):
                    with m.If((left <= 2) | lt_stop):
                        m.d.sync += frame_on.eq(0)
                with m.Elif(frame_on & lt_stop):
                    m.d.sync += frame_on.eq(0)
            with m.Case(_MasterState.END):
                m.d.sync += state.eq(_MasterState.IDLE)
                with m.If(job_post):
                    with m.If(master_abort | target_abort):
                        # The words that were not written are lost (Master-Abort Mode 0).
                        m.d.sync += [drop_left.eq(left), state.eq(_MasterState.DROP)]
                        m.d.comb += [stats["master_aborts"].eq(master_abort),
                                     stats["target_aborts"].eq(target_abort)]
                    with m.Elif(retried):
                        m.d.sync += [backoff.eq(knobs["retry_backoff"]),
                                     state.eq(_MasterState.BACKOFF)]
                    with m.Else():
                        m.d.comb += stats["flushes"].eq(1)
                        with m.If(go):
                            begin(posts_only=True)
                with m.Else():
                    with m.If(master_abort):
                        finish(DelayedStatus.MASTER_ABORT, 1)
                        m.d.comb += stats["master_aborts"].eq(1)
                    with m.Elif(target_abort):
                        finish(DelayedStatus.TARGET_ABORT, 0)
                        m.d.comb += stats["target_aborts"].eq(1)
                    with m.Elif(retried):
                        m.d.sync += [backoff.eq(knobs["retry_backoff"]),
                                     state.eq(_MasterState.BACKOFF)]
                    with m.Else():
                        finish(DelayedStatus.OK, moved_count)
                m.d.comb += [self.master_aborted.eq(master_abort),
                             self.target_aborted.eq(target_abort)]
            with m.Case(_MasterState.BACKOFF):
                with m.If(backoff <= 1):
                    m.d.sync += state.eq(_MasterState.IDLE)
                m.d.sync += backoff.eq(backoff - 1)
            with m.Case(_MasterState.DROP):
                with m.If(drop_left == 0):
                    m.d.sync += state.eq(_MasterState.IDLE)
                with m.Else():
                    m.d.comb += posted.pop.eq(1)
                    m.d.sync += drop_left.eq(drop_left - 1)

        # The lines (every one from registers; the queues' words are registers too).
        irdy_out = net(m, in_data, f"{name}_irdy_out")
        irdy_was = Signal(name=f"{name}_irdy_was")
        m.d.sync += [irdy_was.eq(irdy_out), parked.eq(go)]
        parking = parked & ~self.owning
        data_word = Mux(job_post, posted.head_data, dly.data)
        data_be = Mux(job_post, posted.head_be, Mux(moved_count == 0, dly.be, 0))
        m.d.comb += [
            out.frame_o.eq(in_addr | (in_data & frame_on)), out.frame_oe.eq(self.owning),
            out.irdy_o.eq(irdy_out), out.irdy_oe.eq(in_data | irdy_was),
            out.req_o.eq((state == _MasterState.ARB) | self.owning), out.req_oe.eq(~bus.rst.i),
        ]
        with m.If(in_addr):
            m.d.comb += [out.ad_o.eq(addr), out.ad_oe.eq(1), out.cbe_o.eq(cmd), out.cbe_oe.eq(1)]
        with m.Elif(in_data):
            m.d.comb += [out.ad_o.eq(Mux(writing, data_word, 0)), out.ad_oe.eq(writing),
                         out.cbe_o.eq(data_be), out.cbe_oe.eq(1)]
        with m.Elif(parking):
            m.d.comb += [out.ad_oe.eq(1), out.cbe_oe.eq(1)]
        m.d.sync += [out.par_o.eq(out.ad_oe & Cat(out.ad_o, out.cbe_o).xor()),
                     out.par_oe.eq(out.ad_oe)]
        self.state = state


class PCIBridge(wiring.Component):
    """A PCI-to-PCI bridge between a primary and a secondary 32-bit bus (domain ``sync``,
    the bus clock; both buses share it).

    Ports:
        primary (Out, PCIBusSignature(32)): the primary side (towards the host): target
            and master (REQ#/GNT#, IDSEL for its configuration header), and INTA# driven
            (open drain) while the secondary bus's INTA# is asserted.
        secondary (Out, PCIBusSignature(32)): the secondary side: target and master
            (REQ#/GNT#); it samples INTA#.
        ctl (Out, ControlSignature): the control port (:data:`REGISTERS`).

    Parameters:
        profile: the :class:`BridgeProfile` in force after reset.
    """

    def __init__(self, *, profile=TRANSPARENT):
        self.profile = profile
        super().__init__({"primary": Out(PCIBusSignature(32)),
                          "secondary": Out(PCIBusSignature(32)),
                          "ctl": Out(ControlSignature())})

    def elaborate(self, platform):
        m = Module()
        ctl = self.ctl
        # The tuning registers, reset to the profile.
        values = self.profile.fields()
        bank = {}
        for name in TUNING:
            register = REGISTERS[name]
            reset = sum(values.get(f.name, f.reset) << f.lsb for f in register.fields)
            bank[name] = Signal(32, name=f"reg_{name.lower()}", init=reset)
        knobs = {f.name: f.get(bank[name]) for name in TUNING for f in REGISTERS[name].fields}
        with m.If(ctl.w_en):
            with m.Switch(ctl.addr):
                for name in TUNING:
                    with m.Case(BridgeReg[name]):
                        m.d.sync += bank[name].eq(ctl.w_data)

        cfg = BridgeConfigSpace(m)
        m.submodules.down_posted = down_posted = PostedWriteBuffer()
        m.submodules.up_posted = up_posted = PostedWriteBuffer()
        m.submodules.down_delayed = down_delayed = DelayedTransaction()
        m.submodules.up_delayed = up_delayed = DelayedTransaction()
        stats = {direction: {name: Signal(name=f"{direction}_{name}_inc") for name in STATS}
                 for direction in DIRECTIONS}

        def fence_met(deq, fence):
            return ~(deq - fence)[COUNT_BITS - 1]

        deliver_down = net(m, (down_delayed.state == DelayedState.DONE)
                           & (down_delayed.age >= knobs["completion_delay"])
                           & fence_met(up_posted.deq, down_delayed.fence), "deliver_down")
        deliver_up = net(m, (up_delayed.state == DelayedState.DONE)
                         & (up_delayed.age >= knobs["completion_delay"])
                         & fence_met(down_posted.deq, up_delayed.fence), "deliver_up")

        p_master = _MasterHalf(m, self.primary, knobs=knobs, posted=up_posted,
                               delayed=up_delayed, back_enq=down_posted.enq,
                               latency_timer=cfg.latency, config=cfg, stats=stats["upstream"],
                               name="p")
        s_master = _MasterHalf(m, self.secondary, knobs=knobs, posted=down_posted,
                               delayed=down_delayed, back_enq=up_posted.enq,
                               latency_timer=cfg.secondary_latency, config=cfg,
                               stats=stats["downstream"], name="s")
        p_target = _TargetHalf(m, self.primary, primary=True, config=cfg, knobs=knobs,
                               posted=down_posted, delayed=down_delayed, deliver=deliver_down,
                               master_owns=p_master.owning, stats=stats["downstream"],
                               name="p")
        s_target = _TargetHalf(m, self.secondary, primary=False, config=cfg, knobs=knobs,
                               posted=up_posted, delayed=up_delayed, deliver=deliver_up,
                               master_owns=s_master.owning, stats=stats["upstream"], name="s")
        for half in (p_master, s_master, p_target, s_target):
            half.build()
        m.d.comb += [cfg.set_ma_received.eq(p_master.master_aborted | s_master.master_aborted),
                     cfg.set_ta_received.eq(p_master.target_aborted | s_master.target_aborted)]
        cfg.status_updates()

        # A completion nobody collects is dropped when the discard timer runs out.
        discards = {}
        for direction, delayed, target in (("downstream", down_delayed, p_target),
                                           ("upstream", up_delayed, s_target)):
            discard = net(m, (delayed.state == DelayedState.DONE)
                          & (delayed.age >= knobs["discard_clocks"]) & ~target.busy,
                          f"{direction}_discard")
            m.d.comb += stats[direction]["discards"].eq(discard)
            discards[direction] = discard
        m.d.comb += [down_delayed.release.eq(discards["downstream"] | p_target.release),
                     up_delayed.release.eq(discards["upstream"] | s_target.release)]

        # Each side's lines: the target's and the master's (never both at once).
        for bus, target, master in ((self.primary, p_target, p_master),
                                    (self.secondary, s_target, s_master)):
            for line in _Outputs.LINES:
                t_o, t_oe = getattr(target.out, f"{line}_o"), getattr(target.out, f"{line}_oe")
                m_o, m_oe = getattr(master.out, f"{line}_o"), getattr(master.out, f"{line}_oe")
                m.d.comb += [getattr(bus, line).o.eq(t_o | m_o),
                             getattr(bus, line).oe.eq(t_oe | m_oe)]
        # INTA# passes from the secondary bus to the primary as wired on a backplane.
        inta = Signal(name="inta_passed")
        m.d.sync += inta.eq(self.secondary.inta.i)
        m.d.comb += [self.primary.inta.o.eq(inta), self.primary.inta.oe.eq(inta)]

        # Statistics and the control port.
        counters = {}
        for direction in DIRECTIONS:
            for name in STATS:
                counter = Signal(32, name=f"{direction}_{name}")
                index = BridgeReg[f"{direction.upper()}_{name.upper()}"]
                with m.If(written(ctl, index)):
                    m.d.sync += counter.eq(0)
                with m.Elif(stats[direction][name]):
                    m.d.sync += counter.eq(counter + 1)
                counters[index] = counter
        state = Signal(REGISTERS["STATE"].layout)
        m.d.comb += [state.down_state.eq(down_delayed.state), state.up_state.eq(up_delayed.state),
                     state.down_posted.eq(64 - down_posted.space),
                     state.up_posted.eq(64 - up_posted.space)]
        register_reads(m, ctl, {
            BridgeReg.ID: ID_VALUE, **{BridgeReg[name]: bank[name] for name in TUNING},
            BridgeReg.STATE: state.as_value(), BridgeReg.SECONDARY_BUS: cfg.secondary_bus,
            **counters})
        m.d.comb += ctl.event.eq(0)
        return m
