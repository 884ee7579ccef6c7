# SPDX-License-Identifier: BSD-2-Clause
"""Test session order: the longest tests first.

``make test`` runs pytest on two workers with work stealing (``--dist worksteal``): the
synthesis smoke build (three minutes of one core) starts at once on one worker
while the other takes the rest, and an idle worker takes queued tests from the busy one. Tests marked ``runs_long`` go to the
front of the queue, in the order they are collected, so they never start last.

Every ``--sim`` command a test runs gets a fresh simulated board (``PCISPY_FRESH_SIM``),
as a test expects, not a session's that outlives it; the session tests
(``pcispy/sim/tests/test_session.py``) ask for sessions themselves.
"""

import os

__all__ = []

os.environ.setdefault("PCISPY_FRESH_SIM", "1")


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: item.get_closest_marker("runs_long") is None)
