# SPDX-License-Identifier: BSD-2-Clause
"""pcispy: a parallel-PCI exerciser and bus spy.

The distribution maps the repository's folders onto subpackages:
``gateware/`` is :mod:`pcispy.gateware`, ``sim/`` is :mod:`pcispy.sim` and
``host/`` is :mod:`pcispy.host` (see pyproject.toml).
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
