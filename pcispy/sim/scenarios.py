# SPDX-License-Identifier: BSD-2-Clause
"""Simulation-only experiments: traffic from the simulated machine itself.

These make bus traffic a real machine's CPU would make on its own (an operating system
reading its real-time clock); on hardware the same traffic comes from the machine, and
only the spy's view of it is pcispy's. Two forms:

- :func:`rtc_pio`, a feature in the sense of :mod:`pcispy.host.features` (``async def
  f(transport, **arguments) -> dict``) that drives the simulated host bridge directly
  through ``transport.system``;
- *scenarios* (:data:`SCENARIOS`): background traffic that runs alongside any feature.
  ``--sim=NAME`` with a scenario's name makes :class:`~pcispy.sim.api.SimSystem` program the
  host bridge with the scenario's ``profile`` and start the scenario as a cocotb task right
  after reset (:func:`start_scenario`). The feature then shares the host bridge with it:
  the scenario puts :class:`SerialInitiator` in front of ``system.host``, so the feature's
  PIO and the scenario's accesses take turns, whole operations at a time, as a CPU's
  loads and stores do.

The ``rtc`` scenario is the Pamette Figure 3 workload: an OS clock interrupt about every
32000 clocks reads the real-time clock (index write to 0x70, data read from 0x71, per
register) while the test device masters short bursts into host memory now and then.
"""

import inspect
import random
from dataclasses import dataclass

from pcispy.host.errors import PcispyError
from pcispy.sim.bfm.legacy_ports import RTC_PORT
from pcispy.sim.bfm.profiles import RTC
from pcispy.sim.system import Agent

__all__ = ["rtc_pio", "RTC_REGISTERS", "SerialInitiator", "Scenario", "SCENARIOS",
           "start_scenario", "rtc_scenario", "RTC_TICK_CLOCKS", "RTC_TICK_JITTER",
           "SCENARIO_MEMORY"]

#: CMOS registers an OS clock interrupt reads: seconds, minutes, hours, status C.
RTC_REGISTERS = (0x00, 0x02, 0x04, 0x0C)
#: Clocks between two clock-interrupt groups of the rtc scenario, and their spread (+-).
RTC_TICK_CLOCKS = 32000
RTC_TICK_JITTER = 200
#: Bytes at the top of host memory the scenario's background DMA writes into (taken out
#: of the region features carve DMA buffers from).
SCENARIO_MEMORY = 64 * 1024


async def _rtc_group(host, registers=RTC_REGISTERS):
    """One clock-interrupt group: per register, the index write then the data read."""
    accesses = []
    for register in registers:
        write = await host.io_write(RTC_PORT, register, 1)
        read = await host.io_read(RTC_PORT + 1, 1)
        for kind, port, result in (("W", RTC_PORT, write), ("R", RTC_PORT + 1, read)):
            if not result.ok:
                raise PcispyError(f"RTC {kind} at {port:#x}: {result.status.name.lower()}")
            accesses.append({"rw": kind, "port": port,
                             "value": register if kind == "W" else result.value,
                             "clocks": result.clocks, "latency": result.latency,
                             "retries": result.retries})
    return accesses


async def rtc_pio(transport, groups=4):
    """Read the real-time clock as an OS clock tick does: per group, for each register,
    write its index to port 0x70 and read the value from port 0x71. Returns every access
    with the host bridge's view of it (clocks, first-data latency, retries)."""
    system = getattr(transport, "system", None)
    if system is None or not system.config.legacy:
        raise PcispyError("the real-time clock scenario needs the simulated system's "
                          "legacy device (--sim)")
    accesses = []
    for group in range(groups):
        for access in await _rtc_group(system.host):
            accesses.append(dict(access, group=group))
    return {"accesses": accesses}


class SerialInitiator:
    """``system.host`` shared by several cocotb tasks: every coroutine method of the
    wrapped :class:`~pcispy.sim.bfm.initiator_driver.InitiatorDriver` runs whole, under one lock
    (its command queue and result collection are not safe to interleave); other
    attributes pass through."""

    def __init__(self, driver):
        # cocotb in the simulator only: the host names the scenarios without it (the
        # optional sim extra, and a command line that starts without it)
        from cocotb.triggers import Lock
        self.driver = driver
        self.lock = Lock()

    def __getattr__(self, name):
        attribute = getattr(self.driver, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute

        async def serialised(*args, **kwargs):
            async with self.lock:
                return await attribute(*args, **kwargs)
        return serialised


@dataclass(frozen=True)
class Scenario:
    """Background traffic: ``run(system, rng)`` is started as a cocotb task; ``profile``
    is the host-bridge profile it runs with; ``breaks_rules`` the checker rules its
    devices break on purpose."""
    name: str
    run: object
    profile: str = "ideal"
    breaks_rules: tuple = ()
    doc: str = ""


async def _background_dma(system, rng, *, every=(3000, 9000), words=(1, 16)):
    """The test device masters short bursts into the top of host memory, now and then."""
    clock = system.ctl[Agent.SYSTEM]
    top = system.host_memory_size
    base = top - SCENARIO_MEMORY
    while True:
        await clock.clocks(rng.randrange(*every))
        count = rng.randrange(*words)
        address = base + 4 * rng.randrange(SCENARIO_MEMORY // 4 - count)
        await system.test_initiator.mem_write(address, rng.randbytes(4 * count))


async def rtc_scenario(system, rng):
    """Clock interrupts reading the RTC about every :data:`RTC_TICK_CLOCKS` clocks, amid
    the test device's background DMA (when the system has a test device)."""
    if not system.config.legacy:
        raise PcispyError("the rtc scenario needs the simulated system's legacy device")
    # cocotb in the simulator only (see SerialInitiator)
    import cocotb
    if system.config.test_device:
        cocotb.start_soon(_background_dma(system, random.Random(rng.random())))
    clock = system.ctl[Agent.SYSTEM]
    next_tick = await system.cycle() + RTC_TICK_CLOCKS // 2
    while True:
        now = await system.cycle()
        if next_tick > now:
            await clock.clocks(next_tick - now)
        await _rtc_group(system.host)
        next_tick += RTC_TICK_CLOCKS + rng.randint(-RTC_TICK_JITTER, RTC_TICK_JITTER)


def _rtc_rules():
    return RTC.breaks_rules


#: Scenarios by the name ``--sim=NAME`` gives them.
SCENARIOS = {s.name: s for s in (
    Scenario("rtc", rtc_scenario, "ideal", _rtc_rules(),
             "an OS clock tick reads the real-time clock at I/O 0x70/0x71 every ~32000 "
             "clocks amid background DMA (Pamette Figure 3)"),
)}


def start_scenario(system, name, seed=1):
    """Start scenario ``name`` on a started ``system`` (a cocotb task; the host bridge is
    then shared through :class:`SerialInitiator`). Returns the task."""
    scenario = SCENARIOS[name]
    if not isinstance(system.host, SerialInitiator):
        system.host = SerialInitiator(system.host)
    # The scenario's DMA lands at the top of host memory: keep feature buffers below it.
    start, end = system.dma_region
    system.dma_region = (start, min(end, system.host_memory_size - SCENARIO_MEMORY))
    system.scenario = scenario
    # cocotb in the simulator only (see SerialInitiator)
    import cocotb
    return cocotb.start_soon(scenario.run(system, random.Random(seed)))
