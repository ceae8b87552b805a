"""What a view behind its base may not see of the base's discussions: a mixin of
``CypherGraphStore``.

Discussions live on the default branch and every overlay over it reads them. An overlay
whose head commit is older than its base's (an evaluation at an issue's base commit, a
branch that stopped long ago) must not read the issues, pull requests and notes opened
after that commit: that would hand it the answer from the future. Its *cutoff* is its head
commit's date; every discussion page opened later is hidden by the view, exactly as a file
the overlay deleted is (see ``View.visible``). A view at or ahead of its base's head has no
cutoff, so a live branch keeps seeing today's issues.

The head's date is git's author date (what the commit pages hold). A head whose commit the
graph does not hold (outside the history limit) has no known date, and nothing is hidden.
A thread edited after the cutoff is read as edited: pages keep their latest version only.
"""

from __future__ import annotations

import abc
import threading
from collections import OrderedDict
from typing import Any

from patchstream.schemas.discussions import epoch_of

READ_COMMIT_DATES = "UNWIND $uids AS uid MATCH (k:Commit {uid: uid}) RETURN k.sha, k.date"
READ_LATER_DISCUSSIONS = (
    "UNWIND $scopes AS scope MATCH (d:Discussion {scope: scope}) "
    "WHERE d.opened > $cutoff RETURN d.scope, d.file_uid"
)
_CACHED_CUTOFFS = 256


class DiscussionHorizon(abc.ABC):
    @abc.abstractmethod
    def _read(self, tenant: str, query: str, params: dict[str, Any]) -> list[list[Any]]: ...

    def discussion_cutoff(
        self, tenant: str, scopes: list[str], heads: dict[str, str]
    ) -> float | None:
        """The date after which the view's discussions are the future, or None. ``scopes``
        are the view's layers top down, ``heads`` the history head each layer holds."""
        top = next((scope for scope in scopes if scope in heads), None)
        base_head = heads.get(scopes[-1]) if scopes else None
        if top is None or base_head is None or top == scopes[-1] or heads[top] == base_head:
            return None
        key = (tenant, heads[top], base_head)
        cache, lock = self._cutoffs()
        with lock:
            if key in cache:
                cache.move_to_end(key)
                return cache[key]
        shas = (heads[top], base_head)
        uids = [f"{scope}|{sha}" for scope in scopes for sha in shas]
        rows = self._read(tenant, READ_COMMIT_DATES, {"uids": uids})
        dates = {str(sha): epoch_of(str(date or "")) for sha, date in rows}
        top_at, base_at = dates.get(shas[0]), dates.get(shas[1])
        cutoff = top_at if top_at is not None and (base_at is None or top_at < base_at) else None
        with lock:  # commits do not change their dates: kept until pushed out
            cache[key] = cutoff
            while len(cache) > _CACHED_CUTOFFS:
                cache.popitem(last=False)
        return cutoff

    def later_discussions(self, tenant: str, scopes: list[str], cutoff: float) -> frozenset[str]:
        """The paths of the discussion pages of ``scopes`` opened after ``cutoff``."""
        rows = self._read(tenant, READ_LATER_DISCUSSIONS, {"scopes": scopes, "cutoff": cutoff})
        return frozenset(str(fuid)[len(str(scope)) + 1 :] for scope, fuid in rows)

    def _cutoffs(self) -> tuple[OrderedDict[tuple[str, str, str], float | None], threading.Lock]:
        held = self.__dict__.get("_discussion_cutoffs")
        if held is None:
            held = self.__dict__.setdefault("_discussion_cutoffs",
                                            (OrderedDict(), threading.Lock()))  # fmt: skip
        return held  # type: ignore[no-any-return]
