# SPDX-License-Identifier: BSD-2-Clause
"""The behavioural target's side towards Python (pcispy/sim/bfm/target.py is its bus side):
the control-port registers (its programmed response, its windows, the configuration header
it answers, statistics), the refusals of values it cannot take and the check of a whole
behaviour profile against them (:func:`check_profile`), and the gateware that serves the
port and the configuration space. :class:`~pcispy.sim.bfm.target_driver.TargetDriver`
drives the registers from Python.
"""

import enum

from amaranth import C, Cat, Mux, Signal

from pcispy.pci.bus import DevselSpeed
from pcispy.sim.bfm.profiles import DisconnectMode, RetryMode
from pcispy.sim.control import (ControlField, ControlRegister, ControlRegisters, register_reads,
                                written)

__all__ = ["REGISTERS", "Reg", "FIELDS", "STATS", "Knob", "Event", "REFUSALS", "profile_fields",
           "check_profile", "TargetConfigError"]


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


class _ControlPortLogic:
    """The control port's share of the target's logic (a base of its ``_TargetLogic``,
    whose attributes it uses): the configuration header, the registers' writes and reads,
    the hardware's updates of them."""

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
