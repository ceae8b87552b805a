"""Tree-sitter structure extraction, chunking, hashing and file deltas.

The package is pure Python and also builds, with mypyc, into extension modules under
``_native/`` (``make compile``; ``make install`` runs it). They are used only when they were
built from exactly these sources: the build records a fingerprint of the ``.py`` files, and a
checkout edited since then falls back to the pure modules (with a warning) instead of
running stale code. ``PATCHSTREAM_PURE_PYTHON=1`` forces the pure modules.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

# Modules that stay Python: this file, and the jail (a subprocess and seccomp driver, not on
# the hot path).
PURE_ONLY = frozenset({"__init__", "jail", "jail_child"})
NATIVE_DIR = Path(__file__).resolve().parent / "_native"
FINGERPRINT_FILE = "SOURCES"
PURE_ENV = "PATCHSTREAM_PURE_PYTHON"

log = logging.getLogger(__name__)


def compiled_sources(directory: Path = NATIVE_DIR.parent) -> list[Path]:
    """The modules the native build compiles, in a stable order."""
    return sorted(p for p in directory.glob("*.py") if p.stem not in PURE_ONLY)


def sources_fingerprint(directory: Path = NATIVE_DIR.parent) -> str:
    """sha256 over the compiled modules' names and bytes."""
    digest = hashlib.sha256()
    for path in compiled_sources(directory):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _use_native() -> bool:
    if os.environ.get(PURE_ENV) == "1":
        return False
    try:
        built_from = (NATIVE_DIR / FINGERPRINT_FILE).read_text().strip()
    except OSError:
        return False  # never built: the pure modules
    if built_from != sources_fingerprint():
        log.warning(
            "event=native_parsing_stale dir=%s detail=sources changed since the build; "
            "using the pure-Python modules (make compile rebuilds)",
            NATIVE_DIR,
        )
        return False
    return True


COMPILED = _use_native()
if COMPILED:
    # Submodules are looked up in _native first, so ``extract`` loads extract.*.so.
    __path__.insert(0, str(NATIVE_DIR))
