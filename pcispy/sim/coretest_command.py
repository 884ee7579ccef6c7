# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy sim-test CORE``: the standard checks (:mod:`pcispy.sim.coretest`) on a core
described by a JSON or TOML file (:class:`pcispy.sim.core.CoreDescription`) in slot 0 of
the simulated system, one table row per check."""

import argparse

from pcispy.host.command import Command, output_path
from pcispy.host.errors import PcispyError, UsageError

__all__ = ["SimTestCommand"]


class SimTestCommand(Command):
    name = "sim-test"
    help = "run the standard checks on your PCI core in slot 0 of the simulated system"
    examples = ("pcispy sim-test examples/verilog_target/core.json",
                "pcispy sim-test my_core.toml --profile alphastation200 --no-writes --json")

    def add_arguments(self, parser):
        from pcispy.sim.session_command import known_profile
        parser.description = (
            "Builds (the first time: minutes; then cached) the simulated system with the "
            "core the description file names in slot 0, runs every check of "
            "pcispy/sim/coretest.py and prints one row per check: pass, fail or skip, the "
            "bus rules its traffic broke, and what it saw. The exit status is 3 when a "
            "check failed (as for pcispy check). docs/using-the-simulator.md describes the file.")
        parser.add_argument("core", metavar="CORE_DESCRIPTION",
                            help="the core's description (.json, or TOML)")
        # SUPPRESS: given here, they set what the global --sim, --bus-width and --seed
        # set (as `pcispy sim start` does); absent, they leave those.
        parser.add_argument("--profile", dest="sim", type=known_profile,
                            default=argparse.SUPPRESS,
                            help="the host-bridge profile (default: ideal)")
        parser.add_argument("--bus-width", type=int, choices=(32, 64),
                            default=argparse.SUPPRESS, help="the bus width (default: 32)")
        parser.add_argument("--seed", type=int, default=argparse.SUPPRESS,
                            help="seed of every randomised behaviour (default: 1)")
        parser.add_argument("--no-writes", dest="writes", action="store_false",
                            help="skip the checks that write into memory BARs (for "
                                 "windows of registers)")
        parser.add_argument("--log", metavar="FILE", type=output_path,
                            help="the simulator's output (default: the model's folder)")

    def run(self, args, out):
        from pcispy.sim.core import CoreDescription
        from pcispy.sim.coretest import format_table, run_core_checks
        from pcispy.sim.verilate import SimulationFailed
        if getattr(args, "sysfs", None) is not None or getattr(args, "uart", None) is not None:
            raise UsageError("sim-test runs the simulator; it takes no --sysfs or --uart")
        try:
            core = CoreDescription.load(args.core)
        except (OSError, ValueError, TypeError) as error:
            raise PcispyError(f"{args.core}: {error}") from None
        profile = getattr(args, "sim", None) or "ideal"
        log = args.log
        try:
            rows = run_core_checks(core, profile=profile, seed=args.seed,
                                   width=args.bus_width or 32, writes=args.writes,
                                   log_file=log)
        except SimulationFailed as failure:
            raise PcispyError(f"the simulation failed: {failure}") from None
        except RuntimeError as error:      # a Verilator build that failed names its log
            raise PcispyError(str(error)) from None
        if not args.json:
            out.write(format_table(rows))
        return {"core": core.label, "profile": profile, "checks": rows}

    def exit_status(self, result):
        from pcispy.spy.check_feature import EXIT_VIOLATIONS
        return EXIT_VIOLATIONS if any(row["result"] == "fail" for row in result["checks"]) \
            else 0
