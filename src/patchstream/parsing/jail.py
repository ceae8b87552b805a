"""Sandboxed parsing, the worker's side: a jailed subprocess parses, the worker keeps the rest.

The worker holds the bus, the stores and their credentials; the jail (``jail_child``) holds
nothing but the grammars, and talks to the worker only through its pipes. One file's failure
costs one file: a jail that crashes, hangs past its wall-clock budget or runs out of memory is
replaced, the file is tried once more in the fresh jail, and if that fails too the file is
flagged ``parse_failed`` with the reason (its last good structure kept) and the stage moves on.
A Python error inside the jail is a bug the content reaches: it is dead-lettered, as it was
before the sandbox, with no retry.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import asdict
from pathlib import Path
from typing import Any

import patchstream
from patchstream import parsing
from patchstream.config.settings import ParsingSettings
from patchstream.errors import ParseError
from patchstream.parsing.filestate import (
    FileRef,
    FileStateBuilder,
    Fresh,
    StateBuilder,
    settle,
    shell_state,
)
from patchstream.parsing.jail_child import MAX_FRAME, MEMORY_EXIT, frame
from patchstream.schemas.events import EditHint
from patchstream.schemas.state import FileFlags, FileState
from patchstream.system.procfs import TICKS_PER_S, cpu_ticks

log = logging.getLogger(__name__)

_BOOT = ("import sys; sys.path.insert(0, sys.argv.pop(1)); "
         "from patchstream.parsing.jail_child import main; main()")  # fmt: skip
_START_S = 120.0  # a cold interpreter loading every grammar on a loaded 2-core machine
_LOOK_S = 0.5  # how often a silent jail's CPU time is looked at


class JailFailure(ParseError):  # noqa: N818 - a condition, named as the runtime reads it
    """The jail died, hung or ran out of memory on a file (the message says which).
    ``over_budget``: it spent the file's CPU budget without answering. CPU time is the same
    on any retry, so that file is flagged at once rather than tried again."""

    def __init__(self, message: str, over_budget: bool = False) -> None:
        super().__init__(message)
        self.over_budget = over_budget


class JailedParseError(ParseError):
    """The parser raised on this content inside the jail: a bug, dead-lettered, not retried."""


class FileFlagged(ParseError):  # noqa: N818
    """A file failed in two jails. ``state`` is what the file keeps (its last good structure,
    flagged ``parse_failed``); ``reason`` says what happened, for the DLQ and the logs."""

    def __init__(self, state: FileState, reason: str) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason


def spawn(settings: ParsingSettings, boot: str) -> subprocess.Popen[bytes]:
    """A fresh interpreter running ``boot`` (which locks itself down), with pipes for stdin
    and stdout, an empty environment and no inherited descriptors."""
    source_root = str(Path(patchstream.__file__).resolve().parent.parent)
    return subprocess.Popen(
        [sys.executable, "-I", "-B", "-c", boot, source_root, settings.model_dump_json()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        # No settings, keys or passwords; only the parent's choice of pure-Python parsing.
        env={} if parsing.COMPILED else {parsing.PURE_ENV: "1"},
        cwd="/",
        close_fds=True,
        start_new_session=True,  # a Ctrl-C meant for the worker is the worker's to handle
        bufsize=0,
    )


class ParseJail:
    """One jailed interpreter and its pipes."""

    def __init__(self, settings: ParsingSettings) -> None:
        self.settings = settings
        self.process = spawn(settings, _BOOT)
        self.files = 0
        self.cpu_s = 0.0
        self.cpu_at_send = 0
        ready = self._reply(time.monotonic() + _START_S, "start")
        self.layers: list[str] = ready.get("layers", [])
        self.compiled = bool(ready.get("compiled"))  # runs the mypyc-built modules

    @property
    def pid(self) -> int:
        return self.process.pid

    def build(
        self, target: FileRef, data: bytes, hint: EditHint | None, forget: list[str]
    ) -> Fresh:
        deadline = time.monotonic() + self.settings.sandbox_wall_s
        self.cpu_at_send = self._cpu_ticks()
        header = {"target": asdict(target), "forget": forget,
                  "hint": hint.model_dump() if hint else None}  # fmt: skip
        self._send(frame(json.dumps(header).encode()) + frame(data), deadline)
        reply = self._reply(deadline, "parse")
        body = self._frame(deadline, "parse")
        self.files += 1
        self.cpu_s = float(reply.get("cpu_s", 0.0))
        if not reply.get("ok"):
            raise JailedParseError(f"the parser failed on this content: {reply.get('error')}")
        try:
            lines = tuple((int(a), int(b)) for a, b in reply.get("error_lines", ()))
            state = FileState.model_validate_json(body)
        except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
            raise self._failure("parse", garbled=True) from None
        if (state.path, state.version, state.tenant) != (target.path, target.version,
                                                         target.tenant):  # fmt: skip
            raise self._failure("parse", garbled=True)
        return Fresh(state, lines)

    def worn(self) -> bool:
        limits = self.settings
        return self.files >= limits.sandbox_files_per_jail or self.cpu_s > limits.sandbox_cpu_s / 2

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.process.wait(10)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def _send(self, payload: bytes, deadline: float) -> None:
        assert self.process.stdin is not None
        fd, view = self.process.stdin.fileno(), memoryview(payload)
        while view:
            if not select.select([], [fd], [], max(0.0, deadline - time.monotonic()))[1]:
                raise self._failure("parse", hung=True)
            try:
                view = view[os.write(fd, view[: 1 << 20]) :]
            except BrokenPipeError:
                raise self._failure("parse") from None

    def _reply(self, deadline: float, during: str) -> dict[str, Any]:
        try:
            reply = json.loads(self._frame(deadline, during))
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise self._failure(during, garbled=True)
        if reply.get("memory"):
            raise self._failure(during, memory=True)
        return reply

    def _frame(self, deadline: float, during: str) -> bytes:
        length = int.from_bytes(self._read(4, deadline, during), "big")
        if length > MAX_FRAME:  # what a jail says is untrusted too
            raise self._failure(during, garbled=True)
        return self._read(length, deadline, during)

    def _read(self, size: int, deadline: float, during: str) -> bytes:
        assert self.process.stdout is not None
        fd, chunks, got = self.process.stdout.fileno(), [], 0
        while got < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._failure(during, hung=True)
            if not select.select([fd], [], [], min(remaining, _LOOK_S))[0]:
                if during == "parse" and self._over_cpu():
                    raise self._failure(during, spinning=True)
                continue
            chunk = os.read(fd, min(size - got, 1 << 20))
            if not chunk:
                raise self._failure(during)
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _cpu_ticks(self) -> int:
        """The jail's CPU time so far, in clock ticks (0 once it is gone)."""
        return cpu_ticks(self.process.pid) or 0

    def _cpu_budget_s(self) -> float:
        """What a file may cost: the parse and the extraction budgets (each cancels
        cooperatively first), and one second for the rest (decoding, chunking, the reply).
        A step tree-sitter cannot cancel (a query over a pathological tree) is stopped here:
        files behind it wait this long at most, not the wall-clock budget."""
        return 2 * self.settings.timeout_micros / 1_000_000 + 1

    def _over_cpu(self) -> bool:
        return self._cpu_ticks() - self.cpu_at_send > self._cpu_budget_s() * TICKS_PER_S

    def _failure(
        self,
        during: str,
        hung: bool = False,
        memory: bool = False,
        spinning: bool = False,
        garbled: bool = False,
    ) -> JailFailure:
        """What became of the jail, in words; the jail is killed either way."""
        self.close()  # killed and reaped: its exit status is read below
        if garbled:
            return JailFailure(f"{during}: the jail answered outside its contract (killed)")
        if spinning:
            return JailFailure(f"{during}: over the file's CPU budget of "
                               f"{self._cpu_budget_s():.1f}s without answering (killed)",
                               over_budget=True)  # fmt: skip
        if hung:
            budget = _START_S if during == "start" else self.settings.sandbox_wall_s
            return JailFailure(f"{during}: no answer within {budget:.0f}s (killed)")
        code = self.process.returncode
        if memory or code == MEMORY_EXIT:
            return JailFailure(f"{during}: out of memory (over "
                               f"{self.settings.sandbox_memory_mb} MiB of headroom)")  # fmt: skip
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return JailFailure(f"{during}: killed by {signal.Signals(-code).name}")
        return JailFailure(f"{during}: the jail exited with code {code}")


