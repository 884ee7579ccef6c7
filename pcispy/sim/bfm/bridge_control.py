# SPDX-License-Identifier: BSD-2-Clause
"""The PCI-to-PCI bridge model's side towards Python (pcispy/sim/bfm/bridge.py is its bus
side): its identity, the control-port registers (the tuning a profile sets, its state,
statistics per direction) and the bridge profiles (:class:`BridgeProfile`,
:data:`BRIDGE_PROFILES`). :class:`~pcispy.sim.bfm.bridge_driver.BridgeDriver` drives the
registers from Python.
"""

from dataclasses import dataclass, replace

from pcispy.board.registers import DEFAULT_VENDOR_ID
from pcispy.pci.bus import DevselSpeed
from pcispy.sim.bfm.profiles import named
from pcispy.sim.control import ControlField, ControlRegister, ControlRegisters

__all__ = ["BridgeProfile", "BRIDGE_PROFILES", "TRANSPARENT", "BRIDGE_21554",
           "bridge_profile_by_name", "REGISTERS", "BridgeReg", "TUNING", "STATS", "DIRECTIONS",
           "ID_VALUE", "BRIDGE_VENDOR_ID", "BRIDGE_DEVICE_ID", "BRIDGE_CLASS"]

#: ``BridgeReg.ID``: "PCIB".
ID_VALUE = 0x5043_4942
#: Configuration identity of the model: pcispy's vendor ID (assigned to no company), a
#: device ID of its own.
BRIDGE_VENDOR_ID = DEFAULT_VENDOR_ID
BRIDGE_DEVICE_ID = 0x0B01
#: Class code: bridge, PCI-to-PCI, programming interface 0.
BRIDGE_CLASS = 0x060400

#: The two directions, in the order of the statistics registers.
DIRECTIONS = ("downstream", "upstream")
#: Statistics kept per direction, in register order.
STATS = ("posted_words", "flushes", "requests", "completions", "retries", "discards",
         "master_aborts", "target_aborts")
_STATS_BASE = 0x10


def _stat_registers():
    registers = []
    for d, direction in enumerate(DIRECTIONS):
        for k, name in enumerate(STATS):
            registers.append(ControlRegister(f"{direction.upper()}_{name.upper()}",
                                      _STATS_BASE + len(STATS) * d + k))
    return registers


#: The control-port registers. Statistics count from reset (write any value to clear
#: one); a direction's statistics: ``downstream`` (primary to secondary) and
#: ``upstream``.
REGISTERS = ControlRegisters("BridgeReg", [
    ControlRegister("ID", 0x00, doc='read: ID_VALUE ("PCIB")'),
    ControlRegister("DECODE", 0x01, (
        ControlField("primary_devsel", 0, 2, "DEVSEL# speed on the primary bus (DevselSpeed)",
              reset=DevselSpeed.MEDIUM.value),
        ControlField("secondary_devsel", 2, 2, "DEVSEL# speed on the secondary bus",
              reset=DevselSpeed.MEDIUM.value),
    )),
    ControlRegister("POSTING", 0x02, (
        ControlField("post_threshold", 0, 7, "words of a posted transaction in the buffer before "
                     "its flush starts (all of them once it has ended)", reset=1),
        ControlField("post_max_burst", 8, 7, "most words per flush (0: no limit)"),
        ControlField("post_delay", 16, 8, "clocks a posted word takes to reach the other side"),
        ControlField("post_latency", 24, 5, "clocks from the address phase to the first TRDY# "
                     "of a posted write, minus one (at least the DEVSEL# clock)"),
    )),
    ControlRegister("DELAYS", 0x03, (
        ControlField("request_delay", 0, 8, "clocks a delayed request takes to reach the other "
                     "side's master"),
        ControlField("completion_delay", 8, 8, "clocks its completion takes to come back"),
        ControlField("retry_backoff", 16, 8, "clocks the master half waits after being retried",
              reset=2),
    )),
    ControlRegister("PREFETCH", 0x04, (
        ControlField("prefetch_words", 0, 7, "DWORDs a Memory Read Multiple fetches (1..64)",
              reset=8),
    )),
    ControlRegister("DISCARD", 0x05, (
        ControlField("discard_clocks", 0, 16, "clocks an uncollected completion is kept",
              reset=0x8000),
    )),
    ControlRegister("STATE", 0x06, (
        ControlField("down_state", 0, 2, "DelayedState of the downstream delayed transaction"),
        ControlField("up_state", 2, 2, "... of the upstream one"),
        ControlField("down_posted", 8, 7, "words in the downstream posted-write buffer"),
        ControlField("up_posted", 16, 7, "words in the upstream posted-write buffer"),
    ), doc="read-only"),
    ControlRegister("SECONDARY_BUS", 0x07, doc="read-only: the secondary bus number programmed"),
] + _stat_registers())

