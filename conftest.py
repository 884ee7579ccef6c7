# SPDX-License-Identifier: BSD-2-Clause
"""Test session order: the longest tests first, on every worker.

``make test`` runs pytest on two workers with work stealing (``--dist worksteal``): each
worker starts with a contiguous share of the collected tests and an idle worker takes
queued tests from the end of a busy one's share. Tests marked ``runs_long`` (a minute or
more of one core: the first test on each distinct Verilator model, which builds it, the
longest proofs and elaborations) go to the front of the shares, dealt out in
turn, so both workers start on them together and none of them starts last.

With two workers or more, the session first fills a cold cache of the WebAssembly tools'
compiled code (yosys, nextpnr: pcispy/app/toolcache.py says why two first uses side by
side can kill a third run).

Every ``--sim`` command a test runs gets a fresh simulated board (``PCISPY_FRESH_SIM``),
as a test expects, not a session's that outlives it; the session tests
(``pcispy/sim/tests/test_session.py``) ask for sessions themselves.
"""

import os

__all__ = []

os.environ.setdefault("PCISPY_FRESH_SIM", "1")

#: Fixtures several test folders' files share.
pytest_plugins = ("pcispy.sim.tests.session_fixtures",)


def pytest_configure(config):
    # Two workers that each start yosys or nextpnr for the first time on a machine race on
    # the tools' compiled-code cache and one can die of it (pcispy/app/toolcache.py): the
    # session fills a cold cache before the workers start.
    if hasattr(config, "workerinput") or getattr(config.option, "numprocesses", None) in (
            None, 0, 1):
        return
    from pcispy.app.toolcache import warm
    warm(exact=False, echo=lambda line: print(f"conftest: {line}"))


def pytest_collection_modifyitems(session, config, items):
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    long = [item for item in items if item.get_closest_marker("runs_long")]
    rest = [item for item in items if not item.get_closest_marker("runs_long")]
    # xdist gives worker k the k-th of `workers` contiguous shares (the last one takes
    # the remainder): put every workers-th long test at the front of each share.
    size = len(items) // workers
    order = []
    for share in range(workers):
        front = long[share::workers]
        take = (size if share < workers - 1 else len(items)) - len(order) - len(front)
        order += front + rest[:max(0, take)]
        rest = rest[max(0, take):]
    items[:] = order + rest
