"""Overlays: a ref that stores only what it changed over a base ref, read as the merge.

An agent workspace (``main~agent-42``) is an overlay of ``main``; a branch declared over a
base (``feature-x`` over ``main``) is one too. Each layer is a scope of its own in both
stores (see ``graph.keys.scope_of``); a read on the overlay sees a *view*: the layers top
down, where a file held by an upper layer (written or deleted there) hides the same path in
every layer below. Nothing here does I/O: the stores read the layers, this decides what a
reader sees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

WORKSPACE_MARK = "~"
MAX_LAYERS = 4  # a workspace over a branch over main is three; more is a cycle or a mistake


@dataclass(frozen=True)
class OverlayInfo:
    """A registered overlay and its size (what ``workspace list`` shows)."""

    repo: str
    ref: str
    base: str
    kind: str  # "workspace" (an agent's, created by its first write) or "branch"
    created_at: float
    last_write_at: float | None
    files: int  # files the overlay wrote (live)
    deleted: int  # files the overlay deleted (hidden from the base)
    symbols: int
    closed_at: float | None = None  # its branch was deleted or merged: dropped after a grace


@dataclass(frozen=True)
class Layer:
    """One scope of a view and the paths it holds (live or deleted)."""

    scope: str
    paths: frozenset[str]


@dataclass(frozen=True)
class View:
    """What a read of ``ref`` sees: ``layers`` top down (the overlay first, the base last)."""

    tenant: str
    repo: str
    ref: str
    layers: tuple[Layer, ...]

    @property
    def scopes(self) -> list[str]:
        return [layer.scope for layer in self.layers]

    def visible(self, scope: str, path: str) -> bool:
        """Whether a row of ``scope`` at ``path`` is part of the view: its layer is in the
        view and no layer above it holds the path."""
        for layer in self.layers:
            if layer.scope == scope:
                return True
            if path in layer.paths:
                return False
        return False

    def owner(self, path: str) -> str:
        """The scope whose copy of ``path`` the view reads: the top layer holding it, else
        the base."""
        for layer in self.layers[:-1]:
            if path in layer.paths:
                return layer.scope
        return self.layers[-1].scope

    def keys(self, key: str) -> list[str]:
        """A resolution key of one layer in every layer: the same module and name, found in
        whichever layer defines it."""
        logical = logical_key(key)
        return [f"{scope}|{logical}" for scope in self.scopes]


def logical_key(key: str) -> str:
    """``tenant|repo|branch|module|name`` -> ``module|name`` (what does not depend on the
    layer)."""
    return key.split("|", 3)[3] if key.count("|") >= 3 else key


def split_workspace(ref: str) -> tuple[str, str | None]:
    """``main~agent-42`` -> (``main``, ``agent-42``); ``main`` -> (``main``, None)."""
    base, mark, workspace = ref.partition(WORKSPACE_MARK)
    return base, (workspace if mark else None)


def merged_hashes(
    hashes: Callable[[str, str, str], dict[str, str]],
    versions: Callable[[str, str, str], dict[str, int]],
    tenant: str,
    repo: str,
    chain: list[str],
) -> dict[str, str]:
    """Path -> content hash of every live file a read of ``chain[0]`` sees: the base's,
    then each overlay's over it (a path an overlay holds, live or deleted, replaces the
    base's)."""
    merged: dict[str, str] = {}
    for ref in reversed(chain):
        held = versions(tenant, repo, ref).keys() if len(chain) > 1 else ()
        merged = {p: h for p, h in merged.items() if p not in held}
        merged.update(hashes(tenant, repo, ref))
    return merged


def held_by_both(graph: Mapping[str, str], vectors: Mapping[str, str]) -> dict[str, str | None]:
    """Path -> the content hash both tiers hold (None where they differ or one lacks it)."""
    return {path: graph.get(path) if graph.get(path) == vectors.get(path) else None
            for path in graph.keys() | vectors.keys()}  # fmt: skip
