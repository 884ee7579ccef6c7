# SPDX-License-Identifier: BSD-2-Clause
"""The ``sessions`` fixture of the session tests (test_session.py, test_core_session.py),
loaded for the whole suite by the root conftest.py."""

import shutil
import tempfile

import pytest

from pcispy.sim import session

__all__ = ["sessions"]


@pytest.fixture
def sessions(monkeypatch):
    """A sessions folder of the test's own (short: it holds Unix sockets), sessions on
    (the suite's default is a fresh board per command); yields this checkout's folder in
    it (:func:`~pcispy.sim.session.sessions_root`). Every session the test started is
    stopped afterwards."""
    root = tempfile.mkdtemp(prefix="pss", dir="/tmp")
    monkeypatch.setenv(session.SESSIONS_ENV, root)
    monkeypatch.delenv(session.FRESH_ENV, raising=False)
    yield session.sessions_root()
    for left in session.running():
        left.kill()
        left.discard()
    shutil.rmtree(root, ignore_errors=True)
