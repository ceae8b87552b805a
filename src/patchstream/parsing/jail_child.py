"""The jailed side of sandboxed parsing: warm up, lock down, then parse what the pipe brings.

A jail is a fresh interpreter started with an empty environment. It loads everything parsing
needs (every grammar, the token counter, the models' serializers) while it is still trusted,
then, before it reads a single byte of input, takes away what a compromised parser could use:

- rlimits: address space (its warm size plus a headroom), CPU seconds, file size 0, a few open
  files, no core dumps;
- a user and a network namespace (``unshare``): no interface but a down loopback, and no
  capabilities over anything outside;
- Landlock: no filesystem access at all, no TCP bind or connect, no abstract unix sockets and
  no signals to processes outside the jail;
- seccomp: no socket of any kind (a pathname unix socket is beyond Landlock before ABI 11).

Each layer that the kernel refuses is left out and reported in the ready message; the parent
logs what a jail has. Frames on stdin and stdout are a 4-byte big-endian length and a body:
a JSON header and the file's bytes in; a JSON header and the file's state (its JSON, the
project's own encoding of it) out.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import resource
import struct
import sys
from pathlib import Path
from types import ModuleType
from typing import BinaryIO

from patchstream import parsing
from patchstream.config.settings import ParsingSettings
from patchstream.parsing.filestate import FileRef, FileStateBuilder
from patchstream.parsing.languages import LANGUAGES
from patchstream.schemas.events import EditHint

landlockpy: ModuleType | None
try:  # imported while files can still be read
    import landlockpy
except ImportError:  # pragma: no cover - a dependency; its absence is reported, not fatal
    landlockpy = None

_LENGTH = struct.Struct(">I")
MAX_FRAME = 64 << 20
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MEMORY_EXIT = 3  # the jail ran out of its address space (Python could still say so)


def frame(body: bytes) -> bytes:
    return _LENGTH.pack(len(body)) + body


def read_frame(stream: BinaryIO) -> bytes | None:
    """One frame's body, or None at the end of the stream."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(head)
    if length > MAX_FRAME:
        raise ValueError(f"frame of {length} bytes is over {MAX_FRAME}")
    body = stream.read(length)
    return body if len(body) == length else None


_SAMPLES = {
    "python": "import os\nclass A(B):\n    def f(self, x: int) -> int:\n        return g(x)\n",
    "javascript": "import x from 'y';\nclass A extends B { f(x) { return g(x); } }\n",
    "typescript": "interface I { f(): number }\nclass A implements I { f() { return 1 } }\n",
    "tsx": "const A = () => <div>{g(1)}</div>;\n",
    "go": 'package p\nimport "fmt"\ntype A struct{}\nfunc (a A) F() { fmt.Println(1) }\n',
    "java": "package p;\nimport q.R;\nclass A extends B { int f() { return g(); } }\n",
    "rust": "use a::b;\nstruct A;\nimpl A { fn f(&self) -> i32 { g() } }\n",
    "c": '#include "a.h"\n#define M(x) g(x)\nstruct s { int a; };\nint f(int n) { return M(n); }\n',
    "cpp": '#include "a.h"\nnamespace n {\nclass A : public B { int f(); };\n'
    "int A::f() { g(); this->h(); return x.m(); }\n}\n",
    "csharp": "using N;\nnamespace P {\nclass A : B {\n"
    "int F(C c) { var d = new D(); return c.G() + H(); }\n}\n}\n",
    "kotlin": "package p\n\nimport q.R\n\nclass A(val r: R) : B() {\n"
    "    fun f(c: C): Int = c.g() + h()\n}\n",
    "scala": "package p\n\nimport q.R\n\nclass A(r: R) extends B(1) {\n"
    "  def f(c: C): Int = c.g() + h() + new D().e()\n}\n",
    "php": "<?php\nnamespace P;\nuse Q\\R;\nclass A extends B {\n  private R $r;\n"
    "  /** @param C $c */\n  public function f($c) { $d = new D(); return $c->g() + h()"
    " + $this->r->m(); }\n}\n",
    "swift": "import Q\n\nprotocol S { func g() -> Int }\nstruct A: S {\n  let r: R\n"
    "  func g() -> Int { h() + r.m() + D().e() }\n}\n"
    "extension A { func f<T: S>(c: T) { c.g() } }\n",
    "ruby": "require_relative 'b'\nmodule P\n  class A < B\n    include M\n"
    "    def f(c, d = 1)\n      @e = E.new\n      c.g + h + @e.m + super\n    end\n  end\nend\n",
}
_EXTENSION = {name: spec.extensions[0] for name, spec in LANGUAGES.items()}


def warm_up(builder: FileStateBuilder) -> None:
    """Every grammar, query, extractor and serializer used once, so that nothing is loaded
    from disk after the lock-down (it could not be)."""
    # Every language: one without a sample would load its query from disk on its first file,
    # after the lock-down, and fail there (a KeyError here fails the start instead).
    samples = [(f"warm{_EXTENSION[name]}", _SAMPLES[name]) for name in LANGUAGES]
    samples += [("warm.md", "# Title\n\nprose\n"), ("broken.py", "def f(:\n"),
                ("warm.txt", "plain text, no grammar\n"),
                ("latin.py", "x = '\xe9'\n"), ("bin.py", "\x00")]  # fmt: skip
    for path, text in samples:
        data = text.encode("latin-1" if path == "latin.py" else "utf-8")
        target = FileRef("warm", "warm", "main", path, 1)
        fresh = builder.build_fresh(target, data, None)
        fresh.state.model_dump_json()
        builder.forget(target.key)
    builder.build_fresh(FileRef("warm", "warm", "main", "w.py", 1), b"x = 1\n",
                        EditHint(start_byte=0, old_end_byte=0, new_end_byte=1))  # fmt: skip


