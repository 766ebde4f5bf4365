"""The one configuration file (DESIGN.md §6): a typed model where every field has a documented default.

An empty file (or no file) works against default brokers. Unknown keys are errors that name the key's path.
The path comes from ``--config``, else ``$ROCKETMQ_RETRY_CONFIG``, else the defaults.
"""

from __future__ import annotations

import os
import pathlib
import re
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from rocketmq_retry.config_sections import ENV_OVERRIDES, AirflowSettings, ValidationSettings, check_zone
from rocketmq_retry.dates import parse_duration_ms
from rocketmq_retry.engine.consume_pop import (
    DEFAULT_POP_INVISIBLE_TIME_MS,
    MAX_POP_INVISIBLE_TIME_MS,
    MIN_POP_INVISIBLE_TIME_MS,
)
from rocketmq_retry.engine.delay_levels import DEFAULT_MESSAGE_DELAY_LEVEL, DelayLevelError, DelayLevelTable
from rocketmq_retry.engine.model import (
    ConsumeMode,
    CustomizedPolicy,
    ExponentialPolicy,
    GroupPolicy,
    MessageModel,
    Protocol,
    check_invisible_duration_ms,
)
from rocketmq_retry.engine.versions import (
    KNOWN_MAJORS,
    POP_CONSUMER_KV_SERVICE_SINCE,
    POP_REVIVE_SKIP_IF_GROUP_ABSENT_SINCE,
    RETRY_TOPIC_V2_SINCE,
    Version,
    format_version,
    parse_version,
)
from rocketmq_retry.errors import ConfigError, UserError

CONFIG_ENV = "ROCKETMQ_RETRY_CONFIG"

# Format names are fixed: they appear in configs that users keep (DESIGN §6).
FormatName = Literal[
    "rocketmq-client-4x",
    "rocketmq-client-5x",
    "rocketmq-grpc-client",
    "rocketmq-python-client",
    "spring-listener",
    "broker",
    "broker-stats",
    "trace",
    "message-dump",
]
FORMAT_NAMES: tuple[str, ...] = get_args(FormatName)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_release(value: object, what: str) -> str:
    """A full RocketMQ release, normalised to MAJOR.MINOR.PATCH ("5.3" → "5.3.0"); 4.x and 5.x only."""
    if not isinstance(value, str):
        # YAML reads an unquoted 5.3 as a float (and 5.10 as 5.1): only a string keeps the version exact.
        raise ValueError(f'{value!r} is not a string: quote the version, e.g. "5.3.0"')
    version = parse_version(value)  # ValueError names the expected form
    if version[0] not in KNOWN_MAJORS:
        raise ValueError(f"{what} version {value!r}: only RocketMQ 4.x and 5.x are modelled")
    return format_version(version)


def _needs_release(info: ValidationInfo, given: bool, field: str, since: Version, java: str) -> None:
    """Refuse a broker switch the configured release does not have (one line naming the key and the release)."""
    version = info.data.get("version")  # absent when the version itself was refused
    if given and version is not None and parse_version(version) < since:
        raise ValueError(
            f"{field} needs broker {format_version(since)} or later ({java} does not exist before), "
            f"but this broker's version is {version}"
        )


