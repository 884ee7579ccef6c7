# SPDX-License-Identifier: BSD-2-Clause
"""Starting the simulated PCI system from the host side: building (or finding) its model and
running cocotb benches or one host feature in it.

This module runs in the CLI's and the tests' process and never imports cocotb (an optional
dependency, the ``sim`` extra); the benches it starts run inside the simulator and use
:mod:`pcispy.sim.api`. A bench receives its system, profile, seed and parameters through
the environment (:func:`bench_env`), so one cached model serves every test, and hands its
result back in the JSON file :data:`RESULT_ENV` names.
"""

import json
import os
import sys
import tempfile
from dataclasses import asdict

from pcispy.host.errors import PcispyError
from pcispy.sim import model as system_model, system
from pcispy.sim.bfm.profiles import PROFILES
from pcispy.sim.scenarios import SCENARIOS
from pcispy.sim.verilate import SimulationFailed

__all__ = ["machine_config", "run_bench", "run_feature", "feature_path", "bench_env",
           "SEED_ENV", "PROFILE_ENV",
           "CONFIG_ENV", "RESULT_ENV", "FEATURE_ENV", "ARGS_ENV", "FIGURES_ENV"]

SEED_ENV = "PCISPY_SEED"
PROFILE_ENV = "PCISPY_PROFILE"
CONFIG_ENV = "PCISPY_SYSTEM"
#: Benches write their JSON result to the file this variable names.
RESULT_ENV = "PCISPY_RESULT"
#: The folder the test suite's compliance regression writes its counts into (one JSON file
#: a system), when make bench (pcispy/app/bench.py) runs it for its figures.
FIGURES_ENV = "PCISPY_FIGURES"
#: The feature :func:`run_feature` runs (``module:function``) and its arguments (JSON), for
#: pcispy/sim/feature_bench.py.
FEATURE_ENV = "PCISPY_FEATURE"
ARGS_ENV = "PCISPY_FEATURE_ARGS"


def machine_config(profile, **options):
    """The :class:`~pcispy.sim.system.SystemConfig` that simulates the machine of
    ``profile`` (a host-bridge profile's or a scenario's name, pcispy/sim/bfm/profiles.py
    and pcispy/sim/scenarios.py) with ``options``: the board behind a bridge when the
    profile has one (a 32-bit bridge: another width is refused with a
    :class:`PcispyError`)."""
    name = SCENARIOS[profile].profile if profile in SCENARIOS else profile
    known = PROFILES.get(name)
    if known is None or known.bridge is None:
        return system.SystemConfig(**options)
    width = options.get("width", 32)
    if width != 32:
        raise PcispyError(f"the {profile} machine has the board behind a 32-bit bridge: a "
                          f"{width}-bit bus cannot be simulated with it")
    return system.SystemConfig(**dict(options, bridge=True))


def bench_env(config=None, *, profile="ideal", seed=1, **extra):
    """Environment variables that hand a bench its system, profile, seed and parameters."""
    env = {CONFIG_ENV: json.dumps(asdict(config or system.SystemConfig())),
           PROFILE_ENV: profile, SEED_ENV: str(seed)}
    env.update({f"PCISPY_{k.upper()}": (v if isinstance(v, str) else json.dumps(v))
                for k, v in extra.items()})
    return env


def run_bench(test_module, testcase=None, config=None, *, profile="ideal", seed=1,
              waves=None, **extra):
    """Build (or reuse) the system model and run cocotb tests of ``test_module`` on it.
    ``waves="fst"`` (or ``"vcd"``) runs them on a model that records waves, into
    ``run/dump.fst`` in its folder (``build/sim/<name>_fst-<hash>/``).

    Raises :class:`pcispy.sim.verilate.SimulationFailed` naming failed tests (the seed is
    in the log and in the exception).
    """
    config = config or system.SystemConfig()
    model = system_model.build_system(config, waves=waves)
    try:
        return model.run(test_module, testcase,
                         env=bench_env(config, profile=profile, seed=seed, **extra))
    except SimulationFailed as failure:
        raise SimulationFailed(f"{failure} [profile={profile} seed={seed}]") from None


def feature_path(feature):
    """``"module:function"`` of a feature (a function, or that string already): the name
    the simulator's Python imports it by. A module run with ``python -m`` is ``__main__``
    here, but has its real name in its spec."""
    if isinstance(feature, str):
        return feature
    module = sys.modules[feature.__module__]
    module_name = module.__spec__.name if module.__name__ == "__main__" else module.__name__
    return f"{module_name}:{feature.__qualname__}"


def run_feature(feature, arguments=None, config=None, *, profile="ideal", seed=1,
                verbose=False):
    """Run a host feature (an ``async def feature(transport, **arguments)``, or its
    ``"module:function"`` name) inside a simulator started for it; return its result.

    The simulator's own output goes to build/sim/.../feature.log unless ``verbose``. An
    expected error inside the feature is raised here again as a
    :class:`pcispy.host.errors.PcispyError` with the same message.
    """
    config = config or system.SystemConfig()
    feature_name = feature_path(feature)
    if verbose:
        print(f"pcispy: building or reusing the simulated system {config.name}",
              file=sys.stderr)
    model = system_model.build_system(config)
    with tempfile.TemporaryDirectory() as tmp:
        result_file = os.path.join(tmp, "result.json")
        log = None if verbose else os.path.join(model.build_dir, "feature.log")
        env = bench_env(config, profile=profile, seed=seed)
        env.update({FEATURE_ENV: feature_name, ARGS_ENV: json.dumps(arguments or {}),
                    RESULT_ENV: result_file})
        try:
            model.run("pcispy.sim.feature_bench", "run_feature", env=env, log_file=log)
        except SimulationFailed as failure:
            raise PcispyError(f"the simulation failed ({failure}); see {log or 'the log above'}"
                              ) from None
        with open(result_file) as f:
            outcome = json.load(f)
    if "error" in outcome:
        raise PcispyError(outcome["error"])
    outcome["result"].setdefault("checker", outcome["checker"])
    return outcome["result"]
