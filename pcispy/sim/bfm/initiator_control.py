# SPDX-License-Identifier: BSD-2-Clause
"""The behavioural initiator's side towards Python (pcispy/sim/bfm/initiator.py is its bus
side): the control-port registers (the command record, the result record, the settings,
the buffer's register path), how a command ended (:class:`Outcome`), the states a command
goes through, and the gateware that serves the port: writes and reads of the registers,
the buffer, taking a command from the queue (or ``prio``), refusing one the initiator
cannot run, and reporting its result. :class:`~pcispy.sim.bfm.initiator_driver.InitiatorDriver`
drives the registers from Python.
"""

from amaranth import Cat, Const, Mux, Signal
from amaranth.lib import enum

from pcispy.pci.bus import Command
from pcispy.pci.lfsr import lfsr_step
from pcispy.sim.bfm.nets import net
from pcispy.sim.control import (ControlField, ControlRegister, ControlRegisters, register_reads,
                                written)

__all__ = [
    "REGISTERS", "COMMAND", "RESULT", "INJECT", "CONFIG", "Reg", "Outcome",
    "BUFFER_PATH", "ID_VALUE",
    "STATUS_BUSY", "STATUS_RESULT", "STATUS_QUEUE_FULL", "STATUS_PUSH_REFUSED",
    "STATUS_BUF_REFUSED", "STATUS_CONFIG_REFUSED",
    "unpack",
]


def _flags(*names):
    """One-bit fields, bit 0 first, each ``(name, doc)``."""
    return tuple(ControlField(name, bit, 1, doc) for bit, (name, doc) in enumerate(names))


