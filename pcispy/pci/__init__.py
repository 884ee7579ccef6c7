# SPDX-License-Identifier: BSD-2-Clause
"""The shared vocabulary of the PCI bus: the signal signature, commands, terminations,
DEVSEL# timing (:mod:`.bus`), the protocol rules both monitors check (:mod:`.rules`) and
the word bus between the target and the backends of its windows (:mod:`.backend`).

Plain declarations every other room imports; this package imports nothing of pcispy."""
