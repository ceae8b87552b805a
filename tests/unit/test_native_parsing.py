"""The parsing package compiled with mypyc: used only when built from these very sources, the
same answers as the pure-Python modules, and a build CI cannot silently lack."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from patchstream import parsing
from patchstream.parsing.filestate import FileRef, FileStateBuilder

SRC = Path(parsing.__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

_STATES = """
import json, sys
from pathlib import Path
from patchstream import parsing
from patchstream.parsing.filestate import FileRef, FileStateBuilder
builder = FileStateBuilder()
out = {"compiled": parsing.COMPILED, "states": {}}
for name in sys.argv[1:]:
    path = Path(name)
    state = builder.build(FileRef("t", "r", "main", path.name, 1), path.read_bytes())
    out["states"][name] = state.model_dump(mode="json")
print(json.dumps(out))
"""


def _run(code: str, *args: str, pure: bool, path: Path = SRC) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(path)}
    env.pop(parsing.PURE_ENV, None)
    if pure:
        env[parsing.PURE_ENV] = "1"
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=300, check=True)  # fmt: skip


def test_ci_runs_the_compiled_modules() -> None:
    """`make install` builds them; in CI a failed build fails here instead of passing unseen."""
    if os.environ.get(parsing.PURE_ENV) == "1":
        assert not parsing.COMPILED
        return
    if not parsing.COMPILED and not os.environ.get("CI"):
        pytest.skip("not built here: make compile")
    assert parsing.COMPILED
    import patchstream.parsing.extract as extract

    assert extract.__file__ is not None
    assert extract.__file__.endswith(sysconfig.get_config_var("EXT_SUFFIX"))


def test_compiled_and_pure_modules_build_equal_states() -> None:
    files = sorted(str(p) for p in FIXTURES.rglob("*")
                   if p.is_file() and p.stat().st_size < 50_000)  # fmt: skip
    assert len(files) > 30
    pure = json.loads(_run(_STATES, *files, pure=True).stdout)
    native = json.loads(_run(_STATES, *files, pure=False).stdout)
    assert pure["compiled"] is False
    if not native["compiled"] and not os.environ.get("CI"):
        pytest.skip("not built here: make compile")
    assert native["compiled"] is True
    for name in files:
        assert native["states"][name] == pure["states"][name], name


def test_a_build_of_other_sources_is_not_used(tmp_path: Path) -> None:
    """An edit after `make compile` falls back to the pure modules, with a warning."""
    copy = tmp_path / "src"
    shutil.copytree(SRC / "patchstream", copy / "patchstream",
                    ignore=shutil.ignore_patterns("__pycache__", "_native"))  # fmt: skip
    native = copy / "patchstream" / "parsing" / "_native"
    native.mkdir()
    (native / parsing.FINGERPRINT_FILE).write_text(parsing.sources_fingerprint() + "\n")
    probe = "import patchstream.parsing as p; print(p.COMPILED, p.__path__[0])"
    current = _run(probe, pure=False, path=copy)
    assert current.stdout.split() == ["True", str(native)]  # same sources: the build is used
    assert parsing.sources_fingerprint(copy / "patchstream" / "parsing") == (
        parsing.sources_fingerprint()
    )
    chunking = copy / "patchstream" / "parsing" / "chunking.py"
    chunking.write_text(chunking.read_text() + "\n# edited\n")
    stale = _run(probe, pure=False, path=copy)
    assert stale.stdout.split()[0] == "False"
    assert "event=native_parsing_stale" in stale.stderr
    forced = _run(probe, pure=True, path=SRC)
    assert forced.stdout.split()[0] == "False"


def test_the_fingerprint_covers_every_compiled_module_and_no_jail() -> None:
    names = {p.stem for p in parsing.compiled_sources()}
    assert {"extract", "chunking", "tokens", "filestate", "value_flow"} <= names
    assert not names & {"__init__", "jail", "jail_child"}


def test_a_state_built_here_is_what_the_pure_modules_build() -> None:
    """In-process (compiled when built) against a pure subprocess, for one mixed file."""
    path = FIXTURES / "python"
    sample = sorted(path.rglob("*.py"))[0]
    here = FileStateBuilder().build(FileRef("t", "r", "main", sample.name, 1), sample.read_bytes())
    pure = json.loads(_run(_STATES, str(sample), pure=True).stdout)["states"][str(sample)]
    assert here.model_dump(mode="json") == pure
