"""Test kits for users and for this project's tests; the runtime never imports them.

- ``bus``: an in-memory bus and a manual clock, for stream stages without a broker or sleeps.
- ``faults``: kill -9 of the embedded stack's processes at random moments while indexing,
  and a comparison with a clean rebuild (``tests/e2e/test_faults.py``, ``bench/faults.py``).
"""

from patchstream.testing.bus import ManualClock, MemoryBus, MemoryConsumer, MemoryProducer

__all__ = ["ManualClock", "MemoryBus", "MemoryConsumer", "MemoryProducer"]
