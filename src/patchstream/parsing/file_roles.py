"""What a file is for, by its path: code, or auxiliary (tests, docs, examples, benchmarks).

Search demotes auxiliary files: an agent's question is about behaviour far more often than
about a test or a page of docs, and tests restate the code's names (every name a question
uses matches a test too). Measured on SWE-bench Lite issues (``bench/swebench_offline.py``):
without the demotion, 7 of sphinx's top 10 files were tests or docs.
"""

from __future__ import annotations

import re

_AUXILIARY_DIR = re.compile(r"(^|/)(tests?|testing|docs?|examples?|benchmarks?|bench|asv_bench|"
                            r"galleries|tutorials?)/")  # fmt: skip
_AUXILIARY_NAME = re.compile(
    r"(^test_.*|.*_tests?\.\w+|conftest\.py|.*\.(spec|test)\.[jt]sx?|.*Tests?\.java|"
    r".*\.(md|rst|txt))$"
)


def is_auxiliary(path: str) -> bool:
    """A test, doc, example or benchmark file."""
    return bool(_AUXILIARY_DIR.search(path) or _AUXILIARY_NAME.match(path.rpartition("/")[2]))
