# SPDX-License-Identifier: BSD-2-Clause
"""Clock gating of idle logic, so that the simulator skips it.

Verilator evaluates every register of a clock domain at each edge of its clock, whatever
the enables, and every piece of combinational logic whenever one of its inputs may have
changed: an agent that has nothing to do costs as much per clock as a busy one. Logic
whose whole state holds while it has nothing to do runs instead on the bus clock gated by
a *wake* condition, and the model skips its registers on the clocks it sleeps through.

The contract gated logic keeps (the exact-cycle tests of the system prove it):

- ``wake`` is high before every edge at which one of its registers would change, judged
  from what it is about to see (its control-port access, the bus lines, its own state).
  ``bus_wake`` is the part of it that is not the control-port access.
- Everything that must move on every clock (a clock counter, a free-running random
  generator, a register that samples a bus line each clock, a RAM Python writes behind
  the agent's back) stays in the ungated domain.
- :class:`Gate` adds one more clock after every clock the logic was awake in, so that a
  register loaded from another one (a pipeline stage) still follows it.

Its combinational logic is still evaluated whenever an input changes, and the bus changes
on every clock. Logic that is large and rarely needed (the resolver's evidence) reads its
per-clock inputs through a *view* (:meth:`Gate.view`) instead: registers loaded at the
falling edge before every clock ``bus_wake`` (or the extra clock) is high for, when a
control-port access begins (at a falling edge too), and whenever ``reload`` (RST#, which
Python changes at falling edges) changes. The inputs change only at rising edges, so the
view holds, at every edge the logic runs at, what its input is then; the logic fed from
it is evaluated only when the view is loaded. A view costs the model two more triggers
to evaluate at every clock edge: for an agent's own logic that costs more than it saves
(measured), so the agents read the bus directly.

The gate and the view are the hand-written cells ``pcispy_clock_gate`` and ``pcispy_view``
(:data:`pcispy.sim.pcisystem.RESET_FOLLOW_SOURCE`): a Verilator build only. In Amaranth's
Python simulator a clock made by logic changes a delta cycle after its source, so the gated
registers would see the other registers' new values; the agents keep their logic on
``sync`` and read their inputs directly there (``gated=False``, their default).
"""

from amaranth import (Cat, ClockDomain, ClockSignal, DomainRenamer, Instance, ResetSignal,
                      Signal, Value)

__all__ = ["Gate", "GATE_MODULE", "VIEW_MODULE"]

#: The Verilog modules of the gate cell and of the view.
GATE_MODULE = "pcispy_clock_gate"
VIEW_MODULE = "pcispy_view"


class Gate:
    """The clock gate of one piece of logic (an agent's engine, the resolver's evidence),
    added to module ``m`` (its ungated side, on domain ``sync``); ``gated=False`` makes
    it a pass-through (the logic runs on ``sync``, views are their inputs).

    Use: create it, read the per-clock inputs through :meth:`view` while building the
    gated logic (a module on ``sync``), then :meth:`add` the logic with its wake
    conditions.
    """

    def __init__(self, m, *, name="gated", gated=True):
        self.m = m
        self.name = name
        self.gated = gated
        self._views = []
        if gated:
            self._view_en = Signal(name=f"{name}_view_en")
            self._access = Signal(name=f"{name}_access")

    def view(self, value, name):
        """``value`` (a signal or expression of the ungated side) as the gated logic sees
        it: a signal loaded as the module docstring says (``value`` itself when not
        gated)."""
        value = Value.cast(value)
        if not self.gated:
            return value
        held = Signal(value.shape(), name=f"{self.name}_{name}")
        self._views.append((value, held))
        return held

    def add(self, logic, wake, bus_wake, access, reload=None):
        """Add ``logic`` (an elaboratable on domain ``sync``) as submodule ``name``, on
        ``sync``'s clock gated by ``wake`` and ``sync``'s reset; ``bus_wake``: ``wake``
        without the control-port access; ``access``: the access (write or read strobe).
        ``reload``: a signal (RST#) whose every change loads the views again: it changes
        at falling edges, after they were loaded, and a view of it (or of logic it feeds)
        must show the new value. Returns the signal high in the clocks the logic runs
        in."""
        m, name = self.m, self.name
        if not self.gated:
            m.submodules[name] = logic
            return Signal(init=1, name=f"{name}_awake")
        # Awake at the last edge: one clock more. Reset-less, so the clock after a reset
        # (every agent wakes for RST#) has it too.
        woke = Signal(name=f"{name}_woke", reset_less=True)
        awake = Signal(name=f"{name}_awake")
        m.d.comb += [awake.eq(wake | woke), self._view_en.eq(bus_wake | woke),
                     self._access.eq(access)]
        m.d.sync += woke.eq(wake)
        domain = f"{name}_clk"
        cd = ClockDomain(domain, local=True)
        m.domains += cd
        clock = Signal(name=f"{name}_gclk")
        m.submodules[f"{name}_gate"] = Instance(GATE_MODULE, i_clk=ClockSignal("sync"),
                                                 i_en=awake, o_gclk=clock)
        m.d.comb += [cd.clk.eq(clock), cd.rst.eq(ResetSignal("sync", allow_reset_less=True))]
        if self._views:
            inputs = Cat(value for value, _ in self._views)
            held = Cat(signal for _, signal in self._views)
            loaded = Signal(len(inputs), name=f"{name}_view")
            m.submodules[f"{name}_view"] = Instance(
                VIEW_MODULE, p_W=len(inputs), p_RELOAD=int(reload is not None),
                i_clk=ClockSignal("sync"), i_en=self._view_en, i_access=self._access,
                i_reload=0 if reload is None else reload, i_i=inputs, o_o=loaded)
            m.d.comb += held.eq(loaded)
        m.submodules[name] = DomainRenamer({"sync": domain})(logic)
        return awake

