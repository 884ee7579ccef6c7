# SPDX-License-Identifier: BSD-2-Clause
"""Core descriptions (pcispy/sim/core.py): loading from JSON and TOML, identity, checks,
the wrapper's pin contract, and slot 0's default (pcispy's board)."""

import json
import re
from dataclasses import asdict
from pathlib import Path

import pytest
from amaranth import ClockDomain, Module
from amaranth.back import verilog

from pcispy.sim.core import CoreDescription, PinMap, VerilogCore
from pcispy.sim.system import SystemConfig, slot0_component
from pcispy.sim.tests.core_examples import EXAMPLE

pytestmark = pytest.mark.core


TOML = """
top = "my_core"
sources = ["rtl/my_core.v"]
include_dirs = ["rtl"]
verilator_flags = ["--no-timing"]
reset = "rst"
reset_active_low = false
[defines]
SIMULATION = ""
[pins.ad]
o = "ad_o"
oe = "ad_oe_n"
oe_active_low = true
oe_bits = 32
i = "ad_i"
[pins.frame]
i = "frame_i"
"""


def test_example_loads():
    core = CoreDescription.load(EXAMPLE)
    assert core.top == "pci_target" and core.label == "example_target"
    assert Path(core.sources[0]) == EXAMPLE.parent / "pci_target.v"
    assert Path(core.include_dirs[0]) == EXAMPLE.parent / "include"
    assert ("WINDOW_BYTES", 1024) in core.parameters
    assert PinMap("trdy", o="trdy_out", oe="tsd_oe") in core.pins
    assert hash(core) == hash(CoreDescription.load(EXAMPLE))


def test_toml_paths_relative_to_the_file(tmp_path):
    (tmp_path / "core.toml").write_text(TOML)
    core = CoreDescription.load(tmp_path / "core.toml")
    assert core.sources == (str(tmp_path / "rtl" / "my_core.v"),)
    assert core.defines == (("SIMULATION", ""),) and core.verilator_flags == ("--no-timing",)
    (ad,) = [pin for pin in core.pins if pin.line == "ad"]
    assert ad.oe_active_low and ad.oe_bits == 32


def test_config_survives_the_bench_environment():
    # run_bench hands the config to the simulator as JSON of asdict(config).
    config = SystemConfig(core=CoreDescription.load(EXAMPLE))
    again = SystemConfig(**json.loads(json.dumps(asdict(config))))
    assert again == config and hash(again) == hash(config)
    assert config.name == "pcisys32_core-example_target"


@pytest.mark.parametrize("pins, message", [
    ([{"line": "foo", "i": "x"}], "not a PCI line"),
    ([{"line": "trdy", "o": "t"}], "needs its output enable"),
    ([{"line": "ad_hi", "i": "x"}], "not a line of a 32-bit bus"),
    ([{"line": "ad", "i": "a"}, {"line": "ad", "i": "b"}], "mapped twice"),
    ([{"line": "frame", "i": "clk"}], "input ports used twice"),
])
def test_bad_descriptions(pins, message):
    core = CoreDescription.from_dict({"top": "t", "sources": [], "pins": pins})
    with pytest.raises(ValueError, match=message):
        core.check(32)


def test_unknown_keys_named():
    with pytest.raises(ValueError, match="unknown keys tops"):
        CoreDescription.from_dict({"tops": "t", "sources": [], "pins": []})


def test_wrapper_keeps_the_slot0_contract():
    core = CoreDescription.load(EXAMPLE)
    wrapper = VerilogCore(core, 64)
    assert wrapper.sram_ports is None
    assert {"ad", "ad_hi", "rst"} <= set(wrapper.ports)
    m = Module()
    m.domains.pci = ClockDomain("pci")
    m.submodules.core = wrapper
    text = verilog.convert(m, ports=[p for port in wrapper.ports.values()
                                     for p in (port.o, port.oe, port.i)], emit_src=False)
    # One instance port per core port, the shared enable included once.
    assert text.count(".tsd_oe(") == 1 and ".rst_n(" in text and ".clk(" in text
    assert ".WINDOW_BYTES(" in text


def test_slot0_default_is_the_board():
    from pcispy.board.top import PCIBoard
    assert SystemConfig().core is None
    board = slot0_component(SystemConfig())
    core = slot0_component(SystemConfig(core=CoreDescription.load(EXAMPLE)))
    # Built to be looked at, not elaborated: tell Amaranth so (no UnusedElaboratable).
    board._MustUse__silence = core._MustUse__silence = True
    assert isinstance(board, PCIBoard) and isinstance(core, VerilogCore)


def test_simulator_page_shows_the_example_description():
    page = (EXAMPLE.parents[2] / "docs" / "using-the-simulator.md").read_text()
    (shown,) = re.findall(r"```json\n(.*?)```", page, re.S)
    assert shown == EXAMPLE.read_text(), "docs/using-the-simulator.md shows another core.json"
