"""What the simulator is asked to play: run settings (the CLI knobs) and, per consumer group, the listener's
behaviour. Retry *rules* are not here: every decision after a failed delivery comes from the engine.

A scenario file (``--scenario F``, YAML) may set per-group listener behaviour; groups it does not mention get
the run's failure mix. Shape::

    groups:
      GID_refund_validator: {topic: REFUND_REQUESTED, tags: refund, app: plain, delay_level: -1,
                             behaviour: {always: 1.0}, failure_kinds: {later: 1.0}}
      GID_cache_node: {topic: CACHE_INVALIDATE, instances: 2}
      GID_invoice_mailer: {topic: INVOICE_ISSUED, app: spring, application: invoice-mailer,
                           spring_pattern: boot2-console, client_version: "4.9.1", started_days_before: 3}

Keys per group:

- ``topic``, ``tags``, ``key_prefix``: what the group's producer publishes (groups naming one topic share it:
  every message of the topic reaches each of them);
- ``app``: ``plain`` (a bare ``DefaultMQPushConsumer``) or ``spring`` (rocketmq-spring's
  ``DefaultRocketMQListenerContainer``, which writes ``running container: …`` at start-up and ``consume message
  failed. …`` on each failure to the application's log);
- ``instances``: how many instances (hosts, JVMs) run the group; broadcasting groups default to 2;
- ``application``: groups naming the same application run in the same JVMs: one host per instance named
  ``<broker key>-<application>-NN``, one application log and one ``rocketmq_client.log`` holding every group's
  lines (each rocketmq-spring container starts its own consumer, with its own client instance). The groups of one
  application must agree on ``app``, ``instances``, ``spring_pattern``, ``client_version``, ``spring_version``,
  ``started_days_before``, the broker and the client kind. Default: the group alone, named after the group;
- ``spring_pattern``: the Spring Boot logback pattern of a ``spring`` application: ``boot3-file`` (default:
  ``logs/app.log``), ``boot3-console``, ``boot3-console-appname`` (Boot 3.2+ with ``spring.application.name``),
  ``boot2-file`` (``logs/app.log``) or ``boot2-console``; console patterns are captured to ``logs/stdout.log``
  and print the thread as ``%15.15t`` (its last 15 characters);
- ``client_version``: the remoting client library (``"4.9.4"``): consume threads are ``ConsumeMessageThread_<n>``
  before 4.9.3 and ``ConsumeMessageThread_<group>_<n>`` from it, the scheduled pools carry the group from 5.1.1,
  4.x clients write the 4.x ``ClientLogger`` layout and ``rebalanced result changed`` (+ ``add a new pull
  request``), 5.x clients the 5.x logback layout and ``client rebalanced result changed``. Default: the config's
  ``groups.<g>.client_version`` when it has one, else the bundled client of ``spring_version`` when that is
  given, else the group's broker version. 5.0.x (still the 4.x layout) is not modelled. gRPC groups ignore it;
- ``spring_version``: the rocketmq-spring release (2.2.0 to 2.3.5) of a ``spring`` application: the shape of
  its ``running container`` line and its client ids. Default: the newest release bundling a client no newer than
  ``client_version`` (4.9.1 → 2.2.1, 4.9.4 → 2.2.2, 5.2.0 → 2.3.0);
- ``started_days_before``: the instances started this many days before ``--date``: their start-up lines (Spring's
  ``Starting``/``running container``/``Started``, the client's start-up and rebalance lines, the broker's
  ``new consumer connected``) are dated D-k (k ≥ 1: around 10:00; 0: in the date's first minute), in the top of the
  same files or their rolled siblings; periodic lines (offset persistence, heartbeats, stats) start with the date.
  Default: about 90 s before the date's start (start-up lines dated D-1 23:58);
- ``delay_level``: ``ConsumeConcurrentlyContext.delayLevelWhenNextConsume`` the listener sets;
- ``behaviour``, ``failure_kinds``: weights (see ``BEHAVIOURS``, ``FAILURE_KINDS``); ``share``: the fraction of
  the topic's messages the group receives;
- ``outages``: windows in which the group's downstream dependency is down, each ``{start: "HH:MM", minutes: M,
  cause: C}`` (local time in the config's timezone, on every date of the run; ``cause`` one of
  ``exceptions.OUTAGE_CAUSES``): every delivery that starts inside fails with that exception, whatever the
  behaviour says; after the window the behaviour decides again;
- ``poison``: the share of the topic's messages that are bad for this group, and ``poison_cause`` (one of
  ``exceptions.POISON_CAUSES``, default ``validation``): such a message is published bad (``json``: a body that is
  not JSON; ``validation``: a negative amount; ``missing-customer``: no user) and fails on every delivery;
- ``throttle``: ``{start: "HH:MM", minutes: M, share: S, burst: B, raise: false}``: a traffic burst (B more messages
  a minute on the topic, default 0) during which the listener refuses about S (default 0.5) of the first
  deliveries, returning ``RECONSUME_LATER`` (or, with ``raise: true`` and always for Spring, throwing a
  ``RateLimitExceededException``); each refused message is consumed on its first retry.
"""

