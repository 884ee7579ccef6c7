# SPDX-License-Identifier: BSD-2-Clause
"""The package keeps its rooms (pcispy/rooms.py): no import against the declared order, no
cycle, no production code importing tests, every deferred import explained, one class per
public name, no production module over 800 lines but the listed ones, none of those
growing; the host's board driver loads without Amaranth; the command line starts
without Amaranth, cocotb, numpy or matplotlib; and a command on a running simulated session
loads neither Amaranth nor cocotb.

The reader itself is tested on small packages written here, each breaking one rule."""

import subprocess
import sys
import textwrap

import pytest

from pcispy.rooms import (LONG_MODULES, MAX_LINES, ROOMS, Room, import_problems,
                          name_problems, problems, read, room_of, size_problems)
from pcispy.sim.tests.core_examples import EXAMPLE

__all__ = []


def test_every_import_keeps_the_rooms():
    found = import_problems(read())
    assert not found, "\n".join(found)


def test_one_public_class_per_name():
    found = name_problems(read())
    assert not found, "\n".join(found)


def test_no_production_module_is_too_long():
    assert MAX_LINES == 800
    found = size_problems(read(), allowed=LONG_MODULES)
    assert not found, "\n".join(found)


def test_every_room_is_declared_in_order():
    names = [room.name for room in ROOMS]
    assert len(names) == len(set(names))
    assert room_of("pcispy.dma.registers").name == "data"
    assert room_of("pcispy.dma.engine").name == "dma"
    assert room_of("pcispy.dma.dma_feature").name == "features"
    assert room_of("pcispy.app.report_feature").name == "app"


def test_the_board_driver_loads_no_amaranth():
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, pcispy.host.board; print(*sorted(sys.modules))"],
        capture_output=True, text=True, check=True).stdout.split()
    assert not [name for name in loaded if name.split(".")[0] in ("amaranth", "numpy")]
    assert "pcispy.host.board" in loaded


# What `pcispy --help` runs before it prints: the CLI imported, its parser (every command's
# options) built.
_HELP = """
import contextlib, io, sys
import pcispy.app.cli
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    pcispy.app.cli.main(["--help"])
print(*sorted(sys.modules))
"""


def test_the_command_line_starts_without_gateware_or_heavy_libraries():
    # Every command, `pcispy --help` and `pcispy info` included, first imports the CLI and
    # builds its parser: the gateware (Amaranth), the simulator (cocotb), numpy and
    # matplotlib load only where a command uses them.
    loaded = subprocess.run([sys.executable, "-c", _HELP], capture_output=True, text=True,
                            check=True).stdout.split()
    heavy = sorted({name.split(".")[0] for name in loaded} &
                   {"amaranth", "cocotb", "numpy", "matplotlib"})
    assert not heavy, f"importing pcispy.app.cli loads {', '.join(heavy)}"
    assert "pcispy.app.cli" in loaded and "pcispy.spy.capture_feature" in loaded


# What a command on a running session (`pcispy --sim info`) imports before the simulator
# answers: the CLI, and the session's check that it runs this checkout's sources (its
# configuration, a core's description included, and the model cache's key,
# pcispy/sim/session.py), here of a session started from other sources, which is refused.
_SESSION = """
import sys, types
import pcispy.app.cli
from pcispy.host.errors import PcispyError
from pcispy.sim import session
from pcispy.sim.launcher import feature_path
stale = types.SimpleNamespace(spec=session.SessionSpec(core=sys.argv[1]), sources="0" * 16,
                              started=None, name="stale")
try:
    session._refuse_other_sources(stale)
except PcispyError:
    print(feature_path(pcispy.app.cli.main), *sorted(sys.modules))
"""


@pytest.mark.parametrize("core", ["", str(EXAMPLE)], ids=["board", "verilog-core"])
def test_a_command_on_a_running_session_loads_no_gateware(core):
    # A warm session answers in a fraction of a second: the client checks the session's
    # sources (hashing files, no elaboration) and sends the command, so neither the
    # gateware (Amaranth) nor the simulator (cocotb) loads in its process.
    loaded = subprocess.run([sys.executable, "-c", _SESSION, core], capture_output=True,
                            text=True, check=True).stdout.split()
    assert loaded[:1] == ["pcispy.app.cli:main"], "the stale session was not refused"
    heavy = sorted({name.split(".")[0] for name in loaded} & {"amaranth", "cocotb"})
    assert not heavy, f"a command on a session loads {', '.join(heavy)}"
    assert "pcispy.sim.model" in loaded and "pcispy.sim.launcher" in loaded


# A package of four rooms for the reader's own tests: low <- mid <- top, and tests.
_ROOMS = (
    Room("low", ("toy", "toy.low", "toy.low.*"), (), ""),
    Room("mid", ("toy.mid", "toy.mid.*"), ("low",), ""),
    Room("top", ("toy.top", "toy.top.*"), ("mid",), ""),
)


