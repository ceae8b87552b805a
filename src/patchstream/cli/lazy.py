"""A command group that imports a subcommand's module only when that subcommand runs.

Every process of a stack (a parse worker, a sink, the gateway) and every CLI call starts
through ``patchstream.cli.main``. Importing every command's module there cost each of them
~1.5 s of CPU (the query service, the Milvus client, the MCP server) that a parse worker or
``patchstream emit`` never uses.
"""

from __future__ import annotations

import importlib

import click

from patchstream.cli.errors import FriendlyGroup


class LazyGroup(FriendlyGroup):
    """``lazy`` maps a command's name to ``module:attribute``; it is imported on first use."""

    def __init__(self, *args: object, lazy: dict[str, str] | None = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, _, attribute = self.lazy[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)
