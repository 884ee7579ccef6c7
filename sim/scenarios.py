# SPDX-License-Identifier: BSD-2-Clause
"""Simulation-only experiments: traffic from the simulated machine itself.

These are features in the sense of :mod:`pcispy.host.features` (``async def f(transport,
**arguments) -> dict``) but they drive the simulated host bridge directly through
``transport.system``, to make bus traffic a real machine's CPU would make on its own (an
operating system reading its real-time clock). On hardware the same traffic comes from
the machine; only the spy's view of it is pcispy's.
"""

from pcispy.host.errors import PcispyError
from pcispy.sim.bfm.legacy import RTC_PORT

__all__ = ["rtc_pio"]

#: CMOS registers an OS clock interrupt reads: seconds, minutes, hours, status C.
RTC_REGISTERS = (0x00, 0x02, 0x04, 0x0C)


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
        for register in RTC_REGISTERS:
            write = await system.host.io_write(RTC_PORT, register, 1)
            read = await system.host.io_read(RTC_PORT + 1, 1)
            for kind, port, result in (("W", RTC_PORT, write), ("R", RTC_PORT + 1, read)):
                if not result.ok:
                    raise PcispyError(f"RTC {kind} at {port:#x}: {result.status.name.lower()}")
                accesses.append({"group": group, "rw": kind, "port": port,
                                 "value": register if kind == "W" else result.value,
                                 "clocks": result.clocks, "latency": result.latency,
                                 "retries": result.retries})
    return {"accesses": accesses}
