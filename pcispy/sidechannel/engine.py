# SPDX-License-Identifier: BSD-2-Clause
"""The side channel's frame engine (clock domain ``sync``): request frames in, local
accesses out, response frames back (protocol: :mod:`.protocol`).

Three parts, one after the other:

- the *receiver* un-escapes the UART's bytes, checks length and CRC, and hands a valid
  request to the executor (or counts it ``busy`` if the executor is still answering);
- the *executor* replays the stored answer of a repeated request, or runs the command:
  STATUS from its own counters, READ/WRITE/BULK_READ as local accesses pushed out on
  ``req`` with their answers collected from ``resp`` into the answer buffer;
- the *sender* transmits the answer from the buffer, escaping and computing the CRC.

The answer buffer keeps the last answer for a replay until the next executed request.
"""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pcispy.sidechannel.local import ADDR_BITS
from pcispy.sidechannel.protocol import (CRC_INIT, CRC_POLY, ESC, ESC_XOR, MAX_REQUEST_PAYLOAD, MAX_WORDS,
                                         PROTOCOL_VERSION, REQUEST_PAYLOAD, SOF, STATUS_COUNTERS, STATUS_FLAGS,
                                         STATUS_PAYLOAD, Opcode, ResponseStatus)

__all__ = ["FrameEngine", "crc16_step"]


def crc16_step(crc, byte):
    """The CRC register after one more byte (an Amaranth expression, 16 bits)."""
    value = (Value.cast(crc) ^ (Value.cast(byte) << 8))[:16]
    for _ in range(8):
        shifted = (value << 1)[:16]
        value = Mux(value[15], shifted ^ CRC_POLY, shifted)
    return value


