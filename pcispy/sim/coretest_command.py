# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy sim-test CORE``: the standard checks (:mod:`pcispy.sim.coretest`) on a core
described by a JSON or TOML file
(:class:`pcispy.sim.core_description.CoreDescription`) in slot 0 of
the simulated system, one table row per check."""

import argparse
import sys

from pcispy.host.command import CliCommand, output_path
from pcispy.host.errors import PcispyError, UsageError
from pcispy.sim.session_command import known_profile
from pcispy.check.check_feature import EXIT_VIOLATIONS

__all__ = ["SimTestCommand"]


class SimTestCommand(CliCommand):
    name = "sim-test"
    help = "run the standard checks on your PCI core in slot 0 of the simulated system"
    examples = ("pcispy sim-test examples/verilog_target/core.json",
                "pcispy sim-test my_core.toml --profile alphastation200 --no-writes --json",
                "pcispy sim-test my_core.toml --profile rtc --seed 7",
                "pcispy sim-test my_core.toml --waves fst --waves-file run.fst")

    def add_arguments(self, parser):
        parser.description = (
            "Builds (the first time: minutes; then cached) the simulated system with the "
            "core the description file names in slot 0, runs every check of "
            "pcispy/sim/coretest.py and prints one row per check: pass, warn, fail or skip, "
            "the bus rules its traffic broke and how often, and what it saw. The exit "
            "status is 3 when a check failed (as for pcispy check), 2 for a mistake in the "
            "description (found before any build). docs/using-the-simulator.md describes "
            "the file.")
        parser.add_argument("core", metavar="CORE_DESCRIPTION",
                            help="the core's description (.json, or TOML)")
        # SUPPRESS: given here, they set what the global --sim, --bus-width and --seed
        # set (as `pcispy sim start` does); absent, they leave those.
        parser.add_argument("--profile", dest="sim", type=known_profile,
                            default=argparse.SUPPRESS,
                            help="the host-bridge profile (default: ideal), or a scenario "
                                 "(rtc) whose traffic runs alongside")
        parser.add_argument("--bus-width", type=int, choices=(32, 64),
                            default=argparse.SUPPRESS, help="the bus width (default: 32)")
        parser.add_argument("--seed", type=int, default=argparse.SUPPRESS,
                            help="seed of every randomised behaviour (default: 1)")
        parser.add_argument("--no-writes", dest="writes", action="store_false",
                            help="write into no memory BAR, not even to probe which are RAM "
                                 "(every check that writes is skipped)")
        parser.add_argument("--log", metavar="FILE", type=output_path,
                            help="the simulator's output (default: sim-test.log in the "
                                 "model's folder, named in the output)")
        parser.add_argument("--waves", choices=("fst", "vcd"),
                            help="record every signal of the run (the bus, each agent's "
                                 "output enables) for GTKWave or Surfer; FST falls back to "
                                 "VCD where Verilator's FST writer cannot be built")
        parser.add_argument("--waves-file", metavar="FILE", type=output_path,
                            help="where --waves records (default: <core name>.fst or .vcd "
                                 "in the current folder)")

    def run(self, args, out):
        # coretest is a cocotb bench module (cocotb: the optional sim extra); a core's
        # description loads Amaranth, which the command line as a whole does without.
        from pcispy.sim.core_description import CoreDescription, DescriptionError
        from pcispy.sim.coretest import format_table, run_core_checks, waves_target
        from pcispy.sim.verilate import SimulationFailed
        if getattr(args, "sysfs", None) is not None or getattr(args, "uart", None) is not None:
            raise UsageError("sim-test runs the simulator; it takes no --sysfs or --uart")
        if args.waves_file is not None and args.waves is None:
            raise UsageError("--waves-file needs --waves fst or --waves vcd")
        width = args.bus_width or 32
        try:
            core = CoreDescription.load(args.core)
            core.check(width)
        except DescriptionError as error:
            raise PcispyError(f"{args.core}: {error}") from None
        profile = getattr(args, "sim", None) or "ideal"
        log = []
        waves = waves_file = None
        if args.waves is not None:
            waves, waves_file, note = waves_target(args.waves, args.waves_file, core.label)
            if note:
                print(f"pcispy: {note}", file=sys.stderr)
        seed = 1 if args.seed is None else args.seed
        try:
            rows = run_core_checks(core, profile=profile, seed=seed, width=width,
                                   writes=args.writes, log_file=args.log, waves=waves,
                                   waves_file=waves_file, log=log)
        except SimulationFailed as failure:
            where = f"; see {log[0]}" if log else ""
            raise PcispyError(f"the simulation failed: {failure}{where}") from None
        except RuntimeError as error:      # a Verilator build that failed names its log
            raise PcispyError(str(error)) from None
        if not args.json:
            out.write(format_table(rows))
            out.write(f"profile {profile}, seed {seed}; simulator log: {log[0]}\n")
            if waves_file is not None:
                out.write(f"waves: {waves_file}\n")
        result = {"core": core.label, "profile": profile, "seed": seed, "log": log[0],
                  "checks": rows}
        if waves_file is not None:
            result["waves"] = str(waves_file)
        return result

    def exit_status(self, result):
        return EXIT_VIOLATIONS if any(row["result"] == "fail" for row in result["checks"]) \
            else 0
