# SPDX-License-Identifier: BSD-2-Clause
"""``make demo``: what pcispy is for, in a few minutes, on the simulated bus.

Each step runs one feature in the simulator (the same code that runs on a board) and
prints its result as a table. The first run builds the Verilator model of the simulated
system (a few minutes); later runs reuse it.
"""

import argparse
import sys
import time

from rich.console import Console
from rich.table import Table

from pcispy.host.errors import PcispyError

__all__ = ["main", "STEPS"]


def _step_identify(console, args):
    from pcispy.host.features.identity import lspci_text
    from pcispy.sim.api import run_feature
    info = run_feature("pcispy.host.features.identity:info", seed=args.seed)
    console.print(f"pcispy board [bold]{info['vendor_id']:04x}:{info['device_id']:04x}[/], "
                  f"gateware {info['gateware_version']}, {info['bus_width']}-bit bus at "
                  f"{info['clock_mhz']} MHz, on the simulated system "
                  f"(profile {info['transport']['profile']})")
    table = Table("BAR", "kind", "address", "size")
    for index, bar in sorted(info["transport"]["bars"].items()):
        table.add_row(index, bar["kind"], f"{bar['address']:#010x}", str(bar["size"]))
    console.print(table)
    config = run_feature("pcispy.host.features.identity:config_space", seed=args.seed)
    console.print("Configuration space, as `lspci -xxx` prints it (`pcispy config --lspci`):")
    console.print(lspci_text(config["config"]), markup=False, highlight=False)


def _step_rtc(console, args):
    from pcispy.sim.api import run_feature
    result = run_feature("pcispy.sim.scenarios:rtc_pio", {"groups": 2}, seed=args.seed)
    console.print("A PC real-time clock behind a PCI-to-ISA bridge, as an OS clock tick reads "
                  "it (index to 0x70, data from 0x71); the host bridge's view:")
    table = Table("#", "R/W", "port", "value", "clocks", "first data", "retries")
    for n, access in enumerate(result["accesses"]):
        table.add_row(str(n), access["rw"], f"{access['port']:#04x}", f"{access['value']:#04x}",
                      str(access["clocks"]), str(access["latency"]), str(access["retries"]))
    console.print(table)
    checker = result["checker"]
    broken = ", ".join(f"{name} x{count}" for name, count in checker["violations"].items())
    console.print("Protocol checker: " + (f"rules broken: {broken} (the ISA bridge breaks the "
                                          "16-clock latency rule, as real ones do)"
                                          if broken else "no rule broken"))


#: (title, function) of every step, in order.
STEPS = [
    ("Identify the board", _step_identify),
    ("The legacy real-time clock", _step_rtc),
]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="pcispy-demo", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    console = Console()
    start = time.monotonic()
    for number, (title, step) in enumerate(STEPS, 1):
        console.rule(f"[bold]{number}. {title}")
        try:
            step(console, args)
        except PcispyError as error:
            console.print(f"[red]pcispy: error: {error}")
            return 2
    console.rule()
    console.print(f"Demo finished in {time.monotonic() - start:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
