"""How fresh an answer is: per tier, what it holds of a repository, when it last applied a
write, and how late it may be (the bus's backlog and the outbox's writes it still lacks).

``/v1/freshness`` and every context answer carry both tiers. A search answer carries the
vector tier's part, read without the graph store: search reads the vector tier, and a
search during a FalkorDB restart still says how late its hits may be (a chaos run met a
search hit of a file deleted 78 s before whose freshness, asked apart, failed with the
graph store).
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from patchstream.config.settings import Settings
from patchstream.errors import StoreError
from patchstream.parsing.prose import extension_of
from patchstream.producers.outbox import outbox_path
from patchstream.query.lag import LagProbe
from patchstream.query.owed import owed_by_tier
from patchstream.stores.graph.base import FlaggedFile, GraphStore
from patchstream.stores.overlays import merged_hashes
from patchstream.stores.vector.milvus import MilvusVectorStore
from patchstream.stores.vector.search_mirror import SearchMirror

FRESHNESS_ENTRIES = 1024  # repositories whose last answer is kept (for a second each)
FLAGGED_LISTED = 50  # files named in a freshness answer; every flag is counted


class FreshnessReader:
    """Each tier's holdings of a repository, computed at most once a second per view."""

    def __init__(
        self, settings: Settings, graph: GraphStore, vectors: MilvusVectorStore,
        mirror: Callable[[], SearchMirror | None],
    ) -> None:  # fmt: skip
        self.settings, self.graph, self.vectors, self._mirror = settings, graph, vectors, mirror
        self._cache: OrderedDict[tuple[str, str, str, str], tuple[float, dict[str, object]]] = (
            OrderedDict()
        )

    def tiers(self, tenant: str, repo: str, ref: str = "main") -> dict[str, object]:
        """Both tiers and the view's flagged files (``/v1/freshness``, context)."""
        return self._cached(("both", tenant, repo, ref), lambda: self._both(tenant, repo, ref))

    def vector_tier(self, tenant: str, repo: str, ref: str = "main") -> dict[str, object]:
        """The vector tier alone, with no graph read unless ``ref`` may be an overlay (a
        graph that does not answer then reads it as a plain branch)."""
        return self._cached(("vector", tenant, repo, ref),
                            lambda: self._vector_only(tenant, repo, ref))  # fmt: skip

    def _cached(
        self, key: tuple[str, str, str, str], compute: Callable[[], dict[str, object]]
    ) -> dict[str, object]:
        cached = self._cache.get(key)
        if cached is not None and time.monotonic() - cached[0] < 1.0:
            return {**copy.deepcopy(cached[1]), "as_of": time.time()}
        value = compute()
        self._cache[key] = (time.monotonic(), value)
        self._cache.move_to_end(key)
        # Bounded: entries expire after a second, and at most FRESHNESS_ENTRIES are kept.
        while self._cache and (
            len(self._cache) > FRESHNESS_ENTRIES
            or time.monotonic() - next(iter(self._cache.values()))[0] >= 1.0
        ):
            self._cache.popitem(last=False)
        return copy.deepcopy(value)

    def _vector(self, tenant: str, repo: str, owed_at: float | None) -> dict[str, object]:
        mirror = self._mirror()
        held = mirror.last_applied(tenant, repo) if mirror is not None else None
        files, last = held if held is not None else self.vectors.last_applied(tenant, repo)
        return {
            "files": files,
            "last_applied_at": last,
            "oldest_owed_at": owed_at,
            # Who answers searches: the in-process copy ("ready"), or Milvus meanwhile.
            "search": mirror.state(tenant) if mirror is not None else "milvus",
        }

    def _owed(
        self, tenant: str, repo: str, chain: list[str], graph: GraphStore | None
    ) -> dict[str, float | None]:
        return owed_by_tier(outbox_path(self.settings), graph, self.vectors, tenant, repo,
                            chain, self._mirror())  # fmt: skip

    def _vector_only(self, tenant: str, repo: str, ref: str) -> dict[str, object]:
        chain = [ref]
        with contextlib.suppress(StoreError):  # a graph restarting: read as a plain branch
            chain = self.graph.overlay_chain(tenant, repo, ref)
        owed = self._owed(tenant, repo, chain, None)
        return {"vector": self._vector(tenant, repo, owed["vector"]), "as_of": time.time()}

    def _both(self, tenant: str, repo: str, ref: str) -> dict[str, object]:
        # An overlay is as fresh as its newest layer and holds what its reads see.
        graph = self.graph
        chain = graph.overlay_chain(tenant, repo, ref)
        layers = [graph.repo_version(tenant, repo, name) for name in chain]
        applied = [v.last_applied_at.timestamp() for v in layers if v.last_applied_at]
        visible = (
            len(merged_hashes(graph.file_hashes, graph.file_versions, tenant, repo, chain))
            if len(chain) > 1
            else layers[0].files
        )
        owed = self._owed(tenant, repo, chain, graph)
        return {
            **flag_report(graph.flagged_files(tenant, repo, ref)),
            "graph": {
                "files": visible,
                "last_version": max(v.max_version for v in layers),
                "last_applied_at": max(applied) if applied else None,
                "oldest_owed_at": owed["graph"],
            },
            "vector": self._vector(tenant, repo, owed["vector"]),
            "as_of": time.time(),
        }


