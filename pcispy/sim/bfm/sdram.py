# SPDX-License-Identifier: BSD-2-Clause
"""A behavioural single-data-rate SDRAM (the spy's deep trace memory), at clock resolution.

Written from the data sheets of the 16-bit SDR SDRAMs of the ULX3S (ISSI IS42S16160,
Micron MT48LC16M16A2: 4 banks x 8192 rows x 512 columns), not from the controller that
drives it. Commands are sampled at the clock edge, with CS#, RAS#, CAS#, WE# (pin levels):

=========  ====  ====  ===  ====================================================
command    RAS#  CAS#  WE#  the model
=========  ====  ====  ===  ====================================================
NOP        H     H     H    nothing (CS# high: command inhibit, the same)
ACTIVE     L     H     H    opens row ``a`` of bank ``ba``
READ       H     L     H    a burst from column ``a``; word i on DQ for the edge
                            ``CL + i`` clocks after the command
WRITE      H     L     L    a burst from column ``a``; word i taken ``i`` clocks after
                            the command (DQM high masks its byte)
BST        H     H     L    ends the burst
PRECHARGE  L     H     L    closes bank ``ba`` (A10 high: every bank)
REFRESH    L     L     H    auto refresh (every bank closed)
MODE       L     L     L    mode register = ``a``: burst length (A2:0: 1, 2, 4, 8),
                            sequential (A3 = 0), CAS latency (A6:4: 2 or 3), write
                            burst mode (A9: 1 = single-location writes)
=========  ====  ====  ===  ====================================================

Each rule of the data sheet the model checks is a named :class:`Violation` with a sticky
flag (``flags``) and a saturating counter (``counts``); ``errors`` counts the clocks with
any. Timing parameters are in clocks (the data sheets give ns: ``ceil(t / period)``):
``t_rcd`` ACTIVE to READ/WRITE, ``t_ras`` ACTIVE to PRECHARGE, ``t_rp`` PRECHARGE to
ACTIVE/REFRESH, ``t_rc`` ACTIVE to ACTIVE of a bank, ``t_rrd`` ACTIVE to ACTIVE of
another bank, ``t_wr`` last write data to PRECHARGE, ``t_rfc`` REFRESH to any command,
``t_mrd`` MODE to any command. Initialisation: ``power_up`` clocks of NOP (the 100-200 us
of the data sheets, scaled), then PRECHARGE of every bank, ``init_refreshes`` REFRESHes
and MODE, in that order, before any ACTIVE. Refresh: 8192 REFRESHes per 64 ms, i.e. one
each 7.8 us; the model wants one at most every ``refresh_interval`` clocks once
initialised (scaled: a parameter), and flags REFRESH_LATE each time that passes without.

Not modelled: auto precharge (A10 with READ/WRITE) and CKE low (power down, self
refresh), both flagged UNSUPPORTED; full-page and interleaved bursts (flagged MODE); DQM
on reads is ignored (the data is driven); the longest time a row may stay
open (tRAS max, ~100 us: refresh closes every row far sooner).

Ports (pin levels):
    clk is the domain's clock. cke, cs_n, ras_n, cas_n, we_n (In, 1); ba (In, 2);
    a (In, 13); dqm (In, 2); dq_i (In, 16): what the controller drives;
    dq_driven (In, 1): the controller drives DQ this clock (contention is a violation);
    dq_o (Out, 16), dq_oe (Out, 1): what the SDRAM drives.
    flags (Out, len(Violation)): sticky, bit = :class:`Violation`;
    counts (Out, ArrayLayout(16, len(Violation))): saturating, per violation;
    errors (Out, 16): clocks with any violation (saturating);
    refreshes (Out, 32): REFRESH commands taken; ready (Out, 1): initialised.

Parameters:
    row_bits (13; fewer for small tests: the upper row address bits are ignored),
        col_bits (9; 3..10): the geometry (4 banks, 16-bit words); the storage holds
        ``4 << (row_bits + col_bits)`` words, word address ``Cat(col, row, bank)``
        (:meth:`word_address`; the backdoor ``bd_storage``).
    t_*, power_up, init_refreshes, refresh_interval: as above.
    verilog: keep the words in ``ram.v`` (:data:`VERILOG_SOURCE`, for Verilator builds).
"""

