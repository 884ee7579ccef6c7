# SPDX-License-Identifier: BSD-2-Clause
"""Every protocol-checker rule and every driver rule of the bus resolver, broken on
purpose in the simulated system, fires alone.

The benches (bench_rules.py for the checker's rules on the pins, bench_driver_rules.py for
the resolver's rules on who drives) run in one simulator process each on the 64-bit system
(so the 64-bit rules can be broken too) and write one outcome per case into a JSON file;
each rule is then its own pytest case, parametrised over :data:`RULES` and
:data:`DRIVER_RULES`, so a rule without a provocation, or whose provocation fired anything
but that rule, fails by name (with the seed). A driver rule's case also names the line and
the agents the resolver's log must show, and the pin rules the provocation cannot help
tripping. With pytest-xdist each simulation still runs once: the first worker to need it
runs it under a file lock, the others read its results.
"""

import fcntl
import json
import os

import pytest

from pcispy.pci.rules import DRIVER_RULES
from pcispy.check.checker import RULES
from pcispy.sim.launcher import run_bench
from pcispy.sim.system import SystemConfig
from pcispy.sim.verilate import SimulationFailed

pytestmark = pytest.mark.bfm

BENCH = "pcispy.sim.tests.bench_rules"
DRIVER_BENCH = "pcispy.sim.tests.bench_driver_rules"
SEED = 1


def _shared_dir(tmp_path_factory):
    """A directory every xdist worker of this session shares."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base


def _run_once(tmp_path_factory, bench, label):
    """``{case: outcome}`` from one run of every bench of ``bench`` (64-bit system), plus
    ``"_failure"``: what went wrong with the run as a whole, if anything."""
    shared = _shared_dir(tmp_path_factory)
    results = shared / f"{label}_outcomes.json"
    with open(shared / f"{label}_outcomes.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not results.exists():
            raw = shared / f"{label}_benches.json"
            failure = None
            try:
                run_bench(bench, None, SystemConfig(width=64), seed=SEED, result=str(raw))
            except (SimulationFailed, SystemExit) as error:
                # The failing rules are named in their outcomes. (cocotb's runner ends
                # with SystemExit when a test failed, before Model.run sees the results.)
                failure = f"{type(error).__name__}: {error}"
            outcomes = json.loads(raw.read_text()) if raw.exists() else {}
            outcomes["_failure"] = failure
            results.write_text(json.dumps(outcomes))
    return json.loads(results.read_text())


@pytest.fixture(scope="session")
def rule_outcomes(tmp_path_factory):
    """``{rule name: outcome}`` of the checker's rule benches."""
    return _run_once(tmp_path_factory, BENCH, "rule")


@pytest.fixture(scope="session")
def driver_outcomes(tmp_path_factory):
    """``{case: outcome}`` of the resolver's driver-rule benches."""
    return _run_once(tmp_path_factory, DRIVER_BENCH, "driver_rule")


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


class Case:
    """What a driver-rule case must show: ``drivers`` ``{rule: clocks}`` (``None``: at
    least one) and no other driver rule; every log entry of a rule as ``log[rule]`` =
    (line, agent A, agent B), or a list of them, one per entry in order; exactly the pin
    rules ``pins``."""

    def __init__(self, drivers, log, pins=()):
        self.drivers, self.log, self.pins = drivers, log, set(pins)


#: The saboteur's agents: its master (parked) and its two channels.
SAB, SAB_A, SAB_B = "saboteur", "saboteur_a", "saboteur_b"

