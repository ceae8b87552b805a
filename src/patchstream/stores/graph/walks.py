"""Breadth-first walks from many start symbols at once, each with its own answer.

Context expands every entry point's callers and callees; one walk per entry paid one round
trip per level each. ``Walks`` keeps one walk per start (its own seen set, frontier and row
cap, exactly as a walk of its own would) while the store reads each level for the union of
the frontiers in one query and hands back ``(from uid, to uid, to props)`` pairs. Pure: no
I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from patchstream.schemas.graph import CallResolution
from patchstream.stores.graph.view_types import Pair, Props


@dataclass
class _Walk:
    frontier: list[str]
    seen: set[str]
    found: list[tuple[int, Props, str]] = field(default_factory=list)
    # uid -> rank of the weakest hop on the path that reached it (0: exact)
    ranks: dict[str, int] = field(default_factory=dict)


class Walks:
    def __init__(self, starts: dict[str, Props], cap: int) -> None:
        """``starts``: origin key -> the start node's props (its ``uid`` at least)."""
        self.cap = cap
        self._walks = {key: _Walk([p["uid"]], {p["uid"]}) for key, p in starts.items()}
        self._props: dict[str, Props] = {p["uid"]: p for p in starts.values()}

    def frontier(self) -> list[Props]:
        """The union of the frontiers that still have room, each node once."""
        uids = dict.fromkeys(u for w in self._walks.values() if len(w.found) < self.cap
                             for u in w.frontier)  # fmt: skip
        return [self._props[uid] for uid in uids]

    def room(self) -> int:
        """Rows a level's query may return and still fill every walk (its ``LIMIT``): a walk
        with nothing left to expand takes none."""
        return sum(room for _, room in self.parts())

    def parts(self) -> list[tuple[list[str], int]]:
        """Each walk that still has room: its frontier and its own ``LIMIT``. A level read
        for the union that reached the shared ``LIMIT`` may have given one hub's rows only;
        read per walk, each gets what a walk of its own would."""
        open_walks = (w for w in self._walks.values() if w.frontier and len(w.found) < self.cap)
        return [(w.frontier, self.cap - len(w.found) + len(w.seen)) for w in open_walks]

    def advance(self, pairs: Iterable[Pair], level: int) -> None:
        """Take one level's pairs: each walk keeps what its own frontier reached and it has
        not seen, in the order the store gave, up to its cap. A node's resolution is the
        weakest hop of the strongest path that reached it at this level."""
        ordered = list(pairs)
        for _src, uid, props, _res in ordered:
            self._props.setdefault(uid, props)
        for walk in self._walks.values():
            members = set(walk.frontier)
            walk.frontier = []
            reached: dict[str, tuple[int, Props]] = {}  # in the order first reached
            for src, uid, props, res in ordered:
                if src not in members or uid in walk.seen:
                    continue
                rank = max(walk.ranks.get(src, 0), _RANKS[res])
                if uid not in reached or rank < reached[uid][0]:
                    reached[uid] = (rank, reached[uid][1] if uid in reached else props)
            for uid, (rank, props) in reached.items():
                if len(walk.found) >= self.cap:
                    break
                walk.seen.add(uid)
                walk.frontier.append(uid)
                walk.ranks[uid] = rank
                walk.found.append((level, props, _NAMES[rank]))

    def found(self) -> dict[str, list[tuple[int, Props, str]]]:
        """Per start: (level, props, resolution) of what its walk reached, nearest first."""
        return {key: walk.found for key, walk in self._walks.items()}


_NAMES = [r.value for r in sorted(CallResolution, key=lambda r: r.rank)]
_RANKS = {name: rank for rank, name in enumerate(_NAMES)}
