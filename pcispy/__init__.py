# SPDX-License-Identifier: BSD-2-Clause
"""pcispy: a parallel-PCI exerciser and bus spy.

An import path is a folder path: :mod:`pcispy.spy` is ``pcispy/spy/``. The rooms, from the
bottom of the import graph to the top (docs/architecture.md draws them):

- :mod:`pcispy.pci`: the PCI vocabulary (signature, commands, rules);
- :mod:`pcispy.csr`: the register idiom and the register bank;
- :mod:`pcispy.core`: pads, configuration space, target, master;
- :mod:`pcispy.platform`: ECP5 cells, the boards' pin-outs, the bitstream build;
- :mod:`pcispy.host`: board driver, transports, errors, the command framework;
- the capability slices, each with its gateware, registers, host features, CLI commands and
  tests: :mod:`pcispy.exerciser`, :mod:`pcispy.dma`, :mod:`pcispy.spy`, :mod:`pcispy.irq`,
  :mod:`pcispy.sidechannel`;
- :mod:`pcispy.board`: the slices wired into one board, and its register map;
- :mod:`pcispy.formal`: the proofs; :mod:`pcispy.sim`: the simulated PCI system;
- :mod:`pcispy.app`: the CLI, the report, the demo and the benchmarks.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
