# SPDX-License-Identifier: BSD-2-Clause
"""pcispy: a parallel-PCI exerciser and bus spy.

An import path is a folder path: :mod:`pcispy.spy` is ``pcispy/spy/``. The rooms of the
import graph, from the bottom to the top (declared in :mod:`pcispy.rooms`, which
pcispy/tests/test_rooms.py holds every import to; docs/architecture.md draws the blocks):

- :mod:`pcispy.pci`: the PCI vocabulary (signature, commands, rules, codes);
- :mod:`pcispy.csr`: the register idiom and the register bank;
- data: every slice's ``registers.py`` and the board's (the register blocks and the
  constants and codes they share with the gateware), the side channel's frames; no
  gateware, so the host's board driver loads without Amaranth;
- :mod:`pcispy.core`: pads, configuration space, target, master;
- the capability slices' gateware, each on the core only: :mod:`pcispy.exerciser`,
  :mod:`pcispy.dma`, :mod:`pcispy.spy`, :mod:`pcispy.check` (the protocol checker),
  :mod:`pcispy.irq`, :mod:`pcispy.sidechannel`;
- :mod:`pcispy.board`: the slices wired into one board; :mod:`pcispy.platform` on it: the
  board on an FPGA, ECP5 cells, the boards' pin-outs, the bitstream build;
- :mod:`pcispy.host`, on the data only: board driver, transports, errors, the command
  framework; :mod:`pcispy.trace` on it: trace files, decoder, exports;
- the slices' host features and commands (``*_feature.py``), on the host, the traces and
  the slices;
- :mod:`pcispy.sim` (the simulated PCI system) and :mod:`pcispy.formal` (the proofs), on
  the board;
- :mod:`pcispy.app`: the CLI, the report, the demo and the benchmarks, on everything.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
