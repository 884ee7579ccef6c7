# SPDX-License-Identifier: BSD-2-Clause
"""The shared vocabulary of the PCI bus: the signal signature, commands, terminations,
DEVSEL# timing (:mod:`.bus`) and the protocol rules both monitors check (:mod:`.rules`).

Plain declarations every other room imports; this package imports nothing of pcispy."""
