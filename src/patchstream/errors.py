"""The exceptions patchstream raises.

Every error derives from one root so callers can catch patchstream failures in one place::

    PatchstreamError
    ├── ConfigError          a setting is missing or invalid; fix the environment/config
    ├── ContractError        an event or delta violates its schema (goes to the DLQ)
    ├── StoreError           a graph or vector store refused or failed a request
    │   ├── StoreUnavailable     it cannot be reached: retry for as long as it takes
    │   └── StoreRefused         it answered and refused: retry a few times, then dead-letter
    ├── EmbedderError        an embedder failed or is not installed
    └── ParseError           a file could not be read or parsed at all
        └── UnsupportedLanguageError

Messages say what was wrong and what to do about it.
"""

from __future__ import annotations


class PatchstreamError(Exception):
    """Root of every patchstream exception."""


class ConfigError(PatchstreamError):
    """A setting is missing or invalid."""


class PortInUseError(ConfigError):
    """A listener's configured port is taken by another process."""


class CapacityError(PatchstreamError):
    """This machine cannot hold what was asked: refused before any of it was done."""


class ContractError(PatchstreamError):
    """A message does not satisfy its contract (schema version, required fields, paths).

    ``code`` is a short, stable name for the kind of violation (a metric label); the message
    says the details.
    """

    def __init__(self, message: str, code: str = "invalid") -> None:
        super().__init__(message)
        self.code = code


class StoreError(PatchstreamError):
    """A store refused or failed a request; the sink retries with backoff."""


class StoreUnavailable(StoreError):  # noqa: N818 - a condition, named as the runtime reads it
    """The store cannot be reached (refused connection, timeout, still loading). Adapters
    raise it at their boundary, so the runtime never reads driver messages to decide.
    ``store`` names the store for people (``falkordb``, ``milvus``, ``memgraph``)."""

    def __init__(self, message: str, store: str = "store") -> None:
        super().__init__(message)
        self.store = store


class StoreRefused(StoreError):  # noqa: N818
    """The store answered and refused this request (bad query, constraint, time limit)."""


class EmbedderError(PatchstreamError):
    """An embedder is missing (install its extra) or failed."""


class ParseError(PatchstreamError):
    """A file could not be read or parsed."""


class UnsupportedLanguageError(ParseError):
    """No grammar is registered for the requested language."""
