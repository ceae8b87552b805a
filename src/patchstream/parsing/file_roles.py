"""What a file is for, by its path: code, or auxiliary (tests, docs, examples, benchmarks,
and text no grammar parses: locale catalogs, changelogs, data).

Search demotes auxiliary files: an agent's question is about behaviour far more often than
about a test or a page of docs, and tests restate the code's names (every name a question
uses matches a test too). Measured on SWE-bench Lite issues (``bench/swebench_offline.py``):
without the demotion, 7 of sphinx's top 10 files were tests or docs. Once files of no grammar
were indexed as plain text (issue #56, nothing silent), sphinx's 60 ``.po`` catalogs and its
``CHANGES`` filled the top 10 (acc@5 0.812 -> 0.438): they are auxiliary too.
"""

from __future__ import annotations

import re

from patchstream.parsing.languages import language_for_path

_AUXILIARY_DIR = re.compile(r"(^|/)(tests?|testing|docs?|examples?|benchmarks?|bench|asv_bench|"
                            r"galleries|tutorials?)/")  # fmt: skip
_AUXILIARY_NAME = re.compile(
    r"(^test_.*|.*_tests?\.\w+|conftest\.py|.*\.(spec|test)\.[jt]sx?|.*_spec\.rb|"
    r".*(Tests?|Spec|Suite)\.(java|cs|kt|scala|php|swift)|.*\.(md|rst|txt))$"
)


# Third-party code a project carries (``static/jquery-3.5.1.js``, ``vendor/``, ``*.min.js``):
# never where the project's own behaviour lives.
_VENDORED = re.compile(r"(^|/)(vendor|vendored|third_party|thirdparty|node_modules|static)/|"
                       r"\.min\.(js|css)$|-\d+\.\d+(\.\d+)?\.js$")  # fmt: skip


def is_auxiliary(path: str) -> bool:
    """A test, doc, example or benchmark file, vendored code, or text of no language
    patchstream parses."""
    return bool(
        _AUXILIARY_DIR.search(path)
        or _VENDORED.search(path)
        or _AUXILIARY_NAME.match(path.rpartition("/")[2])
        or language_for_path(path) is None
    )
