# SPDX-License-Identifier: BSD-2-Clause
"""The Verilator model of a simulated system: :func:`build_system` builds it, or finds it in
the cache under build/sim/ by a hash of what its Verilog comes from (:func:`generator_key`).

The CLI and the launcher import this module to find a model; a cached one needs no
elaboration, so Amaranth and the gateware (pcispy/sim/pcisystem.py: the board's, the bus
models') are imported only where a system is elaborated.
"""

import fcntl
import hashlib
import importlib.metadata
import importlib.util
import os
import threading
from pathlib import Path

from pcispy.sim import build_progress, verilate
from pcispy.sim.system import SystemConfig

__all__ = ["build_system", "generator_key"]


#: Models found in this process, by config.
_MODELS = {}

#: Where the generator index lives: ``<config name>-<generator key>`` files under it name
#: the model folder that configuration's Verilog went to (see :func:`build_system`).
_INDEX = "index"


def generator_key(config):
    """A hash of everything the system's Verilog is generated from, without generating it:
    the bytes of pcispy's gateware and simulation sources (every ``.py`` and ``.v`` file of
    the package outside ``tests/``), the Amaranth version and ``config`` (its core's
    description included; for a ``"module:function"`` core, that module's file)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    digest.update(importlib.metadata.version("amaranth").encode() + b"\0")
    digest.update(repr(config).encode() + b"\0")
    files = sorted(path for path in package.rglob("*")
                   if path.suffix in (".py", ".v") and "tests" not in path.parts)
    if isinstance(config.core, str):
        spec = importlib.util.find_spec(config.core.partition(":")[0])
        if spec is not None and spec.origin:
            files.append(Path(spec.origin))
    for path in files:
        data = path.read_bytes()
        digest.update(f"{path}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()[:16]


def build_system(config=SystemConfig(), waves=None):
    """Build (or reuse from the cache) the Verilator model of the system ``config``;
    ``waves`` ("fst" or "vcd") for a model that records waves (a model of its own).

    Elaborating the system to Verilog takes 10-20 s; the model folder it names is
    remembered under the :func:`generator_key` of ``config`` (build/sim/index/), so while
    pcispy's sources and ``config`` stay the same, a later run finds the model by hashing
    files (milliseconds) and re-checks every file Verilator read (a core's sources and
    their included files), rebuilding the model when one changed.
    """
    model = _MODELS.get((config, waves))
    if model is not None and \
            verilate.cached_model(model.build_dir, model.toplevel, waves) is not None:
        return model
    label = f"{config.name}_{waves}" if waves else config.name
    index = verilate.BUILD_ROOT / _INDEX / f"{label}-{generator_key(config)}"
    index.parent.mkdir(parents=True, exist_ok=True)
    # One process elaborates a configuration at a time: a second one (another pytest
    # worker) waits here for the index rather than elaborating the same Verilog.
    with open(index.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        model = _indexed_model(index, waves) or _elaborate_and_build(config, waves, index)
    _MODELS[(config, waves)] = model
    return model


def _indexed_model(index, waves):
    """The model the index file ``index`` names, when it is built and current, else None."""
    if not index.exists():
        return None
    return verilate.cached_model(verilate.BUILD_ROOT / index.read_text().strip(), "pcisystem",
                                 waves)


def _elaborate_and_build(config, waves, index):
    """Elaborate the system ``config`` to Verilog, build its model, record it in ``index``."""
    build_progress.stage("elaborating")
    # Verilator's runtime objects compile on the other core while this one elaborates.
    runtime = threading.Thread(target=verilate.prepare_runtime, daemon=True)
    runtime.start()
    # elaboration only: Amaranth and the gateware load here (see the module's docstring)
    from amaranth.back import verilog
    from pcispy.core import ram
    from pcispy.sim.pcisystem import RESET_FOLLOW_SOURCE, PCISystem
    system = PCISystem(config)
    text = verilog.convert(system, name="pcisystem", emit_src=False)
    runtime.join()
    # Every large RAM of the system (the agents' buffers and host memory, the board's
    # scratch RAM, the SRAM model) keeps its words in the one hand-written Verilog RAM.
    sources = [ram.VERILOG_SOURCE, RESET_FOLLOW_SOURCE]
    options = {}
    core = config.core
    if core is not None and not isinstance(core, str):
        sources += core.model_sources()
        options = dict(include_dirs=core.include_dirs, defines=core.defines,
                       flags=core.verilator_flags, identity=repr(core))
    model = verilate.build_model(text, "pcisystem", public=[("*", "bd_*")], sources=sources,
                        name=config.name, waves=waves, **options)
    partial = index.with_suffix(f".{os.getpid()}")
    partial.write_text(model.build_dir.name + "\n")
    partial.replace(index)          # atomic: a reader sees the old index or the new
    return model
