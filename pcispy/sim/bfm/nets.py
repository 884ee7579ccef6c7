# SPDX-License-Identifier: BSD-2-Clause
"""Shared combinational values of the behavioural agents, computed once.

Amaranth emits an expression again at every place it is used: a decode read by ten
statements is ten copies of the same logic in the Verilog (the behavioural target was
20,900 lines, 5,300 with its shared values in signals). The agents put each value they
read in more than one place in a signal of its own with :func:`net`, which changes
nothing in behaviour (a combinational signal is its expression). Verilator merges most of
the copies itself, so this shortens elaboration and Verilator's own work (its memory by a
quarter) rather than the model's run time.
"""

from amaranth import Mux, Signal, Value

__all__ = ["net", "at_least"]


def net(m, value, name):
    """A combinational signal of module ``m`` named ``name`` carrying ``value`` (its shape
    kept)."""
    value = Value.cast(value)
    signal = Signal(value.shape(), name=name)
    m.d.comb += signal.eq(value)
    return signal


def at_least(m, name, *values):
    """A signal (``name``) holding the largest of the Amaranth ``values`` (each step in a
    signal: the running maximum is read twice per step)."""
    result = net(m, values[0], f"{name}_0")
    for i, value in enumerate(values[1:], 1):
        value = net(m, value, f"{name}_{i}_in")
        result = net(m, Mux(value > result, value, result), f"{name}_{i}")
    return result
