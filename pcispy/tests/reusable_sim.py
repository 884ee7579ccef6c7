# SPDX-License-Identifier: BSD-2-Clause
"""One Amaranth simulator of a design, run for many tests.

Building a :class:`~amaranth.sim.Simulator` elaborates the design and compiles it to
Python: for the whole board about ten seconds, for the protocol checker half a second,
while a test's bench then runs for a fraction of that. A :class:`ReusableSimulation` is
built once per design configuration (in each pytest worker) and reset between benches:
Amaranth's ``Simulator.reset`` returns every signal and memory to its initial value and
restarts every clock and testbench from time zero, so each bench starts on the same
machine in the same state as it would on a fresh simulator, clock for clock.

:func:`shared` keeps the simulations by a key the caller derives from the design's
parameters. A bench that raised marks its simulation broken, and the next test of that
configuration gets a fresh one, so one failure cannot leak into another test.
"""

from collections import OrderedDict

from amaranth.sim import Simulator

__all__ = ["ReusableSimulation", "shared"]


class ReusableSimulation:
    """A simulator of ``design`` with ``clocks`` (``{domain: period in seconds}``) that
    runs one bench at a time (:meth:`run`), from reset each time. ``handles``: what a
    bench reaches the design by (its ports, a pin bundle), kept with it;
    ``background_slots``: how many background testbenches a run may add beside it."""

    def __init__(self, design, clocks, handles=None, *, background_slots=0):
        self.handles = handles
        self._sim = Simulator(design)
        for domain, period in clocks.items():
            self._sim.add_clock(period, domain=domain)
        self._benches = [None] * (background_slots + 1)
        self._used = False
        #: A bench raised: the simulator stopped mid-clock and is not run again.
        self.broken = False
        # Testbenches for the simulator's life, each awaiting what a run puts in its slot;
        # the background ones first, as a fresh simulator's benches would be added.
        for slot in range(background_slots):
            self._sim.add_testbench(self._dispatcher(1 + slot), background=True)
        self._sim.add_testbench(self._dispatcher(0))

    def _dispatcher(self, slot):
        async def dispatch(ctx):
            bench = self._benches[slot]
            if bench is not None:
                await bench(ctx)
        return dispatch

    def run(self, bench, background=()):
        """Reset the design and run ``await bench(ctx)`` to its end, with the
        ``background`` testbenches beside it."""
        assert not self.broken, "a bench raised on this simulation"
        if len(background) > len(self._benches) - 1:
            raise ValueError(f"{len(background)} background testbenches, "
                             f"{len(self._benches) - 1} slots")
        if self._used:
            self._sim.reset()
        self._used = True
        self._benches[:] = [bench, *background,
                            *[None] * (len(self._benches) - 1 - len(background))]
        try:
            self._sim.run()
        except BaseException:
            self.broken = True
            raise
        finally:
            self._benches[:] = [None] * len(self._benches)


#: How many simulations a process keeps, the least recently used going first: the tests
#: of one file use one to four configurations, one after the other.
CACHE_SIZE = 4

_cache = OrderedDict()


def shared(key, build, clocks, *, background_slots=0):
    """The simulation cached under ``key``, or a fresh one when there is none or it is
    broken: ``build()`` returns ``(design, handles)``."""
    simulation = _cache.pop(key, None)
    if simulation is None or simulation.broken:
        design, handles = build()
        simulation = ReusableSimulation(design, clocks, handles,
                                        background_slots=background_slots)
    _cache[key] = simulation
    while len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return simulation
