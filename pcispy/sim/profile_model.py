# SPDX-License-Identifier: BSD-2-Clause
"""Where the simulated system's time goes, by gateware block.

``python -m pcispy.sim.profile_model [--bench idle|busy]`` runs a bench of
:mod:`pcispy.sim.speed` on the 32-bit system under Linux ``perf`` and prints the share of
the samples each block of the design takes (``board/spy``, ``checker``, ``host_initiator``
...), beside what Verilator's runtime, cocotb's VPI and Python take.

Verilator writes the whole design as a few large C++ functions, so a profile by function
names no block. The model is therefore rebuilt in a folder of its own with line tables
(``-g``, the same optimisation as the cached model: the same machine code), ``perf``
resolves each sample to a line of the generated C++, and the line is attributed to the
blocks whose signals it names (Verilator names a signal by its path,
``pcisystem__DOT__board__DOT__spy__DOT__...``); a line naming signals of several blocks is
shared between them, one naming none (a brace, a table lookup, a local) counts as the
model's own.

The figures are a map for the next speed-up, not a benchmark (``make bench`` records the
speeds): samples are taken at ``--frequency`` Hz, each run's window is the bench's.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pcispy.sim.launcher import RESULT_ENV, bench_env
from pcispy.sim.model import build_system
from pcispy.sim.system import SystemConfig
from pcispy.sim.verilate import Model, make_command, verilator_environment

__all__ = ["attribute", "block_of", "main"]

#: What the benches of :mod:`pcispy.sim.speed` run: ``--bench`` names.
BENCHES = {"idle": "idle_speed", "busy": "bfm_speed"}

#: The prefixes Verilator puts before a signal's path for its own copies of it (the value
#: before a clock edge, a delayed assignment's value or enable).
_COPY_PREFIX = re.compile(r"^(?:__Vdly(?:Val|Dim\d*|Set)?__|__Vtrigprevexpr___TOP__|"
                          r"__Vsen\w*?__)")
#: A member of the model's root object, as the generated C++ reads it.
_MEMBER = re.compile(r"(?:vlSelfRef\.|vlSelf->)([A-Za-z_][A-Za-z0-9_]*)")
#: Verilator's escapes of characters a C++ name cannot hold.
_ESCAPES = {"___05F": "_", "__024": "$"}
#: A row of ``perf report -n --sort srcline``: share, samples, file:line.
_SRCLINE = re.compile(r"^\s*[\d.]+%\s+(\d+)\s+(\S+):(\d+)\s*$")
#: A row of ``perf report -n --sort dso``: share, samples, library.
_LIBRARY = re.compile(r"^\s*[\d.]+%\s+(\d+)\s+(\S+)\s*$")
#: Buckets that are not a block of the design.
OWN = "(the model's own: control flow, tables, temporaries)"


def block_of(member, depth):
    """The block a member of the model names, as a path of ``depth`` levels below the
    top (``board/spy``), or None when it is not a signal of the design."""
    member = _COPY_PREFIX.sub("", member)
    parts = member.split("__DOT__")
    if len(parts) < 2:
        return None
    path = parts[1:-1][:depth] or ["(top)"]
    text = "/".join(path)
    for escape, char in _ESCAPES.items():
        text = text.replace(escape, char)
    return text


def attribute(report, source_dir, depth=2):
    """Samples by block from ``report`` (the text of ``perf report -n --sort srcline
    --stdio``) of the model whose C++ is in ``source_dir``: a Counter (a line naming
    several blocks shares its samples between them). Lines of other files (Verilator's
    headers) count under their file's name."""
    samples = collections.Counter()
    sources = {}
    for row in report.splitlines():
        match = _SRCLINE.match(row)
        if not match:
            continue
        count, name, number = int(match.group(1)), match.group(2), int(match.group(3))
        path = Path(source_dir) / name
        if not name.startswith("Vtop") or not path.exists():
            samples[f"<{name}>"] += count
            continue
        if name not in sources:
            sources[name] = path.read_text().splitlines()
        lines = sources[name]
        text = lines[number - 1] if 0 < number <= len(lines) else ""
        blocks = {block for block in (block_of(m, depth) for m in _MEMBER.findall(text))
                  if block}
        for block in blocks or {OWN}:
            samples[block] += count / len(blocks or {OWN})
    return samples


