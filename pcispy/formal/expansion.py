# SPDX-License-Identifier: BSD-2-Clause
"""The initiator's Shannon expansion changes nothing but the netlist's shape.

On an FPGA the :class:`~pcispy.core.initiator.Initiator` builds its decision once
per value of the live handshake lines and lets the lines select among the copies
(``expand_live``), so that a late pin meets only the last multiplexers in front of the
flip-flops; in simulation and in the other formal harnesses it builds the decision once,
with the lines as inputs. The two must be the same machine, clock for clock.

This harness holds one initiator of each kind per bus width, feeds both the same free
inputs (any value of every input in every clock: no assumption about the bus at all) and
asserts that every output is the same (``expansion_exact``; of AD's decision, the word
and enable it decides). The expanded build
registers every cofactor's next state and the lines, and chooses its state from those
registers one clock later; the folded build registers its one next state. The lemma
``lemma_same_state``, every register of the folded build equal to the expanded build's
signal of that name (its chosen state), makes the induction unbounded: with equal state
and equal inputs, the cofactor the registered lines choose is the folded build's next
state. The inputs are ports of the harness: an Amaranth signal that nothing drives is a
constant (its initial value), and with constant inputs the equivalence would hold
without saying anything. The cover ``data_phase`` (job ``expansion_cover``) shows that
the solver does choose them.
"""

from amaranth import Value
from amaranth.lib import data
from amaranth.lib.wiring import In

from pcispy.core.initiator import Handshake, Initiator
from pcispy.formal.harness import Harness, elaborate, internal_signals

__all__ = ["ExpansionHarness"]

#: The bus widths checked: the 32-bit board and the 64-bit one (ACK64# is then live too).
WIDTHS = (32, 64)


def _inputs_and_outputs(component):
    """(inputs, outputs) of ``component``'s ports as flat lists of (path, value)."""
    inputs, outputs = [], []
    for path, member, value in component.signature.flatten(component):
        (inputs if member.flow == In else outputs).append((path, value))
    return inputs, outputs


def _clocked_registers(fragment):
    """``{name: Signal}`` of the signals the fragment assigns in its ``pci`` domain."""
    registers = {}
    for statement in fragment.statements.get("pci", ()):
        for signal in statement._lhs_signals():
            registers[signal.name] = signal
    return registers


def _input_name(width, path):
    return f"in{width}_" + "_".join(map(str, path))


class ExpansionHarness(Harness):
    """Folded and expanded initiators side by side, inputs shared and free.

    Ports: ``clk`` and one input per input of each initiator (``in32_now``,
    ``in64_desc_payload``, ...): the solver chooses them freely in every step.

    Parameters: see :class:`~pcispy.formal.harness.Harness`. Mutation
    ``swapped_stop_cofactors`` hands the expanded initiators STOP# inverted: the same as
    a selection tree that swaps the STOP# cofactors, the defect the proof is there for.
    """
    MUTATIONS = ("swapped_stop_cofactors",)

    def __init__(self, **kwargs):
        # Two copies of AD's decision terms (the board has one per pin pair): each copy
        # must decide alike.
        self._pairs = {width: (Initiator(width, expand_live=False, ad_groups=2),
                               Initiator(width, expand_live=True, ad_groups=2))
                       for width in WIDTHS}
        # Every input of the initiators is a port of the harness: a port is what the
        # solver may choose in every step (a signal nothing drives is its initial value).
        ports = {_input_name(width, path): In(Value.cast(value).shape())
                 for width, (folded, _) in self._pairs.items()
                 for path, value in _inputs_and_outputs(folded)[0]}
        super().__init__(ports, **kwargs)

    def elaborate(self, platform):
        m = self._module()
        for width, (folded, expanded) in self._pairs.items():
            m.submodules[f"folded{width}"] = folded_fragment = elaborate(folded, platform)
            m.submodules[f"expanded{width}"] = expanded_fragment = elaborate(expanded, platform)
            folded_in, folded_out = _inputs_and_outputs(folded)
            expanded_in, expanded_out = _inputs_and_outputs(expanded)
            for (path, a), (_, b) in zip(folded_in, expanded_in):
                free = getattr(self, _input_name(width, path))
                flip = 0
                if self.mutation == "swapped_stop_cofactors" and path == ("now",):
                    flip = 1 << data.Layout.cast(Handshake)["stop"].offset
                m.d.comb += [a.eq(free), b.eq(free ^ flip)]
            for (path, a), (_, b) in zip(folded_out, expanded_out):
                if path == ("ad_decision",):
                    # The parts differ (the folded build takes its word whole); what the
                    # pads make of them must not, nor the copies of the decision.
                    for value in ("word", "enable"):
                        self.check("expansion_exact",
                                   getattr(a, value)() == getattr(b, value)())
                    copies = b.take_high
                    self.check("expansion_exact",
                               copies == copies[0].replicate(len(copies)))
                    continue
                self.check("expansion_exact", Value.cast(a) == Value.cast(b))
            # The inputs really are free: the expanded build moves data.
            self.cover("data_phase", expanded.events.phase)
            ours = internal_signals(expanded_fragment)
            for name, register in _clocked_registers(folded_fragment).items():
                self.check("lemma_same_state", register == ours[name])
        return m