#: Control-port register indices.
BridgeReg = REGISTERS.enum()

#: The registers a profile sets (its tuning), in register order.
TUNING = ("DECODE", "POSTING", "DELAYS", "PREFETCH", "DISCARD")


@dataclass(frozen=True)
class BridgeProfile:
    """What a bridge does, in the units of :data:`REGISTERS`' fields (clocks, words).

    Attributes:
        name: the profile's name.
        primary_devsel, secondary_devsel: DEVSEL# speed on each bus.
        post_threshold: words of a posted transaction held before its flush starts.
        post_max_burst: most words per flush (0: no limit).
        post_delay: clocks a posted word takes to cross.
        post_latency: initial latency of a posted write on the bus it comes from.
        request_delay, completion_delay: clocks a delayed request and its completion
            take to cross.
        retry_backoff: clocks the master half waits after a retry.
        prefetch_words: DWORDs a Memory Read Multiple fetches.
        discard_clocks: clocks an uncollected completion is kept.
        doc: what the profile is shaped after.
    """
    name: str
    primary_devsel: DevselSpeed = DevselSpeed.MEDIUM
    secondary_devsel: DevselSpeed = DevselSpeed.MEDIUM
    post_threshold: int = 1
    post_max_burst: int = 0
    post_delay: int = 0
    post_latency: int = 0
    request_delay: int = 0
    completion_delay: int = 0
    retry_backoff: int = 2
    prefetch_words: int = 8
    discard_clocks: int = 1 << 15
    doc: str = ""

    def fields(self):
        """``{field name: value}`` of the tuning registers."""
        return {"primary_devsel": DevselSpeed(self.primary_devsel).value,
                "secondary_devsel": DevselSpeed(self.secondary_devsel).value,
                "post_threshold": self.post_threshold, "post_max_burst": self.post_max_burst,
                "post_delay": self.post_delay, "post_latency": self.post_latency,
                "request_delay": self.request_delay,
                "completion_delay": self.completion_delay,
                "retry_backoff": self.retry_backoff, "prefetch_words": self.prefetch_words,
                "discard_clocks": min(self.discard_clocks, 0xFFFF)}

    def but(self, **changes):
        return replace(self, **changes)


#: A bridge that adds nothing but the protocol (the reset values).
TRANSPARENT = BridgeProfile(name="transparent", doc="no crossing delay: the protocol's "
                            "own cost of a bridge")

#: The Intel 21554 of Enblom's CompactPCI pair ("Performance of a Communication Mechanism
#: over the PCI-bus", Figures 8 and 9), with the system board's path to its memory on
#: the far side. Figure 8: a read crossing the bridge hierarchy is retried every 5
#: clocks (address, medium DEVSEL#, STOP#, the idle clock, the retry's back-off) for 26
#: clocks before its data comes; the crossing delays here put the data there. Figure 9:
#: writes are posted and flushed as soon as one word is in (threshold 1), so a burst
#: whose flush starts while it is still arriving is split in two.
BRIDGE_21554 = BridgeProfile(
    name="21554", request_delay=6, completion_delay=6, post_delay=0,
    doc="Intel 21554 non-transparent bridge on a CompactPCI backplane (Enblom)")

#: Bridge profiles by name.
BRIDGE_PROFILES = {p.name: p for p in (TRANSPARENT, BRIDGE_21554)}


def bridge_profile_by_name(name):
    """The bridge profile called ``name``; a ``ValueError`` naming the known ones
    otherwise."""
    return named(BRIDGE_PROFILES, name, "bridge profile")
