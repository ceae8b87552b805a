"""Graph and vector stores behind small interfaces."""
