"""Configuration and the records that say where a stack runs: the settings (pydantic-settings,
``PATCHSTREAM_`` prefix), a client's profile, the running stack's record and addresses, and
the user-owned record files they are kept in."""
