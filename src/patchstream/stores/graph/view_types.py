"""Row shapes the view reads pass around."""

from __future__ import annotations

from typing import Any

Props = dict[str, Any]  # a node's properties
# (from uid, to uid, to props, the hop's resolution: ``CallResolution`` values; "exact" for
# edges that are not calls)
Pair = tuple[str, str, Props, str]
