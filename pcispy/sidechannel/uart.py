# SPDX-License-Identifier: BSD-2-Clause
"""8N1 UART receiver and transmitter (clock domain ``sync``).

The bit time is ``divisor`` clocks (25 MHz / 217 = 115200 baud; 25 MHz / 25 = 1 Mbaud).
The receiver synchronises its pin with two flip-flops, finds the middle of the start bit
from its falling edge and samples every bit there, so it tolerates about
``+-(divisor / 2 - 2) / (10 * divisor)`` of rate mismatch (4 % at divisor 217).
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["UARTReceiver", "UARTTransmitter", "MIN_DIVISOR"]

#: The shortest bit time the receiver handles (clocks): it needs a middle to sample.
MIN_DIVISOR = 4


class _UARTPart(wiring.Component):
    """What both directions share: the bit time in clocks, checked."""
    def __init__(self, divisor):
        if not isinstance(divisor, int) or divisor < MIN_DIVISOR:
            raise ValueError(f"UART divisor must be an integer >= {MIN_DIVISOR} clocks per "
                             f"bit, not {divisor!r}")
        self.divisor = divisor
        super().__init__()


class UARTReceiver(_UARTPart):
    """Receives 8N1 bytes.

    Ports:
        rx (In, 1): the line (idle high), asynchronous to the clock.
        data (Out, 8): the last byte received.
        valid (Out, 1): one clock: ``data`` holds a byte whose stop bit was high.
        error (Out, 1): one clock: a byte ended with a low stop bit (framing error, or a
            break); ``data`` is not valid.

    Parameters:
        divisor: clocks per bit (>= :data:`MIN_DIVISOR`).
    """
    rx: In(1, init=1)
    data: Out(8)
    valid: Out(1)
    error: Out(1)

    def elaborate(self, platform):
        m = Module()
        line = Signal(init=1)
        m.submodules.rx_sync = FFSynchronizer(self.rx, line, init=1)
        timer = Signal(range(self.divisor))
        bits = Signal(range(10))            # bits sampled so far: start, 8 data, stop
        shift = Signal(9)                   # data bits then the stop bit, LSB first
        m.d.sync += [self.valid.eq(0), self.error.eq(0)]
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~line):
                    # Half a bit to the middle of the start bit.
                    m.d.sync += [timer.eq(self.divisor // 2 - 1), bits.eq(0)]
                    m.next = "SAMPLE"
            with m.State("SAMPLE"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Elif(bits == 0):
                    # A start bit shorter than half a bit is a glitch.
                    with m.If(line):
                        m.next = "IDLE"
                    with m.Else():
                        m.d.sync += [timer.eq(self.divisor - 1), bits.eq(1)]
                with m.Else():
                    m.d.sync += [shift.eq(Cat(shift[1:], line)), timer.eq(self.divisor - 1),
                                 bits.eq(bits + 1)]
                    with m.If(bits == 9):
                        m.d.sync += [self.data.eq(shift[1:]), self.valid.eq(line),
                                     self.error.eq(~line)]
                        # After a break (line held low) wait for the line to idle again.
                        m.next = "IDLE"
                        with m.If(~line):
                            m.next = "BREAK"
            with m.State("BREAK"):
                with m.If(line):
                    m.next = "IDLE"
        return m


class UARTTransmitter(_UARTPart):
    """Sends 8N1 bytes.

    Ports:
        tx (Out, 1): the line (idle high).
        data (In, 8), valid (In, 1): a byte to send, taken at an edge where ``ready``.
        ready (Out, 1): the transmitter is idle (it takes ``data`` when ``valid``).

    Parameters:
        divisor: clocks per bit (>= :data:`MIN_DIVISOR`).
    """
    tx: Out(1, init=1)
    data: In(8)
    valid: In(1)
    ready: Out(1)

    def elaborate(self, platform):
        m = Module()
        shift = Signal(10, init=0x3FF)       # start, data LSB first, stop; idles high
        timer = Signal(range(self.divisor))
        left = Signal(range(11))             # bits still to send
        m.d.comb += [self.tx.eq(shift[0]), self.ready.eq(left == 0)]
        with m.If(left == 0):
            with m.If(self.valid):
                m.d.sync += [shift.eq(Cat(0, self.data, 1)), left.eq(10),
                             timer.eq(self.divisor - 1)]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Else():
            m.d.sync += [shift.eq(Cat(shift[1:], 1)), left.eq(left - 1),
                         timer.eq(self.divisor - 1)]
        return m
