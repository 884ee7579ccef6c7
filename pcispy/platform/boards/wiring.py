# SPDX-License-Identifier: BSD-2-Clause
"""The wiring tables of docs/wiring.md, generated from each board's pin-out declaration.

``python -m pcispy.platform.boards.wiring`` rewrites every table between its markers
(``<!-- pin table BOARD -->`` ... ``<!-- end pin table -->``, and the LED table between
``<!-- led table -->`` ... ``<!-- end led table -->``); ``--check`` only says
whether the file is current (exit 1 when it is not). A test runs the check.
"""

import argparse
import re
import sys
from pathlib import Path

from pcispy.platform.boards import BOARDS, PINOUTS
from pcispy.platform.top import LED_MEANING

__all__ = ["TABLE_BOARDS", "pin_table", "led_table", "render", "main"]

#: Board whose pin-out each table shows (one board per pin-out module), with the header
#: column's title.
TABLE_BOARDS = {"ulx3s-85f": "ULX3S header", "ecp5-evn": "EVN connector-pin",
                "pci-card-85f": "card net"}

DOC = Path(__file__).resolve().parents[3] / "docs" / "wiring.md"


def pin_table(board):
    """The markdown table of ``board``: one row per signal bit (signal, PCI edge pin,
    header pin, FPGA ball)."""
    module = PINOUTS[board]
    platform = BOARDS[board]()
    lines = [f"| signal | PCI edge pin | {TABLE_BOARDS[board]} | FPGA ball |", "|---|---|---|---|"]
    for name, pins in module.PCI_PINOUT.items():
        for bit, pin in enumerate(pins):
            signal = name if len(pins) == 1 else f"{name}[{bit}]"
            lines.append(f"| {signal} | {module.PCI_EDGE_PINS[name][bit]} | "
                         f"{module.header_label(pin)} | {module.ball(platform, pin)} |")
    return "\n".join(lines) + "\n"


def led_table():
    """The markdown table of the LEDs (pcispy/platform/top.py ``LED_MEANING``)."""
    lines = ["| LED | shows |", "|---|---|"]
    lines += [f"| {index} | {meaning} |" for index, meaning in enumerate(LED_MEANING)]
    return "\n".join(lines) + "\n"


def render(text):
    """``text`` with every marked table replaced by its generated version."""
    def table(match):
        return match.group(1) + pin_table(match.group(2)) + match.group(3)
    text = re.sub(r"(<!-- pin table (\S+) -->\n).*?(<!-- end pin table -->)", table, text,
                  flags=re.DOTALL)
    return re.sub(r"(<!-- led table -->\n).*?(<!-- end led table -->)",
                  lambda match: match.group(1) + led_table() + match.group(2), text,
                  flags=re.DOTALL)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pcispy.platform.boards.wiring",
                                     description="Regenerate the pin tables of "
                                                 "docs/wiring.md from the pin-outs.")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/wiring.md is not current; write nothing")
    args = parser.parse_args(argv)
    text = DOC.read_text()
    current = render(text)
    if args.check:
        if current != text:
            print(f"{DOC}: pin tables are stale; run python -m pcispy.platform.boards.wiring",
                  file=sys.stderr)
            return 1
        return 0
    DOC.write_text(current)
    return 0


if __name__ == "__main__":
    sys.exit(main())
