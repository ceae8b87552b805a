"""Helpers over the operating system and git: safe git invocations, /proc readings."""
