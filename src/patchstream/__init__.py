"""patchstream: keep coding agents' knowledge of large codebases correct and fresh."""

from patchstream.errors import PatchstreamError

__version__ = "0.1.0"

__all__ = ["PatchstreamError", "__version__"]
