# SPDX-License-Identifier: BSD-2-Clause
"""``pcispy sim-test`` on the DMA example core (examples/verilog_dma/): a core shaped like
the OpenCores PCI bridge, whose BAR0 shows its configuration space (IDs, then the Command
register) and whose RAM is BAR1, and which masters DMA through its master hook. One model
for every test here.

- the checks find BAR1 the RAM and leave BAR0 alone (declaring BAR0 RAM breaks the core,
  as the checks did before they probed), and the correct core passes;
- ``--json`` prints JSON only, the simulator's output goes to the model's folder, and the
  table counts each rule;
- the master hook (register sequence or routine) makes the core master host memory, and
  profile and seed change what its transactions meet; a slow host memory's latency is
  named for host memory, not for the core;
- under the ``rtc`` scenario the run lasts into the scenario's first clock tick.
"""

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from pcispy.app.tests._cli import pcispy_script, script_env
from pcispy.sim.core_description import CoreDescription, MasterHook
from pcispy.sim.coretest import CHECKS, assert_core_passes, format_table, run_core_checks

pytestmark = [pytest.mark.core, pytest.mark.heavy]

#: The DMA example core's description.
DMA = Path(__file__).resolve().parents[3] / "examples" / "verilog_dma" / "core.json"
#: The routine form of the master hook (pcispy/sim/tests/dma_hooks.py).
ROUNDTRIP = MasterHook(routine=f"{Path(__file__).with_name('dma_hooks.py')}:there_and_back",
                       buffer_bytes=512)


def _rows(rows):
    return {row["check"]: row for row in rows}


@pytest.mark.runs_long
def test_checks_test_the_ram_bar_and_pass_the_core():
    rows = _rows(assert_core_passes(DMA, seed=1))
    assert list(rows) == [name for name, _ in CHECKS]
    assert rows["ram_bars"]["detail"] == (
        "BAR0 registers: reads like the configuration header (IDs 0x00035c15), never "
        "written; BAR1 RAM (probed: 3 words kept a pattern)")
    assert rows["memory_write_read"]["result"] == "pass"
    assert rows["memory_burst"]["detail"].startswith("BAR1 +0x"), rows["memory_burst"]
    # Parity errors sent on purpose are reported: PERR# and SERR# (no reporting rule
    # fired), Detected Parity Error and Signaled System Error set.
    parity = rows["parity_reporting"]
    assert parity["result"] == "pass", parity
    assert parity["expected"] == ["address_parity", "write_data_parity"], parity
    assert parity["rules"] == {"address_parity": 1, "write_data_parity": 2}, parity
    assert "(Status 0xc200)" in parity["detail"], parity
    # The register sequence of core.json: the RAM's 1024 bytes into host memory, in
    # bursts of 16 data phases, none outside the buffer.
    master = rows["master"]["master"]
    assert master["bytes_outside"] == 0 and master["bytes_written"] > 1000, master
    assert (master["host_memory"]["transactions"], master["host_memory"]["data_phases"],
            master["host_memory"]["disconnects"]) == (16, 256, 0), master
    assert rows["under_load"]["result"] == "skip"
    assert all(row["result"] in ("pass", "skip") and not row["log"] for row in rows.values()
               if row["check"] != "parity_reporting"), format_table(list(rows.values()))


def test_writing_bar0_as_ram_breaks_the_core_and_json_is_all_stdout(tmp_path):
    """Declared RAM, BAR0 is written: its Command register takes random words, memory
    decoding goes off and later checks fail; what the checks did before the probe. Run as
    a user runs it, ``--json``: stdout is one JSON document, exit 3."""
    description = json.loads(DMA.read_text())
    description.update(ram_bars=[0, 1], sources=[str(DMA.parent / "pci_dma.v")],
                       include_dirs=[str(DMA.parent)])
    path = tmp_path / "core.json"
    path.write_text(json.dumps(description))
    done = subprocess.run([pcispy_script(), "--json", "sim-test", str(path)],
                          env=script_env(), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 3, (done.stdout[-2000:], done.stderr[-2000:])
    result = json.loads(done.stdout)
    rows = _rows(result["checks"])
    assert rows["ram_bars"]["detail"] == "BAR0 RAM (ram_bars); BAR1 RAM (ram_bars)"
    assert rows["memory_write_read"]["result"] == "fail", rows["memory_write_read"]
    assert Path(result["log"]).parent.name.startswith("pcisys32_core-pci_dma")
    assert "cocotb" in Path(result["log"]).read_text()


def test_profile_parks_and_disconnects_and_the_table_counts_rules():
    """alphastation200: host memory disconnects each 16th data phase (every burst of the
    DMA ends with one) and the arbiter parks the bus on the core, which drives AD."""
    rows = _rows(assert_core_passes(DMA, profile="alphastation200", seed=1))
    master = rows["master"]["master"]
    assert master["host_memory"]["disconnects"] == 16, master
    table = format_table(list(rows.values()))
    assert "address_parity* x1, write_data_parity* x2" in table, table


def test_seed_and_slow_host_memory():
    """pentiumpro200 answers reads after 10 to 60 clocks (seeded): the routine's DMA read
    back takes a different time per seed, breaks target_initial_latency by host memory
    (named as the target, expected of the profile, not held against the core), and the
    random offsets of the checks follow the seed."""
    core = replace(CoreDescription.load(DMA), master=ROUNDTRIP)
    seen = {}
    for seed in (1, 2):
        rows = _rows(assert_core_passes(core, profile="pentiumpro200", seed=seed))
        master = rows["master"]
        assert master["master"]["routine"] == {"round_trip_bytes": 512}, master
        assert "target_initial_latency" in master["expected"], master
        blamed = {agent for entry in master["log"]
                  if entry["rule"] == "target_initial_latency" for agent in entry["agents"]}
        assert blamed == {"host_memory (target)"}, master["log"]
        seen[seed] = (master["master"]["clocks"], rows["memory_burst"]["detail"])
    assert seen[1][0] != seen[2][0] and seen[1][1] != seen[2][1], seen


def test_rtc_scenario_reaches_its_clock_tick():
    rows = _rows(run_core_checks(DMA, profile="rtc", seed=1))
    load = rows["under_load"]
    assert load["result"] == "pass", format_table(list(rows.values()))
    answered = int(load["detail"].split("legacy device answered ")[1].split()[0])
    assert answered >= 8, load
    assert not any(row["result"] == "fail" for row in rows.values()), \
        format_table(list(rows.values()))
