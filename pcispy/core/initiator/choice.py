# SPDX-License-Identifier: BSD-2-Clause
"""The master's decision expanded over the live lines, and the lines' choice among the
copies: now for the outputs, a clock later for the state.

Timing: a live line arrives late in its clock, so it may only *choose* among values
computed from registers. The decision (:func:`~.decision.decide`) is built once per
combination of the lines that matter in the phase (:class:`Cofactors`; constants, folded
by synthesis): while idle only "GNT# with the bus idle" counts (two copies, the *idle
family*); in a transaction TRDY#, STOP#, DEVSEL#, GNT# (and ACK64#) do (16 or 32 copies,
the *busy family*). Folded (``expand_live`` off), it is built once per family with the
lines as inputs: the same function, an eighth of the logic.
"""

import itertools

from amaranth import Cat, Mux, Signal, Value

from pcispy.core.cells import gated_two_way, two_way
from pcispy.core.live import SLICE_PAIR_LINES, LiveLines
from pcispy.core.initiator.decision import decide
from pcispy.core.initiator.interface import _Phase

__all__ = ["Cofactors"]


class Cofactors:
    """The decision's two families of cofactors and the live lines that choose.

    Parameters: the initiator's module ``m`` and component ``ini`` (its ports), the
    ``cells`` backend, the :class:`~.decision.Machine` the decision reads, and
    ``expand`` (build per value of the live lines, else once with the lines as inputs).

    Attributes: ``is_idle`` (the phase is IDLE: the idle family applies), ``gnt_counts``
    (GNT# as it counts: while idle only with the bus idle; one hand-placed LUT4),
    ``idle_family`` (``{(go,): (next state, outputs)}``), ``busy_family`` (``{values of
    live_names: (next state, outputs)}``), ``live_names`` (the busy family's lines),
    ``target_lines`` (the target's lines as :class:`~pcispy.core.live.LiveLines`, TRDY#
    choosing last; GNT# chooses after them). Folded, each family has the one key ``()``.
    """
    def __init__(self, m, ini, cells, machine, expand):
        self.m = m
        self.cells = cells
        self.expand = expand
        now, wide_bus = ini.now, machine.wide_bus
        live_names = ["trdy", "stop", "devsel", "gnt"] + (["ack64"] if wide_bus else [])
        target_names = [name for name in live_names if name != "gnt"]
        is_idle = machine.txn.phase == _Phase.IDLE
        # GNT# as it counts: while idle only with the bus idle (FRAME#, IRDY# deasserted).
        # One hand-placed LUT4 (the cell backend): GNT# crosses it and the outputs' last
        # choice.
        gnt_counts = cells.lut4(m, lambda gnt, frame, irdy, idle:
                                gnt and not (idle and (frame or irdy)),
                                [now.gnt, now.frame, now.irdy, is_idle], "gnt_counts",
                                inverted=(0, 1, 2))
        # GNT# asserted counts as GNT# only while it is allowed: in the cofactors for GNT#
        # asserted, the registered permission stands in for the line.
        allowed = ini.gnt_allowed
        if expand:
            idle_family = {(go,): decide(m, ini, machine, f"idle{go}", True,
                                         go=allowed if go else 0)
                           for go in (0, 1)}
            busy_family = {}
            for values in itertools.product((0, 1), repeat=len(live_names)):
                tag = "_".join(f"{name}{v}" for name, v in zip(live_names, values))
                lines = dict(zip(live_names, values))
                lines["gnt"] = allowed if lines["gnt"] else 0
                busy_family[values] = decide(m, ini, machine, tag, False, **lines)
        else:
            idle_family = {(): decide(m, ini, machine, "idle", True,
                                      go=gnt_counts & allowed)}
            busy_family = {(): decide(m, ini, machine, "busy", False, **{
                name: getattr(now, name) & (allowed if name == "gnt" else 1)
                for name in live_names})}
        # The target's lines, TRDY# choosing last (GNT# chooses after them: ``choose``).
        self.target_lines = LiveLines(m, cells, {name: getattr(now, name)
                                                 for name in target_names})
        self.is_idle = is_idle
        self.gnt_counts = gnt_counts
        self.idle_family = idle_family
        self.busy_family = busy_family
        self.live_names = live_names

    def choose(self, pick, name, *, staged=False, gate=None, inverse=False):
        """``pick(next state, outputs)`` of the cofactor the live lines choose now, for
        output ``name`` (``bus.NAME.o``): the phase (from registers) chooses between the
        families inside each cofactor of the target's lines, so the lines only choose
        among one kept net each; GNT# as it counts chooses last, in one LUT4 of its own
        (``gnt_counts``, with FRAME# and IRDY#) per bit. ``gate`` (1 bit, from a
        register): the choice is 0 where it is 0. ``inverse``: the value of a line the
        pads invert (active low; ungated only): GNT#'s cells hold its inverse
        (:meth:`~pcispy.core.cells.CellModel.inverse_lut4`), so no inverter cell follows them.

        On a 32-bit bus the target's three lines choose in hand-placed cells
        (:meth:`~pcispy.core.live.LiveLines.choose_now`: per bit a slice pair) and GNT#
        in one more LUT4: a line crosses at most four cells to the pads. Synthesis keeps to a kept
        net only as a name: written as two-way choices each kept (``staged``, the 64-bit
        bus's form, four lines), abc decodes the lines again in front of them and
        DEVSEL# crosses 5 to 7 cells to FRAME#'s register. Left whole, abc decodes TRDY#
        and DEVSEL# once for FRAME#, IRDY#, C/BE#'s enable and the AD word, and the
        placer may put that LUT by the AD pins across the die (on the ULX3S, DEVSEL# ->
        9.7 ns of wire to it -> back to FRAME#'s register, 22.6 ns).
        """
        m, cells, gnt = self.m, self.cells, self.gnt_counts
        idle_family, busy_family, is_idle = self.idle_family, self.busy_family, self.is_idle
        if not self.expand:
            value = Mux(is_idle, pick(*idle_family[()]), pick(*busy_family[()]))
            return value if gate is None else value & gate

        def cofactor(gnt_value):
            return lambda values: Value.cast(Mux(
                is_idle, pick(*idle_family[gnt_value,]),
                pick(*busy_family[self.busy_key(gnt_value, values)])))
        granted, refused = (self.target_lines.choose_now(f"{name}_gnt{gnt_value}",
                                                         cofactor(gnt_value), staged=staged)
                            for gnt_value in (1, 0))
        if len(self.target_lines.names) > SLICE_PAIR_LINES:
            value = Mux(gnt, granted, refused)
            return value if gate is None else value & gate
        if gate is None:
            lut4 = cells.inverse_lut4 if inverse else cells.lut4
            return Cat(*(lut4(m, two_way, [gnt, granted[bit], refused[bit]],
                              f"{name}_by_gnt_b{bit}")
                         for bit in range(len(granted))))
        # Gated (an enable only): the gate in the cell's fourth input, the cell in the
        # tristate register's polarity, so no cell follows it.
        return Cat(*(cells.inverse_lut4(m, gated_two_way,
                                        [gnt, granted[bit], refused[bit], gate],
                                        f"{name}_floats_b{bit}")
                     for bit in range(len(granted))))

    def busy_key(self, gnt_value, values):
        """The busy family's key of GNT# ``gnt_value`` and the target's lines ``values``."""
        lines_at = dict(zip(self.target_lines.names, values), gnt=gnt_value)
        return tuple(lines_at[name] for name in self.live_names)

    def register_state(self, state):
        """The state (``{name: register}``). Folded, the registers take the one next
        state. Expanded, every cofactor's next state is registered, and so are the lines
        that choose among them; the choice is made in the next clock, from registers
        only. The same value, clock for clock, but a live line then ends at one flip-flop
        of its own: the state registers, and everything behind them, are out of its
        reach."""
        m = self.m
        if not self.expand:
            for name, reg in state.items():
                m.d.pci += reg.eq(self.choose(lambda nxt, drv: nxt[name], None))
            return

        def registered(family, tag):
            copies = {}
            for key, (nxt, _) in family.items():
                suffix = "".join(map(str, key))
                q = {name: Signal.like(reg, name=f"{name}_{tag}{suffix}_q")
                     for name, reg in state.items()}
                m.d.pci += [q[name].eq(nxt[name]) for name in state]
                copies[key] = q
            return copies
        idle_q = Signal()
        gnt_q = Signal()
        m.d.pci += [idle_q.eq(self.is_idle), gnt_q.eq(self.gnt_counts)]
        lines_q = self.target_lines.registered()
        idle_copies = registered(self.idle_family, "idle")
        busy_copies = registered(self.busy_family, "busy")

        def chosen(name, gnt_value):
            return lines_q.choose(lambda values: Value.cast(Mux(
                idle_q, idle_copies[gnt_value,][name],
                busy_copies[self.busy_key(gnt_value, values)][name])))
        for name, reg in state.items():
            m.d.comb += reg.eq(Mux(gnt_q, chosen(name, 1), chosen(name, 0)))