from __future__ import annotations

import datetime as _dt
import pathlib
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from rocketmq_retry.errors import UserError
from rocketmq_retry.logformats.java import SPRING_BUNDLED_CLIENT, parse_version
from rocketmq_retry.logformats.layouts import SPRING_PATTERNS

BEHAVIOURS = ("ok", "always", "sometimes", "until")
OUTAGE_CAUSES = ("db-connection-refused", "http-connection-refused", "http-read-timeout")  # exceptions.py
POISON_CAUSES = ("json", "validation", "missing-customer")
FAILURE_KINDS = ("later", "exception", "null")
APPS = ("plain", "spring")
COLLECT = ("whole", "daily")

DEFAULT_BEHAVIOUR = {"ok": 0.80, "always": 0.06, "sometimes": 0.08, "until": 0.06}
DEFAULT_FAILURE_KINDS = {"later": 0.5, "exception": 0.35, "null": 0.15}


def parse_mix(text: str, names: tuple[str, ...], what: str) -> dict[str, float]:
    """``"ok=0.8,always=0.1"`` → normalised weights over ``names`` (missing names weigh 0)."""
    weights = dict.fromkeys(names, 0.0)
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or name.strip() not in weights:
            raise UserError(f"{what}: expected name=weight with name in {', '.join(names)}, got {part!r}")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            raise UserError(f"{what}: weight of {name.strip()!r} is not a number: {value!r}") from None
    return _normalise(weights, what)


def _normalise(weights: dict[str, float], what: str) -> dict[str, float]:
    total = sum(weights.values())
    if total <= 0 or any(v < 0 for v in weights.values()):
        raise UserError(f"{what}: weights must be >= 0 and not all 0")
    return {k: v / total for k, v in weights.items()}


@dataclass(frozen=True)
class Settings:
    """Run knobs (DESIGN §7 ``simulate`` plus the simulator's own)."""

    date: _dt.date
    out: pathlib.Path
    messages: int = 2000
    seed: int = 1
    behaviour: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_BEHAVIOUR))
    failure_kinds: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_FAILURE_KINDS))
    sometimes_fail_rate: float = 0.5  # per delivery, for "sometimes" lifecycles
    until_max: int = 4  # "until" lifecycles succeed at a reconsumeTimes drawn from 1..until_max
    send_back_fault_rate: float = 0.01  # CONSUMER_SEND_MSG_BACK fails (remoting concurrent)
    fallback_fault_share: float = 0.3  # of those, the re-publish fails too (local resubmit)
    timeout_rate: float = 0.002  # deliveries whose listener blocks past consumeTimeout
    producer_fault_rate: float = 0.01  # send attempts that fail
    noise: float = 1.0  # multiplier on periodic noise (heartbeats, offset persistence, stats)
    trace: bool = True  # remoting clients enable message trace (Spring apps keep their default: off)
    rotate_bytes: int = 32 * 1024 * 1024
    gzip: bool = True
    client4x_timezone: str | None = None  # JVM zone of 4.x clients; None = config timezone
    app_timezone: str | None = None  # Spring applications' zone; None = config timezone
    max_skew_ms: int = 250  # clock skew of application hosts against the broker
    horizon_hours: float = 30.0  # simulate from the last date's start to this many hours later
    days: int = 1  # publish over this many consecutive dates from ``date``, in one continuous run
    collect: str = "whole"  # whole: one folder as the run ends | daily: <out>/<date>/ as each date ends
    force: bool = False
    progress: bool = False
    scenario: dict[str, GroupScenario] = field(default_factory=dict)
    groups: tuple[str, ...] = ()  # only these consumer groups of the config (empty: all)


