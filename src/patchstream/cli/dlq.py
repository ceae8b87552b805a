"""``patchstream dlq``: look at dead letters and replay them."""

from __future__ import annotations

import asyncio
import json

import click

from patchstream.config.settings import get_settings
from patchstream.streams.dlq import read_dead_letters, replay, select


@click.group()
def dlq() -> None:
    """Dead letters: what was rejected, why, and replay. An operator command: it reads the
    broker, so it runs beside the server."""


@dlq.command("list")
@click.option("--reason", "code", default=None, help="Only this reason code (e.g. not_json).")
@click.option("--stage", default=None, help="Only this stage (parse, graph-sink, vector-sink).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def list_letters(code: str | None, stage: str | None, as_json: bool) -> None:
    """Every dead letter, oldest first per partition."""
    letters = select(asyncio.run(read_dead_letters(get_settings().kafka)), code, stage)
    for letter in letters:
        if as_json:
            click.echo(json.dumps(letter.summary()))
        else:
            click.echo(f"{letter.dlq_partition}:{letter.dlq_offset}  {letter.stage:<12} "
                       f"{letter.code or '-':<22} {letter.reason[:120]}")  # fmt: skip
    if not as_json:
        click.echo(f"{len(letters)} dead letter(s)")


@dlq.command("replay")
@click.option("--reason", "code", default=None, help="Only this reason code.")
@click.option("--stage", default=None, help="Only this stage.")
def replay_letters(code: str | None, stage: str | None) -> None:
    """Publish the rejected messages again to the topic they came from."""
    kafka = get_settings().kafka
    letters = select(asyncio.run(read_dead_letters(kafka)), code, stage)
    sent = asyncio.run(replay(kafka, letters))
    click.echo(f"replayed {sent} of {len(letters)} dead letter(s)")
