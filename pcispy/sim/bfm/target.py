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

Everything is programmed through the control port (:data:`REGISTERS`);
:class:`TargetDriver` is the Python side.
"""

import enum
import math

from amaranth import Cat, Module, Mux, Signal, C
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from pcispy.pci.bus import PCIBusSignature, DevselSpeed, Command
from pcispy.sim.control import (ControlRegisters, ControlSignature, ControlField, ControlRegister,
                                register_reads, written)
from pcispy.sim.bfm.backdoor_ram import BackdoorRAM
from pcispy.sim.bfm.gate import Gate
from pcispy.sim.bfm.nets import at_least, net
from pcispy.sim.bfm.profiles import DisconnectMode, RetryMode, PROFILES, profile_by_name

__all__ = ["REGISTERS", "Reg", "FIELDS", "Knob", "Event", "REFUSALS", "BehaviouralTarget",
           "TargetDriver", "profile_fields", "check_profile", "TargetConfigError"]


def _whole(name, index, doc="", reset=0):
    """A register holding one 32-bit field of the name ``name.lower()``."""
    return ControlRegister(name, index, (ControlField(name.lower(), 0, 32, doc, reset),), doc=doc)


#: The control-port registers (32 bits each) and their fields; field names are unique
#: across registers (:meth:`TargetDriver.set_fields` takes them by name). Resets are the
#: state before any profile: enabled, fast, windows closed.
REGISTERS = ControlRegisters("Reg", [
    ControlRegister("CONTROL", 0, (
        ControlField("enable", 0, 1, reset=1),
        ControlField("devsel_speed", 1, 2),
        ControlField("claim_all", 3, 1, "subtractive: every memory/I/O command"),
        ControlField("config_enable", 4, 1, "answer type-0 config cycles (IDSEL)"),
        ControlField("ack64_capable", 5, 1),
        ControlField("bar_prefetchable", 6, 1),
        # Report a write data parity error as soon as PAR shows it while the data phase
        # waits for TRDY#, holding PERR# until two clocks after the phase completes (PCI LB
        # 3.0 §3.7.4.1 allows this early report); 0: two clocks after completion only.
        ControlField("perr_early", 7, 1),
    )),
    ControlRegister("COMMAND", 1, (
        ControlField("io_enable", 0, 1, reset=1),
        ControlField("mem_enable", 1, 1, reset=1),
        ControlField("parity_response", 6, 1, reset=1),
        ControlField("serr_enable", 8, 1),
    ), doc="the PCI Command register image (config 0x04, low half)"),
    ControlRegister("STATUS", 2, doc="PCI Status error bits 11/14/15; write 1 to clear"),
    _whole("MEM_BASE", 3, "memory window base (bytes); also BAR0"),
    _whole("MEM_SIZE", 4, "memory window size (bytes, power of two, 0 = off)"),
    _whole("IO_BASE", 5),
    _whole("IO_SIZE", 6, "I/O window size (bytes, power of two, 0 = off)"),
    _whole("IO_RAM_OFFSET", 7, "byte offset in the storage where the I/O window starts"),
    ControlRegister("CFG_ID", 8, (
        ControlField("vendor_id", 0, 16, reset=0x1172),
        ControlField("device_id", 16, 16, reset=0x5043),
    )),
    ControlRegister("CFG_CLASS", 9, (
        ControlField("revision_id", 0, 8),
        ControlField("class_code", 8, 24, reset=0x118000),
    )),
    ControlRegister("CFG_MISC", 10, (
        ControlField("cache_line_size", 0, 8, reset=8),
        ControlField("latency_timer", 8, 8),
        ControlField("interrupt_line", 16, 8),
    )),
    ControlRegister("LAT_READ", 11, (
        ControlField("read_latency_min", 0, 8, "clocks"),
        ControlField("read_latency_max", 8, 8),
    )),
    ControlRegister("LAT_WRITE", 12, (
        ControlField("write_latency_min", 0, 8),
        ControlField("write_latency_max", 8, 8),
    )),
    ControlRegister("WAIT", 13, (
        ControlField("wait_mask", 0, 16),
        ControlField("wait_period", 16, 5, reset=16),
        ControlField("wait_clocks", 24, 4),
    )),
    ControlRegister("DISCONNECT", 14, (
        ControlField("disconnect_mode", 0, 2),
        ControlField("disconnect_every", 8, 8),
    )),
    ControlRegister("RETRY", 15, (
        ControlField("retry_mode", 0, 2),
        ControlField("retry_reads", 2, 1, reset=1),
        ControlField("retry_writes", 3, 1, reset=1),
        ControlField("retry_count", 8, 8),
        ControlField("retry_probability", 16, 9, reset=256),
        ControlField("retry_latency", 25, 7),
    )),
    _whole("ABORT_BASE", 16),
    _whole("ABORT_SIZE", 17),
    ControlRegister("PARITY", 18, (
        ControlField("bad_par_enable", 0, 1),
        ControlField("bad_par64_enable", 1, 1),
        ControlField("bad_par_phase", 8, 8),
    )),
    _whole("SEED", 19, "random generator seed (non-zero); writing reseeds", reset=1),
    ControlRegister("INJECT", 20, (ControlField("inject", 0, 23, "one bit per Knob"),)),
    ControlRegister("EVENT", 21, doc="latched Event bits; write 1 to clear"),
    ControlRegister("EVENT_MASK", 22, (ControlField("event_mask", 0, 3,
                                                    "which events raise ``event``"),)),
    ControlRegister("ERROR", 23, doc="bit 0: a write was refused; bits 25:16: its register; "
                    "write clears"),
    ControlRegister("STAT_TRANSACTIONS", 24, doc="statistics: write any value to clear"),
    ControlRegister("STAT_DATA_PHASES", 25),
    ControlRegister("STAT_RETRIES", 26),
    ControlRegister("STAT_DISCONNECTS", 27),
    ControlRegister("STAT_ABORTS", 28),
    ControlRegister("STAT_PARITY_ERRORS", 29),
    ControlRegister("BD_ADDR", 30, doc="storage backdoor: DWORD index"),
    ControlRegister("BD_DATA", 31, doc="read/write the DWORD at BD_ADDR, then BD_ADDR += 1"),
    ControlRegister("INFO", 32, doc="read-only: bus width in bits | storage address bits << 8"),
])

#: Control-port register indices.
Reg = REGISTERS.enum()


#: Statistics registers and the names :meth:`TargetDriver.stats` gives them.
STATS = {
    Reg.STAT_TRANSACTIONS: "transactions", Reg.STAT_DATA_PHASES: "data_phases",
    Reg.STAT_RETRIES: "retries", Reg.STAT_DISCONNECTS: "disconnects",
    Reg.STAT_ABORTS: "aborts", Reg.STAT_PARITY_ERRORS: "parity_errors",
}


#: Every field by name: ``{name: (Reg, ControlField)}``.
FIELDS = {f.name: (Reg(reg.index), f) for reg in REGISTERS for f in reg.fields}

#: PCI Status register bits this target sets (write 1 to clear, in config space too).
STATUS_SIGNALED_TARGET_ABORT = 1 << 11
STATUS_SIGNALED_SYSTEM_ERROR = 1 << 14
STATUS_DETECTED_PARITY_ERROR = 1 << 15
_STATUS_W1C = (STATUS_SIGNALED_TARGET_ABORT | STATUS_SIGNALED_SYSTEM_ERROR
               | STATUS_DETECTED_PARITY_ERROR)
#: Command register bits a configuration write may change (I/O, memory, PERR#, SERR#).
_COMMAND_WRITABLE = 0x0143


class Knob(enum.IntEnum):
    """Error-injection knobs: bit numbers of :attr:`Reg.INJECT`. Each breaks one rule.

    Knobs act on every transaction the target claims while set, except
    ``DEVSEL_ON_IDLE``, which fires once on an idle bus and clears itself, and
    ``DEVSEL_IN_RESET``, which outlives the reset it acts in and disarms itself when RST#
    is released.
    """
    TRDY_WITHOUT_DEVSEL = 0    # (a) claim silently: TRDY# (and data) with DEVSEL# deasserted
    STOP_WITHOUT_CLAIM = 1     # (b) retry (STOP#) a transaction it never claimed
    DEVSEL_ON_IDLE = 2         # (c) one clock of DEVSEL# on an idle bus
    DEVSEL_LATE = 3            # (d) DEVSEL# first asserted in clock 6
    DEVSEL_DROP = 4            # (e) DEVSEL# deasserted for one clock after data phase 0
    STOP_EARLY_RELEASE = 5     # (f) STOP# released for one clock while FRAME# is asserted
    TRDY_WITHDRAW = 6          # (g) TRDY# withdrawn for one clock while IRDY# waits
    TRDY_IN_TURNAROUND = 7     # (h) TRDY# in clock 2 of a read (fast DEVSEL#), AD and PAR
                               #     left to the pull-ups (a word of C/BE# with odd parity
                               #     moves with right parity)
    INITIAL_LATENCY_17 = 8     # (i) first TRDY# in clock 18 (latency 17 > 16)
    SUBSEQUENT_LATENCY_9 = 9   # (j) 8 wait states before data phase 1 (latency 9 > 8)
    BAD_PAR = 10               # (k) wrong PAR on read data phase ``bad_par_phase``
    BAD_PAR64 = 11             # (l) wrong PAR64 on read data phase ``bad_par_phase``
    PERR_WRONG_TIME = 12       # (m) PERR# in clock 2 (no data phase to report on)
    ACK64_WITHOUT_REQ64 = 13   # (n) ACK64# on a memory transaction without REQ64#
    ACK64_LATE = 14            # (o) ACK64# one clock after DEVSEL#
    IGNORE_BURST_ORDER = 15    # (p) keep bursting after a non-linear burst order
    READ_DATA_CHANGE = 16      # (q) change AD while TRDY# waits for IRDY#
    CLAIM_SPECIAL = 17         # (r) DEVSEL# on a Special Cycle
    STOP_ADDED_IN_WAIT = 18    # (s) STOP# added beside a TRDY# that waits for IRDY#
    TRDY_AFTER_STOP = 19       # (t) TRDY# kept one more data phase after disconnect with data
    PERR_ON_GOOD_DATA = 20     # (u) PERR# after a write data phase whose parity was right
    DEVSEL_IN_RESET = 21       # (v) DEVSEL# asserted while RST# is asserted
    PERR_RELEASED_EARLY = 22   # (w) a write data parity error seen while the phase waits is
                               #     reported at once, but PERR# is asserted for one clock
                               #     only: released before completion + 2


class Event(enum.IntEnum):
    """Bits of :attr:`Reg.EVENT` (and :attr:`Reg.EVENT_MASK`)."""
    TRANSACTION_END = 0  # a claimed transaction ended
    PARITY_ERROR = 1     # address or write-data parity error detected
    REFUSED = 2          # a control write was refused (see :attr:`Reg.ERROR`)


class TargetConfigError(ValueError):
    """The target refused a register value (the hardware cannot honour it)."""


def _get(value, name):
    """Field ``name`` of a register word: an Amaranth value or a Python int."""
    return FIELDS[name][1].get(value)


def _not_pow2(value, width=32):
    """True when ``value`` is neither 0 nor a power of two (int or Amaranth value)."""
    if isinstance(value, int):
        return (value & (value - 1)) != 0
    return (value & (value - 1)[:width]) != 0


_MASK_64BIT_KNOBS = (1 << Knob.BAD_PAR64) | (1 << Knob.ACK64_WITHOUT_REQ64) | (1 << Knob.ACK64_LATE)

#: Register values the target refuses: ``{Reg: (reason, predicate(word, width))}``. The
#: predicate builds the hardware check and, on Python ints, the driver's own.
REFUSALS = {
    Reg.MEM_SIZE: ("window size must be a power of two (or 0)",
                   lambda v, w: _not_pow2(_get(v, "mem_size"))),
    Reg.IO_SIZE: ("window size must be a power of two (or 0)",
                  lambda v, w: _not_pow2(_get(v, "io_size"))),
    Reg.LAT_READ: ("read latency min > max",
                   lambda v, w: _get(v, "read_latency_min") > _get(v, "read_latency_max")),
    Reg.LAT_WRITE: ("write latency min > max",
                    lambda v, w: _get(v, "write_latency_min") > _get(v, "write_latency_max")),
    Reg.WAIT: ("wait period must be 1..16",
               lambda v, w: (_get(v, "wait_period") > 16)
               | ((_get(v, "wait_period") == 0) & (_get(v, "wait_mask") != 0))),
    Reg.DISCONNECT: ("disconnect every 0 data phases",
                     lambda v, w: ((_get(v, "disconnect_mode") == DisconnectMode.WITH_DATA.value)
                                   | (_get(v, "disconnect_mode")
                                      == DisconnectMode.WITHOUT_DATA.value))
                     & (_get(v, "disconnect_every") == 0)),
    Reg.RETRY: ("retry probability above 256/256, or every 0th transaction",
                lambda v, w: (_get(v, "retry_probability") > 256)
                | ((_get(v, "retry_mode") == RetryMode.EVERY.value) & (_get(v, "retry_count") == 0))),
    Reg.CFG_MISC: ("cache line size must be a power of two (or 0)",
                   lambda v, w: _not_pow2(_get(v, "cache_line_size"), 8)),
    Reg.SEED: ("seed must be non-zero", lambda v, w: v == 0),
    Reg.INJECT: ("64-bit knobs on a 32-bit target",
                 lambda v, w: ((v & _MASK_64BIT_KNOBS) != 0) if w == 32 else 0),
}


def _refusal(reg, value, width):
    """Why the target refuses ``value`` in ``reg`` (``None`` if it takes it)."""
    if reg in REFUSALS:
        reason, bad = REFUSALS[reg]
        if bad(value, width):
            return reason
    return None


def profile_fields(profile, *, width=32, seed=1):
    """The field values (``{name: value}``) that give a target ``profile``."""
    rmin, rmax = profile.read_latency
    wmin, wmax = profile.write_latency
    abort_base, abort_size = profile.abort_range or (0, 0)
    return {
        "devsel_speed": DevselSpeed(profile.devsel).value,
        "ack64_capable": int(profile.ack64 and width == 64),
        "read_latency_min": rmin, "read_latency_max": rmax,
        "write_latency_min": wmin, "write_latency_max": wmax,
        "wait_mask": profile.wait_mask, "wait_period": profile.wait_period,
        "wait_clocks": profile.wait_clocks,
        "disconnect_mode": DisconnectMode(profile.disconnect).value,
        "disconnect_every": profile.disconnect_every,
        "cache_line_size": profile.cache_line_dwords,
        "retry_mode": RetryMode(profile.retry).value, "retry_count": profile.retry_count,
        "retry_probability": profile.retry_probability,
        "retry_reads": int(profile.retry_reads), "retry_writes": int(profile.retry_writes),
        "retry_latency": profile.retry_latency,
        "abort_base": abort_base, "abort_size": abort_size,
        "bad_par_enable": int(profile.bad_par_phase is not None),
        "bad_par_phase": profile.bad_par_phase or 0,
        "seed": seed,
    }


def check_profile(profile, *, width=32, seed=1, fields=None):
    """The register words (``{Reg: word}``, reset values included) that give ``profile``
    plus ``fields``; raise :class:`TargetConfigError` if the target would refuse one."""
    values = dict(_RESET_FIELDS)
    values.update(profile_fields(profile, width=width, seed=seed))
    values.update(fields or {})
    words = _pack(values)
    for reg, word in words.items():
        reason = _refusal(reg, word, width)
        if reason:
            raise TargetConfigError(f"{profile.name}: {reg.name} = {word:#x}: {reason}")
    return words


def _pack(values, base=None):
    """Fold field values into register words (``{Reg: word}``), starting from ``base``."""
    words = dict(base or {})
    for name, value in values.items():
        reg, f = FIELDS[name]
        words[reg] = f.insert(words.get(reg, 0), value)
    return words


#: The fields whose reset (before any profile) is not 0.
_RESET_FIELDS = {f.name: f.reset for _, f in FIELDS.values() if f.reset}


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


class _TargetLogic:
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

    # ---- configuration space and control port ----------------------------------------------

    def config_space(self):
        """The type 0 configuration header the target answers, read from its registers."""
        m, bank, fld = self.m, self.bank, self.fld
        size = fld("mem_size")
        self.size_mask = ~(size - 1)[:32]
        bar0 = (fld("mem_base") & self.size_mask) | (fld("bar_prefetchable") << 3)
        self.status = status = Cat(
            C(0, 9), Mux(fld("devsel_speed") == DevselSpeed.FAST.value, 0,
                         Mux(fld("devsel_speed") == DevselSpeed.MEDIUM.value, 1, 2))[:2],
            C(0, 5)) | bank[Reg.STATUS][:16]
        cfg_index = self.shown_off[2:8]
        cfg_word = Signal(32)
        with m.Switch(cfg_index):
            with m.Case(0x00):
                m.d.comb += cfg_word.eq(bank[Reg.CFG_ID])
            with m.Case(0x01):
                m.d.comb += cfg_word.eq(Cat(bank[Reg.COMMAND][:16], status))
            with m.Case(0x02):
                m.d.comb += cfg_word.eq(bank[Reg.CFG_CLASS])
            with m.Case(0x03):
                m.d.comb += cfg_word.eq(Cat(fld("cache_line_size"), fld("latency_timer"),
                                            C(0, 16)))
            with m.Case(0x04):
                m.d.comb += cfg_word.eq(bar0)
            with m.Case(0x0B):
                m.d.comb += cfg_word.eq(bank[Reg.CFG_ID])
            with m.Case(0x0F):
                m.d.comb += cfg_word.eq(fld("interrupt_line"))
        m.d.sync += self.cfg_rdata.eq(cfg_word)

    def control_writes(self):
        """Control-port writes: refused values (ERROR, the REFUSED event), write-1-to-clear
        and clear-on-write registers, the storage backdoor's index, the rest plain."""
        m, ctl, bank, bd_index = self.m, self.ctl, self.bank, self.bd_index
        self.refused = refused = Signal()
        for reg, (_, bad) in REFUSALS.items():
            with m.If(ctl.addr == reg):
                m.d.comb += refused.eq(bad(ctl.w_data, self.W))

        with m.If(ctl.w_en):
            with m.If(refused):
                # ERROR: bit 0 set, the register's index from bit 16.
                m.d.sync += bank[Reg.ERROR].eq(Cat(C(1, 16), ctl.addr))
            with m.Else():
                with m.Switch(ctl.addr):
                    for reg in Reg:
                        with m.Case(reg):
                            if reg in STATS:
                                m.d.sync += bank[reg].eq(0)
                            elif reg == Reg.STATUS:
                                m.d.sync += bank[reg].eq(bank[reg] & ~ctl.w_data)
                            elif reg == Reg.EVENT:
                                pass  # cleared in hardware_updates, together with new events
                            elif reg == Reg.ERROR:
                                m.d.sync += bank[reg].eq(0)
                            elif reg == Reg.BD_DATA:
                                m.d.sync += bd_index.eq(bd_index + 1)
                            elif reg == Reg.BD_ADDR:
                                m.d.sync += bd_index.eq(ctl.w_data)
                            elif reg == Reg.INFO:
                                pass  # read-only
                            elif reg == Reg.SEED:
                                m.d.sync += [bank[reg].eq(ctl.w_data), self.rng.eq(ctl.w_data)]
                            else:
                                m.d.sync += bank[reg].eq(ctl.w_data)
        with m.If(ctl.r_en & (ctl.addr == Reg.BD_DATA)):
            m.d.sync += bd_index.eq(bd_index + 1)

    def hardware_updates(self):
        """What the bus does to the registers (after the control writes, so it wins a
        same-clock clash): statistics, PCI Status bits, configuration writes, events."""
        m, bank, ctl, fld, knob = self.m, self.bank, self.ctl, self.fld, self.knob
        status_set = Signal(16)
        m.d.comb += status_set.eq(
            Mux(self.abort_signaled, STATUS_SIGNALED_TARGET_ABORT, 0)
            | Mux(self.serr_now, STATUS_SIGNALED_SYSTEM_ERROR, 0)
            | Mux(self.parity_event, STATUS_DETECTED_PARITY_ERROR, 0))
        for name, reg in ((n, g) for g, n in STATS.items()):
            with m.If(self.stat_inc[name]):
                m.d.sync += bank[reg].eq(bank[reg] + 1)
        with m.If(status_set != 0):
            m.d.sync += bank[Reg.STATUS].eq(bank[Reg.STATUS] | status_set)
        self.config_writes(status_set)

        self.events = events = Signal(len(Event))
        new_events = Cat(self.ev_end, self.parity_event, ctl.w_en & self.refused)
        events_cleared = Mux(written(ctl, Reg.EVENT), ctl.w_data[:len(Event)], 0)
        m.d.sync += events.eq((events & ~events_cleared) | new_events)
        with m.If(knob[Knob.DEVSEL_ON_IDLE] & (self.idle_pulse == 2)):
            m.d.sync += bank[Reg.INJECT][Knob.DEVSEL_ON_IDLE].eq(0)
        m.d.comb += ctl.event.eq((events & fld("event_mask")) != 0)

    def config_writes(self, status_set):
        """Configuration write data phases into the registers behind the header: Command,
        Status (write 1 to clear), cache line size, BAR0, interrupt line."""
        m, bank, bus = self.m, self.bank, self.bus
        be_mask = Cat(*[Mux(self.be_lo[i], C(0xFF, 8), C(0, 8)) for i in range(4)])
        cfg_wr = self.moved & ~self.t["read"] & self.t["cfg"]
        cfg_wdata = bus.ad.i & be_mask

        def merge(old):
            return (old & ~be_mask) | cfg_wdata

        with m.If(cfg_wr):
            with m.Switch(self.off[2:8]):
                with m.Case(0x01):
                    m.d.sync += [
                        bank[Reg.COMMAND].eq((merge(bank[Reg.COMMAND]) & _COMMAND_WRITABLE)
                                             | (bank[Reg.COMMAND] & ~_COMMAND_WRITABLE)),
                        bank[Reg.STATUS].eq((bank[Reg.STATUS] | status_set)
                                            & ~(cfg_wdata[16:32] & _STATUS_W1C)),
                    ]
                with m.Case(0x03):
                    cls = merge(bank[Reg.CFG_MISC])[0:8]
                    # Unsupported cache line sizes read as 0 (the specification's rule).
                    m.d.sync += bank[Reg.CFG_MISC][0:16].eq(
                        Cat(Mux((cls & (cls - 1)[:8]) == 0, cls, 0),
                            merge(bank[Reg.CFG_MISC])[8:16]))
                with m.Case(0x04):
                    m.d.sync += bank[Reg.MEM_BASE].eq(merge(bank[Reg.MEM_BASE]) & self.size_mask)
                with m.Case(0x0F):
                    m.d.sync += bank[Reg.CFG_MISC][16:24].eq(merge(bank[Reg.CFG_MISC])[0:8])

    def control_reads(self):
        """The read mux, registered; BD_DATA comes straight from the storage's registered
        port."""
        m, ctl, ram, bank = self.m, self.ctl, self.ram, self.bank
        read_reg = Signal(32)
        last_addr = Signal(len(ctl.addr))
        last_bd_half = Signal()
        m.d.sync += [last_addr.eq(ctl.addr), last_bd_half.eq(self.bd_index[0])]
        readable = {reg: bank[reg] for reg in Reg}
        readable.update({
            Reg.EVENT: self.events,
            Reg.BD_ADDR: self.bd_index,
            Reg.STATUS: self.status,
            Reg.INFO: C(self.W | (self.target.mem_addr_bits << 8), 32),
        })
        register_reads(m, ctl, readable, r_data=read_reg)
        bd_word = ram.r_data[:32]
        if self.wide_bus:
            bd_word = Mux(last_bd_half, ram.r_data[32:], ram.r_data[:32])
        m.d.comb += ctl.r_data.eq(Mux(last_addr == Reg.BD_DATA, bd_word, read_reg))


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