@dataclass(frozen=True)
class Window:
    """A daily window (local time of the config's timezone): an outage, or a throttling burst."""

    start_minute: int  # minutes after local midnight
    minutes: float
    cause: str = ""  # outages: one of OUTAGE_CAUSES
    share: float = 0.5  # throttling: refused share of the first deliveries
    burst: int = 0  # throttling: extra messages a minute on the topic
    raises: bool = False  # throttling: throw instead of returning RECONSUME_LATER


@dataclass(frozen=True)
class GroupScenario:
    """The listener side of one consumer group (what the simulator decides; the engine decides the rest)."""

    group: str
    topic: str
    tags: str
    key_prefix: str
    app: str = "plain"  # plain | spring (rocketmq-spring's DefaultRocketMQListenerContainer)
    instances: int = 1
    delay_level: int = 0  # ConsumeConcurrentlyContext.delayLevelWhenNextConsume set by the listener (§1.5)
    behaviour: dict[str, float] | None = None  # None = the run's mix
    failure_kinds: dict[str, float] | None = None
    share: float = 1.0  # fraction of the topic's messages this group receives (1.0: all)
    application: str | None = None  # groups with one application share its hosts and JVMs (None: its own)
    spring_pattern: str = "boot3-file"  # layouts.SPRING_PATTERNS
    client_version: str | None = None  # remoting client library; None: config, spring_version's, broker's
    spring_version: str | None = None  # rocketmq-spring release; None: from the client version
    started_days_before: int | None = None  # None: about 90 s before the date's start
    outages: tuple[Window, ...] = ()
    poison: float = 0.0  # share of the topic's messages that are poison for this group
    poison_cause: str = "validation"
    throttle: Window | None = None
    # what a production Spring Boot application writes besides the container's lines (rocketmq-spring only):
    app_lines: int = 0  # application INFO lines per delivery (received, loaded, calling …), before the outcome
    service_proxy: bool = False  # the listener calls a @Transactional service through its CGLIB proxy (deep traces)
    framework_lines: bool = False  # the start-up banner (console patterns), Tomcat, HikariCP and actuator lines


_WORD = re.compile(r"[A-Za-z0-9]+")


def default_topic(group: str) -> str:
    """``GID_order_reserve`` / ``order-consumer`` → ``ORDER_RESERVE`` / ``ORDER``: a stable, readable topic."""
    words = [w for w in _WORD.findall(group) if w.upper() not in ("GID", "CID", "CONSUMER", "GROUP")]
    return "_".join(w.upper() for w in words) or "BUSINESS_EVENTS"


def default_scenario(group: str) -> GroupScenario:
    topic = default_topic(group)
    prefix = (topic.split("_")[0][:3] or "MSG").upper()
    return GroupScenario(group=group, topic=topic, tags=topic.lower().split("_")[-1], key_prefix=prefix)