class BrokerConfig(_Strict):
    version: str = Field(
        "4.9.4",
        description="The broker's release, MAJOR.MINOR.PATCH ('5.3' = 5.3.0); the major picks the 4.x or 5.x rules, "
        "the full version the rules that changed within a major.",
    )
    message_delay_level: str = Field(DEFAULT_MESSAGE_DELAY_LEVEL, description="The broker's messageDelayLevel.")
    enable_retry_topic_v2: bool = Field(
        False,
        description="BrokerConfig.enableRetryTopicV2 (5.2.0 and later): pop retry topics %RETRY%<group>+<topic> "
        "instead of %RETRY%<group>_<topic>.",
    )

    pop_consumer_kv_service_enable: bool = Field(
        False,
        description="BrokerConfig.popConsumerKVServiceEnable with popConsumerKVServiceInit (5.3.2 and later): pop "
        "records kept in RocksDB and revived by PopConsumerService (§5.9).",
    )
    pop_revive_skip_if_group_absent: bool | None = Field(
        None,
        description="BrokerConfig.popReviveSkipIfGroupAbsent (5.5.0 and later, default true): PopConsumerService "
        "drops the record of a group without a subscription group config instead of reviving it (§5.9). "
        "null = the broker's default.",
    )
    file_reserved_time_hours: int = Field(
        72,
        ge=1,
        description="MessageStoreConfig.fileReservedTime: the hours a commitlog file is kept after its last write "
        "before CleanCommitLogService may delete it (at deleteWhen, or sooner when the disk fills); a dead letter "
        "older than this may exist only in this product's archive.",
    )

    @field_validator("version", mode="before")
    @classmethod
    def _release(cls, value: object) -> str:
        return _check_release(value, "broker")

    @field_validator("enable_retry_topic_v2")
    @classmethod
    def _v2_needs_520(cls, value: bool, info: ValidationInfo) -> bool:
        _needs_release(info, value, "enable_retry_topic_v2", RETRY_TOPIC_V2_SINCE, "BrokerConfig.enableRetryTopicV2")
        return value

    @field_validator("pop_consumer_kv_service_enable")
    @classmethod
    def _kv_needs_532(cls, value: bool, info: ValidationInfo) -> bool:
        java = "BrokerConfig.popConsumerKVServiceEnable"
        _needs_release(info, value, "pop_consumer_kv_service_enable", POP_CONSUMER_KV_SERVICE_SINCE, java)
        return value

    @field_validator("pop_revive_skip_if_group_absent")
    @classmethod
    def _skip_needs_550(cls, value: bool | None, info: ValidationInfo) -> bool | None:
        # any explicit value, true or false, names a switch the broker must have
        java = "BrokerConfig.popReviveSkipIfGroupAbsent"
        since = POP_REVIVE_SKIP_IF_GROUP_ABSENT_SINCE
        _needs_release(info, value is not None, "pop_revive_skip_if_group_absent", since, java)
        return value

    @field_validator("message_delay_level")
    @classmethod
    def _parses(cls, value: str) -> str:
        try:
            DelayLevelTable.parse(value)
        except DelayLevelError as exc:
            raise ValueError(str(exc)) from None
        return value

    @property
    def major(self) -> int:
        return self.release[0]

    @property
    def release(self) -> Version:
        return parse_version(self.version)


class CustomizedRetryPolicyConfig(_Strict):
    type: Literal["customized"] = "customized"
    next: list[Annotated[int, Field(ge=0)]] | None = Field(
        None, description="Delays in ms; default: CustomizedRetryPolicy's built-in 1s 5s 10s … 2h list (§5.1)."
    )


class ExponentialRetryPolicyConfig(_Strict):
    type: Literal["exponential"]
    initial: int = Field(5_000, ge=0, description="ms")
    max: int = Field(7_200_000, ge=0, description="ms")
    multiplier: float = Field(2.0, gt=0)


