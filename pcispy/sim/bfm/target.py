# SPDX-License-Identifier: BSD-2-Clause
"""A behavioural PCI target with a programmable behaviour profile and error injection.

Written from the PCI rules (PCI Local Bus Specification 3.0), sharing no state machine
with the board's gateware. One target serves as the host bridge's memory, as the test device's
target and (with a different storage, :mod:`pcispy.sim.bfm.legacy`) as a legacy device.

Clock numbering follows the specification: the address phase is clock 1; every output is
registered, so a decision made at the rising edge ending clock ``c`` shows in clock
``c + 1``. Fast DEVSEL# is clock 2, medium 3, slow 4, subtractive 5. The *latency* of a
data phase is the number of the clock TRDY# (or STOP#) is first asserted, minus one.

Who drives what, and when (PCI LB 3.0 §2.1, §3.2.4, §3.3.1, §3.7.4):

- DEVSEL#, TRDY#, STOP# (and ACK64#): from the clock the target claims (DEVSEL#
  asserted) through the last data phase; driven deasserted in the clock after it; released
  in the next. The next transaction's address phase, their turnaround, comes no earlier.
- AD (and AD[63:32] on 64-bit transfers) on reads: from clock 3 at the earliest (clock 2
  is the turnaround after the initiator's address) through the last data phase; released
  in the clock after it. Never after a target abort.
- PAR (PAR64): one clock after every clock in which the target drove AD (AD[63:32]).
- PERR#: asserted two clocks after a write data phase whose parity was bad (or, with
  ``perr_early``, from two clocks after PAR first shows the error while the phase waits,
  held until two clocks after the phase completes), driven deasserted one clock,
  released. SERR# (open drain): one clock after an address parity error, when enabled.

Everything is programmed through the control port, whose registers and logic are
pcispy/sim/bfm/target_control.py; :class:`~pcispy.sim.bfm.target_driver.TargetDriver`
(pcispy/sim/bfm/target_driver.py) is the Python side.
"""

import math

from amaranth import Cat, Module, Mux, Signal, C
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from pcispy.pci.bus import PCIBusSignature, DevselSpeed, Command
from pcispy.sim.control import ControlSignature, written
from pcispy.sim.bfm.backdoor_ram import BackdoorRAM
from pcispy.sim.bfm.gate import Gate
from pcispy.sim.bfm.nets import at_least, net
from pcispy.sim.bfm.profiles import DisconnectMode, RetryMode, PROFILES
from pcispy.sim.bfm.target_control import (FIELDS, REFUSALS, STATS, Knob, Reg, _ControlPortLogic,
                                           check_profile)

__all__ = ["BehaviouralTarget"]


def _parity(*values):
    """Even parity (XOR of all bits) of Amaranth values."""
    return Cat(*values).xor()


class BehaviouralTarget(wiring.Component):
    """A PCI target answering memory, I/O and type-0 configuration cycles from a storage,
    with a programmable behaviour profile, statistics and error-injection knobs.

    Ports:
        bus (Out, PCIBusSignature(width)): the target's side of the bus (drives TRDY#,
            STOP#, DEVSEL#, ACK64#, AD/PAR on reads, PERR#, SERR#; reads the rest).
        ctl (Out, ControlSignature()): the control port (members as ControlSignature
            documents them from the agent side: addr in, r_data out) (:class:`Reg`).

    Parameters:
        width: bus width, 32 or 64 (storage words are ``width`` bits).
        mem_addr_bits: log2 of the storage depth in words.
        verilog_ram: storage as the hand-written Verilog RAM (Verilator builds) or as an
            Amaranth memory (Python simulator).
        profile: the :class:`Profile` in force after reset (default ``ideal``).
        seed: the random generator's seed after reset.
        fields: further reset values, ``{field name: value}``.
        gated: run on a clock gated while it has nothing to do (a Verilator build only,
            :mod:`pcispy.sim.bfm.gate`): no transaction it claimed or may claim, nothing
            it drives or reports pending, no control-port access (it sleeps through
            other targets' transactions after their address phase).

    Storage backdoor: ``<instance>.ram.ram.bd_storage[word]`` in a Verilator build (the
    RAM's instance is ``ram`` inside the submodule ``ram``), ``ram.bd_storage`` here.
    """
    def __init__(self, width=32, mem_addr_bits=18, verilog_ram=True, *, profile=None,
                 seed=1, fields=None, gated=False):
        if width not in (32, 64):
            raise ValueError(f"PCI bus width must be 32 or 64, not {width!r}")
        self.width = width
        self.mem_addr_bits = mem_addr_bits
        self.verilog_ram = verilog_ram
        self.gated = gated
        self.reset_words = check_profile(profile or PROFILES["ideal"], width=width, seed=seed,
                                         fields=fields)
        super().__init__({"bus": Out(PCIBusSignature(width)), "ctl": Out(ControlSignature())})

    def _storage(self):
        """The component holding the data (ports as :class:`BackdoorRAM`)."""
        return BackdoorRAM(width=self.width, addr_bits=self.mem_addr_bits,
                           verilog=self.verilog_ram)

    def elaborate(self, platform):
        top = Module()          # the clock gate and what must see every clock
        m = Module()            # the protocol engine and the registers, on the gated clock
        # The storage runs on every clock: its read port shows what Python wrote through
        # the backdoor a clock later, asleep or not.
        top.submodules.ram = ram = self._storage()
        # The steps share their signals through ``logic``; their order is the order in
        # which their statements are added (a later assignment to a signal wins).
        gate = Gate(top, gated=self.gated)
        logic = _TargetLogic(self, m, ram, top)
        logic.decode_address()
        logic.draw_first_answer()
        logic.latch_transaction()
        logic.answer()
        logic.idle_and_reset_knobs()
        logic.read_data()
        logic.write_storage()
        logic.parity_outputs()
        logic.parity_checks()
        logic.perr_serr()
        logic.config_space()
        logic.control_writes()
        logic.hardware_updates()
        logic.control_reads()
        gate.add(m, *logic.wake())
        return top


