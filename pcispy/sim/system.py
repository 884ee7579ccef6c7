# SPDX-License-Identifier: BSD-2-Clause
"""The simulated PCI system as configured: :class:`SystemConfig` says which agents a system
has and how the board is built, :class:`Agent` and :data:`REGISTERS` are its control port's
selects and system registers. The gateware itself, the board and the behavioural agents on
one bus, is pcispy/sim/pcisystem.py; :func:`pcispy.sim.model.build_system` builds (or finds in
the cache) the Verilator model of a configuration.

Slots and masters::

    slot 0: the board (IDSEL = AD[16])        master 0: the host bridge
    slot 1: the test device (IDSEL = AD[17])  master 1: the board
                                               master 2: the test device
                                               master 3: the saboteur

The saboteur (pcispy/sim/bfm/saboteur.py) breaks the resolver's driver rules on command:
a master that can park badly and two channels that drive any line at any moment, three
agents on the resolver (``SystemConfig(saboteur=False)`` leaves it out; idle, it drives
nothing) (:func:`driver_names` lists the resolver's agents in order).
``SystemConfig(trace_memory="sram")`` and ``"sdram"`` put the board's trace memory in an
SRAM or SDRAM model on its pins; ``SystemConfig(decode="slow")`` builds the board's target
with slow decode, as the bitstreams are built; ``SystemConfig(bridge=True)`` puts slot 0
behind a PCI-to-PCI bridge, on a secondary bus of its own (bus :data:`SECONDARY_BUS`, its
agents :func:`secondary_driver_names`).

The CLI, the launcher and the cocotb side import this module, so it loads none of the
board's or the bus models' gateware, nor Amaranth: a command on a running session reads
the configuration (a Verilog core's description included) without either.
"""

import enum
from dataclasses import dataclass

from pcispy.pci.codes import DevselSpeed
from pcispy.pci.rules import DRIVER_RULES
from pcispy.sim.control_registers import ControlField, ControlRegister, ControlRegisters
from pcispy.sim.core_description import CoreDescription

__all__ = ["Agent", "SystemConfig", "SystemReg", "REGISTERS", "BOARD_SLOT", "TEST_DEVICE_SLOT",
           "IDSEL_AD_BIT", "MASTERS", "driver_names", "slot0_is_master", "slot0_name",
           "SECONDARY_BUS", "SECONDARY_MASTERS", "secondary_driver_names"]


#: IDSEL of slot k is AD[IDSEL_AD_BIT + k].
IDSEL_AD_BIT = 16
BOARD_SLOT = 0
TEST_DEVICE_SLOT = 1
#: Master numbers on the arbiter.
MASTERS = {"host": 0, "board": 1, "test_device": 2, "saboteur": 3}
#: With a bridge: the secondary bus's number, and the master numbers on its arbiter.
SECONDARY_BUS = 1
SECONDARY_MASTERS = {"bridge": 0, "board": 1}


class Agent(enum.IntEnum):
    """Control-port select values (``ctl_sel``) of the agents."""
    HOST_INITIATOR = 0
    HOST_MEMORY = 1
    IRQ_RESPONDER = 2
    TEST_INITIATOR = 3
    TEST_TARGET = 4
    LEGACY = 5
    ARBITER = 6
    SYSTEM = 7
    SABOTEUR = 8
    BRIDGE = 9
    SECONDARY_ARBITER = 10
    SECONDARY_SYSTEM = 11