class FrameEngine(wiring.Component):
    """Receives request frames, executes them, sends the answers (domain ``sync``).

    Ports:
        rx_data (In, 8), rx_valid (In, 1), rx_error (In, 1): bytes from the UART
            receiver (``rx_error``: a byte with a framing error).
        tx_data (Out, 8), tx_valid (Out, 1), tx_ready (In, 1): bytes to the UART
            transmitter.
        req_valid (Out, 1), req_ready (In, 1), req_space (Out, 2), req_addr (Out, 24),
            req_write (Out, 1), req_data (Out, 32): local accesses, one per transfer.
        resp_valid (In, 1), resp_ready (Out, 1), resp_data (In, 32), resp_error (In, 1):
            their answers, one per access, in order.
        pci_running (In, 1): the PCI side runs (reported by STATUS).
        counters (Out): ``executed``, ``replays``, ``dropped``, ``busy``, ``noise`` (32
            bits each, :data:`~.protocol.STATUS_COUNTERS`), for tests and STATUS.

    Parameters:
        pci_timeout: ``sync`` clocks to wait for the next answer of a local access before
            answering :attr:`~.protocol.ResponseStatus.PCI_TIMEOUT` (answers that come later are
            discarded; the accesses still queued are carried out when the PCI clock runs).
    """
    def __init__(self, pci_timeout=1 << 16):
        self.pci_timeout = pci_timeout
        members = {
            "rx_data": In(8), "rx_valid": In(1), "rx_error": In(1),
            "tx_data": Out(8), "tx_valid": Out(1), "tx_ready": In(1),
            "req_valid": Out(1), "req_ready": In(1), "req_space": Out(2),
            "req_addr": Out(ADDR_BITS), "req_write": Out(1), "req_data": Out(32),
            "resp_valid": In(1), "resp_ready": Out(1), "resp_data": In(32),
            "resp_error": In(1), "pci_running": In(1),
        }
        members.update({f"count_{name}": Out(32) for name in STATUS_COUNTERS})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        counters = {name: getattr(self, f"count_{name}") for name in STATUS_COUNTERS}

        def count(name):
            m.d.sync += counters[name].eq(counters[name] + 1)

        # --- Receiver -----------------------------------------------------------------
        in_frame = Signal()
        escaped = Signal()
        index = Signal(range(MAX_REQUEST_PAYLOAD + 6))
        rx_crc = Signal(16)
        seq = Signal(8)
        command = Signal(8)
        length = Signal(8)
        payload = [Signal(8, name=f"payload_{i}") for i in range(MAX_REQUEST_PAYLOAD)]
        crc_hi = Signal(8)
        frame_ok = Signal()          # one clock: a valid frame is complete
        frame_crc = Signal(16)       # its CRC bytes (with seq: what a replay must match)
        m.d.comb += frame_crc.eq(Cat(self.rx_data, crc_hi))
        executor_idle = Signal()

        byte = Signal(8)             # the un-escaped byte delivered this clock
        deliver = Signal()
        m.d.comb += byte.eq(Mux(escaped, self.rx_data ^ ESC_XOR, self.rx_data))
        with m.If(self.rx_error):
            with m.If(in_frame):
                count("dropped")
            m.d.sync += in_frame.eq(0)
        with m.Elif(self.rx_valid):
            with m.If(self.rx_data == SOF):
                # A SOF always starts a frame; one in progress was cut short.
                with m.If(in_frame):
                    count("dropped")
                m.d.sync += [in_frame.eq(1), escaped.eq(0), index.eq(0), rx_crc.eq(CRC_INIT)]
            with m.Elif(~in_frame):
                count("noise")
            with m.Elif(escaped):
                with m.If((self.rx_data == SOF ^ ESC_XOR) | (self.rx_data == ESC ^ ESC_XOR)):
                    m.d.comb += deliver.eq(1)
                with m.Else():
                    count("dropped")
                    m.d.sync += in_frame.eq(0)
                m.d.sync += escaped.eq(0)
            with m.Elif(self.rx_data == ESC):
                m.d.sync += escaped.eq(1)
            with m.Else():
                m.d.comb += deliver.eq(1)

        crc_after = Signal(16)
        m.d.comb += crc_after.eq(crc16_step(rx_crc, byte))
        with m.If(deliver):
            m.d.sync += [rx_crc.eq(crc_after), index.eq(index + 1)]
            with m.Switch(index):
                with m.Case(0):
                    m.d.sync += seq.eq(byte)
                with m.Case(1):
                    m.d.sync += command.eq(byte)
                with m.Case(2):
                    m.d.sync += length.eq(byte)
                    with m.If(byte > MAX_REQUEST_PAYLOAD):
                        count("dropped")
                        m.d.sync += in_frame.eq(0)
            for i, reg in enumerate(payload):
                with m.If((index == 3 + i) & (length > i)):
                    m.d.sync += reg.eq(byte)
            with m.If((index > 2) & (index == length + 3)):
                m.d.sync += crc_hi.eq(byte)
            with m.If((index > 2) & (index == length + 4)):
                m.d.sync += in_frame.eq(0)
                # The CRC over the body and its own two bytes leaves 0.
                with m.If(crc_after != 0):
                    count("dropped")
                with m.Elif(~executor_idle):
                    count("busy")
                with m.Else():
                    m.d.comb += frame_ok.eq(1)

        # --- Answer buffer: 32-bit words, the answer's payload --------------------------
        m.submodules.buffer = buffer = Memory(shape=32, depth=MAX_WORDS + 1, init=[])
        wr = buffer.write_port()
        rd = buffer.read_port()

        # --- Executor -----------------------------------------------------------------
        have_last = Signal()
        last_seq = Signal(8)
        last_crc = Signal(16)
        answer_status = Signal(8)
        answer_length = Signal(8)
        words = Signal(range(MAX_WORDS + 1))       # accesses of this command
        issued = Signal(range(MAX_WORDS + 1))
        received = Signal(range(MAX_WORDS + 1))
        failed = Signal()
        timer = Signal(range(self.pci_timeout + 1))
        discard = Signal(16)                       # late answers still to throw away
        space = payload[0]
        # What the accesses need is kept apart: the receiver may take the next frame.
        exec_space = Signal(2)
        exec_base = Signal(ADDR_BITS)
        exec_data = Signal(32)
        exec_write = Signal()

        expected = Signal(8)
        with m.Switch(command):
            for cmd, size in REQUEST_PAYLOAD.items():
                with m.Case(cmd):
                    m.d.comb += expected.eq(size)
            with m.Default():
                m.d.comb += expected.eq(0xFF)

        timeout_now = Signal()
        in_access = Signal()
        fill = Signal(range(STATUS_PAYLOAD // 4 + 1))

        # --- Sender -------------------------------------------------------------------
        tx_index = Signal(9)                 # body byte: seq, status, length, payload, crc
        tx_crc = Signal(16)
        tx_escape = Signal()
        body = Signal(8)
        offset = Signal(8)
        m.d.comb += [offset.eq(tx_index - 3), rd.addr.eq(offset >> 2)]
        with m.If(tx_index == 0):
            m.d.comb += body.eq(last_seq)
        with m.Elif(tx_index == 1):
            m.d.comb += body.eq(answer_status)
        with m.Elif(tx_index == 2):
            m.d.comb += body.eq(answer_length)
        with m.Elif(tx_index < answer_length + 3):
            # The buffer's read port answers a clock after the index moved; the UART takes
            # a byte every 10 bit times, so it is always there in time.
            m.d.comb += body.eq(rd.data.word_select(offset[:2], 8))
        with m.Elif(tx_index == answer_length + 3):
            m.d.comb += body.eq(tx_crc[8:])
        with m.Else():
            m.d.comb += body.eq(tx_crc[:8])

        def answer(status, length=0):
            m.d.sync += [answer_status.eq(status), answer_length.eq(length)]
            m.next = "SEND_SOF"

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += executor_idle.eq(1)
                with m.If(frame_ok):
                    with m.If(have_last & (seq == last_seq) & (frame_crc == last_crc)):
                        count("replays")
                        m.next = "SEND_SOF"
                    with m.Else():
                        count("executed")
                        m.d.sync += [have_last.eq(1), last_seq.eq(seq), last_crc.eq(frame_crc),
                                     issued.eq(0), received.eq(0), failed.eq(0), timer.eq(0),
                                     fill.eq(0), exec_write.eq(command == Opcode.WRITE),
                                     exec_space.eq(space), exec_base.eq(Cat(*payload[1:4])),
                                     exec_data.eq(Cat(*payload[4:8]))]
                        with m.If(expected == 0xFF):
                            answer(ResponseStatus.BAD_COMMAND)
                        with m.Elif(length != expected):
                            answer(ResponseStatus.BAD_LENGTH)
                        with m.Elif(command == Opcode.STATUS):
                            m.next = "STATUS"
                        with m.Elif((command == Opcode.BULK_READ) &
                                    ((payload[4] == 0) | (payload[4] > MAX_WORDS))):
                            answer(ResponseStatus.BAD_LENGTH)
                        with m.Elif(space > 3):
                            answer(ResponseStatus.BAD_ADDRESS)
                        with m.Else():
                            m.d.sync += words.eq(Mux(command == Opcode.BULK_READ,
                                                     payload[4], 1))
                            m.next = "ACCESS"
            with m.State("STATUS"):
                # The answer's words: version/flags/max words, then each counter.
                flags = Cat(*(self.pci_running if name == "pci_running" else Const(0)
                              for name in STATUS_FLAGS))
                values = [Cat(Const(PROTOCOL_VERSION, 8), flags, Const(0, 8 - len(flags)),
                              Const(MAX_WORDS, 8), Const(0, 8))]
                values += [counters[name] for name in STATUS_COUNTERS]
                with m.Switch(fill):
                    for i, value in enumerate(values):
                        with m.Case(i):
                            m.d.comb += wr.data.eq(value)
                m.d.comb += [wr.en.eq(1), wr.addr.eq(fill)]
                m.d.sync += fill.eq(fill + 1)
                with m.If(fill == len(values) - 1):
                    answer(ResponseStatus.OK, STATUS_PAYLOAD)
            with m.State("ACCESS"):
                m.d.comb += in_access.eq(1)
                m.d.comb += [self.req_valid.eq(issued != words),
                             self.req_space.eq(exec_space),
                             self.req_addr.eq(exec_base + issued),
                             self.req_write.eq(exec_write), self.req_data.eq(exec_data)]
                with m.If(self.req_valid & self.req_ready):
                    m.d.sync += issued.eq(issued + 1)
                m.d.comb += timeout_now.eq(timer == self.pci_timeout)
                m.d.sync += timer.eq(timer + 1)
                take = self.resp_valid & self.resp_ready & (discard == 0)
                with m.If(take):
                    m.d.comb += [wr.en.eq(~exec_write), wr.addr.eq(received),
                                 wr.data.eq(self.resp_data)]
                    m.d.sync += [received.eq(received + 1), timer.eq(0),
                                 failed.eq(failed | self.resp_error)]
                    with m.If(received + 1 == words):
                        with m.If(failed | self.resp_error):
                            answer(ResponseStatus.BAD_ADDRESS)
                        with m.Else():
                            answer(ResponseStatus.OK, Mux(exec_write, 0, words << 2))
                with m.Elif(timeout_now):
                    answer(ResponseStatus.PCI_TIMEOUT)
            with m.State("SEND_SOF"):
                m.d.comb += [self.tx_data.eq(SOF), self.tx_valid.eq(1)]
                m.d.sync += [tx_index.eq(0), tx_crc.eq(CRC_INIT), tx_escape.eq(0)]
                with m.If(self.tx_ready):
                    m.next = "SEND_BODY"
            with m.State("SEND_BODY"):
                # One body byte: raw, or ESC then the byte XORed (tx_escape). The CRC takes
                # it once, when its first wire byte leaves.
                special = (body == SOF) | (body == ESC)
                m.d.comb += [self.tx_valid.eq(1),
                             self.tx_data.eq(Mux(tx_escape, body ^ ESC_XOR,
                                                 Mux(special, ESC, body)))]
                with m.If(self.tx_ready):
                    with m.If(~tx_escape & (tx_index < answer_length + 3)):
                        m.d.sync += tx_crc.eq(crc16_step(tx_crc, body))
                    with m.If(~tx_escape & special):
                        m.d.sync += tx_escape.eq(1)
                    with m.Else():
                        m.d.sync += [tx_escape.eq(0), tx_index.eq(tx_index + 1)]
                        with m.If(tx_index == answer_length + 4):
                            m.next = "IDLE"

        # Late answers of a command that timed out are thrown away whenever they come.
        late = self.resp_valid & (discard != 0)
        m.d.comb += self.resp_ready.eq((discard != 0) | (in_access & ~timeout_now))
        m.d.sync += discard.eq(discard - late +
                               Mux(timeout_now, issued - received, 0))
        return m
