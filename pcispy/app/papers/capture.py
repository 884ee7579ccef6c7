# SPDX-License-Identifier: BSD-2-Clause
"""What the papers' bus analysers showed, taken with pcispy's spy: a summary capture of
the board's bus around one operation, as rows of :func:`pcispy.spy.export.summary_rows`
(plus ``answer``: the clock of the transaction's first data phase or STOP#, the moment an
analyser logs)."""

import base64

from pcispy.spy.capture_feature import finish_capture, start_capture
from pcispy.trace.decode import summarise
from pcispy.trace.export import summary_rows
from pcispy.trace.file import parse_trace, trace_bytes

__all__ = ["captured", "ns"]


async def captured(transport, filters, operation):
    """Run ``operation`` (a coroutine function) while the spy captures the summaries of
    the transactions the ``filters`` select (``pcispy capture --filter`` texts; none:
    every transaction); return its result and the rows, oldest first."""
    capture = await start_capture(transport, mode="summary", filters=filters)
    result = await operation()
    done = await finish_capture(capture)
    trace = parse_trace(trace_bytes(base64.b64decode(done["records"]), done["metadata"]))
    rows = summary_rows(summarise(trace))
    for row in rows:
        row["answer"] = row["time"] + row["lat"]
    return result, rows


def ns(clocks, clock_mhz):
    """``clocks`` bus clocks as the analysers printed time: ns with one decimal."""
    return f"{clocks * 1000 / clock_mhz:.1f}ns"
