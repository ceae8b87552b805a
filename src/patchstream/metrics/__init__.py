"""Prometheus metrics: one :class:`Metrics` object per process, built on its own registry."""

from patchstream.metrics.registry import Metrics, dlq_reason_code, prepare_multiprocess_metrics

__all__ = ["Metrics", "dlq_reason_code", "prepare_multiprocess_metrics"]
