"""The parse stage's logic, free of Kafka: one patch event + the file's previous state ->
deltas to publish, follow-up events and the file's new state."""

from __future__ import annotations

from dataclasses import dataclass, field

from patchstream.errors import ContractError
from patchstream.parsing.delta import delete_delta, diff_states
from patchstream.parsing.filestate import FileRef, StateBuilder, withheld_state
from patchstream.parsing.hashing import hash_bytes
from patchstream.parsing.indexable import judge
from patchstream.parsing.jail import FileFlagged
from patchstream.schemas.events import EditHint, PatchEvent
from patchstream.schemas.state import FileDelta, FileState
from patchstream.streams.blobs import BlobReader


@dataclass
class ParseOutput:
    """``state`` is what the table keeps for the file afterwards (None: forget it)."""

    deltas: list[FileDelta] = field(default_factory=list)
    events: list[PatchEvent] = field(default_factory=list)
    state: FileState | None = None
    stale: bool = False
    flagged: str | None = None  # why the file was skipped (kept its last good state)
    not_indexed: str | None = None  # why the index does not hold the file (a scan skips it)
    withheld: str | None = None  # why the index holds only the file's name (too large ...)


class ParseStage:
    def __init__(
        self, builder: StateBuilder, blobs: BlobReader, max_file_bytes: int = 2 * 1024 * 1024
    ) -> None:
        self.builder = builder
        self.blobs = blobs
        self.max_file_bytes = max_file_bytes

    def content_of(self, event: PatchEvent) -> bytes:
        if event.content is not None:
            data = event.content.encode("utf-8")
        elif event.blob is not None:
            data = self.blobs.read(event.tenant, event.repo, event.blob.sha)
        else:
            raise ContractError(f"op={event.op} event carries no content", code="no_content")
        if event.content_hash is not None and event.content_hash != hash_bytes(data):
            raise ContractError(
                f"content_hash {event.content_hash} does not match the content "
                f"(xxh3-128 {hash_bytes(data)})",
                code="content_hash_mismatch",
            )
        return data

    def handle(self, event: PatchEvent, previous: FileState | None) -> ParseOutput:
        if previous is not None and event.version <= previous.version:
            return ParseOutput(state=previous, stale=True)
        if event.op == "delete":
            return self._removed(event, previous)
        if event.withheld is not None:
            return self._withheld(event, previous, event.withheld.reason, event.withheld.size)
        data = self.content_of(event)
        skip = judge(event.path, data, self.max_file_bytes)
        if skip is not None and skip.withheld:
            return self._withheld(event, previous, skip.reason, len(data))
        if skip is not None:
            return self._not_indexed(event, previous, skip.reason)
        state, flagged = self._build(event, data, previous, event.edit)
        output = ParseOutput(deltas=[diff_states(previous, state, event)], state=state,
                             flagged=flagged)  # fmt: skip
        self._follow_ups(event, output)
        return output

    def _removed(self, event: PatchEvent, previous: FileState | None) -> ParseOutput:
        self.builder.forget(event.key)
        delta = delete_delta(
            previous,
            tenant=event.tenant,
            repo=event.repo,
            ref=event.ref,
            path=event.path,
            version=event.version,
            workspace=event.workspace,
            event=event,
        )
        return ParseOutput(deltas=[delta], state=None)

    def _not_indexed(
        self, event: PatchEvent, previous: FileState | None, reason: str
    ) -> ParseOutput:
        """As a clean scan of the tree would: the file removed, if it was held."""
        output = self._removed(event, previous)
        output.not_indexed = reason
        self._follow_ups(event, output)
        return output

    def _withheld(
        self, event: PatchEvent, previous: FileState | None, reason: str, size: int
    ) -> ParseOutput:
        """The file's name, flagged with the reason; what it held before goes."""
        self.builder.forget(event.key)
        state = withheld_state(_target(event), reason, size)
        output = ParseOutput(deltas=[diff_states(previous, state, event)], state=state,
                             withheld=reason)  # fmt: skip
        self._follow_ups(event, output)
        return output

    def _build(
        self, event: PatchEvent, data: bytes, previous: FileState | None, hint: EditHint | None
    ) -> tuple[FileState, str | None]:
        try:
            return self.builder.build(_target(event), data, previous, hint), None
        except FileFlagged as flagged:  # skipped with its reason; the stage moves on
            return flagged.state, flagged.reason

    def resend(self, event: PatchEvent, previous: FileState) -> ParseOutput:
        """A redelivery at the version already parsed: the complete state again (base:
        nothing), for a tier that lost the first delta. The worker's own state is reused
        when the content matches (it has the chunks; the graph's view of a file does not)."""
        if event.op == "delete" or event.withheld is not None:
            return self.handle(event, None)
        data = self.content_of(event)
        skip = judge(event.path, data, self.max_file_bytes)
        if skip is not None and skip.withheld:  # the content is read once, not again
            return self._withheld(event, None, skip.reason, len(data))
        if skip is not None:
            return self._not_indexed(event, None, skip.reason)
        state, flagged = previous, None
        if not previous.chunks or hash_bytes(data) != previous.content_hash:
            state, flagged = self._build(event, data, previous, None)
        output = ParseOutput(deltas=[diff_states(None, state, event)], state=state,
                             flagged=flagged)  # fmt: skip
        self._follow_ups(event, output)
        return output

    def _follow_ups(self, event: PatchEvent, output: ParseOutput) -> None:
        if event.op == "rename" and event.old_path is not None:
            # The old path lives on its own partition (and table shard): send it a delete.
            output.events.append(
                event.model_copy(
                    update={
                        "event_id": f"{event.event_id}:from",
                        "op": "delete",
                        "path": event.old_path,
                        "old_path": None,
                        "content": None,
                        "blob": None,
                        "content_hash": None,
                        "edit": None,
                    }
                )
            )


def _target(event: PatchEvent) -> FileRef:
    return FileRef(
        tenant=event.tenant,
        repo=event.repo,
        ref=event.ref,
        path=event.path,
        version=event.version,
        workspace=event.workspace,
    )
