"""RocketMQ retry lifecycle platform: ingest logs, rebuild each message's retry path, validate, compensate."""

from __future__ import annotations

__version__ = "0.1.0"
