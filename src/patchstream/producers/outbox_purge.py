"""Content the index withholds, purged from an outbox that kept it.

Before the one file rule (``parsing.indexable``), ``patchstream index`` published private
keys, oversized and binary files with their content: the outbox (the embedded stack's log of
record) kept their bytes as those files' latest events, and would replay them into the stores
after every restart. At the first start under a newer rule, every entry whose content the
rule now withholds is rewritten as the withheld event a producer would send today (the name,
the reason, the size; a newer version, so the stores replace what they hold), and the
database is rebuilt so that no free page or WAL frame keeps the old bytes. The replay that
follows every start then publishes the rewritten entries.

What this does not reach: the stores' own files until they compact (a FalkorDB log rewrite,
Milvus Lite segments) and git objects a mirror fetched; ``docs/concepts/indexing.md`` says so.
"""

from __future__ import annotations

import logging
import time
import uuid

from patchstream.errors import ContractError
from patchstream.parsing.indexable import judge
from patchstream.producers.outbox import Outbox
from patchstream.schemas.events import PatchEvent, WithheldContent
from patchstream.streams.codec import decode_event, encode

log = logging.getLogger("patchstream.outbox")
RULE_VERSION = "1"  # raise when parsing.indexable withholds more than it did
_RULE_KEY = "withheld_rule"


def withheld_version_of(event: PatchEvent, max_bytes: int) -> PatchEvent | None:
    """The event a producer would send for this file under today's rule, when that rule
    withholds its content (None: the event may stay as it is)."""
    if event.content is None:
        return None
    data = event.content.encode("utf-8")
    skip = judge(event.path, data, max_bytes)
    if skip is None or not skip.withheld:
        return None
    return PatchEvent.model_validate({
        **event.model_dump(exclude={"content", "content_hash", "edit", "event_id", "version"}),
        "withheld": WithheldContent.model_validate({"reason": skip.reason, "size": len(data)}),
        "event_id": uuid.uuid4().hex, "version": max(time.time_ns(), event.version + 1),
    })  # fmt: skip


def purge_withheld(outbox: Outbox, max_bytes: int) -> list[str]:
    """Rewrite the entries whose content the rule withholds, once per rule version; the
    paths rewritten (and said in the log, never their content)."""
    if outbox.meta(_RULE_KEY) == RULE_VERSION:
        return []
    rewritten: list[str] = []
    after = 0
    while rows := outbox.values(after_id=after):
        after = rows[-1][0]
        for entry_id, value in rows:
            try:
                event = decode_event(value)
            except ContractError:  # an entry of another schema: the replay dead-letters it
                continue
            replacement = withheld_version_of(event, max_bytes)
            if replacement is not None:
                outbox.rewrite(entry_id, encode(replacement), replacement.version)
                rewritten.append(event.path)
    if rewritten:
        outbox.scrub()
        log.warning("event=outbox_purged entries=%d reason=content_now_withheld first=%r",
                    len(rewritten), rewritten[0])  # fmt: skip
    outbox.set_meta(_RULE_KEY, RULE_VERSION)
    return rewritten