#: Every case of bench_driver_rules.py, judged. A driver rule's own case has its name.
DRIVER_CASES = {
    "contention": Case({"contention": 1}, {"contention": ("devsel", SAB_A, SAB_B)}),
    "no_turnaround": Case({"no_turnaround": 1}, {"no_turnaround": ("devsel", SAB_A, SAB_B)}),
    "sts_released_asserted": Case({"sts_released_asserted": 1},
                                  {"sts_released_asserted": ("lock", SAB_A, None)}),
    # A floating parked bus reads all ones with PAR 1: wrong parity, which the checker
    # sees on the pins.
    "parked_bus_floating": Case({"parked_bus_floating": None},
                                {"parked_bus_floating": ("ad", SAB, None)},
                                pins={"parked_bus_parity"}),
    "par_driver_mismatch": Case({"par_driver_mismatch": 1},
                                {"par_driver_mismatch": ("par64", SAB_A, SAB_B)}),
    "driven_during_reset": Case({"driven_during_reset": 2},
                                {"driven_during_reset": ("devsel", SAB_A, None)}),
    # Around the parking rule: AD from clock 8 of the run, PAR from 9, is clean for both
    # monitors, and so is AD from 9 and PAR from 10, the limit of both (PAR from clock 10
    # covers AD of clock 9); one clock later each, the resolver fires in clock 9 (AD) and
    # 10 (PAR), and the checker sees the floating bus's parity.
    "parked_in_time": Case({}, {}),
    "parked_at_the_limit": Case({}, {}),
    "parked_one_clock_late": Case({"parked_bus_floating": 2},
                                  {"parked_bus_floating": [("ad", SAB, None),
                                                           ("par", SAB, None)]},
                                  pins={"parked_bus_parity"}),
    # AD and C/BE# parked without PAR: both the parking rule (on PAR) and the PAR rule
    # (AD driven by the saboteur the clock before); AD = 1 makes the floating PAR right.
    "parked_without_par": Case({"parked_bus_floating": None, "par_driver_mismatch": None},
                               {"parked_bus_floating": ("par", SAB, None),
                                "par_driver_mismatch": ("par", SAB, None)}),
    # PAR switched off with AD at the end of a parked run (a clock early), then on with
    # AD at the start of the next (a clock early).
    "parked_par_with_ad": Case({"par_driver_mismatch": 2},
                               {"par_driver_mismatch": [("par", SAB, None),
                                                        ("par", None, SAB)]}),
}


def judge_drivers(case, report):
    """What is wrong with ``report`` after provoking ``case`` (empty: nothing)."""
    expect = DRIVER_CASES[case]
    problems = []
    fired = report["drivers"]
    for rule, clocks in expect.drivers.items():
        if not fired.get(rule):
            problems.append(f"driver rule {rule} did not fire")
        elif clocks is not None and fired[rule] != clocks:
            problems.append(f"driver rule {rule} fired in {fired[rule]} clocks, not {clocks}")
    others = sorted(set(fired) - set(expect.drivers))
    if others:
        problems.append(f"other driver rules fired: {others}")
    for rule, want in expect.log.items():
        seen = [(entry["line"], entry["agent_a"], entry["agent_b"])
                for entry in report["driver_log"] if entry["rule"] == rule]
        if isinstance(want, list):
            if seen != want:
                problems.append(f"log of {rule}: {seen}, expected {want}")
        elif not seen or set(seen) != {want}:
            problems.append(f"log of {rule}: {seen}, expected every entry {want}")
    pins = set(report["violations"])
    if pins != expect.pins:
        problems.append(f"pin rules fired {sorted(pins)}, expected {sorted(expect.pins)}")
    return problems


def _driver_outcome(case, driver_outcomes):
    from pcispy.sim.tests.bench_driver_rules import PROVOKE
    assert case in PROVOKE, f"case {case} has no provoking bench in bench_driver_rules.py"
    outcome = driver_outcomes.get(case)
    assert outcome is not None, \
        f"case {case}: its bench left no outcome (seed {SEED}): {driver_outcomes['_failure']}"
    assert outcome["problems"] == [], \
        f"case {case} (seed {outcome['seed']}): {'; '.join(outcome['problems'])}; " \
        f"report {outcome['report']}"
    return outcome


@pytest.mark.parametrize("rule", [rule.name for rule in DRIVER_RULES])
def test_driver_rule_fires_alone(rule, driver_outcomes):
    assert rule in DRIVER_CASES, f"driver rule {rule} has no case here"
    outcome = _driver_outcome(rule, driver_outcomes)
    problems = judge_drivers(rule, outcome["report"])
    assert problems == [], f"driver rule {rule} (seed {outcome['seed']}): " \
        f"{'; '.join(problems)}; report {outcome['report']}"


@pytest.mark.parametrize("case", [case for case in DRIVER_CASES
                                  if case not in {rule.name for rule in DRIVER_RULES}])
def test_driver_rule_boundaries(case, driver_outcomes):
    outcome = _driver_outcome(case, driver_outcomes)
    problems = judge_drivers(case, outcome["report"])
    assert problems == [], f"case {case} (seed {outcome['seed']}): " \
        f"{'; '.join(problems)}; report {outcome['report']}"


def test_pulse_reset_recovers(driver_outcomes):
    """After RST# in the middle of a run the host memory and the test device work again
    (the provocation's own checks; which rules the agents break meanwhile is theirs)."""
    _driver_outcome("pulse_reset_recovers", driver_outcomes)
