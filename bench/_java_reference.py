"""The Java side of ``correctness.py``: real Java projects from Debian's source archive, and
caller edges by javac's attribution (``JavaCallees.java``) mapped onto patchstream's symbols.

The sources are the upstream tarballs Debian ships (``*.orig.tar.*``), fetched once into
``bench/.cache`` and checked against their pinned SHA-256.
"""

from __future__ import annotations

import hashlib
import subprocess
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from _ts_reference import Caller, edges_from_lines
from patchstream.schemas.state import FileState

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "java"
DEBIAN_POOL = "http://deb.debian.org/debian/pool/main"


@dataclass(frozen=True)
class JavaCorpus:
    name: str
    version: str
    licence: str
    tarball: str  # path under Debian's pool
    sha256: str
    source_root: str  # the main sources inside the tarball

    @property
    def label(self) -> str:
        return f"{self.name} {self.version} ({self.licence})"


JAVA_CORPORA = {
    "commons-io": JavaCorpus(
        "commons-io", "2.11.0", "Apache-2.0", "c/commons-io/commons-io_2.11.0.orig.tar.gz",
        "5a55361cf2b97228f94b3c65e3a4af784581debe322be551c44b2776db1c6483",
        "commons-io-2.11.0-src/src/main/java",
    ),
    "jsoup": JavaCorpus(
        "jsoup", "1.15.3", "MIT", "j/jsoup/jsoup_1.15.3.orig.tar.xz",
        "052511f0be47511f9b2a17d44fc1eccc4b5373e77cc5a3221e34b6af437e1e2e",
        "jsoup-jsoup-1.15.3/src/main/java",
    ),
}  # fmt: skip


def java_tree(corpus: JavaCorpus) -> Path:
    """The corpus's main source root, fetched and unpacked on first use."""
    unpacked = CACHE / f"{corpus.name}-{corpus.version}"
    root = unpacked / corpus.source_root
    if root.is_dir():
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    archive = CACHE / Path(corpus.tarball).name
    if not archive.exists():
        urllib.request.urlretrieve(f"{DEBIAN_POOL}/{corpus.tarball}", archive)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != corpus.sha256:
        archive.unlink()
        raise SystemExit(f"{archive.name}: sha256 {digest}, expected {corpus.sha256}")
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    return root


def javac_edges(
    root: Path, repo: str, states: dict[str, FileState], caller: Caller
) -> set[tuple[str, str]]:
    """(caller id, callee id) for every call and ``new`` javac resolves inside ``root``."""
    done = subprocess.run(["java", str(HERE / "JavaCallees.java"), str(root)], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return edges_from_lines(done.stdout.splitlines(), root, repo, states, caller)


def javac_version() -> str:
    done = subprocess.run(["javac", "-version"], capture_output=True, text=True, check=True)
    return (done.stdout or done.stderr).strip()
