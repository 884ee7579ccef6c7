# SPDX-License-Identifier: BSD-2-Clause
"""A non-editable install has everything: a wheel built from the sources (pip, without build
isolation, so nothing is downloaded) holds every package of the tree (every folder of pcispy/ with an
``__init__.py``: the import path is the folder's path) and every Verilog file the components
read beside their modules, and none of the tests."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.host

ROOT = Path(__file__).resolve().parents[3]


def _expected_files():
    """``{path inside the wheel}`` of every ``__init__.py`` and ``.v`` file of the tree."""
    expected = set()
    for path in (ROOT / "pcispy").rglob("*"):
        if path.name != "__init__.py" and path.suffix != ".v":
            continue
        relative = path.relative_to(ROOT)
        if "__pycache__" in relative.parts or "tests" in relative.parts:
            continue
        expected.add("/".join(relative.parts))
    return expected


def test_wheel_holds_every_package_and_verilog_file(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "pcispy", source / "pcispy", ignore=ignore)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    [wheel] = (tmp_path / "dist").glob("pcispy-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    expected = _expected_files()
    # The tree has the Verilog RAM and the packages pyproject.toml once missed.
    assert {"pcispy/core/ram.v", "pcispy/host/transports/__init__.py",
            "pcispy/sidechannel/__init__.py", "pcispy/platform/ecp5/__init__.py",
            "pcispy/formal/__init__.py"} <= expected
    assert not expected - names, f"missing from the wheel: {sorted(expected - names)}"
    assert not [name for name in names if "/tests/" in name], "tests in the wheel"
    # The console script is declared.
    entry_points = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(wheel) as archive:
        assert "pcispy = pcispy.app.entry:main" in archive.read(entry_points).decode()
