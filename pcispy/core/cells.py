# SPDX-License-Identifier: BSD-2-Clause
"""The cells of the live paths, as the cores write them: the interface and its model.

A live handshake line (read in the clock it arrives) may cross only a few cells to a
flip-flop, so the cores write those paths as cells: look-up tables of up to four inputs
(:meth:`CellModel.lut4`), a choice among registered words by one to three lines
(:meth:`CellModel.live_choice`, one slice pair per bit on an FPGA), a choice among
look-up tables by one or two lines (:meth:`CellModel.table_choice`: a 6-input function in
one slice pair), nets synthesis must keep (:meth:`CellModel.kept`), and the pins' I/O-cell
flip-flops (:meth:`CellModel.io_flops`).
The cores know this interface only; the platform hands in the backend
(:func:`pcispy.core.live.cells_for`): an FPGA's primitives (pcispy.platform.ecp5.cells on
an ECP5), or :class:`CellModel`, the same functions as Amaranth logic, for simulation and
the formal proofs, which then run the very tables the FPGA gets.

A table's ``INIT`` follows the convention of the 4-input LUTs of the FPGAs this project
targets: bit D*8 + C*4 + B*2 + A is the output for inputs A, B, C, D.
"""

from amaranth import Array, Cat, Const, Signal, Value

__all__ = ["lut4_init", "two_way", "gated_two_way", "lut4_pins", "inputs_inverted",
           "check_live_choice", "check_table_choice", "CellModel"]


def lut4_init(function):
    """INIT of a 4-input LUT computing ``function(a, b, c, d)``."""
    return sum(1 << index for index in range(16)
               if function(*((index >> bit) & 1 for bit in range(4))))


def two_way(select, one, zero, _=0):
    """A table choosing between two inputs: ``select ? one : zero``."""
    return one if select else zero


def gated_two_way(select, one, zero, gate):
    """A table choosing between two inputs where ``gate`` is set, else 0."""
    return gate and (one if select else zero)


def lut4_pins(inputs):
    """``inputs`` (up to four) padded with constant 0s to a LUT's four."""
    if len(inputs) > 4:
        raise ValueError(f"a LUT4 has four inputs, not {len(inputs)}")
    return list(inputs) + [Const(0)] * (4 - len(inputs))


def inputs_inverted(function, inverted):
    """``function`` of the inputs whose indices are in ``inverted`` inverted."""
    def table(*bits):
        return function(*(bit ^ (k in inverted) for k, bit in enumerate(bits)))
    return table


def check_live_choice(selects, leaves, name):
    """The leaves of a :meth:`CellModel.live_choice` as a list in index order, of one
    width; ValueError where one slice pair cannot make the choice."""
    if not 1 <= len(selects) <= 3:
        raise ValueError(f"a slice pair chooses by one to three lines, not {len(selects)}")
    leaves = [Value.cast(leaves[index]) for index in range(1 << len(selects))]
    if any(len(leaf) != len(leaves[0]) for leaf in leaves):
        raise ValueError(f"{name}: the leaves differ in width")
    return leaves


def check_table_choice(selects, tables, name):
    """ValueError where one slice pair cannot make a :meth:`CellModel.table_choice`."""
    if not 1 <= len(selects) <= 2:
        raise ValueError(f"{name}: a slice pair chooses among tables by one or two lines, "
                         f"not {len(selects)}")
    if len(tables) != 1 << len(selects):
        raise ValueError(f"{name}: {len(selects)} lines choose among {1 << len(selects)} "
                         f"tables, not {len(tables)}")