class GroupConfig(_Strict):
    broker: str = "default"
    protocol: Protocol = Protocol.REMOTING
    consume_mode: ConsumeMode = ConsumeMode.CONCURRENTLY
    message_model: MessageModel = MessageModel.CLUSTERING
    max_reconsume_times: int = Field(-1, ge=-1, description="-1 = RocketMQ's default for the mode")
    retry_max_times: int = Field(16, ge=0)
    retry_queue_nums: int = Field(1, description="<= 0 makes the broker drop send-backs silently (§2.2)")
    suspend_current_queue_time_millis: int = 1000
    consume_timeout_minutes: int = Field(15, gt=0)
    retry_policy: Annotated[CustomizedRetryPolicyConfig | ExponentialRetryPolicyConfig, Field(discriminator="type")] = (
        CustomizedRetryPolicyConfig()
    )
    topics: list[str] = Field(
        default_factory=list,
        description="Topics the group subscribes to (optional). A gRPC line that names no group is attributed to "
        "the one gRPC group listing its topic.",
    )
    client_version: str | None = Field(
        None,
        description="Release of the remoting client (rocketmq-client) the group's consumers run, MAJOR.MINOR.PATCH; "
        "default: its broker's version. Not read for gRPC groups (rocketmq-clients is versioned apart).",
    )
    delay_level_when_next_consume: int = Field(
        0,
        ge=-1,
        description="ConsumeConcurrentlyContext.delayLevelWhenNextConsume the listener sets on every failure "
        "(rocketmq-spring: @RocketMQMessageListener(delayLevelWhenNextConsume), 2.2.2+): -1 = straight to the DLQ, "
        "0 = the broker picks 3 + reconsumeTimes, > 0 = that level (clamped to the broker's table); remoting POP "
        "reads it as a popDelayLevel index.",
    )
    pop_invisible_time_ms: int = Field(
        DEFAULT_POP_INVISIBLE_TIME_MS,
        description="Remoting POP: DefaultMQPushConsumer.popInvisibleTime. The client's checkConfig refuses to start "
        "outside [5000, 300000] ms, so other values are rejected here.",
    )
    invisible_duration_ms: int = Field(
        15_000,
        description="gRPC SimpleConsumer: the invisibleDuration passed to receive(); the proxy accepts [10 s, 12 h].",
    )

    @field_validator("client_version", mode="before")
    @classmethod
    def _client_release(cls, value: object) -> str | None:
        return None if value is None else _check_release(value, "client")

    @field_validator("pop_invisible_time_ms")
    @classmethod
    def _pop_invisible_range(cls, value: int) -> int:
        # DefaultMQPushConsumerImpl#checkConfig (5.0.0 … 5.3.3): MQClientException "popInvisibleTime Out of range
        # [5000, 300000]" at start(). (popMessage's own fallback to 60000 only matters for a value set after start.)
        if not MIN_POP_INVISIBLE_TIME_MS <= value <= MAX_POP_INVISIBLE_TIME_MS:
            raise ValueError(
                f"{value} is outside [{MIN_POP_INVISIBLE_TIME_MS}, {MAX_POP_INVISIBLE_TIME_MS}] ms: "
                f"DefaultMQPushConsumer refuses to start ('popInvisibleTime Out of range')"
            )
        return value

    @field_validator("invisible_duration_ms")
    @classmethod
    def _invisible_duration(cls, value: int) -> int:
        return check_invisible_duration_ms(value)  # the engine's own bounds check and message


class SourceConfig(_Strict):
    format: FormatName
    path: str = Field(description="Glob under --landing; {ds} is replaced by the date (YYYY-MM-DD).")
    timezone: str | None = Field(None, description="Zone of the file's timestamps when its format does not fix one.")
    consumer_group: str | None = Field(None, description="Group for lines that do not name theirs.")
    instance_depth: int = Field(
        1,
        ge=0,
        description="How many leading folders of a file's path under --landing name its application instance "
        "(host): the files of one instance share what their start-up and client-log lines say about groups.",
    )

    _zone = field_validator("timezone")(lambda cls, v: None if v is None else check_zone(v))

    def glob_for(self, ds: str) -> str:
        return self.path.replace("{ds}", ds)


class RouteConfig(_Strict):
    topic: str = "*"
    group: str = "*"
    handler: str


