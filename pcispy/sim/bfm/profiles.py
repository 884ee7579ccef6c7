# SPDX-License-Identifier: BSD-2-Clause
"""Behaviour profiles of the simulated targets: how a host bridge (or a legacy device)
answers, as plain data.

A :class:`Profile` names every knob of :class:`pcispy.sim.bfm.target.BehaviouralTarget`
in the units a person thinks in (clocks, data phases, 1/256 probabilities). The named
profiles in :data:`PROFILES` are what ``pcispy --sim=PROFILE`` and the system API accept;
most are shaped after the machines measured in Moll & Shand, "Systems Performance
Measurement on PCI Pamette" (FCCM'97), Figure 2 (bandwidth table) and §2 (the behaviour
behind it), and Figure 3 (the real-time clock behind a PCI-to-ISA bridge); two after the
machines of the other seed papers (Enblom's CompactPCI pair, NIKHEF's Pentium Pro).

Latencies count as the specification does: clocks from the address phase (FRAME#
asserted, clock 1) to the clock TRDY# is first asserted, minus one; a latency of 16 means
TRDY# in clock 17. A latency below what the protocol allows (DEVSEL# clock; clock 3 for
reads, because of the AD turnaround) gives the earliest legal clock.
"""

import enum
from dataclasses import dataclass, field, replace

from pcispy.pci.codes import DevselSpeed

__all__ = ["DisconnectMode", "RetryMode", "Profile", "PROFILES", "RTC", "CPCI_21554",
           "DELL_PRO_200",
           "IRQ_ACK_DELAY_DEFAULT", "PARK_TARGETS", "profile_by_name", "named"]


class DisconnectMode(enum.Enum):
    """When the target ends a burst on its own."""
    NONE         = 0  # never (the initiator ends every burst)
    WITH_DATA    = 1  # STOP# with TRDY# on data phase N: N words move
    WITHOUT_DATA = 2  # after N words moved, STOP# without TRDY# on the next phase
    CACHE_LINE   = 3  # STOP# with TRDY# on the last word of each cache line


class RetryMode(enum.Enum):
    """Which attempts the target retries (STOP# without TRDY# on the first data phase)."""
    NONE   = 0
    FIRST  = 1  # a new transaction, chosen with probability p/256, is retried K times in a row
    EVERY  = 2  # every Nth claimed transaction is retried once
    RANDOM = 3  # each attempt is retried with probability p/256


#: Interrupt responder default: acknowledge delay uniform in [100, 400] PCI clocks.
IRQ_ACK_DELAY_DEFAULT = (100, 400)

#: Where a machine's arbiter parks the bus (:attr:`Profile.park`): on the last master
#: that owned it, or always on one master (by its name in ``pcispy/sim/system.py`` MASTERS).
PARK_TARGETS = ("last", "host", "board", "test_device")


