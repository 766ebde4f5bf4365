"""Line layouts of every text format (docs/rocketmq-rules.md §6.1, §6.4, §12; tests/data/rocketmq-4.9.4).

For each format: how one event is rendered (prefix, message, throwable, line end), the head regex the Spark parser
matches (``*_HEAD``, Java regexes with numbered groups; ``jobs/ingest/screen`` matches their part before the message
separator) and the simulator-side ``*_LINE_RE`` (named groups) that the tests read simulated files with. A physical
line that matches no head is a continuation of the previous entry (stack frames, ``Caused by:``, FAQ hints) or
damage (docs/ingest.md, "Noise and continuation lines").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rocketmq_retry.logformats.java import abbreviate_logger, pad_truncate_left
from rocketmq_retry.logformats.timefmt import (
    BROKER_TS,
    CLIENT_4X_TS,
    CLIENT_5X_TS,
    PYTHON_TS,
    SPRING_BOOT2_TS,
    SPRING_TS,
    TimestampLayout,
)

# --- the parser's head lines (jobs/ingest/patterns re-exports them; Java regexes for Spark) --------------------
# One level set for every layout, the parser's: what a head may carry. The simulator writes TRACE..ERROR only; the
# *_LINE_RE below accept the same set, so the simulator's and the parser's notion of a head agree.
LEVEL_NAMES = ("TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "CRITICAL")
LEVELS = "(?:" + "|".join(LEVEL_NAMES) + ")"
# 4.x ClientLogger DefaultLayout (§6.1): "yyyy-MM-dd HH:mm:ss,SSS LEVEL loggerName - message", JVM zone, \r\n.
CLIENT4_HEAD = r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) (" + LEVELS + r") (\S+) - (.*)$"
# logback's default console pattern, where 4.x lines land with -Drocketmq.client.logUseSlf4j=true or on stdout
# (tests/data/rocketmq-4.9.4/client/*.console-stdout.log): "HH:mm:ss.SSS [thread] LEVEL logger - message" -- no date.
CONSOLE_HEAD = r"^(\d{2}:\d{2}:\d{2}\.\d{3}) \[([^\]]*)\] (" + LEVELS + r")\s+(\S+) - (.*)$"
# 5.x remoting client and gRPC SDK (§6.1): "%d{yyy-MM-dd HH:mm:ss.SSS,GMT+8} %-5p [%pid] [%t] [%logger{12}#%M:%L] - %m".
CLIENT5_HEAD = (
    r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}) (" + LEVELS + r")\s+\[(\d*)\] \[(.*?)\] \[([^\]]*)\] - (.*)$"
)
# Python SDK (§5.7): logging's "%(asctime)s [%(levelname)s] %(message)s", local zone, "\n" (rocketmq-clients
# python/rocketmq/v5/log/log_config.py). No logger and no thread: the head is the time and the level.
PYTHON_HEAD = r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) \[(" + LEVELS + r")\] (.*)$"
# Spring Boot default file/console pattern: 2.x "yyyy-MM-dd HH:mm:ss.SSS  LEVEL pid --- [thread] logger : msg",
# 3.x "yyyy-MM-ddTHH:mm:ss.SSSXXX  LEVEL pid --- [app] [thread] logger : msg".
SPRING_HEAD = (
    r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2}\.\d{3})(Z|[+-]\d{2}:?\d{2})?\s+(" + LEVELS + r")\s+(\d*)\s+---\s+"
    r"(?:\[[^\]]*\]\s+)?\[\s*([^\]]*)\]\s+(\S+)\s*:\s(.*)$"
)

# --- rocketmq-client-4x -------------------------------------------------------------------------------------
# ClientLogger / LoggingBuilder.DefaultLayout (§6.1): "<ts> <LEVEL> <loggerName> - <msg>\r\n", level not padded.
# The throwable follows line by line, each line ending in \r\n, and its text (Throwable.printStackTrace split on
# line breaks) ends with an empty line: every stack trace in tests/data/rocketmq-4.9.4/client is followed by a
# bare "\r\n".
CLIENT_4X_LINE_RE = (
    r"^(?P<ts>" + CLIENT_4X_TS.regex + r") (?P<level>" + LEVELS + r") (?P<logger>\S+) - (?P<msg>.*?)\r?$"
)


def render_client_4x(ts: str, level: str, logger: str, message: str, throwable: Sequence[str] = ()) -> str:
    out = f"{ts} {level} {logger} - {message}\r\n"
    if throwable:
        out += "\r\n".join(throwable) + "\r\n\r\n"
    return out


# --- rocketmq-client-5x and rocketmq-grpc-client ------------------------------------------------------------
# rmq.client.logback.xml / gRPC SDK logback.xml (§6.1):
#   %d{yyy-MM-dd HH:mm:ss.SSS,GMT+8} %-5p [%pid] [%t] [%logger{12}#%M:%L] - %m%n
# A shipped 5.2.0 client prints the location as "#?:?" (no caller data, §12); parsers accept both shapes.
UNKNOWN_LOCATION = "?:?"
CLIENT_5X_LINE_RE = (
    r"^(?P<ts>" + CLIENT_5X_TS.regex + r") (?P<level>" + LEVELS + r")\s+\[(?P<pid>\d+)\] \[(?P<thread>[^\]]*)\] "
    r"\[(?P<logger>[^\]#]+)#(?P<location>[^\]]*)\] - (?P<msg>.*)$"
)


def render_client_5x(
    ts: str,
    level: str,
    pid: int,
    thread: str,
    logger_fqcn: str,
    message: str,
    throwable: Sequence[str] = (),
    location: str = UNKNOWN_LOCATION,
) -> str:
    """One 5.x client / gRPC SDK entry; ``location`` is ``method:line`` or ``?:?``. Logback ends lines with ``\\n``."""
    out = f"{ts} {level:<5} [{pid}] [{thread}] [{abbreviate_logger(logger_fqcn, 12)}#{location}] - {message}\n"
    if throwable:
        out += "\n".join(throwable) + "\n"
    return out


# --- rocketmq-python-client ---------------------------------------------------------------------------------
# The SDK formats its own messages with f-strings and never hands logging an exception (§5.7): a record is one line
# unless its message holds a line break (a multi-line str(e)); logging.Formatter adds a formatted traceback only
# for exc_info, which the SDK never passes. Rotation: RotatingFileHandler (rocketmq_client.log.1, .2, …).
PYTHON_LINE_RE = r"^(?P<ts>" + PYTHON_TS.regex + r") \[(?P<level>" + LEVELS + r")\] (?P<msg>.*)$"


def render_python(ts: str, level: str, message: str) -> str:
    return f"{ts} [{level}] {message}\n"


# --- broker (broker.log, broker_default.log, store.log) -----------------------------------------------------
# rmq.broker.logback.xml / logback_broker.xml: %d{yyy-MM-dd HH:mm:ss,GMT+8} %p %t - %m%n (§6.1).


def _broker_line(named: bool) -> str:
    """The broker files' line: level and thread are optional (stats.log drops the thread, the watermark/protection
    appenders drop the level too). One spelling for both readers: ``named`` gives Python's named groups (the
    simulator's checks), else numbered groups (the parser's Java regex)."""

    def group(name: str, rx: str) -> str:
        return f"(?P<{name}>{rx})" if named else f"({rx})"

    return (
        "^" + group("ts", BROKER_TS.regex) + "(?: " + group("level", LEVELS) + ")?(?: " + group("thread", r"\S+")
        + ")? - " + group("msg", ".*") + "$"
    )  # fmt: skip


# The parser's broker head (jobs/ingest/screen.RX_BROKER is its part before " - ") and the simulator-side form.
BROKER_HEAD = _broker_line(named=False)
BROKER_LINE_RE = _broker_line(named=True)


def render_broker(ts: str, level: str, thread: str, message: str, throwable: Sequence[str] = ()) -> str:
    out = f"{ts} {level} {thread} - {message}\n"
    if throwable:
        out += "\n".join(throwable) + "\n"
    return out


# --- broker-stats (stats.log) -------------------------------------------------------------------------------
# RocketmqStats appender: %d{yyy-MM-dd HH:mm:ss,GMT+8} %p - %m%n (no thread, §6.1). The parser reads these lines
# with BROKER_HEAD; STATS_LINE_RE is the appender's own, narrower layout (level required, no thread), and
# tests/test_logformats_grammar.py checks that BROKER_HEAD reads every line it accepts to the same fields.
STATS_LINE_RE = r"^(?P<ts>" + BROKER_TS.regex + r") (?P<level>" + LEVELS + r") - (?P<msg>.*)$"


def render_stats(ts: str, message: str, level: str = "INFO") -> str:
    return f"{ts} {level} - {message}\n"


# --- spring-listener ----------------------------------------------------------------------------------------
# Spring Boot's default logback patterns (spring-boot defaults.xml; no correlation id):
#   Boot 3 file     %d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %5p ${PID:-} --- [%t] %-40.40logger{39} : %m%n%wEx
#   Boot 3 console  %d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %5p ${PID:-} --- [%15.15t] %-40.40logger{39} : %m%n%wEx
#                   (3.2+: "--- [<spring.application.name>] [%15.15t] " when the application name is set)
#   Boot 2 file     %d{yyyy-MM-dd HH:mm:ss.SSS} %5p ${PID:- } --- [%t] %-40.40logger{39} : %m%n%wEx
#   Boot 2 console  %d{yyyy-MM-dd HH:mm:ss.SSS} %5p ${PID:- } --- [%15.15t] %-40.40logger{39} : %m%n%wEx
# %wEx puts an empty line before and after the stack trace. %15.15t left-pads the thread name to 15 characters and
# keeps its LAST 15 (logback truncates from the left): ConsumeMessageThread_18 -> "essageThread_18", main -> 11
# spaces + "main".
SPRING_PATTERN = "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %5p ${PID} --- [%t] %-40.40logger{39} : %m%n%wEx"
SPRING_CONTAINER_LOGGER = "org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer"
SPRING_THREAD_WIDTH = 15  # the console patterns' %15.15t


@dataclass(frozen=True)
class SpringPattern:
    """One of Spring Boot's default logback patterns."""

    name: str  # the scenario's spring_pattern value
    java_pattern: str
    ts: TimestampLayout
    thread_width: int | None  # 15 for %15.15t (console), None for %t (file)
    application_name: bool = False  # Boot 3.2+: "[<spring.application.name>] " before the thread
    console: bool = False  # written to standard output (captured to a file), not by logback's file appender

    @property
    def boot_major(self) -> int:
        return 2 if self.ts is SPRING_BOOT2_TS else 3