#: The control-port registers (indices of 32-bit words). CMD and RESULT are records of
#: eight words each, written / read word by word.
REGISTERS = ControlRegisters("Reg", [
    ControlRegister("ID", 0x000, doc='read: ID_VALUE ("PCII")'),
    ControlRegister("STATUS", 0x001, (
        ControlField("busy", 0, 1, "a command is queued or running"),
        ControlField("result", 1, 1, "a result waits (same as event)"),
        ControlField("queue_full", 2, 1),
        ControlField("push_refused", 8, 1, "sticky: PUSH while the queue was full"),
        ControlField("buf_refused", 9, 1, "sticky: BUF_DATA access while busy (reads all ones)"),
        ControlField("config_refused", 10, 1,
                     "sticky: CONFIG write with a cache line not a power of two"),
    ), doc="read: the bits; write 1s to clear the sticky refusal bits"),
    ControlRegister("CONFIG", 0x002, (
        ControlField("lat_timer", 0, 8, "Latency Timer: expired once more clocks than this passed "
                     "since FRAME# (reset 255: never, as the clock count saturates there)",
              reset=0xFF),
        ControlField("perr_enable", 8, 1,
                     "(p) assert PERR# two clocks after a read data phase with bad parity"),
        ControlField("cache_line", 9, 8,
                     "Cache Line Size in DWORDs (0 or a power of two; others refused)"),
    ), doc="settings that hold across commands"),
    ControlRegister("SEED", 0x003, doc="write: seed the LFSR (0 is taken as 1)"),
    ControlRegister("RETRY_LIMIT", 0x004, (ControlField("retry_limit", 0, 16, reset=1024),),
                    doc="consecutive retries before giving up; 0 = never"),
    # Error injection: each bit breaks exactly one protocol rule.
    ControlRegister("INJECT", 0x005, _flags(
        ("irdy_drop", "(a) deassert IRDY# for one clock before its data phase completed"),
        ("frame_no_irdy", "(b) deassert FRAME# while IRDY# is deasserted (wait before last "
         "phase), once per command; the bus then looks idle, so the transaction is over "
         "and the rest follows in a new one"),
        ("frame_reassert", "(c) reassert FRAME# while the last phase of a burst cut short by "
         "``burst`` waits, and keep it: the burst goes on (once per command)"),
        ("irdy_late", "(d) first IRDY# 9 waits after the address phase (clock 11)"),
        ("addr_parity", "(f) wrong PAR for the address phase(s)"),
        ("wdata_parity", "(g) wrong PAR for write data"),
        ("wdata_parity64", "(h) wrong PAR64 for write data"),
        ("no_gnt", "(i) start FRAME# without GNT#"),
        ("irdy_idle", "(j) one clock of IRDY# without FRAME# on an idle bus"),
        ("req64_mismatch", "(k) REQ64# deasserted after the address phase while FRAME# holds"),
        ("be_change", "(l) change C/BE# during a data-phase wait (TRDY# deasserted)"),
        ("wdata_change", "(m) change write data during a data-phase wait"),
        ("early_abort", "(n) give up waiting for DEVSEL# after clock 3, not 5"),
        ("perr_wrong", "(o) assert PERR# in clock 2 (no data phase two clocks before)"),
        ("irdy_in_addr", "(q) assert IRDY# in the address phase(s) as well"),
        ("frame_drop_wait", "(r) deassert FRAME# while IRDY# waits for the target (not last)"),
        ("dac_twice", "(s) the second address phase of a DAC carries DAC again"),
        ("busy_start", "(t) with GNT#, take another master's completed final data phase "
         "(FRAME# deasserted, IRDY# and TRDY# or STOP# asserted) for an idle bus: the "
         "address phase follows that clock at once, as only that master's own fast "
         "back-to-back may"),
        ("frame_after_stop", "(u) once per command, FRAME# stays asserted (with IRDY#) for "
         "one clock more after a data phase completed with STOP#"),
        ("dac_low", "(v) a Dual Address Cycle even below 4 GiB (upper address bits 0)"),
        ("wdata_parity_wait", "(w) wrong PAR for write data while the data phase waits for "
         "TRDY#/STOP#; right for the clock it completes in"),
        ("park_no_par", "(x) parked: AD and C/BE# driven, PAR not"),
        ("park_float", "(y) never park: AD, C/BE#, PAR float on an idle bus with GNT#"),
    )),
    ControlRegister("PERR_COUNT", 0x006, doc="read: read-data parity errors detected since reset"),
    ControlRegister("BUF_ADDR", 0x008, doc="buffer DWORD index for BUF_DATA (auto-increments)"),
    ControlRegister("BUF_DATA", 0x009, doc="read/write one buffer DWORD (only while not busy)"),
    ControlRegister("CMD", 0x010, words=8, doc="the command being assembled", fields=(
        ControlField("code", 0, 4, "bus command (Command), DAC is added automatically"),
        ControlField("req64", 4, 1, "ask for 64-bit data phases (REQ64#)"),
        ControlField("imm", 5, 1, "write data is ``imm_data`` in every DWORD, not the buffer"),
        ControlField("wait_first", 8, 4, "IRDY# wait states before the first data phase"),
        ControlField("wait_next", 12, 4, "IRDY# wait states before each later data phase"),
        ControlField("wait_rand", 16, 4, "plus (LFSR & wait_rand) random wait states per phase"),
        ControlField("idle", 24, 8, "idle clocks between transactions of this command"),
        ControlField("be_first", 32, 4, "C/BE# (pin level, 0 = byte enabled) of the first DWORD"),
        ControlField("be_mid", 36, 4, "... of the DWORDs between"),
        ControlField("be_last", 40, 4, "... of the last DWORD (a 1-DWORD command uses be_first)"),
        ControlField("length", 64, 20, "DWORDs to move, 1..2**20-1"),
        ControlField("burst", 96, 16, "most data phases per transaction, 0 = no limit"),
        ControlField("buf_off", 128, 20,
                     "buffer DWORD where write data comes from / read data goes"),
        ControlField("addr", 160, 64, "byte address; above 4 GiB a Dual Address Cycle is used"),
        ControlField("imm_data", 224, 32),
    )),
    ControlRegister("PUSH", 0x018, doc="write: queue the assembled command"),
    ControlRegister("RESULT", 0x020, words=8, doc="the oldest result", fields=(
        ControlField("status", 0, 3, "Outcome"),
        ControlField("ack64", 3, 1, "the last transaction was answered with ACK64#"),
        ControlField("perr", 8, 8, "read data parity errors detected"),
        ControlField("phases", 32, 32, "data phases that moved data"),
        ControlField("dwords", 64, 32, "DWORDs moved"),
        ControlField("transactions", 96, 16, "address phases (retried ones included)"),
        ControlField("retries", 112, 16),
        ControlField("disconnects", 128, 16, "with or without data"),
        ControlField("lt_ends", 144, 16, "transactions ended by the Latency Timer"),
        ControlField("clocks", 160, 32,
                     "from taking the command to its last idle clock, inclusive"),
        ControlField("latency", 192, 16, "first transaction: clocks from address phase to TRDY#"),
        ControlField("last_data", 224, 32, "last DWORD read (all ones after an abort)"),
    )),
    ControlRegister("POP", 0x028, doc="write: drop the oldest result"),
])

