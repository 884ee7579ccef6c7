# SPDX-License-Identifier: BSD-2-Clause
"""The PCI master: turns transfer descriptors into bus transactions.

The initiator takes one :class:`Descriptor` at a time (command, 64-bit address, number of
DWORDs, 64-bit wish) and runs as many bus transactions as the target lets it need: a retry
repeats the same transaction, a disconnect or a latency-timer exit continues at the next
address, a target or master abort ends the descriptor with an error. It reports every
address phase, data phase and termination as one-clock events (:class:`InitiatorEvents`)
so a DMA engine can count them without knowing the protocol.

Timing model (docs/architecture.md, "I/O timing"). Every output of this component is the
*D input* of the pads' output flip-flop: what the component drives in clock ``k`` is on the
pins in clock ``k + 1``. The component keeps a copy of what it drives on FRAME#, IRDY# and
AD (the ``pin_*`` registers). The handshake lines it must react to within one clock (GNT#,
FRAME#, IRDY#, TRDY#, STOP#, DEVSEL#, ACK64#) come through the ``now`` port: the
unregistered pin value of the current clock. They only *select*: the whole decision of a
clock (next state and outputs) is built once per value of the lines that matter in the phase
(on an FPGA; ``expand_live``). The lines choose among the copies' outputs just in front of
the pads' output flip-flops; every copy's next state is registered, with the lines, and the
state is chosen from those registers in the next clock, so that no live line reaches a state
register. The wider registers (address, DWORDs left, the clock counters) keep their value
from before the previous edge with the registered event of that edge and show the updated
value combinationally; the comparisons of them that the decisions read are registered a
clock ahead, one per value that event may take, and the event only chooses among them.
Everything the initiator tells the DMA engine (``events``, ``status``, ``wdata_take``)
leaves registered, one clock after the edge it is about. The formal job ``expansion_prove``
shows the expanded and the folded build to be the same machine. The pads' live parity check
(``par_error``) serves the two-clock PERR# rule. The pads generate PAR themselves, so the
initiator leaves ``bus.par``/``bus.par64`` alone. Read data comes through the registered
``bus.ad.i`` one clock after the data phase. Lines the pads treat as sustained tri-state
(FRAME#, IRDY#, REQ64#, PERR#) are *owned* through ``oe``: when ``oe`` drops, the pads drive
the line deasserted for one more clock and then float it, so the component simply stops
owning a line in the clock it wants it deasserted and released.

Write data is read from a *window* of the next :data:`WDATA_WINDOW` DWORDs of the data
stream (``wdata``); the initiator reports with ``wdata_take`` how many of them moved at the
previous edge (0, 1 or 2), and reads the window from there on: the stream's source
advances a clock after a phase moves. Nothing is consumed by a phase that did not
complete, so a retried or disconnected phase is simply presented again. Read data leaves
as up to two DWORDs per clock (``rdata``), one clock after their data phase.

The modules, one concern each: :mod:`.interface` (what the master exchanges: the
descriptor, the live lines, events and Status pulses), :mod:`.component`
(:class:`Initiator`: ports and the order of the steps), :mod:`.bookkeeping` (the
previous edge, the descriptor, the transaction's registers, the comparisons registered a
clock ahead, the write words, a start, the decided state), :mod:`.decision` (the
decision for one value of the live lines), :mod:`.choice` (the cofactors and the live
lines' choice, now and a clock later), :mod:`.outputs` (the bus outputs, AD's decision,
read data and parity).
"""

from pcispy.core.initiator.component import Initiator
from pcispy.core.initiator.interface import (MASTER_ABORT_CLOCK, WDATA_WINDOW, Descriptor,
                                             DescriptorResult, Handshake, InitiatorEvents,
                                             InitiatorStatus, ReadWords, is_memory_command,
                                             is_write_command)

__all__ = ["Descriptor", "Handshake", "ReadWords", "DescriptorResult", "InitiatorEvents",
           "InitiatorStatus", "Initiator", "MASTER_ABORT_CLOCK", "WDATA_WINDOW",
           "is_write_command", "is_memory_command"]
