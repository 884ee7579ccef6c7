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

Everything is programmed through the control port (:class:`Reg`, :data:`FIELDS`);
:class:`TargetDriver` is the Python side.
"""

import math
from dataclasses import dataclass

import enum

from amaranth import Cat, Module, Mux, Signal, C
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from pcispy.pci.bus import PCIBusSignature, DevselSpeed, Command
from pcispy.sim.control import ControlSignature
from pcispy.sim.bfm.backdoor_ram import BackdoorRAM
from pcispy.sim.bfm.profiles import DisconnectMode, RetryMode, PROFILES

__all__ = ["Reg", "Field", "FIELDS", "Knob", "Event", "REFUSALS", "BehaviouralTarget",
           "TargetDriver", "profile_fields", "check_profile", "TargetConfigError"]


class Reg(enum.IntEnum):
    """Control-port registers of a behavioural target (32 bits each)."""
    CONTROL = 0        # fields: enable, devsel_speed, claim_all, config_enable, ...
    COMMAND = 1        # the PCI Command register image (config 0x04, low half)
    STATUS = 2         # PCI Status error bits 11/14/15; write 1 to clear
    MEM_BASE = 3       # memory window base (bytes); also BAR0
    MEM_SIZE = 4       # memory window size (bytes, power of two, 0 = off)
    IO_BASE = 5
    IO_SIZE = 6        # I/O window size (bytes, power of two, 0 = off)
    IO_RAM_OFFSET = 7  # byte offset in the storage where the I/O window starts
    CFG_ID = 8         # vendor | device << 16
    CFG_CLASS = 9      # revision | class code << 8
    CFG_MISC = 10      # cache line size | latency timer << 8 | interrupt line << 16
    LAT_READ = 11      # min | max << 8 (clocks)
    LAT_WRITE = 12
    WAIT = 13          # mask | period << 16 | clocks << 24
    DISCONNECT = 14    # mode | every << 8
    RETRY = 15         # mode | reads << 2 | writes << 3 | count << 8 | prob << 16 | lat << 25
    ABORT_BASE = 16
    ABORT_SIZE = 17
    PARITY = 18        # bad PAR enable | bad PAR64 enable << 1 | phase << 8
    SEED = 19          # random generator seed (non-zero); writing reseeds
    INJECT = 20        # one bit per :class:`Knob`
    EVENT = 21         # latched :class:`Event` bits; write 1 to clear
    EVENT_MASK = 22    # which events raise the ``event`` line
    ERROR = 23         # bit 0: a write was refused; bits 25:16: its register; write clears
    STAT_TRANSACTIONS = 24   # statistics: write any value to clear
    STAT_DATA_PHASES = 25
    STAT_RETRIES = 26
    STAT_DISCONNECTS = 27
    STAT_ABORTS = 28
    STAT_PARITY_ERRORS = 29
    BD_ADDR = 30       # storage backdoor: DWORD index
    BD_DATA = 31       # read/write the DWORD at BD_ADDR, then BD_ADDR += 1
    INFO = 32          # read-only: bus width in bits | storage address bits << 8


#: Statistics registers and the names :meth:`TargetDriver.stats` gives them.
STATS = {
    Reg.STAT_TRANSACTIONS: "transactions", Reg.STAT_DATA_PHASES: "data_phases",
    Reg.STAT_RETRIES: "retries", Reg.STAT_DISCONNECTS: "disconnects",
    Reg.STAT_ABORTS: "aborts", Reg.STAT_PARITY_ERRORS: "parity_errors",
}


@dataclass(frozen=True)
class Field:
    """A field of a control register: ``width`` bits from bit ``lsb`` of ``reg``."""
    reg: Reg
    lsb: int
    width: int

    def insert(self, word, value):
        mask = (1 << self.width) - 1
        return (word & ~(mask << self.lsb)) | ((value & mask) << self.lsb)


#: Every field of the control registers, by name (the one declaration of the layout).
FIELDS = {
    "enable":            Field(Reg.CONTROL, 0, 1),
    "devsel_speed":      Field(Reg.CONTROL, 1, 2),
    "claim_all":         Field(Reg.CONTROL, 3, 1),   # subtractive: every memory/I/O command
    "config_enable":     Field(Reg.CONTROL, 4, 1),   # answer type-0 config cycles (IDSEL)
    "ack64_capable":     Field(Reg.CONTROL, 5, 1),
    "bar_prefetchable":  Field(Reg.CONTROL, 6, 1),
    # Report a write data parity error as soon as PAR shows it while the data phase waits
    # for TRDY#, holding PERR# until two clocks after the phase completes (PCI LB 3.0
    # §3.7.4.1 allows this early report); 0: two clocks after completion only.
    "perr_early":        Field(Reg.CONTROL, 7, 1),
    "io_enable":         Field(Reg.COMMAND, 0, 1),
    "mem_enable":        Field(Reg.COMMAND, 1, 1),
    "parity_response":   Field(Reg.COMMAND, 6, 1),
    "serr_enable":       Field(Reg.COMMAND, 8, 1),
    "mem_base":          Field(Reg.MEM_BASE, 0, 32),
    "mem_size":          Field(Reg.MEM_SIZE, 0, 32),
    "io_base":           Field(Reg.IO_BASE, 0, 32),
    "io_size":           Field(Reg.IO_SIZE, 0, 32),
    "io_ram_offset":     Field(Reg.IO_RAM_OFFSET, 0, 32),
    "vendor_id":         Field(Reg.CFG_ID, 0, 16),
    "device_id":         Field(Reg.CFG_ID, 16, 16),
    "revision_id":       Field(Reg.CFG_CLASS, 0, 8),
    "class_code":        Field(Reg.CFG_CLASS, 8, 24),
    "cache_line_size":   Field(Reg.CFG_MISC, 0, 8),
    "latency_timer":     Field(Reg.CFG_MISC, 8, 8),
    "interrupt_line":    Field(Reg.CFG_MISC, 16, 8),
    "read_latency_min":  Field(Reg.LAT_READ, 0, 8),
    "read_latency_max":  Field(Reg.LAT_READ, 8, 8),
    "write_latency_min": Field(Reg.LAT_WRITE, 0, 8),
    "write_latency_max": Field(Reg.LAT_WRITE, 8, 8),
    "wait_mask":         Field(Reg.WAIT, 0, 16),
    "wait_period":       Field(Reg.WAIT, 16, 5),
    "wait_clocks":       Field(Reg.WAIT, 24, 4),
    "disconnect_mode":   Field(Reg.DISCONNECT, 0, 2),
    "disconnect_every":  Field(Reg.DISCONNECT, 8, 8),
    "retry_mode":        Field(Reg.RETRY, 0, 2),
    "retry_reads":       Field(Reg.RETRY, 2, 1),
    "retry_writes":      Field(Reg.RETRY, 3, 1),
    "retry_count":       Field(Reg.RETRY, 8, 8),
    "retry_probability": Field(Reg.RETRY, 16, 9),
    "retry_latency":     Field(Reg.RETRY, 25, 7),
    "abort_base":        Field(Reg.ABORT_BASE, 0, 32),
    "abort_size":        Field(Reg.ABORT_SIZE, 0, 32),
    "bad_par_enable":    Field(Reg.PARITY, 0, 1),
    "bad_par64_enable":  Field(Reg.PARITY, 1, 1),
    "bad_par_phase":     Field(Reg.PARITY, 8, 8),
    "seed":              Field(Reg.SEED, 0, 32),
    "inject":            Field(Reg.INJECT, 0, 23),
    "event_mask":        Field(Reg.EVENT_MASK, 0, 3),
}

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
    f = FIELDS[name]
    if isinstance(value, int):
        return (value >> f.lsb) & ((1 << f.width) - 1)
    return value[f.lsb:f.lsb + f.width]


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
        f = FIELDS[name]
        words[f.reg] = f.insert(words.get(f.reg, 0), value)
    return words


#: Register values after reset (before any profile): enabled, fast, windows closed.
_RESET_FIELDS = {
    "enable": 1, "mem_enable": 1, "io_enable": 1, "parity_response": 1,
    "vendor_id": 0x1172, "device_id": 0x5043, "class_code": 0x118000,
    "wait_period": 16, "cache_line_size": 8, "retry_probability": 256,
    "retry_reads": 1, "retry_writes": 1, "seed": 1, "event_mask": 0,
}


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

    Storage backdoor: ``<instance>.ram.ram.bd_storage[word]`` in a Verilator build (the
    RAM's instance is ``ram`` inside the submodule ``ram``), ``ram.bd_storage`` here.
    """
    def __init__(self, width=32, mem_addr_bits=18, verilog_ram=True, *, profile=None,
                 seed=1, fields=None):
        if width not in (32, 64):
            raise ValueError(f"PCI bus width must be 32 or 64, not {width!r}")
        self.width = width
        self.mem_addr_bits = mem_addr_bits
        self.verilog_ram = verilog_ram
        self.reset_words = check_profile(profile or PROFILES["ideal"], width=width, seed=seed,
                                         fields=fields)
        super().__init__({"bus": Out(PCIBusSignature(width)), "ctl": Out(ControlSignature())})

    def _storage(self):
        """The component holding the data (ports as :class:`BackdoorRAM`)."""
        return BackdoorRAM(width=self.width, addr_bits=self.mem_addr_bits,
                           verilog=self.verilog_ram)

    def elaborate(self, platform):
        m = Module()
        W = self.width
        wide_bus = W == 64
        bus, ctl = self.bus, self.ctl
        m.submodules.ram = ram = self._storage()
        word_shift = int(math.log2(W // 8))

        # --- control registers --------------------------------------------------------
        bank = {reg: Signal(32, name=f"reg_{reg.name.lower()}", init=self.reset_words.get(reg, 0))
                for reg in Reg}

        def fld(name):
            f = FIELDS[name]
            return bank[f.reg][f.lsb:f.lsb + f.width]

        inject = fld("inject")
        knob = {k: inject[k] for k in Knob}

        # --- bus inputs ------------------------------------------------------------------
        frame, irdy = bus.frame.i, bus.irdy.i
        frame_prev = Signal()
        irdy_prev = Signal()
        m.d.sync += [frame_prev.eq(frame), irdy_prev.eq(irdy)]

        # --- transaction state -----------------------------------------------------------
        busy = Signal()          # between an address phase and the end of its transaction
        claimed = Signal()       # we assert (or have decided to assert) DEVSEL#
        started = Signal()       # the first data phase's TRDY#/STOP# has been given
        turnaround = Signal()    # the clock we drive our lines deasserted before release
        clk = Signal(10)         # number of the current clock (address phase = 1)
        other_devsel = Signal()  # another agent claimed (seen before our subtractive claim)

        trdy_o, stop_o, devsel_o, ack64_o = Signal(), Signal(), Signal(), Signal()
        ctl_oe = Signal()        # TRDY#/STOP#/DEVSEL#(/ACK64#) driven
        ad_oe = Signal()
        ack64_pending = Signal()  # knob (o): ACK64# follows DEVSEL# by a clock

        # This edge samples an address phase (an unclaimed transaction may be followed back to
        # back, without an idle clock).
        start = ~(busy & claimed) & frame & ~frame_prev
        nclk = Mux(start, 2, Mux(clk == 1023, 1023, clk + 1))

        # Live decode of the address phase (valid when ``start``).
        a_ad, a_cmd = bus.ad.i, bus.cbe.i
        a_is_mem = a_cmd.matches("0110", "0111", "1100", "1110", "1111")
        a_is_io = a_cmd.matches("0010", "0011")
        a_is_cfg = (a_cmd.matches("1010", "1011") & bus.idsel.i & (a_ad[0:2] == 0)
                    & (a_ad[8:11] == 0) & fld("config_enable"))
        a_is_special = a_cmd == Command.SPECIAL_CYCLE.value
        a_read = a_cmd.matches("0010", "0110", "1010", "1100", "1110")
        mem_off = (a_ad - fld("mem_base"))[:32]
        io_off = (a_ad - fld("io_base"))[:32]
        a_mem_hit = a_is_mem & fld("mem_enable") & (mem_off < fld("mem_size"))
        a_io_hit = a_is_io & fld("io_enable") & (io_off < fld("io_size"))
        a_claim_all = fld("claim_all") & (a_is_mem | a_is_io)
        a_hit = fld("enable") & (a_mem_hit | a_io_hit | a_is_cfg | a_claim_all
                                 | (knob[Knob.CLAIM_SPECIAL] & a_is_special))
        a_storage = a_mem_hit | a_io_hit | a_claim_all
        a_off = Mux(a_mem_hit, mem_off,
                    Mux(a_io_hit, (io_off + fld("io_ram_offset"))[:32],
                        Mux(a_is_cfg, a_ad[0:8], mem_off)))
        a_req64 = bus.req64.i if wide_bus else C(0)
        a_ack64 = (C(wide_bus) & a_is_mem & fld("ack64_capable")
                   & (a_req64 | knob[Knob.ACK64_WITHOUT_REQ64]))
        a_wide = a_ack64 & a_req64
        a_off = Mux(a_wide, a_off & ~7, a_off & ~3)
        a_nonlinear = a_is_mem & (a_ad[0:2] != 0) & ~knob[Knob.IGNORE_BURST_ORDER]

        # Random draws: an xorshift32 step per address phase.
        rng = Signal(32, init=self.reset_words[Reg.SEED])
        x1 = rng ^ (rng << 13)[:32]
        x2 = x1 ^ (x1 >> 17)
        rnd = Signal(32)
        m.d.comb += rnd.eq(x2 ^ (x2 << 5)[:32])
        with m.If(start):
            m.d.sync += rng.eq(rnd)
        lat_min = Mux(a_read, fld("read_latency_min"), fld("write_latency_min"))
        lat_max = Mux(a_read, fld("read_latency_max"), fld("write_latency_max"))
        lat_span = (lat_max - lat_min + 1)[:9]
        lat_draw = (lat_min + (rnd[0:16] * lat_span)[16:25])[:10]
        lat = Mux(knob[Knob.INITIAL_LATENCY_17], 17, lat_draw)

        turn_read = knob[Knob.TRDY_IN_TURNAROUND] & a_read
        dclk = Signal(4)
        with m.Switch(fld("devsel_speed")):
            for speed, clock in ((DevselSpeed.FAST, 2), (DevselSpeed.MEDIUM, 3),
                                 (DevselSpeed.SLOW, 4), (DevselSpeed.SUBTRACTIVE, 5)):
                with m.Case(speed.value):
                    m.d.comb += dclk.eq(clock)
        a_dclk = Mux(knob[Knob.DEVSEL_LATE], 6, Mux(turn_read, 2, dclk))
        a_subtractive = (fld("devsel_speed") == DevselSpeed.SUBTRACTIVE.value) & \
            ~knob[Knob.DEVSEL_LATE] & ~turn_read
        earliest = Mux(turn_read, 2, Mux(a_read, 3, 2))

        def at_least(*values):
            result = values[0]
            for v in values[1:]:
                result = Mux(v > result, v, result)
            return result

        t_data = at_least(lat + 1, earliest, a_dclk)

        # Retry policy.
        pend_valid, pend_addr, pend_cmd = Signal(), Signal(32), Signal(4)
        pend_count = Signal(8)
        every_count = Signal(8)
        retry_dir = Mux(a_read, fld("retry_reads"), fld("retry_writes"))
        chosen = rnd[16:24] < fld("retry_probability")
        same = pend_valid & (pend_addr == a_ad) & (pend_cmd == a_cmd)
        a_retry = Signal()
        with m.Switch(fld("retry_mode")):
            with m.Case(RetryMode.FIRST.value):
                m.d.comb += a_retry.eq(retry_dir & Mux(same, pend_count < fld("retry_count"),
                                                       chosen & (fld("retry_count") != 0)))
            with m.Case(RetryMode.EVERY.value):
                m.d.comb += a_retry.eq(retry_dir & (every_count + 1 >= fld("retry_count")))
            with m.Case(RetryMode.RANDOM.value):
                m.d.comb += a_retry.eq(retry_dir & chosen)
        a_retry_any = a_retry | knob[Knob.STOP_WITHOUT_CLAIM]
        t_retry = at_least(fld("retry_latency") + 1, a_dclk)
        a_abort = (a_storage & ((a_ad - fld("abort_base"))[:32] < fld("abort_size"))
                   & ~a_retry_any)
        t_abort = at_least(t_data, a_dclk + 1)
        a_first = Mux(a_retry_any, t_retry, Mux(a_abort, t_abort, t_data))

        # Latched per transaction; ``t_*`` are the values in force at this edge.
        r = {name: Signal(shape, name=f"txn_{name}") for name, shape in (
            ("hit", 1), ("read", 1), ("storage", 1), ("cfg", 1), ("wide", 1), ("ack64", 1),
            ("nonlinear", 1), ("dclk", 4), ("first", 10), ("retry", 1), ("abort", 1),
            ("subtractive", 1), ("suppress", 1))}
        live = {"hit": a_hit, "read": a_read, "storage": a_storage, "cfg": a_is_cfg,
                "wide": a_wide, "ack64": a_ack64, "nonlinear": a_nonlinear, "dclk": a_dclk,
                "first": a_first, "retry": a_retry_any, "abort": a_abort,
                "subtractive": a_subtractive,
                "suppress": knob[Knob.TRDY_WITHOUT_DEVSEL] | knob[Knob.STOP_WITHOUT_CLAIM]}
        t = {name: Mux(start, live[name], r[name]) for name in r}
        with m.If(start):
            m.d.sync += [r[name].eq(live[name]) for name in r]
            with m.If(a_hit & retry_dir):
                with m.Switch(fld("retry_mode")):
                    with m.Case(RetryMode.FIRST.value):
                        with m.If(a_retry):
                            m.d.sync += [pend_valid.eq(1), pend_addr.eq(a_ad),
                                         pend_cmd.eq(a_cmd),
                                         pend_count.eq(Mux(same, pend_count + 1, 1))]
                        with m.Else():
                            m.d.sync += pend_valid.eq(0)
                    with m.Case(RetryMode.EVERY.value):
                        m.d.sync += every_count.eq(Mux(a_retry, 0, every_count + 1))

        # Offsets into the storage, and the data phase counters.
        off = Signal(32)
        phases = Signal(16)      # data phases completed in this transaction
        wcnt = Signal(4)         # wait states left before TRDY#
        step = Mux(t["wide"], 8, 4)
        moved = busy & trdy_o & irdy
        last_edge = busy & claimed & irdy & ~frame & (trdy_o | stop_o)
        bus_idle = ~frame & ~irdy
        g_done, e_drop, f_done, t_done = Signal(), Signal(), Signal(), Signal()
        stopped = Signal()       # STOP# was given: no more TRDY# in this transaction

        # The data phase about to be presented: disconnect-with-data due?
        def disconnect_with_data(index, addr_off):
            mode = fld("disconnect_mode")
            cls = fld("cache_line_size")
            dword = (fld("mem_base") + addr_off)[2:12]
            line_last = (cls != 0) & (((dword + Mux(t["wide"], 2, 1)) & (cls - 1)) == 0)
            return frame & ~t["abort"] & (
                ((t["cfg"] | t["nonlinear"]) & (index == 0))
                | ((mode == DisconnectMode.WITH_DATA.value)
                   & (index + 1 == fld("disconnect_every")))
                | ((mode == DisconnectMode.CACHE_LINE.value) & line_last))

        def waits_before(index):
            period = fld("wait_period")
            bit = Signal(4)
            m.d.comb += bit.eq(Mux(period == 0, 0, index % Mux(period == 0, 1, period)))
            masked = fld("wait_mask").bit_select(bit, 1)
            return Mux(knob[Knob.SUBSEQUENT_LATENCY_9] & (index == 1), 8,
                       Mux(masked, fld("wait_clocks"), 0))

        stat_inc = {name: Signal(name=f"count_{name}") for name in STATS.values()}
        m.d.comb += stat_inc["data_phases"].eq(moved & claimed)
        ev_end = Signal()
        abort_signaled = Signal()

        with m.If(turnaround):
            # Our lines were driven deasserted for one clock: release them now.
            m.d.sync += [ctl_oe.eq(0), turnaround.eq(0)]
        with m.If(start | busy):
            m.d.sync += clk.eq(nclk)
            with m.If(start):
                m.d.sync += [busy.eq(1), claimed.eq(0), started.eq(0), other_devsel.eq(0),
                             off.eq(a_off), phases.eq(0), g_done.eq(0), e_drop.eq(0), f_done.eq(0),
                             t_done.eq(0), stopped.eq(0)]
            with m.Elif(~claimed):
                m.d.sync += other_devsel.eq(other_devsel | bus.devsel.i)

            claim_now = ~claimed & t["hit"] & (nclk == t["dclk"]) & \
                ~(t["subtractive"] & (other_devsel | (bus.devsel.i & ~start)))
            first_now = (claimed | claim_now) & ~(started & ~start) & (nclk == t["first"])
            decline = ~claimed & (~t["hit"] | (nclk > t["dclk"]))

            with m.If(~start & (last_edge | (bus_idle & claimed))):
                # The transaction is over: drive our lines deasserted for one clock.
                m.d.sync += [busy.eq(0), claimed.eq(0), trdy_o.eq(0), stop_o.eq(0),
                             devsel_o.eq(0), ack64_o.eq(0), ad_oe.eq(0), turnaround.eq(1),
                             ack64_pending.eq(0)]
                m.d.comb += ev_end.eq(1)
            with m.Elif(~start & bus_idle | (decline & ~claim_now)):
                # Not ours (or the initiator gave up before we claimed): watch for the end.
                with m.If(bus_idle & ~start):
                    m.d.sync += busy.eq(0)
            with m.Else():
                with m.If(claim_now):
                    m.d.sync += [claimed.eq(1), ctl_oe.eq(1), turnaround.eq(0),
                                 devsel_o.eq(~t["suppress"]),
                                 ack64_o.eq(t["ack64"] & ~t["suppress"] & ~knob[Knob.ACK64_LATE]),
                                 ack64_pending.eq(t["ack64"] & ~t["suppress"] & knob[Knob.ACK64_LATE])]
                    m.d.comb += stat_inc["transactions"].eq(1)
                with m.If(ack64_pending):
                    m.d.sync += [ack64_o.eq(1), ack64_pending.eq(0)]
                # Read data from clock 3 (after the turnaround) until the end; not after a
                # target abort, where DEVSEL# is gone.
                m.d.sync += ad_oe.eq((claimed | claim_now) & t["read"] & (nclk >= 3)
                                     & ~(t["abort"] & ((started & ~start) | first_now)))

                with m.If(first_now):
                    m.d.sync += started.eq(1)
                    with m.If(t["retry"]):
                        m.d.sync += stop_o.eq(1)
                        m.d.comb += stat_inc["retries"].eq(1)
                    with m.Elif(t["abort"]):
                        m.d.sync += [stop_o.eq(1), devsel_o.eq(0), ack64_o.eq(0)]
                        m.d.comb += [stat_inc["aborts"].eq(1), abort_signaled.eq(1)]
                    with m.Else():
                        dwd = disconnect_with_data(0, Mux(start, a_off, off))
                        m.d.sync += [trdy_o.eq(1), stop_o.eq(dwd)]
                        m.d.comb += stat_inc["disconnects"].eq(dwd)
                with m.Elif(claimed & started):
                    with m.If(moved):
                        m.d.sync += [phases.eq(phases + 1), off.eq(off + step)]
                    nxt = phases + 1
                    with m.If(stop_o | stopped):
                        # Hold STOP# until FRAME# goes; TRDY# only until its word moved.
                        m.d.sync += [trdy_o.eq(trdy_o & ~moved), stopped.eq(1)]
                        # Knob (t): TRDY# stays for the initiator's final data phase, so
                        # one more word moves after the disconnect.
                        with m.If(knob[Knob.TRDY_AFTER_STOP] & ~t_done & trdy_o & moved & frame):
                            m.d.sync += [trdy_o.eq(1), t_done.eq(1)]
                        # Knob (f): one clock without STOP# while FRAME# is still asserted,
                        # then STOP# again, so the initiator can still end the transaction.
                        with m.If(knob[Knob.STOP_EARLY_RELEASE] & ~f_done & stop_o & frame):
                            m.d.sync += [stop_o.eq(0), f_done.eq(1)]
                        with m.Elif(~stop_o):
                            m.d.sync += stop_o.eq(1)
                    with m.Elif(trdy_o & ~moved):
                        with m.If(knob[Knob.TRDY_WITHDRAW] & ~g_done):
                            m.d.sync += [trdy_o.eq(0), wcnt.eq(0), g_done.eq(1)]
                        with m.Elif(knob[Knob.STOP_ADDED_IN_WAIT] & ~g_done):
                            # Knob (s): the answer given changes to a disconnect with data.
                            m.d.sync += [stop_o.eq(1), g_done.eq(1)]
                    with m.Elif(moved):
                        waits = waits_before(nxt)
                        with m.If(knob[Knob.DEVSEL_DROP] & (phases == 0)):
                            m.d.sync += [devsel_o.eq(0), trdy_o.eq(0), wcnt.eq(0), e_drop.eq(1)]
                        with m.Elif((fld("disconnect_mode") == DisconnectMode.WITHOUT_DATA.value)
                                    & (nxt == fld("disconnect_every"))):
                            m.d.sync += [trdy_o.eq(0), stop_o.eq(1)]
                            m.d.comb += stat_inc["disconnects"].eq(1)
                        with m.Elif(waits == 0):
                            dwd = disconnect_with_data(nxt, off + step)
                            m.d.sync += [trdy_o.eq(1), stop_o.eq(dwd)]
                            m.d.comb += stat_inc["disconnects"].eq(dwd)
                        with m.Else():
                            m.d.sync += [trdy_o.eq(0), wcnt.eq(waits - 1)]
                    with m.Else():
                        # Waiting (TRDY# deasserted) before data phase ``phases``.
                        with m.If(e_drop):
                            m.d.sync += [devsel_o.eq(1), e_drop.eq(0)]
                        with m.If(wcnt == 0):
                            dwd = disconnect_with_data(phases, off)
                            m.d.sync += [trdy_o.eq(1), stop_o.eq(dwd)]
                            m.d.comb += stat_inc["disconnects"].eq(dwd)
                        with m.Else():
                            m.d.sync += wcnt.eq(wcnt - 1)

        # Knob (c): one clock of DEVSEL# on a bus idle for two clocks, then release.
        idle_pulse = Signal(2)
        with m.If(knob[Knob.DEVSEL_ON_IDLE] & ~busy & ~start & ~turnaround & ~ctl_oe
                  & bus_idle & ~frame_prev & ~irdy_prev & (idle_pulse == 0)):
            m.d.sync += [devsel_o.eq(1), ctl_oe.eq(1), idle_pulse.eq(1)]
        with m.Elif(idle_pulse == 1):
            m.d.sync += [devsel_o.eq(0), idle_pulse.eq(2)]
        with m.Elif(idle_pulse == 2):
            m.d.sync += [ctl_oe.eq(0), idle_pulse.eq(0)]

        # Knob (v) must outlive the reset it acts in: a reset-less copy, armed by the INJECT
        # write and disarmed when RST# is released.
        reset_knob = Signal(reset_less=True)
        rst_prev = Signal(reset_less=True)
        m.d.sync += rst_prev.eq(bus.rst.i)
        inject_refused = Signal()
        m.d.comb += inject_refused.eq(REFUSALS[Reg.INJECT][1](ctl.w_data, W))
        with m.If(ctl.w_en & (ctl.addr == Reg.INJECT) & ~inject_refused):
            m.d.sync += reset_knob.eq(ctl.w_data[Knob.DEVSEL_IN_RESET])
        with m.Elif(rst_prev & ~bus.rst.i):
            m.d.sync += reset_knob.eq(0)
        devsel_in_reset = reset_knob & bus.rst.i
        # ... and, being a sustained tri-state line it asserted, driven deasserted for the
        # first clock after RST# is released, then let go: the knob breaks only the reset
        # rule.
        devsel_tail = reset_knob & rst_prev & ~bus.rst.i

        m.d.comb += [
            bus.trdy.o.eq(trdy_o), bus.trdy.oe.eq(ctl_oe),
            bus.stop.o.eq(stop_o), bus.stop.oe.eq(ctl_oe),
            bus.devsel.o.eq(devsel_o | devsel_in_reset),
            bus.devsel.oe.eq(ctl_oe | devsel_in_reset | devsel_tail),
        ]
        if wide_bus:
            m.d.comb += [bus.ack64.o.eq(ack64_o), bus.ack64.oe.eq(ctl_oe)]

        # --- data path ---------------------------------------------------------------------
        # The read port shows, in the next clock, the word of the data phase presented then.
        shown_off = Mux(start, a_off, Mux(moved, off + step, off))
        shown_reg = Signal(32)
        m.d.sync += shown_reg.eq(shown_off)
        cfg_rdata = Signal(32)
        bd_index = Signal(32)
        # From the address phase on (not only once claimed: slower DEVSEL# still needs the
        # first word ready for clock 3).
        reading = busy & t["read"] & ~t["cfg"] | start & a_read
        m.d.comb += ram.r_addr.eq(Mux(reading, shown_off >> word_shift,
                                      bd_index >> (word_shift - 2)))
        word = Signal(32)
        if wide_bus:
            m.d.comb += word.eq(Mux(shown_reg[2], ram.r_data[32:], ram.r_data[:32]))
        else:
            m.d.comb += word.eq(ram.r_data)
        q_flip = Signal()
        with m.If(knob[Knob.READ_DATA_CHANGE] & trdy_o & ~irdy & ad_oe):
            m.d.sync += q_flip.eq(~q_flip)
        with m.Elif(~busy):
            m.d.sync += q_flip.eq(0)
        lo = Mux(r["cfg"], cfg_rdata, Mux(r["wide"], ram.r_data[:32], word))
        m.d.comb += [bus.ad.o.eq(lo ^ Mux(q_flip, 0xFFFF_FFFF, 0)), bus.ad.oe.eq(ad_oe)]
        if wide_bus:
            m.d.comb += [bus.ad_hi.o.eq(ram.r_data[32:] ^ Mux(q_flip, 0xFFFF_FFFF, 0)),
                         bus.ad_hi.oe.eq(ad_oe & r["wide"])]

        # Writes into the storage, byte lanes from C/BE# (active low on the bus).
        write_now = moved & ~t["read"] & t["storage"]
        be_lo = ~bus.cbe.i & 0xF
        lanes = Signal(W // 8)
        wdata = Signal(W)
        if wide_bus:
            be_hi = ~bus.cbe_hi.i & 0xF
            m.d.comb += [
                lanes.eq(Mux(t["wide"], Cat(be_lo, be_hi),
                             Mux(off[2], Cat(C(0, 4), be_lo), Cat(be_lo, C(0, 4))))),
                wdata.eq(Mux(t["wide"], Cat(bus.ad.i, bus.ad_hi.i), Cat(bus.ad.i, bus.ad.i))),
            ]
        else:
            m.d.comb += [lanes.eq(be_lo), wdata.eq(bus.ad.i)]
        bd_write = ctl.w_en & (ctl.addr == Reg.BD_DATA)
        bd_lanes = Signal(W // 8)
        if wide_bus:
            m.d.comb += bd_lanes.eq(Mux(bd_index[0], 0xF0, 0x0F))
        else:
            m.d.comb += bd_lanes.eq(0xF)
        with m.If(write_now):
            m.d.comb += [ram.w_addr.eq(off >> word_shift), ram.w_data.eq(wdata),
                         ram.w_en.eq(lanes)]
        with m.Elif(bd_write):
            m.d.comb += [ram.w_addr.eq(bd_index >> (word_shift - 2)),
                         ram.w_data.eq(Cat(*([ctl.w_data] * (W // 32)))),
                         ram.w_en.eq(bd_lanes)]

        # --- parity --------------------------------------------------------------------------
        par_flip = Signal()
        par64_flip = Signal()
        flip_phase = moved & t["read"] & (phases == fld("bad_par_phase"))
        m.d.comb += [
            par_flip.eq(flip_phase & (fld("bad_par_enable") | knob[Knob.BAD_PAR])),
            par64_flip.eq(flip_phase & (fld("bad_par64_enable") | knob[Knob.BAD_PAR64])),
        ]
        # Knob (h) moves a word in the turnaround clock, when nobody drives AD: nobody
        # drives PAR for it either (PAR follows AD's driver), so the pulled-up PAR (1) is
        # what covers it.
        m.d.sync += [bus.par.o.eq(_parity(bus.ad.o, bus.cbe.i) ^ par_flip),
                     bus.par.oe.eq(ad_oe)]
        if wide_bus:
            m.d.sync += [bus.par64.o.eq(_parity(bus.ad_hi.o, bus.cbe_hi.i) ^ par64_flip),
                         bus.par64.oe.eq(ad_oe & r["wide"])]

        # Address parity (every address phase) and write data parity (our writes).
        achk, aexp = Signal(), Signal()
        dchk, dexp, dexp64, dchk64 = Signal(), Signal(), Signal(), Signal()
        m.d.sync += [achk.eq(start), aexp.eq(_parity(bus.ad.i, bus.cbe.i)),
                     dchk.eq(moved & ~t["read"] & claimed),
                     dexp.eq(_parity(bus.ad.i, bus.cbe.i))]
        data_par_error = dchk & (bus.par.i != dexp)
        if wide_bus:
            m.d.sync += [dchk64.eq(moved & ~t["read"] & claimed & t["wide"]),
                         dexp64.eq(_parity(bus.ad_hi.i, bus.cbe_hi.i))]
            data_par_error = data_par_error | (dchk64 & (bus.par64.i != dexp64))
        addr_par_error = achk & (bus.par.i != aexp)

        # Early report (``perr_early``, knob (w)): while a write data phase waits (IRDY#
        # asserted, this target's TRDY# and STOP# not), its data is valid and PAR, one clock
        # later, covers it. Not on a transaction this target will retry or abort: a target
        # that signalled PERR# must complete the phase with TRDY# (PCI LB 3.0 §3.7.4.1).
        early_on = fld("perr_early") | knob[Knob.PERR_RELEASED_EARLY]
        wchk = Signal()
        m.d.sync += wchk.eq(early_on & busy & claimed & ~t["read"] & ~t["retry"]
                            & ~t["abort"] & irdy & ~trdy_o & ~stop_o)
        early_error = wchk & (bus.par.i != dexp)
        # The clock after a data phase completed (the clock ``dchk`` checks a moved word's
        # PAR in), or after the bus went idle under this target's claim without one.
        phase_end = Signal()
        m.d.sync += phase_end.eq(busy & claimed & ((irdy & (trdy_o | stop_o)) | bus_idle))
        early_seen = Signal()    # this data phase's parity error was seen early
        early_first = early_error & ~early_seen
        with m.If(phase_end):
            m.d.sync += early_seen.eq(0)
        with m.Elif(early_error):
            m.d.sync += early_seen.eq(1)
        # One parity error per data phase, whether seen early or after completion.
        parity_event = early_first | (data_par_error & ~early_seen) | addr_par_error
        m.d.comb += stat_inc["parity_errors"].eq(parity_event)

        # PERR#: asserted the clock after PAR was sampled bad (data phase + 2), then driven
        # deasserted for one clock before release (sustained tri-state). An early report
        # asserts it the clock after PAR showed the error and holds it (``perr_hold``) until
        # the phase has completed; the normal report two clocks after completion then
        # carries it on, so PERR# stays asserted through completion + 2 whatever PAR shows
        # after completion. Knob (w) gives the early report one clock only and no tail.
        perr_step = Signal(2)
        perr_hold = Signal()
        early_report = early_first & fld("parity_response")
        with m.If(phase_end):
            m.d.sync += perr_hold.eq(0)
        with m.Elif(early_report & ~knob[Knob.PERR_RELEASED_EARLY]):
            m.d.sync += perr_hold.eq(1)
        fire_perr = (data_par_error & fld("parity_response") & ~early_seen) | \
            (phase_end & perr_hold) | \
            (early_report & knob[Knob.PERR_RELEASED_EARLY]) | \
            (start & a_hit & knob[Knob.PERR_WRONG_TIME]) | \
            (dchk & knob[Knob.PERR_ON_GOOD_DATA])
        with m.If(fire_perr):
            m.d.sync += perr_step.eq(1)
        with m.Elif(perr_step != 0):
            m.d.sync += perr_step.eq(Mux(perr_step == 2, 0, 2))
        m.d.comb += [bus.perr.o.eq((perr_step == 1) | perr_hold),
                     bus.perr.oe.eq((perr_step != 0) | perr_hold)]
        # SERR# (open drain): one clock, after an address parity error, when enabled.
        serr_now = addr_par_error & fld("serr_enable") & fld("parity_response")
        serr = Signal()
        m.d.sync += serr.eq(serr_now)
        m.d.comb += [bus.serr.o.eq(serr), bus.serr.oe.eq(serr)]

        # --- configuration space (type 0 header) -----------------------------------------------
        size = fld("mem_size")
        bar0 = (fld("mem_base") & ~(size - 1)[:32]) | (fld("bar_prefetchable") << 3)
        status = Cat(C(0, 9), Mux(fld("devsel_speed") == DevselSpeed.FAST.value, 0,
                                  Mux(fld("devsel_speed") == DevselSpeed.MEDIUM.value, 1, 2))[:2],
                     C(0, 5)) | bank[Reg.STATUS][:16]
        cfg_index = shown_off[2:8]
        cfg_word = Signal(32)
        with m.Switch(cfg_index):
            with m.Case(0x00):
                m.d.comb += cfg_word.eq(bank[Reg.CFG_ID])
            with m.Case(0x01):
                m.d.comb += cfg_word.eq(Cat(bank[Reg.COMMAND][:16], status))
            with m.Case(0x02):
                m.d.comb += cfg_word.eq(bank[Reg.CFG_CLASS])
            with m.Case(0x03):
                m.d.comb += cfg_word.eq(Cat(fld("cache_line_size"), fld("latency_timer"), C(0, 16)))
            with m.Case(0x04):
                m.d.comb += cfg_word.eq(bar0)
            with m.Case(0x0B):
                m.d.comb += cfg_word.eq(bank[Reg.CFG_ID])
            with m.Case(0x0F):
                m.d.comb += cfg_word.eq(fld("interrupt_line"))
        m.d.sync += cfg_rdata.eq(cfg_word)
        be_mask = Cat(*[Mux(be_lo[i], C(0xFF, 8), C(0, 8)) for i in range(4)])
        cfg_wr = moved & ~t["read"] & t["cfg"]
        cfg_wdata = bus.ad.i & be_mask

        def merge(old):
            return (old & ~be_mask) | cfg_wdata

        # --- control port, statistics, events, refusals ----------------------------------------
        status_set = Signal(16)
        m.d.comb += status_set.eq(
            Mux(abort_signaled, STATUS_SIGNALED_TARGET_ABORT, 0)
            | Mux(serr_now, STATUS_SIGNALED_SYSTEM_ERROR, 0)
            | Mux(parity_event, STATUS_DETECTED_PARITY_ERROR, 0))
        refused = Signal()
        for reg, (_, bad) in REFUSALS.items():
            with m.If(ctl.addr == reg):
                m.d.comb += refused.eq(bad(ctl.w_data, W))

        events = Signal(len(Event))
        with m.If(ctl.w_en):
            with m.If(refused):
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
                                pass  # cleared below, together with new events
                            elif reg == Reg.ERROR:
                                m.d.sync += bank[reg].eq(0)
                            elif reg == Reg.BD_DATA:
                                m.d.sync += bd_index.eq(bd_index + 1)
                            elif reg == Reg.BD_ADDR:
                                m.d.sync += bd_index.eq(ctl.w_data)
                            elif reg == Reg.INFO:
                                pass  # read-only
                            elif reg == Reg.SEED:
                                m.d.sync += [bank[reg].eq(ctl.w_data), rng.eq(ctl.w_data)]
                            else:
                                m.d.sync += bank[reg].eq(ctl.w_data)
        with m.If(ctl.r_en & (ctl.addr == Reg.BD_DATA)):
            m.d.sync += bd_index.eq(bd_index + 1)

        # Hardware updates (after the control writes, so they win a same-clock clash).
        for name, reg in ((n, g) for g, n in STATS.items()):
            with m.If(stat_inc[name]):
                m.d.sync += bank[reg].eq(bank[reg] + 1)
        with m.If(status_set != 0):
            m.d.sync += bank[Reg.STATUS].eq(bank[Reg.STATUS] | status_set)
        with m.If(cfg_wr):
            with m.Switch(off[2:8]):
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
                        Cat(Mux((cls & (cls - 1)[:8]) == 0, cls, 0), merge(bank[Reg.CFG_MISC])[8:16]))
                with m.Case(0x04):
                    m.d.sync += bank[Reg.MEM_BASE].eq(merge(bank[Reg.MEM_BASE]) & ~(size - 1)[:32])
                with m.Case(0x0F):
                    m.d.sync += bank[Reg.CFG_MISC][16:24].eq(merge(bank[Reg.CFG_MISC])[0:8])
        new_events = Cat(ev_end, parity_event, ctl.w_en & refused)
        events_cleared = Mux(ctl.w_en & (ctl.addr == Reg.EVENT), ctl.w_data[:len(Event)], 0)
        m.d.sync += events.eq((events & ~events_cleared) | new_events)
        with m.If(knob[Knob.DEVSEL_ON_IDLE] & (idle_pulse == 2)):
            m.d.sync += bank[Reg.INJECT][Knob.DEVSEL_ON_IDLE].eq(0)
        m.d.comb += ctl.event.eq((events & fld("event_mask")) != 0)

        # Read mux, registered; BD_DATA comes straight from the storage's registered port.
        read_reg = Signal(32)
        last_addr = Signal(len(ctl.addr))
        last_bd_half = Signal()
        m.d.sync += [last_addr.eq(ctl.addr), last_bd_half.eq(bd_index[0])]
        with m.Switch(ctl.addr):
            for reg in Reg:
                with m.Case(reg):
                    if reg == Reg.EVENT:
                        m.d.sync += read_reg.eq(events)
                    elif reg == Reg.BD_ADDR:
                        m.d.sync += read_reg.eq(bd_index)
                    elif reg == Reg.STATUS:
                        m.d.sync += read_reg.eq(status)
                    elif reg == Reg.INFO:
                        m.d.sync += read_reg.eq(W | (self.mem_addr_bits << 8))
                    else:
                        m.d.sync += read_reg.eq(bank[reg])
            with m.Default():
                m.d.sync += read_reg.eq(0)
        bd_word = ram.r_data[:32]
        if wide_bus:
            bd_word = Mux(last_bd_half, ram.r_data[32:], ram.r_data[:32])
        m.d.comb += ctl.r_data.eq(Mux(last_addr == Reg.BD_DATA, bd_word, read_reg))
        return m


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
            self.width = (await self.ctl.read(Reg.INFO)) & 0xFF
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
        regs = {FIELDS[name].reg for name in values}
        base = {reg: await self.ctl.read(reg) for reg in regs}
        for reg, word in sorted(_pack(values, base).items()):
            await self.write_reg(reg, word)

    async def apply_profile(self, profile, *, seed=1):
        """Program every behaviour knob of ``profile`` (a :class:`Profile` or its name)."""
        if isinstance(profile, str):
            from pcispy.sim.bfm.profiles import profile_by_name
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
