"""How the CLI fails: one line that says what was wrong and what to do, never a traceback.

Refused input (a contract error, a field that failed validation) exits 2; a service that
does not answer (the broker, a store, the gateway or the query service) exits 1 and names
the address and the command that starts it; what does not exist (a repository, a ref, a
workspace, a symbol) exits 3; a key that is missing, not recognised or not allowed exits 4.
"""

from __future__ import annotations

import os
import select
import sys
from typing import Any

import click
from pydantic import ValidationError

from patchstream.errors import PatchstreamError, StoreUnavailable

_NOT_UP = "is `patchstream up` running, or PATCHSTREAM_* pointing at your deployment?"


NOT_FOUND_EXIT = 3
NOT_ALLOWED_EXIT = 4


class AnswerError(click.ClickException):
    """A service's error answer, as one line, with the exit code of its cause."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.exit_code = answer_exit_code(status)


def answer_exit_code(status: int | None) -> int:
    if status in (401, 403):
        return NOT_ALLOWED_EXIT
    if status == 404:
        return NOT_FOUND_EXIT
    if status is not None and 400 <= status < 500 and status not in (408, 409, 429):
        return 2  # the request was refused: what was sent is wrong (a conflict is state)
    return 1  # no answer, or the service failed: try again


def describe(exc: BaseException) -> tuple[str, int] | None:
    """(message, exit code) for a failure a user can act on; None for a bug."""
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or 'value'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        return f"refused: {problems}", 2
    if isinstance(exc, StoreUnavailable):
        return f"{exc}; {_NOT_UP}", 1
    if isinstance(exc, PatchstreamError):
        return str(exc), 2
    name = type(exc).__module__.split(".")[0]
    if name == "aiokafka" or type(exc).__name__ == "KafkaConnectionError":
        return f"the broker did not answer ({exc}); {_NOT_UP}", 1
    if name == "httpx":
        request = getattr(exc, "request", None)
        where = f" at {request.url}" if request is not None else ""
        return f"no answer{where} ({type(exc).__name__}); {_NOT_UP}", 1
    if isinstance(exc, ConnectionError):
        return f"{exc}; {_NOT_UP}", 1
    return None


def stdout_reader_gone() -> bool:
    """Whether whoever read this process's output stopped (``| head``): a pipe's write end
    polls as an error once every reader has closed it."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def quiet_broken_stdout() -> None:
    """Exit as a program killed by SIGPIPE would, without the interpreter's complaint when
    it flushes stdout at exit (``| head`` is not an error to report)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(141)


class FriendlyGroup(click.Group):
    """A click group whose commands fail with :func:`describe`'s line instead of a trace."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            if isinstance(exc, BrokenPipeError) and stdout_reader_gone():  # not a socket's
                quiet_broken_stdout()
            described = describe(exc)
            if described is None:
                raise
            message, code = described
            click.echo(f"error: {message}", err=True)
            sys.exit(code)