def _debug_copy(model, folder):
    """A copy of ``model``'s folder in ``folder`` with its per-clock code recompiled with
    line tables; returns the copy's path."""
    copy = Path(folder) / model.build_dir.name
    shutil.copytree(model.build_dir, copy, symlinks=True)
    for stale in [*copy.glob("Vtop___024root__[0-9]*.o"), *copy.glob("*.gch"),
                  *copy.glob("Vtop__pch.h.*"), copy / model.toplevel]:
        if not stale.name.endswith("Slow.o"):
            stale.unlink(missing_ok=True)
    subprocess.run(make_command(copy, line_tables=True), env=verilator_environment(),
                   check=True, capture_output=True)
    return copy


def _run_bench(model_dir, bench):
    """Run ``bench`` of pcispy.sim.speed on the model in ``model_dir`` (this process is
    the one perf records)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = bench_env(SystemConfig(width=32), profile="ideal", seed=1)
        env[RESULT_ENV] = os.path.join(tmp, "speed.json")
        Model(model_dir, "pcisystem").run("pcispy.sim.speed", bench, env=env,
                                          log_file=os.path.join(tmp, "log"))


def _perf(*args, **kwargs):
    return subprocess.run(["perf", *args], capture_output=True, text=True, check=True,
                          **kwargs).stdout


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m pcispy.sim.profile_model",
        description="Share of the simulated system's time by gateware block (Linux perf).")
    parser.add_argument("--bench", choices=BENCHES, default="idle",
                        help="idle: the enumerated system with nothing on the bus (what "
                             "interactive commands wait through); busy: 16 KiB bursts on "
                             "every clock (make bench's sim.bfm_cycles_per_s)")
    parser.add_argument("--depth", type=int, default=2,
                        help="levels of the design's hierarchy a block is named by")
    parser.add_argument("--top", type=int, default=30, help="blocks listed")
    parser.add_argument("--frequency", type=int, default=2000, help="samples per second")
    parser.add_argument("--run", metavar="MODEL_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:
        _run_bench(args.run, BENCHES[args.bench])
        return 0
    if shutil.which("perf") is None:
        print("profile_model: needs Linux perf (Debian: apt-get install linux-perf)",
              file=sys.stderr)
        return 2
    model = build_system()
    with tempfile.TemporaryDirectory(prefix="pcispy-profile-") as folder:
        print(f"profile_model: recompiling {model.build_dir.name} with line tables",
              file=sys.stderr)
        copy = _debug_copy(model, folder)
        data = os.path.join(folder, "perf.data")
        print(f"profile_model: running the {args.bench} bench under perf", file=sys.stderr)
        _perf("record", "-F", str(args.frequency), "-o", data, "--", sys.executable, "-m",
              "pcispy.sim.profile_model", "--bench", args.bench, "--run", str(copy))
        report = ["report", "-i", data, "--comm", "pcisystem", "--stdio", "-n"]
        by_library = collections.Counter()
        for row in _perf(*report, "--sort", "dso").splitlines():
            match = _LIBRARY.match(row)
            if match:
                by_library[match.group(2)] += int(match.group(1))
        by_block = attribute(_perf(*report, "--dso", "pcisystem", "--sort", "srcline",
                                   cwd=copy), copy, args.depth)

    total = sum(by_library.values())
    print(f"Simulated system, {args.bench} bench: share of the simulator process's "
          f"{total} samples")
    print("by library (the model is pcisystem):")
    for library, samples in by_library.most_common(6):
        print(f"  {100 * samples / total:6.2f} %  {library}")
    resolved = sum(by_block.values())
    print(f"by block of the design (pcisystem's samples resolved to a line, "
          f"{100 * resolved / total:.1f} %; the other "
          f"{100 * (by_library['pcisystem'] - resolved) / total:.1f} % resolve to none: "
          "Verilator's runtime and cocotb's main program have no line tables):")
    for block, samples in by_block.most_common(args.top):
        print(f"  {100 * samples / total:6.2f} %  {block}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