#: Control-port register indices.
Reg = REGISTERS.enum()

#: Layouts of the record registers, for signals and streams (``prio``) carrying them.
COMMAND = REGISTERS["CMD"].layout
RESULT = REGISTERS["RESULT"].layout
INJECT = REGISTERS["INJECT"].layout
CONFIG = REGISTERS["CONFIG"].layout

#: ``Reg.ID`` value.
ID_VALUE = 0x5043_4949

#: ``Reg.STATUS`` bits.
_STATUS = REGISTERS["STATUS"]
STATUS_BUSY = _STATUS.field("busy").mask
STATUS_RESULT = _STATUS.field("result").mask
STATUS_QUEUE_FULL = _STATUS.field("queue_full").mask
STATUS_PUSH_REFUSED = _STATUS.field("push_refused").mask
STATUS_BUF_REFUSED = _STATUS.field("buf_refused").mask
STATUS_CONFIG_REFUSED = _STATUS.field("config_refused").mask

#: Path from the initiator's instance to its buffer words, for cocotb backdoor access.
BUFFER_PATH = ("buffer", "ram", "bd_storage")


class Outcome(enum.Enum, shape=3):
    """How a command ended."""
    OK           = 0
    MASTER_ABORT = 1  # no DEVSEL#: reads return all ones
    TARGET_ABORT = 2  # reads return all ones from the aborted DWORD on
    RETRY_LIMIT  = 3  # retried RETRY_LIMIT times in a row; reads return all ones
    BAD_COMMAND  = 4  # refused before touching the bus (see BehaviouralInitiator)


def unpack(layout, value):
    """Unpack an integer into ``{field: int}`` with an Amaranth ``layout`` (one of the
    layouts above)."""
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


