"""Structured logs: one ``key=value`` line per event."""

from __future__ import annotations

import logging
import os


def configure_logging(level: str | None = None) -> None:
    logging.basicConfig(
        level=(level or os.environ.get("PATCHSTREAM_LOG_LEVEL", "INFO")).upper(),
        format="ts=%(asctime)s level=%(levelname)s logger=%(name)s %(message)s",
    )
    for noisy in ("aiokafka", "faust", "mode", "pymilvus", "httpx", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