SPRING_BOOT3_FILE = SpringPattern("boot3-file", SPRING_PATTERN, SPRING_TS, None)
SPRING_BOOT3_CONSOLE = SpringPattern(
    "boot3-console",
    "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %5p ${PID:-} --- [%15.15t] %-40.40logger{39} : %m%n%wEx",
    SPRING_TS,
    SPRING_THREAD_WIDTH,
    console=True,
)
SPRING_BOOT3_CONSOLE_APPNAME = SpringPattern(
    "boot3-console-appname",
    "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %5p ${PID:-} --- %esb(){APPLICATION_NAME}[%15.15t] %-40.40logger{39} : %m%n%wEx",
    SPRING_TS,
    SPRING_THREAD_WIDTH,
    application_name=True,
    console=True,
)
SPRING_BOOT2_FILE = SpringPattern(
    "boot2-file",
    "%d{yyyy-MM-dd HH:mm:ss.SSS} %5p ${PID:- } --- [%t] %-40.40logger{39} : %m%n%wEx",
    SPRING_BOOT2_TS,
    None,
)
SPRING_BOOT2_CONSOLE = SpringPattern(
    "boot2-console",
    "%d{yyyy-MM-dd HH:mm:ss.SSS} %5p ${PID:- } --- [%15.15t] %-40.40logger{39} : %m%n%wEx",
    SPRING_BOOT2_TS,
    SPRING_THREAD_WIDTH,
    console=True,
)
SPRING_PATTERNS: dict[str, SpringPattern] = {
    p.name: p
    for p in (
        SPRING_BOOT3_FILE,
        SPRING_BOOT3_CONSOLE,
        SPRING_BOOT3_CONSOLE_APPNAME,
        SPRING_BOOT2_FILE,
        SPRING_BOOT2_CONSOLE,
    )
}
# Any of the patterns above (the thread group keeps %15.15t's padding; the application-name group is optional).
SPRING_LINE_RE = (
    r"^(?P<ts>"
    + SPRING_TS.regex
    + "|"
    + SPRING_BOOT2_TS.regex
    + r") +(?P<level>"
    + LEVELS
    + r") (?P<pid>\d+) --- (?:\[(?P<app>[^\]]*)\] )?\[(?P<thread>[^\]]*)\] "
    r"(?P<logger>\S+) *: (?P<msg>.*)$"
)


