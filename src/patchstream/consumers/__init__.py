"""Sink consumers: each its own consumer group on ``file-deltas``."""
