# SPDX-License-Identifier: BSD-2-Clause
"""Core descriptions (pcispy/sim/core_description.py): loading from JSON and TOML,
identity, checks,
the wrapper's pin contract, slot 0's default (pcispy's board), and every kind of mistake
in a description reported by ``pcispy sim-test`` in one line naming the field, exit 2,
before any build."""

import json
import re
import time
import warnings
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from amaranth import ClockDomain, Module
from amaranth.back import verilog

from pcispy.app.tests._cli import run_cli
from pcispy.sim.core_description import CoreDescription, DescriptionError, MasterHook, PinMap
from pcispy.sim.pcisystem import slot0_component
from pcispy.sim.system import SystemConfig
from pcispy.sim.verilog_core import VerilogCore
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
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "my_core.v").write_text(
        "module my_core(input clk, input rst, output [31:0] ad_o, output [31:0] ad_oe_n,\n"
        "               input [31:0] ad_i, input frame_i);\nendmodule\n")
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
    ([{"line": "trdy", "o": "t"}], "pins.trdy: an output needs its output enable"),
    ([{"line": "ad_hi", "i": "x"}], "pins.ad_hi: not a line of a 32-bit bus"),
    ([{"line": "ad", "i": "a"}, {"line": "ad", "i": "b"}], "pins: lines mapped twice: ad"),
    ([{"line": "frame", "i": "clk"}], "pins: input ports used twice: clk"),
])
def test_bad_descriptions(pins, message):
    core = CoreDescription.from_dict({"top": "t", "sources": [], "pins": pins})
    with pytest.raises(DescriptionError, match=re.escape(message)):
        core.check(32)


def test_unknown_keys_named():
    with pytest.raises(DescriptionError, match="unknown key 'tops'"):
        CoreDescription.from_dict({"tops": "t", "sources": [], "pins": []})


def test_test_settings_are_no_part_of_the_model():
    """ram_bars and the master hook say what sim-test does, not what the model is: the
    same model (repr, hash, equality) with or without them, and both survive the bench's
    JSON."""
    core = CoreDescription.load(EXAMPLE)
    hooked = replace(core, ram_bars=(0,), master=MasterHook(routine="x:y"))
    assert repr(hooked) == repr(core) and hooked == core and hash(hooked) == hash(core)
    again = CoreDescription.from_dict(json.loads(json.dumps(asdict(hooked))))
    assert again.ram_bars == (0,) and again.master == MasterHook(routine="x:y")


# --- every mistake a user made, as pcispy sim-test reports it ---------------------------

def _example_data():
    """The example's description as data, its paths absolute."""
    data = json.loads(EXAMPLE.read_text())
    data["sources"] = [str(EXAMPLE.parent / path) for path in data["sources"]]
    data["include_dirs"] = [str(EXAMPLE.parent / path) for path in data["include_dirs"]]
    return data


def _with(**changes):
    """The example's data with keys changed (None: taken out)."""
    data = _example_data()
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    return data


def _pins(**changes):
    pins = _example_data()["pins"]
    pins.update(changes)
    return pins


#: name -> (description data, or raw text; the start of the line it must give after the
#: file's path).
MISTAKES = {
    "unknown_line": (_with(pins=_pins(adx={"i": "ad_in"})),
                     "pins: 'adx' is not a PCI line (ad, cbe, par,"),
    "unknown_pin_key": (_with(pins=_pins(ad={"o": "ad_out", "oee": "ad_oe"})),
                        "pins.ad: unknown key 'oee' (known: o, oe, i,"),
    "pin_not_a_table": (_with(pins=_pins(ad="ad_out")), "pins.ad: must be a table"),
    "missing_top": (_with(top=None), "top: missing (every description names top, sources "
                                     "and pins)"),
    "missing_pins": (_with(pins=None), "pins: missing"),
    "top_not_in_sources": (_with(top="pci_targt"), "top: no module pci_targt in the sources "
                                                   "(they declare: pci_target)"),
    "missing_source": (_with(sources=["/no/such/core.v"]),
                       "sources: /no/such/core.v does not exist"),
    "sources_not_a_list": (_with(sources="pci_target.v"), "sources: must be a list of "
                                                          "strings, not 'pci_target.v'"),
    "missing_include_dir": (_with(include_dirs=["/no/such/folder"]),
                            "include_dirs: /no/such/folder is not a folder"),
    "port_not_in_sources": (_with(pins=_pins(ad={"o": "ad_outt", "oe": "ad_oe",
                                                 "i": "ad_in"})),
                            "pins.ad.o: ad_outt appears nowhere in the sources"),
    "clock_not_in_sources": (_with(clock="pci_clk"), "clock: pci_clk appears nowhere in the "
                                                   "sources"),
    "bad_width": (_with(width=16), "width: must be 32 or 64, not 16"),
    "wide_core_on_a_narrow_bus": (_with(width=64), "width: a 64-bit core on a 32-bit bus"),
    "output_without_enable": (_with(pins=_pins(trdy={"o": "trdy_out"})),
                              "pins.trdy: an output needs its output enable"),
    "bad_parameter": (_with(parameters={"WINDOW_BYTES": [1024]}),
                      "parameters.WINDOW_BYTES: must be a number"),
    "bad_ram_bars": (_with(ram_bars=[7]), "ram_bars: must be a list of BAR numbers 0-5"),
    "master_without_req": (_with(master={"routine": "hooks:start"}),
                           "master: the core's pins do not make it a master"),
    "master_missing_done": (_with(master={"writes": [[0, 0, 1]]}), "master.done: missing"),
    "master_routine_file": (_with(master={"routine": "/no/such/hooks.py:start"}),
                            "master.routine: /no/such/hooks.py does not exist"),
    "not_json": ('{"top": "pci_target",', "not valid JSON: "),
    "not_a_table": ("[1, 2]", "a core description is a table of keys"),
}


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_each_mistake_is_one_line_exit_2_before_any_build(name, tmp_path):
    data, message = MISTAKES[name]
    path = tmp_path / "core.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    start = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # an Amaranth warning fails the test
        status, out, err = run_cli("sim-test", str(path))
    assert time.monotonic() - start < 5, "the mistake was found late"
    assert (status, out) == (2, ""), (status, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"pcispy: error: {path}: {message}"), err


def test_a_missing_description_file_is_one_line(tmp_path):
    status, out, err = run_cli("sim-test", str(tmp_path / "nothing.toml"))
    assert (status, out) == (2, "")
    assert err == f"pcispy: error: {tmp_path / 'nothing.toml'}: cannot read it: No such file or " \
                  "directory\n", err


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
