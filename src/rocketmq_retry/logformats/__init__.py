"""The grammar of every supported log/trace format, shared by the Spark parser and the simulator (DESIGN §3, §6).

Each statement and each head layout is defined once, here: the simulator renders the templates and layouts, the
ingest job (``jobs/ingest/patterns`` re-exports) matches the regexes defined next to them, and
``tests/test_logformats_grammar.py`` round-trips every template through those regexes (docs/ingest.md, "One
grammar").

Modules:
- :mod:`.timefmt` timestamp layouts and zones of each format;
- :mod:`.layouts` line layouts (prefix, line ending, throwable rendering), the parser's head regexes and the
  simulator's per-line regexes (one level set);
- :mod:`.statements` the statement catalogue: each statement id once, with the template the simulator renders and
  the regexes the parser matches (L-C1…, L-B7…, Spring, gRPC SDK);
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
PYTHON_CLIENT = "rocketmq-python-client"
SPRING_LISTENER = "spring-listener"
BROKER = "broker"
BROKER_STATS = "broker-stats"
TRACE = "trace"
MESSAGE_DUMP = "message-dump"

assert (
    CLIENT_4X,
    CLIENT_5X,
    GRPC_CLIENT,
    PYTHON_CLIENT,
    SPRING_LISTENER,
    BROKER,
    BROKER_STATS,
    TRACE,
    MESSAGE_DUMP,
) == FORMAT_NAMES

__all__ = [
    "BROKER",
    "BROKER_STATS",
    "CLIENT_4X",
    "CLIENT_5X",
    "FORMAT_NAMES",
    "GRPC_CLIENT",
    "MESSAGE_DUMP",
    "PYTHON_CLIENT",
    "SPRING_LISTENER",
    "TRACE",
]
