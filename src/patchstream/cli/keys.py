"""``patchstream keys create|list|revoke``: the API keys of a team server, in its data dir.

An operator command: it runs beside the server (it writes ``<data dir>/keys.sqlite``), not
as a client of it. The gateway and the query service read the file within a second: no
restart."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from patchstream.cli.errors import NOT_FOUND_EXIT
from patchstream.config.settings import get_settings
from patchstream.http.key_store import ROLES, KeyStore, key_store_path


def _store() -> KeyStore:
    return KeyStore(key_store_path(Path(get_settings().embedded.data_dir)))


@click.group()
def keys() -> None:
    """API keys for the gateway and the query service (stored hashed, shown once)."""


@keys.command("create")
@click.option("--tenant", required=True, help="The tenant the key reads and writes.")
@click.option("--name", required=True, help="Who holds it (a person, an agent, a CI job).")
@click.option("--role", type=click.Choice(ROLES), default="person", show_default=True,
              help="'agent': may not propose memories as the user.")  # fmt: skip
def create(tenant: str, name: str, role: str) -> None:
    """Make a key and print it once: it is stored hashed and cannot be shown again."""
    key = _store().create(tenant, name, role)
    click.echo(key)
    click.echo(f"key {name!r} for tenant {tenant!r} ({role}); store it now: it is not shown "
               "again. Clients set PATCHSTREAM_API_KEY to it.", err=True)  # fmt: skip


@keys.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.option("--all", "show_all", is_flag=True, help="Revoked keys too.")
def list_keys(as_json: bool, show_all: bool) -> None:
    """Every key: name, tenant, role, when made and last used (never the key)."""
    records = [r for r in _store().records() if show_all or r.revoked is None]
    if as_json:
        click.echo(json.dumps([r.__dict__ for r in records]))
        return
    if not records:
        click.echo("no keys; make one with `patchstream keys create --tenant T --name N`")
        return
    click.echo(f"{'name':<24} {'tenant':<16} {'role':<7} {'created':<17} {'last used':<17} "
               "fingerprint")  # fmt: skip
    for r in records:
        state = " (revoked)" if r.revoked is not None else ""
        click.echo(f"{r.name:<24} {r.tenant:<16} {r.role:<7} {_when(r.created):<17} "
                   f"{_when(r.last_used):<17} {r.fingerprint}{state}")  # fmt: skip


@keys.command("revoke")
@click.argument("name")
def revoke(name: str) -> None:
    """Revoke the key called NAME: both services refuse it within a second."""
    if not _store().revoke(name):
        click.echo(f"Error: no active key named {name!r} (see `patchstream keys list`)", err=True)
        raise SystemExit(NOT_FOUND_EXIT)
    click.echo(f"revoked {name!r}")


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if at else "never"