def _toy(tmp_path, **files):
    """A package ``toy`` in ``tmp_path``: ``files`` maps a module path (``low/a``) to its
    source; every folder gets an ``__init__.py`` but ``tests``."""
    for name, source in {"__init__": "", "low/__init__": "", "mid/__init__": "",
                         "top/__init__": "", **files}.items():
        path = tmp_path / "toy" / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return problems(read(tmp_path, "toy"), _ROOMS, max_lines=20)


def test_a_tidy_package_has_no_problems(tmp_path):
    assert _toy(tmp_path, **{
        "low/a": "import json\n",
        "mid/b": "from toy.low import a\n",
        "top/c": ("from toy.mid.b import a\n"
                  "def later():\n"
                  "    # matplotlib is heavy and only a plot needs it\n"
                  "    import matplotlib\n"),
        "top/tests/test_c": "from toy.top import c\nimport toy.low.a\n",
    }) == []


def test_an_upward_import_is_refused(tmp_path):
    found = _toy(tmp_path, **{"low/a": "from toy.mid import b\n", "mid/b": ""})
    assert found == [f"{tmp_path}/toy/low/a.py:1: toy.low.a (low) imports toy.mid.b (mid), "
                     "which room low does not stand on"]


def test_an_upward_import_inside_a_function_is_refused(tmp_path):
    found = _toy(tmp_path, **{
        "low/a": "def f():\n    import toy.top.c  # why: explained, still upward\n",
        "top/c": ""})
    assert found == [f"{tmp_path}/toy/low/a.py:2: toy.low.a (low) imports toy.top.c (top), "
                     "which room low does not stand on"]


def test_an_import_by_name_is_an_import(tmp_path):
    found = _toy(tmp_path, **{
        "low/a": "import importlib\nimportlib.import_module('toy.mid.b')\n", "mid/b": ""})
    assert found == [f"{tmp_path}/toy/low/a.py:2: toy.low.a (low) imports toy.mid.b (mid), "
                     "which room low does not stand on"]


def test_a_cycle_is_refused(tmp_path):
    found = _toy(tmp_path, **{
        "low/a": "from toy.low import b\n",
        "low/b": "def f():\n    # deferred: the cycle is still one\n    from toy.low import a\n"})
    assert found == ["import cycle: toy.low.a <-> toy.low.b"]


def test_production_code_importing_tests_is_refused(tmp_path):
    found = _toy(tmp_path, **{"top/c": "from toy.top.tests import helper\n",
                              "top/tests/helper": ""})
    assert found == [f"{tmp_path}/toy/top/c.py:1: production module toy.top.c imports the "
                     "test module toy.top.tests.helper"]


def test_one_comment_explains_a_run_of_deferred_imports(tmp_path):
    assert _toy(tmp_path, **{"top/c": ("def f():\n"
                                       "    # json and csv wait: nothing else needs them\n"
                                       "    import json\n"
                                       "    import csv\n"
                                       "    return json, csv\n")}) == []


def test_an_unexplained_deferred_import_is_refused(tmp_path):
    found = _toy(tmp_path, **{"top/c": "def f():\n    import json\n    return json\n"})
    assert found == [f"{tmp_path}/toy/top/c.py:2: toy.top.c imports json inside a function "
                     "without a comment saying why it waits"]


def test_long_modules_and_shared_class_names_are_refused(tmp_path):
    found = _toy(tmp_path, **{"low/a": "class Thing:\n    pass\n" + "\n" * 20,
                              "mid/b": "class Thing:\n    pass\nclass _Own:\n    pass\n",
                              "top/c": "class _Own:\n    pass\n"})
    assert found == [f"{tmp_path}/toy/low/a.py: 22 lines, over 20",
                     "class Thing is declared in toy.low.a, toy.mid.b"]


def test_a_room_stands_only_on_rooms_beneath_it(tmp_path):
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "__init__.py").write_text("")
    upside_down = (Room("low", ("toy",), ("high",), ""), Room("high", (), (), ""))
    assert problems(read(tmp_path, "toy"), upside_down) == [
        "room low stands on high, which is not beneath it"]



def test_a_long_module_may_shrink_but_not_grow(tmp_path):
    def sizes(allowed, **files):
        (tmp_path / "toy").mkdir(exist_ok=True)
        for name, lines in {"__init__": 0, **files}.items():
            (tmp_path / "toy" / f"{name}.py").write_text("x = 1\n" * lines)
        return size_problems(read(tmp_path, "toy"), 20, allowed)
    assert sizes({"toy.long": 30}, long=30, short=20) == []
    assert sizes({"toy.long": 30}, long=29) == []
    assert sizes({"toy.long": 30}, long=31) == [f"{tmp_path}/toy/long.py: 31 lines, over 30"]
    assert sizes({"toy.long": 30}, long=20) == [
        "toy.long: 20 lines, within 20: its allowance goes"]
    assert sizes({"toy.long": 30, "toy.gone": 25}, long=21) == [
        "toy.gone: allowed 25 lines, but there is no such module"]
    assert sizes(None, long=21) == [f"{tmp_path}/toy/long.py: 21 lines, over 20"]
