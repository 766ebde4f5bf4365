"""The grammar of every supported log/trace format, shared by the Spark parser and the simulator (DESIGN §3, §6).

Modules:
- :mod:`.timefmt` timestamp layouts and zones of each format;
- :mod:`.layouts` line layouts (prefix, line ending, throwable rendering) and per-line regexes;
- :mod:`.statements` the exact statements with their statement ids (L-C1…, L-B7…, Spring, gRPC SDK);
- :mod:`.java` Java ``toString()`` renderings (``MessageExt``, ``Message``, ``MessageQueue``, byte arrays,
  HashMap order) and message-id layouts;
- :mod:`.trace` trace record layouts (U+0001 fields, U+0002 record ends);
- :mod:`.stats` stats.log per-minute lines;
- :mod:`.dump` message-dump JSON keys.
"""

from __future__ import annotations

from rocketmq_retry.config import FORMAT_NAMES

CLIENT_4X = "rocketmq-client-4x"
CLIENT_5X = "rocketmq-client-5x"
GRPC_CLIENT = "rocketmq-grpc-client"
SPRING_LISTENER = "spring-listener"
BROKER = "broker"
BROKER_STATS = "broker-stats"
TRACE = "trace"
MESSAGE_DUMP = "message-dump"

assert (CLIENT_4X, CLIENT_5X, GRPC_CLIENT, SPRING_LISTENER, BROKER, BROKER_STATS, TRACE, MESSAGE_DUMP) == FORMAT_NAMES

__all__ = [
    "BROKER",
    "BROKER_STATS",
    "CLIENT_4X",
    "CLIENT_5X",
    "FORMAT_NAMES",
    "GRPC_CLIENT",
    "MESSAGE_DUMP",
    "SPRING_LISTENER",
    "TRACE",
]