import enum as py_enum

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from pcispy.core.ram import VERILOG_SOURCE, add_ram

__all__ = ["SDRAMModel", "Violation", "violation_names", "attach", "VERILOG_SOURCE",
           "DATA_BITS", "ADDR_PINS"]

#: DQ width (x16 parts).
DATA_BITS = 16
#: Address pins A12:0 (a row address; a column address on A9:0 with A10 the
#: precharge-all / auto-precharge bit).
ADDR_PINS = 13
_BANKS = 4
_SINCE_MAX = 255        # the "clocks since" counters saturate here


class Violation(py_enum.IntEnum):
    """The data-sheet rules the model checks (bit/index in ``flags``/``counts``)."""
    POWER_UP = 0            # a command before the power-up wait ended
    NOT_INITIALISED = 1     # ACTIVE/READ/WRITE before precharge-all, refreshes and MODE
    MODE = 2                # a mode register value the model does not support
    ACTIVE_OPEN_BANK = 3    # ACTIVE to a bank with a row open
    READ_CLOSED_BANK = 4    # READ to a bank without an open row
    WRITE_CLOSED_BANK = 5   # WRITE to a bank without an open row
    BANKS_NOT_IDLE = 6      # REFRESH or MODE with a row open
    T_RCD = 7
    T_RAS = 8
    T_RP = 9
    T_RC = 10
    T_RRD = 11
    T_WR = 12
    T_RFC = 13
    T_MRD = 14
    REFRESH_LATE = 15       # refresh_interval clocks passed without a REFRESH
    CONTENTION = 16         # the SDRAM and the controller drove DQ in one clock
    UNSUPPORTED = 17        # auto precharge, CKE low after power-up


def violation_names(flags):
    """The names of the violations set in ``flags`` (an int), in index order."""
    return [v.name for v in Violation if flags >> v & 1]


def attach(m, model, pins):
    """Wire ``model`` in module ``m`` straight to a controller's pins ``pins`` (an
    :class:`~pcispy.spy.sdram.SDRAMSignature` interface: active-high, no pads), as unit
    tests and the bench do."""
    m.d.comb += [
        model.cke.eq(pins.cke), model.cs_n.eq(~pins.cs), model.ras_n.eq(~pins.ras),
        model.cas_n.eq(~pins.cas), model.we_n.eq(~pins.we), model.ba.eq(pins.ba),
        model.a.eq(pins.a), model.dqm.eq(pins.dqm), model.dq_i.eq(pins.dq.o),
        model.dq_driven.eq(pins.dq.oe), pins.dq.i.eq(model.dq_o),
    ]


class _Command(py_enum.IntEnum):
    # Cat(we_n, cas_n, ras_n) at pin level.
    MODE = 0b000
    REFRESH = 0b001
    PRECHARGE = 0b010
    ACTIVE = 0b011
    WRITE = 0b100
    READ = 0b101
    BST = 0b110
    NOP = 0b111


