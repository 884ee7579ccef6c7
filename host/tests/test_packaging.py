# SPDX-License-Identifier: BSD-2-Clause
"""A non-editable install has everything: a wheel built from the sources (pip, without build
isolation, so nothing is downloaded) holds every package of the tree (every folder with an
``__init__.py``, under the name pyproject.toml's ``package-dir`` gives it) and every Verilog
file the components read beside their modules."""

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.host

ROOT = Path(__file__).resolve().parents[2]


def _package_dirs():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]["package-dir"]


def _expected_files():
    """``{path inside the wheel}`` of every ``__init__.py`` and ``.v`` file of the tree."""
    expected = set()
    for package, folder in _package_dirs().items():
        for path in (ROOT / folder).rglob("*"):
            if path.name != "__init__.py" and path.suffix != ".v":
                continue
            relative = path.relative_to(ROOT / folder)
            if "__pycache__" in relative.parts:
                continue
            expected.add("/".join(package.split(".") + list(relative.parts)))
    return expected


def test_wheel_holds_every_package_and_verilog_file(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in set(_package_dirs().values()):
        shutil.copytree(ROOT / folder, source / folder, ignore=ignore)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    [wheel] = (tmp_path / "dist").glob("pcispy-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    expected = _expected_files()
    # The tree has the three Verilog sources and the packages pyproject.toml once missed.
    assert {"pcispy/gateware/exerciser/scratch_ram.v", "pcispy/sim/bfm/backdoor_ram.v",
            "pcispy/sim/bfm/sram_storage.v", "pcispy/host/features/__init__.py",
            "pcispy/gateware/sidechannel/__init__.py",
            "pcispy/gateware/formal/__init__.py"} <= expected
    assert not expected - names, f"missing from the wheel: {sorted(expected - names)}"
    # The console script is declared.
    entry_points = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(wheel) as archive:
        assert "pcispy = pcispy.host.cli:main" in archive.read(entry_points).decode()
