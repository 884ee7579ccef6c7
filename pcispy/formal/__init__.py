# SPDX-License-Identifier: BSD-2-Clause
"""Formal proofs of the PCI target and the PCI master (``make formal``).

:data:`JOBS` is the one table of what is proved: each job is one SymbiYosys run of one
harness (``target``: pcispy/formal/target.py, ``initiator``: pcispy/formal/initiator.py)
in one mode, checking the named properties (``prove``: k-induction, unbounded; ``bmc``:
bounded to ``depth`` clocks from reset; ``cover``: each named cover reached within
``depth``). :func:`property_table` lists (harness, property, kind, depth) from it.
Run with ``python -m pcispy.formal [--only NAME] [--list]``.
"""

import importlib
from dataclasses import dataclass

__all__ = ["Job", "JOBS", "TARGET_RULES", "HARNESSES", "job_by_name", "property_table",
           "harness_class"]

#: Harness name -> "module:class" (imported on use).
HARNESSES = {
    "target": "pcispy.formal.target:TargetHarness",
    "target_slow": "pcispy.formal.target:SlowDecodeTargetHarness",
    "initiator": "pcispy.formal.initiator:InitiatorHarness",
    "expansion": "pcispy.formal.expansion:ExpansionHarness",
}


@dataclass(frozen=True)
class Job:
    """One SymbiYosys run: ``names`` are the asserted properties (prove/bmc) or the covers
    (cover); ``depth`` is the induction length (prove) or the bound (bmc, cover); ``ci``
    jobs run in ``make test`` (marker ``formal``); ``doc`` says why the mode and depth.
    ``lemmas`` are asserted and proved with the properties but are not PCI rules: they
    relate the gateware's registers to the harness's record of the pins, so that
    induction starts only from states the design reaches."""
    name: str
    harness: str
    kind: str
    depth: int
    names: tuple
    doc: str
    ci: bool = True
    lemmas: tuple = ()


#: The PCI rules the target keeps (TargetHarness), proved for each decode speed built.
TARGET_RULES = (
    "stst_release", "one_driver", "response_in_transaction", "devsel_window",
    "trdy_stop_need_devsel", "trdy_held", "stop_held", "initial_latency",
    "subsequent_latency", "retry_first_phase", "disconnect_count", "parity_next_clock",
    "perr_two_clocks", "enable_is_asserting", "released_zero", "turnaround")

#: What the target's cover jobs reach: every termination and every response knob.
TARGET_COVERS = (
    "completion", "master_abort", "retry", "disconnect_data", "disconnect_nodata",
    "target_abort", "devsel_slow", "devsel_subtractive", "initial_wait", "wait_states",
    "retry_knob", "corrupt_parity", "backend_stall_retry", "perr", "noncompliant_latency")

JOBS = (
    Job("target_prove", "target", "prove", 8, TARGET_RULES,
        "k-induction (k = 8), unbounded: the lemmas tie the target's transaction state, "
        "read pipeline, posted writes, backend answers and wait counters to what the pins "
        "showed (k = 8 covers the read pipeline's refill after a data phase)",
        lemmas=("lemma_pins", "lemma_target", "lemma_latency", "lemma_response")),
    Job("target_slow_prove", "target_slow", "prove", 8, TARGET_RULES,
        "target_prove for the slow-decode build (the bitstream option --decode slow): the "
        "same rules, with a lemma tying the registered decode to the address phase",
        lemmas=("lemma_pins", "lemma_target", "lemma_latency", "lemma_response",
                "lemma_decode")),
    Job("target_cover", "target", "cover", 26, TARGET_COVERS,
        "every termination and every response knob reached from reset (a register write, "
        "then a transaction of up to ~20 clocks)"),
    Job("target_slow_cover", "target_slow", "cover", 26, TARGET_COVERS,
        "target_cover for the slow-decode build: target_slow_prove's harness runs every "
        "termination and knob, so its rules do not hold only vacuously"),
    Job("initiator_prove", "initiator", "prove", 4, (
        "stst_release", "one_driver", "irdy_held", "frame_needs_irdy", "frame_after_stop",
        "irdy_latency", "parity_next_clock", "latency_timer_exit", "perr_two_clocks",
        "stream", "dma_counts", "released_zero", "turnaround", "parking"),
        "k-induction (k = 4), unbounded: the lemmas tie the master's phase, counters and "
        "descriptor, the engine's pass and the pattern writer to what the pins showed",
        lemmas=("lemma_pins", "lemma_txn", "lemma_run")),
    Job("initiator_cover", "initiator", "cover", 16, (
        "completion", "retry", "disconnect_data", "disconnect_nodata", "target_abort",
        "master_abort", "latency_timer", "retry_repeated", "disconnect_resumed",
        "dual_address", "mwi", "irdy_wait_max", "second_pass", "read_parity_error"),
        "every termination, a retried and a resumed transaction, DAC, MWI, the longest "
        "IRDY# wait, a second pass and PERR# reached from reset (the host programs and "
        "starts a run in 4 clocks, the transactions take the rest)"),
    Job("expansion_prove", "expansion", "prove", 2, ("expansion_exact",),
        "k-induction (k = 2), unbounded, no assumption about the inputs: the initiator "
        "built per value of the live lines (the FPGA build) and built once (simulation) "
        "are the same machine, 32- and 64-bit",
        lemmas=("lemma_same_state",)),
    Job("expansion_cover", "expansion", "cover", 8, ("data_phase",),
        "a data phase of the expanded initiator, 32- and 64-bit, reached from reset: the "
        "harness's inputs are free (the equivalence would hold vacuously for inputs the "
        "solver could not choose)"),
)


def job_by_name(name):
    for job in JOBS:
        if job.name == name:
            return job
    raise KeyError(f"no formal job {name!r}; known: {', '.join(j.name for j in JOBS)}")


def property_table():
    """``[(harness, property, kind, depth)]`` for every asserted property and cover."""
    return [(job.harness, name, job.kind, job.depth) for job in JOBS for name in job.names]


def harness_class(name):
    module, _, cls = HARNESSES[name].partition(":")
    return getattr(importlib.import_module(module), cls)
