# SPDX-License-Identifier: BSD-2-Clause
"""Every protocol-checker rule, broken on purpose in the simulated system, fires alone.

The benches (bench_rules.py) run in ONE simulator process on the 64-bit system (so the
64-bit rules can be broken too) and write one outcome per rule into a JSON file; each rule
is then its own pytest case, parametrised over :data:`RULES`, so a rule without a
provocation, or whose provocation fired anything but that rule, fails by name (with the
seed). With pytest-xdist the simulation still runs once: the first worker to need it runs
it under a file lock, the others read its results.
"""

import fcntl
import json
import os

import pytest

from pcispy.gateware.spy.checker import RULES
from pcispy.sim.api import run_bench
from pcispy.sim.system import SystemConfig
from pcispy.sim.verilate import SimulationFailed

pytestmark = pytest.mark.bfm

BENCH = "pcispy.sim.tests.bench_rules"
SEED = 1


def _shared_dir(tmp_path_factory):
    """A directory every xdist worker of this session shares."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base


@pytest.fixture(scope="session")
def rule_outcomes(tmp_path_factory):
    """``{rule name: outcome}`` from one run of every rule bench (64-bit system), plus
    ``"_failure"``: what went wrong with the run as a whole, if anything."""
    shared = _shared_dir(tmp_path_factory)
    results = shared / "rule_outcomes.json"
    with open(shared / "rule_outcomes.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not results.exists():
            raw = shared / "rule_benches.json"
            failure = None
            try:
                run_bench(BENCH, None, SystemConfig(width=64), seed=SEED, result=str(raw))
            except (SimulationFailed, SystemExit) as error:
                # The failing rules are named in their outcomes. (cocotb's runner ends
                # with SystemExit when a test failed, before Model.run sees the results.)
                failure = f"{type(error).__name__}: {error}"
            outcomes = json.loads(raw.read_text()) if raw.exists() else {}
            outcomes["_failure"] = failure
            results.write_text(json.dumps(outcomes))
    return json.loads(results.read_text())


@pytest.mark.parametrize("rule", [rule.name for rule in RULES])
def test_rule_fires_alone(rule, rule_outcomes):
    from pcispy.sim.tests.bench_rules import PROVOKE
    assert rule in PROVOKE, f"rule {rule} has no provoking bench in bench_rules.py"
    outcome = rule_outcomes.get(rule)
    assert outcome is not None, \
        f"rule {rule}: its bench left no outcome (seed {SEED}): {rule_outcomes['_failure']}"
    assert outcome["problems"] == [], \
        f"rule {rule} (seed {outcome['seed']}, {outcome['width']}-bit): " \
        f"{'; '.join(outcome['problems'])}; checker report {outcome['report']}"
