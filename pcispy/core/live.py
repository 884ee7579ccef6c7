# SPDX-License-Identifier: BSD-2-Clause
"""The live handshake lines: a core's decision expanded over them (Shannon expansion).

A handshake line a core must answer within the clock it arrives (TRDY#, STOP#, DEVSEL#,
FRAME#, IRDY#, ...) reaches the fabric late: at 33 MHz it has 7 ns from its pin to a
flip-flop (docs/architecture.md, "I/O timing"). Such a *live line* may therefore only
*choose*; everything it chooses among must come from registers. A core builds its
decision once per value of its live lines (a *cofactor*: the lines are constants in it,
which synthesis folds away) and lets the lines choose:

- **now**, in front of the pads' output flip-flops (:meth:`LiveLines.choose_now`): each
  cofactor's value is a kept net and the lines choose among them in hand-placed cells
  (one slice pair per bit, :meth:`~pcispy.core.cells.CellModel.live_choice`), so that a
  line crosses a fixed, small number of cells whatever synthesis makes of the rest;
- **later**, for the state (:meth:`LiveLines.choose_later`): each cofactor's next value is
  registered, the lines are registered beside them (:meth:`LiveLines.registered`) and
  the registered lines choose in the next clock. The same value clock for clock as
  registering the choice, while a live line ends at one flip-flop of its own and never
  reaches the state registers or anything behind them.

The cells are a backend handed in by the platform (:func:`cells_for`): an FPGA's
primitives where the platform offers them, the same cells as Amaranth logic
(:class:`~pcispy.core.cells.CellModel`) in simulation and in the formal proofs (which
then run the very tables the FPGA gets).
"""

import itertools

from amaranth import Mux, Signal, Value

from pcispy.core.cells import CellModel

__all__ = ["cells_for", "LiveLines"]

#: The most lines the cells of one slice pair choose by (LUT4, PFUMX, L6MUX21).
SLICE_PAIR_LINES = 3


def cells_for(platform):
    """The cell backend for ``platform``: the platform's own (``platform.get_live_cells()``,
    the hook through which a platform supplies its primitives, as Amaranth's platforms
    supply their I/O buffers), or :class:`~pcispy.core.cells.CellModel` without a platform
    (simulation, formal). A platform without the hook is refused: its synthesis would not
    keep the live paths' structure."""
    if platform is None:
        return CellModel()
    hook = getattr(platform, "get_live_cells", None)
    if hook is None:
        raise TypeError(f"no live-path cells for platform {platform!r}: give it a "
                        "get_live_cells() method returning a cell backend "
                        "(pcispy.core.cells.CellModel's interface)")
    return hook()


class LiveLines:
    """The live lines of one core, and the expansion of its decision over them.

    Parameters:
        m: the core's module (the cells and nets are its own: the reports name them
            after the core).
        cells: the cell backend (:func:`cells_for`).
        lines: ``{name: value}`` of the live lines, inside-level (the pads' ``live``
            lines: the active-low pins inverted), from the one that chooses last (the
            latest: it crosses the fewest cells) to the one that chooses first.

    Vocabulary: a *cofactor* is identified by ``values``, a tuple of 0/1 for the lines in
    order; its *tag* (``trdy1_stop0``) names what is built for it.
    """
    def __init__(self, m, cells, lines, *, inverted=True):
        self.m = m
        self.cells = cells
        self.names = tuple(lines)
        self.lines = [lines[name] for name in self.names]
        self.inverted = inverted
        self._kept = {}
        self._registered = None

    def cofactors(self):
        """Every cofactor's ``values``, all lines asserted first."""
        return list(itertools.product((1, 0), repeat=len(self.names)))

    def tag(self, values):
        """The name of cofactor ``values`` (``trdy1_stop0``; empty for no lines)."""
        return "_".join(f"{name}{value}" for name, value in zip(self.names, values))

    def value(self, values, name):
        """The value of line ``name`` in cofactor ``values`` (0 or 1)."""
        return values[self.names.index(name)]

    def kept(self, name, values, value):
        """Cofactor ``values``'s ``name``, as a kept net ``NAME_kept_TAG`` (``value``: a
        function of ``values``, built once; the net is shared by every choice of it)."""
        key = (name, values)
        if key not in self._kept:
            tag = "".join(f"_{line}{v}" for line, v in zip(self.names, values))
            self._kept[key] = self.cells.kept(self.m, value(values), f"{name}_kept{tag}")
        return self._kept[key]

    def choose(self, leaf, *, kept=None):
        """``leaf(values)`` of the cofactor the lines choose, as two-way choices, the first
        line at the root. ``kept``: keep each inner choice as a net named after it."""
        def tree(values):
            if len(values) == len(self.lines):
                return leaf(values)
            value = Value.cast(Mux(self.lines[len(values)], tree(values + (1,)),
                                   tree(values + (0,))))
            if kept is None or not values:
                return value
            return self.kept(f"{kept}", values, lambda _: value)
        return tree(())

    def choose_now(self, name, leaf, *, gate=None, staged=False):
        """``leaf(values)`` of the cofactor the live lines choose in this clock, for an
        output flip-flop: each cofactor's value a kept net (``NAME_kept_TAG``), the choice
        in the cells of one slice pair per bit (named ``NAME_live``), the last line at
        its fastest input. ``gate`` (1 bit, from a register): 0 where it is 0, in the
        first cells' free input.

        With more lines than a slice pair takes, the choice is two-way choices, the whole
        kept (``NAME_kept``) and, with ``staged``, each inner one too (``..._choice``)."""
        def cofactor(values):
            return self.kept(name, values, leaf)
        if len(self.lines) <= SLICE_PAIR_LINES:
            count = len(self.lines)
            leaves = {sum(v << (count - 1 - j) for j, v in enumerate(values)):
                      cofactor(values) for values in self.cofactors()}
            return self.cells.live_choice(self.m, self.lines[::-1], leaves, f"{name}_live",
                                          inverted=self.inverted, gate=gate)
        chosen = self.kept(name, (), lambda _: self.choose(
            cofactor, kept=f"{name}_choice" if staged else None))
        return chosen if gate is None else chosen & gate

    def registered(self):
        """The lines as they were at the previous edge (``NAME_now_q``): registered once,
        they choose the state a clock late (:meth:`choose_later`)."""
        if self._registered is None:
            lines_q = {name: Signal(name=f"{name}_now_q") for name in self.names}
            self.m.d.pci += [lines_q[name].eq(line) for name, line in zip(self.names, self.lines)]
            self._registered = LiveLines(self.m, self.cells, lines_q, inverted=False)
        return self._registered

    def register_cofactors(self, name, leaf, *, like=None):
        """``{values: register}``: ``leaf(values)`` of every cofactor registered at this
        edge (``NAME_TAG_q``; shaped ``like`` a signal, else one bit)."""
        copies = {}
        for values in self.cofactors():
            q_name = f"{name}_{self.tag(values)}_q"
            copies[values] = (Signal(1, name=q_name) if like is None
                              else Signal.like(like, name=q_name))
            self.m.d.pci += copies[values].eq(leaf(values))
        return copies

    def choose_later(self, name, leaf, *, like=None):
        """``leaf(values)`` of the cofactor the lines chose at the previous edge: each
        cofactor's value registered and the registered lines choosing. Equal, clock for
        clock, to registering :meth:`choose_now`'s value, while the lines end at their own
        flip-flops (:meth:`registered`)."""
        copies = self.register_cofactors(name, leaf, like=like)
        return self.registered().choose(lambda values: copies[values])
