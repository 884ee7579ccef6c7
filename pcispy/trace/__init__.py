# SPDX-License-Identifier: BSD-2-Clause
"""Traces on the host: the records as numpy arrays and a capture's records with their
metadata (:mod:`.records`), the ``.pcitrace`` file (:mod:`.file`), the decoder
(:mod:`.decode`) and the exports (:mod:`.export`: table, CSV, JSON; :mod:`.vcd`;
:mod:`.pcapng`), all from the one declaration of the records, pcispy/spy/format.py. A saved
trace needs no board."""