class SDRAMModel(wiring.Component):
    __doc__ = __doc__

    def __init__(self, *, row_bits=13, col_bits=9, t_rcd=2, t_ras=5, t_rp=2, t_rc=7,
                 t_rrd=2, t_wr=2, t_rfc=7, t_mrd=2, power_up=100, init_refreshes=2,
                 refresh_interval=1000, verilog=False):
        if not 3 <= col_bits <= 10 or not 1 <= row_bits <= ADDR_PINS:
            raise ValueError(f"need 3 <= col_bits <= 10 and row_bits <= {ADDR_PINS}")
        self.row_bits = row_bits
        self.col_bits = col_bits
        self.timing = dict(t_rcd=t_rcd, t_ras=t_ras, t_rp=t_rp, t_rc=t_rc, t_rrd=t_rrd,
                           t_wr=t_wr, t_rfc=t_rfc, t_mrd=t_mrd)
        if max(self.timing.values()) >= _SINCE_MAX:
            raise ValueError("timing parameters must be under 255 clocks")
        self.power_up = power_up
        self.init_refreshes = init_refreshes
        self.refresh_interval = refresh_interval
        self.verilog = verilog
        self.storage = None     # the Amaranth Memory (verilog=False), once elaborated
        count = len(Violation)
        super().__init__({
            "cke": In(1), "cs_n": In(1, init=1), "ras_n": In(1, init=1),
            "cas_n": In(1, init=1), "we_n": In(1, init=1),
            "ba": In(2), "a": In(ADDR_PINS), "dqm": In(2), "dq_i": In(DATA_BITS),
            "dq_driven": In(1),
            "dq_o": Out(DATA_BITS), "dq_oe": Out(1),
            "flags": Out(count), "counts": Out(data.ArrayLayout(16, count)),
            "errors": Out(16), "refreshes": Out(32), "ready": Out(1),
        })

    @property
    def words(self):
        """Words of storage."""
        return _BANKS << (self.row_bits + self.col_bits)

    def word_address(self, bank, row, col):
        """The storage index of a word (what the backdoor reads)."""
        return ((bank << self.row_bits | row) << self.col_bits) | col

    def elaborate(self, platform):
        m = Module()
        t = self.timing
        addr_bits = 2 + self.row_bits + self.col_bits
        storage = add_ram(m, width=DATA_BITS, addr_bits=addr_bits, lane_width=8,
                          async_read=True, verilog=self.verilog)
        if not self.verilog:
            self.storage = m.submodules["bd_storage"]

        fault = Signal(len(Violation))

        def flag(violation, condition=1):
            # In the statement's context; several rules may set one bit.
            with m.If(condition):
                m.d.comb += fault[violation].eq(1)

        def since(name, count=1):
            """Clocks since an event: set to 1 on the event's edge, so at a later edge it
            holds the clocks between the two (saturating)."""
            counters = [Signal(range(_SINCE_MAX + 1), init=_SINCE_MAX, name=f"{name}{i}")
                        for i in range(count)]
            for counter in counters:
                with m.If(counter != _SINCE_MAX):
                    m.d.sync += counter.eq(counter + 1)
            return counters

        since_act = since("since_act_", _BANKS)      # ACTIVE of the bank
        since_pre = since("since_pre_", _BANKS)      # PRECHARGE of the bank
        since_wr = since("since_wr_", _BANKS)        # last write data into the bank
        since_any_act, = since("since_any_act")
        since_ref, = since("since_ref")
        since_mrs, = since("since_mrs")
        open_ = Signal(_BANKS)
        rows = [Signal(self.row_bits, name=f"row{i}") for i in range(_BANKS)]

        # Mode register: burst length code, CAS latency, single-location writes.
        bl_code = Signal(3)
        cas_latency = Signal(2, init=2)
        single_writes = Signal()
        burst_length = Signal(4)
        m.d.comb += burst_length.eq(1 << bl_code[:2])

        # Initialisation: power-up wait, precharge of every bank, refreshes, MODE.
        power_wait = Signal(range(self.power_up + 1), init=self.power_up)
        precharged = Signal()
        init_refs = Signal(range(self.init_refreshes + 1))
        ready = Signal()
        m.d.comb += self.ready.eq(ready)
        with m.If(power_wait != 0):
            m.d.sync += power_wait.eq(power_wait - 1)

        command = Signal(_Command)
        m.d.comb += command.eq(Mux(self.cs_n, _Command.NOP,
                                   Cat(self.we_n, self.cas_n, self.ras_n)))
        issued = Signal()           # a command other than NOP
        m.d.comb += issued.eq(command != _Command.NOP)
        bank = self.ba
        a10 = self.a[10]
        col = self.a[:self.col_bits]

        def bank_value(values, index):
            return Cat(*values).word_select(index, len(values[0]))

        # Rules every command obeys.
        with m.If(issued):
            flag(Violation.POWER_UP, power_wait != 0)
            flag(Violation.T_RFC, since_ref < t["t_rfc"])
            flag(Violation.T_MRD, since_mrs < t["t_mrd"])
            flag(Violation.UNSUPPORTED, ~self.cke)

        # The burst in flight: bank, row, start column, words left, read or write.
        burst_left = Signal(4)
        burst_index = Signal(3)
        burst_bank = Signal(2)
        burst_row = Signal(self.row_bits)
        burst_col = Signal(self.col_bits)
        burst_write = Signal()
        burst_bl = Signal(4)

        # This clock's word of a burst (the command's first one, or a later one).
        word_valid = Signal()
        word_write = Signal()
        word_addr = Signal(addr_bits)

        def burst_column(start, index, length):
            # Sequential bursts wrap inside the aligned block of the burst length.
            mask = Signal(3)
            m.d.comb += mask.eq(length - 1)
            low = Signal(3)
            m.d.comb += low.eq((start[:3] + index) & mask)
            return Cat((start[:3] & ~mask) | low, start[3:])

        with m.If(burst_left != 0):
            m.d.comb += [word_valid.eq(1), word_write.eq(burst_write),
                         word_addr.eq(Cat(burst_column(burst_col, burst_index, burst_bl),
                                          burst_row, burst_bank))]
            m.d.sync += [burst_left.eq(burst_left - 1), burst_index.eq(burst_index + 1)]

        def start_burst(write):
            length = Mux(write & single_writes, 1, burst_length)
            m.d.comb += [word_valid.eq(1), word_write.eq(write),
                         word_addr.eq(Cat(col, bank_value(rows, bank), bank))]
            m.d.sync += [burst_left.eq(length - 1), burst_index.eq(1), burst_bank.eq(bank),
                         burst_row.eq(bank_value(rows, bank)), burst_col.eq(col),
                         burst_write.eq(write), burst_bl.eq(length)]

        bank_open = Signal()
        m.d.comb += bank_open.eq(open_.bit_select(bank, 1))
        with m.Switch(command):
            with m.Case(_Command.ACTIVE):
                flag(Violation.NOT_INITIALISED, ~ready)
                flag(Violation.ACTIVE_OPEN_BANK, bank_open)
                flag(Violation.T_RP, bank_value(since_pre, bank) < t["t_rp"])
                flag(Violation.T_RC, bank_value(since_act, bank) < t["t_rc"])
                flag(Violation.T_RRD, since_any_act < t["t_rrd"])
                m.d.sync += since_any_act.eq(1)
                for i in range(_BANKS):
                    with m.If(bank == i):
                        m.d.sync += [open_[i].eq(1), rows[i].eq(self.a[:self.row_bits]),
                                     since_act[i].eq(1)]
            with m.Case(_Command.READ, _Command.WRITE):
                write = command == _Command.WRITE
                flag(Violation.NOT_INITIALISED, ~ready)
                flag(Violation.READ_CLOSED_BANK, ~write & ~bank_open)
                flag(Violation.WRITE_CLOSED_BANK, write & ~bank_open)
                flag(Violation.T_RCD, bank_value(since_act, bank) < t["t_rcd"])
                flag(Violation.UNSUPPORTED, a10)
                with m.If(bank_open):
                    start_burst(write)
                with m.Else():
                    m.d.comb += word_valid.eq(0)
                    m.d.sync += burst_left.eq(0)
            with m.Case(_Command.BST):
                m.d.comb += word_valid.eq(0)
                m.d.sync += burst_left.eq(0)
            with m.Case(_Command.PRECHARGE):
                for i in range(_BANKS):
                    with m.If(a10 | (bank == i)):
                        with m.If(open_[i]):
                            flag(Violation.T_RAS, since_act[i] < t["t_ras"])
                            flag(Violation.T_WR, since_wr[i] < t["t_wr"])
                        m.d.sync += [open_[i].eq(0), since_pre[i].eq(1)]
                        with m.If(burst_bank == i):
                            # The burst into a closed bank ends (its word now is lost).
                            m.d.comb += word_valid.eq(0)
                            m.d.sync += burst_left.eq(0)
                with m.If(a10 & (power_wait == 0)):
                    m.d.sync += precharged.eq(1)
            with m.Case(_Command.REFRESH, _Command.MODE):
                flag(Violation.BANKS_NOT_IDLE, open_ != 0)
                for i in range(_BANKS):
                    flag(Violation.T_RP, since_pre[i] < t["t_rp"])
                with m.If(command == _Command.REFRESH):
                    m.d.sync += [since_ref.eq(1), self.refreshes.eq(self.refreshes + 1)]
                    with m.If(precharged & (init_refs != self.init_refreshes)):
                        m.d.sync += init_refs.eq(init_refs + 1)
                with m.Else():
                    supported = ((self.a[:3] <= 3) & ~self.a[3] & (self.a[4:7] >= 2)
                                 & (self.a[4:7] <= 3))
                    flag(Violation.MODE, ~supported)
                    m.d.sync += [since_mrs.eq(1), bl_code.eq(self.a[:3]),
                                 cas_latency.eq(self.a[4:6]), single_writes.eq(self.a[9])]
                    with m.If(precharged & (init_refs == self.init_refreshes) & supported):
                        m.d.sync += ready.eq(1)

        # Writes: the word on DQ at this edge, bytes whose DQM is low.
        with m.If(word_valid & word_write):
            m.d.comb += [storage.w_addr.eq(word_addr), storage.w_data.eq(self.dq_i),
                         storage.w_en.eq(~self.dqm)]
            for i in range(_BANKS):
                with m.If(word_addr[-2:] == i):
                    m.d.sync += since_wr[i].eq(1)

        # Reads: the word addressed at edge E is on DQ for the edge E + CL: it goes down a
        # delay line and leaves at stage CL - 1.
        stages = [Signal(addr_bits + 1, name=f"read_stage{i}") for i in range(3)]
        m.d.sync += stages[0].eq(Cat(word_addr, word_valid & ~word_write))
        for previous, stage in zip(stages, stages[1:]):
            m.d.sync += stage.eq(previous)
        out = Signal(addr_bits + 1)
        m.d.comb += [
            out.eq(Mux(cas_latency == 3, stages[2], stages[1])),
            storage.r_addr.eq(out[:addr_bits]),
            self.dq_oe.eq(out[-1]),
            self.dq_o.eq(Mux(out[-1], storage.r_data, 0)),
        ]
        flag(Violation.CONTENTION, self.dq_oe & self.dq_driven)

        # Refresh deadline, from the end of initialisation.
        overdue = Signal(range(self.refresh_interval + 1))
        with m.If(ready):
            with m.If(command == _Command.REFRESH):
                m.d.sync += overdue.eq(0)
            with m.Elif(overdue == self.refresh_interval - 1):
                flag(Violation.REFRESH_LATE)
                m.d.sync += overdue.eq(0)       # and again after another interval
            with m.Else():
                m.d.sync += overdue.eq(overdue + 1)

        # Evidence.
        m.d.sync += self.flags.eq(self.flags | fault)
        for i in range(len(Violation)):
            with m.If(fault[i] & (self.counts[i] != 0xFFFF)):
                m.d.sync += self.counts[i].eq(self.counts[i] + 1)
        with m.If((fault != 0) & (self.errors != 0xFFFF)):
            m.d.sync += self.errors.eq(self.errors + 1)
        return m
