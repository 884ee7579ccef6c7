# SPDX-License-Identifier: BSD-2-Clause
"""Traces on the host: the ``.pcitrace`` file (:mod:`.file`), the decoder (:mod:`.decode`) and
the exports (:mod:`.export`: table, CSV, JSON; :mod:`.vcd`; :mod:`.pcapng`), all from the one
declaration of the records, pcispy/spy/format.py. A saved trace needs no board."""