class JailedStateBuilder:
    """File states built in a jail, one jail per worker (the parse stage is sequential in a
    worker; workers scale out by partition). A fresh jail replaces one after a failure, after
    ``sandbox_files_per_jail`` files, or once it has used half its CPU seconds."""

    def __init__(self, settings: ParsingSettings) -> None:
        self.settings = settings
        self.lock = threading.Lock()
        self.pending_forget: deque[str] = deque(maxlen=4096)
        self.jail: ParseJail | None = None
        self.started = 0

    def start(self) -> list[str]:
        """Starts the first jail now (a worker whose jail cannot start should not start
        either); returns the layers in force."""
        with self.lock:
            return self._jail().layers

    def forget(self, key: str) -> None:
        self.pending_forget.append(key)

    def build(
        self,
        target: FileRef,
        data: bytes,
        previous: FileState | None = None,
        hint: EditHint | None = None,
    ) -> FileState:
        reasons = []
        with self.lock:
            for attempt in range(2):
                forget = list(self.pending_forget)
                self.pending_forget.clear()
                try:
                    jail = self._jail()
                    fresh = jail.build(target, data, hint if attempt == 0 else None, forget)
                except JailFailure as exc:
                    reasons.append(str(exc))
                    self._discard()
                    if exc.over_budget:
                        return self._flagged(target, data, previous, reasons, "parse_timeout")
                    continue
                if jail.worn():
                    self._discard()
                return settle(fresh, previous)
        return self._flagged(target, data, previous, reasons, "parse_failed")

    def _flagged(
        self, target: FileRef, data: bytes, previous: FileState | None, reasons: list[str],
        flag: str,
    ) -> FileState:  # fmt: skip
        """The file keeps its last good structure, flagged; the reason goes to the DLQ."""
        reason = "; then in a fresh jail: ".join(reasons)
        log.warning("event=%s path=%r reason=%r", flag, target.path, reason)
        flagged = Fresh(shell_state(target, data, FileFlags.model_validate({flag: True})))
        raise FileFlagged(settle(flagged, previous), reason)

    def quiet(self) -> bool:
        """The stage has gone quiet: a jail grown by a burst (``sandbox_refresh_files`` files
        or more) is replaced by a fresh one, started before the swap so that a file arriving
        meanwhile waits for no start. True when replaced; a fresh jail that cannot start
        leaves the old one in place."""
        with self.lock:
            grown = self.jail
            if grown is None or grown.files < self.settings.sandbox_refresh_files:
                return False
        try:
            fresh = ParseJail(self.settings)
        except Exception as exc:  # the old jail still works: keep it, say why
            log.warning("event=parse_jail_refresh_failed error=%s: %s", type(exc).__name__, exc)
            return False
        with self.lock:
            if self.jail is not grown:  # replaced meanwhile (a failure, a worn jail)
                fresh.close()
                return False
            self.jail = fresh
            self.started += 1
        grown.close()
        log.info("event=parse_jail_refreshed files=%d", grown.files)
        return True

    def close(self) -> None:
        with self.lock:
            self._discard()

    def _jail(self) -> ParseJail:
        if self.jail is None:
            self.jail = ParseJail(self.settings)
            self.started += 1
            if self.started == 1:
                log.info("event=parse_jail_started layers=%s", ",".join(self.jail.layers))
        return self.jail

    def _discard(self) -> None:
        if self.jail is not None:
            self.jail.close()
            self.jail = None


def state_builder(settings: ParsingSettings) -> StateBuilder:
    """The parse stage's builder: jailed unless ``sandbox`` is off. The first jail starts
    here, so that a worker whose jail cannot start fails at its start, with the reason."""
    if not settings.sandbox:
        return FileStateBuilder(settings)
    builder = JailedStateBuilder(settings)
    builder.start()
    return builder
