"""``patchstream memory``: list, show and forget memories through the query service (the
key's tenant); ``purge --tenant`` is the operator's tool and works on the stores directly."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from patchstream.cli.query import call, query_client
from patchstream.config.settings import get_settings


@click.group()
def memory() -> None:
    """Governed long-term memory: what agents remember, and forgetting it."""


@memory.command("list")
@click.option("--owner", default=None, help="A repository, user or team.")
@click.option("--state", type=click.Choice(["active", "superseded", "quarantined"]), default=None)
@click.option("--limit", default=100, show_default=True)
def list_memories(owner: str | None, state: str | None, limit: int) -> None:
    """Memories of the key's tenant, newest first."""
    params: dict[str, Any] = {
        "limit": limit,
        **({"owner": owner} if owner else {}),
        **({"state": state} if state else {}),
    }
    found = call("GET", "/v1/memory", params=params)["memories"]
    if not found:
        click.echo("no memories" + (f" of {owner}" if owner else ""))
    for item in found:
        click.echo(
            f"{item['memory_id']}  {item['state']:<11} {item['memory_type']:<16} "
            f"{item['owner']}: {item['content'][:80]}"
        )


@memory.command("remember")
@click.argument("content")
@click.option("--about", "subject", required=True, metavar="KIND:ID",
              help="What it is about: symbol:<id>, file:<repo>::<path>, repo:<name>, "
              "person:<name> or topic:<name>.")  # fmt: skip
@click.option("--key", default=None, help="What about the subject: a fact of the same key "
              "supersedes the active one.")  # fmt: skip
@click.option("--type", "memory_type", default="fact", show_default=True,
              type=click.Choice(["fact", "preference", "summary", "inference",
                                 "user-claim"]))  # fmt: skip
@click.option("--scope", type=click.Choice(["project", "user", "team"]), default="project",
              show_default=True)  # fmt: skip
@click.option("--owner", default=None,
              help="The repository, user or team (default: the subject's repository).")  # fmt: skip
def remember(
    content: str, subject: str, key: str | None, memory_type: str, scope: str,
    owner: str | None,
) -> None:  # fmt: skip
    """Propose a memory as a person at the shell (source kind ``user``); the policy decides
    whether it is kept, quarantined or refused, and says why."""
    kind, _, subject_id = subject.partition(":")
    if not subject_id:
        raise click.BadParameter(
            "KIND:ID, for example file:myrepo::src/app.py", param_hint="--about"
        )
    if owner is None:
        if scope != "project":
            raise click.UsageError(f"a {scope} memory names its --owner")
        owner = subject_id.split("::")[0]
    body = {"content": content, "memory_type": memory_type, "scope": scope, "owner": owner,
            "subject": {"kind": kind, "id": subject_id}, "key": key,
            "source": {"kind": "user"}}  # fmt: skip
    with query_client() as client:  # the body of a refusal (422) is the answer here
        response = client.http.post("/v1/memory/proposals", json=body)
    if response.status_code not in (201, 422) or "decision" not in response.json():
        raise click.ClickException(f"{response.status_code}: {response.text}")
    answer = response.json()
    decision = answer["decision"]
    stored = answer["memory"]
    click.echo(f"{decision['outcome']}: {stored['memory_id'] if stored else 'not stored'} "
               f"({decision['reason']})")  # fmt: skip
    if stored is None:
        sys.exit(1)


@memory.command("approve")
@click.argument("memory_id")
@click.option("--by", default=None, help="Who approves (recorded in its reason).")
def approve(memory_id: str, by: str | None) -> None:
    """Let a quarantined memory become active: a person read it and vouches for it."""
    approved = call("POST", f"/v1/memory/{memory_id}/approve", json={"by": by})
    click.echo(f"{approved['state']}: {approved['memory_id']} ({approved['reason']})")


@memory.command("show")
@click.argument("memory_id")
@click.option("--resolve", is_flag=True, help="Follow supersedes to the active fact.")
def show(memory_id: str, resolve: bool) -> None:
    """One memory with its provenance, and whether the code it speaks of changed."""
    found = call("GET", f"/v1/memory/{memory_id}", params={"resolve": str(resolve).lower()})
    click.echo(json.dumps(found, indent=2))


@memory.command("forget")
@click.argument("memory_id")
def forget(memory_id: str) -> None:
    """Delete one memory (its record and its vector)."""
    call("DELETE", f"/v1/memory/{memory_id}")
    click.echo(f"forgot {memory_id}")


@memory.command("purge")
@click.option("--tenant", required=True, help="Whose memories (the operator names it).")
@click.option("--user", "owner", default=None, help="Only this user's (or team's) memories.")
@click.option("--project", default=None, help="Only this repository's project memories.")
@click.option("--source", default=None, help="Only those derived from this source ref.")
@click.option("--yes", is_flag=True, help="Do not ask.")
def purge(
    tenant: str, owner: str | None, project: str | None, source: str | None, yes: bool
) -> None:
    """Delete memories of a tenant (all, or by user, project or source) from both stores."""
    from patchstream.agent.memory_service import MemoryService
    from patchstream.stores.factory import open_graph_store, open_vector_store

    what = (
        ", ".join(
            f"{k} {v}" for k, v in (("user", owner), ("project", project), ("source", source)) if v
        )
        or "every memory"
    )
    if not yes:
        click.confirm(f"Delete {what} of tenant {tenant}?", abort=True)
    settings = get_settings()
    if settings.remote:
        raise click.UsageError("`memory purge` is an operator command: it opens the stores, "
                               "so it runs beside the server, not as its client")  # fmt: skip
    graph = open_graph_store(settings)
    vectors = open_vector_store(settings)
    service = MemoryService.open(settings, graph, vectors)
    try:
        deleted = service.purge(
            tenant, owner=owner or project, scope="project" if project else None, source_ref=source
        )
    finally:
        graph.close()
        vectors.close()
    click.echo(f"deleted {deleted} memories of tenant {tenant} ({what})")
