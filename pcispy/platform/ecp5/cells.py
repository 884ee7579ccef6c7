# SPDX-License-Identifier: BSD-2-Clause
"""ECP5 logic cells for the live paths, instantiated rather than synthesised.

A live handshake line (read in the clock it arrives) has 7 ns from its pin to a
flip-flop at 33 MHz, so the logic between them must be few cells deep. Synthesis does
not keep to a structure written for that: abc maps the whole module at once, and a
``keep`` attribute keeps a net but not the logic boundary (its users may be rebuilt from
whatever feeds it: the master's FRAME# choice, written as two-way choices each a kept
net, comes out 5 to 7 cells deep from DEVSEL#, and the depth moves with unrelated
changes). A cell instantiated here is a primitive to synthesis: the live line meets
exactly the cells written.

The cores take them as a backend object (:class:`ECP5Cells` on an ECP5 platform,
:class:`ECP5CellModel` elsewhere; :func:`pcispy.core.live.cells_for` chooses). Every
function takes ``fpga``: on an FPGA the ECP5 primitives (``LUT4``, ``PFUMX``,
``L6MUX21``, with ``keep``); elsewhere the same functions in logic: a ``LUT4`` as its
``INIT`` table indexed by its inputs, so that simulation and the formal proofs run the
tables the FPGA gets, and :func:`live_choice` as the plain choice (one per word, where
the cells are one slice per bit: the simulations' time), which ``test_cells.py`` has
yosys prove the cells equal to. The primitives behave as yosys' ECP5 models
(``share/ecp5/common_sim.vh``): ``LUT4`` output ``Z`` is ``INIT`` bit D*8 + C*4 + B*2 +
A; ``PFUMX``: ``Z = C0 ? ALUT : BLUT``; ``L6MUX21``: ``Z = SD ? D1 : D0``. Input A of a
``LUT4`` is its fastest (0.14 ns against 0.38 ns for C and D), and a multiplexer's
select the fastest way through a slice: the live lines take those.
"""

from amaranth import Array, Cat, Const, Signal, Value
from amaranth.hdl import Instance

__all__ = ["lut4_init", "two_way", "gated_two_way", "lut4", "enable_lut4", "kept_lut4",
           "live_choice", "ECP5Cells", "ECP5CellModel"]


def lut4_init(function):
    """INIT of an ECP5 ``LUT4`` computing ``function(a, b, c, d)``."""
    return sum(1 << index for index in range(16)
               if function(*((index >> bit) & 1 for bit in range(4))))


def _pins(inputs):
    if len(inputs) > 4:
        raise ValueError(f"a LUT4 has four inputs, not {len(inputs)}")
    return list(inputs) + [Const(0)] * (4 - len(inputs))


def kept_lut4(function, inputs, output):
    """An ECP5 ``LUT4`` instance computing ``function(a, b, c, d)`` of ``inputs`` (up to
    four, A first; the rest tied to 0) onto ``output``, with ``keep``: synthesis does not
    merge it with its copies or into its loads. FPGA only (see :func:`lut4`)."""
    pins = _pins(inputs)
    return Instance("LUT4", p_INIT=Const(lut4_init(function), 16), a_keep=1,
                    i_A=pins[0], i_B=pins[1], i_C=pins[2], i_D=pins[3], o_Z=output)


def two_way(select, one, zero, _=0):
    """A ``LUT4`` table choosing between two inputs: ``select ? one : zero``."""
    return one if select else zero


def _inputs_inverted(function, inverted):
    """``function`` of the inputs whose indices are in ``inverted`` inverted."""
    def table(*bits):
        return function(*(bit ^ (k in inverted) for k, bit in enumerate(bits)))
    return table


def lut4(m, function, inputs, name, *, fpga, inverted=()):
    """One ``LUT4`` computing ``function(a, b, c, d)`` of ``inputs`` (A first): a 1-bit
    signal named ``name`` (also the cell's name, unique in ``m``).

    ``inverted``: the indices of inputs that are active-low pins read inside-level (the
    pads' ``live`` lines, the pin value inverted): the cell takes their inverse and its
    table inverts them back, so that synthesis cancels the two inversions and the pin
    reaches the cell without a LUT of its own in front of it."""
    if inverted:
        inputs = [~Value.cast(x) if k in inverted else x for k, x in enumerate(inputs)]
        function = _inputs_inverted(function, inverted)
    output = Signal(name=name)
    if fpga:
        m.submodules[name] = kept_lut4(function, inputs, output)
    else:
        table = Const(lut4_init(function), 16)
        m.d.comb += output.eq(table.bit_select(Cat(*_pins(inputs)), 1))
    return output


def enable_lut4(m, function, inputs, name, *, fpga):
    """An output enable ``function(a, b, c, d)`` of ``inputs`` from one ``LUT4`` (named
    ``name``) that holds its inverse, as an I/O cell's tristate register takes an enable
    (1 = float): the pads' inversion in front of that register cancels against the one
    returned here, and the register reads the cell with no inverter between."""
    return ~lut4(m, lambda *bits: not function(*bits), inputs, name, fpga=fpga)