#: The system's own control-port registers (:attr:`Agent.SYSTEM`).
REGISTERS = ControlRegisters("SystemReg", [
    ControlRegister("CYCLE_LO", 0, doc="clocks since the model started, the one count the "
                    "checker and resolver logs use too (RST# does not reset it); reading LO "
             "latches HI"),
    ControlRegister("CYCLE_HI", 1),
    ControlRegister("CONTENTION", 2, doc="sticky flags, one per shared line (shared_lines order)"),
    ControlRegister("CONTENTION_LINE", 3, doc="index of the line of the first contention"),
    ControlRegister("CONTENTION_CYCLE", 4),
    ControlRegister("CLEAR", 5, doc="write 1: clear contention and checker evidence"),
    ControlRegister("CHECK_ANY", 8, doc="1 when any checker rule fired"),
    ControlRegister("CHECK_FIRST_RULE", 9),
    ControlRegister("CHECK_FIRST_CYCLE", 10),
    ControlRegister("CHECK_INDEX", 11, doc="write a rule index, then read CHECK_COUNT"),
    ControlRegister("CHECK_COUNT", 12),
    ControlRegister("CHECK_ENABLE_LO", 13, doc="rule enable mask, bits 0..31"),
    ControlRegister("CHECK_ENABLE_HI", 14, doc="rule enable mask, bits 32..63"),
    ControlRegister("SRAM_ERRORS", 15,
                    doc="with an SRAM trace memory: the SRAM model's timing breaches"),
    ControlRegister("SRAM_CONTENTION", 16,
                    doc="clocks both the board and the SRAM drove the SRAM's data pins"),
    ControlRegister("SDRAM_FLAGS", 6, doc="with an SDRAM trace memory: the SDRAM model's broken "
                    "rules, sticky, bit = pcispy.sim.bfm.sdram.Violation"),
    ControlRegister("SDRAM_ERRORS", 7, doc="clocks the SDRAM model saw a rule broken in"),
    ControlRegister("SDRAM_REFRESHES", 22, doc="REFRESH commands the SDRAM model took"),
    # The resolver's driver rules (pcispy/pci/rules.py DRIVER_RULES; bit/offset = id).
    ControlRegister("DRIVER_FLAGS", 17, doc="sticky flags, one per driver rule"),
    ControlRegister("DRIVER_LOG_ENTRIES", 18,
                    doc="entries in the resolver's violation log (0..16)"),
    ControlRegister("DRIVER_LOG_INDEX", 19, doc="write an entry index, then read the entry"),
    ControlRegister("DRIVER_LOG_CYCLE", 20,
                    doc="the entry's cycle (clocks since the model started)"),
    ControlRegister("DRIVER_LOG_ENTRY", 21, doc="the entry", fields=(
        ControlField("rule", 0, 8, "the driver rule's id"),
        ControlField("line", 8, 8, "the line (index into shared_lines)"),
        ControlField("agent_a", 16, 8, "agent A (index into driver_names(), 15 = none)"),
        ControlField("agent_b", 24, 8, "agent B (likewise)"),
    )),
    # The protocol checker's violation log (one entry per clock with a violation).
    ControlRegister("CHECK_LOG_ENTRIES", 24, doc="entries in the checker's log (0..16)"),
    ControlRegister("CHECK_LOG_INDEX", 25, doc="write an entry index, then read the entry"),
    ControlRegister("CHECK_LOG_CYCLE", 26,
                    doc="the entry's cycle (clocks since the model started)"),
    ControlRegister("CHECK_LOG_RULES_LO", 27, doc="the rules broken in that clock, bits 0..31"),
    ControlRegister("CHECK_LOG_RULES_HI", 28, doc="bits 32..63"),
    ControlRegister("CHECK_LOG_MASTER", 29, doc="the master of the transaction then (7: unknown)"),
    ControlRegister("CHECK_LOG_TARGET", 30, doc="the agent that answered as the target then "
                    "(index into driver_names(); 15: none)"),
    ControlRegister("DRIVER_COUNT", 32, words=len(DRIVER_RULES),
                    doc="word = driver rule id: clocks that rule was broken in (saturating)"),
    ControlRegister("PINS_LO", 48, doc="the signature of every agent's pins (each line's output "
                    "enable and, while enabled, its output; REQ#/GNT#, RST#) over every clock so "
             "far; reading LO latches HI"),
    ControlRegister("PINS_HI", 49),
])

#: Register indices of the system's control port.
SystemReg = REGISTERS.enum()


