# SPDX-License-Identifier: BSD-2-Clause
"""What every formal harness shares: the ``pci`` clock from a top-level input, named
assertions and covers, registered previous values, and stable free values.

A harness is the top of a formal job. Its free inputs are the behaviour of the other side
of the bus (constrained by ``Assume``); its assertions are the PCI rules our side keeps.
Each assertion and cover belongs to a named property (:data:`pcispy.formal.JOBS`);
a job enables only its own names. SymbiYosys reports a failed assertion by its source
line, so the harness records the line of every named statement (:attr:`Harness.lines`)
and the runner maps the line back to the property.

Where an unbounded proof needs to know how a block's registers relate to what the
harness saw on the pins (k-induction otherwise starts from states no run reaches), the
harness reads the block's internal signals with :func:`internal_signals` and asserts the
relation as a lemma: the block itself stays untouched.
"""

import sys

from amaranth import ClockDomain, Module, Mux, Signal
from amaranth.hdl import Assert, Assume, Cover, Fragment
from amaranth.hdl._ast import SignalSet
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from pcispy.pci.bus import PRESENTED_GATED

__all__ = ["Harness", "internal_signals", "elaborate"]


def internal_signals(fragment, *path):
    """``{name: Signal}`` of the signals used by the statements of the subfragment at
    ``path`` (submodule names) of an elaborated ``fragment``.

    Signals a block creates inside ``elaborate`` are not attributes of the block; the
    elaborated fragment's statements are the only place that names them. A name used by two
    different signals is left out (the lookup would be ambiguous). Uses Amaranth 0.5's
    fragment internals (the version pinned in pyproject.toml).
    """
    for name in path:
        fragment = next(sub for sub, sub_name, *_ in fragment.subfragments if sub_name == name)
    signals = SignalSet()
    for statements in fragment.statements.values():
        for statement in statements:
            signals |= statement._lhs_signals() | statement._rhs_signals()
    found, clashes = {}, set()
    for signal in signals:
        if signal.name in found and found[signal.name] is not signal:
            clashes.add(signal.name)
        found[signal.name] = signal
    return {name: signal for name, signal in found.items() if name not in clashes}


def elaborate(component, platform):
    """``component`` elaborated (a :class:`Fragment`, usable as a submodule), so that
    :func:`internal_signals` can read it."""
    return Fragment.get(component, platform)


class Harness(wiring.Component):
    """Base of the formal harnesses (clock domain ``pci`` from the ``clk`` input).

    Ports:
        clk (In, 1): the PCI clock (SymbiYosys steps every flip-flop each step).
        Subclasses add the free inputs that model the rest of the bus.

    Parameters:
        asserts: names of the properties whose assertions this job checks.
        covers: names of the cover statements this job tries to reach.
        mutation: a deliberate defect (harness-specific name) for the test that shows
            the proofs can fail; None for the real checks.
    """
    MUTATIONS = ()

    def __init__(self, members, *, asserts=(), covers=(), mutation=None):
        if mutation is not None and mutation not in self.MUTATIONS:
            raise ValueError(f"{type(self).__name__}: unknown mutation {mutation!r}; "
                             f"known: {', '.join(self.MUTATIONS)}")
        self.asserts = frozenset(asserts)
        self.covers = frozenset(covers)
        self.mutation = mutation
        #: ``{(file, line): property name}`` of every statement added.
        self.lines = {}
        #: Every property and cover name the harness defines (enabled or not).
        self.defined = set()
        super().__init__({"clk": In(1), **members})

    # --- building blocks ---------------------------------------------------------------
    def _module(self):
        m = Module()
        m.domains.pci = domain = ClockDomain("pci", reset_less=True)
        m.d.comb += domain.clk.eq(self.clk)
        self._m = m
        started = Signal()
        m.d.pci += started.eq(1)
        #: 0 in the first step of a trace from the initial state (BMC, cover).
        self.started = started
        return m

    def _record(self, name):
        caller = sys._getframe(2)
        key = (caller.f_code.co_filename, caller.f_lineno)
        if self.lines.setdefault(key, name) != name:
            # SymbiYosys reports a statement by its source line only.
            raise ValueError(f"{key[0]}:{key[1]} states both {self.lines[key]!r} and "
                             f"{name!r}: one property per source line")
        self.defined.add(name)

    def check(self, name, condition):
        """Assert ``condition`` in every step, as part of property ``name``."""
        self._record(name)
        if name in self.asserts:
            self._m.d.comb += Assert(condition, name, src_loc_at=1)

    def check_released_zero(self, bus):
        """Property ``released_zero`` of a core's ``bus`` port: the board ORs the cores'
        values on the :data:`~pcispy.pci.bus.PRESENTED_GATED` lines (AD, the
        handshake lines) without their enables
        (:func:`~pcispy.board.top.merge_bus_drivers`), so a value not driven must be 0."""
        for name in PRESENTED_GATED:
            line = getattr(bus, name, None)
            if line is not None:
                self.check("released_zero", line.oe | (line.o == 0))

    def cover(self, name, condition):
        """Cover ``condition`` (the job shows a trace reaching it)."""
        self._record(name)
        if name in self.covers:
            self._m.d.comb += Cover(condition, name, src_loc_at=1)

    def assume(self, condition):
        """The rest of the bus behaves legally: ``condition`` holds in every step."""
        self._m.d.comb += Assume(condition, src_loc_at=1)

    def past(self, value, init=0, name=None):
        """``value`` one clock ago (``init`` in the first step)."""
        q = Signal.like(value, init=init, name=name) if name else Signal.like(value, init=init)
        self._m.d.pci += q.eq(value)
        return q

    def held(self, value, load):
        """``value`` in a clock where ``load`` is high, else its value in the last such
        clock (a register loaded with ``value``, read through in the loading clock)."""
        q = Signal.like(value)
        now = Mux(load, value, q)
        self._m.d.pci += q.eq(now)
        return now

    def sticky(self, condition, clear):
        """``condition`` was high in an earlier clock since the last clock ``clear`` was
        (0 in that clock itself)."""
        q = Signal()
        self._m.d.pci += q.eq(Mux(clear, 0, q) | condition)
        return Mux(clear, 0, q)

    def clocks_since(self, clear, restart=0, limit=255):
        """Clocks since the last clock ``clear`` was high (0 in that clock), counting up to
        ``limit`` and staying there; after a clock with ``restart`` high it counts from 1."""
        q = Signal(range(limit + 1))
        now = Mux(clear, 0, q)
        self._m.d.pci += q.eq(Mux(restart, 1, Mux(now >= limit, limit, now + 1)))
        return now

    def stable(self, value):
        """A free value that stays the same in every step after the first."""
        q = self.past(value)
        self.assume(~self.started | (value == q))
        return value