def _mux(m, kind, name, select, one, zero):
    """A wide-function multiplexer of a slice (FPGA only): ``select ? one : zero``."""
    output = Signal(name=name)
    ports = {"PFUMX": ("C0", "ALUT", "BLUT"), "L6MUX21": ("SD", "D1", "D0")}[kind]
    m.submodules[name] = Instance(kind, a_keep=1, o_Z=output, **{
        f"i_{port}": value for port, value in zip(ports, (select, one, zero))})
    return output


def gated_two_way(select, one, zero, gate):
    """A ``LUT4`` table choosing between two inputs where ``gate`` is set, else 0."""
    return gate and (one if select else zero)


def live_choice(m, selects, leaves, name, *, fpga, inverted=False, gate=None):
    """The leaf that ``selects`` (one to three 1-bit values, the live lines) choose, as
    the cells of one slice (pair) per bit: ``LUT4``s choosing by ``selects[0]`` (input
    A) between two leaves each, a ``PFUMX`` by ``selects[1]``, an ``L6MUX21`` by
    ``selects[2]``: a line crosses at most three cells, the later ones the fastest.

    ``leaves``: ``{index: value}`` for every index below ``2 ** len(selects)``, bit k of
    the index being the value of ``selects[k]``; values of one width (from registers:
    they have the clock before to arrive). Returns a signal of that width named
    ``name`` (the cells' names start with it). ``inverted``: the selects are active-low
    pins read inside-level (as :func:`lut4`'s ``inverted``): the cells take their
    inverse and choose the other way round. ``gate``: a 1-bit value from a register;
    the choice is 0 where it is 0 (the first cells' fourth input: no cell of its own).
    """
    if not 1 <= len(selects) <= 3:
        raise ValueError(f"a slice pair chooses by one to three lines, not {len(selects)}")
    leaves = [Value.cast(leaves[index]) for index in range(1 << len(selects))]
    width = len(leaves[0])
    if any(len(leaf) != width for leaf in leaves):
        raise ValueError(f"{name}: the leaves differ in width")
    output = Signal(width, name=name)
    if not fpga:
        # The choice itself: simulation runs it for every bit of every word each clock,
        # and test_cells proves the cells equal to it.
        choice = Array(leaves)[Cat(*selects)]
        if gate is not None:
            choice = choice & Value.cast(gate).replicate(width)
        m.d.comb += output.eq(choice)
        return output
    first = (0,) if inverted else ()
    for bit in range(width):
        level = [lut4(m, two_way if gate is None else gated_two_way,
                      [selects[0], leaves[index + 1][bit], leaves[index][bit],
                       *(() if gate is None else (gate,))],
                      f"{name}_b{bit}_lut{index // 2}", fpga=True, inverted=first)
                 for index in range(0, len(leaves), 2)]
        for depth, kind in ((1, "PFUMX"), (2, "L6MUX21")):
            if depth < len(selects):
                select = ~Value.cast(selects[depth]) if inverted else selects[depth]
                level = [_mux(m, kind, f"{name}_b{bit}_{kind.lower()}{index // 2}", select,
                              *((level[index], level[index + 1]) if inverted
                                else (level[index + 1], level[index])))
                         for index in range(0, len(level), 2)]
        m.d.comb += output[bit].eq(level[0])
    return output


class ECP5Cells:
    """The live paths' cells as ECP5 primitives: the backend the cores are handed on an
    ECP5 platform (:func:`pcispy.core.live.cells_for`).

    The cores write their live paths against this interface only (``lut4``,
    ``enable_lut4``, ``live_choice``, ``kept``), so that the protocol code does not know
    whether it runs on an FPGA: :class:`ECP5CellModel` is the same interface as logic."""
    #: The cells are primitives (instances) rather than their tables in logic.
    fpga = True

    def lut4(self, m, function, inputs, name, *, inverted=()):
        """See :func:`lut4`."""
        return lut4(m, function, inputs, name, fpga=self.fpga, inverted=inverted)

    def enable_lut4(self, m, function, inputs, name):
        """See :func:`enable_lut4`."""
        return enable_lut4(m, function, inputs, name, fpga=self.fpga)

    def live_choice(self, m, selects, leaves, name, *, inverted=False, gate=None):
        """See :func:`live_choice`."""
        return live_choice(m, selects, leaves, name, fpga=self.fpga, inverted=inverted,
                           gate=gate)

    def kept(self, m, value, name):
        """``value`` through a net named ``name`` that synthesis keeps: logic is not
        folded across it (the live lines are not decoded again in front of it)."""
        net = Signal(Value.cast(value).shape(), name=name, attrs={"keep": 1})
        m.d.comb += net.eq(value)
        return net


class ECP5CellModel(ECP5Cells):
    """:class:`ECP5Cells` as Amaranth logic, for simulation and the formal proofs: every
    ``LUT4`` is its ``INIT`` table indexed by its inputs (the tables the FPGA gets),
    :func:`live_choice` the plain choice, and a kept net the value itself (nothing to
    keep it from)."""
    fpga = False

    def kept(self, m, value, name):
        return value