@dataclass(frozen=True)
class SystemConfig:
    """What the simulated system contains. Part of the model's identity (cache key)."""
    width: int = 32
    board: bool = True
    test_device: bool = True
    legacy: bool = True
    checker: bool = True
    host_memory_addr_bits: int = 20     # words of host memory (2**20 x 4 bytes = 4 MiB)
    test_memory_addr_bits: int = 12
    exerciser_size: int = 64 * 1024     # bytes of the board's BAR2
    #: The board's trace memory: "bram", "sram" (an asynchronous SRAM model on the
    #: board's SRAM pins, of sram_addr_bits x sram_data_bits: 2**18 x 32 = 1 MiB, 65536
    #: trace slots) or "sdram" (below).
    trace_memory: str = "bram"
    sram_addr_bits: int = 18
    sram_data_bits: int = 32
    #: With "sdram" (an SDRAM model on the board's SDRAM pins, the data sheet's timing at
    #: 33 MHz): its rows per bank, log2 (4: 4 banks x 16 rows x 512 columns x 16 bits =
    #: 128 KiB, 4096 trace slots, as deep as the block RAM; the ULX3S's part has 13), and
    #: the slots of the FIFO in front of it (on the bus clock the SDRAM takes a summary
    #: each 16 clocks; retry storms bring them faster).
    sdram_row_bits: int = 4
    sdram_fifo_depth: int = 256
    #: The board target's decode speed by name: "medium", or "slow" (the bitstreams').
    decode: str = "medium"
    #: The saboteur (master 3 and two line channels, pcispy/sim/bfm/saboteur.py).
    saboteur: bool = True
    #: The core in slot 0: None for pcispy's board (PCIBoard), a
    #: :class:`~pcispy.sim.core_description.CoreDescription` of a Verilog core (a dict of one is
    #: converted, as a bench's JSON brings it), or ``"module:function"`` naming a function
    #: of the bus width that returns an Amaranth component keeping the slot-0 contract
    #: (pcispy/sim/core_description.py). The board's options (trace memory, decode, exerciser size)
    #: apply to the board only.
    core: object = None
    #: Slot 0 behind a PCI-to-PCI bridge, on a secondary bus of its own (32-bit only).
    bridge: bool = False
    #: False: the reference build of the same sources, their simulation optimisation off:
    #: every agent and the resolver's evidence on the plain bus clock (no clock gating,
    #: pcispy/sim/bfm/gate.py). It behaves the same at every pin, clock for clock, only
    #: slower (test_pin_trace.py holds the two side by side).
    optimised: bool = True

    def __post_init__(self):
        if isinstance(self.core, dict):
            object.__setattr__(self, "core", CoreDescription.from_dict(self.core))
        if self.core is not None and self.trace_memory != "bram":
            raise ValueError(f"trace_memory={self.trace_memory!r} is an option of pcispy's "
                             "board, not of another core in slot 0")
        if self.bridge and (self.width != 32 or not self.board):
            raise ValueError("the bridge is a 32-bit bridge in front of slot 0: it needs "
                             "width=32 and a board")

    @property
    def name(self):
        parts = [f"pcisys{self.width}"]
        if not self.board:
            parts.append("noboard")
        if self.trace_memory != "bram":
            parts.append(self.trace_memory)
        if self.decode != "medium":
            parts.append(self.decode)
        if not self.saboteur:
            parts.append("nosab")
        if self.core is not None:
            label = getattr(self.core, "label", None) or str(self.core).rpartition(":")[2]
            parts.append(f"core-{label}")
        if self.bridge:
            parts.append("bridge")
        if not self.optimised:
            parts.append("reference")
        return "_".join(parts)

    def sdram_timing(self):
        """The SDRAM's :class:`~pcispy.spy.sdram.SDRAMTiming` (in bus clocks, 33 MHz)."""
        # The spy's gateware loads only for an SDRAM system (see the module's docstring).
        from pcispy.spy.sdram import SDRAMTiming
        return SDRAMTiming.for_clock(33, row_bits=self.sdram_row_bits)

    def board_options(self):
        """The board's keyword arguments for its trace memory and decode speed."""
        options = {"decode": DevselSpeed[self.decode.upper()]}
        if self.trace_memory == "sdram":
            options.update(trace_memory="sdram", sdram_timing=self.sdram_timing(),
                           sdram_fifo_depth=self.sdram_fifo_depth)
        elif self.trace_memory != "bram":
            options.update(trace_memory=self.trace_memory, sram_addr_bits=self.sram_addr_bits,
                           sram_data_bits=self.sram_data_bits)
        return options


def driver_names(config=SystemConfig()):
    """The resolver's agents in its order (the names its evidence uses): the agents with
    a bus by :class:`Agent` name, then slot 0's (:func:`slot0_name`), then the saboteur's
    three agents (``"saboteur"``, its master; ``"saboteur_a"``, ``"saboteur_b"``, its
    channels)."""
    names = ["host_initiator", "host_memory"]
    if config.test_device:
        names += ["test_initiator", "test_target"]
    if config.legacy:
        names.append("legacy")
    if config.board:
        names.append("bridge" if config.bridge else slot0_name(config))
    if config.saboteur:
        names += ["saboteur", "saboteur_a", "saboteur_b"]
    return names


def secondary_driver_names(config):
    """The agents of the secondary bus's resolver, in its order (with a bridge)."""
    return ["bridge", slot0_name(config)]


def slot0_name(config):
    """What reports call slot 0's agent: ``"board"`` for pcispy's board, else the core's
    name (a description's ``label``, a ``"module:function"`` core's function name)."""
    core = config.core
    if core is None:
        return "board"
    name = core.rpartition(":")[2] if isinstance(core, str) else core.label
    # Never one of the other agents' names, so that evidence names one agent only.
    others = {agent.name.lower() for agent in Agent} | {"saboteur", "saboteur_a", "saboteur_b"}
    return f"slot0_{name}" if name in others else name


def slot0_is_master(config):
    """Whether slot 0 of ``config`` holds a master (REQ#/GNT# on the arbiter's master
    ``MASTERS["board"]``): pcispy's board and Amaranth cores do; a described core does
    when its pin map drives REQ# and reads GNT#."""
    core = config.core
    return config.board and (core is None or isinstance(core, str) or core.is_master)
