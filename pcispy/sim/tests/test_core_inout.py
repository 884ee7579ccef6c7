# SPDX-License-Identifier: BSD-2-Clause
"""Cores with inout pins (pcispy/sim/core_description.py): pin maps that name an inout port and the
signal enabling its driver, the generated wrapper, and the example target behind inout
pins (examples/verilog_target_inout/) passing every standard check with both monitors
clean, which needs the resolver to see exactly when it drives each line."""

from pathlib import Path

import pytest

from pcispy.sim.core_description import CoreDescription, PinMap, inout_wrapper
from pcispy.sim.coretest import CHECKS, assert_core_passes

pytestmark = pytest.mark.core

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
INOUT = EXAMPLES / "verilog_target_inout" / "core.json"
#: The checks that do not apply to the example: it checks no parity (Parity Error
#: Response reads 0), has no master hook, and runs on a profile without a scenario.
_SKIPPED = {"parity_reporting", "master", "under_load"}


@pytest.mark.parametrize("pin, message", [
    ({"line": "ad", "io": "AD", "o": "ad_o"}, "no o or i beside it"),
    ({"line": "ad", "io": "AD", "i": "ad_i"}, "no o or i beside it"),
    ({"line": "ad", "io": "AD", "oe": "ad_oe + 1"}, "not a signal name inside the core"),
    ({"line": "ad_hi", "io": "AD_HI"}, "not a line of a 32-bit bus"),
])
def test_bad_inout_maps(pin, message):
    with pytest.raises(ValueError, match=message):
        PinMap(**pin).check(32)


def test_an_inout_port_is_mapped_once():
    core = CoreDescription.from_dict({"top": "t", "sources": [], "pins": {
        "trdy": {"io": "T", "oe": "oe"}, "stop": {"io": "T", "oe": "oe"}}})
    with pytest.raises(ValueError, match="inout ports used twice: T"):
        core.check(32)


def test_inout_example_loads():
    core = CoreDescription.load(INOUT)
    core.check(32)
    assert core.has_inouts and not core.is_master
    assert PinMap("stop", io="STOPn", oe="target.tsd_oe") in core.pins
    assert core.model_sources()[:2] == list(core.sources)


def test_wrapper_feeds_the_bus_weakly_and_reads_the_enable_inside():
    core = CoreDescription.load(INOUT)
    text = inout_wrapper(core)
    assert text == inout_wrapper(CoreDescription.load(INOUT))   # deterministic
    assert "    assign (weak0, weak1) AD__net = AD__bus;\n" in text
    assert "    assign AD__o = AD__net;\n" in text
    assert "    assign AD__oe = |core.ad_oe;\n" in text
    assert "    assign STOPn__oe = |core.target.tsd_oe;\n" in text
    # A line the core only reads has no enable output; the parameters are set here.
    assert "CBE__oe" not in text and "output wire [3:0] CBE__o" in text
    assert "pci_target_pins #(.VENDOR_ID(4617), .DEVICE_ID(2), .WINDOW_BYTES(1024)) core (" \
        in text
    low = CoreDescription.from_dict({"top": "t", "sources": [], "pins": {
        "par": {"io": "PAR", "oe": "par_oe_n", "oe_active_low": True}}})
    assert "    assign PAR__oe = ~&core.par_oe_n;\n" in inout_wrapper(low)


@pytest.mark.heavy
@pytest.mark.runs_long
def test_inout_example_passes_every_check():
    rows = assert_core_passes(INOUT, profile="alphastation200", seed=2)
    assert [row["check"] for row in rows] == [name for name, _ in CHECKS]
    assert all(row["result"] == "pass" and not row["rules"] for row in rows
               if row["check"] not in _SKIPPED), rows
    assert {row["check"] for row in rows if row["result"] == "skip"} == _SKIPPED, rows
    assert rows[0]["detail"] == "vendor 0x1209 device 0x0002", rows