def lock_down(memory_mb: int, cpu_s: int) -> list[str]:
    """Takes away what a compromised parser could use; returns the layers in force."""
    layers: list[str] = []
    warm = _address_space_bytes()
    limits = {
        resource.RLIMIT_AS: warm + memory_mb * (1 << 20),
        resource.RLIMIT_CPU: cpu_s,
        resource.RLIMIT_FSIZE: 0,
        resource.RLIMIT_NOFILE: 16,
        resource.RLIMIT_CORE: 0,
    }
    for limit, value in limits.items():
        resource.setrlimit(limit, (value, value))
    layers.append("rlimits")
    libc = ctypes.CDLL(None, use_errno=True)
    # A user namespace first: even a root worker's jail then holds no capability outside it
    # (it cannot raise its rlimits back); as root a network namespace alone is the fallback.
    for flags, name in ((CLONE_NEWUSER | CLONE_NEWNET, "userns+netns"), (CLONE_NEWNET, "netns")):
        if libc.unshare(flags) == 0:
            layers.append(name)
            break
    layers += _landlock()  # sets no_new_privs, which the seccomp filter needs
    if _no_sockets():
        layers.append("seccomp-no-sockets")
    return layers


# (audit arch, socket, connect, socketpair, bind, listen): Landlock below ABI 11 leaves
# connecting to a pathname unix socket (a docker.sock, say) open, and a parser needs no socket.
_SOCKET_CALLS = {
    "x86_64": (0xC000003E, (41, 42, 53, 49, 50)),
    "aarch64": (0xC00000B7, (198, 203, 199, 200, 201)),
}


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint)]  # fmt: skip


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def _no_sockets() -> bool:
    """A seccomp filter: every socket call fails with EPERM; a foreign syscall ABI (x32, a
    32-bit entry) kills the jail. Hand-built BPF, since no maintained binding is at hand."""
    known = _SOCKET_CALLS.get(platform.machine())
    if known is None:
        return False
    arch, calls = known
    load, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, deny, kill = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x80000000
    program = [(load, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, kill), (load, 0, 0, 0),
               (jge, 0, 1, 0x40000000), (ret, 0, 0, kill)]  # fmt: skip
    program += [(jeq, len(calls) - i, 0, nr) for i, nr in enumerate(calls)]
    program += [(ret, 0, 0, allow), (ret, 0, 0, deny)]
    filters = (_Filter * len(program))(*(_Filter(*row) for row in program))
    fprog = _Program(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS (Landlock may have set it already)
    return bool(libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0)  # SECCOMP_MODE_FILTER


def _landlock() -> list[str]:
    if landlockpy is None:
        return []
    abi = landlockpy.abi_version()
    if abi <= 0:
        return []
    scope = landlockpy.Scope.ABSTRACT_UNIX_SOCKET | landlockpy.Scope.SIGNAL
    with landlockpy.Ruleset(scoped=scope) as ruleset:  # every right handled, none granted
        ruleset.restrict()
        layers = [f"landlock-abi{abi}-fs"]
        if ruleset.handled_net:
            layers.append("landlock-net")
        if ruleset.scoped:
            layers.append("landlock-scope")
        return layers


def _address_space_bytes() -> int:
    pages = Path("/proc/self/statm").read_text().split()[0]
    return int(pages) * os.sysconf("SC_PAGE_SIZE")


def serve(builder: FileStateBuilder, inp: BinaryIO, out: BinaryIO) -> None:
    while True:
        header = read_frame(inp)
        data = read_frame(inp) if header is not None else None
        if header is None or data is None:
            return  # the parent closed the pipe: the jail ends with it
        request = json.loads(header)
        for key in request.get("forget", []):
            builder.forget(key)
        hint = request.get("hint")
        try:
            fresh = builder.build_fresh(
                FileRef(**request["target"]), data, EditHint(**hint) if hint else None
            )
            body = fresh.state.model_dump_json().encode("utf-8")
            reply = {"ok": True, "error_lines": fresh.error_lines, "cpu_s": _cpu_s()}
        except Exception as exc:  # a bug this content reaches: the parent dead-letters it
            if out_of_memory(exc):
                out.write(frame(json.dumps({"ok": False, "memory": True}).encode()))
                out.flush()
                os._exit(MEMORY_EXIT)  # a heap that ran out is not reused
            body = b""
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
        out.write(frame(json.dumps(reply).encode()) + frame(body))
        out.flush()


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is the heap running out: a MemoryError, or what one became on its way
    out of a C call (``SystemError: <built-in function thread_time> returned a result with an
    exception set``, its cause the MemoryError), seen once in fifty suite runs."""
    seen: BaseException | None = exc
    for _ in range(8):  # a chain is short; a cycle is not followed
        if seen is None:
            return False
        if isinstance(seen, MemoryError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    settings = ParsingSettings.model_validate_json(sys.argv[1])
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    builder = FileStateBuilder(settings)
    warm_up(builder)
    layers = lock_down(settings.sandbox_memory_mb, settings.sandbox_cpu_s)
    ready = {"ready": True, "layers": layers, "compiled": parsing.COMPILED}
    out.write(frame(json.dumps(ready).encode()))
    out.flush()
    serve(builder, inp, out)


if __name__ == "__main__":
    main()
