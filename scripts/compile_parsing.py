"""Compile the parsing package with mypyc into ``src/patchstream/parsing/_native/``.

    python scripts/compile_parsing.py [--check]

Needs a C compiler and Python's headers (gcc from Debian; the headers come with python3-dev
or a pyenv build). The build goes to ``build/mypyc`` and only the extension modules are copied
next to the package, with the fingerprint of the sources they were built from; the package
uses them only while that fingerprint matches (see ``patchstream.parsing``). A failed build
leaves the pure-Python package in use and exits non-zero. ``--check`` exits 0 when the build
is current and 1 when it is missing or stale.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GROUP = "patchstream.parsing.native"  # the shared library is patchstream.parsing.native__mypyc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only say whether it is current")
    args = parser.parse_args()
    os.environ["PATCHSTREAM_PURE_PYTHON"] = "1"  # read the sources, not a previous build
    sys.path.insert(0, str(ROOT / "src"))
    from patchstream.parsing import (
        FINGERPRINT_FILE,
        NATIVE_DIR,
        compiled_sources,
        sources_fingerprint,
    )

    fingerprint = sources_fingerprint()
    stamp = NATIVE_DIR / FINGERPRINT_FILE
    current = stamp.is_file() and stamp.read_text().strip() == fingerprint
    if args.check:
        print("native parsing: " + ("current" if current else "missing or stale"))
        return 0 if current else 1
    if current:
        stamp.touch()  # newer than the sources make compared it with
        print(f"native parsing: current ({NATIVE_DIR.relative_to(ROOT)})")
        return 0

    from mypyc.build import mypycify
    from setuptools import setup

    sources = [str(p.relative_to(ROOT)) for p in compiled_sources()]
    build = ROOT / "build" / "mypyc"
    started = time.monotonic()
    print(f"native parsing: compiling {len(sources)} modules with mypyc (about a minute)")
    os.chdir(ROOT)  # mypyc reads [tool.mypy] (the pydantic plugin) from pyproject.toml
    try:
        setup(
            name="patchstream-native-parsing",
            ext_modules=mypycify(sources, opt_level="3", group_name=GROUP),
            script_args=[
                *("--quiet", "build_ext", "--build-lib", str(build / "lib")),
                *("--build-temp", str(build / "temp")),
            ],
        )
    except (SystemExit, Exception) as exc:  # setuptools exits on a compiler error
        print(f"native parsing: build failed ({exc}); the pure-Python modules stay in use")
        return 1
    built = build / "lib" / "patchstream" / "parsing"
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    modules = sorted(built.glob(f"*{suffix}"))
    expected = {Path(s).stem for s in sources} | {"native__mypyc"}
    missing = expected - {m.name.removesuffix(suffix) for m in modules}
    if missing:
        print(f"native parsing: build lacks {sorted(missing)}; the pure-Python modules stay")
        return 1
    staging = NATIVE_DIR.with_name("_native.new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    for module in modules:
        shutil.copy2(module, staging / module.name)
    (staging / FINGERPRINT_FILE).write_text(fingerprint + "\n")
    shutil.rmtree(NATIVE_DIR, ignore_errors=True)
    staging.rename(NATIVE_DIR)
    print(f"native parsing: {len(modules)} extension modules in "
          f"{NATIVE_DIR.relative_to(ROOT)} ({time.monotonic() - started:.0f} s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
