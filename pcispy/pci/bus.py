# SPDX-License-Identifier: BSD-2-Clause
"""The PCI bus as the design sees it: the signal signature, the sampled-bus layout and the
protocol enums (commands, terminations, DEVSEL timing).

Polarity convention, active-low at the pads only: inside the design every
control line is active-high (``frame`` = 1 means FRAME# is asserted, i.e. low on the pin).
:data:`ACTIVE_LOW` names the lines the pads invert. Two groups are carried exactly as on the
pins and are *not* inverted:

- ``ad``/``ad_hi`` and ``par``/``par64``: data, not assertions;
- ``cbe``/``cbe_hi``: C/BE# as on the pins, because the command codes of the specification
  (and of :class:`Command`) are pin levels. Byte enables are therefore active-low
  (``cbe == 0b0000`` enables all four bytes); use :func:`byte_enables` for active-high.

This module is imported by the gateware, the simulated bus models and the host (for the
enum names), so it holds no state machine. DEVSEL# timing (:class:`DevselSpeed`), the
commands' mnemonics and a slot's lines (:func:`bus_lines`) are declared, as data, in
:mod:`pcispy.pci.codes`.
"""

from amaranth import Mux
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out

from pcispy.pci.codes import (COMMAND_MNEMONICS as _MNEMONICS_BY_CODE, DECODE_SPEEDS,
                               DevselSpeed, bus_lines)

__all__ = [
    "Command", "Termination", "DevselSpeed", "DECODE_SPEEDS",
    "COMMAND_MNEMONICS", "TERMINATION_NAMES",
    "ACTIVE_LOW", "OPEN_DRAIN", "SUSTAINED_TRISTATE",
    "bus_lines", "TriStateSignature", "PCIBusSignature", "BusState", "ADDecision",
    "parity", "byte_enables",
]


class Command(enum.Enum, shape=4):
    """The bus command, as driven on C/BE#[3:0] in the address phase (pin levels)."""
    INTERRUPT_ACK        = 0b0000
    SPECIAL_CYCLE        = 0b0001
    IO_READ              = 0b0010
    IO_WRITE             = 0b0011
    RESERVED_4           = 0b0100
    RESERVED_5           = 0b0101
    MEM_READ             = 0b0110
    MEM_WRITE            = 0b0111
    RESERVED_8           = 0b1000
    RESERVED_9           = 0b1001
    CONFIG_READ          = 0b1010
    CONFIG_WRITE         = 0b1011
    MEM_READ_MULTIPLE    = 0b1100
    DUAL_ADDRESS         = 0b1101
    MEM_READ_LINE        = 0b1110
    MEM_WRITE_INVALIDATE = 0b1111

    # Python-side classification; gateware decodes the code bits itself.
    @property
    def is_reserved(self):
        return self.name.startswith("RESERVED")

    @property
    def is_memory(self):
        return self in (Command.MEM_READ, Command.MEM_WRITE, Command.MEM_READ_MULTIPLE,
                        Command.MEM_READ_LINE, Command.MEM_WRITE_INVALIDATE)

    @property
    def is_io(self):
        return self in (Command.IO_READ, Command.IO_WRITE)

    @property
    def is_config(self):
        return self in (Command.CONFIG_READ, Command.CONFIG_WRITE)

    @property
    def is_read(self):
        """Data flows from target to initiator (bit 0 of the code is 0, except the specials)."""
        return self in (Command.INTERRUPT_ACK, Command.IO_READ, Command.MEM_READ,
                        Command.CONFIG_READ, Command.MEM_READ_MULTIPLE, Command.MEM_READ_LINE)

    @property
    def mnemonic(self):
        return COMMAND_MNEMONICS[self]


#: Short names used in tables, CSV exports and on the command line
#: (:data:`pcispy.pci.codes.COMMAND_MNEMONICS`, by command).
COMMAND_MNEMONICS = {command: _MNEMONICS_BY_CODE[command.value] for command in Command}


class Termination(enum.Enum, shape=3):
    """How a transaction ended (who ended it, and whether the last phase moved data)."""
    COMPLETION        = 0  # master completion: the initiator ended it normally
    MASTER_ABORT      = 1  # no DEVSEL# in time
    RETRY             = 2  # STOP# without TRDY# on the first data phase
    DISCONNECT_DATA   = 3  # STOP# with TRDY#: one last word moved
    DISCONNECT_NODATA = 4  # STOP# without TRDY# after data moved
    TARGET_ABORT      = 5  # STOP# with DEVSEL# deasserted
    LATENCY_TIMER     = 6  # the initiator's latency timer expired with GNT# removed

    @property
    def label(self):
        return TERMINATION_NAMES[self]


#: Names used in CSV/JSON exports (lower case, as in the CSV column ``term``).
TERMINATION_NAMES = {
    Termination.COMPLETION:        "completion",
    Termination.MASTER_ABORT:      "master_abort",
    Termination.RETRY:             "retry",
    Termination.DISCONNECT_DATA:   "disconnect_data",
    Termination.DISCONNECT_NODATA: "disconnect_nodata",
    Termination.TARGET_ABORT:      "target_abort",
    Termination.LATENCY_TIMER:     "latency_timer",
}


