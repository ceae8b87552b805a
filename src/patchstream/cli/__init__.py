"""The ``patchstream`` command line."""
