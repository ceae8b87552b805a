"""A project's existing issues and pull/merge requests, from a JSON Lines export in GitHub's
or GitLab's REST shape (``patchstream import discussions``): webhooks see only what happens
after they are installed.

Each line is one REST object, recognised by its fields:

- GitHub: an issue or a PR (``number``; a PR has ``pull_request``, ``head`` or
  ``merged_at``), an issue comment (``issue_url``), a review (``pull_request_url`` and
  ``submitted_at``) or a review comment (``pull_request_url`` and ``path``/``diff_hunk``).
- GitLab: an issue or an MR (``iid``; an MR has ``source_branch``), a note
  (``noteable_type`` and ``noteable_iid``).

A line that is not JSON, too deep, or not a record of these is reported with its number and
reason and the rest are still read: one bad line loses nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from patchstream.errors import ContractError
from patchstream.http.security import safe_json
from patchstream.producers.discussions import (
    GITLAB_NOTEABLE,
    Page,
    github_note,
    github_thread,
    gitlab_note,
    gitlab_thread,
    number_from_url,
)

MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_ERRORS_KEPT = 100


@dataclass
class ImportPlan:
    pages: list[Page] = field(default_factory=list)
    pulls: set[int] = field(default_factory=set)  # GitHub PR numbers (their comments' kind)
    threads: int = 0
    notes: int = 0
    skipped: int = 0  # records of no discussion (a commit note, a system note)
    errors: list[tuple[int, str]] = field(default_factory=list)  # (line, reason), first ones
    failed: int = 0


def read_export(lines: Iterable[str | bytes], pulls: Iterable[int] = ()) -> ImportPlan:
    """The pages of an export, threads first (a comment's kind may depend on its thread).
    ``pulls``: numbers known to be pull requests beyond the PRs the lines hold (a part of a
    larger export, sent to the gateway in batches)."""
    plan = ImportPlan()
    records: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            if len(line) > MAX_LINE_BYTES:
                raise ContractError(f"line is over {MAX_LINE_BYTES} bytes", code="too_large")
            record = safe_json(line)
            if not isinstance(record, dict):
                raise ContractError("not a JSON object", code="not_object")
        except ContractError as exc:
            _fail(plan, number, str(exc))
            continue
        records.append((number, record))
    plan.pulls = {
        r["number"]
        for _, r in records
        if _is_github_thread(r) and _is_pull(r) and isinstance(r["number"], int)
    }
    plan.pulls.update(pulls)
    ordered = sorted(records, key=lambda item: 0 if _is_thread(item[1]) else 1)
    for number, record in ordered:
        try:
            page = _page(record, plan.pulls)
        except ContractError as exc:
            _fail(plan, number, str(exc))
            continue
        if page is None:
            plan.skipped += 1
            continue
        plan.pages.append(page)
        if "/" in page.path.removeprefix("_discussions/"):
            plan.notes += 1
        else:
            plan.threads += 1
    return plan


def _fail(plan: ImportPlan, line: int, reason: str) -> None:
    plan.failed += 1
    if len(plan.errors) < MAX_ERRORS_KEPT:
        plan.errors.append((line, reason[:300]))


def _is_github_thread(record: dict[str, Any]) -> bool:
    return "number" in record and "iid" not in record


def _is_pull(record: dict[str, Any]) -> bool:
    return any(key in record for key in ("pull_request", "head", "merged_at"))


def _is_thread(record: dict[str, Any]) -> bool:
    return _is_github_thread(record) or ("iid" in record and "noteable_type" not in record)


def _page(record: dict[str, Any], pulls: set[int]) -> Page | None:
    if _is_github_thread(record):
        return github_thread(record, pull=_is_pull(record))
    if "iid" in record and "noteable_type" not in record:
        return gitlab_thread(record, merge_request="source_branch" in record)
    if isinstance(record.get("noteable_type"), str):
        kind = GITLAB_NOTEABLE.get(record["noteable_type"])
        if kind is None or record.get("system") is True:
            return None
        iid = record.get("noteable_iid")
        if not isinstance(iid, int) or isinstance(iid, bool) or not 1 <= iid < 1_000_000_000:
            raise ContractError("noteable_iid is missing or out of range", code="bad_discussion")
        return gitlab_note(record, kind, iid)
    if isinstance(record.get("issue_url"), str):
        number = number_from_url(record["issue_url"])
        return github_note(record, "pr" if number in pulls else "issue", number, "comment")
    if isinstance(record.get("pull_request_url"), str):
        number = number_from_url(record["pull_request_url"])
        review_comment = "path" in record or "diff_hunk" in record
        return github_note(record, "pr", number,
                           "review-comment" if review_comment else "review")  # fmt: skip
    raise ContractError("not an issue, pull/merge request, review or comment in GitHub's or "
                        "GitLab's REST shape", code="bad_discussion")  # fmt: skip
