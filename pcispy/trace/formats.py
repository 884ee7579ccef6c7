# SPDX-License-Identifier: BSD-2-Clause
"""The formats a trace is exported in, by name (:func:`pcispy.trace.export.export` writes
them): declared apart from their writers, so that the command line names them without
loading numpy and the record layouts."""

__all__ = ["FORMATS", "BINARY_FORMATS"]

#: The formats :func:`~pcispy.trace.export.export` writes.
FORMATS = ("table", "csv", "json", "vcd", "pcapng")
#: Those of them that are bytes, not text (a file for them is opened in binary mode).
BINARY_FORMATS = ("pcapng",)
