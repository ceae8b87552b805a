"""Runtime edges: run a command under a tracer and turn the calls it made into trace events
(``patchstream trace``; docs/concepts/runtime-edges.md)."""
