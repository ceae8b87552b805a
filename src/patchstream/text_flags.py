"""Text an agent should be warned about: invisible characters and bidirectional controls,
the usual carriers of instructions a human reviewer does not see. Context blocks and memory
proposals both check for them."""

from __future__ import annotations

import re

_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff]")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def unicode_flags(text: str) -> list[str]:
    flags = []
    if _INVISIBLE.search(text):
        flags.append("invisible_unicode")
    if _BIDI.search(text):
        flags.append("bidi_control")
    return flags
