# SPDX-License-Identifier: BSD-2-Clause
"""The formal jobs CI runs (``ci``), and proof that a proof can fail.

CI runs the ``ci`` jobs of :data:`~pcispy.formal.JOBS` (today all of them): make test
the k-induction proofs of the target (medium and slow decode) and of the initiator, with
a mutation each that must fail; make test-heavy the expansion proof (four minutes of one
core), the covers (``target_cover``, ``target_slow_cover``, ``initiator_cover``,
``expansion_cover``) and the mutation that must break the expansion proof.
"""

from dataclasses import replace

import pytest

from pcispy.formal import JOBS, job_by_name, property_table
from pcispy.formal.run import run_job

pytestmark = pytest.mark.formal


def _marks(job):
    """The expansion proof (minutes of one core) starts first (conftest.py); it and the
    covers, which show the properties are not vacuous, run in make test-heavy."""
    if job.name == "expansion_prove":
        return [pytest.mark.runs_long, pytest.mark.heavy]
    return [pytest.mark.heavy] if job.kind == "cover" else []


#: The CI jobs.
CI_JOBS = [pytest.param(job, id=job.name, marks=_marks(job)) for job in JOBS if job.ci]


@pytest.mark.parametrize("job", CI_JOBS)
def test_job_passes(job, tmp_path):
    result = run_job(job, directory=tmp_path / job.name)
    assert result.passed, result.line()
    # A prove job that only passed its base case would be a bounded check.
    assert result.proved == (job.kind == "prove"), result.line()


def test_mutated_target_fails_with_trace(tmp_path):
    """STOP# for one clock only: the proof's base case fails on stop_held (with whatever
    else breaks in the same clock) and leaves a VCD that starts at reset."""
    result = run_job(job_by_name("target_prove"), mutation="stop_pulse",
                     directory=tmp_path / "mutated")
    assert not result.passed
    assert "stop_held" in result.failed, result.line()
    assert result.trace is not None and result.trace.name == "trace.vcd"
    assert result.trace.stat().st_size > 0
    assert "counterexample" in result.line()


def test_table_names_every_property_once():
    rows = property_table()
    names = [(harness, name) for harness, name, _, _ in rows]
    assert len(names) == len(set(names))
    assert {kind for _, _, kind, _ in rows} <= {"prove", "bmc", "cover"}
    assert {harness for harness, _, kind, _ in rows if kind == "prove"} == {
        "target", "target_slow", "initiator", "expansion"}
    assert {harness for harness, _, kind, _ in rows if kind == "cover"} == {
        "target", "target_slow", "initiator", "expansion"}


def test_mutated_initiator_fails_with_trace(tmp_path):
    """TRDY# reaching the DMA engine a clock late: checked from reset (the prove job's k of
    4 clocks is shorter than programming and starting a run, so its base case never sees
    a data phase), the master's idea of what moved disagrees with the pins at the first
    data phase: one of the rules fails (which one the solver reaches first depends on the
    netlist: the data stream, the engine's counts, FRAME# after STOP# ...), never a
    timeout, and the trace starts at reset."""
    job = replace(job_by_name("initiator_prove"), kind="bmc", depth=10, lemmas=())
    result = run_job(job, mutation="live_trdy_registered", directory=tmp_path / "mutated")
    assert not result.passed
    assert result.failed and set(result.failed) <= set(job.names), result.line()
    assert result.trace is not None and result.trace.name == "trace.vcd"
    assert result.trace.stat().st_size > 0



@pytest.mark.runs_long
@pytest.mark.heavy
def test_swapped_cofactors_break_the_expansion_proof(tmp_path):
    """The expanded initiator with its STOP# cofactors swapped differs from the folded one:
    the equivalence proof fails, in its outputs or its state (the base case reaches a
    state the two builds disagree on before an output shows it)."""
    result = run_job(job_by_name("expansion_prove"), mutation="swapped_stop_cofactors",
                     directory=tmp_path / "mutated")
    assert not result.passed
    assert result.failed, result.line()
    assert set(result.failed) <= {"expansion_exact", "lemma_same_state"}, result.line()