#: Lines that are active-low on the pins and active-high inside the design.
ACTIVE_LOW = frozenset({
    "frame", "irdy", "trdy", "stop", "devsel", "lock", "perr", "serr",
    "req", "gnt", "inta", "intb", "intc", "intd", "rst", "req64", "ack64",
})

#: Open-drain lines: any number of agents may pull them low (wired-AND on the pins).
OPEN_DRAIN = frozenset({"serr", "inta", "intb", "intc", "intd"})

#: Sustained tri-state lines: the owner drives them deasserted for one clock before releasing.
SUSTAINED_TRISTATE = frozenset({
    "frame", "irdy", "trdy", "stop", "devsel", "lock", "perr", "req64", "ack64",
})

#: Lines whose drivers present ``o`` as 0 wherever ``oe`` is 0: the board ORs the
#: cores' values as they are and the pads drive them without gating the value by the
#: enable again, so that a live line reaches the output register through the cores'
#: choice of the value alone, not through the choice of the enable as well. (The
#: initiator gates each cofactor's value with its own enable, from registers; the
#: target asserts its lines only in the branches that own them. The formal jobs check
#: it: ``released_zero``.)
PRESENTED_GATED = frozenset({
    "ad", "ad_hi", "cbe", "cbe_hi", "frame", "irdy", "trdy", "stop", "devsel", "req64",
    "ack64",
})


class TriStateSignature(wiring.Signature):
    """One bus line (or group) as seen by a driver: ``o`` value, ``oe`` enable, ``i`` sampled.

    ``oe`` is one bit for the whole group: a group is always driven as a unit.
    """
    def __init__(self, width=1):
        self.width = width
        super().__init__({
            "o":  Out(width),
            "oe": Out(1),
            "i":  In(width),
        })


class PCIBusSignature(wiring.Signature):
    """The PCI bus seen from an agent: every line of :func:`bus_lines` as an o/oe/i triple.

    Lines the agent never drives (RST#, GNT#, IDSEL) are still triples; it keeps ``oe`` low.
    Values are inside-level (see the module docstring for polarity).
    """
    def __init__(self, width=32):
        self.width = width
        super().__init__({name: Out(TriStateSignature(bits))
                          for name, bits in bus_lines(width).items()})


class BusState(data.StructLayout):
    """Every line of the bus in one clock, inside-level: what a monitor samples.

    ``masters`` widens ``req``/``gnt`` to one bit per master when a monitor sees several
    (the simulated system's checker does; a board in a slot sees only its own).
    """
    def __init__(self, width=32, masters=1):
        self.width = width
        self.masters = masters
        fields = dict(bus_lines(width))
        fields["req"] = masters
        fields["gnt"] = masters
        super().__init__(fields)


class ADDecision(data.StructLayout):
    """A master's AD[31:0] for the next clock as one decision between two words.

    ``high`` with its enable ``high_oe`` where ``take_high`` is set (decided from the
    live handshake lines), else ``low`` with ``low_oe``; each word 0 where its enable is
    (the rule of :data:`PRESENTED_GATED`). The words and enables come from registers;
    ``take_high`` is the only value the live lines decide in the clock. It comes in
    ``groups`` identical copies, one for each group of AD pins the pads serve, so that
    every copy can sit next to its pins; the pads make the choice in the cell that joins
    the other cores' AD (:class:`~.pads.PCIPads`, ``master_ad``): a live line crosses the
    decision's slice pair and that one cell (docs/timing.md, the data paths' depth), with
    one long wire (from the pin to a group's decision) rather than several. A master
    that decides AD some other way hands over its word as ``high`` with every copy of
    ``take_high`` set. Its value: :meth:`word` and :meth:`enable` of a view; a group's
    copy: :meth:`take_high_of`.
    """
    def __init__(self, groups=1):
        self.groups = groups
        super().__init__({"take_high": groups, "high": 32, "low": 32,
                          "high_oe": 1, "low_oe": 1})

    def __call__(self, target):
        return _ADDecisionView(self, target)


class _ADDecisionView(data.View):
    def take_high_of(self, group):
        """Copy ``group`` of the decision."""
        return self.take_high[group]

    def word(self):
        """The word presented: ``high`` or ``low``, as the decision chooses (the first
        group's copy: every copy holds the same)."""
        return Mux(self.take_high[0], self.high, self.low)

    def enable(self):
        """Whether AD is driven: ``high_oe`` or ``low_oe``, as the decision chooses."""
        return Mux(self.take_high[0], self.high_oe, self.low_oe)


def parity(*values):
    """Even parity bit over the given integers (PAR: count of ones including PAR is even)."""
    ones = 0
    for value in values:
        ones += bin(value).count("1")
    return ones & 1


def byte_enables(cbe):
    """Active-high byte-enable mask from a C/BE# pin value (Python ints or Amaranth values)."""
    return ~cbe & 0xF if isinstance(cbe, int) else ~cbe