class CellModel:
    """The live paths' cells as Amaranth logic: the backend without a platform
    (simulation, the formal proofs). An FPGA's backend subclasses it with the same
    functions as primitives and sets :attr:`fpga`."""
    #: The cells are an FPGA's primitives (instances) rather than their tables in logic.
    fpga = False

    def lut4(self, m, function, inputs, name, *, inverted=(), net=None):
        """One 4-input LUT computing ``function(a, b, c, d)`` of ``inputs`` (A first): a
        1-bit signal named ``net`` (default ``name``), from the cell named ``name``
        (unique in ``m``; where the two names are the same, the cell's takes a suffix).

        ``inverted``: the indices of inputs that are active-low pins read inside-level
        (the pads' ``live`` lines, the pin value inverted): the cell takes their inverse
        and its table inverts them back, so that synthesis cancels the two inversions and
        the pin reaches the cell without a LUT of its own in front of it."""
        if inverted:
            inputs = [~Value.cast(x) if k in inverted else x for k, x in enumerate(inputs)]
            function = inputs_inverted(function, inverted)
        output = Signal(name=net or name)
        self._table(m, function, lut4_pins(inputs), output, name)
        return output

    def _table(self, m, function, pins, output, name):
        """``output`` = ``function`` of the four ``pins``, as logic: its INIT indexed."""
        table = Const(lut4_init(function), 16)
        m.d.comb += output.eq(table.bit_select(Cat(*pins), 1))

    def inverse_lut4(self, m, function, inputs, name):
        """``function(a, b, c, d)`` of ``inputs`` from one LUT (named ``name``) that holds
        its inverse, for a value the pads invert in front of an I/O cell's register: an
        output enable (the tristate register takes 1 = float) or an active-low line's
        value. The pads' inversion cancels against the one returned here, and the
        register reads the cell with no inverter cell between."""
        return ~self.lut4(m, lambda *bits: not function(*bits), inputs, name)

    def live_choice(self, m, selects, leaves, name, *, inverted=False, gate=None):
        """The leaf that ``selects`` (one to three 1-bit values, the live lines) choose:
        on an FPGA the cells of one slice (pair) per bit, a line crossing at most three
        cells, the later lines the fastest; here the choice itself (simulation runs it for
        every bit of every word each clock).

        ``leaves``: ``{index: value}`` for every index below ``2 ** len(selects)``, bit k
        of the index being the value of ``selects[k]``; values of one width (from
        registers: they have the clock before to arrive). Returns a signal of that width
        named ``name``. ``inverted``: the selects are active-low pins read inside-level
        (as :meth:`lut4`'s ``inverted``). ``gate``: a 1-bit value from a register; the
        choice is 0 where it is 0 (on an FPGA the first cells' fourth input).
        """
        leaves = check_live_choice(selects, leaves, name)
        width = len(leaves[0])
        output = Signal(width, name=name)
        choice = Array(leaves)[Cat(*selects)]
        if gate is not None:
            choice = choice & Value.cast(gate).replicate(width)
        m.d.comb += output.eq(choice)
        return output

    def table_choice(self, m, selects, tables, name, *, inverted=()):
        """The output of the table that ``selects`` (one or two 1-bit values) choose: each
        table a :meth:`lut4` of its own inputs, on an FPGA the table's ``LUT4`` chosen by
        the slice's multiplexers (``PFUMX`` by ``selects[0]``, ``L6MUX21`` by
        ``selects[1]``): a function of up to six inputs in one slice pair, whose tables'
        inputs and selects each cross one cell reached by general routing; the tables'
        outputs reach the multiplexers on the slices' own wires.

        ``tables``: ``(function, inputs, inverted)`` per index below ``2 **
        len(selects)``, bit k of the index being the value of ``selects[k]``;
        ``inverted`` of a table as :meth:`lut4`'s. ``inverted`` (here): the indices of
        the selects that are active-low pins read inside-level. Returns a 1-bit signal
        named ``name``; its tables are the cells ``NAME_lutK``.
        """
        check_table_choice(selects, tables, name)
        leaves = [self.lut4(m, function, inputs, f"{name}_lut{index}", inverted=pins)
                  for index, (function, inputs, pins) in enumerate(tables)]
        return self._choose_table(m, selects, leaves, name, inverted)

    def _choose_table(self, m, selects, leaves, name, inverted):
        """The leaf ``selects`` index, as logic (the selects' level is their value)."""
        output = Signal(name=name)
        m.d.comb += output.eq(Array(leaves)[Cat(*selects)])
        return output

    def kept(self, m, value, name):
        """``value`` through a net named ``name`` that synthesis keeps (logic is not
        folded across it); in logic, the value itself."""
        return value

    def global_buffer(self, m, value, name):
        """``value`` (1 bit) on one of the chip's global lines, through a buffer named
        ``name``, for a control net of thousands of loads (a domain's reset, a wide
        clear or enable): an FPGA's clock network reaches every flip-flop's control inputs
        without fabric routing. In logic, the value itself."""
        return value

    def io_flops(self, direction, port, *, live=True):
        """The I/O-cell flip-flops of a pin: a component with ports ``i`` (sampled at the
        previous edge), with ``live`` also ``live`` (the pin now, for a line a core reads
        in the clock it arrives) and, bidirectional, ``o`` and ``oe`` (registered). Only an
        FPGA's backend has them: without one the pads keep fabric flip-flops."""
        raise TypeError("I/O-cell flip-flops exist only on an FPGA backend")
