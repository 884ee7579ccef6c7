# SPDX-License-Identifier: BSD-2-Clause
"""docs/ cannot go stale: the generated pages equal what the declarations give, and the
simulator page's example is the bench file, which runs."""

import re
from pathlib import Path

import pytest

from pcispy.app.docs import DOCS_DIR, GENERATED, main

pytestmark = pytest.mark.host

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_page_is_up_to_date(name):
    assert (DOCS_DIR / name).read_text() == GENERATED[name](), \
        f"docs/{name} is out of date: run python -m pcispy.app.docs"


def test_check_names_a_stale_page(tmp_path, monkeypatch, capsys):
    import pcispy.app.docs as docs
    monkeypatch.setattr(docs, "DOCS_DIR", tmp_path)
    assert main(["--check"]) == 1
    assert "registers.md, trace-format.md" in capsys.readouterr().err
    assert main([]) == 0
    assert main(["--check"]) == 0


def test_register_page_lists_every_register():
    from pcispy.board.registers import REGISTER_MAP
    text = (DOCS_DIR / "registers.md").read_text()
    for name, address, _ in REGISTER_MAP:
        assert f"| `0x{address:03x}` | `{name}` |" in text


def test_simulator_page_shows_the_example_bench():
    page = (DOCS_DIR / "using-the-simulator.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    bench = (ROOT / "pcispy" / "sim" / "tests" / "bench_user_example.py").read_text()
    assert blocks[0] == bench


def test_the_example_bench_runs():
    from pcispy.sim.launcher import run_bench
    from pcispy.sim.system import SystemConfig
    assert run_bench("pcispy.sim.tests.bench_user_example", config=SystemConfig(width=64),
                     profile="alphastation200") == 1