def load_scenario(path: pathlib.Path) -> dict[str, GroupScenario]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise UserError(f"scenario file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"invalid YAML in scenario file {path}: {exc}") from None
    if not isinstance(data, dict) or set(data) - {"groups"}:
        raise UserError(f"scenario file {path}: the top level must be a mapping with only 'groups'")
    out: dict[str, GroupScenario] = {}
    for group, spec in (data.get("groups") or {}).items():
        out[str(group)] = _group_scenario(str(group), spec or {}, f"{path}: groups.{group}")
    return out


def _group_scenario(group: str, spec: Any, where: str) -> GroupScenario:
    if not isinstance(spec, dict):
        raise UserError(f"{where}: expected a mapping")
    known = {
        "topic", "tags", "key_prefix", "app", "instances", "delay_level", "behaviour", "failure_kinds", "share",
        "application", "spring_pattern", "client_version", "spring_version", "started_days_before", "outages",
        "poison", "poison_cause", "throttle", "app_lines", "service_proxy", "framework_lines",
    }  # fmt: skip
    unknown = sorted(set(spec) - known)
    if unknown:
        raise UserError(f"{where}.{unknown[0]}: unknown key")
    base = default_scenario(group)
    app = str(spec.get("app", base.app))
    if app not in APPS:
        raise UserError(f"{where}.app: expected one of {', '.join(APPS)}, got {app!r}")
    behaviour = spec.get("behaviour")
    kinds = spec.get("failure_kinds")
    try:
        instances = int(spec.get("instances", base.instances))
        delay_level = int(spec.get("delay_level", 0))
        share = float(spec.get("share", 1.0))
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}: {exc}") from None
    if instances < 1 or not 0 < share <= 1:
        raise UserError(f"{where}: instances must be >= 1 and share in (0, 1]")
    application = spec.get("application")
    if application is not None and (not isinstance(application, str) or not _WORD.search(application)):
        raise UserError(f"{where}.application: expected a name such as 'invoice-mailer', got {application!r}")
    pattern = str(spec.get("spring_pattern", base.spring_pattern))
    if pattern not in SPRING_PATTERNS:
        raise UserError(f"{where}.spring_pattern: expected one of {', '.join(SPRING_PATTERNS)}, got {pattern!r}")
    client_version = _version(spec.get("client_version"), f"{where}.client_version")
    if client_version is not None and parse_version(client_version)[0] not in (4, 5):
        raise UserError(f"{where}.client_version: only 4.x and 5.x clients are modelled, got {client_version!r}")
    if client_version is not None and parse_version(client_version)[:2] == (5, 0):
        raise UserError(
            f"{where}.client_version: {client_version} still writes the 4.x ClientLogger layout with 5.x statements, "
            "which the simulator does not model; use 4.9.x or 5.1.0 and later"
        )
    spring_version = _version(spec.get("spring_version"), f"{where}.spring_version")
    if spring_version is not None and spring_version not in SPRING_BUNDLED_CLIENT:
        raise UserError(
            f"{where}.spring_version: expected one of {', '.join(SPRING_BUNDLED_CLIENT)} (the 'consume message "
            f"failed. messageId:…' line exists since 2.2.0), got {spring_version!r}"
        )
    started = spec.get("started_days_before")
    if started is not None and (isinstance(started, bool) or not isinstance(started, int) or started < 0):
        raise UserError(f"{where}.started_days_before: expected an integer >= 0, got {started!r}")
    return GroupScenario(
        group=group,
        topic=str(spec.get("topic", base.topic)),
        tags=str(spec.get("tags", base.tags)),
        key_prefix=str(spec.get("key_prefix", base.key_prefix)),
        app=app,
        instances=instances,
        delay_level=delay_level,
        behaviour=_weights(behaviour, BEHAVIOURS, f"{where}.behaviour") if behaviour is not None else None,
        failure_kinds=_weights(kinds, FAILURE_KINDS, f"{where}.failure_kinds") if kinds is not None else None,
        share=share,
        application=application,
        spring_pattern=pattern,
        client_version=client_version,
        spring_version=spring_version,
        started_days_before=started,
        **_failure_keys(spec, where),
        **_production_keys(spec, where, app),
    )


def _production_keys(spec: dict[str, Any], where: str, app: str) -> dict[str, Any]:
    """``app_lines``, ``service_proxy``, ``framework_lines``: the application's own lines (Spring only)."""
    out: dict[str, Any] = {}
    for key in ("app_lines", "service_proxy", "framework_lines"):
        if key in spec and app != "spring":
            raise UserError(f"{where}.{key}: only a rocketmq-spring application (app: spring) writes its own log")
    if "app_lines" in spec:
        n = spec["app_lines"]
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 50:
            raise UserError(f"{where}.app_lines: expected an integer in 0..50, got {n!r}")
        out["app_lines"] = n
    for key in ("service_proxy", "framework_lines"):
        if key in spec:
            if not isinstance(spec[key], bool):
                raise UserError(f"{where}.{key}: expected true or false, got {spec[key]!r}")
            out[key] = spec[key]
    return out


