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

:class:`ECP5Cells` is the cell backend an ECP5 platform hands the cores (the platform's
``get_live_cells``, :func:`pcispy.core.live.cells_for`): the interface of
:class:`pcispy.core.cells.CellModel` as the ECP5 primitives ``LUT4``, ``PFUMX`` and
``L6MUX21`` (with ``keep``), and the I/O-cell flip-flops of :mod:`.iocell`. The model runs
the same ``INIT`` tables in logic, and ``test_cells.py`` has yosys prove the cells equal to
the plain choice. The primitives behave as yosys' ECP5 models (``share/ecp5/common_sim.vh``):
``LUT4`` output ``Z`` is ``INIT`` bit D*8 + C*4 + B*2 + A; ``PFUMX``: ``Z = C0 ? ALUT :
BLUT``; ``L6MUX21``: ``Z = SD ? D1 : D0``. Input A of a ``LUT4`` is its fastest (0.14 ns
against 0.38 ns for C and D), and a multiplexer's select the fastest way through a slice:
the live lines take those.
"""

from amaranth import Const, Signal, Value
from amaranth.hdl import Instance

from pcispy.core.cells import CellModel, check_live_choice, gated_two_way, lut4_init, lut4_pins, two_way
from pcispy.platform.ecp5.iocell import IOCellFlops

__all__ = ["kept_lut4", "ECP5Cells"]


def kept_lut4(function, inputs, output):
    """An ECP5 ``LUT4`` instance computing ``function(a, b, c, d)`` of ``inputs`` (up to
    four, A first; the rest tied to 0) onto ``output``, with ``keep``: synthesis does not
    merge it with its copies or into its loads."""
    pins = lut4_pins(inputs)
    return Instance("LUT4", p_INIT=Const(lut4_init(function), 16), a_keep=1,
                    i_A=pins[0], i_B=pins[1], i_C=pins[2], i_D=pins[3], o_Z=output)


def _mux(m, kind, name, select, one, zero):
    """A wide-function multiplexer of a slice: ``select ? one : zero``."""
    output = Signal(name=name)
    ports = {"PFUMX": ("C0", "ALUT", "BLUT"), "L6MUX21": ("SD", "D1", "D0")}[kind]
    m.submodules[name] = Instance(kind, a_keep=1, o_Z=output, **{
        f"i_{port}": value for port, value in zip(ports, (select, one, zero))})
    return output


class ECP5Cells(CellModel):
    """The live paths' cells as ECP5 primitives (see the module doc and
    :class:`~pcispy.core.cells.CellModel` for each function's contract)."""
    fpga = True

    def _table(self, m, function, pins, output, name):
        m.submodules[name] = kept_lut4(function, pins, output)

    def live_choice(self, m, selects, leaves, name, *, inverted=False, gate=None):
        """Per bit: ``LUT4``s choosing by ``selects[0]`` (input A) between two leaves each,
        a ``PFUMX`` by ``selects[1]``, an ``L6MUX21`` by ``selects[2]``; ``gate`` in the
        ``LUT4``s' fourth input (no cell of its own)."""
        leaves = check_live_choice(selects, leaves, name)
        output = Signal(len(leaves[0]), name=name)
        first = (0,) if inverted else ()
        for bit in range(len(leaves[0])):
            level = [self.lut4(m, two_way if gate is None else gated_two_way,
                               [selects[0], leaves[index + 1][bit], leaves[index][bit],
                                *(() if gate is None else (gate,))],
                               f"{name}_b{bit}_lut{index // 2}", inverted=first)
                     for index in range(0, len(leaves), 2)]
            for depth, kind in ((1, "PFUMX"), (2, "L6MUX21")):
                if depth < len(selects):
                    select = ~Value.cast(selects[depth]) if inverted else selects[depth]
                    level = [_mux(m, kind, f"{name}_b{bit}_{kind.lower()}{index // 2}",
                                  select, *((level[index], level[index + 1]) if inverted
                                            else (level[index + 1], level[index])))
                             for index in range(0, len(level), 2)]
            m.d.comb += output[bit].eq(level[0])
        return output

    def _choose_table(self, m, selects, level, name, inverted):
        """The tables' ``LUT4``s in pairs into a ``PFUMX`` by ``selects[0]``, the two
        ``PFUMX`` into an ``L6MUX21`` by ``selects[1]`` (the last multiplexer the cell
        ``name``): the shape nextpnr packs into one slice (pair)."""
        kinds = ("PFUMX", "L6MUX21")[:len(selects)]
        for depth, kind in enumerate(kinds):
            select, flip = selects[depth], depth in inverted
            if flip:
                # The cell reads the pin itself: its operands swap instead.
                select = ~Value.cast(select)
            level = [_mux(m, kind, name if depth == len(kinds) - 1
                          else f"{name}_{kind.lower()}{index // 2}", select,
                          *((level[index], level[index + 1]) if flip
                            else (level[index + 1], level[index])))
                     for index in range(0, len(level), 2)]
        return level[0]

    def kept(self, m, value, name):
        net = Signal(Value.cast(value).shape(), name=name, attrs={"keep": 1})
        m.d.comb += net.eq(value)
        return net

    def io_flops(self, direction, port, *, live=True):
        return IOCellFlops(direction, port, live=live)

    def global_buffer(self, m, value, name):
        """Through a ``DCCA``: nextpnr routes its output on the clock network, which
        reaches the clock, clock-enable and LSR (set/reset) inputs of every slice."""
        output = Signal(name=f"{name}_global")
        m.submodules[name] = Instance("DCCA", i_CLKI=value, i_CE=Const(1), o_CLKO=output)
        return output
