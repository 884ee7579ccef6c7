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

:class:`InitiatorDriver` is the Python side (``async``, over a control accessor such as
:class:`pcispy.sim.control.PysimControl` or the cocotb twin in :mod:`pcispy.sim.api`).
"""

import enum as py_enum
from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, enum, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.bus import Command, PCIBusSignature, Termination
from pcispy.pci.lfsr import lfsr_step
from pcispy.sim.bfm.backdoor_ram import BackdoorRAM
from pcispy.sim.control import ControlSignature

__all__ = [
    "COMMAND", "RESULT", "INJECT", "CONFIG", "Reg", "Status", "BUFFER_PATH", "ID_VALUE",
    "STATUS_BUSY", "STATUS_RESULT", "STATUS_QUEUE_FULL", "STATUS_PUSH_REFUSED",
    "STATUS_BUF_REFUSED", "STATUS_CONFIG_REFUSED",
    "pack", "unpack",
    "BehaviouralInitiator", "InitiatorDriver", "InitiatorResult", "InitiatorCommand",
]


def _fields(size, fields):
    return data.FlexibleLayout(size, {name: data.Field(shape, offset)
                                      for name, (shape, offset) in fields.items()})


#: One command, as written word by word into ``Reg.CMD`` .. ``Reg.CMD + 7`` (bit offsets).
COMMAND = _fields(256, {
    "code":       (4, 0),     # bus command (Command), DAC is added automatically
    "req64":      (1, 4),     # ask for 64-bit data phases (REQ64#)
    "imm":        (1, 5),     # write data is ``imm_data`` in every DWORD, not the buffer
    "wait_first": (4, 8),     # IRDY# wait states before the first data phase
    "wait_next":  (4, 12),    # IRDY# wait states before each later data phase
    "wait_rand":  (4, 16),    # plus (LFSR & wait_rand) random wait states per phase
    "idle":       (8, 24),    # idle clocks between transactions of this command
    "be_first":   (4, 32),    # C/BE# (pin level, 0 = byte enabled) of the first DWORD
    "be_mid":     (4, 36),    # ... of the DWORDs between
    "be_last":    (4, 40),    # ... of the last DWORD (a 1-DWORD command uses be_first)
    "length":     (20, 64),   # DWORDs to move, 1..2**20-1
    "burst":      (16, 96),   # most data phases per transaction, 0 = no limit
    "buf_off":    (20, 128),  # buffer DWORD where write data comes from / read data goes
    "addr":       (64, 160),  # byte address; above 4 GiB a Dual Address Cycle is used
    "imm_data":   (32, 224),
})

#: One result, as read word by word from ``Reg.RESULT`` .. ``Reg.RESULT + 7``.
RESULT = _fields(256, {
    "status":       (3, 0),     # Status
    "ack64":        (1, 3),     # the last transaction was answered with ACK64#
    "perr":         (8, 8),     # read data parity errors detected
    "phases":       (32, 32),   # data phases that moved data
    "dwords":       (32, 64),   # DWORDs moved
    "transactions": (16, 96),   # address phases (retried ones included)
    "retries":      (16, 112),
    "disconnects":  (16, 128),  # with or without data
    "lt_ends":      (16, 144),  # transactions ended by the Latency Timer
    "clocks":       (32, 160),  # from taking the command to its last idle clock, inclusive
    "latency":      (16, 192),  # first transaction: clocks from address phase to TRDY#
    "last_data":    (32, 224),  # last DWORD read (all ones after an abort)
})

#: Error-injection enable bits (``Reg.INJECT``); each breaks exactly one protocol rule.
INJECT = data.StructLayout({
    "irdy_drop":       1,  # (a) deassert IRDY# for one clock before its data phase completed
    "frame_no_irdy":   1,  # (b) deassert FRAME# while IRDY# is deasserted (wait before last
                           #     phase), once per command; the bus then looks idle, so the
                           #     transaction is over and the rest follows in a new one
    "frame_reassert":  1,  # (c) reassert FRAME# while the last phase of a burst cut short by
                           #     ``burst`` waits, and keep it: the burst goes on (once per command)
    "irdy_late":       1,  # (d) first IRDY# 9 waits after the address phase (clock 11)
    "addr_parity":     1,  # (f) wrong PAR for the address phase(s)
    "wdata_parity":    1,  # (g) wrong PAR for write data
    "wdata_parity64":  1,  # (h) wrong PAR64 for write data
    "no_gnt":          1,  # (i) start FRAME# without GNT#
    "irdy_idle":       1,  # (j) one clock of IRDY# without FRAME# on an idle bus
    "req64_mismatch":  1,  # (k) REQ64# deasserted after the address phase while FRAME# holds
    "be_change":       1,  # (l) change C/BE# during a data-phase wait (TRDY# deasserted)
    "wdata_change":    1,  # (m) change write data during a data-phase wait
    "early_abort":     1,  # (n) give up waiting for DEVSEL# after clock 3, not 5
    "perr_wrong":      1,  # (o) assert PERR# in clock 2 (no data phase two clocks before)
    "irdy_in_addr":    1,  # (q) assert IRDY# in the address phase(s) as well
    "frame_drop_wait": 1,  # (r) deassert FRAME# while IRDY# waits for the target (not last)
    "dac_twice":       1,  # (s) the second address phase of a DAC carries DAC again
    "busy_start":      1,  # (t) with GNT#, take another master's completed final data
                           #     phase (FRAME# deasserted, IRDY# and TRDY# or STOP# asserted)
                           #     for an idle bus: the address phase follows that clock at
                           #     once, as only that master's own fast back-to-back may
    "frame_after_stop": 1, # (u) once per command, FRAME# stays asserted (with IRDY#) for one
                           #     clock more after a data phase completed with STOP#
    "dac_low":         1,  # (v) a Dual Address Cycle even below 4 GiB (upper address bits 0)
    "wdata_parity_wait": 1,  # (w) wrong PAR for write data while the data phase waits for
                           #     TRDY#/STOP#; right for the clock it completes in
    "park_no_par":     1,  # (x) parked: AD and C/BE# driven, PAR not
    "park_float":      1,  # (y) never park: AD, C/BE#, PAR float on an idle bus with GNT#
})

#: ``Reg.CONFIG``: settings that hold across commands.
CONFIG = data.StructLayout({
    "lat_timer":   8,   # Latency Timer: expired once more clocks than this passed since
                        # FRAME# (reset 255: never, as the clock count saturates there)
    "perr_enable": 1,   # (p) assert PERR# two clocks after a read data phase with bad parity
    "cache_line":  8,   # Cache Line Size in DWORDs (0 or a power of two; others refused)
})


class Reg(py_enum.IntEnum):
    """Control-port register indices."""
    ID          = 0x000  # read: 0x50434949 ("PCII")
    STATUS      = 0x001  # read: STATUS_* bits; write 1s to clear the sticky refusal bits
    CONFIG      = 0x002  # CONFIG layout
    SEED        = 0x003  # write: seed the LFSR (0 is taken as 1)
    RETRY_LIMIT = 0x004  # consecutive retries before giving up; 0 = never
    INJECT      = 0x005  # INJECT layout
    PERR_COUNT  = 0x006  # read: read-data parity errors detected since reset
    BUF_ADDR    = 0x008  # buffer DWORD index for BUF_DATA (auto-increments)
    BUF_DATA    = 0x009  # read/write one buffer DWORD (only while not STATUS_BUSY)
    CMD         = 0x010  # .. 0x017: the command being assembled (COMMAND layout)
    PUSH        = 0x018  # write: queue the assembled command
    RESULT      = 0x020  # .. 0x027: the oldest result (RESULT layout)
    POP         = 0x028  # write: drop the oldest result


#: ``Reg.ID`` value.
ID_VALUE = 0x5043_4949

#: ``Reg.STATUS`` bits.
STATUS_BUSY          = 1 << 0   # a command is queued or running
STATUS_RESULT        = 1 << 1   # a result waits (same as ``event``)
STATUS_QUEUE_FULL    = 1 << 2
STATUS_PUSH_REFUSED  = 1 << 8   # sticky: PUSH while the queue was full
STATUS_BUF_REFUSED   = 1 << 9   # sticky: BUF_DATA access while busy (reads return all ones)
STATUS_CONFIG_REFUSED = 1 << 10  # sticky: CONFIG write with a cache line not a power of two

#: Path from the initiator's instance to its buffer words, for cocotb backdoor access.
BUFFER_PATH = ("buffer", "ram", "bd_storage")

_QUEUE_DEPTH = 4
_ABORT_CLOCK = 5           # DEVSEL# may come as late as clock 5 (subtractive decode)


class Status(enum.Enum, shape=3):
    """How a command ended."""
    OK           = 0
    MASTER_ABORT = 1  # no DEVSEL#: reads return all ones
    TARGET_ABORT = 2  # reads return all ones from the aborted DWORD on
    RETRY_LIMIT  = 3  # retried RETRY_LIMIT times in a row; reads return all ones
    BAD_COMMAND  = 4  # refused before touching the bus (see BehaviouralInitiator)


def pack(layout, **fields):
    """Pack field values into an integer with ``layout`` (Python side of a register)."""
    value = 0
    for name, field in layout:
        v = int(fields.pop(name, 0))
        if v < 0 or v >> field.width:
            raise ValueError(f"{name}={v} does not fit in {field.width} bits")
        value |= v << field.offset
    if fields:
        raise ValueError(f"unknown fields: {', '.join(fields)}")
    return value


def unpack(layout, value):
    """Unpack an integer into ``{field: int}`` with ``layout``."""
    return {name: (value >> field.offset) & ((1 << field.width) - 1) for name, field in layout}


class _State(enum.Enum, shape=4):
    IDLE = 0
    CHECK = 1
    ARB = 2
    JUNK = 3       # injection (j): IRDY# asserted on an idle bus
    JUNK_END = 4   # ... then driven deasserted for a clock
    ADDR = 5
    ADDR2 = 6      # second address phase of a Dual Address Cycle
    DATA = 7
    END = 8        # FRAME#/IRDY# driven deasserted, AD released
    BACKOFF = 9
    FILL = 10      # write all ones for the DWORDs an aborted read did not return
    REPORT = 11


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
        prio_status (Out, Status): its status, valid with ``prio_done``.

    Parameters:
        width: bus width, 32 or 64.
        buffer_addr_bits: log2 of the buffer depth in words of ``width`` bits.
        verilog_ram: build the buffer from ``backdoor_ram.v`` (Verilator); False for
            Amaranth's Python simulator.

    Commands are refused (Status.BAD_COMMAND, no bus activity) when the length is 0, the
    code is DUAL_ADDRESS (the initiator adds DAC itself), REQ64# is asked on a 32-bit bus,
    or the buffer range (for reads, or writes without ``imm``) runs past the buffer.
    A transaction asks for REQ64# only when the command asks for it, the address and the
    buffer DWORD are 8-byte aligned and at least two DWORDs remain. A Special Cycle is
    claimed by nobody and so ends as a master abort (Status.MASTER_ABORT), as on a bus.
    """

    def __init__(self, width=32, buffer_addr_bits=14, verilog_ram=True):
        if width not in (32, 64):
            raise ValueError(f"bus width must be 32 or 64, not {width!r}")
        self.width = width
        self.buffer_addr_bits = buffer_addr_bits
        self.verilog_ram = verilog_ram
        super().__init__({
            "bus": Out(PCIBusSignature(width)),
            "ctl": Out(ControlSignature()),
            "prio": In(stream.Signature(COMMAND)),
            "prio_done": Out(1),
            "prio_status": Out(Status),
        })

    @property
    def buffer_dwords(self):
        return (1 << self.buffer_addr_bits) * (self.width // 32)

    def elaborate(self, platform):
        m = Module()
        bus, ctl = self.bus, self.ctl
        wide = self.width == 64
        lane_bits = 1 if wide else 0

        m.submodules.buffer = buffer = BackdoorRAM(
            width=self.width, addr_bits=self.buffer_addr_bits, verilog=self.verilog_ram)
        m.submodules.queue = queue = fifo.SyncFIFOBuffered(width=COMMAND.size, depth=_QUEUE_DEPTH)
        m.submodules.results = results = fifo.SyncFIFOBuffered(width=RESULT.size, depth=_QUEUE_DEPTH)

        # ---- control registers -------------------------------------------------------
        staging = Signal(COMMAND)
        config = Signal(CONFIG, init={"lat_timer": 0xFF})
        inject = Signal(INJECT)
        retry_limit = Signal(16, init=1024)
        lfsr = Signal(32, init=1)
        perr_total = Signal(32)
        buf_ptr = Signal(21)
        push_refused = Signal()
        buf_refused = Signal()
        config_refused = Signal()
        head = Signal(RESULT)
        m.d.comb += head.as_value().eq(results.r_data)

        state = Signal(_State)
        busy = state != _State.IDLE
        req_in_end = Signal()
        # Queued or running: the register path to the buffer is closed.
        engaged = busy | (queue.level != 0)
        m.d.comb += ctl.event.eq(results.r_rdy)

        m.d.sync += lfsr.eq(lfsr_step(lfsr))

        writing = ctl.w_en
        buf_data_w = Signal()
        buf_data_r = Signal()
        m.d.comb += [
            buf_data_w.eq(writing & (ctl.addr == Reg.BUF_DATA)),
            buf_data_r.eq(ctl.r_en & (ctl.addr == Reg.BUF_DATA)),
        ]
        with m.If(writing):
            with m.Switch(ctl.addr):
                with m.Case(Reg.STATUS):
                    with m.If(ctl.w_data[8]):
                        m.d.sync += push_refused.eq(0)
                    with m.If(ctl.w_data[9]):
                        m.d.sync += buf_refused.eq(0)
                    with m.If(ctl.w_data[10]):
                        m.d.sync += config_refused.eq(0)
                with m.Case(Reg.CONFIG):
                    new_config = CONFIG(ctl.w_data[:CONFIG.size])
                    line = new_config.cache_line
                    with m.If((line & (line - 1)) != 0):
                        m.d.sync += config_refused.eq(1)
                    with m.Else():
                        m.d.sync += config.eq(new_config)
                with m.Case(Reg.SEED):
                    m.d.sync += lfsr.eq(Mux(ctl.w_data == 0, 1, ctl.w_data))
                with m.Case(Reg.RETRY_LIMIT):
                    m.d.sync += retry_limit.eq(ctl.w_data)
                with m.Case(Reg.INJECT):
                    m.d.sync += inject.as_value().eq(ctl.w_data)
                with m.Case(Reg.BUF_ADDR):
                    m.d.sync += buf_ptr.eq(ctl.w_data)
                for word in range(COMMAND.size // 32):
                    with m.Case(Reg.CMD + word):
                        m.d.sync += staging.as_value()[32 * word:32 * word + 32].eq(ctl.w_data)
                with m.Case(Reg.PUSH):
                    with m.If(queue.w_rdy):
                        m.d.comb += queue.w_en.eq(1)
                    with m.Else():
                        m.d.sync += push_refused.eq(1)
                with m.Case(Reg.POP):
                    m.d.comb += results.r_en.eq(1)
        m.d.comb += queue.w_data.eq(staging.as_value())

        # Buffer access through registers, only while no command runs (the engine owns
        # both RAM ports while it works).
        with m.If((buf_data_w | buf_data_r) & engaged):
            m.d.sync += buf_refused.eq(1)
        with m.Elif(buf_data_w | buf_data_r):
            m.d.sync += buf_ptr.eq(buf_ptr + 1)
        slow_lane = buf_ptr[0] if wide else Const(0)
        slow_rdata = Mux(slow_lane, buffer.r_data[32:], buffer.r_data[:32]) if wide else buffer.r_data

        read_mux = Signal(32)
        with m.Switch(ctl.addr):
            with m.Case(Reg.ID):
                m.d.comb += read_mux.eq(ID_VALUE)
            with m.Case(Reg.STATUS):
                m.d.comb += read_mux.eq(Cat(engaged, results.r_rdy, ~queue.w_rdy, Const(0, 5),
                                            push_refused, buf_refused, config_refused))
            with m.Case(Reg.CONFIG):
                m.d.comb += read_mux.eq(config.as_value())
            with m.Case(Reg.SEED):
                m.d.comb += read_mux.eq(lfsr)
            with m.Case(Reg.RETRY_LIMIT):
                m.d.comb += read_mux.eq(retry_limit)
            with m.Case(Reg.INJECT):
                m.d.comb += read_mux.eq(inject.as_value())
            with m.Case(Reg.PERR_COUNT):
                m.d.comb += read_mux.eq(perr_total)
            with m.Case(Reg.BUF_ADDR):
                m.d.comb += read_mux.eq(buf_ptr)
            with m.Case(Reg.BUF_DATA):
                m.d.comb += read_mux.eq(Mux(engaged, 0xFFFF_FFFF, slow_rdata))
            for word in range(COMMAND.size // 32):
                with m.Case(Reg.CMD + word):
                    m.d.comb += read_mux.eq(staging.as_value()[32 * word:32 * word + 32])
            for word in range(RESULT.size // 32):
                with m.Case(Reg.RESULT + word):
                    m.d.comb += read_mux.eq(Mux(results.r_rdy, results.r_data[32 * word:32 * word + 32], 0))
        m.d.sync += ctl.r_data.eq(read_mux)

        # ---- the command being executed ----------------------------------------------
        cur = Signal(COMMAND)
        from_prio = Signal()
        res = Signal(RESULT)
        is_read = Signal()
        is_dac = Signal()

        idx = Signal(20)            # DWORDs done
        xfer_phases = Signal(16)    # data phases moved in this transaction
        is64 = Signal()             # REQ64# asked in this transaction
        clk = Signal(8)             # clock of the transaction, address phase = 1 (saturates)
        devsel_seen = Signal()
        ack64_seen = Signal()
        frame_on = Signal()
        irdy_on = Signal()
        wait_cnt = Signal(5)
        wait_seen = Signal()        # the current IRDY# phase has seen a clock without TRDY#/STOP#
        stop_seen = Signal()
        term_stop = Signal(Termination)  # classification at the first STOP#
        lt_stop = Signal()          # Latency Timer expired while GNT# was removed
        lt_ended = Signal()
        retry_run = Signal(16)
        fill_left = Signal(20)
        backoff = Signal(9)
        latency_done = Signal()
        oneshot_irdy_drop = Signal()
        oneshot_irdy_idle = Signal()
        oneshot_frame_after_stop = Signal()
        cur_status = Signal(Status)

        remaining = Signal(20)
        m.d.comb += remaining.eq(cur.length - idx)
        xfer_addr = Signal(64)   # this transaction's address (idx is fixed until its data)
        m.d.comb += xfer_addr.eq(cur.addr + (idx << 2))
        m.d.comb += [is_read.eq(~cur.code[0]), is_dac.eq((xfer_addr[32:] != 0) | inject.dac_low)]

        # ---- buffer addressing -------------------------------------------------------
        # The read port is addressed with the DWORD index the next clock will use, so the
        # registered RAM output holds the current DWORD's write data.
        idx_next = Signal(20)
        m.d.comb += idx_next.eq(idx)
        buf_dw = Signal(21)
        buf_dw_next = Signal(21)
        m.d.comb += [buf_dw.eq(cur.buf_off + idx), buf_dw_next.eq(cur.buf_off + idx_next)]
        # Register path: the RAM must already be addressed with the DWORD a BUF_DATA read
        # returns, i.e. with the new BUF_ADDR while it is written and the next DWORD while
        # one is read.
        slow_next = Mux(writing & (ctl.addr == Reg.BUF_ADDR), ctl.w_data, buf_ptr + buf_data_r)
        m.d.comb += buffer.r_addr.eq(Mux(busy, buf_dw_next, slow_next) >> lane_bits)
        with m.If(~engaged & buf_data_w):
            m.d.comb += buffer.w_addr.eq(buf_ptr >> lane_bits)
            if wide:
                m.d.comb += [buffer.w_data.eq(Cat(ctl.w_data, ctl.w_data)),
                             buffer.w_en.eq(Mux(buf_ptr[0], 0xF0, 0x0F))]
            else:
                m.d.comb += [buffer.w_data.eq(ctl.w_data), buffer.w_en.eq(0xF)]

        lane = buf_dw[0] if wide else Const(0)
        ram_lo = buffer.r_data[:32]
        ram_hi = buffer.r_data[32:] if wide else buffer.r_data
        data_lo = Mux(cur.imm, cur.imm_data, Mux(lane, ram_hi, ram_lo))
        data_hi = Mux(cur.imm, cur.imm_data, ram_hi)

        def be_of(i):
            return Mux(i == 0, cur.be_first, Mux(i == cur.length - 1, cur.be_last, cur.be_mid))

        # ---- outputs (registers only) --------------------------------------------------
        in_addr = _is(state, _State.ADDR, _State.ADDR2)
        in_data = state == _State.DATA
        # FRAME#, REQ64# and C/BE# are this agent's from the address phase through the last
        # data phase. The clock after it (END) is the idle clock, their turnaround: another
        # master that sampled the bus idle there starts in the clock after, so nothing of
        # this agent may still be driven in it but IRDY# (driven deasserted) and PAR.
        owning = in_addr | in_data
        data_cycle = in_data & irdy_on
        mid_phase_wait = data_cycle & wait_seen
        # (b) the phase about to start is the last one, estimated from registers.
        pending_last = (remaining <= Mux(is64 & ack64_seen, 2, 1)) | \
                       ((cur.burst != 0) & (xfer_phases + 1 >= cur.burst)) | lt_stop

        # (c) happens once per command; (b) likewise.
        reassert_done = Signal()
        oneshot_frame_no_irdy = Signal()
        abandon = Signal()   # (b): FRAME# goes in this clock while IRDY# is deasserted
        m.d.comb += abandon.eq(inject.frame_no_irdy & frame_on & pending_last
                               & ~oneshot_frame_no_irdy)
        with m.If(state == _State.IDLE):
            m.d.sync += [reassert_done.eq(0), oneshot_frame_no_irdy.eq(0)]
        frame_out = Signal()
        with m.If(in_addr):
            m.d.comb += frame_out.eq(1)
        with m.Elif(in_data):
            with m.If(irdy_on):
                m.d.comb += frame_out.eq(frame_on)
            with m.Else():
                m.d.comb += frame_out.eq(frame_on & ~abandon)
        # Every path into END leaves DATA in a clock with FRAME# deasserted (the last data
        # phase, a master abort's last clock, or (b)'s abandon), so FRAME# is always driven
        # deasserted for at least one clock before it is released.
        irdy_out = Signal()
        m.d.comb += irdy_out.eq(data_cycle | (state == _State.JUNK)
                                | (in_addr & inject.irdy_in_addr))
        # IRDY# asserted by this agent in the previous clock: driven deasserted now
        # (sustained tri-state), whatever the state (END, JUNK_END, or an address phase
        # after (q)'s).
        irdy_was = Signal()
        m.d.sync += irdy_was.eq(irdy_out)
        m.d.comb += [
            bus.frame.o.eq(frame_out),
            bus.frame.oe.eq(owning),
            bus.irdy.o.eq(irdy_out),
            # Not in the (first) address phase: it is IRDY#'s turnaround clock, in which the
            # previous owner may still drive it deasserted (PCI LB 3.0 §3.3.1).
            bus.irdy.oe.eq((state == _State.ADDR2) | in_data | irdy_out | irdy_was),
            bus.req.o.eq(_is(state, _State.ARB, _State.JUNK, _State.JUNK_END,
                                        _State.ADDR, _State.ADDR2, _State.DATA) | req_in_end),
            # Every PCI output floats while RST# is asserted (PCI LB 3.0 §4.3.2).
            bus.req.oe.eq(~bus.rst.i),
        ]

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
        parked = Signal()
        m.d.sync += parked.eq(bus.gnt.i & ~bus.frame.i & ~bus.irdy.i & ~inject.park_float)
        parking = parked & ~owning

        dac_phase = ((state == _State.ADDR) & is_dac) | ((state == _State.ADDR2) & inject.dac_twice)
        addr_cmd = Mux(dac_phase, Command.DUAL_ADDRESS.value, cur.code)
        addr_ad = Mux((state == _State.ADDR2), xfer_addr[32:], xfer_addr[:32])
        with m.If(in_addr):
            m.d.comb += [bus.ad.o.eq(addr_ad), bus.ad.oe.eq(1),
                         bus.cbe.o.eq(addr_cmd), bus.cbe.oe.eq(1)]
        with m.Elif(in_data):
            m.d.comb += [
                bus.ad.o.eq(data_lo ^ (inject.wdata_change & mid_phase_wait)),
                bus.ad.oe.eq(~is_read),
                bus.cbe.o.eq(be_of(idx) ^ (inject.be_change & mid_phase_wait)),
                bus.cbe.oe.eq(1),
            ]
        with m.Elif(parking):
            # Any stable value will do; zero (with PAR 0) is told apart from a floating
            # bus (all ones, PAR 1) at a glance.
            m.d.comb += [bus.ad.o.eq(0), bus.ad.oe.eq(1), bus.cbe.o.eq(0), bus.cbe.oe.eq(1)]
        if wide:
            m.d.comb += [
                bus.req64.o.eq(is64 & Mux(inject.req64_mismatch, state == _State.ADDR, frame_out)),
                bus.req64.oe.eq(owning),
            ]
            with m.If(in_addr & is64):
                m.d.comb += [bus.ad_hi.o.eq(Mux(is_dac, xfer_addr[32:], 0)), bus.ad_hi.oe.eq(1),
                             bus.cbe_hi.o.eq(Mux(is_dac, cur.code, 0)), bus.cbe_hi.oe.eq(1)]
            with m.Elif(in_data & is64):
                m.d.comb += [
                    bus.ad_hi.o.eq(data_hi), bus.ad_hi.oe.eq(~is_read),
                    bus.cbe_hi.o.eq(Mux(idx + 1 < cur.length, be_of(idx + 1), 0xF)),
                    bus.cbe_hi.oe.eq(1),
                ]

        # PAR (PAR64) one clock after the AD value it covers, by whoever drove that AD: this
        # agent drives it exactly in the clocks after those in which it drove AD ((x): not
        # after a clock in which it drove AD only because it was parked).
        par_bad = ((in_addr & inject.addr_parity)
                   | (data_cycle & ~is_read & inject.wdata_parity)
                   | (data_cycle & ~is_read & ~bus.trdy.i & inject.wdata_parity_wait))
        m.d.sync += [
            bus.par.o.eq(parity_of(bus.ad.o, bus.cbe.o) ^ par_bad),
            bus.par.oe.eq(bus.ad.oe & ~(parking & inject.park_no_par)),
        ]
        if wide:
            par64_bad = data_cycle & ~is_read & inject.wdata_parity64
            m.d.sync += [
                bus.par64.o.eq(parity_of(bus.ad_hi.o, bus.cbe_hi.o) ^ par64_bad),
                bus.par64.oe.eq(bus.ad_hi.oe),
            ]

        # ---- read data parity check and PERR# -----------------------------------------
        chk_pending = Signal()
        chk_ad = Signal(32)
        chk_cbe = Signal(4)
        chk64 = Signal()
        chk_ad_hi = Signal(32)
        chk_cbe_hi = Signal(4)
        perr_stage = Signal(2)   # 1: PERR# asserted, 2: PERR# driven deasserted
        perr_cmd = Signal(8)
        parity_error = Signal()
        chk_bad = parity_of(chk_ad, chk_cbe) != bus.par.i
        if wide:
            chk_bad = chk_bad | (chk64 & (parity_of(chk_ad_hi, chk_cbe_hi) != bus.par64.i))
        m.d.comb += parity_error.eq(chk_pending & chk_bad)
        m.d.sync += chk_pending.eq(0)
        with m.If(parity_error):
            m.d.sync += [perr_total.eq(perr_total + 1), perr_cmd.eq(perr_cmd + 1)]
        perr_trigger = Signal()
        with m.If(perr_trigger):
            m.d.sync += perr_stage.eq(1)
        with m.Elif(perr_stage == 1):
            m.d.sync += perr_stage.eq(2)
        with m.Elif(perr_stage == 2):
            m.d.sync += perr_stage.eq(0)
        m.d.comb += [
            perr_trigger.eq((parity_error & config.perr_enable) |
                            ((state == _State.ADDR) & ~is_dac & inject.perr_wrong) |
                            ((state == _State.ADDR2) & inject.perr_wrong)),
            bus.perr.o.eq(perr_stage == 1),
            bus.perr.oe.eq(perr_stage != 0),
        ]

        # ---- the sequencer -------------------------------------------------------------
        trdy, stop, devsel = bus.trdy.i, bus.stop.i, bus.devsel.i
        ack64_in = bus.ack64.i if wide else Const(0)
        bus_idle = ~bus.frame.i & ~bus.irdy.i
        devsel_now = devsel_seen | devsel
        ack64_now = Mux(devsel_seen, ack64_seen, devsel & ack64_in)
        abort_clock = Mux(inject.early_abort, 3, _ABORT_CLOCK) + is_dac
        lt_stop_now = lt_stop | ((clk > config.lat_timer) & ~bus.gnt.i)
        burst_hit = lambda phases: (cur.burst != 0) & (phases + 1 >= cur.burst)

        def ends_here(rem):
            return rem <= Mux(is64 & ack64_now, 2, 1)

        def undecided(rem, phases):
            # 64-bit, two DWORDs left: one phase or two depends on ACK64#, not seen yet.
            return is64 & ~devsel_now & (rem == 2) & ~burst_hit(phases) & ~lt_stop_now

        m.d.sync += clk.eq(Mux(clk == 0xFF, clk, clk + 1))
        with m.If(state != _State.IDLE):
            m.d.sync += res.clocks.eq(res.clocks + 1)

        line_mask = Mux(config.cache_line == 0, 0, config.cache_line - 1)
        is_mwi = cur.code == Command.MEM_WRITE_INVALIDATE

        def start_phase(rem, phases, at):
            # Decided as IRDY# is asserted: FRAME# may not change again until it completes.
            # Memory Write and Invalidate only gives way to the Latency Timer at the end of
            # a cache line (the phase starting at DWORD ``at`` ends one).
            dw = Mux(is64 & ack64_now, 2, 1)
            line_end = (((cur.addr >> 2) + at + dw) & line_mask) == 0
            lt_end = lt_stop_now & (~is_mwi | line_end)
            m.d.sync += [irdy_on.eq(1), wait_seen.eq(0),
                         frame_on.eq(~(ends_here(rem) | burst_hit(phases) | lt_end)),
                         lt_ended.eq(lt_end & ~ends_here(rem) & ~burst_hit(phases))]

        def draw_wait(base):
            return base + (lfsr[:4] & cur.wait_rand)

        def finish(status):
            m.d.sync += cur_status.eq(status)
            with m.If(is_read & (status != Status.OK.value) & (idx < cur.length)):
                m.d.sync += [fill_left.eq(cur.length - idx), res.last_data.eq(0xFFFF_FFFF)]
                goto(_State.FILL)
            with m.Else():
                goto(_State.REPORT)

        def goto(target):
            m.d.sync += state.eq(target)

        completes = Signal()
        moved = Signal(2)
        stop_valid = Signal()
        term_now = Signal(Termination)
        xfer_term = Signal(Termination)
        # REQ# stays asserted through the idle clock when more transactions follow (a
        # retried master releases it: it backs off through BACKOFF).
        m.d.comb += req_in_end.eq((state == _State.END) & (remaining != 0) &
                                  (xfer_term != Termination.RETRY) & (cur.idle == 0))
        m_abort = Signal()
        m.d.comb += [
            completes.eq(in_data & irdy_on & trdy),
            moved.eq(Mux(completes, Mux(is64 & ack64_now & (remaining >= 2), 2, 1), 0)),
            # A data phase completes with IRDY# and STOP# whether or not DEVSEL# was ever
            # asserted (PCI LB 3.0 §3.3.3.2.1): the master then ends the transaction as
            # for any STOP#, so FRAME# is not held after it. STOP# without DEVSEL# is a
            # target abort by its pins (a target that never claimed breaks a rule of its
            # own, which the master does not repeat).
            stop_valid.eq(stop),
            m_abort.eq(~devsel_now & (clk >= abort_clock)),
        ]
        with m.If(stop & ~devsel):
            m.d.comb += term_now.eq(Termination.TARGET_ABORT)
        with m.Elif(trdy):
            m.d.comb += term_now.eq(Termination.DISCONNECT_DATA)
        with m.Elif(xfer_phases == 0):
            m.d.comb += term_now.eq(Termination.RETRY)
        with m.Else():
            m.d.comb += term_now.eq(Termination.DISCONNECT_NODATA)

        with m.Switch(state):
            with m.Case(_State.IDLE):
                m.d.sync += [res.as_value().eq(0), idx.eq(0), retry_run.eq(0),
                             latency_done.eq(0), oneshot_irdy_drop.eq(0),
                             oneshot_irdy_idle.eq(0), oneshot_frame_after_stop.eq(0),
                             cur_status.eq(Status.OK)]
                with m.If(self.prio.valid):
                    m.d.comb += self.prio.ready.eq(1)
                    m.d.sync += [cur.eq(self.prio.payload), from_prio.eq(1)]
                    goto(_State.CHECK)
                with m.Elif(queue.r_rdy):
                    m.d.comb += queue.r_en.eq(1)
                    m.d.sync += [cur.as_value().eq(queue.r_data), from_prio.eq(0)]
                    goto(_State.CHECK)

            with m.Case(_State.CHECK):
                m.d.sync += perr_cmd.eq(0)
                uses_buffer = is_read | ~cur.imm
                bad = ((cur.length == 0) | (cur.code == Command.DUAL_ADDRESS) |
                       (cur.req64 & (not wide)) |
                       (uses_buffer & (cur.buf_off + cur.length > self.buffer_dwords)))
                with m.If(bad):
                    m.d.sync += cur_status.eq(Status.BAD_COMMAND)
                    goto(_State.REPORT)
                with m.Else():
                    goto(_State.ARB)

            # (t) the clock in which another master's final data phase completes: the bus
            # is idle only from the next clock on.
            final_done = ~bus.frame.i & bus.irdy.i & (bus.trdy.i | bus.stop.i)

            def start_if_granted(otherwise=None):
                """With GNT# sampled asserted on an idle bus, the address phase is the next
                clock."""
                free = bus_idle | (inject.busy_start & final_done)
                with m.If((bus.gnt.i | inject.no_gnt) & free):
                    with m.If(inject.irdy_idle & ~oneshot_irdy_idle):
                        m.d.sync += oneshot_irdy_idle.eq(1)
                        goto(_State.JUNK)
                    with m.Else():
                        m.d.sync += [
                            clk.eq(1), devsel_seen.eq(0), ack64_seen.eq(0), xfer_phases.eq(0),
                            stop_seen.eq(0), lt_stop.eq(0), lt_ended.eq(0), wait_seen.eq(0),
                            is64.eq(cur.req64 & ~xfer_addr[2] & ~buf_dw[0] & (remaining >= 2)
                                    if wide else 0),
                            res.transactions.eq(res.transactions + 1),
                        ]
                        goto(_State.ADDR)
                if otherwise is not None:
                    with m.Else():
                        goto(otherwise)

            with m.Case(_State.ARB):
                start_if_granted()

            with m.Case(_State.JUNK):
                goto(_State.JUNK_END)
            with m.Case(_State.JUNK_END):
                goto(_State.ARB)

            def enter_data():
                goto(_State.DATA)
                first_wait = Mux(inject.irdy_late, 9, draw_wait(cur.wait_first))
                with m.If((first_wait == 0) & ~undecided(remaining, 0)):
                    start_phase(remaining, 0, idx)
                with m.Else():
                    m.d.sync += [irdy_on.eq(0), frame_on.eq(1), wait_cnt.eq(first_wait)]

            with m.Case(_State.ADDR):
                with m.If(is_dac):
                    goto(_State.ADDR2)
                with m.Else():
                    enter_data()
            with m.Case(_State.ADDR2):
                enter_data()

            with m.Case(_State.DATA):
                rem_n = remaining - moved
                phases_n = xfer_phases + completes
                m.d.comb += idx_next.eq(idx + moved)
                m.d.sync += [idx.eq(idx_next), xfer_phases.eq(phases_n),
                             devsel_seen.eq(devsel_now), ack64_seen.eq(ack64_now),
                             lt_stop.eq(lt_stop_now)]
                with m.If(trdy & ~latency_done):
                    m.d.sync += [res.latency.eq(clk - 1), latency_done.eq(1)]
                with m.If(completes):
                    m.d.sync += [res.phases.eq(res.phases + 1), res.dwords.eq(res.dwords + moved),
                                 retry_run.eq(0)]
                    with m.If(is_read):
                        m.d.sync += [
                            res.last_data.eq(Mux(moved == 2, bus.ad_hi.i if wide else 0, bus.ad.i)),
                            chk_pending.eq(1), chk_ad.eq(bus.ad.i), chk_cbe.eq(bus.cbe.o),
                        ]
                        m.d.comb += buffer.w_addr.eq(buf_dw >> lane_bits)
                        if wide:
                            m.d.sync += [chk64.eq(is64 & ack64_now), chk_ad_hi.eq(bus.ad_hi.i),
                                         chk_cbe_hi.eq(bus.cbe_hi.o)]
                            with m.If(moved == 2):
                                m.d.comb += [buffer.w_data.eq(Cat(bus.ad.i, bus.ad_hi.i)),
                                             buffer.w_en.eq(0xFF)]
                            with m.Else():
                                m.d.comb += [buffer.w_data.eq(Cat(bus.ad.i, bus.ad.i)),
                                             buffer.w_en.eq(Mux(lane, 0xF0, 0x0F))]
                        else:
                            m.d.comb += [buffer.w_data.eq(bus.ad.i), buffer.w_en.eq(0xF)]

                with m.If(irdy_on & ~frame_on & (trdy | stop_valid)):
                    # The last data phase is over.
                    m.d.sync += irdy_on.eq(0)
                    with m.If(stop_seen):
                        m.d.sync += xfer_term.eq(term_stop)
                    with m.Elif(stop_valid):
                        m.d.sync += xfer_term.eq(term_now)
                    with m.Elif(lt_ended):
                        m.d.sync += xfer_term.eq(Termination.LATENCY_TIMER)
                    with m.Else():
                        m.d.sync += xfer_term.eq(Termination.COMPLETION)
                    goto(_State.END)
                with m.Elif(m_abort):
                    m.d.sync += xfer_term.eq(Termination.MASTER_ABORT)
                    with m.If(irdy_on & ~frame_on):
                        m.d.sync += irdy_on.eq(0)
                        goto(_State.END)
                    with m.Else():
                        # FRAME# first (with IRDY# asserted), IRDY# the clock after.
                        m.d.sync += [irdy_on.eq(1), frame_on.eq(0)]
                with m.Elif(frame_on & stop_valid):
                    # How the transaction ends is decided by the first STOP#.
                    m.d.sync += [stop_seen.eq(1),
                                 term_stop.eq(Mux(stop_seen, term_stop, term_now))]
                    with m.If(inject.frame_after_stop & irdy_on & ~oneshot_frame_after_stop):
                        # (u) this data phase completes with STOP#, yet FRAME# stays
                        # asserted (with IRDY#) for one more clock; the next one is last.
                        m.d.sync += [oneshot_frame_after_stop.eq(1), wait_seen.eq(0)]
                    with m.Else():
                        # The target ends it: FRAME# deasserted as soon as possible (the
                        # next clock), with IRDY# asserted.
                        m.d.sync += [irdy_on.eq(1), frame_on.eq(0), wait_seen.eq(0)]
                with m.Elif(completes):
                    next_wait = draw_wait(cur.wait_next)
                    with m.If(next_wait == 0):
                        start_phase(rem_n, phases_n, idx_next)
                    with m.Else():
                        m.d.sync += [irdy_on.eq(0), wait_cnt.eq(next_wait)]
                with m.Elif(irdy_on):
                    m.d.sync += wait_seen.eq(1)
                    with m.If(inject.irdy_drop & frame_on & ~oneshot_irdy_drop):
                        m.d.sync += [irdy_on.eq(0), wait_cnt.eq(1), oneshot_irdy_drop.eq(1)]
                    with m.Elif(inject.frame_reassert & ~frame_on & ~reassert_done
                                & ~ends_here(remaining)):
                        # (c) the phase signalled last is not the last after all: FRAME#
                        # is asserted again while it waits and the burst continues.
                        m.d.sync += [frame_on.eq(1), reassert_done.eq(1)]
                    with m.Elif(inject.frame_drop_wait & frame_on):
                        # (r) the waiting phase becomes the last one after all: FRAME# goes
                        # while IRDY# waits; the rest follows in a new transaction.
                        m.d.sync += frame_on.eq(0)
                with m.Elif(abandon):
                    # (b) FRAME# went while IRDY# was deasserted: to every agent the bus is
                    # idle now, so the transaction is over; the rest follows in a new one.
                    m.d.sync += [oneshot_frame_no_irdy.eq(1),
                                 xfer_term.eq(Termination.COMPLETION)]
                    goto(_State.END)
                with m.Else():
                    with m.If(wait_cnt > 1):
                        m.d.sync += wait_cnt.eq(wait_cnt - 1)
                    with m.Elif(~undecided(remaining, xfer_phases)):
                        start_phase(remaining, xfer_phases, idx)

            with m.Case(_State.END):
                m.d.sync += res.ack64.eq(ack64_seen)
                pause = Mux(xfer_term == Termination.RETRY, Mux(cur.idle == 0, 1, cur.idle), cur.idle)

                def again():
                    with m.If(pause == 0):
                        # END is the idle clock after the last data phase: still granted,
                        # the next transaction's address phase follows at once.
                        start_if_granted(otherwise=_State.ARB)
                    with m.Else():
                        m.d.sync += backoff.eq(pause - 1)
                        goto(_State.BACKOFF)

                with m.Switch(xfer_term):
                    with m.Case(Termination.MASTER_ABORT):
                        finish(Status.MASTER_ABORT)
                    with m.Case(Termination.TARGET_ABORT):
                        finish(Status.TARGET_ABORT)
                    with m.Case(Termination.RETRY):
                        m.d.sync += [res.retries.eq(res.retries + 1), retry_run.eq(retry_run + 1)]
                        with m.If((retry_limit != 0) & (retry_run + 1 >= retry_limit)):
                            finish(Status.RETRY_LIMIT)
                        with m.Else():
                            again()
                    with m.Default():
                        with m.If(_is(xfer_term, Termination.DISCONNECT_DATA,
                                                    Termination.DISCONNECT_NODATA)):
                            m.d.sync += res.disconnects.eq(res.disconnects + 1)
                        with m.If(xfer_term == Termination.LATENCY_TIMER):
                            m.d.sync += res.lt_ends.eq(res.lt_ends + 1)
                        with m.If(remaining == 0):
                            finish(Status.OK)
                        with m.Else():
                            again()

            with m.Case(_State.BACKOFF):
                with m.If(backoff == 0):
                    goto(_State.ARB)
                with m.Else():
                    m.d.sync += backoff.eq(backoff - 1)

            with m.Case(_State.FILL):
                m.d.comb += buffer.w_addr.eq(buf_dw >> lane_bits)
                if wide:
                    m.d.comb += [buffer.w_data.eq(~0), buffer.w_en.eq(Mux(lane, 0xF0, 0x0F))]
                else:
                    m.d.comb += [buffer.w_data.eq(~0), buffer.w_en.eq(0xF)]
                m.d.sync += [idx.eq(idx + 1), fill_left.eq(fill_left - 1)]
                with m.If(fill_left == 1):
                    goto(_State.REPORT)

            with m.Case(_State.REPORT):
                out = Signal(RESULT)
                m.d.comb += [out.eq(res), out.status.eq(cur_status), out.perr.eq(perr_cmd),
                             results.w_data.eq(out.as_value()),
                             self.prio_status.eq(cur_status)]
                with m.If(from_prio):
                    m.d.comb += self.prio_done.eq(1)
                    goto(_State.IDLE)
                with m.Elif(results.w_rdy):
                    m.d.comb += results.w_en.eq(1)
                    goto(_State.IDLE)
        return m


def _is(view, *members):
    """``view`` (an enum-shaped signal) holds one of ``members``."""
    return view.as_value().matches(*(member.value for member in members))


def parity_of(*values):
    """Even parity (XOR of all bits) of Amaranth values."""
    return Cat(*values).xor()


# ---- the Python side ---------------------------------------------------------------------

@dataclass
class InitiatorResult:
    """What one command did (the RESULT record, decoded), plus the data of reads.

    ``value`` is the DWORD (config) or the bytes shifted down (I/O) of single reads;
    ``data`` holds the bytes of memory reads.
    """
    status: Status
    ack64: bool
    perr: int
    phases: int
    dwords: int
    transactions: int
    retries: int
    disconnects: int
    lt_ends: int
    clocks: int
    latency: int
    last_data: int
    data: bytes = None
    value: int = None

    @property
    def ok(self):
        return self.status == Status.OK

    @classmethod
    def from_words(cls, words):
        raw = 0
        for i, word in enumerate(words):
            raw |= word << (32 * i)
        fields = unpack(RESULT, raw)
        fields["status"] = Status(fields["status"])
        fields["ack64"] = bool(fields["ack64"])
        return cls(**fields)


@dataclass
class InitiatorCommand:
    """A queued command: its sequence number and what :meth:`InitiatorDriver.wait` must
    fetch and decode once it has finished."""
    seq: int
    fields: dict
    read_bytes: tuple = None     # (first byte in the buffer, byte count) of a read
    value_shift: int = None      # single reads: shift/size of the returned value
    value_size: int = None


def _byte_enables(offset, count):
    """C/BE# (pin level) for ``count`` bytes starting at byte ``offset`` of a DWORD."""
    mask = ((1 << count) - 1) << offset
    return ~mask & 0xF


def _span(addr, size):
    """DWORD span of ``size`` bytes at ``addr``: (first DWORD address, DWORDs, C/BE# of the
    first, C/BE# of the last)."""
    if size <= 0:
        raise ValueError("a transfer needs at least one byte")
    start, end = addr & ~3, addr + size
    dwords = (end - start + 3) // 4
    first_bytes = min(end, start + 4) - addr
    be_first = _byte_enables(addr & 3, first_bytes)
    last_bytes = end - ((end - 1) & ~3)
    be_last = _byte_enables(0, last_bytes) if dwords > 1 else be_first
    return start, dwords, be_first, be_last


class InitiatorDriver:
    """Python-side driver of a :class:`BehaviouralInitiator`.

    ``ctl`` is a control accessor (``await ctl.write(reg, v)``, ``await ctl.read(reg)``,
    ``await ctl.wait_event()``). When it has a ``backdoor`` attribute (the cocotb handle
    of the initiator instance), the buffer is reached directly through
    :data:`BUFFER_PATH`; otherwise through ``Reg.BUF_ADDR``/``Reg.BUF_DATA``.

    Every operation has a blocking form (``mem_write``) and a non-blocking one
    (``submit_mem_write`` returning a handle for :meth:`wait`). Results come back in
    order; :meth:`wait` keeps results of other handles until they are asked for.

    Memory commands stage their data in the initiator's buffer at ``buf_off`` (DWORDs;
    default 0, or 1 for 64-bit transfers from an odd DWORD address so that buffer and bus
    pairs line up). Memory commands in flight at the same time need distinct ``buf_off``
    ranges. Extra keyword arguments are COMMAND fields (``wait_first``, ``wait_next``,
    ``wait_rand``, ``idle``, ``burst``, ...).
    """

    def __init__(self, ctl, *, width=32):
        self.ctl = ctl
        self.width = width
        self._next_seq = 0
        self._collected = 0
        self._results = {}

    # -- settings --------------------------------------------------------------------
    async def configure(self, *, lat_timer=0xFF, perr_enable=False, cache_line=0,
                        retry_limit=None, seed=None):
        """Latency Timer (clocks), PERR# on read parity errors, Cache Line Size (DWORDs,
        used by Memory Write and Invalidate), retry limit, LFSR seed. Raises ValueError
        when the initiator refuses the settings (they are then left as they were)."""
        await self.ctl.write(Reg.CONFIG, pack(CONFIG, lat_timer=lat_timer, perr_enable=perr_enable,
                                              cache_line=cache_line))
        if (await self.ctl.read(Reg.STATUS)) & STATUS_CONFIG_REFUSED:
            await self.ctl.write(Reg.STATUS, STATUS_CONFIG_REFUSED)
            raise ValueError(f"the initiator refused cache line size {cache_line} "
                             "(0 or a power of two)")
        if retry_limit is not None:
            await self.ctl.write(Reg.RETRY_LIMIT, retry_limit)
        if seed is not None:
            await self.ctl.write(Reg.SEED, seed)

    async def inject(self, **knobs):
        """Enable error-injection knobs by INJECT field name (all others off)."""
        await self.ctl.write(Reg.INJECT, pack(INJECT, **{k: int(v) for k, v in knobs.items()}))

    async def status(self):
        return await self.ctl.read(Reg.STATUS)

    # -- buffer --------------------------------------------------------------------
    def _storage(self):
        node = self.ctl.backdoor
        for name in BUFFER_PATH:
            node = getattr(node, name)
        return node

    async def buffer_write(self, dword, words):
        """Write 32-bit ``words`` into the buffer from DWORD index ``dword`` on."""
        words = list(words)
        if getattr(self.ctl, "backdoor", None) is not None:
            storage = self._storage()
            if self.width == 32:
                for i, word in enumerate(words):
                    storage[dword + i].value = word
            else:
                # Whole 64-bit words, each written once: a backdoor write only lands at the
                # end of the time step, so a second read-modify-write would undo the first.
                pairs = {}
                for i, word in enumerate(words):
                    index, lane = divmod(dword + i, 2)
                    pairs.setdefault(index, {})[lane] = word
                for index, lanes in pairs.items():
                    value = int(storage[index].value) if len(lanes) < 2 else 0
                    for lane, word in lanes.items():
                        value = (value & ~(0xFFFF_FFFF << (32 * lane))) | (word << (32 * lane))
                    storage[index].value = value
            return
        await self._until_idle()
        await self.ctl.write(Reg.BUF_ADDR, dword)
        for word in words:
            await self.ctl.write(Reg.BUF_DATA, word)

    async def buffer_read(self, dword, count):
        """Read ``count`` 32-bit words of the buffer from DWORD index ``dword`` on."""
        if getattr(self.ctl, "backdoor", None) is not None:
            storage = self._storage()
            if self.width == 32:
                return [int(storage[dword + i].value) for i in range(count)]
            out = []
            for i in range(count):
                index, lane = divmod(dword + i, 2)
                out.append((int(storage[index].value) >> (32 * lane)) & 0xFFFF_FFFF)
            return out
        await self._until_idle()
        await self.ctl.write(Reg.BUF_ADDR, dword)
        return [await self.ctl.read(Reg.BUF_DATA) for _ in range(count)]

    async def _until_idle(self):
        # The register path to the buffer is closed while commands are queued or run;
        # results are collected meanwhile so a full result FIFO cannot stall the engine.
        while True:
            status = await self.ctl.read(Reg.STATUS)
            if not status & STATUS_BUSY:
                return
            if status & STATUS_RESULT:
                await self._collect()

    # -- commands --------------------------------------------------------------------
    async def submit(self, code, addr, length, *, read_bytes=None, value_shift=None,
                     value_size=None, **fields):
        """Queue one command (COMMAND fields by name); returns its handle."""
        code = Command(code)
        fields = dict(fields, code=code.value, addr=addr, length=length)
        raw = pack(COMMAND, **fields)
        while (await self.ctl.read(Reg.STATUS)) & STATUS_QUEUE_FULL:
            await self._collect()
        for word in range(COMMAND.size // 32):
            await self.ctl.write(Reg.CMD + word, (raw >> (32 * word)) & 0xFFFF_FFFF)
        await self.ctl.write(Reg.PUSH, 0)
        handle = InitiatorCommand(self._next_seq, fields, read_bytes, value_shift, value_size)
        self._next_seq += 1
        return handle

    async def _collect(self):
        await self.ctl.wait_event()
        words = [await self.ctl.read(Reg.RESULT + i) for i in range(RESULT.size // 32)]
        await self.ctl.write(Reg.POP, 0)
        self._results[self._collected] = InitiatorResult.from_words(words)
        self._collected += 1

    async def wait(self, handle):
        """Wait for the command of ``handle`` to finish; return its :class:`InitiatorResult`."""
        while handle.seq not in self._results:
            await self._collect()
        result = self._results.pop(handle.seq)
        if handle.read_bytes is not None:
            first, count = handle.read_bytes
            words = await self.buffer_read(first // 4, (first % 4 + count + 3) // 4)
            raw = b"".join(w.to_bytes(4, "little") for w in words)
            result.data = raw[first % 4:first % 4 + count]
        if handle.value_shift is not None:
            mask = (1 << (8 * handle.value_size)) - 1
            result.value = (result.last_data >> (8 * handle.value_shift)) & mask
        return result

    async def run(self, code, addr, length, **fields):
        return await self.wait(await self.submit(code, addr, length, **fields))

    # -- configuration space -----------------------------------------------------------
    @staticmethod
    def config_address(slot, register, function=0):
        """Type 0 address: IDSEL of ``slot`` is AD[16+slot]; AD[10:8] function; AD[7:2]
        the DWORD register of byte offset ``register``; AD[1:0] = 00."""
        if not 0 <= slot < 16 or not 0 <= function < 8 or not 0 <= register < 256:
            raise ValueError(f"no configuration address for slot {slot}, function {function}, "
                             f"register {register:#x}")
        return (1 << (16 + slot)) | (function << 8) | (register & 0xFC)

    async def submit_config_read(self, slot, register, *, function=0, **fields):
        return await self.submit(Command.CONFIG_READ, self.config_address(slot, register, function),
                                 1, value_shift=0, value_size=4, **fields)

    async def config_read(self, slot, register, *, function=0, **fields):
        """Read the configuration DWORD holding byte ``register``; ``result.value``."""
        return await self.wait(await self.submit_config_read(slot, register, function=function,
                                                             **fields))

    async def submit_config_write(self, slot, register, value, *, function=0, be=0, **fields):
        return await self.submit(Command.CONFIG_WRITE, self.config_address(slot, register, function),
                                 1, imm=1, imm_data=value, be_first=be, **fields)

    async def config_write(self, slot, register, value, *, function=0, be=0, **fields):
        """Write ``value`` to the configuration DWORD holding byte ``register`` (C/BE#=``be``)."""
        return await self.wait(await self.submit_config_write(slot, register, value,
                                                              function=function, be=be, **fields))

    # -- I/O space --------------------------------------------------------------------
    @staticmethod
    def _io_check(addr, size):
        if size not in (1, 2, 3, 4) or (addr & 3) + size > 4:
            raise ValueError(f"an I/O access of {size} bytes at {addr:#x} crosses a DWORD")

    async def submit_io_read(self, addr, size=1, **fields):
        self._io_check(addr, size)
        return await self.submit(Command.IO_READ, addr, 1, be_first=_byte_enables(addr & 3, size),
                                 value_shift=addr & 3, value_size=size, **fields)

    async def io_read(self, addr, size=1, **fields):
        """Read ``size`` bytes at I/O ``addr`` (AD[1:0] = the byte address); ``result.value``."""
        return await self.wait(await self.submit_io_read(addr, size, **fields))

    async def submit_io_write(self, addr, value, size=1, **fields):
        self._io_check(addr, size)
        return await self.submit(Command.IO_WRITE, addr, 1, imm=1,
                                 imm_data=(value << (8 * (addr & 3))) & 0xFFFF_FFFF,
                                 be_first=_byte_enables(addr & 3, size), **fields)

    async def io_write(self, addr, value, size=1, **fields):
        return await self.wait(await self.submit_io_write(addr, value, size, **fields))

    # -- memory space -----------------------------------------------------------------
    def _buf_dword(self, addr, buf_off):
        # 64-bit data phases need the buffer DWORD and the bus DWORD equally aligned.
        if buf_off is None:
            return (addr >> 2) & 1 if self.width == 64 else 0
        return buf_off

    async def submit_mem_write(self, addr, data, *, burst=0, width=32,
                               command=Command.MEM_WRITE, buf_off=None, **fields):
        data = bytes(data)
        start, dwords, be_first, be_last = _span(addr, len(data))
        buf = self._buf_dword(start, buf_off)
        padded = bytes(addr & 3) + data + bytes(-(len(data) + (addr & 3)) % 4)
        await self.buffer_write(buf, [int.from_bytes(padded[i:i + 4], "little")
                                      for i in range(0, len(padded), 4)])
        return await self.submit(command, start, dwords, burst=burst, req64=int(width == 64),
                                 be_first=be_first, be_last=be_last, buf_off=buf, **fields)

    async def mem_write(self, addr, data, **kwargs):
        """Write ``data`` (bytes) at memory ``addr``; ``burst`` = most data phases per
        transaction (1: one data phase per store, no write aggregation; 0: no limit);
        ``width=64`` asks for REQ64#; ``command`` e.g. MEM_WRITE_INVALIDATE."""
        return await self.wait(await self.submit_mem_write(addr, data, **kwargs))

    async def submit_mem_read(self, addr, size, *, burst=0, width=32,
                              command=Command.MEM_READ, buf_off=None, **fields):
        start, dwords, be_first, be_last = _span(addr, size)
        buf = self._buf_dword(start, buf_off)
        return await self.submit(command, start, dwords, burst=burst, req64=int(width == 64),
                                 be_first=be_first, be_last=be_last, buf_off=buf,
                                 read_bytes=(4 * buf + (addr & 3), size), **fields)

    async def mem_read(self, addr, size, **kwargs):
        """Read ``size`` bytes at memory ``addr``; ``result.data`` holds them."""
        return await self.wait(await self.submit_mem_read(addr, size, **kwargs))