def _failure_keys(spec: dict[str, Any], where: str) -> dict[str, Any]:
    """``outages``, ``poison``, ``poison_cause``, ``throttle`` of a group's spec (only the keys it sets)."""
    out: dict[str, Any] = {}
    outages = spec.get("outages")
    if outages is not None:
        if not isinstance(outages, list):
            raise UserError(f"{where}.outages: expected a list of {{start, minutes, cause}}")
        out["outages"] = tuple(
            _window(o, f"{where}.outages[{i}]", {"start", "minutes", "cause"}) for i, o in enumerate(outages)
        )
        for i, w in enumerate(out["outages"]):
            if w.cause not in OUTAGE_CAUSES:
                raise UserError(f"{where}.outages[{i}].cause: expected one of {', '.join(OUTAGE_CAUSES)}")
    if "poison" in spec:
        try:
            poison = float(spec["poison"])
        except (TypeError, ValueError):
            raise UserError(f"{where}.poison: expected a share in [0, 1], got {spec['poison']!r}") from None
        if not 0 <= poison <= 1:
            raise UserError(f"{where}.poison: expected a share in [0, 1], got {poison}")
        out["poison"] = poison
    if "poison_cause" in spec:
        if spec["poison_cause"] not in POISON_CAUSES:
            raise UserError(f"{where}.poison_cause: expected one of {', '.join(POISON_CAUSES)}")
        out["poison_cause"] = spec["poison_cause"]
    if spec.get("throttle") is not None:
        w = _window(spec["throttle"], f"{where}.throttle", {"start", "minutes", "share", "burst", "raise"})
        if not 0 < w.share <= 1 or w.burst < 0:
            raise UserError(f"{where}.throttle: share must be in (0, 1] and burst >= 0")
        out["throttle"] = w
    return out


def _window(value: Any, where: str, keys: set[str]) -> Window:
    if not isinstance(value, dict) or set(value) - keys or not {"start", "minutes"} <= set(value):
        raise UserError(f"{where}: expected a mapping with start and minutes (keys: {', '.join(sorted(keys))})")
    start = value["start"]
    # YAML 1.1 reads an unquoted 10:30 as the sexagesimal integer 630, minutes after midnight already
    text = f"{start // 60}:{start % 60:02d}" if type(start) is int else str(start)
    match = re.fullmatch(r"(\d{1,2}):(\d{2})", text)
    if match is None or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise UserError(f'{where}.start: expected a local time "HH:MM", got {start!r}')
    try:
        minutes = float(value["minutes"])
        share = float(value.get("share", 0.5))
        burst = int(value.get("burst", 0))
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}: {exc}") from None
    if minutes <= 0:
        raise UserError(f"{where}.minutes: expected a positive number of minutes")
    return Window(
        start_minute=int(match.group(1)) * 60 + int(match.group(2)),
        minutes=minutes,
        cause=str(value.get("cause", "")),
        share=share,
        burst=burst,
        raises=bool(value.get("raise", False)),
    )


def _version(value: Any, where: str) -> str | None:
    """A version given as a string (``"4.9.4"``); YAML's ``4.9`` float is refused rather than guessed at."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise UserError(f'{where}: write the version as a quoted string such as "4.9.4", got {value!r}')
    try:
        parse_version(value)
    except ValueError as exc:
        raise UserError(f"{where}: {exc}") from None
    return value.strip()


def _weights(value: Any, names: tuple[str, ...], where: str) -> dict[str, float]:
    if not isinstance(value, dict) or set(value) - set(names):
        raise UserError(f"{where}: expected a mapping over {', '.join(names)}")
    try:
        weights = {n: float(value.get(n, 0.0)) for n in names}
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}: {exc}") from None
    return _normalise(weights, where)
