# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy config --lspci`` is read by the real ``lspci -F``: IDs, class and every BAR.

pciutils is installed with apt-get when missing (as root); when that is impossible only
this check is skipped, with the reason printed (README: "pciutils").
"""

import io
import re
import subprocess

import pytest

from pcispy.board.registers import DEFAULT_DEVICE_ID, DEFAULT_VENDOR_ID
from pcispy.core.config import DEFAULT_CLASS_CODE
from pcispy.board.top import PCIBoard
from pcispy.app.cli import main
from pcispy.app.tests._debian import debian_tool
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.target


def _size(size):
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


def test_lspci_decodes_config_dump(tmp_path):
    lspci, reason = debian_tool("lspci", "pciutils")
    if lspci is None:
        print(f"skipping the lspci check: {reason}")
        pytest.skip(reason)
    out = io.StringIO()
    assert main(["config", "--lspci"], out=out) == 0
    dump = tmp_path / "board.lspci"
    dump.write_text(out.getvalue())
    text = subprocess.run([lspci, "-F", str(dump), "-vv", "-nn"], check=True,
                          capture_output=True, text=True).stdout
    assert f"[{DEFAULT_CLASS_CODE >> 8:04x}]" in text, text
    assert f"[{DEFAULT_VENDOR_ID:04x}:{DEFAULT_DEVICE_ID:04x}]" in text, text
    # The IDs name no company in pciutils' list (pci.ids): lspci calls the board a Device
    # of those IDs, not a product of someone else.
    plain = subprocess.run([lspci, "-F", str(dump)], check=True, capture_output=True,
                           text=True).stdout
    assert plain == f"00:00.0 Signal processing controller: Device {DEFAULT_VENDOR_ID:04x}:" \
        f"{DEFAULT_DEVICE_ID:04x} (rev 01)\n", plain
    board = PCIBoard(width=32, exerciser_size=SystemConfig().exerciser_size)
    board._MustUse__silence = True     # built only for its BAR declarations
    bars = [(index, window.bar) for index, window in enumerate(board.windows) if window]
    regions = re.findall(r"Region (\d+): (.*)", text)
    assert [int(index) for index, _ in regions] == [index for index, _ in bars], text
    # A dump holds no sizes (lspci learns them from the kernel), so the size shows only as
    # the alignment firmware gave each address.
    for (index, bar), (_, line) in zip(bars, regions):
        if bar.kind == "io":
            match = re.fullmatch(rf"I/O ports at ([0-9a-f]+)(?: \[size={_size(bar.size)}\])?",
                                 line)
        else:
            kind = "prefetchable" if bar.prefetchable else "non-prefetchable"
            match = re.fullmatch(rf"Memory at ([0-9a-f]+) \(32-bit, {kind}\)"
                                 rf"(?: \[size={_size(bar.size)}\])?", line)
        assert match, (index, line)
        address = int(match.group(1), 16)
        assert address and address % bar.size == 0, (index, line, bar)
