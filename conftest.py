# SPDX-License-Identifier: BSD-2-Clause
"""Test session order: the longest tests first, on every worker.

``make test`` runs pytest on two workers with work stealing (``--dist worksteal``): each
worker starts with a contiguous share of the collected tests and an idle worker takes
queued tests from the end of a busy one's share. Tests marked ``runs_long`` (a minute or
more of one core: the first test on each distinct Verilator model, which builds it, the
longest proofs and elaborations) go to the front of the shares, dealt out in
turn, so both workers start on them together and none of them starts last. Long tests
marked with the same ``runs_long(shares=...)`` (one costly step a process caches, such
as a board's elaboration) are dealt out as one, so the step is paid once.

With two workers or more, the session first fills a cold cache of the WebAssembly tools'
compiled code (yosys, nextpnr: pcispy/app/toolcache.py says why two first uses side by
side can kill a third run).

Every ``--sim`` command a test runs gets a fresh simulated board (``PCISPY_FRESH_SIM``),
as a test expects, not a session's that outlives it; the session tests
(``pcispy/sim/tests/test_session.py``) ask for sessions themselves.

``--cpu-durations=N`` lists the N tests that took the most CPU time and the suite's total
(``make test ARGS=--cpu-durations=20``): the CPU seconds of the test's process and of the
child processes it waited for (model builds, simulators, proofs), setup to teardown, on
whichever worker ran it. On a shared machine these are what a test costs; pytest's
``--durations`` are wall seconds, which grow with the machine's load. A simulator
session that outlives its test is not counted.
"""

import os
import resource

import pytest

__all__ = []

os.environ.setdefault("PCISPY_FRESH_SIM", "1")

#: Fixtures several test folders' files share.
pytest_plugins = ("pcispy.sim.tests.session_fixtures",)


def pytest_addoption(parser):
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="show the N tests that took the most CPU time, with their "
                          "children's (0: every test), and the total")


def _cpu_seconds():
    """User and system CPU seconds of this process and of its waited-for children."""
    own, children = (resource.getrusage(who) for who in
                     (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if item.config.getoption("cpu_durations") is not None:
        item.stash[_CPU_START] = _cpu_seconds()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "teardown" and _CPU_START in item.stash:
        # On the teardown report, which pytest-xdist hands to the controlling process.
        outcome.get_result().user_properties.append(
            ("cpu_seconds", _cpu_seconds() - item.stash[_CPU_START]))


def pytest_runtest_logreport(report):
    for name, seconds in report.user_properties if report.when == "teardown" else ():
        if name == "cpu_seconds":
            _CPU_SECONDS[report.nodeid] = seconds


def pytest_terminal_summary(terminalreporter, config):
    count = config.getoption("cpu_durations")
    if count is None or not _CPU_SECONDS:
        return
    ranked = sorted(_CPU_SECONDS.items(), key=lambda entry: -entry[1])
    terminalreporter.write_sep("=", f"CPU seconds of {len(ranked)} tests, setup to "
                                    f"teardown: {sum(_CPU_SECONDS.values()):.0f} s")
    for nodeid, seconds in ranked[:count or None]:
        terminalreporter.write_line(f"{seconds:8.1f}s  {nodeid}")


#: A test's CPU seconds at its setup (--cpu-durations), and every test's CPU seconds.
_CPU_START = pytest.StashKey[float]()
_CPU_SECONDS = {}


def pytest_configure(config):
    # Two workers that each start yosys or nextpnr for the first time on a machine race on
    # the tools' compiled-code cache and one can die of it (pcispy/app/toolcache.py): the
    # session fills a cold cache before the workers start.
    if hasattr(config, "workerinput") or getattr(config.option, "numprocesses", None) in (
            None, 0, 1):
        return
    from pcispy.app.toolcache import warm
    warm(exact=False, echo=lambda line: print(f"conftest: {line}"))


# Last: after -m and -k have deselected, so the shares are those of the tests that run.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    long = [item for item in items if item.get_closest_marker("runs_long")]
    rest = [item for item in items if not item.get_closest_marker("runs_long")]
    # xdist gives worker k the k-th of `workers` contiguous shares (the last one takes
    # the remainder): put every workers-th long test at the front of each share.
    # Long tests that name the same costly step (``runs_long(shares="...")``, e.g. one
    # board's elaboration, which a process caches) go to one share together, in turn.
    units = {}
    for item in long:
        units.setdefault(item.get_closest_marker("runs_long").kwargs.get("shares", item.nodeid),
                         []).append(item)
    units = list(units.values())
    size = len(items) // workers
    order = []
    for share in range(workers):
        front = [item for unit in units[share::workers] for item in unit]
        take = (size if share < workers - 1 else len(items)) - len(order) - len(front)
        order += front + rest[:max(0, take)]
        rest = rest[max(0, take):]
    items[:] = order + rest
