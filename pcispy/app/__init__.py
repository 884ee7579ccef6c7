# SPDX-License-Identifier: BSD-2-Clause
"""What a user runs: the ``pcispy`` command line (:mod:`.cli`), the experiment
suite and its report (:mod:`.report`, ``pcispy report``), ``make demo`` (:mod:`.demo`),
``make bench`` (:mod:`.bench`) and the generated pages of docs/ (:mod:`.docs`).

The top of the import graph: it imports every slice and the simulated system; nothing
imports it."""