class HandlerConfig(_Strict):
    type: Literal["python", "http", "sql"]
    callable: str | None = None
    url: str | None = None
    conn_id: str | None = None
    table: str | None = None
    rate_per_second: float | None = Field(None, gt=0)
    timeout_seconds: float = Field(10.0, gt=0)
    max_tries: int = Field(4, ge=1, description="http: one call plus retries on 5xx, timeouts, connection errors")
    backoff_seconds: float = Field(0.5, ge=0, description="http: first pause between tries, doubling each retry")
    backoff_max_seconds: float = Field(8.0, ge=0, description="http: longest pause between tries")
    retry_after_max_seconds: float = Field(
        30.0, ge=0, description="http: longest pause a Retry-After header (429, 408, 503) may ask for"
    )

    @model_validator(mode="after")
    def _needs_target(self) -> HandlerConfig:
        if self.type == "python" and not self.callable:
            raise ValueError("a python handler needs 'callable' (a dotted path such as 'pkg.module:function')")
        if self.type in ("http", "sql") and not (self.url or self.conn_id):
            raise ValueError(f"an {self.type} handler needs 'url' or 'conn_id'")
        if self.type == "sql" and not self.table:
            raise ValueError("a sql handler needs 'table'")
        return self


class BusinessKeyConfig(_Strict):
    from_: Literal["keys", "body"] = Field("keys", alias="from")
    json_path: str | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class CompensationConfig(_Strict):
    ledger_url: str = "sqlite:///{warehouse}/compensation.db"
    lease_seconds: int = Field(300, gt=0)
    max_attempts: int = Field(5, gt=0)
    max_batches: int = Field(8, ge=1, description="mapped compensation tasks per run, at most")
    batch_size: int = Field(200, ge=1, description="outstanding dead letters per batch before another batch is used")
    claim_chunk: int = Field(10, ge=1, description="rows claimed per statement (their leases must outlast the chunk)")
    max_loops: int = Field(
        2,
        description="re-drive loops: a dead letter whose business key was compensated on this many earlier dates "
        "(in its group) is held for review instead of compensated again (docs/compensation.md)",
    )
    approval_threshold: int = Field(
        100, ge=0, description="a re-drive of more dead letters than this waits for an approval in Airflow"
    )
    trigger: Literal["daily", "asset"] = Field(
        "daily", description="daily: inside the daily DAG; asset: rocketmq_retry_compensate on the dead_letters asset"
    )
    business_key: BusinessKeyConfig = BusinessKeyConfig()
    routes: list[RouteConfig] = Field(default_factory=lambda: [RouteConfig(handler="log-only")])
    handlers: dict[str, HandlerConfig] = Field(
        default_factory=lambda: {
            "log-only": HandlerConfig(type="python", callable="rocketmq_retry.compensation.handlers:log_only")
        }
    )

    @field_validator("max_loops", mode="before")
    @classmethod
    def _loops_at_least_one(cls, value: object) -> object:
        # bool is an int to Python: `max_loops: yes` must not read as 1
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f"{value!r} is not a whole number of at least 1: the earlier compensated dates of a business key "
                "after which its next dead letter is held for review (1 holds the first re-dead-lettering)"
            )
        return value

    @model_validator(mode="after")
    def _routes_name_handlers(self) -> CompensationConfig:
        for index, route in enumerate(self.routes):
            if route.handler not in self.handlers:
                known = ", ".join(sorted(self.handlers)) or "none"
                raise ValueError(f"routes[{index}].handler {route.handler!r} is not defined in handlers ({known})")
        # A call must end before its claim can: the lease is the only bound another worker trusts should the
        # heartbeat stall. A timeout left at its default follows a short lease; one set explicitly is checked.
        for name, handler in list(self.handlers.items()):
            if handler.timeout_seconds < self.lease_seconds:
                continue
            if "timeout_seconds" in handler.model_fields_set:
                raise ValueError(
                    f"handlers.{name}.timeout_seconds ({handler.timeout_seconds:g}) must be shorter than "
                    f"lease_seconds ({self.lease_seconds}): a call may not outlive its claim"
                )
            self.handlers[name] = handler.model_copy(update={"timeout_seconds": self.lease_seconds / 2})
        return self


class AttributionConfig(_Strict):
    lookback_days: int = Field(
        14,
        ge=0,
        description="Days of earlier bindings (running-container and client-log lines) that still map a day's "
        "lines to their group: an application that started this many days ago is still recognised.",
    )


