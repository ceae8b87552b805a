"""Tree-sitter structure extraction, chunking, hashing and file deltas."""
