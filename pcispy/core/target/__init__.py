# SPDX-License-Identifier: BSD-2-Clause
"""The PCI target: decode, data phases, terminations, parity, and the backend bus.

The target sits behind :class:`~pcispy.core.pads.PCIPads`: what it presents at a
clock edge is on the pins during the next clock, and it sees the wide inputs one clock
late. Address decode is therefore registered and DEVSEL# comes out at medium timing
(clock 3, counting the address phase as clock 1) or later when the exerciser asks; a
build can decode within the address phase instead (fast, clock 2) or register the
decode's result a clock before claiming (slow, clock 4: the address pins then reach
only those registers, not the drivers across the die). The
only decisions taken within the clock they are sampled are the handshakes
(``live.irdy``, ``live.frame``) and the PERR#/SERR# answer to ``par_error``.

Every address range the target answers (configuration space and each BAR) is served by a
*backend* on a :class:`~pcispy.pci.backend.BackendSignature` bus: word-addressed requests
with ready/valid and in-order read responses of any latency. Writes are posted through a
small FIFO; reads of windows that allow it are prefetched into a small FIFO, so bursts run
without wait states in both directions when the backend keeps up.

Each transaction ends the PCI way:

- master completion (FRAME# deasserted on the last phase);
- disconnect with data on the first phase for configuration, I/O, non-prefetchable reads
  and memory bursts with a reserved or cache-wrap burst order (AD[1:0] != 0), and on the
  last word of a window (never runs past the end of a BAR);
- the exerciser's programmed responses (:class:`ResponseKnobs`) on windows marked
  ``exerciser``: DEVSEL# delay, initial and subsequent wait states, disconnect after N
  phases with or without data, retry, target abort on an address range, ACK64# by
  address bit, PAR corruption.

Parity: the pads generate PAR for the read data; the target checks the address phase
(SERR# when enabled; the transaction is still claimed and completed, as PCI permits) and
its write data (PERR# two clocks after the data phase when Parity Error Response is set;
Detected Parity Error in any case).

Timing: the live IRDY# and FRAME# reach only the output flip-flops (DEVSEL#, TRDY#,
STOP#, ACK64#, AD and its enable, the PAR corruption) and two registers of their own; the
live PAR reaches SERR#, PERR# and the Status pulses' flip-flops. The one-bit state whose
next value depends on them is registered once per value of the two lines and chosen by
the registered lines in the next clock; wider state is retimed on registered one-bit
events (:class:`~.retimed.Retimed`, :class:`~.retimed.RetimedFIFO`).

The modules, one concern each: :mod:`.window` (what the target is told: windows, the
response knobs, buffer depths), :mod:`.component` (:class:`PCITarget`: ports and the
order of the steps), :mod:`.decode` (address phase, address parity, claim),
:mod:`.transaction` (the transaction's registers and the next clock's arithmetic),
:mod:`.decision` (the decision per value of the live lines, and their choice),
:mod:`.datapath` (prefetch, posted writes, backend requests, read data, write data and
parity), :mod:`.retimed` (the small FIFOs and retimed registers).
"""

from pcispy.core.target.component import PCITarget
from pcispy.core.target.window import (READ_FIFO_DEPTH, WRITE_FIFO_DEPTH, ResponseKnobs,
                                       Window)

__all__ = ["Window", "ResponseKnobs", "PCITarget", "WRITE_FIFO_DEPTH", "READ_FIFO_DEPTH"]
