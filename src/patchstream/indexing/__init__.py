"""Snapshot indexing of a directory: scan, publish, wait until both tiers applied."""