@dataclass(frozen=True)
class Profile:
    """Every behaviour knob of a simulated target.

    Attributes:
        name: the profile's name (CLI ``--sim=NAME``).
        devsel: DEVSEL# timing (:class:`DevselSpeed`): fast = clock 2 ... subtractive = 5.
        read_latency: (min, max) clocks to first TRDY# of reads, uniform, drawn per
            transaction from the seeded generator; min == max is fixed.
        write_latency: (min, max) the same for writes.
        wait_mask: 16-bit mask over data phases after the first: bit (i mod wait_period)
            set inserts ``wait_clocks`` wait states before data phase i (i >= 1).
        wait_period: phases after which ``wait_mask`` repeats (1..16).
        wait_clocks: wait states (clocks with TRDY# deasserted) per masked phase (0..15).
        disconnect: :class:`DisconnectMode`.
        disconnect_every: N, in data phases, for the WITH_DATA/WITHOUT_DATA modes.
        cache_line_dwords: Cache Line Size (config 0x0C), in DWORDs, power of two (or 0).
        retry: :class:`RetryMode`.
        retry_count: K (FIRST) or N (EVERY).
        retry_probability: p, in 1/256 (256 = always), for FIRST and RANDOM.
        retry_reads, retry_writes: which directions the retry policy applies to.
        retry_latency: clocks from the address phase to STOP# of a retry (at least the
            DEVSEL# clock).
        abort_range: (base, size) in bytes of addresses answered with target abort, or None.
        ack64: answers REQ64# with ACK64# (64-bit data phases on a 64-bit bus).
        bad_par_phase: read data phase (0-based) given a wrong PAR, or None.
        irq_ack_delay: (min, max) clocks, uniform: the interrupt responder's delay from
            INTA# to its acknowledging write.
        breaks_rules: protocol-checker rules (names in ``pcispy/check/checker.py``) this
            machine breaks on purpose, as the real one did; benches expect exactly these.
        park: where the machine's arbiter parks the bus when nobody requests
            (:data:`PARK_TARGETS`): ``"last"``, the last owner, or a master's name.
        bridge: the name of a bridge profile (pcispy/sim/bfm/bridge_control.py
            ``BRIDGE_PROFILES``): the machine has the board behind a PCI-to-PCI bridge of
            that kind (its simulated system is built with ``SystemConfig(bridge=True)``),
            or None.
    """
    name: str
    devsel: DevselSpeed = DevselSpeed.FAST
    read_latency: tuple = (0, 0)
    write_latency: tuple = (0, 0)
    wait_mask: int = 0
    wait_period: int = 16
    wait_clocks: int = 0
    disconnect: DisconnectMode = DisconnectMode.NONE
    disconnect_every: int = 0
    cache_line_dwords: int = 8
    retry: RetryMode = RetryMode.NONE
    retry_count: int = 0
    retry_probability: int = 256
    retry_reads: bool = True
    retry_writes: bool = True
    retry_latency: int = 0
    abort_range: tuple = None
    ack64: bool = True
    bad_par_phase: int = None
    irq_ack_delay: tuple = field(default=IRQ_ACK_DELAY_DEFAULT)
    breaks_rules: tuple = ()
    park: str = "last"
    bridge: str = None

    def __post_init__(self):
        if self.park not in PARK_TARGETS:
            raise ValueError(f"{self.name}: park {self.park!r} is none of {PARK_TARGETS}")

    @property
    def deterministic(self):
        """True when every transaction's timing follows from the knobs alone (no draw from
        the seeded generator): fixed latencies, and no random retry choice."""
        fixed = (self.read_latency[0] == self.read_latency[1]
                 and self.write_latency[0] == self.write_latency[1])
        random_retry = (self.retry == RetryMode.RANDOM
                        or (self.retry == RetryMode.FIRST and self.retry_probability < 256))
        return fixed and not random_retry

    def but(self, **changes):
        """A copy with some knobs changed (``PROFILES["ideal"].but(ack64=False)``)."""
        return replace(self, **changes)


#: Zero wait states, fast DEVSEL#, no disconnects or retries, 64-bit capable.
IDEAL = Profile(name="ideal")

#: AlphaStation 200/400 (21071 bridge), Figure 2 row "AlphaStation 200 4/166" and §2 DMA
#: Write: the bridge disconnects after 16 data words, which held DMA write at 107 MB/s
#: (and DMA read at 67-68 MB/s). A 32-bit bus with medium decode. Its arbiter parks on
#: the board (a choice of this model, not a measurement: the bus idles parked on the
#: exerciser, which then drives AD, C/BE# and PAR).
ALPHASTATION_200 = Profile(
    name="alphastation200", devsel=DevselSpeed.MEDIUM,
    read_latency=(8, 8), write_latency=(0, 0),
    disconnect=DisconnectMode.WITH_DATA, disconnect_every=16, ack64=False, park="board")

