# SPDX-License-Identifier: BSD-2-Clause
"""The bus itself: combine every agent's drivers into the value each line carries, and
judge the drivers as a bus monitor that sees every output enable would.

On a real PCI bus a line that nobody drives floats and a pull-up holds it high; an
open-drain line (SERR#, INTx#) is low when anyone pulls it low; two agents driving one
tri-state line in the same clock is contention, a bug in one of them. The resolver models
exactly that, at inside level (see pcispy/pci/bus.py): an undriven active-low line reads
deasserted (0), an undriven AD/C/BE#/PAR line reads all ones (pulled up). An agent's ``o``
of an active-low line is 1 when it asserts the line.

Because it knows which agent drives each line, it also checks the rules no monitor on the
pins can see, :data:`~pcispy.pci.rules.DRIVER_RULES`. Clock N is the clock being
judged, N-1 the one before. "Driven" means ``oe`` set, except on the open-drain lines,
where an agent drives only when it pulls the line low (``oe`` and ``o`` set).

- ``contention``: two agents drive a tri-state or sustained tri-state line in clock N
  (A, B: the two lowest-numbered drivers).
- ``no_turnaround``: agent B starts driving a tri-state or sustained tri-state line in N
  (it did not in N-1) while a different agent A drove it in N-1 (open-drain lines
  excepted; agents that keep driving together are contention).
- ``sts_released_asserted``: agent A drove a sustained tri-state line
  (:data:`~pcispy.pci.bus.SUSTAINED_TRISTATE`) asserted in N-1 and does not drive
  it in N, RST# deasserted in N (RST# floats every output at once).
- ``parked_bus_floating``: the bus is parked in N: RST# deasserted, FRAME# and IRDY#
  deasserted and one master's GNT# asserted, the same master's as in N-1 if N-1 was parked
  too; counting the first clock of such a run as 1, the parked master's agent A must drive
  AD[31:0] and C/BE#[3:0] from clock 9 on and PAR from clock 10 on (it samples GNT# at the
  end of clock 1 and enables AD and C/BE# within eight clocks, PAR one clock later). The
  64-bit extension is not parked. A master with no agent on the bus (A = none) leaves the
  bus floating too. (The protocol checker's ``parked_bus_parity`` holds the same limits
  on the pins: PAR from clock 10, covering AD of clock 9.)
- ``par_driver_mismatch``: the agents that drive PAR in N are not exactly those that drove
  AD[31:0] in N-1 (A: AD's driver in N-1, B: PAR's in N, either may be none); the same for
  PAR64 against AD[63:32]; RST# deasserted in N.
- ``driven_during_reset``: agent A drives a shared line in N while RST# is asserted in N and
  in N-1 (the first clock of a reset is forgiven: agents float their outputs at the first
  clock edge that sees RST#); REQ64# is excepted, the central resource drives it then.

Evidence, kept until ``clear``: a sticky flag and a saturating count of clocks per rule, a
log of the first :data:`LOG_DEPTH` violations (one entry per rule per clock: cycle, rule,
the first line it was broken on, agents A and B), and as before a sticky contention flag
per line with the line and cycle of the first contention. The resolver runs without the
bus reset (a mid-run RST# must not erase the evidence of what happened around it): its
``rst`` input is RST#, and its cycle counter counts clocks since the model started.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.core.logic import bottom_bit
from pcispy.pci.bus import ACTIVE_LOW, OPEN_DRAIN, SUSTAINED_TRISTATE, bus_lines
from pcispy.pci.rules import DRIVER_RULES, DRIVER_RULES_BY_NAME
from pcispy.sim.bfm.gate import Gate

__all__ = ["BusResolver", "shared_lines", "LOG_DEPTH", "AGENT_NONE", "AGENT_BITS",
           "LINE_BITS", "PARK_AD_CLOCK", "PARK_PAR_CLOCK"]

# Point-to-point lines are wired per slot by the system, not resolved here.
_POINT_TO_POINT = frozenset({"req", "gnt", "idsel", "rst"})

#: Violations the log keeps (the first ones after ``clear``).
LOG_DEPTH = 16
#: Bits of an agent number in the log; :data:`AGENT_NONE` means "no agent".
AGENT_BITS = 4
AGENT_NONE = (1 << AGENT_BITS) - 1
#: Bits of a line index (into :func:`shared_lines`) in the log.
LINE_BITS = 5
#: Clock of a parked run (the first is 1) from which AD[31:0] and C/BE#[3:0] must be
#: driven, and from which PAR must be: the parked agent samples GNT# at the end of clock 1
#: and enables AD and C/BE# within eight clocks, PAR one clock later (PCI LB 3.0 §3.4.3).
#: The checker's ``parked_bus_parity`` holds PAR from clock 10 to cover AD of clock 9:
#: the same limits.
PARK_AD_CLOCK = 9
PARK_PAR_CLOCK = 10

_COUNT_BITS = 32


def shared_lines(width=32):
    """``{name: bits}`` of the lines every agent shares (what the resolver combines)."""
    return {name: bits for name, bits in bus_lines(width).items() if name not in _POINT_TO_POINT}


def _lowest(m, vector):
    """A signal: the index of the lowest set bit of ``vector``, :data:`AGENT_NONE` when
    none is set. (The vector goes into a signal first: the search reads each bit many
    times, and an expression would be built again for every read.)"""
    bits = Signal(len(vector))
    index = Signal(AGENT_BITS)
    found, lowest = bottom_bit(bits)
    m.d.comb += [bits.eq(vector), index.eq(Mux(found, lowest, AGENT_NONE))]
    return index


def _saturating_increment(counter):
    return Mux(counter == (1 << len(counter)) - 1, counter, counter + 1)


class BusResolver(wiring.Component):
    """Resolve the shared lines of ``agents`` PCI agents and check the driver rules.

    Ports (for every shared line ``NAME`` of :func:`shared_lines`):
        NAME_o (In, agents x bits): each agent's output value, inside-level, agent k in
            bits ``[k*bits, (k+1)*bits)``.
        NAME_oe (In, agents): each agent's output enable.
        NAME (Out, bits): the resolved line, inside-level.
    And:
        rst (In, 1): RST#, inside-level (1 = asserted).
        gnt (In, masters): every master's GNT#, inside-level (for the parking rule).
        clear (In, 1): clear all evidence (takes precedence over this clock's violations).
        cycle (Out, 32): clocks since the model started (the log's timebase); with
            ``shared_cycle`` an input (In, 32): the system's one clock count, which the
            protocol checker and the control port read too.
        violation (Out, len(DRIVER_RULES)): the rules broken in this clock (bit = rule id).
        flags (Out, len(DRIVER_RULES)): sticky per-rule flags.
        counts (Out, 32 x len(DRIVER_RULES)): per rule, clocks in which it was broken
            (saturating), rule r in bits ``[32*r, 32*r+32)``.
        log_entries (Out, range(LOG_DEPTH + 1)): entries in the log.
        log_index (In, range(LOG_DEPTH)): which entry the ``log_*`` outputs show
            (combinational).
        log_cycle (Out, 32), log_rule (Out, 3), log_line (Out, 5), log_agent_a (Out, 4),
            log_agent_b (Out, 4): that entry (agents by their resolver index,
            :data:`AGENT_NONE` for none; the line as an index into :func:`shared_lines`).
        contention (Out, one bit per shared line, in :func:`shared_lines` order): sticky,
            set when two agents drove that tri-state line in the same clock.
        first_line (Out, 8): index of the line of the first contention.
        first_cycle (Out, 32): ``cycle`` of the first contention.

    Parameters:
        agents: number of agents on the bus (at most :data:`AGENT_NONE`).
        width: bus width (32 or 64).
        masters: for each master of the arbiter (GNT# bit), the index of the agent that
            drives for it when it is parked, or None when it has none on the bus.
        shared_cycle: take ``cycle`` as an input instead of counting clocks itself.
        gated: keep the evidence on a clock gated while no rule is broken (a Verilator
            build only, :mod:`pcispy.sim.bfm.gate`).
    """
    def __init__(self, agents, width=32, masters=(), *, shared_cycle=False, gated=False):
        if not 1 <= agents < AGENT_NONE:
            raise ValueError(f"the resolver serves 1 to {AGENT_NONE - 1} agents")
        for agent in masters:
            if agent is not None and not 0 <= agent < agents:
                raise ValueError(f"master agent {agent} is not on the bus")
        self.agents = agents
        self.width = width
        self.masters = tuple(masters)
        self.shared_cycle = shared_cycle
        self.gated = gated
        self.lines = shared_lines(width)
        n_rules = len(DRIVER_RULES)
        members = {}
        for name, bits in self.lines.items():
            members[f"{name}_o"] = In(bits * agents)
            members[f"{name}_oe"] = In(agents)
            members[name] = Out(bits)
        members.update({
            "rst": In(1),
            "gnt": In(max(1, len(self.masters))),
            "clear": In(1),
            "cycle": In(32) if shared_cycle else Out(32),
            "violation": Out(n_rules),
            "flags": Out(n_rules),
            "counts": Out(_COUNT_BITS * n_rules),
            "log_entries": Out(range(LOG_DEPTH + 1)),
            "log_index": In(range(LOG_DEPTH)),
            "log_cycle": Out(32),
            "log_rule": Out(range(n_rules)),
            "log_line": Out(LINE_BITS),
            "log_agent_a": Out(AGENT_BITS),
            "log_agent_b": Out(AGENT_BITS),
            "contention": Out(len(self.lines)),
            "first_line": Out(8),
            "first_cycle": Out(32),
        })
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()      # the bus, the registers of every clock, the rules' fire bits
        ev = Module()     # the evidence (which line, which agents; log, counts, flags)
        # The evidence changes only in a clock a rule is broken in (or at ``clear``): it
        # runs on a gated clock and works out the agents from a view of the drivers
        # (pcispy/sim/bfm/gate.py), so the model skips it on every other clock.
        gate = Gate(m, name="evidence", gated=self.gated)
        viewed = {}

        def view(value, name):
            """``value`` of ``m`` as the evidence sees it (one view per name)."""
            if name not in viewed:
                viewed[name] = gate.view(value, name)
            return viewed[name]

        n = self.agents
        if not self.shared_cycle:
            m.d.sync += self.cycle.eq(self.cycle + 1)
        # RST# in the clock before: with RST# now, "RST# held" (driven_during_reset).
        prev_rst = Signal()
        m.d.sync += prev_rst.eq(self.rst)

        # Per rule: (fires, may, when, line index, agent A, agent B) of every line it is
        # checked on. ``fires`` is a signal of ``m`` (every clock): ``may`` (the rest of
        # the condition, which does not depend on RST#) where RST# is as ``when`` says
        # (``None``: either way; "running": deasserted; "held": asserted). The evidence
        # sees ``may`` through the view and RST# as it is: Python changes RST# at falling
        # edges, after the view is loaded. The agents are functions building their
        # signals in ``ev`` from viewed vectors, called only there. The log names the
        # first line that fires.
        found = {rule.name: [] for rule in DRIVER_RULES}

        def under_reset(when, may, rst=self.rst):
            return {None: may, "running": ~rst & may, "held": rst & may}[when]

        def candidate(rule, may, when, index, agent_a, agent_b=lambda: AGENT_NONE):
            number = len(found[rule])
            fire = Signal(name=f"{rule}_{number}_fires")
            maybe = Signal(name=f"{rule}_{number}_may")
            m.d.comb += [maybe.eq(may), fire.eq(under_reset(when, maybe))]
            found[rule].append((fire, maybe, when, index, agent_a, agent_b))

        def lowest(value, name):
            """In ``ev``: the lowest agent set in the viewed vector ``value`` of ``m``."""
            return _lowest(ev, view(value, name))

        line_index = {name: index for index, name in enumerate(self.lines)}
        enables = {}
        clash_now = []
        for name, bits in self.lines.items():
            outs = getattr(self, f"{name}_o")
            oe = getattr(self, f"{name}_oe")
            enables[name] = oe
            index = line_index[name]
            driven = [outs[k * bits:(k + 1) * bits] & oe[k].replicate(bits) for k in range(n)]
            any_value = Const(0, bits)
            for value in driven:
                any_value = any_value | value
            prev_oe = Signal(n, name=f"{name}_prev_oe")
            m.d.sync += prev_oe.eq(oe)

            if name in OPEN_DRAIN:
                # Wired-AND on the pins is wired-OR of the asserted (active-high) values.
                m.d.comb += getattr(self, name).eq(any_value)
                clash_now.append(Const(0))
                pulling = Signal(n, name=f"{name}_pulling")
                m.d.comb += pulling.eq(Cat(oe[k] & outs[k] for k in range(n)))
                candidate("driven_during_reset", prev_rst & pulling.any(), "held", index,
                          lambda pulling=pulling, name=name:
                          lowest(pulling, f"{name}_pulling"))
                continue

            pulled_up = 0 if name in ACTIVE_LOW else (1 << bits) - 1
            with m.If(oe == 0):
                m.d.comb += getattr(self, name).eq(pulled_up)
            with m.Else():
                # With exactly one driver this is its value; with several the line is
                # undefined on a real bus: OR keeps the model deterministic.
                m.d.comb += getattr(self, name).eq(any_value)

            # The drivers of this clock: the first two (contention, driven_during_reset).
            def drivers(oe=oe, name=name):
                key = f"{name}_drivers"
                if key not in viewed:
                    seen = view(oe, f"{name}_oe")
                    first = Signal(AGENT_BITS, name=f"{name}_driver")
                    ev.d.comb += first.eq(_lowest(ev, seen))
                    second = _lowest(ev, (seen & ~(Const(1, n) << first))[:n])
                    viewed[key] = (first, second)
                return viewed[key]

            # contention: two drivers in this clock.
            several = Signal(name=f"{name}_clash")
            m.d.comb += several.eq((oe & (oe - 1)) != 0)
            clash_now.append(several)
            candidate("contention", several, None, index, lambda d=drivers: d()[0],
                      lambda d=drivers: d()[1])

            # no_turnaround: an agent starts driving it while another drove it in the
            # clock before (two agents driving on together is contention only).
            late = Signal(n, name=f"{name}_late")
            m.d.comb += late.eq(oe & ~prev_oe & prev_oe.any().replicate(n))

            def late_agents(late=late, prev_oe=prev_oe, name=name):
                key = f"{name}_late_agents"
                if key not in viewed:
                    late_agent = Signal(AGENT_BITS, name=f"{name}_late_agent")
                    ev.d.comb += late_agent.eq(lowest(late, f"{name}_late"))
                    before = view(prev_oe, f"{name}_prev_oe")
                    viewed[key] = (_lowest(ev, (before & ~(Const(1, n) << late_agent))[:n]),
                                   late_agent)
                return viewed[key]
            candidate("no_turnaround", late.any(), None, index,
                      lambda a=late_agents: a()[0],
                      lambda a=late_agents: a()[1])

            # sts_released_asserted: released the clock after driving it asserted.
            if name in SUSTAINED_TRISTATE:
                asserted = Signal(n, name=f"{name}_prev_asserted")
                m.d.sync += asserted.eq(Cat(oe[k] & outs[k] for k in range(n)))
                released = Signal(n, name=f"{name}_released")
                m.d.comb += released.eq(asserted & ~oe)
                candidate("sts_released_asserted", released.any(), "running", index,
                          lambda released=released, name=name:
                          lowest(released, f"{name}_released"))

            # driven_during_reset (REQ64# is the central resource's during reset).
            if name != "req64":
                candidate("driven_during_reset", prev_rst & oe.any(), "held", index,
                          lambda d=drivers: d()[0], lambda d=drivers: d()[1])

        # par_driver_mismatch: PAR's drivers in N are AD's in N-1 (PAR64 and AD[63:32]).
        for data, par in (("ad", "par"), ("ad_hi", "par64")):
            if data not in self.lines:
                continue
            prev_data_oe = Signal(n, name=f"{data}_prev_oe_for_{par}")
            m.d.sync += prev_data_oe.eq(enables[data])
            candidate("par_driver_mismatch", prev_data_oe != enables[par], "running",
                      line_index[par],
                      lambda v=prev_data_oe, name=f"{data}_prev_oe_for_{par}":
                      lowest(v, name),
                      lambda v=enables[par], name=f"{par}_oe": lowest(v, name))

        self._parking(m, candidate, enables, line_index, view)

        # --- evidence ---------------------------------------------------------------------
        n_rules = len(DRIVER_RULES)
        violation = Cat(Cat(entry[0] for entry in found[rule.name]).any()
                        if found[rule.name] else Const(0) for rule in DRIVER_RULES)
        m.d.comb += self.violation.eq(violation)
        entries_now = []
        # RST# as the evidence sees it: the view is loaded again whenever it changes.
        seen_rst = view(self.rst, "rst")
        for r, rule in enumerate(DRIVER_RULES):
            line = Signal(LINE_BITS, name=f"{rule.name}_line")
            a = Signal(AGENT_BITS, name=f"{rule.name}_a", init=AGENT_NONE)
            b = Signal(AGENT_BITS, name=f"{rule.name}_b", init=AGENT_NONE)
            # The agents' signals first (their logic is not conditional), then the chain:
            # the first line that fires wins (the last assignment in it).
            chain = []
            for number, (_, maybe, when, index, agent_a, agent_b) in enumerate(
                    found[rule.name]):
                fire = Signal(name=f"{rule.name}_{number}_seen")
                ev.d.comb += fire.eq(under_reset(when, view(maybe, f"{rule.name}_{number}"),
                                                 seen_rst))
                chain.append((fire, index, agent_a(), agent_b()))
            for fire, index, agent_a, agent_b in reversed(chain):
                with ev.If(fire):
                    ev.d.comb += [line.eq(index), a.eq(agent_a), b.eq(agent_b)]
            fires = Signal(name=f"{rule.name}_now")
            ev.d.comb += fires.eq(Cat(fire for fire, _, _, _ in chain).any() if chain else 0)
            entries_now.append((fires, line, a, b))
        seen_violation = Cat(entry[0] for entry in entries_now)

        counts = [self.counts[_COUNT_BITS * r:_COUNT_BITS * (r + 1)] for r in range(n_rules)]
        log_cycle = [Signal(32, name=f"log_cycle_{i}") for i in range(LOG_DEPTH)]
        log_rule = [Signal(range(n_rules), name=f"log_rule_{i}") for i in range(LOG_DEPTH)]
        log_line = [Signal(LINE_BITS, name=f"log_line_{i}") for i in range(LOG_DEPTH)]
        log_a = [Signal(AGENT_BITS, name=f"log_a_{i}") for i in range(LOG_DEPTH)]
        log_b = [Signal(AGENT_BITS, name=f"log_b_{i}") for i in range(LOG_DEPTH)]

        clashes = Signal(len(clash_now))
        m.d.comb += clashes.eq(Cat(*clash_now))
        seen_clashes = view(clashes, "clashes")
        cycle = view(self.cycle, "cycle")
        with ev.If(self.clear):
            ev.d.sync += [self.contention.eq(0), self.first_line.eq(0),
                          self.first_cycle.eq(0), self.flags.eq(0), self.counts.eq(0),
                          self.log_entries.eq(0)]
        with ev.Else():
            ev.d.sync += self.contention.eq(self.contention | seen_clashes)
            with ev.If((self.contention == 0) & (seen_clashes != 0)):
                ev.d.sync += self.first_cycle.eq(cycle)
                for index in reversed(range(len(clash_now))):
                    with ev.If(seen_clashes[index]):
                        ev.d.sync += self.first_line.eq(index)
            ev.d.sync += self.flags.eq(self.flags | seen_violation)
            for r, count in enumerate(counts):
                with ev.If(seen_violation[r]):
                    ev.d.sync += count.eq(_saturating_increment(count))
            # One entry per rule broken in this clock, in rule order, after those logged.
            slot = self.log_entries
            for r, (fires, line, a, b) in enumerate(entries_now):
                for i in range(LOG_DEPTH):
                    with ev.If(fires & (slot == i)):
                        ev.d.sync += [log_cycle[i].eq(cycle), log_rule[i].eq(r),
                                      log_line[i].eq(line), log_a[i].eq(a), log_b[i].eq(b)]
                after = Signal(range(LOG_DEPTH + n_rules + 1), name=f"log_slot_{r}")
                ev.d.comb += after.eq(slot + fires)
                slot = after
            ev.d.sync += self.log_entries.eq(Mux(slot > LOG_DEPTH, LOG_DEPTH, slot))

        with ev.Switch(self.log_index):
            for i in range(LOG_DEPTH):
                with ev.Case(i):
                    ev.d.comb += [self.log_cycle.eq(log_cycle[i]), self.log_rule.eq(log_rule[i]),
                                  self.log_line.eq(log_line[i]), self.log_agent_a.eq(log_a[i]),
                                  self.log_agent_b.eq(log_b[i])]
        # Awake in a clock a rule is broken in (the contention flags are the contention
        # rule's lines), and at ``clear`` (a control-port write); the view is loaded in
        # the clocks one may be, whatever RST# does.
        may = Cat(entry[1] for entries in found.values() for entry in entries).any()
        gate.add(ev, self.violation.any() | self.clear, may, self.clear, reload=self.rst)
        return m

    def _parking(self, m, candidate, enables, line_index, view):
        """The parked_bus_floating candidates: AD and C/BE# from clock PARK_AD_CLOCK of a parked
        run, PAR from clock PARK_PAR_CLOCK, each driven by the parked master's agent."""
        masters = self.masters
        if not masters:
            return
        gnt = self.gnt
        prev_gnt = Signal(len(gnt))
        m.d.sync += prev_gnt.eq(gnt)
        one_gnt = (gnt != 0) & ((gnt & (gnt - 1)) == 0)
        idle = ~self.frame & ~self.irdy
        # The clock of this parked run (1 = its first), 0 when the bus is not parked;
        # ``unless_reset``: the same but for RST# (the rules' ``may``).
        run = Signal(4)
        clock = Signal(4)
        unless_reset = Signal(4)
        continued = (run != 0) & (gnt == prev_gnt)
        m.d.comb += [
            unless_reset.eq(Mux(idle & one_gnt,
                                Mux(continued, _saturating_increment(run), 1), 0)),
            clock.eq(Mux(~self.rst, unless_reset, 0)),
        ]
        m.d.sync += run.eq(clock)

        agent = Const(AGENT_NONE, AGENT_BITS)
        for master, index in enumerate(masters):
            if index is not None:
                agent = Mux(gnt[master], index, agent)
        parked_agent = Signal(AGENT_BITS)
        m.d.comb += parked_agent.eq(agent)

        def drives(line):
            oe = enables[line]
            terms = [gnt[master] & oe[index] for master, index in enumerate(masters)
                     if index is not None]
            return Cat(*terms).any() if terms else Const(0)

        for line, from_clock in (("ad", PARK_AD_CLOCK), ("cbe", PARK_AD_CLOCK),
                                 ("par", PARK_PAR_CLOCK)):
            floating = (unless_reset >= from_clock) & ~drives(line)
            candidate("parked_bus_floating", floating, "running", line_index[line],
                      lambda: view(parked_agent, "parked_agent"))


# The rule names this module implements, checked against the vocabulary at import.
_IMPLEMENTED = {"contention", "no_turnaround", "sts_released_asserted", "parked_bus_floating",
                "par_driver_mismatch", "driven_during_reset"}
if _IMPLEMENTED != set(DRIVER_RULES_BY_NAME):
    raise AssertionError(f"resolver rules out of step with DRIVER_RULES: "
                         f"{sorted(_IMPLEMENTED ^ set(DRIVER_RULES_BY_NAME))}")