# What every Spring Boot application prints to standard output before its first log line (SpringBootBanner#
# printBanner, spring-boot 2.x and 3.x): a blank line, the art, then the strap line " :: Spring Boot :: " padded
# to STRAP_LINE_SIZE (42) with " (v<version>)" (no version when it is unknown), then a blank line. Written by
# System.out, not by logback: no head, only in a console capture (``SpringPattern.console``).
SPRING_BOOT_BANNER_ART = (
    "  .   ____          _            __ _ _",
    " /\\\\ / ___'_ __ _ _(_)_ __  __ _ \\ \\ \\ \\",
    "( ( )\\___ | '_ | '_| | '_ \\/ _` | \\ \\ \\ \\",
    " \\\\/  ___)| |_)| | | | | || (_| |  ) ) ) )",
    "  '  |____| .__|_| |_|_| |_\\__, | / / / /",
    " =========|_|==============|___/=/_/_/_/",
)
SPRING_BOOT_STRAP = " :: Spring Boot :: "
SPRING_BOOT_STRAP_LINE_SIZE = 42
SPRING_BOOT_STRAP_RE = r"^ :: Spring Boot :: *( \(v[0-9A-Za-z._-]+\))?\s*$"


def render_spring_boot_banner(version: str) -> str:
    """The default banner as printed (``\\n`` line ends), version ``3.2.5`` -> `` :: Spring Boot ::  …  (v3.2.5)``."""
    tag = f" (v{version})" if version else ""
    strap = SPRING_BOOT_STRAP + " " * max(0, SPRING_BOOT_STRAP_LINE_SIZE - len(tag) - len(SPRING_BOOT_STRAP)) + tag
    return "\n".join(("", *SPRING_BOOT_BANNER_ART, strap, "")) + "\n"


