"""Issue #34, item 3: a parameter with no annotation takes the one type every call in the file
passes it. ``inferred`` (callers in other files are not seen), and nothing when the calls
disagree, pass what the file cannot type, or hide the argument in a splat."""

from __future__ import annotations

from patchstream.parsing.filestate import FileStateBuilder
from tests.conftest import build_state

SOURCE = b"""
from .jars import RequestsCookieJar


class Jar:
    def add(self, item):
        return item

    def clear(self):
        return None


class Box:
    def add(self, item):
        return item


def fill(jar, item):
    jar.add(item)


def empty(jar):
    jar.clear()


def mixed(holder):
    holder.add(1)


def splatted(jar):
    jar.add(2)


def annotated(jar: Box):
    jar.add(3)


def imported(jar):
    jar.extract_cookies()


def untyped(jar):
    jar.add(4)


class Session:
    def prepare(self, jar):
        jar.clear()

    def run(self):
        self.prepare(Jar())


def main(args):
    kept = Jar()
    fill(Jar(), 1)
    fill(jar=kept, item=2)
    empty(kept)
    mixed(Jar())
    mixed(Box())
    splatted(*args)
    annotated(Jar())
    imported(RequestsCookieJar())
    untyped(args)
"""

PREFIX = "r::pkg/app.py::"


def _calls() -> dict[tuple[str, str], str]:
    state = build_state(FileStateBuilder(), "pkg/app.py", SOURCE)
    return {(e.src.removeprefix(PREFIX), e.dst.removeprefix(PREFIX)): e.resolution.value
            for e in state.edges if e.type.value == "CALLS" and e.resolution}  # fmt: skip


def test_the_one_type_every_call_passes_types_the_parameter() -> None:
    calls = _calls()
    assert calls[("fill", "Jar.add")] == "inferred"  # Jar() and a name bound to Jar()
    assert calls[("empty", "Jar.clear")] == "inferred"
    assert calls[("Session.prepare", "Jar.clear")] == "inferred"  # self.prepare(Jar())


def test_an_imported_class_is_a_type_too() -> None:
    targets = {dst for src, dst in _calls() if src == "imported"}
    assert any("RequestsCookieJar.extract_cookies@pkg.jars" in dst for dst in targets), targets


def test_calls_that_disagree_or_hide_the_argument_type_nothing() -> None:
    calls = _calls()
    for caller in ("mixed", "splatted", "untyped"):
        typed = {dst for src, dst in calls if src == caller and dst.split(".")[0] in ("Jar", "Box")}
        assert typed == set(), (caller, typed)


def test_an_annotation_wins_over_the_calls() -> None:
    calls = _calls()
    assert ("annotated", "Box.add") in calls
    assert ("annotated", "Jar.add") not in calls