def check_duration(value: str) -> str:
    """A duration setting (``1h``, ``15m``, ``1d6h``) as given, or the parser's error as the field's."""
    try:
        parse_duration_ms(value, what="")
    except UserError as exc:
        raise ValueError(str(exc).strip()) from None
    return value


class ReconstructConfig(_Strict):
    lookback_margin: str = Field(
        "1h",
        description="Added to the look-back the engine computes (the longest always-failing schedule of the "
        "configured groups plus its longest wait twice): how much later than the engine's times a lifecycle may "
        "run (late redeliveries, clock skew) and still be read whole by the dates it spans.",
    )

    _duration = field_validator("lookback_margin")(lambda cls, v: check_duration(v))

    @property
    def lookback_margin_ms(self) -> int:
        return parse_duration_ms(self.lookback_margin)


class IngestConfig(_Strict):
    max_line_bytes: int = Field(
        1_048_576,
        ge=64,
        description="A line of this many bytes or more (its line end included) is not read but quarantined "
        "with its file, line number and byte offset: Hadoop's line reader skips it in bounded memory.",
    )
    max_expanded_bytes: int = Field(
        4 << 30,
        ge=1,
        description="A .gz file that expands to more than this is quarantined as a whole, unread.",
    )


# The packages whose stack frames are not the application's own (docs/ingest.md "Causes"): the JDK, RocketMQ and
# rocketmq-spring, Spring, gRPC, Netty, the logging libraries and a few libraries listeners call (JSON, JDBC pool and
# driver, Guava). A failure's app_frame is the first frame outside them.
FRAMEWORK_PACKAGES: tuple[str, ...] = (
    "java.",
    "javax.",
    "jdk.",
    "sun.",
    "org.apache.rocketmq.",
    "org.springframework.",
    "io.grpc.",
    "io.netty.",
    "ch.qos.logback.",
    "org.slf4j.",
    "org.apache.logging.",
    # the libraries a listener calls into before its own code shows: JSON mappers, the JDBC pool and driver, Guava
    # (also in the gRPC SDK's frames); without them a Jackson poison message's app_frame is Jackson's own
    "com.fasterxml.jackson.",
    "com.alibaba.fastjson.",
    "com.zaxxer.hikari.",
    "com.mysql.cj.",
    "com.google.common.",
)
# a Java package name, optionally with its trailing dot
_PACKAGE_RX = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*\.?$")