#: Pentium Pro 200 (HP Vectra XU 6/200, 80450KX), Figure 2 and §2 DMA Read: the memory
#: latency to first read data averaged 35 clocks with values up to 60 (uniform 10..60
#: has mean 35). Writes post quickly; 32-bit bus.
PENTIUM_PRO_200 = Profile(
    name="pentiumpro200", devsel=DevselSpeed.MEDIUM,
    read_latency=(10, 60), write_latency=(0, 0), ack64=False,
    breaks_rules=("target_initial_latency", "target_initial_latency_bridge"))

#: Digital Celebris GL 5133 (Pentium 133, 80430FX "Triton I"), Figure 2: a 32-bit-only
#: host that bursts long (124 MB/s DMA write, 130 DMA read) with a short read latency and
#: a wait state every 8th data phase (the memory system catching up, §2).
CELEBRIS_GL_5133 = Profile(
    name="celebris5133", devsel=DevselSpeed.MEDIUM,
    read_latency=(6, 6), write_latency=(0, 0),
    wait_mask=0x0080, wait_period=8, wait_clocks=1, ack64=False)

#: AlphaServer 4100 5/300, Figure 2: a 64-bit bus bursting without limit (260 MB/s DMA
#: write, 240 MB/s read) behind a long read latency. Its arbiter parks on the board (as
#: alphastation200's, a choice of this model).
ALPHASERVER_4100 = Profile(
    name="alphaserver4100", devsel=DevselSpeed.MEDIUM,
    read_latency=(16, 16), write_latency=(0, 0), ack64=True, park="board")

#: The PC real-time clock behind a PCI-to-ISA bridge, Figure 3 (AlphaStation 200 log):
#: reads take 39 clocks to first data, writes 31-34; one write group in six was retried
#: 7 times in a row before it went through. Used by :class:`pcispy.sim.bfm.legacy.LegacyDevice`.
RTC = Profile(
    name="rtc", devsel=DevselSpeed.SUBTRACTIVE,
    read_latency=(39, 39), write_latency=(31, 34),
    retry=RetryMode.FIRST, retry_count=7, retry_probability=43,
    retry_reads=False, retry_writes=True, ack64=False,
    breaks_rules=("target_initial_latency", "target_initial_latency_bridge"))

#: Enblom's CompactPCI pair ("Performance of a Communication Mechanism over the PCI-bus",
#: SBS CT7 boards): the board is the non-system board, behind the 21554 bridge
#: (pcispy/sim/bfm/bridge_control.py ``BRIDGE_PROFILES["21554"]``); the host is the system board,
#: whose memory answers the bridge's reads after 8 clocks (with the bridge's crossings, a
#: read is retried 26 clocks as in Figure 8). A 32-bit bus with medium decode.
CPCI_21554 = Profile(
    name="cpci21554", devsel=DevselSpeed.MEDIUM, read_latency=(8, 8), write_latency=(0, 0),
    ack64=False, bridge="21554")

#: The Dell Pentium Pro 200 of NIKHEF's S-LINK measurements ("S-LINK performance
#: measurements in the PC environment", Figure 4's trace): Memory Read Multiple's first
#: word 330-450 ns (11-15 clocks) after its address. A 32-bit bus with medium decode.
DELL_PRO_200 = Profile(
    name="dellpro200", devsel=DevselSpeed.MEDIUM, read_latency=(11, 15),
    write_latency=(0, 0), ack64=False)

#: Every named profile, by name.
PROFILES = {p.name: p for p in (IDEAL, ALPHASTATION_200, PENTIUM_PRO_200, CELEBRIS_GL_5133,
                                 ALPHASERVER_4100, RTC, CPCI_21554, DELL_PRO_200)}


def named(table, name, what):
    """``table[name]``; a ``ValueError`` naming ``what`` and the known names otherwise."""
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"unknown {what} {name!r}; "
                         f"known: {', '.join(sorted(table))}") from None


def profile_by_name(name):
    """The profile called ``name``; a ``ValueError`` naming the known ones otherwise."""
    return named(PROFILES, name, "simulation profile")
