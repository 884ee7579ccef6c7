# SPDX-License-Identifier: BSD-2-Clause
"""The formal jobs that fit make test (``ci``), and proof that a proof can fail.

CI runs ``target_prove`` (k-induction) and ``target_cover`` (~20 s on an idle 2-core
machine); ``target_bmc`` (~90 s) runs in ``make formal`` only.
"""

import pytest

from pcispy.gateware.formal import JOBS, job_by_name, property_table
from pcispy.gateware.formal.run import run_job

pytestmark = pytest.mark.formal


@pytest.mark.parametrize("job", [job for job in JOBS if job.ci], ids=lambda job: job.name)
def test_job_passes(job, tmp_path):
    result = run_job(job, directory=tmp_path / job.name)
    assert result.passed, result.line()
    # A prove job that only passed its base case would be a bounded check.
    assert result.proved == (job.kind == "prove"), result.line()


def test_mutated_target_fails_with_trace(tmp_path):
    """STOP# for one clock only: the proof fails on stop_held and leaves a VCD."""
    result = run_job(job_by_name("target_prove"), mutation="stop_pulse",
                     directory=tmp_path / "mutated")
    assert not result.passed
    assert result.failed == ["stop_held"], result.line()
    assert result.trace is not None and result.trace.stat().st_size > 0
    assert "counterexample" in result.line()


def test_table_names_every_property_once():
    rows = property_table()
    names = [(harness, name) for harness, name, _, _ in rows]
    assert len(names) == len(set(names))
    assert {kind for _, _, kind, _ in rows} == {"prove", "bmc", "cover"}
