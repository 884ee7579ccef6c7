# SPDX-License-Identifier: BSD-2-Clause
"""The PCI clock measured against the board oscillator.

A PCI bus runs at any clock up to its nominal 33 (or 66) MHz; PCI 3.0 lets a system
slow it down or stop it, and many real buses run at 33.0 or 33.3 MHz or below. Every
figure the host derives from clock counts (MB/s, a latency in microseconds, the time
axis of a trace) is only as right as the clock it multiplies by, so the board measures
it rather than trusting the nominal value.

:class:`OscillatorGate` (domain ``sync``, the board oscillator of known frequency)
toggles a line every ``2**gate_log2`` microseconds; :class:`ClockMeter` (domain ``pci``)
counts PCI clocks between two toggles. The count is the PCI clock in units of
``2**-gate_log2`` MHz (the default gate, 1024 us, resolves 1 kHz). The line crosses the
domains through a synchroniser: each toggle is seen two or three PCI clocks after it
happens, so a count can be one off; the toggle is slow (every gate), so neither clock
can alias the other.
"""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from pcispy.board.registers import CLOCK_COUNT_BITS as COUNT_BITS, DEFAULT_GATE_LOG2

__all__ = ["OscillatorGate", "ClockMeter", "DEFAULT_GATE_LOG2", "COUNT_BITS"]


class OscillatorGate(wiring.Component):
    """Toggles :attr:`toggle` every ``2**gate_log2`` microseconds of domain ``sync``.

    Ports:
        toggle (Out, 1): changes once per gate (a square wave of twice the gate's period).

    Parameters:
        oscillator_hz: the frequency of domain ``sync``; a microsecond must be a whole
            number of its clocks (a gate of any other length would make every count wrong
            by the same fraction).
        gate_log2: log2 of the gate in microseconds.
    """
    def __init__(self, oscillator_hz, gate_log2=DEFAULT_GATE_LOG2):
        per_us = oscillator_hz / 1_000_000
        if per_us != int(per_us) or per_us < 1:
            raise ValueError(f"an oscillator of {oscillator_hz} Hz has no whole number of "
                             f"clocks in a microsecond: it cannot gate the clock meter")
        self.gate_clocks = int(per_us) << gate_log2
        self.gate_log2 = gate_log2
        super().__init__({"toggle": Out(1)})

    def elaborate(self, platform):
        m = Module()
        left = Signal(range(self.gate_clocks), init=self.gate_clocks - 1)
        with m.If(left == 0):
            m.d.sync += [left.eq(self.gate_clocks - 1), self.toggle.eq(~self.toggle)]
        with m.Else():
            m.d.sync += left.eq(left - 1)
        return m


class ClockMeter(wiring.Component):
    """Counts clocks of its domain between two changes of :attr:`gate` (any domain).

    Ports:
        gate (In, 1): :attr:`OscillatorGate.toggle`, from an unrelated clock.
        count (Out, count_bits): clocks of the last whole gate; 0 until two changes
            have been seen, and again when no change came for ``2**count_bits`` clocks
            (no oscillator gates the meter: the simulated system leaves it unconnected).

    Parameters:
        count_bits: width of the count (:data:`COUNT_BITS` on the board).
    """
    def __init__(self, count_bits=COUNT_BITS):
        self.count_bits = count_bits
        super().__init__({"gate": In(1), "count": Out(count_bits)})

    def elaborate(self, platform):
        m = Module()
        gate = Signal()
        m.submodules.gate_sync = FFSynchronizer(self.gate, gate, o_domain="sync")
        gate_seen = Signal()
        # Clocks since the last change, from 1; "started": a change has been seen, so
        # the next one closes a whole gate.
        running = Signal(self.count_bits + 1, init=1)
        started = Signal()
        m.d.sync += gate_seen.eq(gate)
        with m.If(gate != gate_seen):
            m.d.sync += [running.eq(1), started.eq(1)]
            with m.If(started):
                m.d.sync += self.count.eq(running)
        with m.Elif(running[-1]):
            # The gate stopped: no measurement (and no count of a gate that never closed).
            m.d.sync += [self.count.eq(0), started.eq(0)]
        with m.Else():
            m.d.sync += running.eq(running + 1)
        return m
