# SPDX-License-Identifier: BSD-2-Clause
"""The target's small storage in flip-flops: a register FIFO, and the retimed register and
FIFO that keep the live handshake lines out of wide state.

Timing (docs/architecture.md, "I/O timing"): the live IRDY# and FRAME# may only choose
among values made from registers. A register whose next value depends on them is kept
as two candidates and a registered one-bit event (:class:`Retimed`); a FIFO whose pop or
flush depends on them applies the registered pop and flush a clock late and shows their
effect combinationally (:class:`RetimedFIFO`). Both hold the same values clock for clock
as registering the live choice, while the live lines reach only one-bit registers.

Each is built into the caller's module ``m`` (clock domain ``pci``); the signals are
named after ``name`` (or the retimed signal), as the reports and the formal proofs know
them.
"""

from amaranth import Array, Mux, Signal

__all__ = ["RegisterFIFO", "Retimed", "RetimedFIFO"]


class RegisterFIFO:
    """A small FIFO in flip-flops with a combinational head and a flush.

    Inputs (the caller drives them): ``push`` with ``w_data``, ``pop``, ``flush``.
    Outputs: ``head`` (the oldest word), ``nonempty``, ``level``.
    """
    def __init__(self, m, name, shape, depth):
        self.depth = depth
        self.storage = Array(Signal(shape, name=f"{name}_{i}") for i in range(depth))
        self.rp = Signal(range(depth), name=f"{name}_rp")
        self.wp = Signal(range(depth), name=f"{name}_wp")
        self.level = Signal(range(depth + 1), name=f"{name}_level")
        self.push = Signal(name=f"{name}_push")
        self.pop = Signal(name=f"{name}_pop")
        self.flush = Signal(name=f"{name}_flush")
        self.w_data = Signal(shape, name=f"{name}_w_data")
        self.head = self.storage[self.rp]
        self.nonempty = self.level != 0
        with m.If(self.push):
            m.d.pci += [self.storage[self.wp].eq(self.w_data),
                        self.wp.eq(Mux(self.wp == depth - 1, 0, self.wp + 1))]
        with m.If(self.pop):
            m.d.pci += self.rp.eq(Mux(self.rp == depth - 1, 0, self.rp + 1))
        m.d.pci += self.level.eq(self.level + self.push - self.pop)
        with m.If(self.flush):
            m.d.pci += [self.rp.eq(0), self.wp.eq(0), self.level.eq(0)]


class Retimed:
    """A register whose next value depends on a live handshake line, moved behind the
    register: both candidates are registered and a registered one-bit event picks one in
    the next clock. ``value`` (a comb signal) then equals what registering
    ``Mux(event, when_set, when_clear)`` would hold, clock for clock, while the live line
    reaches only the one-bit event register instead of every bit of ``value``.
    """
    def __init__(self, m, event_q, value):
        self._m = m
        self.when_set = Signal.like(value, name=f"{value.name}_when_set")
        self.when_clear = Signal.like(value, name=f"{value.name}_when_clear")
        m.d.comb += value.eq(Mux(event_q, self.when_set, self.when_clear))

    def update(self, when_set, when_clear):
        """At this edge: the next value is ``when_set`` if the event happens, else
        ``when_clear`` (neither may depend on a live line)."""
        self._m.d.pci += [self.when_set.eq(when_set), self.when_clear.eq(when_clear)]


class RetimedFIFO:
    """A small FIFO in flip-flops (combinational head) whose ``pop`` and ``flush`` may
    depend on the live handshake: they are registered and applied to the pointers in the
    next clock, while ``rp``, ``level`` and ``head`` already show their effect (the same
    values as popping or flushing at the edge). ``push`` writes the storage and must not
    depend on a live line. A word may be pushed and popped in the same clock even when the
    FIFO is empty (it goes straight through ``head``'s bypass in the caller). ``pop_q`` and
    ``flush_q`` are the registered pop and flush, which the caller keeps."""
    def __init__(self, m, name, shape, depth, pop_q, flush_q):
        self.storage = Array(Signal(shape, name=f"{name}_{i}") for i in range(depth))
        self.rp = Signal(range(depth), name=f"{name}_rp")
        self.wp = Signal(range(depth), name=f"{name}_wp")
        self.level = Signal(range(depth + 1), name=f"{name}_level")
        self.push = Signal(name=f"{name}_push")
        self.w_data = Signal(shape, name=f"{name}_w_data")
        # Pointers before the previous edge's pop and flush, which are kept registered.
        rp_before = Signal(range(depth), name=f"{name}_rp_before")
        wp_before = Signal(range(depth), name=f"{name}_wp_before")
        level_before = Signal(range(depth + 1), name=f"{name}_level_before")

        def advance(pointer):
            return Mux(pointer == depth - 1, 0, pointer + 1)
        m.d.comb += [
            self.rp.eq(Mux(flush_q, 0, Mux(pop_q, advance(rp_before), rp_before))),
            self.wp.eq(Mux(flush_q, 0, wp_before)),
            self.level.eq(Mux(flush_q, 0, level_before - pop_q)),
        ]
        with m.If(self.push):
            m.d.pci += self.storage[self.wp].eq(self.w_data)
        m.d.pci += [
            rp_before.eq(self.rp), wp_before.eq(Mux(self.push, advance(self.wp), self.wp)),
            level_before.eq(self.level + self.push),
        ]
        self.head = self.storage[self.rp]
        self.nonempty = self.level != 0