class _TargetLogic(_ControlPortLogic):
    """The logic of one :class:`BehaviouralTarget`, added to its module step by step.

    The attributes are the signals the steps share: the control registers (``bank``, one
    signal per :class:`Reg`; :meth:`fld` reads a field), the live decode of an address
    phase (``a_*``), the values latched for the transaction (``r``, and ``t``: the values
    in force at this edge), the transaction's state and the target's outputs.

    Every expression read in more than one place is put in a signal of its own
    (:meth:`net`, see :mod:`pcispy.sim.bfm.nets`).
    """

    def __init__(self, target, m, ram, free):
        self.m, self.ram = m, ram
        self.free = free              # the module of the registers that see every clock
        self.target = target
        self.W = W = target.width
        self.wide_bus = W == 64
        self.bus = bus = target.bus
        self.ctl = target.ctl
        self.word_shift = int(math.log2(W // 8))

        self.bank = {reg: Signal(32, name=f"reg_{reg.name.lower()}",
                                 init=target.reset_words.get(reg, 0))
                     for reg in Reg}
        inject = self.fld("inject")
        self.knob = {k: inject[k] for k in Knob}

        # Bus inputs.
        self.frame, self.irdy = frame, irdy = bus.frame.i, bus.irdy.i
        # FRAME# and IRDY# of the clock before, sampled on every clock.
        self.frame_prev = Signal()
        self.irdy_prev = Signal()
        free.d.sync += [self.frame_prev.eq(frame), self.irdy_prev.eq(irdy)]
        self.bus_idle = self.net(~frame & ~irdy, "bus_idle")

        # Transaction state.
        self.busy = Signal()          # between an address phase and the end of its transaction
        self.claimed = Signal()       # we assert (or have decided to assert) DEVSEL#
        self.started = Signal()       # the first data phase's TRDY#/STOP# has been given
        self.turnaround = Signal()    # the clock we drive our lines deasserted before release
        self.clk = Signal(10)         # number of the current clock (address phase = 1)
        self.other_devsel = Signal()  # another agent claimed (seen before our subtractive claim)
        self.off = Signal(32)         # storage offset of the data phase
        self.phases = Signal(16)      # data phases completed in this transaction
        self.wcnt = Signal(4)         # wait states left before TRDY#
        self.stopped = Signal()       # STOP# was given: no more TRDY# in this transaction
        # Once-per-transaction knobs done: (g)/(s), (e) pending, (f), (t).
        self.g_done, self.e_drop = Signal(), Signal()
        self.f_done, self.t_done = Signal(), Signal()

        # Outputs.
        self.trdy_o, self.stop_o = Signal(), Signal()
        self.devsel_o, self.ack64_o = Signal(), Signal()
        self.ctl_oe = Signal()        # TRDY#/STOP#/DEVSEL#(/ACK64#) driven
        self.ad_oe = Signal()
        self.ack64_pending = Signal()  # knob (o): ACK64# follows DEVSEL# by a clock
        self.idle_pulse = Signal(2)    # knob (c)

        # This edge samples an address phase (an unclaimed transaction may be followed back
        # to back, without an idle clock).
        self.start = self.net(~(self.busy & self.claimed) & frame & ~self.frame_prev, "start")
        self.nclk = self.net(Mux(self.start, 2, Mux(self.clk == 1023, 1023, self.clk + 1)),
                             "nclk")

        # Shared between the data path, parity, configuration space and control port.
        self.cfg_rdata = Signal(32)
        self.bd_index = Signal(32)
        self.rng = Signal(32, init=target.reset_words[Reg.SEED])
        self.stat_inc = {name: Signal(name=f"count_{name}") for name in STATS.values()}
        self.ev_end = Signal()
        self.abort_signaled = Signal()

    def wake(self):
        """``(wake, bus_wake, access)`` for the gate (:mod:`pcispy.sim.bfm.gate`): high
        before every edge at which a register of the engine would change: a control-port
        access (``access``), RST#, an address phase, a transaction it claimed or may still
        claim (one it does not hit only at its end: the bus idle again), an output it
        drives, a parity check or PERR#/SERR# under way, the idle and reset knobs."""
        ctl, bus = self.ctl, self.bus
        bus_wake = (bus.rst.i | self.start
                    | (self.busy & (self.claimed | self.r["hit"] | self.bus_idle))
                    | self.claimed | self.turnaround | self.ctl_oe | self.ad_oe | bus.par.oe
                    | self.trdy_o | self.stop_o | self.devsel_o | self.ack64_o
                    | self.ack64_pending | (self.idle_pulse != 0)
                    | self.knob[Knob.DEVSEL_ON_IDLE] | self.reset_knob
                    | self.achk | self.dchk | self.wchk | self.phase_end
                    | (self.perr_step != 0) | self.perr_hold | self.serr | self.q_flip)
        if self.wide_bus:
            bus_wake = bus_wake | bus.par64.oe
        access = ctl.w_en | ctl.r_en
        bus_wake = self.net(bus_wake, "bus_wake")
        return access | bus_wake, bus_wake, access

    def fld(self, name):
        """The control-register field ``name`` (a slice of its register)."""
        reg, f = FIELDS[name]
        return f.get(self.bank[reg])

    def net(self, value, name):
        """A combinational signal named ``name`` carrying ``value`` (same shape)."""
        return net(self.m, value, name)

    # ---- the address phase ---------------------------------------------------------------

    def decode_address(self):
        """Live decode of the address phase (valid when ``start``): is it ours, where in the
        storage, how wide."""
        bus, fld, knob = self.bus, self.fld, self.knob
        self.a_ad, self.a_cmd = a_ad, a_cmd = bus.ad.i, bus.cbe.i
        net = self.net
        a_is_mem = net(a_cmd.matches("0110", "0111", "1100", "1110", "1111"), "a_is_mem")
        a_is_io = net(a_cmd.matches("0010", "0011"), "a_is_io")
        self.a_is_cfg = a_is_cfg = net(
            a_cmd.matches("1010", "1011") & bus.idsel.i & (a_ad[0:2] == 0)
            & (a_ad[8:11] == 0) & fld("config_enable"), "a_is_cfg")
        a_is_special = a_cmd == Command.SPECIAL_CYCLE.value
        self.a_read = net(a_cmd.matches("0010", "0110", "1010", "1100", "1110"), "a_read")
        mem_off = net((a_ad - fld("mem_base"))[:32], "a_mem_off")
        io_off = net((a_ad - fld("io_base"))[:32], "a_io_off")
        a_mem_hit = net(a_is_mem & fld("mem_enable") & (mem_off < fld("mem_size")),
                        "a_mem_hit")
        a_io_hit = net(a_is_io & fld("io_enable") & (io_off < fld("io_size")), "a_io_hit")
        a_claim_all = net(fld("claim_all") & (a_is_mem | a_is_io), "a_claim_all")
        self.a_hit = net(fld("enable") & (a_mem_hit | a_io_hit | a_is_cfg | a_claim_all
                                          | (knob[Knob.CLAIM_SPECIAL] & a_is_special)),
                         "a_hit")
        self.a_storage = net(a_mem_hit | a_io_hit | a_claim_all, "a_storage")
        a_off = Mux(a_mem_hit, mem_off,
                    Mux(a_io_hit, (io_off + fld("io_ram_offset"))[:32],
                        Mux(a_is_cfg, a_ad[0:8], mem_off)))
        a_req64 = bus.req64.i if self.wide_bus else C(0)
        self.a_ack64 = net(C(self.wide_bus) & a_is_mem & fld("ack64_capable")
                           & (a_req64 | knob[Knob.ACK64_WITHOUT_REQ64]), "a_ack64")
        self.a_wide = net(self.a_ack64 & a_req64, "a_wide")
        self.a_off = net(Mux(self.a_wide, a_off & ~7, a_off & ~3), "a_off")
        self.a_nonlinear = net(a_is_mem & (a_ad[0:2] != 0) & ~knob[Knob.IGNORE_BURST_ORDER],
                               "a_nonlinear")

    def draw_first_answer(self):
        """When and how the target answers the address phase: the DEVSEL# clock, the
        latency drawn for the first data phase, and whether it retries or aborts."""
        m, fld, knob, rng, a_read = self.m, self.fld, self.knob, self.rng, self.a_read
        # Random draws: an xorshift32 step per address phase.
        x1 = rng ^ (rng << 13)[:32]
        x2 = x1 ^ (x1 >> 17)
        self.rnd = rnd = Signal(32)
        m.d.comb += rnd.eq(x2 ^ (x2 << 5)[:32])
        with m.If(self.start):
            m.d.sync += rng.eq(rnd)
        lat_min = self.net(Mux(a_read, fld("read_latency_min"), fld("write_latency_min")),
                           "lat_min")
        lat_max = Mux(a_read, fld("read_latency_max"), fld("write_latency_max"))
        lat_span = (lat_max - lat_min + 1)[:9]
        lat_draw = (lat_min + (rnd[0:16] * lat_span)[16:25])[:10]
        lat = Mux(knob[Knob.INITIAL_LATENCY_17], 17, lat_draw)

        turn_read = self.net(knob[Knob.TRDY_IN_TURNAROUND] & a_read, "turn_read")
        dclk = Signal(4)
        with m.Switch(fld("devsel_speed")):
            for speed, clock in ((DevselSpeed.FAST, 2), (DevselSpeed.MEDIUM, 3),
                                 (DevselSpeed.SLOW, 4), (DevselSpeed.SUBTRACTIVE, 5)):
                with m.Case(speed.value):
                    m.d.comb += dclk.eq(clock)
        self.a_dclk = a_dclk = self.net(
            Mux(knob[Knob.DEVSEL_LATE], 6, Mux(turn_read, 2, dclk)), "a_dclk")
        self.a_subtractive = self.net(
            (fld("devsel_speed") == DevselSpeed.SUBTRACTIVE.value)
            & ~knob[Knob.DEVSEL_LATE] & ~turn_read, "a_subtractive")
        earliest = Mux(turn_read, 2, Mux(a_read, 3, 2))
        t_data = at_least(m, "t_data", lat + 1, earliest, a_dclk)

        self.retry_policy()
        t_retry = at_least(m, "t_retry", fld("retry_latency") + 1, a_dclk)
        self.a_abort = self.net(self.a_storage
                                & ((self.a_ad - fld("abort_base"))[:32] < fld("abort_size"))
                                & ~self.a_retry_any, "a_abort")
        t_abort = at_least(m, "t_abort", t_data, a_dclk + 1)
        self.a_first = self.net(Mux(self.a_retry_any, t_retry,
                                    Mux(self.a_abort, t_abort, t_data)), "a_first")

    def retry_policy(self):
        """Whether this address phase is retried (``a_retry``), by the retry mode: the
        first attempts of a transaction, every n-th one, or at random."""
        m, fld = self.m, self.fld
        self.pend_valid, self.pend_addr, self.pend_cmd = Signal(), Signal(32), Signal(4)
        self.pend_count = Signal(8)
        self.every_count = Signal(8)
        self.retry_dir = retry_dir = self.net(
            Mux(self.a_read, fld("retry_reads"), fld("retry_writes")), "retry_dir")
        chosen = self.net(self.rnd[16:24] < fld("retry_probability"), "retry_chosen")
        self.same = same = self.net(self.pend_valid & (self.pend_addr == self.a_ad)
                                    & (self.pend_cmd == self.a_cmd), "retry_same")
        self.a_retry = a_retry = Signal()
        with m.Switch(fld("retry_mode")):
            with m.Case(RetryMode.FIRST.value):
                m.d.comb += a_retry.eq(retry_dir & Mux(same, self.pend_count < fld("retry_count"),
                                                       chosen & (fld("retry_count") != 0)))
            with m.Case(RetryMode.EVERY.value):
                m.d.comb += a_retry.eq(retry_dir & (self.every_count + 1 >= fld("retry_count")))
            with m.Case(RetryMode.RANDOM.value):
                m.d.comb += a_retry.eq(retry_dir & chosen)
        self.a_retry_any = self.net(a_retry | self.knob[Knob.STOP_WITHOUT_CLAIM],
                                    "a_retry_any")

    def latch_transaction(self):
        """Latch the decode for the transaction (``r``); ``t`` are the values in force at
        this edge. Keep the retry policy's memory of the transactions it retried."""
        m, knob, start = self.m, self.knob, self.start
        self.r = r = {name: Signal(shape, name=f"txn_{name}") for name, shape in (
            ("hit", 1), ("read", 1), ("storage", 1), ("cfg", 1), ("wide", 1), ("ack64", 1),
            ("nonlinear", 1), ("dclk", 4), ("first", 10), ("retry", 1), ("abort", 1),
            ("subtractive", 1), ("suppress", 1))}
        live = {"hit": self.a_hit, "read": self.a_read, "storage": self.a_storage,
                "cfg": self.a_is_cfg, "wide": self.a_wide, "ack64": self.a_ack64,
                "nonlinear": self.a_nonlinear, "dclk": self.a_dclk, "first": self.a_first,
                "retry": self.a_retry_any, "abort": self.a_abort,
                "subtractive": self.a_subtractive,
                "suppress": knob[Knob.TRDY_WITHOUT_DEVSEL] | knob[Knob.STOP_WITHOUT_CLAIM]}
        self.t = {name: self.net(Mux(start, live[name], r[name]), f"now_{name}")
                  for name in r}
        with m.If(start):
            m.d.sync += [r[name].eq(live[name]) for name in r]
            with m.If(self.a_hit & self.retry_dir):
                with m.Switch(self.fld("retry_mode")):
                    with m.Case(RetryMode.FIRST.value):
                        with m.If(self.a_retry):
                            m.d.sync += [self.pend_valid.eq(1), self.pend_addr.eq(self.a_ad),
                                         self.pend_cmd.eq(self.a_cmd),
                                         self.pend_count.eq(Mux(self.same,
                                                                self.pend_count + 1, 1))]
                        with m.Else():
                            m.d.sync += self.pend_valid.eq(0)
                    with m.Case(RetryMode.EVERY.value):
                        m.d.sync += self.every_count.eq(Mux(self.a_retry, 0,
                                                            self.every_count + 1))

        self.step = self.net(Mux(self.t["wide"], 8, 4), "step")
        self.moved = self.net(self.busy & self.trdy_o & self.irdy, "moved")
        m.d.comb += self.stat_inc["data_phases"].eq(self.moved & self.claimed)

    # ---- the answer: DEVSEL#, TRDY#, STOP#, ACK64# ---------------------------------------

    def disconnect_with_data(self, index, addr_off):
        """The data phase ``index`` about to be presented (at storage offset ``addr_off``)
        is to end with a disconnect with data (STOP# beside TRDY#)."""
        fld, t = self.fld, self.t
        mode = fld("disconnect_mode")
        cls = fld("cache_line_size")
        dword = (fld("mem_base") + addr_off)[2:12]
        line_last = (cls != 0) & (((dword + Mux(t["wide"], 2, 1)) & (cls - 1)) == 0)
        return self.frame & ~t["abort"] & (
            ((t["cfg"] | t["nonlinear"]) & (index == 0))
            | ((mode == DisconnectMode.WITH_DATA.value)
               & (index + 1 == fld("disconnect_every")))
            | ((mode == DisconnectMode.CACHE_LINE.value) & line_last))

    def waits_before(self, index):
        """Wait states before data phase ``index`` (after the first), from the wait
        pattern."""
        fld = self.fld
        period = fld("wait_period")
        bit = Signal(4)
        self.m.d.comb += bit.eq(Mux(period == 0, 0, index % Mux(period == 0, 1, period)))
        masked = fld("wait_mask").bit_select(bit, 1)
        return Mux(self.knob[Knob.SUBSEQUENT_LATENCY_9] & (index == 1), 8,
                   Mux(masked, fld("wait_clocks"), 0))

    def present(self, index, addr_off):
        """Give TRDY# for data phase ``index`` (storage offset ``addr_off``), with STOP# if
        it is to be a disconnect with data."""
        dwd = self.disconnect_with_data(index, addr_off)
        self.m.d.sync += [self.trdy_o.eq(1), self.stop_o.eq(dwd)]
        self.m.d.comb += self.stat_inc["disconnects"].eq(dwd)

    def answer(self):
        """Follow the transaction from its address phase to its end: claim it (DEVSEL#) at
        the decode speed, answer its data phases, and drive the lines deasserted for a clock
        after it before releasing them."""
        m, t, start, bus = self.m, self.t, self.start, self.bus
        claimed, nclk = self.claimed, self.nclk
        last_edge = self.net(self.busy & claimed & self.irdy & ~self.frame
                             & (self.trdy_o | self.stop_o), "last_edge")
        with m.If(self.turnaround):
            # Our lines were driven deasserted for one clock: release them now.
            m.d.sync += [self.ctl_oe.eq(0), self.turnaround.eq(0)]
        with m.If(start | self.busy):
            m.d.sync += self.clk.eq(nclk)
            with m.If(start):
                m.d.sync += [self.busy.eq(1), claimed.eq(0), self.started.eq(0),
                             self.other_devsel.eq(0), self.off.eq(self.a_off),
                             self.phases.eq(0), self.g_done.eq(0), self.e_drop.eq(0),
                             self.f_done.eq(0), self.t_done.eq(0), self.stopped.eq(0)]
            with m.Elif(~claimed):
                m.d.sync += self.other_devsel.eq(self.other_devsel | bus.devsel.i)

            claim_now = self.net(
                ~claimed & t["hit"] & (nclk == t["dclk"])
                & ~(t["subtractive"] & (self.other_devsel | (bus.devsel.i & ~start))),
                "claim_now")
            first_now = self.net((claimed | claim_now) & ~(self.started & ~start)
                                 & (nclk == t["first"]), "first_now")
            decline = ~claimed & (~t["hit"] | (nclk > t["dclk"]))

            with m.If(~start & (last_edge | (self.bus_idle & claimed))):
                # The transaction is over: drive our lines deasserted for one clock.
                m.d.sync += [self.busy.eq(0), claimed.eq(0), self.trdy_o.eq(0),
                             self.stop_o.eq(0), self.devsel_o.eq(0), self.ack64_o.eq(0),
                             self.ad_oe.eq(0), self.turnaround.eq(1),
                             self.ack64_pending.eq(0)]
                m.d.comb += self.ev_end.eq(1)
            with m.Elif(~start & self.bus_idle | (decline & ~claim_now)):
                # Not ours (or the initiator gave up before we claimed): watch for the end.
                with m.If(self.bus_idle & ~start):
                    m.d.sync += self.busy.eq(0)
            with m.Else():
                self.claim(claim_now, first_now)
                with m.If(first_now):
                    self.answer_first_phase()
                with m.Elif(claimed & self.started):
                    self.answer_later_phases()

    def claim(self, claim_now, first_now):
        """DEVSEL# (and ACK64#) as the target claims; AD enabled on reads."""
        m, t, knob = self.m, self.t, self.knob
        with m.If(claim_now):
            m.d.sync += [self.claimed.eq(1), self.ctl_oe.eq(1), self.turnaround.eq(0),
                         self.devsel_o.eq(~t["suppress"]),
                         self.ack64_o.eq(t["ack64"] & ~t["suppress"] & ~knob[Knob.ACK64_LATE]),
                         self.ack64_pending.eq(t["ack64"] & ~t["suppress"]
                                               & knob[Knob.ACK64_LATE])]
            m.d.comb += self.stat_inc["transactions"].eq(1)
        with m.If(self.ack64_pending):
            m.d.sync += [self.ack64_o.eq(1), self.ack64_pending.eq(0)]
        # Read data from clock 3 (after the turnaround) until the end; not after a
        # target abort, where DEVSEL# is gone.
        m.d.sync += self.ad_oe.eq((self.claimed | claim_now) & t["read"] & (self.nclk >= 3)
                                  & ~(t["abort"] & ((self.started & ~self.start) | first_now)))

    def answer_first_phase(self):
        """The first answer: a retry, a target abort, or TRDY# for data phase 0."""
        m, t = self.m, self.t
        m.d.sync += self.started.eq(1)
        with m.If(t["retry"]):
            m.d.sync += self.stop_o.eq(1)
            m.d.comb += self.stat_inc["retries"].eq(1)
        with m.Elif(t["abort"]):
            m.d.sync += [self.stop_o.eq(1), self.devsel_o.eq(0), self.ack64_o.eq(0)]
            m.d.comb += [self.stat_inc["aborts"].eq(1), self.abort_signaled.eq(1)]
        with m.Else():
            self.present(0, Mux(self.start, self.a_off, self.off))

    def answer_later_phases(self):
        """After the first answer: hold STOP# to the end, wait states and disconnects
        between data phases, and the knobs that break the rules there."""
        m, knob, frame = self.m, self.knob, self.frame
        trdy_o, stop_o, moved, phases = self.trdy_o, self.stop_o, self.moved, self.phases
        with m.If(moved):
            m.d.sync += [phases.eq(phases + 1), self.off.eq(self.off + self.step)]
        nxt = phases + 1
        with m.If(stop_o | self.stopped):
            # Hold STOP# until FRAME# goes; TRDY# only until its word moved.
            m.d.sync += [trdy_o.eq(trdy_o & ~moved), self.stopped.eq(1)]
            # Knob (t): TRDY# stays for the initiator's final data phase, so
            # one more word moves after the disconnect.
            with m.If(knob[Knob.TRDY_AFTER_STOP] & ~self.t_done & trdy_o & moved & frame):
                m.d.sync += [trdy_o.eq(1), self.t_done.eq(1)]
            # Knob (f): one clock without STOP# while FRAME# is still asserted,
            # then STOP# again, so the initiator can still end the transaction.
            with m.If(knob[Knob.STOP_EARLY_RELEASE] & ~self.f_done & stop_o & frame):
                m.d.sync += [stop_o.eq(0), self.f_done.eq(1)]
            with m.Elif(~stop_o):
                m.d.sync += stop_o.eq(1)
        with m.Elif(trdy_o & ~moved):
            with m.If(knob[Knob.TRDY_WITHDRAW] & ~self.g_done):
                m.d.sync += [trdy_o.eq(0), self.wcnt.eq(0), self.g_done.eq(1)]
            with m.Elif(knob[Knob.STOP_ADDED_IN_WAIT] & ~self.g_done):
                # Knob (s): the answer given changes to a disconnect with data.
                m.d.sync += [stop_o.eq(1), self.g_done.eq(1)]
        with m.Elif(moved):
            waits = self.waits_before(nxt)
            with m.If(knob[Knob.DEVSEL_DROP] & (phases == 0)):
                m.d.sync += [self.devsel_o.eq(0), trdy_o.eq(0), self.wcnt.eq(0),
                             self.e_drop.eq(1)]
            with m.Elif((self.fld("disconnect_mode") == DisconnectMode.WITHOUT_DATA.value)
                        & (nxt == self.fld("disconnect_every"))):
                m.d.sync += [trdy_o.eq(0), stop_o.eq(1)]
                m.d.comb += self.stat_inc["disconnects"].eq(1)
            with m.Elif(waits == 0):
                self.present(nxt, self.off + self.step)
            with m.Else():
                m.d.sync += [trdy_o.eq(0), self.wcnt.eq(waits - 1)]
        with m.Else():
            # Waiting (TRDY# deasserted) before data phase ``phases``.
            with m.If(self.e_drop):
                m.d.sync += [self.devsel_o.eq(1), self.e_drop.eq(0)]
            with m.If(self.wcnt == 0):
                self.present(phases, self.off)
            with m.Else():
                m.d.sync += self.wcnt.eq(self.wcnt - 1)

    def idle_and_reset_knobs(self):
        """Knobs (c) and (v), DEVSEL# outside a transaction; then drive the answer lines."""
        m, bus, knob, ctl = self.m, self.bus, self.knob, self.ctl
        idle_pulse = self.idle_pulse
        # Knob (c): one clock of DEVSEL# on a bus idle for two clocks, then release.
        with m.If(knob[Knob.DEVSEL_ON_IDLE] & ~self.busy & ~self.start & ~self.turnaround
                  & ~self.ctl_oe & self.bus_idle & ~self.frame_prev & ~self.irdy_prev
                  & (idle_pulse == 0)):
            m.d.sync += [self.devsel_o.eq(1), self.ctl_oe.eq(1), idle_pulse.eq(1)]
        with m.Elif(idle_pulse == 1):
            m.d.sync += [self.devsel_o.eq(0), idle_pulse.eq(2)]
        with m.Elif(idle_pulse == 2):
            m.d.sync += [self.ctl_oe.eq(0), idle_pulse.eq(0)]

        # Knob (v) must outlive the reset it acts in: a reset-less copy, armed by the INJECT
        # write and disarmed when RST# is released.
        self.reset_knob = reset_knob = Signal(reset_less=True)
        rst_prev = Signal(reset_less=True)
        self.free.d.sync += rst_prev.eq(bus.rst.i)
        inject_refused = Signal()
        m.d.comb += inject_refused.eq(REFUSALS[Reg.INJECT][1](ctl.w_data, self.W))
        with m.If(written(ctl, Reg.INJECT) & ~inject_refused):
            m.d.sync += reset_knob.eq(ctl.w_data[Knob.DEVSEL_IN_RESET])
        with m.Elif(rst_prev & ~bus.rst.i):
            m.d.sync += reset_knob.eq(0)
        devsel_in_reset = reset_knob & bus.rst.i
        # ... and, being a sustained tri-state line it asserted, driven deasserted for the
        # first clock after RST# is released, then let go: the knob breaks only the reset
        # rule.
        devsel_tail = reset_knob & rst_prev & ~bus.rst.i

        m.d.comb += [
            bus.trdy.o.eq(self.trdy_o), bus.trdy.oe.eq(self.ctl_oe),
            bus.stop.o.eq(self.stop_o), bus.stop.oe.eq(self.ctl_oe),
            bus.devsel.o.eq(self.devsel_o | devsel_in_reset),
            bus.devsel.oe.eq(self.ctl_oe | devsel_in_reset | devsel_tail),
        ]
        if self.wide_bus:
            m.d.comb += [bus.ack64.o.eq(self.ack64_o), bus.ack64.oe.eq(self.ctl_oe)]

    # ---- data path -------------------------------------------------------------------------

    def read_data(self):
        """Read data on AD: the storage word (or configuration word) of the data phase
        presented, and knob (q)'s change while TRDY# waits."""
        m, bus, ram, r, t = self.m, self.bus, self.ram, self.r, self.t
        # The read port shows, in the next clock, the word of the data phase presented then.
        self.shown_off = shown_off = self.net(
            Mux(self.start, self.a_off, Mux(self.moved, self.off + self.step, self.off)),
            "shown_off")
        shown_reg = Signal(32)
        m.d.sync += shown_reg.eq(shown_off)
        # From the address phase on (not only once claimed: slower DEVSEL# still needs the
        # first word ready for clock 3).
        reading = self.busy & t["read"] & ~t["cfg"] | self.start & self.a_read
        m.d.comb += ram.r_addr.eq(Mux(reading, shown_off >> self.word_shift,
                                      self.bd_index >> (self.word_shift - 2)))
        word = Signal(32)
        if self.wide_bus:
            m.d.comb += word.eq(Mux(shown_reg[2], ram.r_data[32:], ram.r_data[:32]))
        else:
            m.d.comb += word.eq(ram.r_data)
        self.q_flip = q_flip = Signal()
        with m.If(self.knob[Knob.READ_DATA_CHANGE] & self.trdy_o & ~self.irdy & self.ad_oe):
            m.d.sync += q_flip.eq(~q_flip)
        with m.Elif(~self.busy):
            m.d.sync += q_flip.eq(0)
        lo = Mux(r["cfg"], self.cfg_rdata, Mux(r["wide"], ram.r_data[:32], word))
        m.d.comb += [bus.ad.o.eq(lo ^ Mux(q_flip, 0xFFFF_FFFF, 0)), bus.ad.oe.eq(self.ad_oe)]
        if self.wide_bus:
            m.d.comb += [bus.ad_hi.o.eq(ram.r_data[32:] ^ Mux(q_flip, 0xFFFF_FFFF, 0)),
                         bus.ad_hi.oe.eq(self.ad_oe & r["wide"])]

    def write_storage(self):
        """Writes into the storage: write data phases (byte lanes from C/BE#, active low
        on the bus), else the control port's backdoor (BD_DATA)."""
        m, bus, ram, ctl, t, off = self.m, self.bus, self.ram, self.ctl, self.t, self.off
        W, word_shift = self.W, self.word_shift
        write_now = self.moved & ~t["read"] & t["storage"]
        self.be_lo = be_lo = ~bus.cbe.i & 0xF
        lanes = Signal(W // 8)
        wdata = Signal(W)
        if self.wide_bus:
            be_hi = ~bus.cbe_hi.i & 0xF
            m.d.comb += [
                lanes.eq(Mux(t["wide"], Cat(be_lo, be_hi),
                             Mux(off[2], Cat(C(0, 4), be_lo), Cat(be_lo, C(0, 4))))),
                wdata.eq(Mux(t["wide"], Cat(bus.ad.i, bus.ad_hi.i), Cat(bus.ad.i, bus.ad.i))),
            ]
        else:
            m.d.comb += [lanes.eq(be_lo), wdata.eq(bus.ad.i)]
        bd_lanes = Signal(W // 8)
        if self.wide_bus:
            m.d.comb += bd_lanes.eq(Mux(self.bd_index[0], 0xF0, 0x0F))
        else:
            m.d.comb += bd_lanes.eq(0xF)
        with m.If(write_now):
            m.d.comb += [ram.w_addr.eq(off >> word_shift), ram.w_data.eq(wdata),
                         ram.w_en.eq(lanes)]
        with m.Elif(written(ctl, Reg.BD_DATA)):
            m.d.comb += [ram.w_addr.eq(self.bd_index >> (word_shift - 2)),
                         ram.w_data.eq(Cat(*([ctl.w_data] * (W // 32)))),
                         ram.w_en.eq(bd_lanes)]

    # ---- parity --------------------------------------------------------------------------

    def parity_outputs(self):
        """PAR (PAR64) for the read data this target drove, wrong where asked."""
        m, bus, fld, knob, t = self.m, self.bus, self.fld, self.knob, self.t
        par_flip = Signal()
        par64_flip = Signal()
        flip_phase = self.moved & t["read"] & (self.phases == fld("bad_par_phase"))
        m.d.comb += [
            par_flip.eq(flip_phase & (fld("bad_par_enable") | knob[Knob.BAD_PAR])),
            par64_flip.eq(flip_phase & (fld("bad_par64_enable") | knob[Knob.BAD_PAR64])),
        ]
        # Knob (h) moves a word in the turnaround clock, when nobody drives AD: nobody
        # drives PAR for it either (PAR follows AD's driver), so the pulled-up PAR (1) is
        # what covers it.
        m.d.sync += [bus.par.o.eq(_parity(bus.ad.o, bus.cbe.i) ^ par_flip),
                     bus.par.oe.eq(self.ad_oe)]
        if self.wide_bus:
            m.d.sync += [bus.par64.o.eq(_parity(bus.ad_hi.o, bus.cbe_hi.i) ^ par64_flip),
                         bus.par64.oe.eq(self.ad_oe & self.r["wide"])]

    def parity_checks(self):
        """Address parity (every address phase) and write data parity (our writes), with
        the early report of a write data parity error while the phase waits."""
        m, bus, t, moved, claimed = self.m, self.bus, self.t, self.moved, self.claimed
        self.achk = achk = Signal()
        aexp = Signal()
        self.dchk = dchk = Signal()
        dexp, dexp64, dchk64 = Signal(), Signal(), Signal()
        m.d.sync += [achk.eq(self.start), aexp.eq(_parity(bus.ad.i, bus.cbe.i)),
                     dchk.eq(moved & ~t["read"] & claimed),
                     dexp.eq(_parity(bus.ad.i, bus.cbe.i))]
        data_par_error = dchk & (bus.par.i != dexp)
        if self.wide_bus:
            m.d.sync += [dchk64.eq(moved & ~t["read"] & claimed & t["wide"]),
                         dexp64.eq(_parity(bus.ad_hi.i, bus.cbe_hi.i))]
            data_par_error = data_par_error | (dchk64 & (bus.par64.i != dexp64))
        self.data_par_error = data_par_error
        self.addr_par_error = achk & (bus.par.i != aexp)

        # Early report (``perr_early``, knob (w)): while a write data phase waits (IRDY#
        # asserted, this target's TRDY# and STOP# not), its data is valid and PAR, one clock
        # later, covers it. Not on a transaction this target will retry or abort: a target
        # that signalled PERR# must complete the phase with TRDY# (PCI LB 3.0 §3.7.4.1).
        early_on = self.fld("perr_early") | self.knob[Knob.PERR_RELEASED_EARLY]
        self.wchk = wchk = Signal()
        m.d.sync += wchk.eq(early_on & self.busy & claimed & ~t["read"] & ~t["retry"]
                            & ~t["abort"] & self.irdy & ~self.trdy_o & ~self.stop_o)
        early_error = wchk & (bus.par.i != dexp)
        # The clock after a data phase completed (the clock ``dchk`` checks a moved word's
        # PAR in), or after the bus went idle under this target's claim without one.
        self.phase_end = phase_end = Signal()
        m.d.sync += phase_end.eq(self.busy & claimed
                                 & ((self.irdy & (self.trdy_o | self.stop_o)) | self.bus_idle))
        self.early_seen = early_seen = Signal()    # this data phase's error was seen early
        self.early_first = early_error & ~early_seen
        with m.If(phase_end):
            m.d.sync += early_seen.eq(0)
        with m.Elif(early_error):
            m.d.sync += early_seen.eq(1)
        # One parity error per data phase, whether seen early or after completion.
        self.parity_event = (self.early_first | (data_par_error & ~early_seen)
                             | self.addr_par_error)
        m.d.comb += self.stat_inc["parity_errors"].eq(self.parity_event)

    def perr_serr(self):
        """PERR# and SERR# from the parity checks (and knobs (m), (u), (w))."""
        m, bus, fld, knob = self.m, self.bus, self.fld, self.knob
        # PERR#: asserted the clock after PAR was sampled bad (data phase + 2), then driven
        # deasserted for one clock before release (sustained tri-state). An early report
        # asserts it the clock after PAR showed the error and holds it (``perr_hold``) until
        # the phase has completed; the normal report two clocks after completion then
        # carries it on, so PERR# stays asserted through completion + 2 whatever PAR shows
        # after completion. Knob (w) gives the early report one clock only and no tail.
        self.perr_step = perr_step = Signal(2)
        self.perr_hold = perr_hold = Signal()
        early_report = self.early_first & fld("parity_response")
        with m.If(self.phase_end):
            m.d.sync += perr_hold.eq(0)
        with m.Elif(early_report & ~knob[Knob.PERR_RELEASED_EARLY]):
            m.d.sync += perr_hold.eq(1)
        fire_perr = (self.data_par_error & fld("parity_response") & ~self.early_seen) | \
            (self.phase_end & perr_hold) | \
            (early_report & knob[Knob.PERR_RELEASED_EARLY]) | \
            (self.start & self.a_hit & knob[Knob.PERR_WRONG_TIME]) | \
            (self.dchk & knob[Knob.PERR_ON_GOOD_DATA])
        with m.If(fire_perr):
            m.d.sync += perr_step.eq(1)
        with m.Elif(perr_step != 0):
            m.d.sync += perr_step.eq(Mux(perr_step == 2, 0, 2))
        m.d.comb += [bus.perr.o.eq((perr_step == 1) | perr_hold),
                     bus.perr.oe.eq((perr_step != 0) | perr_hold)]
        # SERR# (open drain): one clock, after an address parity error, when enabled.
        self.serr_now = self.addr_par_error & fld("serr_enable") & fld("parity_response")
        self.serr = serr = Signal()
        m.d.sync += serr.eq(self.serr_now)
        m.d.comb += [bus.serr.o.eq(serr), bus.serr.oe.eq(serr)]
