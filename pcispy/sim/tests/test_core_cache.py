# SPDX-License-Identifier: BSD-2-Clause
"""The model cache (pcispy/sim/verilate.py, build_system): keyed by the bytes of what
Verilator read, included files too; a Latin-1 byte is only a byte; a model whose
generator inputs did not change is found without elaborating Amaranth. A tiny design
stands in for the system (named ``pcisystem`` so build_system's index can point at it)."""

import pytest
from amaranth import Instance, Module
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

import pcispy.sim.model as sim_model
import pcispy.sim.pcisystem as pcisystem
import pcispy.sim.verilate as verilate
from pcispy.sim.model import build_system, generator_key
from pcispy.sim.system import SystemConfig

pytestmark = pytest.mark.core

CORE = b"""// A constant from an included file. Latin-1 in a comment: caf\xe9, \xb5s.
`include "value.vh"
module tiny(output wire [7:0] value);
    assign value = `VALUE;
endmodule
"""


class _Top(wiring.Component):
    """The tiny core's value as the model's only port."""
    value: Out(8)

    def elaborate(self, platform):
        m = Module()
        m.submodules.tiny = Instance("tiny", o_value=self.value)
        return m


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """``build()`` builds (or reuses) the tiny model in a fresh cache; ``include`` is the
    included file."""
    monkeypatch.setattr(verilate, "BUILD_ROOT", tmp_path / "sim")
    monkeypatch.setattr(sim_model, "_MODELS", {})
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "tiny.v").write_bytes(CORE)
    include = tmp_path / "rtl" / "value.vh"
    include.write_text("`define VALUE 8'h5a\n")
    text = verilog.convert(_Top(), name="pcisystem", emit_src=False)

    def build(**options):
        return verilate.build_model(text, "pcisystem", sources=[tmp_path / "rtl" / "tiny.v"],
                                    include_dirs=[tmp_path / "rtl"], identity="tiny",
                                    **options)
    build.include = include
    return build


def _stamp(model):
    return (model.build_dir / model.toplevel).stat().st_mtime_ns


def test_include_edit_rebuilds_latin1_does_not_crash(tiny):
    first = tiny()
    built = _stamp(first)
    inputs = (first.build_dir / verilate.INPUTS_FILE).read_text()
    assert str(tiny.include) in inputs, "the included file is not among the recorded inputs"
    assert _stamp(tiny()) == built, "an unchanged model was built again"
    tiny.include.write_text("`define VALUE 8'ha5\n")
    again = tiny()
    assert again.build_dir == first.build_dir and _stamp(again) != built
    assert verilate.cached_model(again.build_dir, "pcisystem") is not None


def test_build_system_finds_its_model_without_elaborating(tiny, monkeypatch):
    model = tiny()
    config = SystemConfig(width=64)
    index = verilate.BUILD_ROOT / "index" / f"{config.name}-{generator_key(config)}"
    index.parent.mkdir(parents=True)
    index.write_text(model.build_dir.name)

    class Refused(Exception):
        pass

    def refuse(*args, **kwargs):
        raise Refused
    monkeypatch.setattr(pcisystem, "PCISystem", refuse)
    assert build_system(config).build_dir == model.build_dir
    # A changed input (the included file) sends build_system back to the Verilog.
    monkeypatch.setattr(sim_model, "_MODELS", {})
    tiny.include.write_text("`define VALUE 8'h00\n")
    with pytest.raises(Refused):
        build_system(config)


@pytest.mark.heavy
def test_waves_are_a_model_of_their_own(tiny):
    # VCD: Verilator's FST writer needs the lz4 headers, which a machine may not have.
    model = tiny(waves="vcd")
    assert model.build_dir.name.startswith("pcisystem_vcd-") and model.waves == "vcd"
    assert model.run("pcispy.sim.tests.bench_core_cache", env={"PCISPY_EXPECTED": 0x5A}) == 1
    assert b"$enddefinitions" in (model.build_dir / "run" / "dump.vcd").read_bytes()