async def with_lags(
    tiers: dict[str, Any], probe: LagProbe, tenant: str, repo: str | None
) -> dict[str, Any]:
    """``tiers`` with the bus's pending events and each tier's ``lag_s``: how long ago the
    oldest write it may lack was made (0 when nothing of it waits)."""
    try:
        lags = await probe.lags()
        tiers["pending_events"] = {tier: lag.pending for tier, lag in lags.items()}
    except Exception as exc:  # the bus being down must not break reads
        tiers["pending_events"] = {"error": str(exc)}
    now = tiers["as_of"]
    # An event the parse stage has not turned into a delta yet is pending for both tiers:
    # a file stuck in parsing held later writes while both sinks had nothing to do.
    parsing = tiers["pending_events"].get("parse", 0)
    oldest_unparsed = None
    if repo and isinstance(parsing, int) and parsing:
        with contextlib.suppress(Exception):  # the bus being down must not break reads
            backlog = (await probe.backlog_by_repo()).get((tenant, repo))
            tiers["parse"] = {"pending": backlog.events if backlog else 0,
                              "counted_all": backlog.exact if backlog else True,
                              "oldest_s": round(now - backlog.oldest_at, 3)
                              if backlog else 0.0}  # fmt: skip
            oldest_unparsed = backlog.oldest_at if backlog else None
    for tier in ("graph", "vector"):
        info = tiers.get(tier)
        waiting = tiers["pending_events"].get(tier, 0)
        pending = waiting + parsing if isinstance(waiting, int) else parsing
        if isinstance(info, dict):
            last = info.get("last_applied_at")
            info["lag_s"] = round(now - last, 3) if pending and last else 0.0
            oldest = [oldest_unparsed] if oldest_unparsed is not None else []
            if repo and isinstance(waiting, int) and waiting:
                # Since the tier's last write is not enough: other partitions move on
                # while the one holding this repository's delete waits (a search hit a
                # file deleted 68 s before while the lag said 31 s).
                with contextlib.suppress(Exception):
                    held = (await probe.backlog_by_repo(tier)).get((tenant, repo))
                    oldest += [held.oldest_at] if held is not None else []
            # An acknowledged write not on the bus (a restarted broker holds nothing) waits
            # in the outbox for its replay: as late as the oldest one this tier lacks.
            oldest += [info["oldest_owed_at"]] if info.get("oldest_owed_at") else []
            if oldest:  # this repository's write waits there
                info["lag_s"] = max(info["lag_s"], round(now - min(oldest), 3))
    return tiers


def flag_report(flagged: list[FlaggedFile]) -> dict[str, object]:
    """Files whose content the index holds in part or not at all, counted by flag, and the
    first ``FLAGGED_LISTED`` named: what ``query freshness`` and ``status`` show. Files of a
    language with no grammar here (their text held whole, no symbols) are counted apart, by
    extension (``unparsed``), and not named: a repository's hundred YAML files would hide the
    one that failed to parse."""
    counts: dict[str, int] = {}
    unparsed: dict[str, int] = {}
    named = []
    for file in flagged:
        for flag in file.flags:
            if flag != "no_grammar":  # its text is held whole: not a file held in part
                counts[flag] = counts.get(flag, 0) + 1
        if "no_grammar" in file.flags:
            extension = extension_of(file.path)
            unparsed[extension] = unparsed.get(extension, 0) + 1
        if set(file.flags) - {"no_grammar"}:
            named.append(file)
    listed = [{"repo": f.repo, "ref": f.ref, "path": f.path, "flags": list(f.flags)}
              for f in named[:FLAGGED_LISTED]]  # fmt: skip
    return {"flagged": dict(sorted(counts.items())), "flagged_files": listed,
            "unparsed": dict(sorted(unparsed.items(), key=lambda kv: (-kv[1], kv[0])))}  # fmt: skip
