"""Row shapes the view reads pass around."""

from __future__ import annotations

from typing import Any

Props = dict[str, Any]  # a node's properties
Pair = tuple[str, str, Props]  # (from uid, to uid, to props)