class _ControlPortLogic:
    """The control port's share of the initiator's logic (a base of its ``_InitiatorLogic``,
    whose attributes it uses): the registers, the buffer, the command queue and the result
    FIFO."""

    def control_port(self):
        """The registers of :data:`REGISTERS`: writes (the command queue's PUSH, the
        result FIFO's POP among them), the buffer's register path and the read mux."""
        m, ctl, queue, results = self.m, self.ctl, self.queue, self.results
        m.d.comb += ctl.event.eq(results.r_rdy)
        # The generator steps on every clock, the engine's or not (its draws are the
        # same whether the engine slept or not); SEED reloads it.
        free = self.free
        free.d.sync += self.lfsr.eq(lfsr_step(self.lfsr))
        with free.If(written(ctl, Reg.SEED)):
            free.d.sync += self.lfsr.eq(Mux(ctl.w_data == 0, 1, ctl.w_data))

        with m.If(ctl.w_en):
            with m.Switch(ctl.addr):
                with m.Case(Reg.STATUS):
                    for flag in ("push_refused", "buf_refused", "config_refused"):
                        with m.If(_STATUS.field(flag).get(ctl.w_data)):
                            m.d.sync += getattr(self, flag).eq(0)
                with m.Case(Reg.CONFIG):
                    new_config = CONFIG(ctl.w_data[:CONFIG.size])
                    line = new_config.cache_line
                    with m.If((line & (line - 1)) != 0):
                        m.d.sync += self.config_refused.eq(1)
                    with m.Else():
                        m.d.sync += self.config.eq(new_config)
                with m.Case(Reg.RETRY_LIMIT):
                    m.d.sync += self.retry_limit.eq(ctl.w_data)
                with m.Case(Reg.INJECT):
                    m.d.sync += self.inject.as_value().eq(ctl.w_data)
                with m.Case(Reg.BUF_ADDR):
                    m.d.sync += self.buf_ptr.eq(ctl.w_data)
                for index, word in REGISTERS["CMD"].slices(self.staging).items():
                    with m.Case(index):
                        m.d.sync += word.eq(ctl.w_data)
                with m.Case(Reg.PUSH):
                    with m.If(queue.w_rdy):
                        m.d.comb += queue.w_en.eq(1)
                    with m.Else():
                        m.d.sync += self.push_refused.eq(1)
                with m.Case(Reg.POP):
                    m.d.comb += results.r_en.eq(1)
        m.d.comb += queue.w_data.eq(self.staging.as_value())

        # Buffer access through registers, only while no command runs (the engine owns
        # both RAM ports while it works).
        buf_access = written(ctl, Reg.BUF_DATA) | (ctl.r_en & (ctl.addr == Reg.BUF_DATA))
        with m.If(buf_access & self.engaged):
            m.d.sync += self.buf_refused.eq(1)
        with m.Elif(buf_access):
            m.d.sync += self.buf_ptr.eq(self.buf_ptr + 1)
        buffer = self.buffer
        if self.wide:
            buf_word = Mux(self.buf_ptr[0], buffer.r_data[32:], buffer.r_data[:32])
        else:
            buf_word = buffer.r_data

        status = Signal(_STATUS.layout)
        m.d.comb += [
            status.busy.eq(self.engaged), status.result.eq(results.r_rdy),
            status.queue_full.eq(~queue.w_rdy), status.push_refused.eq(self.push_refused),
            status.buf_refused.eq(self.buf_refused),
            status.config_refused.eq(self.config_refused),
        ]
        readable = {
            Reg.ID: ID_VALUE,
            Reg.STATUS: status.as_value(),
            Reg.CONFIG: self.config.as_value(),
            Reg.SEED: self.lfsr,
            Reg.RETRY_LIMIT: self.retry_limit,
            Reg.INJECT: self.inject.as_value(),
            Reg.PERR_COUNT: self.perr_total,
            Reg.BUF_ADDR: self.buf_ptr,
            Reg.BUF_DATA: Mux(self.engaged, 0xFFFF_FFFF, buf_word),
            **REGISTERS["CMD"].slices(self.staging),
            **REGISTERS["RESULT"].slices(Mux(results.r_rdy, results.r_data, 0)),
        }
        register_reads(m, ctl, readable)

    # ---- buffer ------------------------------------------------------------------------

    def buffer_port(self):
        """Address the buffer: for the engine, or for the register path while idle.

        The read port is addressed with the DWORD index the next clock will use, so the
        registered RAM output holds the current DWORD's write data."""
        m, ctl, buffer, cur = self.m, self.ctl, self.buffer, self.cur
        m.d.comb += self.idx_next.eq(self.idx)
        buf_dw_next = Signal(21)
        m.d.comb += [self.buf_dw.eq(cur.buf_off + self.idx),
                     buf_dw_next.eq(cur.buf_off + self.idx_next)]
        # Register path: the RAM must already be addressed with the DWORD a BUF_DATA read
        # returns, i.e. with the new BUF_ADDR while it is written and the next DWORD while
        # one is read.
        buf_data_r = ctl.r_en & (ctl.addr == Reg.BUF_DATA)
        slow_next = Mux(written(ctl, Reg.BUF_ADDR), ctl.w_data, self.buf_ptr + buf_data_r)
        m.d.comb += buffer.r_addr.eq(Mux(self.busy, buf_dw_next, slow_next) >> self.lane_bits)
        with m.If(~self.engaged & written(ctl, Reg.BUF_DATA)):
            m.d.comb += buffer.w_addr.eq(self.buf_ptr >> self.lane_bits)
            if self.wide:
                m.d.comb += [buffer.w_data.eq(Cat(ctl.w_data, ctl.w_data)),
                             buffer.w_en.eq(Mux(self.buf_ptr[0], 0xF0, 0x0F))]
            else:
                m.d.comb += [buffer.w_data.eq(ctl.w_data), buffer.w_en.eq(0xF)]

        self.lane = self.buf_dw[0] if self.wide else Const(0)
        ram_lo = buffer.r_data[:32]
        ram_hi = buffer.r_data[32:] if self.wide else buffer.r_data
        self.data_lo = net(m, Mux(cur.imm, cur.imm_data, Mux(self.lane, ram_hi, ram_lo)),
                           "data_lo")
        self.data_hi = net(m, Mux(cur.imm, cur.imm_data, ram_hi), "data_hi")

    def be_of(self, i):
        """C/BE# of the command's DWORD ``i``."""
        cur = self.cur
        return Mux(i == 0, cur.be_first, Mux(i == cur.length - 1, cur.be_last, cur.be_mid))

    def write_buffer(self, data_lo, data_hi=None):
        """Write the buffer at the current DWORD in this clock: ``data_lo`` there, and
        ``data_hi`` in the next when given (a 64-bit data phase)."""
        m, buffer = self.m, self.buffer
        m.d.comb += buffer.w_addr.eq(self.buf_dw >> self.lane_bits)
        if not self.wide:
            m.d.comb += [buffer.w_data.eq(data_lo), buffer.w_en.eq(0xF)]
        elif data_hi is not None:
            m.d.comb += [buffer.w_data.eq(Cat(data_lo, data_hi)), buffer.w_en.eq(0xFF)]
        else:
            m.d.comb += [buffer.w_data.eq(Cat(data_lo, data_lo)),
                         buffer.w_en.eq(Mux(self.lane, 0xF0, 0x0F))]

    def take_command(self):
        """IDLE: take the next command, a ``prio`` one first."""
        m, prio, queue = self.m, self.initiator.prio, self.queue
        m.d.sync += [self.res.as_value().eq(0), self.idx.eq(0), self.retry_run.eq(0),
                     self.latency_done.eq(0), self.oneshot_irdy_drop.eq(0),
                     self.oneshot_irdy_idle.eq(0), self.oneshot_frame_after_stop.eq(0),
                     self.cur_status.eq(Outcome.OK)]
        with m.If(prio.valid):
            m.d.comb += prio.ready.eq(1)
            m.d.sync += [self.cur.eq(prio.payload), self.from_prio.eq(1)]
            self.goto(_State.CHECK)
        with m.Elif(queue.r_rdy):
            m.d.comb += queue.r_en.eq(1)
            m.d.sync += [self.cur.as_value().eq(queue.r_data), self.from_prio.eq(0)]
            self.goto(_State.CHECK)

    def check_command(self):
        """CHECK: refuse a command the initiator cannot run (see BehaviouralInitiator)."""
        m, cur = self.m, self.cur
        m.d.sync += self.perr_cmd.eq(0)
        uses_buffer = self.is_read | ~cur.imm
        bad = ((cur.length == 0) | (cur.code == Command.DUAL_ADDRESS) |
               (cur.req64 & (not self.wide)) |
               (uses_buffer & (cur.buf_off + cur.length > self.initiator.buffer_dwords)))
        with m.If(bad):
            m.d.sync += self.cur_status.eq(Outcome.BAD_COMMAND)
            self.goto(_State.REPORT)
        with m.Else():
            self.goto(_State.ARB)

    def report(self):
        """REPORT: the result into the result FIFO, or to ``prio_done`` for a ``prio``
        command."""
        m, initiator, results = self.m, self.initiator, self.results
        out = Signal(RESULT)
        m.d.comb += [out.eq(self.res), out.status.eq(self.cur_status),
                     out.perr.eq(self.perr_cmd), results.w_data.eq(out.as_value()),
                     initiator.prio_status.eq(self.cur_status)]
        with m.If(self.from_prio):
            m.d.comb += initiator.prio_done.eq(1)
            self.goto(_State.IDLE)
        with m.Elif(results.w_rdy):
            m.d.comb += results.w_en.eq(1)
            self.goto(_State.IDLE)