def spring_logger_field(logger_fqcn: str) -> str:
    """``%-40.40logger{39}``: e.g. ``a.r.s.s.DefaultRocketMQListenerContainer`` (abbreviated, then cut to 40)."""
    return pad_truncate_left(abbreviate_logger(logger_fqcn, 39), 40)


def thread_field(thread: str, width: int | None) -> str:
    """``%t`` (``width`` None) or ``%W.Wt``: left-padded to ``width``, longer names keep their last ``width`` chars."""
    if width is None:
        return thread
    return thread[-width:].rjust(width)


def render_spring(
    ts: str,
    level: str,
    pid: int,
    thread: str,
    logger_fqcn: str,
    message: str,
    throwable: Sequence[str] = (),
    pattern: SpringPattern = SPRING_BOOT3_FILE,
    application_name: str = "",
) -> str:
    app = f"[{application_name}] " if pattern.application_name and application_name else ""
    out = (
        f"{ts} {level:>5} {pid} --- {app}[{thread_field(thread, pattern.thread_width)}] "
        f"{spring_logger_field(logger_fqcn)} : {message}\n"
    )
    if throwable:
        out += "\n" + "\n".join(throwable) + "\n\n"
    return out


def java_stack(exception: str, frames: Sequence[str]) -> list[str]:
    """``Throwable.printStackTrace`` lines: the ``toString()`` line then ``\\tat frame`` lines."""
    return [exception, *("\tat " + f for f in frames)]