class CausesConfig(_Strict):
    framework_packages: list[str] = Field(
        default_factory=lambda: list(FRAMEWORK_PACKAGES),
        description="Java packages whose frames are framework code, not the application's: a failure's app_frame "
        "is the first frame of its stack trace outside them. Each names a package and its sub-packages "
        "('com.acme.lib' = 'com.acme.lib.'); the list replaces the default, it does not add to it.",
    )

    @field_validator("framework_packages")
    @classmethod
    def _packages(cls, value: list[str]) -> list[str]:
        bad = [p for p in value if not _PACKAGE_RX.match(p)]
        if bad:
            raise ValueError(f"not a Java package name: {', '.join(repr(p) for p in bad)}")
        # matched as a prefix of the frame's class name: the dot keeps com.acme.lib from matching com.acme.library
        return [p if p.endswith(".") else p + "." for p in value]

    # The thresholds of docs/causes.md's rules (incidents, poison messages, retry used as flow control).
    incident_gap: str = Field(
        "15m", description="Failures of one group with one cause closer than this are one window (docs/causes.md)."
    )
    outage_min_messages: int = Field(
        5, gt=0, description="Distinct messages failing with one cause in a window that make it an incident."
    )
    outage_failure_share: float = Field(
        0.8,
        gt=0,
        le=1,
        description="The group's share of failed deliveries in a window that makes it an incident (while a "
        "dependency is down everything fails; a poison message fails while the rest succeeds).",
    )
    poison_min_deliveries: int = Field(
        3,
        gt=0,
        description="Failed deliveries, all of one cause and none in an incident, before a message is poison.",
    )
    flow_control_share: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Share of a minute's first deliveries that fail once then succeed on the first retry that makes "
        "it a flow-control minute.",
    )
    flow_control_min_minutes: int = Field(
        10, gt=0, description="Minutes a flow-control period must last for its lifecycles to be flow-control."
    )
    throttle_pattern: str = Field(
        r"(?i)throttl|rate.?limit|too.?many.?requests|flow.?control|backpressure|overload",
        description="A Java regular expression: an exception or root cause (class or message) it finds is a "
        "throttling cause, as RECONSUME_LATER is, for the flow-control rule.",
    )

    _gap = field_validator("incident_gap")(lambda cls, v: check_duration(v))

    @field_validator("throttle_pattern")
    @classmethod
    def _pattern(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return v

    @property
    def incident_gap_ms(self) -> int:
        return parse_duration_ms(self.incident_gap)


class SparkConfig(_Strict):
    master: str = Field("local[*]", description="Used when a job runs outside spark-submit.")
    driver_memory: str = "1g"
    shuffle_partitions: int = Field(4, gt=0)
    conf: dict[str, str] = Field(default_factory=dict)
    interpreted_below_rows: int = Field(
        200_000,
        ge=0,
        description="A step whose input has fewer rows (ingest: the lines it parses; reconstruct: the events it "
        "reads; validate: the rows it validates) runs on Spark's interpreted expressions instead of generated code, "
        "under spark-submit too: a small day's steps are mostly compile time (docs/scale.md). 0: never.",
    )


class Config(_Strict):
    timezone: str = "Asia/Shanghai"
    brokers: dict[str, BrokerConfig] = Field(default_factory=lambda: {"default": BrokerConfig()})
    groups: dict[str, GroupConfig] = Field(default_factory=dict)
    sources: list[SourceConfig] = Field(default_factory=list)
    attribution: AttributionConfig = AttributionConfig()
    reconstruct: ReconstructConfig = ReconstructConfig()
    ingest: IngestConfig = IngestConfig()
    causes: CausesConfig = CausesConfig()
    compensation: CompensationConfig = CompensationConfig()
    spark: SparkConfig = SparkConfig()
    airflow: AirflowSettings = AirflowSettings()
    validation: ValidationSettings = ValidationSettings()

    _zone = field_validator("timezone")(lambda cls, v: check_zone(v))

    @model_validator(mode="after")
    def _groups_name_brokers(self) -> Config:
        if "default" not in self.brokers:
            # Groups not listed use broker "default"; keep it defined even when users only name others.
            object.__setattr__(self, "brokers", {"default": BrokerConfig(), **self.brokers})
        for name, group in self.groups.items():
            if group.broker not in self.brokers:
                raise ValueError(f"groups.{name}.broker {group.broker!r} is not defined in brokers")
            five_only = group.protocol == Protocol.GRPC or group.consume_mode in (ConsumeMode.POP, ConsumeMode.SIMPLE)
            if five_only and self.brokers[group.broker].major < 5:
                # gRPC, POP and SimpleConsumer exist only from RocketMQ 5.0 on (§1.7, §5).
                what = "protocol grpc" if group.protocol == Protocol.GRPC else f"consume_mode {group.consume_mode}"
                raise ValueError(
                    f"groups.{name}: {what} needs a 5.x broker, but broker {group.broker!r} is "
                    f"{self.brokers[group.broker].version}"
                )
            remoting_pop = group.protocol == Protocol.REMOTING and group.consume_mode == ConsumeMode.POP
            if remoting_pop and group.client_version is not None and parse_version(group.client_version)[0] < 5:
                # ConsumeMessagePopConcurrentlyService exists from client 5.0.0; a 4.x client only pulls.
                raise ValueError(
                    f"groups.{name}.client_version: consume_mode pop needs a 5.x client, not {group.client_version}"
                )
        return self

    def group_config(self, group: str) -> GroupConfig:
        """A group not listed gets all defaults (DESIGN §6)."""
        return self.groups.get(group) or GroupConfig()

    def group_policy(self, group: str) -> GroupPolicy:
        """The engine's view of ``group``: its settings joined with its broker's."""
        settings = self.group_config(group)
        broker = self.brokers[settings.broker]
        table = DelayLevelTable.parse(broker.message_delay_level)
        rp = settings.retry_policy
        policy = (
            ExponentialPolicy(initial_ms=rp.initial, max_ms=rp.max, multiplier=rp.multiplier)
            if isinstance(rp, ExponentialRetryPolicyConfig)
            # Without `next`, CustomizedRetryPolicy keeps its own built-in list (a class constant, not the broker's
            # messageDelayLevel, §5.1): the empty tuple tells the engine so.
            else CustomizedPolicy(next_ms=tuple(rp.next) if rp.next is not None else ())
        )
        return GroupPolicy(
            group=group,
            broker_version=broker.release,
            client_version=parse_version(settings.client_version) if settings.client_version else broker.release,
            enable_retry_topic_v2=broker.enable_retry_topic_v2,
            pop_consumer_kv_service_enable=broker.pop_consumer_kv_service_enable,
            pop_revive_skip_if_group_absent=broker.pop_revive_skip_if_group_absent,
            delay_level_when_next_consume=settings.delay_level_when_next_consume,
            pop_invisible_time_ms=settings.pop_invisible_time_ms,
            invisible_duration_ms=settings.invisible_duration_ms,
            delay_levels=table,
            protocol=settings.protocol,
            consume_mode=settings.consume_mode,
            message_model=settings.message_model,
            max_reconsume_times=settings.max_reconsume_times,
            retry_max_times=settings.retry_max_times,
            retry_queue_nums=settings.retry_queue_nums,
            suspend_current_queue_time_millis=settings.suspend_current_queue_time_millis,
            consume_timeout_minutes=settings.consume_timeout_minutes,
            retry_policy=policy,
        )


def _key_path(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item in ("customized", "exponential") and parts and parts[-1].endswith("retry_policy"):
            continue  # pydantic's discriminator tag is not a key the user wrote
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "(top level)"


def _describe(exc: ValidationError, origin: str, prefix: tuple[str, ...] = ()) -> str:
    problems = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required key is missing"
        problems.append(f"{_key_path((*prefix, *err['loc']))}: {msg}")
    return f"invalid config {origin}: " + "; ".join(problems)


def parse_config(data: Any, origin: str = "(inline)") -> Config:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"invalid config {origin}: the top level must be a mapping, got {type(data).__name__}")
    try:
        return Config.model_validate(_with_env_overrides(data))
    except ValidationError as exc:
        raise ConfigError(_describe(exc, origin)) from None


def _with_env_overrides(data: dict[str, Any]) -> dict[str, Any]:
    """A container deployment sets single ``airflow:`` keys by environment (docker-compose.yml); they win over
    the file. Applied here, in the one place a config is parsed, so the DAGs, tasks and CLI agree."""
    overrides = {key: os.environ[env] for env, key in ENV_OVERRIDES.items() if os.environ.get(env)}
    if not overrides:
        return data
    section = data.get("airflow")
    if section is not None and not isinstance(section, dict):
        return data  # the model's own error names the key
    return {**data, "airflow": {**(section or {}), **overrides}}


def resolve_config_path(path: str | os.PathLike[str] | None) -> pathlib.Path | None:
    if path:
        return pathlib.Path(path)
    env = os.environ.get(CONFIG_ENV)
    return pathlib.Path(env) if env else None


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Load ``path``, else ``$ROCKETMQ_RETRY_CONFIG``, else the defaults."""
    resolved = resolve_config_path(path)
    if resolved is None:
        return parse_config({}, "(defaults)")  # the environment's airflow overrides apply without a file too
    try:
        text = resolved.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {resolved}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {resolved}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"invalid YAML in {resolved}{where}: {problem}") from None
    return parse_config(data, str(resolved))
