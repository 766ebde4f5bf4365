"""Line grammar used by the ingest job: head-line layouts per format, binding lines, field patterns and caps (§6).

These are Java-regex strings for Spark's ``regexp_extract``/``rlike`` (log statements only; the trace's
U+0001/U+0002 layout is split, never regexed).

The retry statements are not defined here: :data:`STATEMENTS` is ``logformats.statements.STATEMENTS``, the one
catalogue whose templates the simulator renders and whose regexes this job matches (docs/ingest.md, "One
grammar"). It is ordered: the first statement whose ``prefix`` the message starts with (or, for ``contains``
statements, that the message contains) decides the line's event_type. A line that matches a statement's prefix but
not its full ``pattern`` is quarantined as truncated/malformed for that statement id.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketmq_retry.jobs.ingest.sql import sql_str
from rocketmq_retry.logformats import PYTHON_CLIENT, layouts
from rocketmq_retry.logformats.statements import CLIENTS
from rocketmq_retry.logformats.statements import STATEMENTS as STATEMENTS  # the parser's table, re-exported
from rocketmq_retry.logformats.trace import CONTENT_SPLITOR, FIELD_SPLITOR

# Head layouts: the parser's accepted language is defined once, in logformats.layouts (next to the renderers the
# simulator writes with); re-exported here under the names the ingest modules use.
LEVEL_NAMES = layouts.LEVEL_NAMES
LEVELS = layouts.LEVELS
CLIENT4_HEAD = layouts.CLIENT4_HEAD
CONSOLE_HEAD = layouts.CONSOLE_HEAD
CLIENT5_HEAD = layouts.CLIENT5_HEAD
SPRING_HEAD = layouts.SPRING_HEAD
PYTHON_HEAD = layouts.PYTHON_HEAD
BROKER_HEAD = layouts.BROKER_HEAD

# Anything that starts like a date but is not a valid head is a damaged head line, not a continuation.
DATE_LIKE = r"^\d{4}-\d{2}-\d{2}[ T]\d"
TIME_LIKE = r"^\d{2}:\d{2}:\d{2}\.\d{3} \["

# What a valid head line's fields may hold (docs/ingest.md, "Noise and continuation lines"): no control character
# and no U+FFFD anywhere before the message, and a logger that is a (possibly abbreviated) Java name; the 5.x
# layout's logger field also carries "#method:line".
HEAD_BAD_CHARS = r"[\x00-\x08\x0A-\x1F\x7F-\x9F\x{FFFD}]"
LOGGER_NAME = r"^[A-Za-z0-9_$.-]+$"
LOGGER5_NAME = r"^[A-Za-z0-9_$.<>-]*(#([A-Za-z0-9_$<>-]*|\?)(:(\d+|\?))?)?$"  # "#?:?" without caller data
# Spring Boot's logger field may end in bracketed names: Tomcat's containers log under
# "org.apache.catalina.core.ContainerBase.[Tomcat].[localhost].[/]" (ContainerBase#getLogName), which
# %logger{39} abbreviates to "o.a.c.c.C.[Tomcat].[localhost].[/]", a line every Spring MVC application prints at start.
SPRING_LOGGER_NAME = r"^[A-Za-z0-9_$.-]+(\[[^\[\]\s]*\](\.\[[^\[\]\s]*\])*)?$"

# Lines without a head that continue the record above (the only ones counted as continuation):
CONT_FRAME = r"^\s+at \S|^\s+\.\.\. \d+ (more|common frames omitted)\s*$"  # stack frames, "... 5 more"
CONT_CAUSE = r"^\s*(Caused by|Suppressed): \S"
# the first line of a printed Throwable: a qualified class name ending in Exception/Error/Throwable, ": message"
CONT_EXCEPTION = r"^([A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(Exception|Error|Throwable)(: .*|:)?$"
# A wrapped message line: printable text (tabs allowed) of at most this many characters, right after the head
# line, an exception line or a Caused by line, or after another wrapped line of the same run.
WRAPPED_MAX_CHARS = 4096
# ... but not a line that holds a piece of a head: the rest of a record cut inside its head ("…Client - msg",
# "…Logger : msg") or a level with what follows it in a layout. Such a line is damage, not a message.
HEAD_PIECE = r"^\S+ [-:] |\b" + LEVELS + r"\s+(\d+\s+---\s|\S+ - )"
TEXT_BAD_CHARS = r"[\x00-\x08\x0A-\x1F\x7F-\x9F\x{FFFD}]"
NOT_CONTINUATION = "line without a log head that is not a continuation"

# Headless lines that RocketMQ itself prints to stdout files we are pointed at (broker.stdout.log, and the proxy's
# proxy.stdout.log: ProxyStartup#main prints "new Date() + " rocketmq-proxy startup successfully"", Date.toString()).
BROKER_HEADLESS_NOISE = (
    r"^The (broker|Name Server)\b.*boot success"
    r"|^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \S+ \d{4} rocketmq-proxy startup successfully$"
)

# The Spring Boot banner (logformats.layouts.SPRING_BOOT_BANNER_ART and the strap line): start-up noise of any
# application's standard output, wherever it shows (an application that restarts writes it again).
SPRING_BOOT_BANNER_ART = layouts.SPRING_BOOT_BANNER_ART
SPRING_BOOT_STRAP = layouts.SPRING_BOOT_STRAP
SPRING_BOOT_STRAP_RE = layouts.SPRING_BOOT_STRAP_RE
SPRING_BOOT_BANNER = "Spring Boot start-up banner"
LEAD_BLANK = "blank line before the file's first head line"

# --- MessageExt / Message rendering (§6.2 "Msgs: {}") --------------------------------------------------------
MSGEXT_SPLIT = r", (?=MessageExt \[)"  # elements of List<MessageExt>.toString()
RX_OFFSET_MSG_ID = r"\bmsgId=([0-9A-Fa-f]+)"
RX_QUEUE_ID = r"\bqueueId=(-?\d+)"
RX_RECONSUME = r"\breconsumeTimes=(\d+)"
RX_TOPIC = r"topic='([^']*)'"
RX_BROKER = r"\bbrokerName=([^,\]]*)"
RX_BORN_HOST = r"\bbornHost=/?([^,\]]*)"
RX_PROPERTIES = r"properties=\{([^}]*)\}"
RX_BODY = r"body=\[([-0-9, ]*)\]"


def rx_property(name: str) -> str:
    """The value of ``name`` inside a rendered ``properties={k=v, …}`` string."""
    return r"(?:^|, )" + name + r"=([^,}]*)"


# Aggregate lines for hour/day windows repeat the minute lines' counts (§6.3 L-B9): ignored, not events.
STATS_ROLLUP = r"^\[[A-Z0-9_]+\] \[[^\]]*\] Stats In One (Hour|Day), "
# 4.x client: the Message{...} line printed right after L-P1 (§12); folded into the L-P1 event.
RESEND_MESSAGE_PREFIX = "Message{topic='"


# --- bindings: lines that tie an application instance's topic to a consumer group (docs/reconstruction.md) ---


@dataclass(frozen=True)
class Binding:
    """A noise line that says which consumer group consumes which topic in the instance that wrote it.

    ``group_sql``/``topic_sql`` are Spark SQL templates over ``{m}`` (the message), built from byte searches
    rather than regexes: the 4.x ``[persistAll]`` offset flush, written every 5 s per owned queue, is the most
    frequent line of a client log. ``require`` is a literal the message must contain for the extraction to mean
    anything.
    """

    ref: str
    kind: str  # "container" (rocketmq-spring start-up) | "client-log" (the RocketMQ client's own lines)
    prefixes: tuple[str, ...]  # the message starts with one of these (the wordings of the versions)
    formats: tuple[str, ...]
    group_sql: str
    topic_sql: str
    require: str


def _between(after: str, before: str) -> str:
    """SQL template: the text of ``{m}`` after the first ``after``, up to the next ``before``."""
    # In bytes: the text before the first ``after`` is found by substring_index and the rest cut as binary, since
    # locate() and substring() count characters from the start of the message, which on the offset-flush lines
    # (most lines of a client log, each read for its binding) cost a quarter of the screen. ``after`` ends in
    # ASCII, so the cut falls on a character boundary; without ``after`` the text is '' (no name, no evidence).
    start = f"octet_length(substring_index({{m}}, {sql_str(after)}, 1)) + {len(after.encode())} + 1"
    return f"substring_index(CAST(substring(CAST({{m}} AS BINARY), {start}) AS STRING), {sql_str(before)}, 1)"


_MQ_TOPIC = _between("MessageQueue [topic=", ",")
BINDINGS: tuple[Binding, ...] = (
    # rocketmq-spring DefaultRocketMQListenerContainer.start(): log.info("running container: {}", this), §6.4.
    Binding(
        "B-S1",
        "container",
        ("running container: DefaultRocketMQListenerContainer{",),
        ("spring-listener",),
        _between("consumerGroup='", "'"),
        _between(", topic='", "'"),
        ", topic='",
    ),
    # RemoteBrokerOffsetStore.persistAll (4.x and 5.x remoting clients): one line per owned queue every 5 s.
    Binding(
        "B-C1",
        "client-log",
        ("[persistAll] Group: ",),
        CLIENTS,
        _between("[persistAll] Group: ", " "),
        _MQ_TOPIC,
        "MessageQueue [topic=",
    ),
    # RebalanceImpl.rebalanceByTopic, CLUSTERING (start-up and membership changes); 5.x says "client rebalanced …",
    # and RebalanceImpl#getRebalanceResultFromBroker (5.x broker-side rebalance: POP, clientRebalance=false)
    # "broker rebalanced …".
    Binding(
        "B-C2",
        "client-log",
        ("rebalanced result changed. ", "client rebalanced result changed. ", "broker rebalanced result changed. "),
        CLIENTS,
        _between(", group=", ","),
        _between(", topic=", ","),
        ", topic=",
    ),
    # gRPC SDK PushConsumerImpl#createConsumeService (rocketmq-clients java 5.0.1+), once at start-up: the group, for
    # every topic of the instance ("*"); a SimpleConsumer logs no line that names its group.
    Binding(
        "B-G1",
        "client-log",
        ("Create standard consume service, consumerGroup=", "Create FIFO consume service, consumerGroup="),
        ("rocketmq-grpc-client",),
        _between("consumerGroup=", ","),
        "'*'",
        ", clientId=",
    ),
    # Python SDK (§5.7): every line of a consumer object starts with its __str__, "PUSH_CONSUMER:<group>,
    # client_id:<id> " (Consumer#__str__, consumer/consumer.py): heartbeats every 10 s, settings, route updates
    # ("… update topic:<T> route, …"), start-up ("configure PUSH_CONSUMER:<group>, … consumption success"). A line
    # naming a topic binds that topic, any other the instance's every topic ("*").
    Binding(
        "B-PY1",
        "client-log",
        ("PUSH_CONSUMER:", "SIMPLE_CONSUMER:", "configure PUSH_CONSUMER:", "configure SIMPLE_CONSUMER:"),
        (PYTHON_CLIENT,),
        _between("_CONSUMER:", ","),
        f"IF(contains({{m}}, ' update topic:'), {_between(' update topic:', ' ')}, '*')",
        ", client_id:",
    ),
    # RebalanceImpl.rebalanceByTopic, BROADCASTING: "messageQueueChanged {group} {topic} {mqAll} {mqSet}" (a
    # broadcasting consumer writes no [persistAll] lines: its offsets live in a local file).
    Binding(
        "B-C4",
        "client-log",
        ("messageQueueChanged ",),
        CLIENTS,
        _between("messageQueueChanged ", " "),
        "substring_index(substring_index({m}, ' ', 3), ' ', -1)",
        "messageQueueChanged ",
    ),
    Binding(
        "B-C3",
        "client-log",
        ("doRebalance, ",),
        CLIENTS,
        _between("doRebalance, ", ","),
        _MQ_TOPIC,
        "MessageQueue [topic=",
    ),
)

# Trace (§7.2): record types, field counts and the ConsumeReturnType names of SubAfter.contextCode.
TRACE_RECORD_SEP = FIELD_SPLITOR  # U+0002 ends a record
TRACE_FIELD_SEP = CONTENT_SPLITOR  # U+0001 separates fields
CONTEXT_CODES = ("SUCCESS", "TIME_OUT", "EXCEPTION", "RETURNNULL", "FAILED")

MAX_LINE_CHARS = 1_048_576  # a line of 1 MB or more is quarantined, not parsed
LONG_LINE_REASON = "line of 1 MB or more"  # its quarantine reason, wherever the line is caught
RAW_CAP = 4096  # quarantine.raw and events.body are capped at this many characters

# Lines are screened by their message's first PREFIX_PROBE characters before the statement table is consulted,
# so every statement's literal prefix must be at least that long.
PREFIX_PROBE = 12
_short = [st.id for st in STATEMENTS if len(st.prefix) < PREFIX_PROBE]
if _short:
    raise ValueError(f"statement prefixes shorter than PREFIX_PROBE={PREFIX_PROBE}: {_short}")
# A message that stops inside a statement's prefix is that statement cut short (a collector that cut the line):
# quarantined as truncated. Shorter than this, a message says too little to be told from an unrelated line.
TRUNCATED_MIN_CHARS = 4
# the first PREFIX_PROBE characters of such a message, when it is shorter than that: the screen's probe
TRUNCATED_PROBES = tuple(sorted({st.prefix[:n] for st in STATEMENTS for n in range(TRUNCATED_MIN_CHARS, PREFIX_PROBE)}))
