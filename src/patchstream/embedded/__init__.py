"""The embedded single-machine stack: services started from Python packages, no Docker."""
