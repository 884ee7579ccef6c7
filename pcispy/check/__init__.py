# SPDX-License-Identifier: BSD-2-Clause
"""pcispy.check: the PCI protocol checker, on the board and in the simulated system.

- :mod:`.registers`: the ``check`` register block and the constants the gateware shares
  with the host;
- :mod:`.checker`: :class:`~.checker.ProtocolChecker`, every rule of
  :data:`pcispy.pci.rules.RULES` on every clock of the bus, with plain ports;
- :mod:`.unit`: :class:`~.unit.CheckUnit`, the checker as the board wires it (its ``regs``
  port);
- :mod:`.check_feature`: reading the checker from the host, and ``pcispy check``.
"""
