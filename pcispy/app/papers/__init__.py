# SPDX-License-Identifier: BSD-2-Clause
"""The experiments of the seed papers beyond PCI Pamette's (pcispy/app/report.py has
Pamette's): Enblom's bridge (:mod:`.enblom`), NIKHEF's S-LINK (:mod:`.nikhef`) and
DART's register and interrupt timing (:mod:`.dart`), each a feature with the paper's
figures beside it."""

from pcispy.app.papers import dart, enblom, nikhef

__all__ = ["PAPERS", "dart", "enblom", "nikhef"]

#: The experiments by their key in a report: each module has ``PAPER``, ``TITLE``,
#: ``PROFILE`` (the simulated machine it is shaped for), ``run(transport, sizes, seed)``
#: (the feature with a report's sizes), ``blocks(result)`` (its report section) and
#: ``figures(result)`` (``[figure, quantity, pcispy, paper]`` rows).
PAPERS = {"enblom": enblom, "nikhef": nikhef, "dart": dart}
