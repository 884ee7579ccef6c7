# SPDX-License-Identifier: BSD-2-Clause
"""Warming the WebAssembly tools' cache (pcispy/app/toolcache.py), with a stand-in tool:
a package holding a small module file and a command that "compiles" it as the yowasp
runtime does (into ``$YOWASP_CACHE_DIR/<package>/<module>/<SHA-1 of the module>``) and
counts its compiles. The real tools take a CPU-minute each to compile."""

import hashlib
import stat
import sys

import pytest

from pcispy.app import toolcache

pytestmark = pytest.mark.board

_TOOL = """\
import hashlib, os, pathlib, sys
module = pathlib.Path({module!r})
digest = hashlib.sha1(module.read_bytes()).hexdigest()
out = pathlib.Path(os.environ["YOWASP_CACHE_DIR"]) / "fakewasm" / "tool.wasm" / digest
out.parent.mkdir(parents=True, exist_ok=True)
out.write_bytes(b"compiled " + module.read_bytes())
with open({count!r}, "a") as f:
    f.write("x")
"""


@pytest.fixture
def fake_tool(tmp_path, monkeypatch):
    package = tmp_path / "lib" / "fakewasm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    module = package / "tool.wasm"
    module.write_bytes(b"\0asm version 1")
    count = tmp_path / "compiles"
    count.write_text("")
    script = tmp_path / "bin" / "fake-tool"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\n" + _TOOL.format(module=str(module),
                                                             count=str(count)))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.delitem(sys.modules, "fakewasm", raising=False)
    monkeypatch.setattr(toolcache, "TOOLS", (("fakewasm", "tool.wasm", (str(script),)),))
    cache = tmp_path / "cache"
    monkeypatch.setenv("YOWASP_CACHE_DIR", str(cache))
    return module, count, cache


def test_a_cold_cache_is_filled_once_and_then_left_alone(fake_tool):
    module, count, cache = fake_tool
    assert not toolcache.cached("fakewasm", "tool.wasm", exact=False)
    lines = []
    assert toolcache.warm(echo=lines.append) == ["fakewasm"]
    digest = hashlib.sha1(module.read_bytes()).hexdigest()
    compiled = cache / "fakewasm" / "tool.wasm" / digest
    assert compiled.read_bytes() == b"compiled \0asm version 1"
    assert lines == [f"compiled fakewasm's tool.wasm into {cache}"]
    # Nothing but the compiled module and the lock is left in the shared cache.
    assert sorted(p.name for p in cache.iterdir()) == [".pcispy-warm.lock", "fakewasm"]
    assert toolcache.warm() == [] and toolcache.warm(exact=False) == []
    assert count.read_text() == "x"


def test_a_new_module_is_compiled_beside_the_old_one_which_stays_intact(fake_tool):
    module, count, cache = fake_tool
    toolcache.warm()
    old = next((cache / "fakewasm" / "tool.wasm").iterdir())
    with open(old, "rb") as reader:          # a run that has the old module mapped
        module.write_bytes(b"\0asm version 2")
        # The quick check (any compiled version) holds; the exact one compiles anew.
        assert toolcache.warm(exact=False) == []
        assert toolcache.warm() == ["fakewasm"]
        assert reader.read() == b"compiled \0asm version 1"
    assert count.read_text() == "xx"
    assert toolcache.cached("fakewasm", "tool.wasm")


def test_a_tool_that_fails_is_reported_with_its_status(fake_tool, monkeypatch):
    monkeypatch.setattr(toolcache, "TOOLS", (("fakewasm", "tool.wasm", ("false",)),))
    with pytest.raises(RuntimeError, match="fakewasm: .*false ended with 1"):
        toolcache.warm()
