# SPDX-License-Identifier: BSD-2-Clause
"""What the PCI master exchanges with its user: the transfer :class:`Descriptor`, the live
:class:`Handshake` lines, the read words, the events and Status pulses it reports, and
the phase it is in (``_Phase``, the formal harness's too)."""

from amaranth.lib import data, enum

from pcispy.pci.bus import Command, Termination

__all__ = ["Descriptor", "Handshake", "ReadWords", "DescriptorResult", "InitiatorEvents",
           "InitiatorStatus", "MASTER_ABORT_CLOCK", "WDATA_WINDOW", "is_write_command",
           "is_memory_command", "_Phase"]

#: Counting the address phase as clock 1, DEVSEL# is due by clock 5 (subtractive decode);
#: with none sampled at the end of clock 5 (4 clocks after the address phase) the master
#: aborts.
MASTER_ABORT_CLOCK = 4

#: DWORDs of the write data window: up to two moved at the previous edge (not yet taken
#: from the window), up to two moving now, and the high half of the next 64-bit phase.
WDATA_WINDOW = 6


def is_write_command(cmd):
    """Data flows from the initiator: bit 0 of every write command (and Special Cycle)."""
    return cmd.as_value()[0]


def is_memory_command(cmd):
    """Memory commands: the only ones that may use 64-bit data phases."""
    return cmd.as_value().matches(Command.MEM_READ, Command.MEM_WRITE, Command.MEM_READ_MULTIPLE,
                       Command.MEM_READ_LINE, Command.MEM_WRITE_INVALIDATE)


class Descriptor(data.Struct):
    """One transfer: ``dwords`` DWORDs from byte address ``addr`` (bits 1:0 must be 0).

    ``wide`` asks for 64-bit data phases (used where the address is QWORD aligned and the
    target answers ACK64#). ``more`` says another descriptor follows at once, so REQ# stays
    asserted through this one.
    """
    cmd: Command
    addr: 64
    dwords: 32
    wide: 1
    more: 1


class Handshake(data.Struct):
    """Unregistered pin values of the current clock, inside-level (the same-clock paths)."""
    frame: 1
    irdy: 1
    trdy: 1
    stop: 1
    devsel: 1
    gnt: 1
    ack64: 1


class ReadWords(data.Struct):
    """Read data: ``count`` (0..2) DWORDs in ``dw[0]``, ``dw[1]``, in address order."""
    dw: data.ArrayLayout(32, 2)
    count: 2


class DescriptorResult(enum.Enum, shape=2):
    """How a descriptor ended: every DWORD moved, an abort, or a stop request."""
    OK           = 0
    MASTER_ABORT = 1
    TARGET_ABORT = 2
    STOPPED      = 3


class InitiatorEvents(data.Struct):
    """One-clock events about the pins of one clock. The initiator's ``events`` port
    presents them registered: in the clock after the one they describe."""
    start: 1          # the first address phase of a transaction is on the pins next clock
    gnt_wait: 16      # with start: clocks the initiator had work but waited for GNT#/idle
    owning: 1         # we assert FRAME# or IRDY# on the pins (the bus is ours)
    phase: 1          # a data phase completed (IRDY# and TRDY# sampled asserted)
    dwords: 2         # with phase: DWORDs it moved (1, or 2 for a 64-bit phase)
    first: 1          # with phase: the first data phase of this transaction
    latency: 16       # with first: clocks from the address phase to this data phase
    end: 1            # the transaction ends with this clock (its last phase is on the pins)
    term: Termination  # with end: how it ended
    done: 1           # with end (or when stopped while idle): the descriptor is finished
    result: DescriptorResult  # with done


class InitiatorStatus(data.Struct):
    """One-clock pulses for the configuration Status register (registered, like the
    events)."""
    received_master_abort: 1   # Status bit 13
    received_target_abort: 1   # Status bit 12
    master_data_parity: 1      # Status bit 8 (PERR# asserted or seen while master)
    detected_parity: 1         # Status bit 15 (bad read-data parity detected)


class _Phase(enum.Enum, shape=2):
    """What the initiator has on the pins in the current clock."""
    IDLE = 0   # not in a transaction (the pads may still be releasing our lines)
    DAC  = 1   # first address phase of a Dual Address Cycle
    ADDR = 2   # the address phase carrying the command
    DATA = 3   # a data phase (including the read turnaround and wait states)
